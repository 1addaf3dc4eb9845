//! Suppression comments: on the line, on the line above, for the whole file; and suppressions
//! that suppress nothing, reported as `memlint::unused_suppression` with a fix that removes them.

#[path = "editor_fixtures/support.rs"]
mod support;

use support::{Scratch, code, memlint, stderr, stdout, trainer};

const PUSH: &str = "        history.push(naïve_copy);\n";

fn short(s: &Scratch, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["--message-format", "short"];
    args.extend(extra);
    let out = memlint(&args, s.path());
    assert!(code(&out) < 2, "{}", stderr(&out));
    stdout(&out).lines().map(str::to_string).collect()
}

fn edit(s: &Scratch, from: &str, to: &str) {
    let text = s.read("src/train.rs");
    assert!(text.contains(from), "fixture changed: {from:?}");
    s.write("src/train.rs", &text.replacen(from, to, 1));
}

#[test]
fn suppressions_on_the_line_above_and_for_the_file() {
    let s = Scratch::of(&trainer(), "suppress-scopes");
    assert_eq!(short(&s, &[]).len(), 1);

    edit(&s, PUSH, "        history.push(naïve_copy); // memlint: allow(retained_graph_output)\n");
    assert_eq!(short(&s, &[]), Vec::<String>::new());

    let s = Scratch::of(&trainer(), "suppress-above");
    edit(
        &s,
        PUSH,
        "        // memlint: allow(memlint::retained_graph_output)\n\n        // why: kept for the plot\n"
            .to_string()
            .as_str(),
    );
    // The comment must be followed by the code: put the push back below it.
    let text = s.read("src/train.rs").replacen(
        "        // why: kept for the plot\n",
        &format!("        // why: kept for the plot\n{PUSH}"),
        1,
    );
    s.write("src/train.rs", &text);
    assert_eq!(short(&s, &[]), Vec::<String>::new(), "{text}");

    let s = Scratch::of(&trainer(), "suppress-file");
    let text = s.read("src/train.rs");
    s.write("src/train.rs", &format!("// memlint: allow-file(retained_graph_output, rc_cycle)\n{text}"));
    let left = short(&s, &[]);
    // rc_cycle has nothing to suppress in this file: reported, and only that name.
    assert_eq!(
        left,
        vec![
            "src/train.rs:1:47: warning[memlint::unused_suppression]: unused suppression: no `rc_cycle` finding in this file"
        ]
    );
}

#[test]
fn a_suppression_elsewhere_does_not_hide_the_finding_and_is_reported_unused() {
    let s = Scratch::of(&trainer(), "suppress-unused");
    edit(&s, "    let mut history", "    // memlint: allow(retained_graph_output)\n    let mut history");
    edit(&s, "    Ok(history)", "    Ok(history) // memlint: allow(accumulated_loss_tensor, no_such_rule)");
    let text = s.read("src/train.rs");
    std::fs::write(
        s.path().join("src/extra.rs"),
        "// memlint: allow-file(rc_cycle)\nfn f() {}\n// memlint: allow-file(rc_cycle)\n// memlint: alow(rc_cycle)\n",
    )
    .unwrap();
    let lib = s.read("src/lib.rs") + "mod extra;\n";
    s.write("src/lib.rs", &lib);
    assert_eq!(
        short(&s, &[]),
        vec![
            "src/extra.rs:1:24: warning[memlint::unused_suppression]: unused suppression: no `rc_cycle` finding in this file",
            "src/extra.rs:3:1: warning[memlint::unused_suppression]: `allow-file` suppression is not at the top of the file",
            "src/extra.rs:4:1: warning[memlint::unused_suppression]: suppression comment is not understood",
            "src/train.rs:5:23: warning[memlint::unused_suppression]: unused suppression: no `retained_graph_output` finding on line 6",
            "src/train.rs:11:9: warning[memlint::retained_graph_output]: graph-carrying tensor stored in `history`, which outlives the iteration",
            "src/train.rs:13:35: warning[memlint::unused_suppression]: unused suppression: no `accumulated_loss_tensor` finding on line 13",
            "src/train.rs:13:60: warning[memlint::unused_suppression]: suppression names an unknown rule `no_such_rule`",
        ],
        "{text}"
    );
    // An allowed rule reports nothing, so its suppression is not called unused.
    let allowed = short(&s, &["-A", "retained_graph_output", "-A", "rc_cycle"]);
    assert!(
        allowed.iter().all(|l| !l.contains("`retained_graph_output` finding") && !l.contains("no `rc_cycle`")),
        "{allowed:?}"
    );
    // And the check itself can be allowed.
    assert!(short(&s, &["-A", "unused_suppression"]).iter().all(|l| !l.contains("unused_suppression")));
}

#[test]
fn fix_removes_unused_suppressions() {
    let s = Scratch::of(&trainer(), "suppress-fix");
    edit(&s, "    let mut history", "    // memlint: allow(rc_cycle)\n    let mut history");
    edit(&s, "    Ok(history)", "    Ok(history) // memlint: allow(accumulated_loss_tensor)");
    let before = s.read("src/train.rs");
    let out = memlint(&["--fix", "--allow-dirty", "-A", "retained_graph_output"], s.path());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("applied 2 fixes in 1 file"), "{}", stderr(&out));
    let after = s.read("src/train.rs");
    assert_eq!(
        after,
        before
            .replace("    // memlint: allow(rc_cycle)\n", "")
            .replace(" // memlint: allow(accumulated_loss_tensor)", "")
    );
    assert_eq!(after, std::fs::read_to_string(trainer().join("src/train.rs")).unwrap());
}
