//! Overhead of `#[mem_guard]` per iteration on the host: a guarded vs an unguarded candle CPU
//! training loop (same process, interleaved rounds), and the cost of one tick on an empty loop.
//!
//!     cargo bench -p memlint-runtime --bench guard_overhead [-- rounds steps]

use std::time::Instant;

#[path = "support/workload.rs"]
mod workload;

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

fn unguarded(w: &mut workload::Workload, steps: usize) -> f32 {
    let mut sum = 0.0;
    for _ in 0..steps {
        sum += w.step().expect("step");
    }
    sum
}

#[memlint::mem_guard(loop = "train")]
fn guarded(w: &mut workload::Workload, steps: usize) -> f32 {
    let mut sum = 0.0;
    'train: for _ in 0..steps {
        if sum < 0.0 {
            continue 'train;
        }
        sum += w.step().expect("step");
    }
    sum
}

#[memlint::mem_guard(loop = "ticks")]
fn ticks(n: u64) -> u64 {
    let mut acc = 0u64;
    'ticks: for i in 0..n {
        if i == u64::MAX {
            break 'ticks;
        }
        acc = acc.wrapping_add(std::hint::black_box(i));
    }
    acc
}

/// A guarded call whose loop runs once: the fixed cost of a guarded call (sources, verdict,
/// report write).
#[memlint::mem_guard(loop = "once")]
fn one_iteration() -> u64 {
    let mut acc = 0u64;
    'once: for i in 0..1u64 {
        if i == u64::MAX {
            break 'once;
        }
        acc = acc.wrapping_add(std::hint::black_box(i));
    }
    acc
}

fn empty(n: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..n {
        acc = acc.wrapping_add(std::hint::black_box(i));
    }
    acc
}

fn main() {
    if std::env::var_os("MEMLINT_REPORT_DIR").is_none() {
        // SAFETY: no other thread exists yet (candle starts its pool later).
        unsafe { std::env::set_var("MEMLINT_REPORT_DIR", env!("CARGO_TARGET_TMPDIR")) };
    }
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let rounds: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(7);
    let steps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let mut w = workload::Workload::new().expect("workload");
    unguarded(&mut w, 10);
    let (mut plain, mut with_guard) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        std::hint::black_box(unguarded(&mut w, steps));
        plain.push(t.elapsed().as_secs_f64() / steps as f64);
        let t = Instant::now();
        std::hint::black_box(guarded(&mut w, steps));
        with_guard.push(t.elapsed().as_secs_f64() / steps as f64);
    }
    let (p, g) = (workload::median(&mut plain), workload::median(&mut with_guard));
    let n = 1_000_000u64;
    let t = Instant::now();
    std::hint::black_box(empty(n));
    let base = t.elapsed().as_secs_f64() / n as f64;
    let t = Instant::now();
    std::hint::black_box(ticks(n));
    let tick = t.elapsed().as_secs_f64() / n as f64 - base;
    let calls = 500;
    let t = Instant::now();
    for _ in 0..calls {
        std::hint::black_box(one_iteration());
    }
    let call = t.elapsed().as_secs_f64() / calls as f64;
    println!("host guard overhead (backend host-allocator); {rounds} rounds × {steps} steps, interleaved");
    println!("{:<28} {:>14}", "", "median µs/step");
    println!("{:<28} {:>14.1}", "unguarded candle CPU step", p * 1e6);
    println!("{:<28} {:>14.1}", "guarded candle CPU step", g * 1e6);
    println!("ratio guarded/unguarded: {:.4} ({:+.2}%)", g / p, (g / p - 1.0) * 100.0);
    println!(
        "one tick on an empty loop ({n} ticks): {:.3} µs = {:.4}% of the unguarded step",
        tick * 1e6,
        tick / p * 100.0
    );
    println!(
        "one guarded call with one iteration ({calls} calls): {:.1} µs = {:.3}% of a {steps}-step call",
        call * 1e6,
        call / (p * steps as f64) * 100.0
    );
}
