//! burn 0.21 on CUDA under `#[mem_guard]`: a leaky loop (forward passes on an autodiff model with
//! no backward), the same loop fixed (`model.valid()`), a training loop with varying batch sizes
//! over 1,000+ steps, and the guard's overhead per training step (interleaved rounds).
//!
//!     scripts/gpu/build-burn.sh   # here; then on the GPU machine: gpu-bin/burn_gpu [steps]
//!
//! The guard reads the cubecl client handed to it by `memlint::watch` (primary source), the
//! CUDA pool, NVML's per-process figure and the RSS.
//!
//! Environment: `ROUNDS` (interleaved timing rounds of 200-step calls, default 9), `LONG_STEPS`
//! (one long guarded run after them, default 0), `BOOTSTRAP_STEPS` (two orphan-forward loops: a
//! detached forward of the trained model each step, and one through a separate never-trained
//! autodiff network; default 0, off).

use std::time::Instant;

use burn::backend::Autodiff;
use burn::backend::cuda::{Cuda, CudaDevice};
use burn::module::{AutodiffModule, Module};
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, ElementConversion, Tensor};
use cubecl_runtime::runtime::Runtime;

type Ad = Autodiff<Cuda>;

const INPUTS: usize = 512;
const HIDDEN: usize = 2048;
const OUTPUTS: usize = 16;

#[derive(Module, Debug)]
struct Mlp<B: Backend> {
    hidden: Linear<B>,
    out: Linear<B>,
    act: Relu,
}

impl<B: Backend> Mlp<B> {
    fn new(device: &B::Device) -> Self {
        Self {
            hidden: LinearConfig::new(INPUTS, HIDDEN).init(device),
            out: LinearConfig::new(HIDDEN, OUTPUTS).init(device),
            act: Relu::new(),
        }
    }

    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.out.forward(self.act.forward(self.hidden.forward(x)))
    }
}

fn batch<B: Backend>(size: usize, device: &B::Device) -> Tensor<B, 2> {
    Tensor::random([size, INPUTS], Distribution::Normal(0.0, 1.0), device)
}

/// Batch size of step `i`: 64..=256, varying (a fixed pseudo-random sequence).
fn batch_size(i: usize) -> usize {
    64 + (i.wrapping_mul(2_654_435_761) >> 7) % 193
}

/// Evaluation on the autodiff model without backward: burn keeps every forward's graph state.
#[memlint::mem_guard(loop = "eval", report = "target/memlint/burn_leaky.json")]
fn eval_leaky(model: &Mlp<Ad>, device: &CudaDevice, steps: usize) -> f32 {
    let mut sum = 0f32;
    'eval: for i in 0..steps {
        if sum.is_nan() {
            continue 'eval;
        }
        let y = model.forward(batch::<Ad>(batch_size(i), device));
        sum += y.mean().into_scalar().elem::<f32>();
    }
    sum
}

/// The same evaluation on `model.valid()` (no autodiff): nothing is kept.
#[memlint::mem_guard(loop = "eval", report = "target/memlint/burn_fixed.json")]
fn eval_fixed(model: &Mlp<Cuda>, device: &CudaDevice, steps: usize) -> f32 {
    let mut sum = 0f32;
    'eval: for i in 0..steps {
        if sum.is_nan() {
            continue 'eval;
        }
        let y = model.forward(batch::<Cuda>(batch_size(i), device));
        sum += y.mean().into_scalar().elem::<f32>();
    }
    sum
}

/// One training step: forward, MSE against a fixed teacher, backward, Adam.
fn step<O: Optimizer<Mlp<Ad>, Ad>>(model: Mlp<Ad>, opt: &mut O, teacher: &Tensor<Ad, 2>, i: usize) -> (Mlp<Ad>, f32) {
    let device = teacher.device();
    let x = batch::<Ad>(batch_size(i), &device);
    let target = x.clone().matmul(teacher.clone()).detach();
    let loss = (model.forward(x) - target).powf_scalar(2.0).mean();
    let value = loss.clone().into_scalar().elem::<f32>();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    (opt.step(1e-3, model, grads), value)
}

/// A forward whose output never reaches the loss, detached and read to the host, on `probe` or
/// (`None`) on the trained model itself; then one training step.
fn probed_step<O: Optimizer<Mlp<Ad>, Ad>>(
    model: Mlp<Ad>,
    probe: Option<&Mlp<Ad>>,
    opt: &mut O,
    teacher: &Tensor<Ad, 2>,
    i: usize,
) -> (Mlp<Ad>, f32) {
    let x = batch::<Ad>(batch_size(i + 7), &teacher.device());
    let seen = probe.unwrap_or(&model).forward(x).detach().mean().into_scalar().elem::<f32>();
    (step(model, opt, teacher, i).0, seen)
}

