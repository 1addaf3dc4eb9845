//! The renderers' output in real consumers: the HTML page in headless chromium (DOM after load
//! and a screenshot), the trace in Chrome DevTools' trace engine (npm `@paulirish/trace_engine`,
//! run by node). Each test skips with a message when its tool is missing, unless
//! `MEMLINT_REQUIRE_VALIDATORS` is set (CI installs them).

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture() -> memlint_report::ReportView {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v2_candle_leaky_lines.json");
    memlint_report::load(&path).unwrap()
}

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("memlint-report-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether `tool` was found; a missing tool skips (with a message) unless it is required.
fn available(tool: &str, found: bool) -> bool {
    if !found {
        assert!(std::env::var_os("MEMLINT_REQUIRE_VALIDATORS").is_none(), "{tool} is required but missing");
        eprintln!("skipped: {tool} not found");
    }
    found
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
}

#[test]
fn chromium_loads_the_page() {
    let browser = chromium();
    if !available("chromium", browser.is_some()) {
        return;
    }
    let dir = out_dir("html");
    let page = dir.join("report.html");
    std::fs::write(&page, memlint_report::html::page(&fixture()).unwrap()).unwrap();
    let url = format!("file://{}", page.display());
    let run = |extra: &[&str]| {
        let profile = dir.join(format!("profile-{}", extra.len()));
        Command::new(browser.unwrap())
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            .args(["--disable-component-update", "--no-first-run", "--window-size=1050,2400"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(&url)
            .output()
            .unwrap()
    };
    let dom = run(&["--dump-dom"]);
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<svg").count(), 3, "three charts in the DOM");
    assert!(dom.contains("<table id=\"lines\">") && dom.contains("accumulated_loss_tensor"));
    let png = dir.join("report.png");
    run(&[&format!("--screenshot={}", png.display())]);
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 50_000, "screenshot of {} bytes", bytes.len());
}

/// The trace engine's folder: `$MEMLINT_TRACE_ENGINE`, or the global npm install.
fn trace_engine() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MEMLINT_TRACE_ENGINE") {
        return Some(PathBuf::from(dir));
    }
    let root = Command::new("npm").args(["root", "-g"]).output().ok()?;
    let dir = PathBuf::from(String::from_utf8_lossy(&root.stdout).trim()).join("@paulirish/trace_engine");
    dir.join("analyze-trace.mjs").exists().then_some(dir)
}

#[test]
fn devtools_trace_engine_reads_the_trace() {
    let engine = trace_engine();
    if !available("@paulirish/trace_engine (npm) and node", engine.is_some()) {
        return;
    }
    let report = fixture();
    let dir = out_dir("trace");
    let trace = dir.join("trace.json");
    std::fs::write(&trace, serde_json::to_string(&memlint_report::perfetto::trace(&report)).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check_trace.mjs");
    let out = Command::new("node").arg(script).arg(engine.unwrap()).arg(&trace).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let parsed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let records = report.phases.as_ref().unwrap().records.len() as u64;
    let thread = |name: &str| {
        parsed["threads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{parsed}"))
            .clone()
    };
    assert_eq!(thread("iterations")["entries"], records);
    assert_eq!(thread("phases")["entries"], records * 4);
    assert_eq!(thread("phases")["names"]["backward+step"], records);
    assert_eq!(thread("lines")["entries"], records * 6);
    assert_eq!(thread("lines")["names"]["line 53: total = (total + &loss)?;"], records);
    assert!(parsed["counters"].as_u64().unwrap() >= report.samples.len() as u64);
}
