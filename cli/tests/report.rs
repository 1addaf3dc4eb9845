//! `cargo memlint report` end to end on a real version 2 report (memlint-report's fixture).

use std::path::Path;
use std::process::Command;

fn memlint(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-memlint")).args(args).output().expect("cargo-memlint runs")
}

#[test]
fn report_prints_the_summary_and_writes_the_page_and_the_trace() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/v2_candle_leaky_lines.json");
    let dir = std::env::temp_dir().join(format!("memlint-cli-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (html, trace) = (dir.join("r.html"), dir.join("r.trace.json"));
    let out = memlint(&[
        "memlint",
        "report",
        fixture.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        "--perfetto",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("memlint memory summary: `train`"), "{stdout}");
    assert!(stdout.contains("verdict: leak, +75.2 KiB per iteration"), "{stdout}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert!(trace["traceEvents"].as_array().is_some_and(|e| !e.is_empty()));

    let missing = memlint(&["memlint", "report", "/nonexistent/report.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read /nonexistent/report.json"));
}
