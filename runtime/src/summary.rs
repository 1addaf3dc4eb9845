//! The terminal summary of a report, in the manner of PyTorch's `memory_summary()`: per source
//! current and peak allocated and reserved; the phase table (first iteration vs steady state) of
//! the primary source and of each secondary source read at the marks; the lines that grow and
//! that hold the peak; the verdict and the projection.
//!
//! Printed on stderr at the end of a guarded run with `MEMLINT_SUMMARY=1`, and by
//! `cargo memlint report`.

use std::fmt::Write;

use crate::phases::{LineRow, PhaseRow, PhaseValue, SourcePhases, steady_net_growth};
use crate::report::{human_bytes, human_seconds};
use crate::view::{ReportView, SourceView};

/// Lines shown per list (growing lines, peak lines).
const TOP: usize = 5;
/// Left-aligned columns besides the first.
const TEXT_COLUMNS: &[&str] = &["static finding", "code"];
/// Characters of code shown per line.
const CODE_WIDTH: usize = 60;

/// Renders the summary of `report`.
pub fn render(report: &ReportView) -> String {
    let mut out = String::new();
    let at = match report.loop_line {
        Some(line) => format!("{}:{}, loop at line {line}", report.file, report.line),
        None => format!("{}:{}, sampled per call", report.file, report.line),
    };
    let _ = writeln!(out, "memlint memory summary: `{}` ({at})", report.function);
    let _ = writeln!(
        out,
        "{} iterations in {}, {}, report version {}",
        report.iterations,
        human_seconds(report.elapsed_seconds),
        report.outcome,
        report.version
    );
    if report.guard_seconds > 0.0 && report.elapsed_seconds > 0.0 && report.iterations > 0 {
        let _ = writeln!(
            out,
            "time inside the guard: {:.2} µs per iteration, {:.3} % of the loop",
            report.guard_seconds * 1e6 / report.iterations as f64,
            report.guard_seconds / report.elapsed_seconds * 100.0
        );
    }
    if report.pace.sample_every > 1 {
        let why =
            if report.pace.pinned { "pinned by MEMLINT_SAMPLE_EVERY" } else { "to stay within 0.1 % of the step" };
        let _ = writeln!(out, "memory read every {} iterations ({why})", report.pace.sample_every);
    }
    if report.pace.carried_seconds > 0.0 {
        let _ = writeln!(
            out,
            "earlier runs of this function spent {:.2} ms beyond the budget: this run went on at their pace (no warm-up or dense iterations)",
            report.pace.carried_seconds * 1e3
        );
        if report.reads == Some(0) && report.iterations > 0 {
            let _ = writeln!(
                out,
                "memory not read in this run: its next read was not yet due (no verdict from this run alone)"
            );
        }
    }
    sources(&mut out, &report.source_list());
    phases(&mut out, report);
    lines(&mut out, report);
    verdict(&mut out, report);
    out
}

/// Whether `MEMLINT_SUMMARY` asks for the summary at the end of each guarded run.
pub fn wanted() -> bool {
    matches!(
        std::env::var("MEMLINT_SUMMARY").map(|v| v.trim().to_ascii_lowercase()).as_deref(),
        Ok("1" | "on" | "true" | "yes")
    )
}

/// A table with a header row, columns right-aligned except the first.
fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let rule: String = widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("+");
    let line = |cells: &[String]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                let pad = w - c.chars().count();
                if i == 0 || TEXT_COLUMNS.contains(&header[i]) {
                    format!(" {c}{} ", " ".repeat(pad))
                } else {
                    format!(" {}{c} ", " ".repeat(pad))
                }
            })
            .collect();
        padded.join("|").trim_end().to_owned()
    };
    let _ = writeln!(out, "{rule}");
    let _ = writeln!(out, "{}", line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>()));
    let _ = writeln!(out, "{rule}");
    for row in rows {
        let _ = writeln!(out, "{}", line(row));
    }
    let _ = writeln!(out, "{rule}");
}

/// `text` cut to `width` characters (with an ellipsis).
fn cut(text: &str, width: usize) -> String {
    match text.char_indices().nth(width) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn bytes(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_owned(), |b| human_bytes(b as f64))
}

