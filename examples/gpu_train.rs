//! The candle examples on a CUDA GPU, plus the guard's overhead per iteration.
//! Needs the `cuda-examples` feature (nvcc to build, a driver to run); never built by CI.
//! `scripts/gpu/run.sh` builds it here and runs it on the GPU machine.
//!
//!     cargo run --release --features cuda-examples --example gpu_train -- [steps]
//!
//! Model and data as measured in the project's GPU notes: an MLP 1024 → 4096 → 10, batch 256,
//! AdamW, random inputs labelled by a fixed random teacher.

use std::time::Instant;

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{AdamW, Linear, Optimizer, ParamsAdamW, VarBuilder, VarMap, linear, loss};

const INPUTS: usize = 1024;
const HIDDEN: usize = 4096;
const CLASSES: usize = 10;
const BATCH: usize = 256;

struct Mlp {
    hidden: Linear,
    out: Linear,
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.out.forward(&self.hidden.forward(xs)?.relu()?)
    }
}

struct Setup {
    model: Mlp,
    opt: AdamW,
    teacher: Tensor,
}

fn setup(device: &Device) -> Result<Setup> {
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, device);
    let model = Mlp { hidden: linear(INPUTS, HIDDEN, vb.pp("hidden"))?, out: linear(HIDDEN, CLASSES, vb.pp("out"))? };
    let opt = AdamW::new(varmap.all_vars(), ParamsAdamW { lr: 1e-3, ..Default::default() })?;
    let teacher = Tensor::randn(0f32, 1.0, (INPUTS, CLASSES), device)?;
    Ok(Setup { model, opt, teacher })
}

fn batch(teacher: &Tensor) -> Result<(Tensor, Tensor)> {
    batch_of(teacher, BATCH)
}

fn batch_of(teacher: &Tensor, size: usize) -> Result<(Tensor, Tensor)> {
    let xs = Tensor::randn(0f32, 1.0, (size, INPUTS), teacher.device())?;
    let ys = xs.matmul(teacher)?.argmax(1)?;
    Ok((xs, ys))
}

#[memlint::mem_guard(lines, report = "target/memlint/gpu_leaky.json")]
fn train_leaky(s: &mut Setup, steps: usize) -> Result<f32> {
    let mut total = Tensor::zeros((), DType::F32, s.teacher.device())?;
    for _step in 0..steps {
        let (xs, ys) = batch(&s.teacher)?;
        let loss = loss::cross_entropy(&s.model.forward(&xs)?, &ys)?;
        s.opt.backward_step(&loss)?;
        total = (total + &loss)?;
    }
    (total / steps as f64)?.to_scalar::<f32>()
}

/// Batch size of step `i`: 64..=512, varying (a fixed pseudo-random sequence).
fn batch_size(i: usize) -> usize {
    64 + (i.wrapping_mul(2_654_435_761) >> 7) % 449
}

#[memlint::mem_guard(report = "target/memlint/gpu_fixed.json")]
fn train_fixed(s: &mut Setup, steps: usize) -> Result<f32> {
    let mut sum = 0f32;
    for step in 0..steps {
        let (xs, ys) = batch_of(&s.teacher, batch_size(step))?;
        let loss = loss::cross_entropy(&s.model.forward(&xs)?, &ys)?;
        s.opt.backward_step(&loss)?;
        sum += loss.to_scalar::<f32>()?;
    }
    Ok(sum / steps as f32)
}

/// One step of the slow-leak pair: the fixed loop's step `i` (batch sizes 64..512), its loss.
fn slow_step(s: &mut Setup, i: usize) -> Result<f32> {
    let (xs, ys) = batch_of(&s.teacher, batch_size(i))?;
    let loss = loss::cross_entropy(&s.model.forward(&xs)?, &ys)?;
    s.opt.backward_step(&loss)?;
    loss.to_scalar::<f32>()
}

