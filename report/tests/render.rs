//! The renderers on real reports: a version 1 report written by the guard before phases existed
//! (`fixtures/v1_candle_leaky.json`: examples/candle_leaky.rs at 0499979, 60 steps), a version
//! 2 report with phases and lines (`fixtures/v2_candle_leaky_lines.json`: the same example with
//! `#[mem_guard(lines)]`) and a version 3 report with the phases of two sources
//! (`fixtures/v3_candle_leaky_lines_sources.json`: the same example, 60 steps, with
//! `MEMLINT_READ_EVERY=1` so that the RSS is read at the marks too). Outputs are parsed back: SVG
//! as XML (roxmltree), the trace as JSON.

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
    // One source read at the marks: the chart's caption names no source (as before version 3).
    assert!(phase_labels.contains("phases: memory added (bars) and peak above the iteration's start (ticks)"));
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
    assert!(counters.iter().all(|c| c.starts_with("host-allocator")), "one source only");
    assert!(events.iter().filter(|e| e["cat"] == "phase").all(|e| e["args"].as_object().unwrap().len() == 3));
}

#[test]
fn version_3_reports_show_the_phases_of_every_source() {
    let report = fixture("v3_candle_leaky_lines_sources.json");
    assert_eq!(report.version, 3);
    let phases = report.phases.as_ref().unwrap();
    let [rss] = phases.secondary.as_slice() else { panic!("{:?}", phases.secondary) };
    assert_eq!((rss.source.as_str(), rss.read_every), ("host-rss", 1));

    // Summary: the primary table as in version 2, then the RSS one.
    let text = summary(&report);
    let primary = text.find("phases (host-allocator; first iteration vs median of 35 other recorded iterations):");
    let secondary = text.find(
        "phases (host-rss; first iteration vs median of 26 later recorded iterations; peak = highest reading at the marks):",
    );
    assert!(primary.is_some_and(|p| secondary.is_some_and(|s| p < s)), "{text}");
    assert_eq!(text.matches(" backward+step (line 52) |").count(), 2, "{text}");
    // The RSS grows in page-sized steps at backward+step in steady state (the leak).
    assert!(text.contains(" backward+step (line 52) |   11.5 MiB |  11.5 MiB |   +564 KiB |      13.1 MiB |     13.1 MiB |     +64.0 KiB"), "{text}");

    // Page: a timeline per source, the projection, phase bars per source naming it.
    let page = html::page(&report).unwrap();
    let charts = svgs(&page);
    assert_eq!(charts.len(), 5, "2 timelines, projection, 2 phase charts");
    let captions: Vec<String> = charts[3..].iter().map(|c| texts(c).join("|")).collect();
    assert!(captions[0].contains("phases of host-allocator: memory added (bars), peak above the start (ticks)"));
    assert!(captions[1].contains("phases of host-rss: memory added (bars), peak above the start (ticks)"));
    for label in ["forward", "loss", "backward+step", "end"] {
        assert!(captions[1].contains(label), "missing {label:?} in {}", captions[1]);
    }
    assert!(page.contains(
        "<figcaption>host-rss: first iteration vs median of 26 later recorded iterations; peak = highest reading at the marks</figcaption>"
    ));

    // Trace: a counter track of the RSS inside iterations, and the RSS's values in the phase
    // slices of the iterations it was read at the marks.
    let trace = perfetto::trace(&report);
    let events = trace["traceEvents"].as_array().unwrap();
    let inside = events.iter().filter(|e| e["ph"] == "C" && e["name"] == "host-rss inside iterations").count();
    assert_eq!(inside, rss.records.iter().map(|r| 1 + r.points.len()).sum::<usize>());
    let slices: Vec<&serde_json::Value> = events.iter().filter(|e| e["cat"] == "phase").collect();
    assert_eq!(slices.len(), phases.records.len() * 4);
    let with_rss: Vec<&&serde_json::Value> = slices.iter().filter(|e| e["args"].get("host-rss").is_some()).collect();
    assert_eq!(with_rss.len(), rss.records.len() * 4, "each phase of each iteration read at the marks");
    // Iteration 20's backward+step slice carries the RSS reading at its mark.
    let record = rss.records.iter().find(|r| r.iteration == 20).unwrap();
    let mark = phases.marks.iter().position(|m| m.phase.as_deref() == Some("backward+step")).unwrap() as u32;
    let points = &record.points;
    let at = points.iter().position(|p| p.mark == mark).unwrap();
    let (t0, t1) = (phases.records.iter().find(|r| r.iteration == 20).unwrap().start_us, points.last().unwrap().t_us);
    let slice = with_rss
        .iter()
        .find(|e| e["name"] == "backward+step" && e["ts"].as_u64().is_some_and(|t| t >= t0 && t <= t1))
        .unwrap();
    assert_eq!(slice["args"]["host-rss"]["allocated"], points[at].allocated_bytes);
    // Its delta runs from the previous phase's mark (lines in between are merged).
    let merged_start = points[..at]
        .iter()
        .rev()
        .find(|p| phases.marks.get(p.mark as usize).is_some_and(|m| m.phase.is_some()))
        .map_or(record.start_allocated_bytes, |p| p.allocated_bytes);
    assert_eq!(slice["args"]["host-rss"]["delta"], points[at].allocated_bytes as i64 - merged_start as i64);
}
