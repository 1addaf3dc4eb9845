//! The measured case, on a real candle CPU loop under `TrackingAllocator`: batch sizes
//! vary 16..=128 and each step keeps a 64 KiB copy of a weight. Flagged within 30 iterations after
//! warm-up with its growth and severity (the former 1 MiB-per-window tolerance hid it).

mod common;

#[path = "../examples/candle_slow_leak.rs"]
mod example;

#[test]
fn slow_leak_under_varying_batches_is_flagged() {
    let steps = 120;
    example::run(steps, true).expect("training runs");
    let report = common::only_report("train_leaky");
    common::check_schema(&report);
    assert_eq!(report["backend"], "host-allocator");
    let verdict = &report["verdict"];
    assert_eq!(verdict["leak"], true, "{verdict}");
    let warmup = report["warmup"].as_u64().unwrap();
    let detected = verdict["detected_at_iteration"].as_u64().expect("detection iteration");
    assert!(detected >= warmup && detected - warmup <= 30, "detected at {detected}");
    // 65,536 B of data plus candle's and Vec's bookkeeping per step.
    let growth = verdict["growth_bytes_per_iteration"].as_f64().unwrap();
    assert!((65_536.0..70_000.0).contains(&growth), "growth {growth} B/iteration");
    assert!(verdict["projected_iterations_to_exhaustion"].as_u64().is_some(), "{verdict}");
    assert!(matches!(verdict["severity"].as_str(), Some("error" | "warning")), "{verdict}");
    assert!(verdict["noise_bytes"].as_f64().is_some(), "{verdict}");
}
