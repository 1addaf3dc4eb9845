//! A guarded loop function called many times in short calls (one call per epoch): the calls go
//! on at the first call's pace as if they were one loop, so most later calls read nothing, and
//! every call still writes its report, saying so.

mod common;

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

/// A step far cheaper than one read of memory: the guard's first call spends well beyond 0.1 %
/// of its time, and its later calls owe it.
#[memlint::mem_guard(loop = "steps")]
fn epoch(data: &[u64], steps: usize) -> u64 {
    let mut sum = 0u64;
    'steps: for i in 0..steps {
        if sum == u64::MAX {
            continue 'steps;
        }
        sum = sum.wrapping_add(data[i % data.len()]);
    }
    sum
}

#[test]
fn later_short_calls_read_only_when_their_read_is_due() {
    let data: Vec<u64> = (0..64).collect();
    for _ in 0..10 {
        std::hint::black_box(epoch(&data, 200));
    }
    let reports: Vec<serde_json::Value> = common::reports_for("epoch").iter().map(|p| common::read(p)).collect();
    assert_eq!(reports.len(), 10, "one report per call");
    for report in &reports {
        common::check_schema(report);
        assert_eq!(report["outcome"], "returned");
        assert_eq!(report["iterations"], 200);
        assert_eq!(report["verdict"]["leak"], false);
    }
    let reads: Vec<u64> = reports.iter().map(|r| r["reads"].as_u64().expect("reads")).collect();
    let first = &reports[0];
    assert_eq!(first["pace"]["carried_seconds"], 0.0);
    assert!(reads[0] >= 32, "the first call reads its warm-up and dense iterations: {reads:?}");
    assert_eq!(first["pace"]["sample_every"], 1024, "{}", first["pace"]);
    // Later calls: at one read per 1,024 iterations of the calls together, at most one read in
    // any five 200-iteration calls.
    for (i, report) in reports.iter().enumerate().skip(1) {
        assert!(report["pace"]["carried_seconds"].as_f64().unwrap() > 0.0, "call {i}: {}", report["pace"]);
        assert_eq!(report["pace"]["sample_every"], 1024);
        assert_eq!(report["samples"].as_array().unwrap().len() as u64, reads[i]);
    }
    let later: u64 = reads[1..].iter().sum();
    assert!((1..=2).contains(&later), "1,800 iterations at one read per 1,024: {reads:?}");
    assert!(reads[1..].iter().filter(|&&n| n == 0).count() >= 7, "{reads:?}");
    // A call that read nothing spent next to nothing in the guard.
    for (report, &n) in reports.iter().zip(&reads) {
        if n == 0 {
            let own = report["guard_seconds"].as_f64().unwrap();
            assert!(own < 1e-3, "{own} s in a call that read nothing");
        }
    }
}