fn signed(value: Option<i64>) -> String {
    match value {
        Some(d) if d > 0 => format!("+{}", human_bytes(d as f64)),
        Some(d) => human_bytes(d as f64),
        None => "-".to_owned(),
    }
}

fn sources(out: &mut String, sources: &[SourceView]) {
    let rows: Vec<Vec<String>> = sources
        .iter()
        .map(|s| {
            let last = s.samples.last();
            let peak = s.samples.iter().map(|x| x.peak_bytes.unwrap_or(x.allocated_bytes)).max();
            let reserved_peak = s.samples.iter().filter_map(|x| x.reserved_bytes).max();
            vec![
                format!("{} ({})", s.source, s.device),
                bytes(last.map(|x| x.allocated_bytes)),
                bytes(peak),
                bytes(last.and_then(|x| x.reserved_bytes)),
                bytes(reserved_peak),
            ]
        })
        .collect();
    table(out, &["source", "allocated now", "allocated peak", "reserved now", "reserved peak"], &rows);
}

fn phases(out: &mut String, report: &ReportView) {
    let Some(phases) = &report.phases else { return };
    if phases.table.is_empty() {
        return;
    }
    let recorded = phases.records.len();
    let earlier = if phases.from_earlier_run { ", recorded in an earlier run of this function" } else { "" };
    let _ = writeln!(
        out,
        "phases ({}; first iteration vs median of {} other recorded iterations{earlier}):",
        phases.source,
        recorded.saturating_sub(1)
    );
    phase_table(out, &phases.table);
    for source in phases.secondary.iter().filter(|s| !s.table.is_empty()) {
        let _ = writeln!(out, "phases ({}; {}):", source.source, coverage(source));
        phase_table(out, &source.table);
    }
    let without: Vec<&str> =
        phases.secondary.iter().filter(|s| s.table.is_empty()).map(|s| s.source.as_str()).collect();
    if !without.is_empty() {
        let _ = writeln!(out, "no phase readings from {}", without.join(", "));
    }
}

/// What a secondary source's phase table covers, in words (for the summary and the HTML page).
pub fn coverage(source: &SourcePhases) -> String {
    let steady = source.steady_records();
    let what = if steady > 0 {
        format!("first iteration vs median of {steady} later recorded iterations")
    } else {
        match source.read_every {
            0 => "first iteration only: the run ended before the read rates were chosen".to_owned(),
            1 => "first iteration only".to_owned(),
            n => format!("first iteration only: read once every {n} iterations, too costly for every mark"),
        }
    };
    format!("{what}; peak = highest reading at the marks")
}

/// The rows of a phase table: allocated, peak and delta in the first iteration and steady state.
fn phase_table(out: &mut String, table_rows: &[PhaseRow]) {
    let cells = |v: Option<PhaseValue>| -> [String; 3] {
        match v {
            Some(v) => {
                [human_bytes(v.allocated_bytes as f64), human_bytes(v.peak_bytes as f64), signed(Some(v.delta_bytes))]
            }
            None => ["-".into(), "-".into(), "-".into()],
        }
    };
    let rows: Vec<Vec<String>> = table_rows
        .iter()
        .map(|row| {
            let name = match row.line {
                Some(line) => format!("{} (line {line})", row.phase),
                None => format!("{} (drops)", row.phase),
            };
            let mut cells_row = vec![name];
            cells_row.extend(cells(row.first));
            cells_row.extend(cells(row.steady));
            cells_row
        })
        .collect();
    table(
        out,
        &["phase", "1st: alloc", "1st: peak", "1st: delta", "steady: alloc", "steady: peak", "steady: delta"],
        &rows,
    );
}

