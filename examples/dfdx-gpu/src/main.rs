//! dfdx 0.13 on CUDA under `#[mem_guard]`: two leaky loops, their fixed forms, a training loop
//! with varying batch sizes over 1,000+ steps, and the guard's overhead per training step
//! (interleaved rounds of guarded and unguarded steps).
//!
//!     scripts/gpu/build-dfdx.sh   # here; then on the GPU machine: scripts/gpu/tch-dfdx.sh
//!
//! dfdx's CUDA device (cudarc 0.9) allocates with `cuMemAllocAsync` on its own stream whenever
//! the device supports memory pools (H100/H200 do), from the device's current pool: the one that
//! memlint's `cuda-pool` source reads. dfdx's own allocation cache is off unless
//! `enable_cache()` is called (it is not here), so freed tensors go back to the pool.
//!
//! Model as in the candle and tch examples: an MLP 1024 → 4096 → 10, Adam, random inputs; the
//! targets are the softmax of a fixed random teacher's logits.

// The labels name the loop that `#[mem_guard(loop = "..")]` samples; nothing jumps to them.
#![allow(unused_labels)]

use std::time::Instant;

use dfdx::optim::Adam;
use dfdx::prelude::*;

const INPUTS: usize = 1024;
const HIDDEN: usize = 4096;
const CLASSES: usize = 10;
const BATCH: usize = 256;

#[cfg(feature = "cuda")]
type Dev = Cuda;
#[cfg(not(feature = "cuda"))]
type Dev = Cpu;

type Arch = (Linear<INPUTS, HIDDEN>, ReLU, Linear<HIDDEN, CLASSES>);
type Model = <Arch as BuildOnDevice<Dev, f32>>::Built;
type Batch = Tensor<(usize, Const<INPUTS>), f32, Dev>;
type Logits = Tensor<(usize, Const<CLASSES>), f32, Dev>;

struct Setup {
    dev: Dev,
    model: Model,
    grads: Option<Gradients<f32, Dev>>,
    opt: Adam<Model, f32, Dev>,
    teacher: Tensor<Rank2<INPUTS, CLASSES>, f32, Dev>,
}

fn setup() -> Setup {
    let dev = Dev::seed_from_u64(0);
    let model = dev.build_module::<Arch, f32>();
    let grads = Some(model.alloc_grads());
    let opt = Adam::new(&model, Default::default());
    let teacher = dev.sample_normal();
    Setup { dev, model, grads, opt, teacher }
}

/// A batch of `size` random inputs and the teacher's class probabilities (no tape: plain data).
fn batch_of(s: &Setup, size: usize) -> (Batch, Logits) {
    let xs: Batch = s.dev.sample_normal_like(&(size, Const::<INPUTS>));
    let ys = xs.clone().matmul(s.teacher.clone()).softmax::<Axis<1>>();
    (xs, ys)
}

/// Batch size of step `i`: 64..=512, varying (a fixed pseudo-random sequence).
fn batch_size(i: usize) -> usize {
    64 + (i.wrapping_mul(2_654_435_761) >> 7) % 449
}

/// One training step: forward on a traced batch, cross-entropy, backward, Adam, zero the grads.
/// Returns the loss tensor's tape-free logits and the loss as a number.
fn step(s: &mut Setup, size: usize) -> (Logits, f32) {
    let (xs, ys) = batch_of(s, size);
    let grads = s.grads.take().expect("grads");
    let logits = s.model.forward_mut(xs.traced(grads));
    let (plain, tape) = logits.split_tape();
    let loss = cross_entropy_with_logits_loss(plain.clone().put_tape(tape), ys);
    let value = loss.array();
    let mut grads = loss.backward();
    s.opt.update(&mut s.model, &grads).expect("Adam update");
    s.model.zero_grads(&mut grads);
    s.grads = Some(grads);
    (plain, value)
}

/// Evaluation on traced inputs (`leaky_trace`), keeping each batch's outputs for metrics at the
/// end: every output keeps its tape, whose backward operations hold the batch and the hidden
/// activations (≈ 5 MiB per batch of 256) on the GPU.
#[memlint::mem_guard(loop = "eval", report = "target/memlint/dfdx_eval_leaky.json")]
fn eval_leaky(s: &Setup, steps: usize) -> f32 {
    let mut outputs = Vec::new();
    let mut targets = Vec::new();
    'eval: for _i in 0..steps {
        let (xs, ys) = batch_of(s, BATCH);
        outputs.push(s.model.forward(xs.leaky_trace()));
        targets.push(ys);
    }
    let n = outputs.len().max(1) as f32;
    outputs
        .into_iter()
        .zip(targets)
        .map(|(y, t)| cross_entropy_with_logits_loss(y.retaped::<NoneTape>(), t).array())
        .sum::<f32>()
        / n
}

/// The same evaluation without a tape, keeping one number per batch.
#[memlint::mem_guard(loop = "eval", report = "target/memlint/dfdx_eval_fixed.json")]
fn eval_fixed(s: &Setup, steps: usize) -> f32 {
    let mut losses = Vec::with_capacity(steps);
    'eval: for _i in 0..steps {
        let (xs, ys) = batch_of(s, BATCH);
        losses.push(cross_entropy_with_logits_loss(s.model.forward(xs), ys).array());
    }
    losses.iter().sum::<f32>() / steps.max(1) as f32
}

