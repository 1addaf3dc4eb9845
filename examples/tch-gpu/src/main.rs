//! tch 0.24 (libtorch 2.11) on CUDA under `#[mem_guard]`: two leaky loops, their fixed forms, a
//! training loop with varying batch sizes over 1,000+ steps, and the guard's overhead per
//! training step (interleaved rounds of guarded and unguarded steps).
//!
//!     scripts/gpu/build-tch.sh    # here; then on the GPU machine: scripts/gpu/tch-dfdx.sh
//!
//! libtorch's CUDA caching allocator takes its memory with `cudaMalloc`, outside the driver's
//! memory pool, so `cuda-pool` stays flat; `nvml-process` (this process's device memory) sees it.
//! Run once as is (automatic primary source) and once with `MEMLINT_SOURCE=nvml-process`.
//!
//! Model as in the candle example: an MLP 1024 → 4096 → 10, Adam, random inputs labelled by a
//! fixed random teacher.

// The labels name the loop that `#[mem_guard(loop = "..")]` samples; nothing jumps to them.
#![allow(unused_labels)]

use std::time::Instant;

use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};

const INPUTS: i64 = 1024;
const HIDDEN: i64 = 4096;
const CLASSES: i64 = 10;
const BATCH: i64 = 256;

struct Setup {
    /// Owns the parameters (the model and the optimizer refer to them).
    _vs: nn::VarStore,
    model: nn::Sequential,
    opt: nn::Optimizer,
    teacher: Tensor,
}

fn setup(device: Device) -> Setup {
    let vs = nn::VarStore::new(device);
    let root = vs.root();
    let model = nn::seq()
        .add(nn::linear(&root / "hidden", INPUTS, HIDDEN, Default::default()))
        .add_fn(|xs| xs.relu())
        .add(nn::linear(&root / "out", HIDDEN, CLASSES, Default::default()));
    let opt = nn::Adam::default().build(&vs, 1e-3).expect("Adam");
    let teacher = Tensor::randn([INPUTS, CLASSES], (Kind::Float, device));
    Setup { _vs: vs, model, opt, teacher }
}

/// A batch of `size` random inputs and the teacher's labels (no graph: plain data).
fn batch_of(teacher: &Tensor, size: i64) -> (Tensor, Tensor) {
    let xs = Tensor::randn([size, INPUTS], (Kind::Float, teacher.device()));
    let ys = xs.matmul(teacher).argmax(-1, false);
    (xs, ys)
}

/// Batch size of step `i`: 64..=512, varying (a fixed pseudo-random sequence).
fn batch_size(i: usize) -> i64 {
    64 + ((i.wrapping_mul(2_654_435_761) >> 7) % 449) as i64
}

/// Evaluation without `no_grad`, keeping each batch's outputs for metrics at the end: every
/// output carries its graph and the activations saved for a backward that never comes
/// (the input and the hidden layer, ≈ 5 MiB per batch of 256) on the GPU.
#[memlint::mem_guard(loop = "eval", report = "target/memlint/tch_eval_leaky.json")]
fn eval_leaky(s: &Setup, steps: usize) -> f64 {
    let mut outputs = Vec::new();
    let mut labels = Vec::new();
    'eval: for _i in 0..steps {
        let (xs, ys) = batch_of(&s.teacher, BATCH);
        outputs.push(s.model.forward(&xs));
        labels.push(ys);
    }
    let logits = Tensor::cat(&outputs, 0);
    f64::try_from(logits.accuracy_for_logits(&Tensor::cat(&labels, 0))).unwrap_or(f64::NAN)
}

/// The same evaluation under `no_grad`, keeping one number per batch.
#[memlint::mem_guard(loop = "eval", report = "target/memlint/tch_eval_fixed.json")]
fn eval_fixed(s: &Setup, steps: usize) -> f64 {
    let _no_grad = tch::no_grad_guard();
    let mut accuracies = Vec::with_capacity(steps);
    'eval: for _i in 0..steps {
        let (xs, ys) = batch_of(&s.teacher, BATCH);
        let acc = s.model.forward(&xs).accuracy_for_logits(&ys);
        accuracies.push(acc.double_value(&[]));
    }
    accuracies.iter().sum::<f64>() / steps as f64
}