/// Issue 12's slow leak on the GPU: the fixed loop (batch sizes 64..512 from `offset` on) keeping
/// a 64 KiB copy of a slice of the hidden layer's weights every step. The step runs in a helper,
/// so the loop to sample is named.
#[memlint::mem_guard(loop = "steps", report = "target/memlint/gpu_slow_leak.json")]
fn train_slow_leak(s: &mut Setup, steps: usize, offset: usize, kept: &mut Vec<Tensor>) -> Result<f32> {
    let mut sum = 0f32;
    'steps: for step in 0..steps {
        sum += slow_step(s, offset + step)?;
        // 16 rows of 1,024 f32: 64 KiB, a new device allocation each step (`affine` writes a new
        // buffer of the slice's size; `copy()` of a slice clones the whole 16 MiB storage, and the
        // guard then reports 16 MiB per iteration), detached from the weight's graph.
        kept.push(s.model.hidden.weight().narrow(0, 0, 16)?.affine(1.0, 0.0)?.detach());
    }
    Ok(sum / steps as f32)
}

/// The same loop without the kept copies: silent.
#[memlint::mem_guard(loop = "steps", report = "target/memlint/gpu_slow_fixed.json")]
fn train_slow_fixed(s: &mut Setup, steps: usize, offset: usize) -> Result<f32> {
    let mut sum = 0f32;
    'steps: for step in 0..steps {
        sum += slow_step(s, offset + step)?;
    }
    Ok(sum / steps as f32)
}

/// `SLOW_OFFSET=n`: only the slow-leak pair, one run each in this process (so that each run has
/// its own warm-up and dense iterations), batch sizes from step `n` of the sequence on.
fn slow_only(device: &Device, offset: usize) -> Result<()> {
    let mut s = setup(device)?;
    train_unguarded(&mut s, 20)?;
    let mut kept = Vec::new();
    train_slow_leak(&mut s, 200, offset, &mut kept)?;
    drop(kept);
    train_slow_fixed(&mut s, 1200, offset)?;
    for path in ["target/memlint/gpu_slow_leak.json", "target/memlint/gpu_slow_fixed.json"] {
        memlint::wait_for_reports();
        let v = memlint::view::ReportView::read(std::path::Path::new(path))
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        println!(
            "SLOW offset={offset} {path}: iterations={} warmup={} leak={} detected_at={:?} growth/it={:.0} B",
            v.iterations,
            v.warmup,
            v.verdict.leak,
            v.verdict.detected_at_iteration,
            v.verdict.growth_bytes_per_iteration
        );
    }
    Ok(())
}

/// The fixed loop plus 4 MiB per step kept from `cuMemAlloc`, outside the CUDA pool (the way
/// libtorch's caching allocator gets its memory): the pool stays flat, the process's device
/// memory grows.
#[memlint::mem_guard(report = "target/memlint/gpu_outside_pool.json")]
fn train_outside_pool(s: &mut Setup, steps: usize, kept: &mut Vec<u64>) -> Result<f32> {
    let mut sum = 0f32;
    for _step in 0..steps {
        let (xs, ys) = batch(&s.teacher)?;
        let loss = loss::cross_entropy(&s.model.forward(&xs)?, &ys)?;
        s.opt.backward_step(&loss)?;
        sum += loss.to_scalar::<f32>()?;
        // SAFETY: a plain device allocation in the current (candle's) context; freed in main.
        let ptr = unsafe { candle_core::cuda_backend::cudarc::driver::result::malloc_sync(4 << 20) }
            .map_err(|e| candle_core::Error::Msg(format!("cuMemAlloc: {e:?}")))?;
        kept.push(ptr);
    }
    Ok(sum / steps as f32)
}

/// The same loop as `train_fixed`, unguarded: the overhead baseline.
fn train_unguarded(s: &mut Setup, steps: usize) -> Result<f32> {
    let mut sum = 0f32;
    for _step in 0..steps {
        let (xs, ys) = batch(&s.teacher)?;
        let loss = loss::cross_entropy(&s.model.forward(&xs)?, &ys)?;
        s.opt.backward_step(&loss)?;
        sum += loss.to_scalar::<f32>()?;
    }
    Ok(sum / steps as f32)
}

