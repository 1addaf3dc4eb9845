//! The renderers on real reports: a version 1 report written by the guard before phases existed
//! (`fixtures/v1_candle_leaky.json`: examples/candle_leaky.rs at 0499979, 60 steps) and a version
//! 2 report with phases and lines (`fixtures/v2_candle_leaky_lines.json`: the same example with
//! `#[mem_guard(lines)]`). Outputs are parsed back: SVG as XML (roxmltree), the trace as JSON.

use std::path::Path;

use memlint_report::{ReportView, html, load, perfetto, summary};

fn fixture(name: &str) -> ReportView {
    load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)).unwrap()
}

/// The inline `<svg>` documents of a page, each parsed as XML.
fn svgs(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("closed svg") + start + "</svg>".len();
        out.push(rest[start..end].to_owned());
        rest = &rest[end..];
    }
    out
}

fn texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("svg does not parse: {e}"));
    doc.descendants().filter(|n| n.has_tag_name("text")).filter_map(|n| n.text().map(str::to_owned)).collect()
}

fn polylines(svg: &str) -> usize {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants().filter(|n| n.has_tag_name("polyline") || n.has_tag_name("path")).count()
}

#[test]
fn version_1_reports_still_render() {
    let report = fixture("v1_candle_leaky.json");
    assert_eq!(report.version, 1);
    let text = summary(&report);
    assert!(text.contains("memlint memory summary: `train` (examples/candle_leaky.rs:45, loop at line 48)"), "{text}");
    assert!(text.contains("verdict: leak, +75.2 KiB per iteration, declared at iteration 36 (window)"), "{text}");
    assert!(!text.contains("phases ("), "no phase table without phases");
    let page = html::page(&report).unwrap();
    let charts = svgs(&page);
    assert_eq!(charts.len(), 2, "timeline and projection");
    let labels = texts(&charts[0]).join("|");
    for label in [
        "host-allocator (host): memory per iteration",
        "allocated",
        "peak in iteration",
        "warm-up (10 iterations)",
        "trend: +76980 B/iteration",
    ] {
        assert!(labels.contains(label), "missing {label:?} in {labels}");
    }
    assert!(texts(&charts[1]).join("|").contains("projection: host memory runs out after about"));
    let trace = perfetto::trace(&report);
    let events = trace["traceEvents"].as_array().unwrap();
    let counters: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "C").collect();
    assert_eq!(counters.len(), 60, "one counter event per sample");
    // Without recorded iterations the samples sit at the mean iteration time, in order.
    let ts: Vec<u64> = counters.iter().map(|e| e["ts"].as_u64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] < w[1]), "{ts:?}");
}

#[test]
fn version_2_reports_show_phases_lines_and_slices() {
    let report = fixture("v2_candle_leaky_lines.json");
    assert_eq!(report.version, 2);
    let text = summary(&report);
    for expected in [
        "forward (line 50)",
        "backward+step (line 52)",
        "lines that add memory while the iteration grows (net +75.2 KiB per iteration",
        " 53   |     +212 B |        +212 B |",
        "accumulated_loss_tensor | total = (total + &loss)?;",
        "lines that hold the peak",
        " 52   |",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    let page = html::page(&report).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    // Self-contained: nothing to fetch (the SVG namespace is an identifier, not a fetch).
    let outside = page.replace("http://www.w3.org/2000/svg", "");
    assert!(!outside.contains("http://") && !outside.contains("https://") && !outside.contains("<script"));
    let charts = svgs(&page);
    assert_eq!(charts.len(), 3, "timeline, projection, phases");
    let phase_labels = texts(&charts[2]).join("|");
    for label in ["forward", "loss", "backward+step", "end", "first iteration", "steady (median)"] {
        assert!(phase_labels.contains(label), "missing {label:?} in {phase_labels}");
    }
    assert!(polylines(&charts[0]) >= 3);
    assert!(page.contains("<td class=\"code\">total = (total + &amp;loss)?;</td>"));
    assert!(page.contains("accumulated_loss_tensor: `total` accumulates"));

    let trace = perfetto::trace(&report);
    let events = trace["traceEvents"].as_array().unwrap();
    let named = |cat: &str| events.iter().filter(|e| e["cat"] == cat).count();
    let records = report.phases.as_ref().unwrap().records.len();
    assert_eq!(named("iteration"), records);
    assert_eq!(named("phase"), records * 4, "forward, loss, backward+step, end per recorded iteration");
    assert_eq!(named("line"), records * 6, "5 statements and the end per recorded iteration");
    for e in events.iter().filter(|e| e["ph"] == "X") {
        assert!(e["dur"].is_u64() && e["ts"].is_u64() && e["tid"].is_u64(), "{e}");
    }
    // Slices of one iteration nest inside its iteration slice.
    let first = events.iter().find(|e| e["name"] == "iteration 1").unwrap();
    let (start, end) = (first["ts"].as_u64().unwrap(), first["ts"].as_u64().unwrap() + first["dur"].as_u64().unwrap());
    let phases_of_1: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["cat"] == "phase" && e["ts"].as_u64().is_some_and(|t| t >= start && t < end))
        .collect();
    assert_eq!(phases_of_1.len(), 4);
    let counters: Vec<&str> = events.iter().filter(|e| e["ph"] == "C").filter_map(|e| e["name"].as_str()).collect();
    assert!(counters.contains(&"host-allocator (host)") && counters.contains(&"host-allocator inside iterations"));
}
