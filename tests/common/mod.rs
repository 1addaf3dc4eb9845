//! Shared by the runtime integration tests (each is its own binary: global state).
#![allow(dead_code)]

use std::path::PathBuf;

/// The reports this process wrote for `function` under `MEMLINT_REPORT_DIR`, oldest first.
pub fn reports_for(function: &str) -> Vec<PathBuf> {
    // Reports written while a run goes on are written by a background thread.
    memlint::wait_for_reports();
    let prefix = format!("{function}-{}-", std::process::id());
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(memlint::report_dir())
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter_map(|p| {
                    let name = p.file_name()?.to_str()?.to_owned();
                    let run = name.strip_prefix(&prefix)?.strip_suffix(".json")?.parse().ok()?;
                    Some((run, p))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// Parses a JSON report.
pub fn read(path: &std::path::Path) -> serde_json::Value {
    // The guard writes its reports on a background thread: wait for them before reading one.
    memlint::wait_for_reports();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The only report of `function` in this process.
pub fn only_report(function: &str) -> serde_json::Value {
    let paths = reports_for(function);
    assert_eq!(paths.len(), 1, "reports of `{function}`: {paths:?}");
    read(&paths[0])
}

/// Checks the fields every report must have (schema version 5: version 1's fields, plus one
/// entry per source, the primary one first and equal to the top-level series, blind notes, in
/// loop mode the phases of each secondary source, the guard's own time and its pace).
pub fn check_schema(report: &serde_json::Value) {
    assert_eq!(report["version"], 5);
    // The pace: a power of two up to 64 unless pinned; chosen from a measured step.
    let pace = &report["pace"];
    let every = pace["sample_every"].as_u64().expect("pace.sample_every");
    assert!(every >= 1 && (pace["pinned"] == true || (every.is_power_of_two() && every <= 1024)), "{pace}");
    if pace["choices"].as_u64().expect("pace.choices") > 0 {
        assert!(pace["step_seconds"].as_f64().unwrap() > 0.0, "{pace}");
        // 0 when the guard owes its whole budget (it spent ahead of it early in the run).
        assert!(pace["budget_seconds"].as_f64().unwrap() >= 0.0, "{pace}");
    }
    // The guard's own time: measured, positive once an iteration ran, and a part of the run.
    let (own, elapsed) =
        (report["guard_seconds"].as_f64().expect("guard_seconds"), report["elapsed_seconds"].as_f64().unwrap());
    assert!(own >= 0.0 && own <= elapsed, "guard {own} s of {elapsed} s");
    // A short call that went on at an earlier call's pace may have read nothing (`reads`).
    let reads = report["reads"].as_u64().expect("reads");
    assert!(reads <= report["iterations"].as_u64().unwrap(), "{reads} reads");
    if report["iterations"].as_u64().unwrap_or(0) > 1 && reads > 0 {
        assert!(own > 0.0, "no guard time measured over {} iterations", report["iterations"]);
    }
    let sources = report["sources"].as_array().expect("sources array");
    assert!(!sources.is_empty(), "no source in {report}");
    assert_eq!(sources[0]["primary"], true);
    assert_eq!(sources[0]["samples"], report["samples"]);
    assert_eq!(sources[0]["verdict"], report["verdict"]);
    assert!(sources.iter().skip(1).all(|s| s["primary"] == false), "one primary source");
    assert!(sources.iter().any(|s| s["source"] == "host-rss"), "host RSS is always read: {sources:?}");
    for s in sources {
        assert!(
            s["read_every"].as_u64().is_some_and(|n| n >= 1) || s["samples"].as_array().is_some_and(|a| a.is_empty())
        );
        assert!(s["verdict"].get("leak").is_some(), "{s}");
    }
    assert!(report["blind"].is_array());
    assert!(report.get("phases").is_some() && report["lines"].is_array(), "phases and lines in {report}");
    if let Some(phases) = report["phases"].as_object() {
        let secondary = phases["secondary"].as_array().expect("phases.secondary array");
        let names: Vec<&serde_json::Value> = secondary.iter().map(|s| &s["source"]).collect();
        let expected: Vec<&serde_json::Value> = sources.iter().skip(1).map(|s| &s["source"]).collect();
        assert_eq!(names, expected, "one phase entry per secondary source, in order");
    }
    for key in [
        "function",
        "file",
        "line",
        "backend",
        "device",
        "warmup",
        "iterations",
        "samples",
        "verdict",
        "static_findings",
    ] {
        assert!(!report[key].is_null(), "missing `{key}` in {report}");
    }
    for key in ["leak", "growth_bytes_per_iteration", "detected_at_iteration", "projected_iterations_to_exhaustion"] {
        assert!(report["verdict"].get(key).is_some(), "missing verdict.{key}");
    }
    for sample in report["samples"].as_array().expect("samples array") {
        assert!(sample["iteration"].is_u64() && sample["allocated_bytes"].is_u64(), "{sample}");
        assert!(sample.get("reserved_bytes").is_some() && sample.get("peak_bytes").is_some(), "{sample}");
    }
}