/// Training that keeps each step's logits (tape split off) on the GPU for an epoch-end metric:
/// 256 × 10 × 4 = 10,240 bytes per step that never go back to the pool.
#[memlint::mem_guard(loop = "train", report = "target/memlint/dfdx_train_leaky.json")]
fn train_leaky(s: &mut Setup, steps: usize) -> f32 {
    let mut kept = Vec::new();
    let mut sum = 0f32;
    'train: for _step in 0..steps {
        let (logits, loss) = step(s, BATCH);
        kept.push(logits);
        sum += loss;
    }
    let _ = kept.len();
    sum / steps.max(1) as f32
}

/// Training with varying batch sizes, keeping only the loss as a number.
#[memlint::mem_guard(loop = "train", report = "target/memlint/dfdx_train_fixed.json")]
fn train_fixed(s: &mut Setup, steps: usize) -> f32 {
    let mut sum = 0f32;
    'train: for i in 0..steps {
        let (_logits, loss) = step(s, batch_size(i));
        sum += loss;
    }
    sum / steps.max(1) as f32
}

/// The training step of the timing rounds, unguarded: the baseline.
fn train_plain(s: &mut Setup, steps: usize) -> f32 {
    let mut sum = 0f32;
    for _i in 0..steps {
        let (_logits, loss) = step(s, BATCH);
        sum += loss;
    }
    sum / steps.max(1) as f32
}

/// `train_plain` guarded, with its own report.
#[memlint::mem_guard(loop = "train", report = "target/memlint/dfdx_timed.json")]
fn train_timed(s: &mut Setup, steps: usize) -> f32 {
    let mut sum = 0f32;
    'train: for _i in 0..steps {
        let (_logits, loss) = step(s, BATCH);
        sum += loss;
    }
    sum / steps.max(1) as f32
}

/// One line per loop: flagged or not, where, how fast, by which source; then every source.
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
#[path = "../../shared/guard_share.rs"]
mod guard_share;
use guard_share::{guard_share, print_shares};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let steps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(300);
    let mut s = setup();
    let t = Instant::now();
    train_plain(&mut s, 30); // cuBLAS handle, module loading, pool warm-up: unmeasured
    s.dev.synchronize();
    println!("warm-up (30 steps): {:.2} s", t.elapsed().as_secs_f64());

    let t = Instant::now();
    let loss = eval_leaky(&s, steps);
    println!("eval leaky (leaky_trace): {steps} steps in {:.2} s, mean loss {loss:.4}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let loss = eval_fixed(&s, steps);
    println!("eval fixed: {steps} steps in {:.2} s, mean loss {loss:.4}", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let loss = train_leaky(&mut s, steps);
    println!("train leaky (logits kept): {steps} steps in {:.2} s, mean loss {loss:.4}", t.elapsed().as_secs_f64());
    let train_steps = env_or("TRAIN_STEPS", steps.max(1200));
    let t = Instant::now();
    let loss = train_fixed(&mut s, train_steps);
    println!(
        "train fixed (batch 64..512): {train_steps} steps in {:.2} s, mean loss {loss:.4}",
        t.elapsed().as_secs_f64()
    );
    summary("dfdx eval_leaky", "target/memlint/dfdx_eval_leaky.json");
    summary("dfdx eval_fixed", "target/memlint/dfdx_eval_fixed.json");
    summary("dfdx train_leaky", "target/memlint/dfdx_train_leaky.json");
    summary("dfdx train_fixed", "target/memlint/dfdx_train_fixed.json");

    let rounds = env_or("ROUNDS", 9).max(1);
    let per_round = env_or("PER_ROUND", 300).max(1);
    let (mut plain, mut guarded, mut shares) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        train_plain(&mut s, per_round);
        s.dev.synchronize();
        plain.push(t.elapsed().as_secs_f64() / per_round as f64);
        let t = Instant::now();
        train_timed(&mut s, per_round);
        s.dev.synchronize();
        guarded.push(t.elapsed().as_secs_f64() / per_round as f64);
        shares.extend(guard_share("target/memlint/dfdx_timed.json"));
    }
    print_shares("dfdx timed", &shares);
    let mut ratios: Vec<f64> = plain.iter().zip(&guarded).map(|(p, g)| g / p).collect();
    ratios.sort_by(f64::total_cmp);
    println!("rounds (µs/step): unguarded {:?}", plain.iter().map(|x| (x * 1e7).round() / 10.0).collect::<Vec<_>>());
    println!("rounds (µs/step): guarded   {:?}", guarded.iter().map(|x| (x * 1e7).round() / 10.0).collect::<Vec<_>>());
    plain.sort_by(f64::total_cmp);
    guarded.sort_by(f64::total_cmp);
    let (p, g) = (plain[rounds / 2], guarded[rounds / 2]);
    println!(
        "OVERHEAD dfdx step, {rounds} interleaved rounds × {per_round} steps: unguarded {:.1} µs, guarded {:.1} µs, ratio of medians {:.4}, per-round ratio median {:.4} (min {:.4}, max {:.4})",
        p * 1e6,
        g * 1e6,
        g / p,
        ratios[rounds / 2],
        ratios[0],
        ratios[rounds - 1]
    );
    summary("dfdx timed", "target/memlint/dfdx_timed.json");
}
