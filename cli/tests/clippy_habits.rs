//! What clippy users type works the same way with memlint: lint levels after `--`, `-q`/`-v`,
//! target selection, `warnings` set twice, `CARGO_TERM_COLOR`/`--color`, the edition in the
//! JSON, and every rule in `--help`.

#[path = "editor_fixtures/support.rs"]
mod support;

use std::process::{Command, Output};

use cargo_metadata::{Edition, Message};
use support::{Scratch, code, memlint, stderr, stdout, trainer};

/// `(rule code, file, level)` of each JSON message.
fn findings(out: &Output) -> Vec<(String, String, String)> {
    Message::parse_stream(&out.stdout[..])
        .map(|m| match m.expect("valid JSON line") {
            Message::CompilerMessage(m) => {
                let primary = m.message.spans.iter().find(|s| s.is_primary).expect("primary span");
                let code = m.message.code.as_ref().expect("code").code.clone();
                (code, primary.file_name.clone(), format!("{:?}", m.message.level))
            }
            other => panic!("not a compiler message: {other:?}"),
        })
        .collect()
}

fn json(args: &[&str]) -> Output {
    let mut all = vec!["--message-format", "json"];
    all.extend_from_slice(args);
    memlint(&all, &trainer())
}

#[test]
fn lint_levels_after_double_dash_apply_like_clippy() {
    let plain = json(&[]);
    assert_eq!(code(&plain), 0, "{}", stderr(&plain));
    let warned = findings(&plain);
    assert!(!warned.is_empty() && warned.iter().all(|(_, _, level)| level == "Warning"));

    for flags in [&["--", "-D", "warnings"][..], &["--", "-Dwarnings"], &["--", "--deny=warnings"]] {
        let out = json(flags);
        assert_eq!(code(&out), 1, "{flags:?}: {}", stderr(&out));
        let denied = findings(&out);
        assert_eq!(denied.len(), warned.len());
        assert!(denied.iter().all(|(_, _, level)| level == "Error"), "{flags:?}: {denied:?}");
    }
    // After `--` comes after the flags before it: the later `-A` wins.
    let out = json(&["-D", "warnings", "--", "-A", "warnings"]);
    assert_eq!((code(&out), findings(&out).len()), (0, 0));
}

#[test]
fn other_flags_after_double_dash_are_usage_errors() {
    for flags in [&["--", "--cap-lints", "warn"][..], &["--", "-D"], &["--", "-D", "no_such_rule"]] {
        let out = memlint(flags, &trainer());
        assert_eq!(code(&out), 2, "{flags:?}");
        let err = stderr(&out);
        assert!(err.contains("after `--`") || err.contains("no rule named `no_such_rule`"), "{flags:?}: {err}");
    }
}

#[test]
fn warnings_allowed_then_warned_leaves_every_rule_at_warn() {
    let all = findings(&json(&[]));
    let out = json(&["-A", "warnings", "-W", "warnings"]);
    assert_eq!(code(&out), 0);
    assert_eq!(findings(&out), all);
    // A rule allowed by name stays allowed (the fixture crate has findings of three rules).
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture_crate");
    let args = ["--message-format", "json", "-A", "rc_cycle", "-A", "warnings", "-W", "warnings"];
    let rest: Vec<String> = findings(&memlint(&args, &fixture)).into_iter().map(|(c, _, _)| c).collect();
    assert_eq!(rest, vec!["memlint::accumulated_loss_tensor", "memlint::retained_graph_output"]);
}

#[test]
fn quiet_drops_the_summary_and_verbose_names_each_package() {
    let normal = memlint(&[], &trainer());
    assert!(stderr(&normal).contains("files checked"), "{}", stderr(&normal));
    let quiet = memlint(&["-q"], &trainer());
    assert_eq!(stderr(&quiet), "");
    assert_eq!(stdout(&quiet), stdout(&normal));
    let verbose = memlint(&["-v"], &trainer());
    let err = stderr(&verbose);
    assert!(err.contains("memlint: linting package `trainer`: 2 files, framework candle (set)"), "{err}");
    assert_eq!(code(&memlint(&["-q", "-v"], &trainer())), 2);
}

