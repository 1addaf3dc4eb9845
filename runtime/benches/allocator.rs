//! `TrackingAllocator` vs the system allocator vs dhat on a candle CPU training loop.
//!
//!     cargo bench -p memlint-runtime --bench allocator [-- rounds steps]
//!
//! The global allocator is fixed for a process, so this binary re-runs itself once per allocator
//! and round (interleaved: system, tracking, dhat, system, …). A child picks its allocator from
//! `MEMLINT_BENCH_ALLOC` at its very first allocation (read with `getenv`, which does not
//! allocate), so every block it ever frees was allocated by the same allocator. Each child times
//! `steps` training steps after 10 warm-up steps; the table shows medians and ratios.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::time::Instant;

use memlint_runtime::TrackingAllocator;

#[path = "support/workload.rs"]
mod workload;

const UNSET: u8 = 0;
const SYSTEM: u8 = 1;
const TRACKING: u8 = 2;
const DHAT: u8 = 3;
static MODE: AtomicU8 = AtomicU8::new(UNSET);

struct Switch;

static TRACK: TrackingAllocator = TrackingAllocator::new();
static DHAT_ALLOC: dhat::Alloc = dhat::Alloc;

fn mode() -> u8 {
    let mode = MODE.load(Relaxed);
    if mode != UNSET {
        return mode;
    }
    // SAFETY: getenv with a valid C string; the result is only read.
    let value = unsafe { libc::getenv(c"MEMLINT_BENCH_ALLOC".as_ptr()) };
    let chosen = if value.is_null() {
        SYSTEM
    } else {
        // SAFETY: getenv returns a valid C string.
        match unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes() {
            b"tracking" => TRACKING,
            b"dhat" => DHAT,
            _ => SYSTEM,
        }
    };
    MODE.store(chosen, Relaxed);
    chosen
}

// SAFETY: forwards to one allocator, the same for the whole process.
unsafe impl GlobalAlloc for Switch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match mode() {
            TRACKING => unsafe { TRACK.alloc(layout) },
            DHAT => unsafe { DHAT_ALLOC.alloc(layout) },
            _ => unsafe { System.alloc(layout) },
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match mode() {
            TRACKING => unsafe { TRACK.dealloc(ptr, layout) },
            DHAT => unsafe { DHAT_ALLOC.dealloc(ptr, layout) },
            _ => unsafe { System.dealloc(ptr, layout) },
        }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match mode() {
            TRACKING => unsafe { TRACK.alloc_zeroed(layout) },
            DHAT => unsafe { DHAT_ALLOC.alloc_zeroed(layout) },
            _ => unsafe { System.alloc_zeroed(layout) },
        }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match mode() {
            TRACKING => unsafe { TRACK.realloc(ptr, layout, new_size) },
            DHAT => unsafe { DHAT_ALLOC.realloc(ptr, layout, new_size) },
            _ => unsafe { System.realloc(ptr, layout, new_size) },
        }
    }
}

#[global_allocator]
static GLOBAL: Switch = Switch;

const NAMES: [(&str, u8); 3] = [("system", SYSTEM), ("tracking", TRACKING), ("dhat", DHAT)];

fn child(steps: usize) {
    let profiler = (mode() == DHAT).then(|| {
        let file = std::env::temp_dir().join(format!("memlint-bench-dhat-{}.json", std::process::id()));
        dhat::Profiler::builder().file_name(file).build()
    });
    let mut w = workload::Workload::new().expect("workload");
    for _ in 0..10 {
        w.step().expect("step");
    }
    let start = Instant::now();
    for _ in 0..steps {
        std::hint::black_box(w.step().expect("step"));
    }
    let per_step = start.elapsed().as_secs_f64() / steps as f64;
    let allocations = if mode() == TRACKING { TrackingAllocator::stats().allocations } else { 0 };
    println!("{per_step} {allocations}");
    if let Some(p) = profiler {
        let stats = dhat::HeapStats::get();
        eprintln!("dhat: {} blocks allocated in total", stats.total_blocks);
        // Writing dhat's file is not timed; remove it afterwards.
        drop(p);
        let file = std::env::temp_dir().join(format!("memlint-bench-dhat-{}.json", std::process::id()));
        let _ = std::fs::remove_file(file);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let rounds: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(5);
    let steps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    if std::env::var_os("MEMLINT_BENCH_CHILD").is_some() {
        child(steps);
        return;
    }
    let exe = std::env::current_exe().expect("own path");
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); NAMES.len()];
    let mut allocations_per_step = 0.0;
    for _ in 0..rounds {
        for (i, (name, _)) in NAMES.iter().enumerate() {
            let out = Command::new(&exe)
                .args([rounds.to_string(), steps.to_string()])
                .env("MEMLINT_BENCH_CHILD", "1")
                .env("MEMLINT_BENCH_ALLOC", name)
                .output()
                .expect("child runs");
            let text = String::from_utf8_lossy(&out.stdout);
            let mut fields = text.split_whitespace();
            let per_step: f64 = fields
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("child `{name}` failed: {}", String::from_utf8_lossy(&out.stderr)));
            if *name == "tracking" {
                let total: f64 = fields.next().and_then(|s| s.parse().ok()).unwrap_or(0.0);
                allocations_per_step = total / (steps + 10) as f64;
            }
            times[i].push(per_step);
        }
    }
    let medians: Vec<f64> = times.iter_mut().map(|t| workload::median(t)).collect();
    println!(
        "candle CPU MLP {}→{}→{} batch {}, SGD; {rounds} rounds × {steps} steps per allocator (interleaved); ~{allocations_per_step:.0} allocations per step",
        workload::INPUTS,
        workload::HIDDEN,
        workload::CLASSES,
        workload::BATCH
    );
    println!("{:<10} {:>14} {:>12}", "allocator", "median µs/step", "vs system");
    for (i, (name, _)) in NAMES.iter().enumerate() {
        println!("{:<10} {:>14.1} {:>11.3}x", name, medians[i] * 1e6, medians[i] / medians[0]);
    }
}