fn lines(out: &mut String, report: &ReportView) {
    if report.lines.is_empty() {
        return;
    }
    let row = |r: &LineRow| {
        vec![
            r.line.map_or_else(|| "end".to_owned(), |l| l.to_string()),
            signed(r.first_delta_bytes),
            signed(r.steady_delta_bytes),
            bytes(r.steady_peak_bytes),
            r.static_findings.iter().map(|f| f.split(':').next().unwrap_or(f)).collect::<Vec<_>>().join(", "),
            cut(&r.code, CODE_WIDTH),
        ]
    };
    let header = ["line", "1st: delta", "steady: delta", "steady: peak", "static finding", "code"];
    let mut growing: Vec<&LineRow> = report.lines.iter().filter(|r| r.grows).collect();
    growing.sort_by_key(|r| (r.static_findings.is_empty(), std::cmp::Reverse(r.steady_delta_bytes.unwrap_or(0))));
    if !growing.is_empty() {
        let net = report.phases.as_ref().and_then(steady_net_growth);
        let _ = writeln!(
            out,
            "lines that add memory while the iteration grows (net {} per iteration; static findings first):",
            signed(net)
        );
        let mut rows: Vec<Vec<String>> = growing.iter().take(TOP).map(|r| row(r)).collect();
        // What the end of the iteration releases tells how much of the added memory stays.
        rows.extend(report.lines.iter().filter(|r| r.line.is_none()).map(row));
        table(out, &header, &rows);
    }
    let mut peaks: Vec<&LineRow> = report.lines.iter().collect();
    peaks.sort_by_key(|r| (!r.holds_peak, std::cmp::Reverse(r.steady_peak_bytes.unwrap_or(0))));
    let _ = writeln!(out, "lines that hold the peak (highest steady peak first):");
    let rows: Vec<Vec<String>> = peaks.iter().take(3).map(|r| row(r)).collect();
    table(out, &header, &rows);
}

