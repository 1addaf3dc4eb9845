//! The fixed version of `guard_candle_slow_leak.rs` (only the latest weight copy is kept), with
//! the same varying batch sizes: silent.

mod common;

#[path = "../examples/candle_slow_leak.rs"]
mod example;

#[test]
fn fixed_loop_under_varying_batches_is_silent() {
    let steps = 300;
    example::run(steps, false).expect("training runs");
    let report = common::only_report("train_fixed");
    common::check_schema(&report);
    assert_eq!(report["backend"], "host-allocator");
    assert_eq!(report["iterations"], steps as u64);
    let verdict = &report["verdict"];
    assert_eq!(verdict["leak"], false, "{verdict}");
    assert!(verdict["detected_at_iteration"].is_null() && verdict["severity"].is_null(), "{verdict}");
    let total = verdict["total_growth_bytes"].as_i64().unwrap();
    assert!(total.abs() < 64 * 1024, "total growth {total} B");
}
