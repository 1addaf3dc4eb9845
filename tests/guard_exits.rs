//! The report survives every way out of a guarded function: return, early return, `?`, panic.

mod common;

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

struct Opt;

impl Opt {
    fn step(&mut self) {}
}

#[memlint::mem_guard(warmup = 2, window = 4)]
fn leak_then_panic(opt: &mut Opt, keep: &mut Vec<Vec<u8>>) {
    for i in 0..40 {
        keep.push(vec![1u8; 512 * 1024]);
        opt.step();
        if i == 30 {
            panic!("boom at iteration {i}");
        }
    }
}

#[memlint::mem_guard]
fn early_error(opt: &mut Opt) -> Result<u32, String> {
    for i in 0..100 {
        opt.step();
        if i == 7 {
            Err(format!("failed at {i}"))?;
        }
    }
    Ok(0)
}

#[test]
fn report_written_on_panic_and_on_error() {
    let mut keep = Vec::new();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| leak_then_panic(&mut Opt, &mut keep)));
    assert!(caught.is_err());
    let report = common::only_report("leak_then_panic");
    common::check_schema(&report);
    assert_eq!(report["outcome"], "panicked");
    // Iterations 0..=29 completed; the one that panicked is not a sample.
    assert_eq!(report["iterations"], 30);
    assert_eq!(report["samples"].as_array().unwrap().len(), 30);
    assert_eq!(report["verdict"]["leak"], true);
    let growth = report["verdict"]["growth_bytes_per_iteration"].as_f64().unwrap();
    assert!((growth - 512.0 * 1024.0).abs() < 16.0 * 1024.0, "growth {growth}");

    assert_eq!(early_error(&mut Opt), Err("failed at 7".to_owned()));
    let report = common::only_report("early_error");
    assert_eq!(report["outcome"], "returned");
    assert_eq!(report["iterations"], 7);
    assert_eq!(report["verdict"]["leak"], false);
}