#[test]
fn target_flags_select_targets() {
    let scratch = Scratch::of(&trainer(), "targets");
    scratch.write(
        "Cargo.toml",
        &scratch
            .read("Cargo.toml")
            .replace("[workspace]", "[workspace]\n\n[[example]]\nname = \"demo\"\npath = \"examples/demo.rs\""),
    );
    std::fs::create_dir_all(scratch.path().join("examples")).unwrap();
    scratch.write("examples/demo.rs", &scratch.read("src/train.rs"));
    let files = |args: &[&str]| {
        let mut all = vec!["--message-format", "json"];
        all.extend_from_slice(args);
        let out = memlint(&all, scratch.path());
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let mut files: Vec<String> = findings(&out).into_iter().map(|(_, f, _)| f).collect();
        files.dedup();
        files
    };
    assert_eq!(files(&[]), vec!["examples/demo.rs", "src/train.rs"]);
    assert_eq!(files(&["--example", "demo"]), vec!["examples/demo.rs"]);
    assert_eq!(files(&["--examples"]), vec!["examples/demo.rs"]);
    assert_eq!(files(&["--lib"]), vec!["src/train.rs"]);
    assert_eq!(files(&["--lib", "--example", "demo"]), files(&[]));

    let out = memlint(&["--bin", "nope"], scratch.path());
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("no bin target named `nope`"), "{}", stderr(&out));
    let out = memlint(&["--example", "nope"], scratch.path());
    assert!(stderr(&out).contains("example targets: demo"), "{}", stderr(&out));
    assert_eq!(code(&memlint(&["--lib", "src/"], scratch.path())), 2);
}

#[test]
fn cargo_term_color_and_color_choose_colour() {
    let run = |env: Option<&str>, args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cargo-memlint"));
        cmd.arg("memlint").args(args).current_dir(trainer()).env_remove("NO_COLOR").env_remove("CARGO_TARGET_DIR");
        match env {
            Some(v) => cmd.env("CARGO_TERM_COLOR", v),
            None => cmd.env_remove("CARGO_TERM_COLOR"),
        };
        cmd.output().expect("cargo-memlint runs")
    };
    let ansi = |o: &Output| stdout(o).contains('\u{1b}');
    // Output is piped: no colour unless asked for.
    assert!(!ansi(&run(None, &[])));
    assert!(ansi(&run(Some("always"), &[])));
    assert!(!ansi(&run(Some("always"), &["--color", "never"])));
    assert!(ansi(&run(Some("never"), &["--color=always"])));
    let bad = run(Some("sometimes"), &[]);
    assert_eq!(code(&bad), 2);
    assert!(stderr(&bad).contains("CARGO_TERM_COLOR=sometimes"), "{}", stderr(&bad));
}

#[test]
fn json_edition_is_the_manifests() {
    let scratch = Scratch::of(&trainer(), "edition");
    scratch.write("Cargo.toml", &scratch.read("Cargo.toml").replace("edition = \"2021\"", "edition = \"2024\""));
    let editions = |o: &Output| -> Vec<Edition> {
        Message::parse_stream(&o.stdout[..])
            .map(|m| match m.expect("valid JSON line") {
                Message::CompilerMessage(m) => m.target.edition,
                other => panic!("not a compiler message: {other:?}"),
            })
            .collect()
    };
    let out = memlint(&["--message-format", "json"], scratch.path());
    let found = editions(&out);
    assert!(!found.is_empty() && found.iter().all(|e| *e == Edition::E2024), "{found:?}");
    let out = memlint(&["--message-format", "json"], &trainer());
    let found = editions(&out);
    assert!(!found.is_empty() && found.iter().all(|e| *e == Edition::E2021), "{found:?}");
    // A file outside any loaded workspace takes the edition of the manifest above it.
    let parent = scratch.path().parent().expect("temp dir").to_path_buf();
    let name = scratch.path().file_name().expect("name").to_string_lossy().into_owned();
    let file = format!("{name}/src/train.rs");
    // Outside the workspace the package's config (which turns the nursery on) is not read.
    let out = memlint(&["--message-format", "json", "-W", "nursery", &file], &parent);
    let found = editions(&out);
    assert!(!found.is_empty() && found.iter().all(|e| *e == Edition::E2024), "{found:?}");
}

#[test]
fn help_lists_every_rule_of_the_registry() {
    let out = memlint(&["--help"], &trainer());
    let help = stdout(&out);
    for m in memlint_lint::rules::all_meta() {
        assert!(help.contains(m.id), "--help does not name {}", m.id);
    }
    assert!(help.contains(&format!("Rules ({} of them", memlint_lint::rules::all().len())));
}