/// Training with an extra forward of the trained model each step whose output never reaches
/// the loss (a bootstrap value): does the step's backward sweep its graph state on CUDA too?
/// (On CPU it does: experiments/burn-orphan-forwards.)
#[memlint::mem_guard(loop = "train", report = "target/memlint/burn_bootstrap.json")]
fn train_bootstrap<O: Optimizer<Mlp<Ad>, Ad>>(
    mut model: Mlp<Ad>,
    opt: &mut O,
    teacher: &Tensor<Ad, 2>,
    steps: usize,
) -> (Mlp<Ad>, f32) {
    let mut seen = 0f32;
    'train: for i in 0..steps {
        let (m, s) = probed_step(model, None, opt, teacher, i);
        (model, seen) = (m, seen + s);
    }
    (model, seen)
}

/// The same with the extra forward through a separate autodiff network that no backward trains
/// (a target network built apart and kept on the autodiff backend): on CPU its graph state is
/// never swept (experiments/burn-orphan-forwards, variant I).
#[memlint::mem_guard(loop = "train", report = "target/memlint/burn_target.json")]
fn train_with_target<O: Optimizer<Mlp<Ad>, Ad>>(
    mut model: Mlp<Ad>,
    target_net: &Mlp<Ad>,
    opt: &mut O,
    teacher: &Tensor<Ad, 2>,
    steps: usize,
) -> (Mlp<Ad>, f32) {
    let mut seen = 0f32;
    'train: for i in 0..steps {
        let (m, s) = probed_step(model, Some(target_net), opt, teacher, i);
        (model, seen) = (m, seen + s);
    }
    (model, seen)
}

#[memlint::mem_guard(report = "target/memlint/burn_train.json")]
fn train_guarded<O: Optimizer<Mlp<Ad>, Ad>>(
    mut model: Mlp<Ad>,
    opt: &mut O,
    teacher: &Tensor<Ad, 2>,
    steps: usize,
) -> Mlp<Ad> {
    for i in 0..steps {
        model = step(model, opt, teacher, i).0;
    }
    model
}

fn train_plain<O: Optimizer<Mlp<Ad>, Ad>>(
    mut model: Mlp<Ad>,
    opt: &mut O,
    teacher: &Tensor<Ad, 2>,
    steps: usize,
) -> Mlp<Ad> {
    for i in 0..steps {
        model = step(model, opt, teacher, i).0;
    }
    model
}

/// `train_guarded` with its own report, for the timing rounds.
#[memlint::mem_guard(report = "target/memlint/burn_timed.json")]
fn train_timed<O: Optimizer<Mlp<Ad>, Ad>>(
    mut model: Mlp<Ad>,
    opt: &mut O,
    teacher: &Tensor<Ad, 2>,
    steps: usize,
) -> Mlp<Ad> {
    for i in 0..steps {
        model = step(model, opt, teacher, i).0;
    }
    model
}

#[path = "../../shared/guard_share.rs"]
mod guard_share;
use guard_share::{guard_share, print_shares};

fn summary(path: &str) {
    // The guard writes its reports on a background thread: wait for them before reading one.
    memlint::wait_for_reports();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        println!("{path}: no report");
        return;
    };
    println!("{path}: iterations={} primary={} blind={}", v["iterations"], v["backend"], v["blind"]);
    let (own, elapsed, n) =
        (v["guard_seconds"].as_f64(), v["elapsed_seconds"].as_f64(), v["iterations"].as_f64().unwrap_or(0.0));
    if let (Some(own), Some(elapsed)) = (own, elapsed)
        && n > 0.0
        && elapsed > 0.0
    {
        println!(
            "  time inside the guard: {:.2} µs/iteration = {:.4}% of the run; pace {}",
            own / n * 1e6,
            own / elapsed * 100.0,
            v["pace"]
        );
    }
    for s in v["sources"].as_array().map(|a| a.as_slice()).unwrap_or(&[]) {
        let samples = s["samples"].as_array().map(|a| a.as_slice()).unwrap_or(&[]);
        let first = samples.first().map_or("null".into(), |x| x["allocated_bytes"].to_string());
        let last = samples.last().map_or("null".into(), |x| x["allocated_bytes"].to_string());
        println!(
            "  {:<14} {:<10} read_every={:<4} cost={}ns in-run={}ns max={}ns leak={} growth/it={} detected_at={} first={first} last={last}",
            s["source"].as_str().unwrap_or("?"),
            s["device"].as_str().unwrap_or("?"),
            s["read_every"],
            s["read_cost_ns"],
            s["run_read_cost_ns"],
            s["run_read_max_ns"],
            s["verdict"]["leak"],
            s["verdict"]["growth_bytes_per_iteration"],
            s["verdict"]["detected_at_iteration"],
        );
    }
}

