//! UI tests: every fixture under `tests/ui/` marks the lines where findings are expected with
//! `//~ rule_id` (this line) or `//~^ rule_id` (the line above). The test checks both ways —
//! every marker has a finding and every finding has a marker — and snapshots the rendered
//! output (no colour, width 80) so that messages and labels are reviewed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use memlint_lint::output::human::{Style, render};
use memlint_lint::{Finding, Linter};

fn fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("tests/ui")
        .expect("tests/ui exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    files
}

/// (line, rule) pairs from `//~` markers.
fn expected(text: &str) -> BTreeSet<(usize, String)> {
    let mut out = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        let Some(pos) = line.find("//~") else { continue };
        let marker = &line[pos + 3..];
        let (target, rest) = match marker.strip_prefix('^') {
            Some(rest) => (i, rest),
            None => (i + 1, marker),
        };
        for rule in rest.split(',').map(str::trim).filter(|r| !r.is_empty()) {
            out.insert((target, rule.to_string()));
        }
    }
    out
}

fn lint(path: &Path) -> (String, Vec<Finding>) {
    let text = std::fs::read_to_string(path).expect("fixture readable");
    // Every rule on, the nursery too: the fixtures show what each rule finds.
    let mut levels = memlint_lint::Levels::default();
    levels.set("nursery", memlint_lint::Level::Warn);
    let findings = Linter::new(levels).lint_text(path, &text, None);
    (text, findings)
}

#[test]
fn markers_match_findings_both_ways() {
    let mut failures = Vec::new();
    let files = fixtures();
    assert!(files.len() >= 8, "fixtures missing: {files:?}");
    for path in files {
        let (text, findings) = lint(&path);
        let want = expected(&text);
        let got: BTreeSet<(usize, String)> = findings.iter().map(|f| (f.line, f.rule.to_string())).collect();
        for (line, rule) in want.difference(&got) {
            failures.push(format!("{}:{line}: expected `{rule}`, not reported", path.display()));
        }
        for (line, rule) in got.difference(&want) {
            failures.push(format!("{}:{line}: unexpected `{rule}`", path.display()));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn rendered_output_snapshots() {
    for path in fixtures() {
        let (_, findings) = lint(&path);
        let rendered: Vec<String> = findings.iter().map(|f| render(f, Style::plain())).collect();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        insta::with_settings!({ snapshot_path => "ui/snapshots", prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!(name, rendered.join("\n"));
        });
    }
}

#[test]
fn suggestions_cut_the_graph_in_the_framework_spelling() {
    let mut got = Vec::new();
    for path in fixtures() {
        let (text, findings) = lint(&path);
        for f in &findings {
            for s in &f.suggestions {
                got.push(format!(
                    "{}:{}: `{}` -> `{}` ({:?})",
                    path.file_name().unwrap().to_string_lossy(),
                    f.line,
                    &text[s.span.clone()],
                    s.replacement,
                    s.applicability
                ));
            }
        }
    }
    insta::with_settings!({ snapshot_path => "ui/snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!("suggestions", got.join("\n"));
    });
}