fn verdict(out: &mut String, report: &ReportView) {
    let v = &report.verdict;
    if v.leak {
        let when = match (v.detected_at_iteration, &v.detected_by) {
            (Some(i), Some(by)) => format!(", declared at iteration {i} ({by})"),
            (Some(i), None) => format!(", declared at iteration {i}"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "verdict: leak, {} per iteration{when}",
            signed(Some(v.growth_bytes_per_iteration.round() as i64))
        );
    } else if report.reads == Some(0) {
        let _ = writeln!(out, "verdict: none (memory was not read in this run)");
    } else {
        let _ = writeln!(
            out,
            "verdict: no leak ({} per iteration after warm-up {})",
            signed(Some(v.growth_bytes_per_iteration.round() as i64)),
            report.warmup
        );
    }
    if let (Some(n), Some(limit)) = (v.projected_iterations_to_exhaustion, &v.exhaustion_limit) {
        let time =
            v.projected_seconds_to_exhaustion.map(|s| format!(" (about {})", human_seconds(s))).unwrap_or_default();
        let _ = writeln!(out, "projection: {limit} memory runs out in {n} iterations{time}");
    }
    for finding in &report.static_findings {
        let _ = writeln!(out, "static finding: line {}: {} [{}]", finding.line, finding.message, finding.rule);
    }
    if !report.errors.is_empty() {
        let _ = writeln!(out, "sampling errors: {}", report.errors.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_report_renders_sources_and_verdict() {
        let text = r#"{"version": 1, "function": "train", "file": "src/t.rs", "line": 3, "loop_line": 5,
            "backend": "host-allocator", "device": "host", "outcome": "returned", "iterations": 2,
            "elapsed_seconds": 0.5, "warmup": 10,
            "samples": [{"iteration": 0, "allocated_bytes": 1024, "reserved_bytes": null, "peak_bytes": 4096},
                        {"iteration": 1, "allocated_bytes": 2048, "reserved_bytes": null, "peak_bytes": 3072}],
            "verdict": {"leak": true, "growth_bytes_per_iteration": 1024.0, "detected_at_iteration": 1,
                        "detected_by": "window", "projected_iterations_to_exhaustion": 10,
                        "projected_seconds_to_exhaustion": 5.0, "exhaustion_limit": "host"}}"#;
        let report = ReportView::parse("r", text).unwrap();
        let text = render(&report);
        for expected in [
            "memlint memory summary: `train` (src/t.rs:3, loop at line 5)",
            " host-allocator (host) |      2.00 KiB |       4.00 KiB |            - |             -",
            "verdict: leak, +1.00 KiB per iteration, declared at iteration 1 (window)",
            "projection: host memory runs out in 10 iterations (about 5 s)",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
        assert!(!text.contains("phases"));
    }

    /// A later run of a function that repaid its earlier runs' advance says so.
    #[test]
    fn a_run_that_repaid_earlier_runs_says_so() {
        let text = r#"{"version": 5, "function": "train", "file": "src/t.rs", "line": 3, "loop_line": 5,
            "backend": "cubecl", "device": "cubecl:cuda", "outcome": "returned", "iterations": 200,
            "elapsed_seconds": 0.3, "warmup": 10, "samples": [],
            "pace": {"sample_every": 1024, "pinned": false, "step_seconds": 0.0013, "carried_seconds": 0.0125},
            "verdict": {"leak": false, "growth_bytes_per_iteration": 0.0}}"#;
        let text = render(&ReportView::parse("r", text).unwrap());
        assert!(text.contains("memory read every 1024 iterations (to stay within 0.1 % of the step)"), "{text}");
        assert!(text.contains("earlier runs of this function spent 12.50 ms beyond the budget"), "{text}");
        assert!(!text.contains("memory not read"), "no `reads`: a report written before session 10\n{text}");
        let none = text_with_reads(0);
        assert!(none.contains("memory not read in this run: its next read was not yet due"), "{none}");
        assert!(none.contains("verdict: none (memory was not read in this run)"), "{none}");
        let one = text_with_reads(1);
        assert!(!one.contains("memory not read") && one.contains("verdict: no leak"), "{one}");
    }

    fn text_with_reads(reads: u64) -> String {
        let mut v: serde_json::Value = serde_json::from_str(
            r#"{"version": 5, "function": "train", "file": "src/t.rs", "line": 3, "loop_line": 5,
            "backend": "cubecl", "device": "cubecl:cuda", "outcome": "returned", "iterations": 200,
            "elapsed_seconds": 0.3, "warmup": 10, "samples": [],
            "pace": {"sample_every": 1024, "pinned": false, "step_seconds": 0.0013, "carried_seconds": 0.0125},
            "verdict": {"leak": false, "growth_bytes_per_iteration": 0.0}}"#,
        )
        .unwrap();
        v["reads"] = reads.into();
        render(&ReportView::parse("r", &v.to_string()).unwrap())
    }

    /// Secondary sources: a table per source read at the marks, its coverage in the header, and
    /// the sources without readings named.
    #[test]
    fn each_secondary_source_gets_its_phase_table() {
        let record = |iteration: u64, start: u64| {
            serde_json::json!({"iteration": iteration, "start_us": 0, "start_allocated_bytes": start, "points": [
                {"mark": 0, "t_us": 1, "allocated_bytes": start + 2048, "peak_bytes": null},
                {"mark": 4294967295u32, "t_us": 2, "allocated_bytes": start, "peak_bytes": null}]})
        };
        let text = serde_json::json!({"version": 3, "function": "train", "samples": [], "phases": {
            "source": "cuda", "marks": [{"line": 7, "phase": "forward", "code": "m.forward(&x)?;"}],
            "table": [{"phase": "forward", "line": 7, "first": {"allocated_bytes": 1, "peak_bytes": 1, "delta_bytes": 1}}],
            "records": [record(0, 1)],
            "secondary": [
                {"source": "host-allocator", "read_every": 1, "records": [record(0, 4096), record(12, 8192)]},
                {"source": "nvml-process", "read_every": 64, "records": [record(0, 1 << 20)]},
                {"source": "host-rss", "read_every": 2, "records": []}]}});
        let mut report = ReportView::parse("r", &text.to_string()).unwrap();
        // Tables are computed when the report is written; here from the records.
        let marks = report.phases.as_ref().unwrap().marks.clone();
        for s in &mut report.phases.as_mut().unwrap().secondary {
            s.table = crate::phases::phase_table(&marks, &s.records);
        }
        let text = render(&report);
        for expected in [
            "phases (cuda; first iteration vs median of 0 other recorded iterations):",
            "phases (host-allocator; first iteration vs median of 1 later recorded iterations; peak = highest reading at the marks):",
            " forward (line 7) |   6.00 KiB |  6.00 KiB |  +2.00 KiB |      10.0 KiB |     10.0 KiB |     +2.00 KiB",
            "phases (nvml-process; first iteration only: read once every 64 iterations, too costly for every mark; peak = highest reading at the marks):",
            " forward (line 7) |   1.00 MiB |  1.00 MiB |  +2.00 KiB |             - |            - |             -",
            "no phase readings from host-rss",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
    }
}
