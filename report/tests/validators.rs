//! The renderers' output in real consumers: the HTML page in headless chromium (DOM after load
//! and a screenshot), the trace in Chrome DevTools' trace engine (npm `@paulirish/trace_engine`,
//! run by node). Each test skips with a message when its tool is missing, unless
//! `MEMLINT_REQUIRE_VALIDATORS` is set (CI installs them).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A single-source report (version 2) and one with the phases of two sources (version 3).
const SINGLE: &str = "v2_candle_leaky_lines.json";
const SOURCES: &str = "v3_candle_leaky_lines_sources.json";

fn fixture(name: &str) -> memlint_report::ReportView {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
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
    if let Some(dom) = load_in_chromium(SINGLE, "html") {
        assert_eq!(dom.matches("<svg").count(), 3, "three charts in the DOM");
        assert!(dom.contains("<table id=\"lines\">") && dom.contains("accumulated_loss_tensor"));
    }
}

#[test]
fn chromium_loads_the_page_of_two_sources() {
    if let Some(dom) = load_in_chromium(SOURCES, "html-sources") {
        assert_eq!(dom.matches("<svg").count(), 5, "a timeline and phase bars per source, and the projection");
        assert_eq!(dom.matches("<figure class=\"phases\">").count(), 2);
        assert!(dom.contains("<figcaption>host-rss: first iteration vs median of 26 later recorded iterations"));
        assert!(dom.contains("phases of host-rss: memory added (bars), peak above the start (ticks)"));
    }
}

/// The DOM of the page of fixture `name` after headless chromium loaded it (a screenshot is
/// taken too), or `None` when chromium is missing.
fn load_in_chromium(name: &str, out: &str) -> Option<String> {
    let browser = chromium();
    if !available("chromium", browser.is_some()) {
        return None;
    }
    let dir = out_dir(out);
    let page = dir.join("report.html");
    std::fs::write(&page, memlint_report::html::page(&fixture(name)).unwrap()).unwrap();
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
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    let png = dir.join("report.png");
    run(&[&format!("--screenshot={}", png.display())]);
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 50_000, "screenshot of {} bytes", bytes.len());
    Some(dom)
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
    let report = fixture(SINGLE);
    let Some(parsed) = read_with_trace_engine(&report, "trace") else { return };
    let records = report.phases.as_ref().unwrap().records.len() as u64;
    let thread = |name: &str| thread(&parsed, name);
    assert_eq!(thread("iterations")["entries"], records);
    assert_eq!(thread("phases")["entries"], records * 4);
    assert_eq!(thread("phases")["names"]["backward+step"], records);
    assert_eq!(thread("lines")["entries"], records * 6);
    assert_eq!(thread("lines")["names"]["line 53: total = (total + &loss)?;"], records);
    assert!(parsed["counters"].as_u64().unwrap() >= report.samples.len() as u64);
}

#[test]
fn devtools_trace_engine_reads_the_trace_of_two_sources() {
    let report = fixture(SOURCES);
    let Some(parsed) = read_with_trace_engine(&report, "trace-sources") else { return };
    let phases = report.phases.as_ref().unwrap();
    let records = phases.records.len() as u64;
    assert_eq!(thread(&parsed, "iterations")["entries"], records);
    assert_eq!(thread(&parsed, "phases")["entries"], records * 4);
    assert_eq!(thread(&parsed, "lines")["entries"], records * 6);
    // Every counter event: both sources' samples and both sources' readings at the marks.
    let inside = |points: usize, records: usize| (points + records) as u64;
    let samples: usize = report.source_list().iter().map(|s| s.samples.len()).sum();
    let primary = inside(phases.records.iter().map(|r| r.points.len()).sum(), phases.records.len());
    let rss = &phases.secondary[0];
    let secondary = inside(rss.records.iter().map(|r| r.points.len()).sum(), rss.records.len());
    assert_eq!(parsed["counters"].as_u64().unwrap(), samples as u64 + primary + secondary);
}

/// The named thread of the trace engine's output.
fn thread(parsed: &serde_json::Value, name: &str) -> serde_json::Value {
    parsed["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{parsed}"))
        .clone()
}

/// What DevTools' trace engine built from the trace of `report` (`scripts/check_trace.mjs`),
/// or `None` when it or node is missing.
fn read_with_trace_engine(report: &memlint_report::ReportView, out: &str) -> Option<serde_json::Value> {
    let engine = trace_engine();
    if !available("@paulirish/trace_engine (npm) and node", engine.is_some()) {
        return None;
    }
    let dir = out_dir(out);
    let trace = dir.join("trace.json");
    std::fs::write(&trace, serde_json::to_string(&memlint_report::perfetto::trace(report)).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check_trace.mjs");
    let out = Command::new("node").arg(script).arg(engine.unwrap()).arg(&trace).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}
