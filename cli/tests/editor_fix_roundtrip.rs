//! Every machine-applicable suggestion memlint makes on the UI fixtures round-trips: read back
//! from memlint's JSON by `rustfix` and applied alone, it removes its finding and leaves a file
//! that still parses.

use std::collections::HashSet;
use std::path::PathBuf;

use cargo_memlint::output::json::{self, Owner};
use memlint_lint::{Applicability, Finding, Linter};

fn fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("../lint/tests/ui")
        .expect("../lint/tests/ui exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.push(PathBuf::from("tests/editor_fixtures/trainer/src/train.rs"));
    files.sort();
    files
}

fn owner() -> Owner {
    Owner {
        package_id: "path+file:///fixtures#0.0.0".into(),
        manifest_path: None,
        target_name: "fixtures".into(),
        target_kind: vec!["lib".into()],
        src_path: "lib.rs".into(),
        edition: "2024".into(),
    }
}

fn lint(path: &std::path::Path, text: &str) -> Vec<Finding> {
    // The trainer fixture is candle code by its config; the UI fixtures name their framework.
    Linter::default().lint_text(path, text, memlint_lint::Framework::from_name("candle"))
}

#[test]
fn machine_applicable_suggestions_remove_their_finding() {
    let mut applied = 0;
    let mut failures = Vec::new();
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).unwrap();
        for f in lint(&path, &text) {
            if !f.suggestions.iter().any(|s| s.applicability == Applicability::MachineApplicable) {
                continue;
            }
            let line: serde_json::Value = serde_json::from_str(&json::render(&f, &owner(), "")).unwrap();
            let suggestions = rustfix::get_suggestions_from_json(
                &line["message"].to_string(),
                &HashSet::new(),
                rustfix::Filter::MachineApplicableOnly,
            )
            .unwrap();
            assert_eq!(suggestions.len(), 1, "{}:{}", path.display(), f.line);
            let fixed = rustfix::apply_suggestions(&text, &suggestions).unwrap();
            assert_ne!(fixed, text);
            applied += 1;
            let after = lint(&path, &fixed);
            let where_ = format!("{}:{} `{}`", path.display(), f.line, f.rule);
            if after.iter().any(|g| g.rule == "parse_error") {
                failures.push(format!("{where_}: the fixed file does not parse"));
            }
            if after.iter().any(|g| g.rule == f.rule && g.line == f.line && g.message == f.message) {
                failures.push(format!("{where_}: the finding is still reported after the fix"));
            }
            if after.len() >= lint(&path, &text).len() {
                failures.push(format!("{where_}: the fix removed no finding"));
            }
        }
    }
    eprintln!("applied {applied} machine-applicable suggestions one by one");
    assert!(applied >= 3, "only {applied} machine-applicable suggestions in the fixtures");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
