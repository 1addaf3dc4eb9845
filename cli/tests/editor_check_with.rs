//! `--check-with check|clippy`: cargo's messages first, unchanged, then memlint's, on one stdout
//! that `cargo_metadata` parses; the exit status combines both.

#[path = "editor_fixtures/support.rs"]
mod support;

use cargo_metadata::Message;
use support::{Scratch, code, memlint, stderr, trainer};

fn kinds(out: &std::process::Output) -> Vec<String> {
    Message::parse_stream(&out.stdout[..])
        .map(|m| match m.expect("valid JSON line") {
            Message::CompilerMessage(m) => {
                format!("message {}", m.message.code.map_or(String::from("-"), |c| c.code))
            }
            Message::CompilerArtifact(a) => format!("artifact {}", a.target.name),
            Message::BuildFinished(f) => format!("finished {}", f.success),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn check_then_memlint_on_one_stream() {
    let s = Scratch::of(&trainer(), "check-with");
    let target = s.path().join("target").display().to_string();
    let args = [
        "--check-with",
        "check",
        "--message-format=json-diagnostic-rendered-ansi",
        "--workspace",
        "--all-targets",
        "--keep-going",
        "--offline",
        "--target-dir",
        &target,
    ];
    let out = memlint(&args, s.path());
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Cargo's messages (one artifact per target: lib and its unit tests), then memlint's.
    let mut k = kinds(&out);
    k.dedup();
    assert_eq!(k, vec!["artifact trainer", "finished true", "message memlint::retained_graph_output"]);

    // A compile error: cargo's message and status (101), memlint's findings still follow.
    let lib = s.read("src/lib.rs").replace("Ok(Tensor(x.0 * 2.0))", "Ok(Tensor(x.0 * \"2\"))");
    s.write("src/lib.rs", &lib);
    let out = memlint(&args, s.path());
    assert_eq!(code(&out), 101, "{}", stderr(&out));
    let k = kinds(&out);
    assert!(k.contains(&"message E0277".to_string()), "{k:?}");
    assert_eq!(k.last().unwrap(), "message memlint::retained_graph_output");
    assert!(k.contains(&"finished false".to_string()));
}

#[test]
fn clippy_and_memlint_deny_combine() {
    let s = Scratch::of(&trainer(), "check-with-clippy");
    let target = s.path().join("target").display().to_string();
    let out = memlint(
        &["--check-with", "clippy", "--message-format", "json", "--offline", "--target-dir", &target, "-D", "warnings"],
        s.path(),
    );
    // Clippy passes; memlint's deny-level finding makes it 1.
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let k = kinds(&out);
    assert_eq!(k.first().map(String::as_str), Some("artifact trainer"), "{k:?}");
    assert_eq!(k.last().map(String::as_str), Some("message memlint::retained_graph_output"));
    // Human output: cargo prints to stderr, memlint to stdout.
    let out = memlint(&["--check-with", "check", "--offline", "--target-dir", &target], s.path());
    assert_eq!(code(&out), 0);
    assert!(stderr(&out).contains("Finished") && stderr(&out).contains("1 warning"), "{}", stderr(&out));
}
