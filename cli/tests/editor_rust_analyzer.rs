//! rust-analyzer runs memlint as its check command: every flag it passes is accepted, and every
//! line of output is a cargo `compiler-message` that `cargo_metadata` (the parser rust-analyzer
//! uses) reads, with the real package id, exact `span.text`, the docs URL and quick fixes.

#[path = "editor_fixtures/support.rs"]
mod support;

use cargo_metadata::{Message, diagnostic::Applicability};
use support::{code, memlint, stderr, stdout, trainer};

fn package_id() -> String {
    let meta = cargo_metadata::MetadataCommand::new()
        .manifest_path(trainer().join("Cargo.toml"))
        .no_deps()
        .other_options(vec!["--offline".to_string()])
        .exec()
        .expect("cargo metadata");
    meta.packages[0].id.repr.clone()
}

/// What rust-analyzer runs for `check.command = "memlint"` with features, target and target
/// dir configured, for one package (`-p` with the package id) and for the workspace.
fn rust_analyzer_args(manifest: &str, package: Option<&str>, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> =
        ["--workspace", "--message-format=json-diagnostic-rendered-ansi", "--keep-going", "--all-targets"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    if let Some(p) = package {
        v.retain(|a| a != "--workspace");
        v.extend(["-p".to_string(), p.to_string()]);
    }
    v.extend(["--manifest-path".to_string(), manifest.to_string()]);
    v.extend(
        [
            "--features",
            "a,b",
            "-F",
            "c",
            "--all-features",
            "--no-default-features",
            "--target",
            "x86_64-unknown-linux-gnu",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    v.extend(
        ["--target-dir", "/tmp/memlint-ra-target", "-Z", "unstable-options", "-Zcheck-cfg"]
            .iter()
            .map(|s| s.to_string()),
    );
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

#[test]
fn every_flag_rust_analyzer_passes_is_accepted_and_every_line_is_a_compiler_message() {
    let manifest = trainer().join("Cargo.toml").display().to_string();
    let id = package_id();
    let source = std::fs::read_to_string(trainer().join("src/train.rs")).unwrap();
    let source_lines: Vec<&str> = source.lines().collect();
    for package in [None, Some(id.as_str())] {
        let args = rust_analyzer_args(&manifest, package, &[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // From another directory: rust-analyzer runs in the workspace root, but need not.
        let out = memlint(&args, &std::env::temp_dir());
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(out.stderr.is_empty(), "json output prints nothing on stderr: {}", stderr(&out));
        let mut count = 0;
        for message in Message::parse_stream(&out.stdout[..]) {
            let Message::CompilerMessage(m) = message.expect("valid JSON line") else {
                panic!("not a compiler message");
            };
            count += 1;
            assert_eq!(m.package_id.repr, id);
            let d = &m.message;
            assert_eq!(d.code.as_ref().unwrap().code, "memlint::retained_graph_output");
            // ANSI colour only in this format.
            assert!(d.rendered.as_deref().unwrap().contains("\u{1b}["), "rendered has colour");
            assert!(d.children.iter().any(|c| c.message.contains("docs/rules.md#retained_graph_output")));
            // Every span's `text` is the file's line, highlights counted in characters.
            let all_spans = d.spans.iter().chain(d.children.iter().flat_map(|c| c.spans.iter()));
            for span in all_spans {
                assert_eq!(span.file_name, "src/train.rs");
                for (i, line) in span.text.iter().enumerate() {
                    assert_eq!(line.text, source_lines[span.line_start - 1 + i]);
                }
                let first = &span.text[0];
                let chars: Vec<char> = first.text.chars().collect();
                let highlighted: String = chars[first.highlight_start - 1..first.highlight_end - 1].iter().collect();
                let bytes = &source.as_bytes()[span.byte_start as usize..span.byte_end as usize];
                if span.line_start == span.line_end {
                    assert_eq!(highlighted.as_bytes(), bytes, "highlight and byte range agree");
                }
            }
            let primary = d.spans.iter().find(|s| s.is_primary).unwrap();
            assert_eq!((primary.line_start, primary.column_start, primary.column_end), (10, 9, 33));
            assert!(primary.text[0].text.contains('ï'), "the line holds non-ASCII text");
            // The quick fix: a `help` child whose span carries the replacement.
            let fix =
                d.children.iter().flat_map(|c| c.spans.iter()).find(|s| s.suggested_replacement.is_some()).unwrap();
            assert_eq!(fix.suggested_replacement.as_deref(), Some("naïve_copy.detach()"));
            assert_eq!(fix.suggestion_applicability, Some(Applicability::MachineApplicable));
            assert_eq!((fix.column_start, fix.column_end), (22, 32));
        }
        assert_eq!(count, 1);
    }
}

#[test]
fn rust_analyzer_invocation_exits_one_on_deny_with_parseable_output() {
    let manifest = trainer().join("Cargo.toml").display().to_string();
    let args = rust_analyzer_args(&manifest, None, &["-D", "warnings"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = memlint(&args, &trainer());
    assert_eq!(code(&out), 1);
    let levels: Vec<String> = Message::parse_stream(&out.stdout[..])
        .map(|m| match m.unwrap() {
            Message::CompilerMessage(m) => format!("{:?}", m.message.level),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(levels, vec!["Error"]);
}

#[test]
fn json_variants_differ_only_in_rendered() {
    let json = memlint(&["--message-format", "json"], &trainer());
    let short = memlint(&["--message-format=json,json-diagnostic-short"], &trainer());
    let ansi = memlint(&["--message-format", "json", "--message-format", "json-diagnostic-rendered-ansi"], &trainer());
    let rendered = |o: &std::process::Output| -> Vec<String> {
        Message::parse_stream(&o.stdout[..])
            .map(|m| match m.unwrap() {
                Message::CompilerMessage(m) => m.message.rendered.unwrap(),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    };
    let (plain, short_r, ansi_r) = (rendered(&json), rendered(&short), rendered(&ansi));
    assert!(!plain[0].contains('\u{1b}') && plain[0].contains("╭─[src/train.rs:10:9]"), "{}", plain[0]);
    assert_eq!(
        short_r[0],
        "src/train.rs:10:9: warning[memlint::retained_graph_output]: graph-carrying tensor stored in `history`, which outlives the iteration\n"
    );
    assert!(ansi_r[0].contains('\u{1b}'));
    let strip = |s: &str| -> serde_json::Value {
        let mut v: serde_json::Value = serde_json::from_str(s).unwrap();
        v["message"]["rendered"] = serde_json::Value::Null;
        v
    };
    assert_eq!(strip(&stdout(&json)), strip(&stdout(&short)));
    assert_eq!(strip(&stdout(&json)), strip(&stdout(&ansi)));
}

#[test]
fn package_specs_in_every_form_select_the_package() {
    let id = package_id();
    let want = stdout(&memlint(&["--message-format", "short"], &trainer()));
    assert!(want.contains("retained_graph_output"));
    for spec in ["trainer", "trainer@0.1.0", id.as_str()] {
        let out = memlint(&["--message-format", "short", "-p", spec], &trainer());
        assert_eq!(code(&out), 0, "{spec}: {}", stderr(&out));
        assert_eq!(stdout(&out), want, "{spec}");
    }
    let out = memlint(&["-p", "nope"], &trainer());
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("package `nope` is not a member"), "{}", stderr(&out));
}

#[test]
fn bad_message_formats_are_usage_errors() {
    for (args, want) in [
        (&["--message-format", "xml"][..], "unknown message format `xml`"),
        (
            &["--message-format", "human", "--message-format", "sarif"],
            "`human` and `sarif` cannot both go to the same output",
        ),
    ] {
        let out = memlint(args, &trainer());
        assert_eq!(code(&out), 2);
        assert!(stderr(&out).contains(want), "{}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"));
    }
}
