//! A function without a training loop is sampled once per call, with state kept per call site.

mod common;

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

struct Trainer {
    history: Vec<Vec<f32>>,
}

impl Trainer {
    #[memlint::mem_guard]
    fn train_step(&mut self, batch: &[f32]) -> f32 {
        // The leak: every step's activations are kept.
        self.history.push(batch.iter().map(|x| x * 2.0).collect());
        batch.iter().sum()
    }
}

#[memlint::mem_guard]
fn clean_step(batch: &[f32]) -> f32 {
    let doubled: Vec<f32> = batch.iter().map(|x| x * 2.0).collect();
    doubled.iter().sum()
}

#[test]
fn leaking_step_function_is_flagged_across_calls() {
    // Every call sampled: the automatic pace may repay the dense calls' cost by sampling every
    // 1,024th call (it did on a loaded CI machine), and then no call from 256 to 300 is sampled
    // and no running report is written. The pace has its own tests (`pace.rs`).
    // SAFETY: set before the first guarded call, while this test is the binary's only thread
    // that reads the environment.
    unsafe { std::env::set_var("MEMLINT_SAMPLE_EVERY", "1") };
    let mut trainer = Trainer { history: Vec::new() };
    let batch = vec![1.0f32; 64 * 1024]; // 256 KiB per step
    // Host memory is process-wide: a clean function called between leaking calls would see the
    // growth too, so the clean one runs first.
    // 5 ms between calls: a running report is written at a flush (256 calls) once the run is a
    // second old.
    for _ in 0..300 {
        clean_step(&batch);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let clean = common::reports_for("clean_step");
    assert_eq!(clean.len(), 1, "written while running, at 256 calls");
    assert_eq!(common::read(&clean[0])["verdict"]["leak"], false);
    // At the flush at call 256, every call being sampled.
    let written_at = common::read(&clean[0])["iterations"].as_u64().unwrap();
    assert_eq!(written_at, 256, "written at {written_at}");
    assert_eq!(common::read(&clean[0])["pace"]["sample_every"], 1);
    for _ in 0..60 {
        trainer.train_step(&batch);
    }
    // Call mode writes its report when a leak is found (and at exit).
    let report = common::only_report("train_step");
    common::check_schema(&report);
    assert_eq!(report["mode"], "call");
    assert!(report["loop_line"].is_null());
    assert_eq!(report["verdict"]["leak"], true);
    let detected = report["verdict"]["detected_at_iteration"].as_u64().unwrap();
    assert!(detected <= 10 + 30, "detected at call {detected}");
    let growth = report["verdict"]["growth_bytes_per_iteration"].as_f64().unwrap();
    assert!((growth - 262_144.0).abs() < 8192.0, "growth {growth}");
}
