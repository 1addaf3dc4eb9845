//! Baselines: `--write-baseline` records today's findings, `--baseline` reports only new ones,
//! matching by fingerprint (rule, file, the code of the line, the enclosing function), so
//! findings keep matching when unrelated lines are added above them or the code is re-indented.

#[path = "editor_fixtures/support.rs"]
mod support;

use support::{Scratch, code, memlint, stderr, stdout, trainer};

#[test]
fn baseline_hides_known_findings_across_unrelated_edits_and_shows_new_ones() {
    let s = Scratch::of(&trainer(), "baseline");
    let out = memlint(&["--write-baseline", "memlint-baseline.json", "-D", "warnings"], s.path());
    assert_eq!(code(&out), 1, "findings are still reported while writing: {}", stderr(&out));
    let written: serde_json::Value = serde_json::from_str(&s.read("memlint-baseline.json")).unwrap();
    assert_eq!(written["version"], 1);
    assert_eq!(written["findings"][0]["rule"], "retained_graph_output");
    assert_eq!(written["findings"][0]["file"], "src/train.rs");

    let check =
        || memlint(&["--baseline", "memlint-baseline.json", "-D", "warnings", "--message-format", "short"], s.path());
    let out = check();
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("(1 known from the baseline not shown)"), "{}", stderr(&out));

    // Unrelated edits: lines inserted above, the loop re-indented.
    let text = s.read("src/train.rs");
    let moved = text
        .replacen("use crate::", "// A new comment.\n\n/// A new helper.\npub fn helper() {}\n\nuse crate::", 1)
        .replace("        history.push(naïve_copy);", "            history.push( naïve_copy );");
    s.write("src/train.rs", &moved);
    let out = check();
    assert_eq!(code(&out), 0, "moved finding still matches: {}", stdout(&out));

    // A new leak in the same function is reported, the known one is not.
    let grown = moved.replace("    Ok(history)", "    let mut kept = Vec::new();\n    for x in data {\n        let l = model.forward(x)?;\n        opt.backward_step(&l)?;\n        kept.push(l);\n    }\n    drop(kept);\n    Ok(history)");
    s.write("src/train.rs", &grown);
    let out = check();
    assert_eq!(code(&out), 1);
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("stored in `kept`"), "{lines:?}");
}

#[test]
fn bad_baselines_are_clear_errors() {
    let s = Scratch::of(&trainer(), "baseline-bad");
    let out = memlint(&["--baseline", "missing.json"], s.path());
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("cannot read baseline `missing.json`"), "{}", stderr(&out));
    s.write("b.json", "{\"findings\": 3}");
    let out = memlint(&["--baseline", "b.json"], s.path());
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("is not a memlint baseline"), "{}", stderr(&out));
    s.write("b.json", "{\"version\": 99, \"findings\": []}");
    let out = memlint(&["--baseline", "b.json"], s.path());
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("fingerprint version 99"), "{}", stderr(&out));
}
