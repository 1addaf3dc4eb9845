//! Fixes: memlint's JSON suggestions round-trip through `rustfix` (the finding disappears and
//! the crate still compiles), and `--fix` applies them, refusing a dirty work tree.

#[path = "editor_fixtures/support.rs"]
mod support;

use std::collections::HashSet;

use support::{Scratch, code, memlint, stderr, stdout, trainer};

fn cargo_check(dir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["check", "--quiet", "--offline"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .expect("cargo runs")
}

#[test]
fn suggestions_round_trip_through_rustfix() {
    let s = Scratch::of(&trainer(), "fix-roundtrip");
    let out = memlint(&["--message-format", "json"], s.path());
    let mut suggestions = Vec::new();
    for line in stdout(&out).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let found = rustfix::get_suggestions_from_json(
            &v["message"].to_string(),
            &HashSet::new(),
            rustfix::Filter::MachineApplicableOnly,
        )
        .unwrap();
        suggestions.extend(found);
    }
    assert_eq!(suggestions.len(), 1);
    let source = s.read("src/train.rs");
    let fixed = rustfix::apply_suggestions(&source, &suggestions).unwrap();
    assert_eq!(fixed, source.replace("history.push(naïve_copy);", "history.push(naïve_copy.detach());"));
    s.write("src/train.rs", &fixed);
    let out = memlint(&["--message-format", "short"], s.path());
    assert_eq!(stdout(&out), "", "the finding disappears");
    let check = cargo_check(s.path());
    assert!(check.status.success(), "fixed code compiles: {}", stderr(&check));
}

#[test]
fn fix_refuses_a_dirty_tree_then_fixes_and_relints() {
    let s = Scratch::of(&trainer(), "fix-cli");
    let out = memlint(&["--fix"], s.path());
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("is not in a git work tree"), "{}", stderr(&out));

    s.commit_all();
    s.write("src/notes.rs", "// scratch\n");
    let out = memlint(&["--fix"], s.path());
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("uncommitted changes") && stderr(&out).contains("src/notes.rs"), "{}", stderr(&out));
    assert_eq!(s.read("src/train.rs"), std::fs::read_to_string(trainer().join("src/train.rs")).unwrap());

    std::fs::remove_file(s.path().join("src/notes.rs")).unwrap();
    let out = memlint(&["--fix", "-D", "warnings", "--message-format", "short"], s.path());
    assert_eq!(code(&out), 0, "nothing remains after the fix: {}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("applied 1 fix in 1 file; linted again"), "{}", stderr(&out));
    assert!(s.read("src/train.rs").contains("history.push(naïve_copy.detach());"));
    // Nothing left to fix: a second run changes nothing.
    let out = memlint(&["--fix", "--allow-dirty"], s.path());
    assert_eq!(code(&out), 0);
    assert!(stderr(&out).contains("applied 0 fixes in 0 files"), "{}", stderr(&out));
}