/// Training that sums the loss tensors: `total` carries a chain of graph nodes (host memory in
/// libtorch's autograd); backward has freed each step's saved activations, so the GPU holds only
/// the 4-byte sums, which the caching allocator serves from blocks it already has.
#[memlint::mem_guard(report = "target/memlint/tch_train_leaky.json")]
#[allow(clippy::assign_op_pattern)] // the leak's usual spelling; `+=` would be libtorch's in-place add
fn train_leaky(s: &mut Setup, steps: usize) -> f64 {
    let mut total = Tensor::from(0f32).to_device(s.teacher.device());
    for _step in 0..steps {
        let (xs, ys) = batch_of(&s.teacher, BATCH);
        let loss = s.model.forward(&xs).cross_entropy_for_logits(&ys);
        s.opt.backward_step(&loss);
        total = total + loss;
    }
    (total / steps as f64).double_value(&[])
}

/// Training with varying batch sizes, reading the loss as a number.
#[memlint::mem_guard(report = "target/memlint/tch_train_fixed.json")]
fn train_fixed(s: &mut Setup, steps: usize) -> f64 {
    let mut sum = 0f64;
    for step in 0..steps {
        let (xs, ys) = batch_of(&s.teacher, batch_size(step));
        let loss = s.model.forward(&xs).cross_entropy_for_logits(&ys);
        s.opt.backward_step(&loss);
        sum += loss.double_value(&[]);
    }
    sum / steps as f64
}

/// The training step of the timing rounds, unguarded: the baseline.
fn train_plain(s: &mut Setup, steps: usize) -> f64 {
    let mut sum = 0f64;
    for _step in 0..steps {
        let (xs, ys) = batch_of(&s.teacher, BATCH);
        let loss = s.model.forward(&xs).cross_entropy_for_logits(&ys);
        s.opt.backward_step(&loss);
        sum += loss.double_value(&[]);
    }
    sum / steps as f64
}

/// `train_plain` guarded, with its own report.
#[memlint::mem_guard(report = "target/memlint/tch_timed.json")]
fn train_timed(s: &mut Setup, steps: usize) -> f64 {
    let mut sum = 0f64;
    for _step in 0..steps {
        let (xs, ys) = batch_of(&s.teacher, BATCH);
        let loss = s.model.forward(&xs).cross_entropy_for_logits(&ys);
        s.opt.backward_step(&loss);
        sum += loss.double_value(&[]);
    }
    sum / steps as f64
}

/// One line per loop: flagged or not, where, how fast, by which source; then every source.
#[path = "../../shared/guard_share.rs"]
mod guard_share;
use guard_share::{guard_share, print_shares};

fn summary(name: &str, path: &str) {
    // The guard writes its reports on a background thread: wait for them before reading one.
    memlint::wait_for_reports();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        println!("RESULT {name}: no report at {path}");
        return;
    };
    let sources = v["sources"].as_array().map(|a| a.as_slice()).unwrap_or(&[]);
    let flagged: Vec<&serde_json::Value> = sources.iter().filter(|s| s["verdict"]["leak"] == true).collect();
    match flagged.first() {
        Some(s) => println!(
            "RESULT {name}: flagged=yes iteration={} bytes/iteration={} source={} (of {} flagging: {}) iterations={} primary={}",
            s["verdict"]["detected_at_iteration"],
            s["verdict"]["growth_bytes_per_iteration"],
            s["source"].as_str().unwrap_or("?"),
            flagged.len(),
            flagged.iter().map(|s| s["source"].as_str().unwrap_or("?")).collect::<Vec<_>>().join(","),
            v["iterations"],
            v["backend"],
        ),
        None => println!("RESULT {name}: flagged=no iterations={} primary={}", v["iterations"], v["backend"]),
    }
    println!("  blind: {}", v["blind"]);
    for s in sources {
        let samples = s["samples"].as_array().map(|a| a.as_slice()).unwrap_or(&[]);
        let first = samples.first().map_or("null".into(), |x| x["allocated_bytes"].to_string());
        let last = samples.last().map_or("null".into(), |x| x["allocated_bytes"].to_string());
        println!(
            "  {:<14} {:<10} read_every={:<4} cost={}ns in-run={}ns samples={} leak={} growth/it={} detected_at={} first={first} last={last}",
            s["source"].as_str().unwrap_or("?"),
            s["device"].as_str().unwrap_or("?"),
            s["read_every"],
            s["read_cost_ns"],
            s["run_read_cost_ns"],
            samples.len(),
            s["verdict"]["leak"],
            s["verdict"]["growth_bytes_per_iteration"],
            s["verdict"]["detected_at_iteration"],
        );
    }
}

