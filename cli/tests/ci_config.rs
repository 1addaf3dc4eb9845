//! `[workspace.metadata.memlint]` / `[package.metadata.memlint]`: levels, excluded paths and the
//! framework, overridden by the command line; bad keys and values point into Cargo.toml.

#[path = "editor_fixtures/support.rs"]
mod support;

use support::{Scratch, code, memlint, stderr, stdout, trainer};

fn with_config(name: &str, table: &str) -> Scratch {
    let s = Scratch::of(&trainer(), name);
    let fixture = "[package.metadata.memlint]\nframework = \"candle\"\n\n\
        # Every rule on, the nursery too: the tests show what each rule finds.\n\
        [package.metadata.memlint.levels]\nnursery = \"warn\"\n";
    let manifest = s.read("Cargo.toml");
    assert!(manifest.contains(fixture), "the fixture's table changed: {manifest}");
    let manifest = manifest.replace(fixture, table);
    s.write("Cargo.toml", &manifest);
    s
}

#[test]
fn levels_from_config_and_cli_overrides() {
    let s = with_config(
        "config-levels",
        "[package.metadata.memlint]\nframework = \"candle\"\n\n[package.metadata.memlint.levels]\nwarnings = \"allow\"\nretained_graph_output = \"deny\"\n",
    );
    let out = memlint(&["--message-format", "short"], s.path());
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stdout(&out).contains("error[memlint::retained_graph_output]"));
    // The command line wins over the config.
    let out = memlint(&["-W", "retained_graph_output"], s.path());
    assert_eq!(code(&out), 0);
    let out = memlint(&["-A", "warnings"], s.path());
    assert_eq!(code(&out), 0);
    assert!(out.stdout.is_empty());
}

#[test]
fn nursery_rules_are_off_until_the_config_or_the_command_line_asks() {
    let s = with_config("config-nursery", "[package.metadata.memlint]\nframework = \"candle\"\n");
    // The trainer's only leak is found by a nursery rule: nothing by default, not even with
    // `-D warnings` (a rule that is off stays off, as in rustc).
    let out = memlint(&["--message-format", "short", "-D", "warnings"], s.path());
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(out.stdout.is_empty());
    let out = memlint(&["--message-format", "short", "-W", "nursery", "-D", "warnings"], s.path());
    assert_eq!(code(&out), 1);
    assert!(stdout(&out).contains("error[memlint::retained_graph_output]"), "{}", stdout(&out));
    let out = memlint(&["--message-format", "short", "-W", "memlint::retained_graph_output"], s.path());
    assert!(stdout(&out).contains("warning[memlint::retained_graph_output]"), "{}", stdout(&out));
    // The same from the config; the nursery counts among the warnings there too.
    let s = with_config(
        "config-nursery-on",
        "[package.metadata.memlint]\nframework = \"candle\"\n\n[package.metadata.memlint.levels]\nwarnings = \"deny\"\nnursery = \"warn\"\n",
    );
    let out = memlint(&["--message-format", "short"], s.path());
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(stdout(&out).contains("error[memlint::retained_graph_output]"), "{}", stdout(&out));
}

#[test]
fn workspace_table_package_table_and_cli_framework() {
    let findings = |s: &Scratch, extra: &[&str]| {
        // The trainer's leak is a nursery rule's (`retained_graph_output`).
        let mut args = vec!["--message-format", "short", "-W", "nursery"];
        args.extend(extra);
        stdout(&memlint(&args, s.path())).lines().count()
    };
    // The workspace says burn (whose optimizer API this code does not use): no finding.
    let s = with_config("config-framework", "");
    let manifest =
        s.read("Cargo.toml").replace("[workspace]\n", "[workspace.metadata.memlint]\nframework = \"burn\"\n");
    s.write("Cargo.toml", &manifest);
    assert_eq!(findings(&s, &[]), 0);
    // The package's table overrides the workspace's.
    let manifest = s
        .read("Cargo.toml")
        .replace("[workspace.", "[package.metadata.memlint]\nframework = \"candle\"\n\n[workspace.");
    s.write("Cargo.toml", &manifest);
    assert_eq!(findings(&s, &[]), 1);
    // The command line overrides both.
    assert_eq!(findings(&s, &["--framework", "burn"]), 0);
}

#[test]
fn excluded_paths_are_not_linted() {
    // gitignore syntax, relative to the manifest.
    let s = with_config(
        "config-exclude",
        "[package.metadata.memlint]\nframework = \"candle\"\nexclude = [\"/src/train.rs\"]\n",
    );
    let out = memlint(&[], s.path());
    assert_eq!(code(&out), 0);
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("1 file checked"), "{}", stderr(&out));
    // Paths given on the command line are excluded too.
    let out = memlint(&["src/"], s.path());
    assert!(out.stdout.is_empty() && stderr(&out).contains("1 file checked"), "{}", stderr(&out));
}

#[test]
fn bad_keys_and_values_point_into_the_manifest() {
    let cases = [
        ("levels = { rc_cycle = \"loud\" }", "`loud` is not a level", "not a level"),
        ("levels = { nope = \"deny\" }", "no rule named `nope`", "unknown rule"),
        ("framework = \"pytorch\"", "unknown framework `pytorch`", "not a framework memlint knows"),
        ("exclude = [\"src/{a\"]", "invalid exclude pattern `src/{a`", "invalid pattern"),
        ("colour = true", "unknown field `colour`", "here"),
        ("exclude = \"src\"", "invalid type", "here"),
    ];
    for (i, (line, message, label)) in cases.into_iter().enumerate() {
        let s = with_config(&format!("config-bad-{i}"), &format!("[package.metadata.memlint]\n{line}\n"));
        let out = memlint(&[], s.path());
        let err = stderr(&out);
        assert_eq!(code(&out), 2, "{line}: {err}");
        assert!(err.contains(message), "{line}: {err}");
        assert!(err.contains(label), "{line}: {err}");
        assert!(err.contains("memlint::config"), "{err}");
        // The snippet shows the offending line of Cargo.toml.
        assert!(err.contains("Cargo.toml:9:"), "{line}: {err}");
        assert!(err.contains(line), "{line}: {err}");
        assert!(!err.contains("panicked"));
    }
}
