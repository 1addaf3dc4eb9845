//! One self-contained HTML page per report: inline CSS and SVG, no script, nothing fetched.

use std::fmt::Write;

use memlint_runtime::phases::{IterationRecord, LineRow, SourcePhases};
use memlint_runtime::report::human_bytes;
use memlint_runtime::summary::coverage;
use memlint_runtime::view::ReportView;

use crate::{RenderError, chart};

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px}\
pre{background:#f6f6f6;padding:10px;overflow-x:auto;font-size:12px}\
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
td.code,th.code,td.text{text-align:left;font-family:monospace}tr.grows td{background:#fff3e0}\
tr.peak td{background:#e3f2fd}.finding{color:#b71c1c}figcaption{font-size:13px;color:#555}";

/// The page of `report`.
pub fn page(report: &ReportView) -> Result<String, RenderError> {
    let mut out = String::new();
    let title = format!("memlint: `{}` ({}:{})", report.function, report.file, report.line);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n",
        escape(&title)
    );
    let _ = writeln!(out, "<h1>{}</h1>", escape(&title));
    let _ = writeln!(out, "<p id=\"verdict\">{}</p>", escape(&verdict_line(report)));
    let _ = writeln!(out, "<h2>Timeline</h2>");
    for (i, source) in report.source_list().iter().enumerate() {
        let _ = writeln!(out, "<figure class=\"timeline\">{}</figure>", chart::timeline(report, source, i == 0)?);
    }
    if let Some(svg) = chart::projection(report)? {
        let _ = writeln!(out, "<h2>Projection</h2>\n<figure class=\"projection\">{svg}</figure>");
    }
    if let Some(phases) = report.phases.as_ref().filter(|p| !p.table.is_empty()) {
        let _ = writeln!(out, "<h2>Phases</h2>");
        // With several sources read at the marks, each chart names its source.
        let secondary: Vec<&SourcePhases> = phases.secondary.iter().filter(|s| !s.table.is_empty()).collect();
        let named = (!secondary.is_empty()).then_some(phases.source.as_str());
        let (first, steady) = (median_start(&phases.records, true), median_start(&phases.records, false));
        let _ = writeln!(
            out,
            "<figure class=\"phases\">{}</figure>",
            chart::phase_bars(&phases.table, first, steady, named)?
        );
        for source in secondary {
            let (first, steady) = (median_start(&source.records, true), median_start(&source.records, false));
            let _ = writeln!(
                out,
                "<figure class=\"phases\">{}<figcaption>{}: {}</figcaption></figure>",
                chart::phase_bars(&source.table, first, steady, Some(&source.source))?,
                escape(&source.source),
                escape(&coverage(source))
            );
        }
        let without: Vec<&str> =
            phases.secondary.iter().filter(|s| s.table.is_empty()).map(|s| s.source.as_str()).collect();
        if !without.is_empty() {
            let _ = writeln!(out, "<p>No phase readings from {}.</p>", escape(&without.join(", ")));
        }
    }
    if !report.lines.is_empty() {
        let _ = writeln!(out, "<h2>Lines</h2>\n{}", line_table(&report.lines));
    }
    let _ = writeln!(out, "<h2>Summary</h2>\n<pre>{}</pre>", escape(&crate::summary(report)));
    out.push_str("</body></html>\n");
    Ok(out)
}

/// Bytes in use at the start of the first recorded iteration (`first`), or the median over the
/// others.
fn median_start(records: &[IterationRecord], first: bool) -> u64 {
    let mut starts: Vec<u64> =
        records.iter().filter(|r| (r.iteration == 0) == first).map(|r| r.start_allocated_bytes).collect();
    starts.sort_unstable();
    starts.get(starts.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

fn verdict_line(report: &ReportView) -> String {
    let v = &report.verdict;
    let mut text = if v.leak {
        format!("Leak: memory grows by {} per iteration", human_bytes(v.growth_bytes_per_iteration))
    } else if report.reads == Some(0) {
        // A short call that went on at an earlier call's pace before its next read was due.
        "No verdict: memory was not read in this run".to_owned()
    } else {
        "No leak declared".to_owned()
    };
    if let Some(i) = v.detected_at_iteration {
        let _ = write!(text, " (declared at iteration {i})");
    }
    let _ = write!(
        text,
        "; {} iterations on {} ({}), warm-up {}.",
        report.iterations, report.device, report.backend, report.warmup
    );
    text
}

fn signed(value: Option<i64>) -> String {
    match value {
        Some(d) if d > 0 => format!("+{}", human_bytes(d as f64)),
        Some(d) => human_bytes(d as f64),
        None => "-".to_owned(),
    }
}

fn line_table(rows: &[LineRow]) -> String {
    let mut out = String::from(
        "<table id=\"lines\"><tr><th>line</th><th>phase</th><th>first: delta</th><th>steady: delta</th>\
         <th>steady: peak</th><th>grows</th><th>holds peak</th><th class=\"code\">code</th><th class=\"code\">static findings</th></tr>\n",
    );
    for r in rows {
        let class = if r.grows {
            " class=\"grows\""
        } else if r.holds_peak {
            " class=\"peak\""
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<tr{class}><td>{}</td><td class=\"text\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"code\">{}</td><td class=\"code finding\">{}</td></tr>",
            r.line.map_or_else(|| "end".to_owned(), |l| l.to_string()),
            escape(r.phase.as_deref().unwrap_or("")),
            signed(r.first_delta_bytes),
            signed(r.steady_delta_bytes),
            r.steady_peak_bytes.map_or_else(|| "-".to_owned(), |b| human_bytes(b as f64)),
            if r.grows { "yes" } else { "" },
            if r.holds_peak { "yes" } else { "" },
            escape(&r.code),
            escape(&r.static_findings.join("; ")),
        );
    }
    out.push_str("</table>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(reads: Option<u64>) -> ReportView {
        let mut v: serde_json::Value = serde_json::from_str(
            r#"{"version": 5, "function": "epoch", "file": "src/t.rs", "line": 3, "loop_line": 5,
            "backend": "cubecl", "device": "cubecl:cuda", "outcome": "returned", "iterations": 200,
            "elapsed_seconds": 0.3, "warmup": 10, "samples": [],
            "verdict": {"leak": false, "growth_bytes_per_iteration": 0.0}}"#,
        )
        .unwrap();
        if let Some(n) = reads {
            v["reads"] = n.into();
        }
        ReportView::parse("r", &v.to_string()).unwrap()
    }

    /// A short call that read nothing has no verdict of its own; a report without `reads`
    /// (before session 10) or with reads keeps the old line.
    #[test]
    fn a_run_that_read_nothing_declares_no_verdict() {
        assert!(verdict_line(&report(Some(0))).starts_with("No verdict: memory was not read in this run;"));
        assert!(verdict_line(&report(Some(3))).starts_with("No leak declared;"));
        assert!(verdict_line(&report(None)).starts_with("No leak declared;"));
    }
}
