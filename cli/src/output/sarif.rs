//! SARIF 2.1.0, the subset GitHub code scanning reads: the tool's rules with their docs, and one
//! result per finding with a location relative to `%SRCROOT%` (the workspace root) and a
//! fingerprint that does not change when lines move.

use serde_json::{Value, json};

use crate::output::{Entry, RunInfo};
use memlint_lint::rule::RuleMeta;
use memlint_lint::{Finding, Label, Level};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The whole log for one run, pretty-printed.
pub fn render(entries: &[Entry<'_>], run: &RunInfo) -> String {
    let metas = memlint_lint::rules::all_meta();
    let rules: Vec<Value> = metas.iter().map(|m| rule(m)).collect();
    let results: Vec<Value> = entries
        .iter()
        .map(|e| {
            let index = metas.iter().position(|m| m.id == e.finding.rule);
            result(e, index, run)
        })
        .collect();
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "memlint",
                    "informationUri": "https://github.com/memlint/memlint",
                    "version": env!("CARGO_PKG_VERSION"),
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "rules": rules,
                }
            },
            "originalUriBaseIds": {
                "%SRCROOT%": { "uri": dir_uri(&run.root) }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    });
    serde_json::to_string_pretty(&log).unwrap_or_default()
}

fn rule(m: &RuleMeta) -> Value {
    json!({
        "id": m.id,
        "name": camel_case(m.id),
        "shortDescription": { "text": capitalize(m.summary) },
        "fullDescription": { "text": what_it_does(m.docs) },
        "help": { "text": m.docs, "markdown": m.docs },
        "helpUri": memlint_lint::rules::docs_url(m.id),
        "defaultConfiguration": {
            "enabled": m.group.name().is_none(),
            "level": level(m.default_level),
        },
        "properties": { "tags": ["memory", "memlint"] },
    })
}

fn result(e: &Entry<'_>, rule_index: Option<usize>, run: &RunInfo) -> Value {
    let f = e.finding;
    let mut text = f.message.clone();
    if let Some(help) = &f.help {
        text.push_str(&format!("\nhelp: {help}"));
    }
    let mut primary = location(f, &f.primary, run);
    primary["id"] = json!(0);
    let related: Vec<Value> = f
        .secondary
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let mut loc = location(f, l, run);
            loc["id"] = json!(i + 1);
            loc
        })
        .collect();
    let mut value = json!({
        "ruleId": f.rule,
        "level": level(f.level),
        "message": { "text": text },
        "locations": [primary],
        "partialFingerprints": { "memlintFingerprint/v1": e.fingerprint },
    });
    if let Some(i) = rule_index {
        value["ruleIndex"] = json!(i);
    }
    if !related.is_empty() {
        value["relatedLocations"] = json!(related);
    }
    value
}

fn location(f: &Finding, label: &Label, run: &RunInfo) -> Value {
    let (start_line, start_column) = f.file.line_col(label.span.start);
    let (end_line, end_column) = f.file.line_col(label.span.end.max(label.span.start));
    let rel = run.root_relative(&f.file.path);
    let artifact = if rel.starts_with('/') {
        json!({ "uri": format!("file://{}", encode(&rel)) })
    } else {
        json!({ "uri": encode(&rel), "uriBaseId": "%SRCROOT%" })
    };
    let mut loc = json!({
        "physicalLocation": {
            "artifactLocation": artifact,
            "region": {
                "startLine": start_line,
                "startColumn": start_column,
                "endLine": end_line,
                "endColumn": end_column,
                "snippet": { "text": f.file.text.get(label.span.clone()).unwrap_or("") },
            }
        }
    });
    if !label.text.is_empty() {
        loc["message"] = json!({ "text": label.text });
    }
    loc
}

fn level(l: Level) -> &'static str {
    match l {
        Level::Deny => "error",
        Level::Warn => "warning",
        Level::Allow => "note",
    }
}

/// `file:///abs/dir/` for a folder (SARIF wants the trailing slash on base URIs).
fn dir_uri(dir: &std::path::Path) -> String {
    let s = dir.to_string_lossy().replace('\\', "/");
    let s = if s.starts_with('/') { s } else { format!("/{s}") };
    let s = if s.ends_with('/') { s } else { format!("{s}/") };
    format!("file://{}", encode(&s))
}

/// Percent-encodes everything but RFC 3986 unreserved characters and `/`.
fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The first paragraph under `### What it does`, on one line.
fn what_it_does(docs: &str) -> String {
    let body = docs.split("### What it does").nth(1).unwrap_or(docs);
    let para = body.trim_start().split("\n\n").next().unwrap_or("").split("\n###").next().unwrap_or("");
    para.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn camel_case(id: &str) -> String {
    id.split('_').map(capitalize).collect()
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_percent_encoded_and_bases_end_in_a_slash() {
        assert_eq!(encode("src/my file#1.rs"), "src/my%20file%231.rs");
        assert_eq!(encode("src/ü.rs"), "src/%C3%BC.rs");
        assert_eq!(dir_uri(std::path::Path::new("/w/my repo")), "file:///w/my%20repo/");
    }

    #[test]
    fn full_description_is_the_first_paragraph_of_what_it_does() {
        let docs = "### What it does\nFinds a\nthing.\n\nMore.\n\n### Why is this bad?\nx";
        assert_eq!(what_it_does(docs), "Finds a thing.");
        assert_eq!(camel_case("rc_cycle"), "RcCycle");
    }
}
