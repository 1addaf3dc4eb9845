//! `budget` with `on_leak = "panic"` stops the run when the budget is crossed, before the memory
//! really runs out, and the report records the crossing.

mod common;

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

struct Opt;

impl Opt {
    fn backward_step(&mut self) {}
}

#[memlint::mem_guard(budget = "64MiB", on_leak = "panic", warmup = 100)]
fn grows_past_budget(opt: &mut Opt) -> usize {
    let mut keep: Vec<Vec<u8>> = Vec::new();
    for _ in 0..1000 {
        keep.push(vec![7u8; 4 << 20]);
        opt.backward_step();
    }
    keep.len()
}

#[test]
fn budget_crossing_panics_and_is_reported() {
    let caught = std::panic::catch_unwind(|| grows_past_budget(&mut Opt));
    let message = *caught.expect_err("panics at the budget").downcast::<String>().expect("message");
    assert!(message.contains("memory budget of 64.0 MiB exceeded in `grows_past_budget`"), "{message}");
    let report = common::only_report("grows_past_budget");
    common::check_schema(&report);
    let breach = &report["budget_breach"];
    assert_eq!(breach["budget_bytes"], 64u64 << 20);
    let bytes = breach["bytes"].as_u64().unwrap();
    assert!(bytes > 64 << 20 && bytes < 80 << 20, "{bytes}");
    // 4 MiB per iteration: the 16th iteration (index 15) holds 64 MiB plus the Vec; index 15 or 16.
    let at = breach["iteration"].as_u64().unwrap();
    assert!((15..=16).contains(&at), "crossed at {at}");
    assert_eq!(report["outcome"], "panicked");
    // Warm-up 100: no leak verdict yet, the budget guard acts alone.
    assert_eq!(report["verdict"]["leak"], false);
}