/// The guarded version of `train_fixed` with its own report, for the timing rounds.
#[memlint::mem_guard(report = "target/memlint/gpu_timed.json")]
fn train_timed(s: &mut Setup, steps: usize) -> Result<f32> {
    let mut sum = 0f32;
    for _step in 0..steps {
        let (xs, ys) = batch(&s.teacher)?;
        let loss = loss::cross_entropy(&s.model.forward(&xs)?, &ys)?;
        s.opt.backward_step(&loss)?;
        sum += loss.to_scalar::<f32>()?;
    }
    Ok(sum / steps as f32)
}

/// The timed loop with `lines`: memory read after every statement (in recorded iterations).
#[memlint::mem_guard(lines, report = "target/memlint/gpu_timed_lines.json")]
fn train_timed_lines(s: &mut Setup, steps: usize) -> Result<f32> {
    let mut sum = 0f32;
    for _step in 0..steps {
        let (xs, ys) = batch(&s.teacher)?;
        let loss = loss::cross_entropy(&s.model.forward(&xs)?, &ys)?;
        s.opt.backward_step(&loss)?;
        sum += loss.to_scalar::<f32>()?;
    }
    Ok(sum / steps as f32)
}

/// The fixed loop, with phases and lines, on a fresh model: its first iteration is the
/// process's first CUDA step (kernel loading, cuBLAS handles, pool growth).
#[memlint::mem_guard(lines, report = "target/memlint/gpu_first.json")]
fn train_first(s: &mut Setup, steps: usize) -> Result<f32> {
    let mut sum = 0f32;
    for _step in 0..steps {
        let (xs, ys) = batch(&s.teacher)?;
        let logits = s.model.forward(&xs)?;
        let loss = loss::cross_entropy(&logits, &ys)?;
        s.opt.backward_step(&loss)?;
        sum += loss.to_scalar::<f32>()?;
    }
    Ok(sum / steps as f32)
}

/// An empty guarded loop with `lines`: the cost of the marks of two statements.
#[memlint::mem_guard(lines, loop = "ticks", report = "target/memlint/gpu_ticks_lines.json")]
fn ticks_lines(n: u64) -> u64 {
    let mut acc = 0u64;
    'ticks: for i in 0..n {
        acc = acc.wrapping_add(std::hint::black_box(i));
    }
    acc
}

/// An empty guarded loop: the cost of one tick (pool reads + detector) alone.
#[memlint::mem_guard(loop = "ticks", report = "target/memlint/gpu_ticks.json")]
fn ticks(n: u64) -> u64 {
    let mut acc = 0u64;
    'ticks: for i in 0..n {
        acc = acc.wrapping_add(std::hint::black_box(i));
    }
    acc
}

fn summary(path: &str) {
    // The guard writes its reports on a background thread: wait for them before reading one.
    memlint::wait_for_reports();
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        println!("{path}: no report");
        return;
    };
    let samples = v["samples"].as_array().map(|s| s.as_slice()).unwrap_or(&[]);
    let first: Vec<String> = samples.iter().take(4).map(|s| s["allocated_bytes"].to_string()).collect();
    let last: Vec<String> = samples.iter().rev().take(4).rev().map(|s| s["allocated_bytes"].to_string()).collect();
    println!(
        "{path}: backend={} device={} iterations={} leak={} growth_bytes_per_iteration={} detected_at_iteration={} projected_iterations_to_exhaustion={} limit={} static_findings={}",
        v["backend"],
        v["device"],
        v["iterations"],
        v["verdict"]["leak"],
        v["verdict"]["growth_bytes_per_iteration"],
        v["verdict"]["detected_at_iteration"],
        v["verdict"]["projected_iterations_to_exhaustion"],
        v["verdict"]["exhaustion_limit"],
        v["static_findings"].as_array().map_or(0, |a| a.len())
    );
    println!(
        "  allocated_bytes first {first:?} … last {last:?}; reserved last {}",
        samples.last().map_or("null".into(), |s| s["reserved_bytes"].to_string())
    );
    println!("  blind: {}", v["blind"]);
    for s in v["sources"].as_array().map(|a| a.as_slice()).unwrap_or(&[]) {
        let samples = s["samples"].as_array().map(|a| a.as_slice()).unwrap_or(&[]);
        let first = samples.first().map_or("null".into(), |x| x["allocated_bytes"].to_string());
        let last = samples.last().map_or("null".into(), |x| x["allocated_bytes"].to_string());
        println!(
            "  {:<14} {:<10} read_every={:<4} cost={}ns in-run={}ns max={}ns samples={} leak={} growth/it={} detected_at={} first={first} last={last}",
            s["source"].as_str().unwrap_or("?"),
            s["device"].as_str().unwrap_or("?"),
            s["read_every"],
            s["read_cost_ns"],
            s["run_read_cost_ns"],
            s["run_read_max_ns"],
            samples.len(),
            s["verdict"]["leak"],
            s["verdict"]["growth_bytes_per_iteration"],
            s["verdict"]["detected_at_iteration"],
        );
    }
}