/// A count from the environment (smaller smoke runs), else `default`.
fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let steps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(300);
    // `MEMLINT_TCH_CPU=1`: the same program on the CPU, a smoke test for machines without a GPU.
    let device = if std::env::var_os("MEMLINT_TCH_CPU").is_some() {
        Device::Cpu
    } else {
        // torch-sys links libtorch_cuda only when the linker keeps it (see build.rs); without it
        // libtorch reports no CUDA device.
        if !tch::Cuda::is_available() {
            eprintln!("tch: CUDA not available to libtorch (libtorch_cuda not loaded, or no GPU); stopping");
            std::process::exit(2);
        }
        println!(
            "tch: CUDA available, {} device(s), cuDNN {}",
            tch::Cuda::device_count(),
            tch::Cuda::cudnn_is_available()
        );
        Device::Cuda(0)
    };
    let sync = || {
        if let Device::Cuda(i) = device {
            tch::Cuda::synchronize(i as i64);
        }
    };
    tch::manual_seed(0);
    let mut s = setup(device);
    let t = Instant::now();
    train_plain(&mut s, 30); // cuBLAS handles, allocator warm-up: unmeasured
    println!("warm-up (30 steps): {:.2} s", t.elapsed().as_secs_f64());

    let t = Instant::now();
    let acc = eval_leaky(&s, steps);
    println!("eval leaky: {steps} steps in {:.2} s, accuracy {acc:.3}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let acc = eval_fixed(&s, steps);
    println!("eval fixed: {steps} steps in {:.2} s, accuracy {acc:.3}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let loss = train_leaky(&mut s, steps);
    println!(
        "train leaky (total = total + loss): {steps} steps in {:.2} s, mean loss {loss:.4}",
        t.elapsed().as_secs_f64()
    );
    let train_steps = env_or("TRAIN_STEPS", steps.max(1200));
    let t = Instant::now();
    let loss = train_fixed(&mut s, train_steps);
    println!(
        "train fixed (batch 64..512): {train_steps} steps in {:.2} s, mean loss {loss:.4}",
        t.elapsed().as_secs_f64()
    );
    summary("tch eval_leaky", "target/memlint/tch_eval_leaky.json");
    summary("tch eval_fixed", "target/memlint/tch_eval_fixed.json");
    summary("tch train_leaky", "target/memlint/tch_train_leaky.json");
    summary("tch train_fixed", "target/memlint/tch_train_fixed.json");

    let rounds = env_or("ROUNDS", 9).max(1);
    let per_round = env_or("PER_ROUND", 300).max(1);
    let (mut plain, mut guarded, mut shares) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        train_plain(&mut s, per_round);
        sync();
        plain.push(t.elapsed().as_secs_f64() / per_round as f64);
        let t = Instant::now();
        train_timed(&mut s, per_round);
        sync();
        guarded.push(t.elapsed().as_secs_f64() / per_round as f64);
        shares.extend(guard_share("target/memlint/tch_timed.json"));
    }
    print_shares("tch timed", &shares);
    let mut ratios: Vec<f64> = plain.iter().zip(&guarded).map(|(p, g)| g / p).collect();
    ratios.sort_by(f64::total_cmp);
    println!("rounds (µs/step): unguarded {:?}", plain.iter().map(|x| (x * 1e7).round() / 10.0).collect::<Vec<_>>());
    println!("rounds (µs/step): guarded   {:?}", guarded.iter().map(|x| (x * 1e7).round() / 10.0).collect::<Vec<_>>());
    plain.sort_by(f64::total_cmp);
    guarded.sort_by(f64::total_cmp);
    let (p, g) = (plain[rounds / 2], guarded[rounds / 2]);
    println!(
        "OVERHEAD tch step, {rounds} interleaved rounds × {per_round} steps: unguarded {:.1} µs, guarded {:.1} µs, ratio of medians {:.4}, per-round ratio median {:.4} (min {:.4}, max {:.4})",
        p * 1e6,
        g * 1e6,
        g / p,
        ratios[rounds / 2],
        ratios[0],
        ratios[rounds - 1]
    );
    summary("tch timed", "target/memlint/tch_timed.json");
}
