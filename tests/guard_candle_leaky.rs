//! The leaky candle example (`examples/candle_leaky.rs`), guarded, on the CPU: flagged within
//! ~30 iterations after warm-up, with the static engine's finding as the likely cause.

mod common;

#[path = "../examples/candle_leaky.rs"]
mod example;

#[test]
fn leaky_candle_loop_is_flagged_soon_after_warmup() {
    let steps = 60;
    example::run(steps).expect("training runs");
    let report = common::only_report("train");
    common::check_schema(&report);
    assert_eq!(report["backend"], "host-allocator");
    assert_eq!(report["iterations"], steps as u64);
    assert_eq!(report["outcome"], "returned");
    let verdict = &report["verdict"];
    assert_eq!(verdict["leak"], true, "{verdict}");
    let warmup = report["warmup"].as_u64().unwrap();
    let detected = verdict["detected_at_iteration"].as_u64().expect("detection iteration");
    assert!(detected >= warmup && detected - warmup <= 30, "detected at {detected}");
    // Each step keeps its graph: inputs (32×128 f32 = 16 KiB) and activations at least.
    let growth = verdict["growth_bytes_per_iteration"].as_f64().unwrap();
    assert!(growth > 32.0 * 1024.0, "growth {growth} B/iteration");
    assert!(verdict["projected_iterations_to_exhaustion"].as_u64().is_some(), "{verdict}");
    let rules: Vec<&str> =
        report["static_findings"].as_array().unwrap().iter().filter_map(|f| f["rule"].as_str()).collect();
    assert!(rules.contains(&"accumulated_loss_tensor"), "static findings: {rules:?}");
}