/// A guarded function whose loop runs once: the fixed cost of one guarded call.
#[memlint::mem_guard(report = "target/memlint/gpu_call.json")]
fn one_iteration() -> u64 {
    let mut acc = 0u64;
    for i in 0..1u64 {
        acc = acc.wrapping_add(std::hint::black_box(i));
    }
    acc
}

fn main() -> Result<()> {
    let steps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(80);
    let device = Device::new_cuda(0)?;
    if let Some(offset) = std::env::var("SLOW_OFFSET").ok().and_then(|o| o.parse().ok()) {
        return slow_only(&device, offset);
    }
    let mut first = setup(&device)?;
    let t = Instant::now();
    train_first(&mut first, 40)?;
    println!("first loop (40 steps, phases + lines, incl. kernel JIT): {:.1} s", t.elapsed().as_secs_f64());
    drop(first);
    let mut s = setup(&device)?;
    let t = Instant::now();
    train_unguarded(&mut s, 20)?; // PTX JIT and allocator warm-up, unmeasured
    println!("warm-up (20 steps, incl. kernel JIT): {:.1} s", t.elapsed().as_secs_f64());

    let t = Instant::now();
    let leaky = train_leaky(&mut s, steps)?;
    println!("leaky loop: {steps} steps in {:.2} s, mean loss {leaky:.4}", t.elapsed().as_secs_f64());
    let fixed_steps = steps.max(1200);
    let t = Instant::now();
    let fixed = train_fixed(&mut s, fixed_steps)?;
    println!(
        "fixed loop (batch 64..512): {fixed_steps} steps in {:.2} s, mean loss {fixed:.4}",
        t.elapsed().as_secs_f64()
    );
    let mut kept = Vec::new();
    let t = Instant::now();
    let outside_steps = steps.max(1600);
    let outside = train_outside_pool(&mut s, outside_steps, &mut kept)?;
    println!("outside-pool loop: {outside_steps} steps in {:.2} s, mean loss {outside:.4}", t.elapsed().as_secs_f64());
    for ptr in kept {
        // SAFETY: allocated above with cuMemAlloc, not used any more.
        let _ = unsafe { candle_core::cuda_backend::cudarc::driver::result::free_sync(ptr) };
    }
    summary("target/memlint/gpu_leaky.json");
    summary("target/memlint/gpu_fixed.json");
    summary("target/memlint/gpu_outside_pool.json");

    // Overhead: alternate unguarded and guarded rounds of the same loop; compare medians.
    // Rounds of 300 steps (`PER_ROUND`), the calls of the measurement: each guarded call
    // pays its warm-up, its dense iterations and its phase records, and writes a report.
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(9);
    let per_round: usize = std::env::var("PER_ROUND").ok().and_then(|r| r.parse().ok()).unwrap_or(300);
    // The guard's time per step in each guarded round by part: primary, secondary, writes,
    // marks, detector, rest.
    let mut parts: Vec<[f64; 6]> = Vec::new();
    let (mut plain, mut guarded, mut lines) = (Vec::new(), Vec::new(), Vec::new());
    // The guard's own time in each guarded round, from its report: per step and as a share.
    let mut own: Vec<(f64, f64)> = Vec::new();
    // The pace each guarded round ended with (`sample_every`).
    let mut paces: Vec<u64> = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        train_unguarded(&mut s, per_round)?;
        plain.push(t.elapsed().as_secs_f64() / per_round as f64);
        let t = Instant::now();
        train_timed(&mut s, per_round)?;
        guarded.push(t.elapsed().as_secs_f64() / per_round as f64);
        memlint::wait_for_reports();
        if let Some(v) = std::fs::read_to_string("target/memlint/gpu_timed.json")
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            && let (Some(g), Some(e), Some(n)) =
                (v["guard_seconds"].as_f64(), v["elapsed_seconds"].as_f64(), v["iterations"].as_f64())
            && n > 0.0
            && e > 0.0
        {
            own.push((g / n, g / e));
            paces.push(v["pace"]["sample_every"].as_u64().unwrap_or(0));
            let part = |k: &str| v["guard_time"][k].as_f64().unwrap_or(f64::NAN) / n;
            let known = [
                part("primary_seconds"),
                part("secondary_seconds"),
                part("write_seconds"),
                part("marks_seconds"),
                part("detector_seconds"),
            ];
            parts.push([known[0], known[1], known[2], known[3], known[4], g / n - known.iter().sum::<f64>()]);
        }
        let t = Instant::now();
        train_timed_lines(&mut s, per_round)?;
        lines.push(t.elapsed().as_secs_f64() / per_round as f64);
    }
    // The last round's report, kept apart from the long run's.
    memlint::wait_for_reports();
    let _ = std::fs::copy("target/memlint/gpu_timed.json", "target/memlint/gpu_timed_round.json");
    let mut ratios: Vec<f64> = plain.iter().zip(&guarded).map(|(p, g)| g / p).collect();
    ratios.sort_by(f64::total_cmp);
    println!(
        "per-round ratios phases/unguarded (same round): median {:.5}, min {:.5}, max {:.5}",
        ratios[rounds / 2],
        ratios[0],
        ratios[rounds - 1]
    );
    for v in [&mut plain, &mut guarded, &mut lines] {
        v.sort_by(f64::total_cmp);
    }
    let (p, g, l) = (plain[rounds / 2], guarded[rounds / 2], lines[rounds / 2]);
    println!(
        "step time, median of {rounds} interleaved rounds × {per_round} steps: unguarded {:.1} µs, guarded with phases {:.1} µs (ratio {:.4}, {:+.2}%), guarded with lines {:.1} µs (ratio {:.4}, {:+.2}%)",
        p * 1e6,
        g * 1e6,
        g / p,
        (g / p - 1.0) * 100.0,
        l * 1e6,
        l / p,
        (l / p - 1.0) * 100.0
    );
    if !own.is_empty() {
        // Each round's share in order: the first pays the warm-up and dense iterations, later
        // ones start owing what it spent beyond the budget (`pace.carried_seconds`).
        let shares: Vec<String> = own.iter().map(|o| format!("{:.3}", o.1 * 100.0)).collect();
        println!("GUARDSHARE candle timed, % per round in order: {}", shares.join(" "));
        let mut per_step: Vec<f64> = own.iter().map(|o| o.0).collect();
        let mut share: Vec<f64> = own.iter().map(|o| o.1).collect();
        per_step.sort_by(f64::total_cmp);
        share.sort_by(f64::total_cmp);
        let m = own.len() / 2;
        println!(
            "time inside the guard (its report's guard_seconds, {} rounds × {per_round} steps): median {:.2} µs/step (min {:.2}, max {:.2}) = {:.4}% of the guarded loop (min {:.4}%, max {:.4}%), {:.4}% of the unguarded median step",
            own.len(),
            per_step[m] * 1e6,
            per_step[0] * 1e6,
            per_step[own.len() - 1] * 1e6,
            share[m] * 100.0,
            share[0] * 100.0,
            share[own.len() - 1] * 100.0,
            per_step[m] / p * 100.0
        );
        println!("pace of the guarded rounds (sample_every): {paces:?}");
        let median = |k: usize| {
            let mut v: Vec<f64> = parts.iter().map(|p| p[k]).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2] * 1e6
        };
        println!(
            "  of which per step (medians over rounds): primary reads and peak resets {:.2} µs, secondary reads {:.2} µs, reports written while running {:.2} µs, primary reads at the marks {:.2} µs, detector and sample records {:.2} µs; the rest (phase starts and ends, pace, bookkeeping) {:.2} µs",
            median(0),
            median(1),
            median(2),
            median(3),
            median(4),
            median(5)
        );
    }
    // One long guarded run: the guard's own time once the early phase records and the
    // doubling report writes are spread over a training-length loop.
    let long: usize = std::env::var("LONG_STEPS").ok().and_then(|r| r.parse().ok()).unwrap_or(0);
    if long > 0 {
        let t = Instant::now();
        train_timed(&mut s, long)?;
        let wall = t.elapsed().as_secs_f64();
        memlint::wait_for_reports();
        if let Some(v) = std::fs::read_to_string("target/memlint/gpu_timed.json")
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        {
            let g = v["guard_seconds"].as_f64().unwrap_or(f64::NAN);
            println!(
                "long guarded run: {long} steps in {wall:.1} s ({:.1} µs/step); time inside the guard {:.3} s = {:.2} µs/step = {:.4}% of the run",
                wall / long as f64 * 1e6,
                g,
                g / long as f64 * 1e6,
                g / wall * 100.0
            );
            println!("  pace: {}", v["pace"]);
            let part = |k: &str| v["guard_time"][k].as_f64().unwrap_or(f64::NAN) / long as f64 * 1e6;
            println!(
                "  of which per step: primary reads and peak resets {:.2} µs, secondary reads {:.2} µs, reports written while running {:.2} µs, primary reads at the marks {:.2} µs, detector and sample records {:.2} µs; the rest (phase starts and ends, pace, bookkeeping) {:.2} µs",
                part("primary_seconds"),
                part("secondary_seconds"),
                part("write_seconds"),
                part("marks_seconds"),
                part("detector_seconds"),
                g / long as f64 * 1e6
                    - part("primary_seconds")
                    - part("secondary_seconds")
                    - part("write_seconds")
                    - part("marks_seconds")
                    - part("detector_seconds")
            );
        }
    }
    println!("rounds (µs/step): unguarded {:?}", plain.iter().map(|x| (x * 1e7).round() / 10.0).collect::<Vec<_>>());
    println!("rounds (µs/step): phases    {:?}", guarded.iter().map(|x| (x * 1e7).round() / 10.0).collect::<Vec<_>>());
    println!("rounds (µs/step): lines     {:?}", lines.iter().map(|x| (x * 1e7).round() / 10.0).collect::<Vec<_>>());
    let n = 200_000u64;
    let t = Instant::now();
    std::hint::black_box(ticks(n));
    let tick = t.elapsed().as_secs_f64() / n as f64;
    println!(
        "cost of one guard tick on CUDA (empty loop, {n} ticks): {:.2} µs = {:.3}% of the unguarded step",
        tick * 1e6,
        tick / p * 100.0
    );
    summary("target/memlint/gpu_ticks.json");
    summary("target/memlint/gpu_timed.json");
    let calls = 2000;
    let t = Instant::now();
    for _ in 0..calls {
        std::hint::black_box(one_iteration());
    }
    let call = t.elapsed().as_secs_f64() / calls as f64;
    println!(
        "fixed cost of one guarded call (open/reuse sources, one tick, verdict, report write): {:.1} µs = {:.3}% of a {per_round}-step call",
        call * 1e6,
        call / (p * per_round as f64) * 100.0
    );
    let t = Instant::now();
    std::hint::black_box(ticks_lines(n));
    let tick_lines = t.elapsed().as_secs_f64() / n as f64;
    println!(
        "one tick + 2 line marks (empty loop, {n} iterations, iterations 0..8 and every 8th recorded, at most 2048): {:.2} µs",
        tick_lines * 1e6
    );
    Ok(())
}