fn main() {
    let steps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    let device = CudaDevice::default();
    // The guard reads burn's memory through the cubecl client of this device.
    memlint::watch(<cubecl_cuda::CudaRuntime as Runtime>::client(&device));
    let teacher = Tensor::<Ad, 2>::random([INPUTS, OUTPUTS], Distribution::Normal(0.0, 1.0), &device);
    let mut model = Mlp::<Ad>::new(&device);
    let mut opt = AdamConfig::new().init();
    let t = Instant::now();
    model = train_plain(model, &mut opt, &teacher, 30); // kernel compilation, unmeasured
    println!("warm-up (30 steps, incl. NVRTC): {:.1} s", t.elapsed().as_secs_f64());

    let t = Instant::now();
    eval_leaky(&model, &device, steps);
    println!("leaky eval: {steps} steps in {:.2} s", t.elapsed().as_secs_f64());
    let valid = model.valid();
    let t = Instant::now();
    eval_fixed(&valid, &device, steps);
    println!("fixed eval: {steps} steps in {:.2} s", t.elapsed().as_secs_f64());
    let train_steps = steps.max(1200);
    let t = Instant::now();
    model = train_guarded(model, &mut opt, &teacher, train_steps);
    println!("fixed training: {train_steps} steps in {:.2} s", t.elapsed().as_secs_f64());
    summary("target/memlint/burn_leaky.json");
    summary("target/memlint/burn_fixed.json");
    summary("target/memlint/burn_train.json");
    // BOOTSTRAP_STEPS > 0: the two orphan-forward questions on the GPU.
    let orphan_steps: usize = std::env::var("BOOTSTRAP_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    if orphan_steps > 0 {
        let t = Instant::now();
        let (m, _) = train_bootstrap(model, &mut opt, &teacher, orphan_steps);
        model = m;
        println!("bootstrap training: {orphan_steps} steps in {:.2} s", t.elapsed().as_secs_f64());
        summary("target/memlint/burn_bootstrap.json");
        let target_net = Mlp::<Ad>::new(&device);
        let t = Instant::now();
        let (m, _) = train_with_target(model, &target_net, &mut opt, &teacher, orphan_steps);
        model = m;
        println!("separate-target training: {orphan_steps} steps in {:.2} s", t.elapsed().as_secs_f64());
        summary("target/memlint/burn_target.json");
    }

    // ROUNDS interleaved rounds (default 9) of one unguarded and one guarded 200-step call.
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(9).max(1);
    let per_round = 200;
    let (mut plain, mut guarded, mut shares) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        model = train_plain(model, &mut opt, &teacher, per_round);
        plain.push(t.elapsed().as_secs_f64() / per_round as f64);
        let t = Instant::now();
        model = train_timed(model, &mut opt, &teacher, per_round);
        guarded.push(t.elapsed().as_secs_f64() / per_round as f64);
        shares.extend(guard_share("target/memlint/burn_timed.json"));
    }
    print_shares("burn timed", &shares);
    let ratios: Vec<f64> = plain.iter().zip(&guarded).map(|(p, g)| g / p).collect();
    plain.sort_by(f64::total_cmp);
    guarded.sort_by(f64::total_cmp);
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    let (p, g) = (plain[rounds / 2], guarded[rounds / 2]);
    println!(
        "burn step, median of {rounds} interleaved rounds × {per_round} steps: unguarded {:.1} µs, guarded {:.1} µs, ratio of medians {:.4}, median per-round ratio {:.4}, min {:.4}",
        p * 1e6,
        g * 1e6,
        g / p,
        sorted[rounds / 2],
        sorted[0]
    );
    summary("target/memlint/burn_timed.json");
    // One long guarded run: the guard's own time once the pace is set (LONG_STEPS, default 0).
    let long: usize = std::env::var("LONG_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    if long > 0 {
        let t = Instant::now();
        let _ = train_timed(model, &mut opt, &teacher, long);
        println!("long guarded run: {long} steps in {:.1} s", t.elapsed().as_secs_f64());
        summary("target/memlint/burn_timed.json");
    }
}
