//! The fixed candle example (`examples/candle_fixed.rs`), guarded, on the CPU: no leak.

mod common;

#[path = "../examples/candle_fixed.rs"]
mod example;

#[test]
fn fixed_candle_loop_is_silent() {
    let steps = 60;
    example::run(steps).expect("training runs");
    let report = common::only_report("train");
    common::check_schema(&report);
    assert_eq!(report["backend"], "host-allocator");
    assert_eq!(report["iterations"], steps as u64);
    let verdict = &report["verdict"];
    assert_eq!(verdict["leak"], false, "{verdict}");
    assert!(verdict["detected_at_iteration"].is_null());
    // Flat after warm-up: within a few KiB over the whole run.
    let total = verdict["total_growth_bytes"].as_i64().unwrap();
    assert!(total.abs() < 64 * 1024, "total growth {total} B");
    assert_eq!(report["static_findings"].as_array().unwrap().len(), 0, "{}", report["static_findings"]);
}
