//! Cargo's `compiler-message` JSON, one object per line, so that editors and
//! `cargo_metadata::Message::parse_stream` read memlint's findings like rustc's.

use serde_json::{Value, json};

use memlint_lint::SourceFile;
use memlint_lint::{Applicability, Finding, Label, Suggestion};

/// The cargo package and target a finding belongs to.
#[derive(Debug, Clone)]
pub struct Owner {
    /// The package id exactly as `cargo metadata` prints it.
    pub package_id: String,
    pub manifest_path: Option<String>,
    pub target_name: String,
    pub target_kind: Vec<String>,
    pub src_path: String,
    /// The target's edition, from its manifest (`cargo metadata`).
    pub edition: String,
}

/// Renders one finding; `rendered` is the human rendering to embed. File names are the paths
/// the findings carry (relative to the working directory).
pub fn render(f: &Finding, owner: &Owner, rendered: &str) -> String {
    render_named(f, owner, rendered, &f.file.path.display().to_string())
}

/// Renders one finding with `file_name` as the spans' file name. Cargo's messages name files
/// relative to the workspace root, and rust-analyzer resolves them against it.
pub fn render_named(f: &Finding, owner: &Owner, rendered: &str, file_name: &str) -> String {
    let mut spans = vec![span(&f.file, file_name, &f.primary, true, None)];
    spans.extend(f.secondary.iter().map(|l| span(&f.file, file_name, l, false, None)));
    let mut children = Vec::new();
    if let Some(note) = &f.note {
        children.push(child("note", note));
    }
    if let Some(help) = &f.help {
        children.push(child("help", help));
    }
    for (path, line, text) in &f.elsewhere {
        children.push(child("note", &format!("{}:{line}: {text}", path.display())));
    }
    children.push(child("note", &format!("for more information see {}", f.url())));
    // Each suggestion is a `help` child whose span carries the replacement, as rustc emits them:
    // rust-analyzer turns it into a quick fix and `rustfix` applies it.
    for s in &f.suggestions {
        let mut c = child("help", &s.message);
        c["spans"] = json!([span(&f.file, file_name, &Label::new(s.span.clone(), ""), true, Some(s))]);
        children.push(c);
    }
    let value = json!({
        "reason": "compiler-message",
        "package_id": owner.package_id,
        "manifest_path": owner.manifest_path,
        "target": {
            "name": owner.target_name,
            "kind": owner.target_kind,
            "crate_types": owner.target_kind,
            "src_path": owner.src_path,
            "edition": owner.edition,
            "doctest": false,
            "test": false,
            "doc": false,
        },
        "message": {
            "$message_type": "diagnostic",
            "message": f.message,
            "code": { "code": f.code(), "explanation": Value::Null },
            "level": f.level.as_str(),
            "spans": spans,
            "children": children,
            "rendered": rendered,
        },
    });
    value.to_string()
}

fn child(level: &str, message: &str) -> Value {
    json!({
        "$message_type": "diagnostic",
        "message": message,
        "code": Value::Null,
        "level": level,
        "spans": [],
        "children": [],
        "rendered": Value::Null,
    })
}

fn span(file: &SourceFile, file_name: &str, label: &Label, primary: bool, suggestion: Option<&Suggestion>) -> Value {
    let (line_start, column_start) = file.line_col(label.span.start);
    let (line_end, column_end) = file.line_col(label.span.end);
    // The text of every line the span touches, with 1-based character highlights.
    let text: Vec<Value> = (line_start..=line_end)
        .map(|line| {
            let range = file.line_range(line);
            let content = &file.text[range];
            let chars = content.chars().count();
            let start = if line == line_start { column_start } else { 1 };
            let end = if line == line_end { column_end } else { chars + 1 };
            json!({ "text": content, "highlight_start": start, "highlight_end": end })
        })
        .collect();
    json!({
        "file_name": file_name,
        "byte_start": label.span.start,
        "byte_end": label.span.end,
        "line_start": line_start,
        "line_end": line_end,
        "column_start": column_start,
        "column_end": column_end,
        "is_primary": primary,
        "text": text,
        "label": if label.text.is_empty() { Value::Null } else { Value::from(label.text.clone()) },
        "suggested_replacement": suggestion.map(|s| s.replacement.clone()),
        "suggestion_applicability": suggestion.map(|s| match s.applicability {
            Applicability::MachineApplicable => "MachineApplicable",
            Applicability::MaybeIncorrect => "MaybeIncorrect",
        }),
        "expansion": Value::Null,
    })
}
