//! memlint's findings arriving in an editor through the real rust-analyzer: the test speaks LSP
//! to `rust-analyzer` with `check.command = "memlint"` (as the VS Code and Neovim settings in
//! docs/editors-and-ci.md do), saves a file, and reads the diagnostics rust-analyzer publishes.
//! Skipped with a message when rust-analyzer is not installed
//! (`rustup component add rust-analyzer` installs it); with `MEMLINT_REQUIRE_VALIDATORS` set, as CI
//! sets it, a missing rust-analyzer fails the test instead.

#[path = "editor_fixtures/support.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Scratch, trainer};

fn send(stdin: &mut impl Write, message: &Value) {
    let body = message.to_string();
    write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
    stdin.flush().unwrap();
}

/// Reads framed LSP messages into a channel until the server closes its stdout.
fn reader(stdout: impl Read + Send + 'static) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        loop {
            let mut len = 0;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim();
                if line.is_empty() {
                    break;
                }
                if let Some(n) = line.strip_prefix("Content-Length: ") {
                    len = n.parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            if r.read_exact(&mut body).is_err() {
                return;
            }
            if tx.send(serde_json::from_slice(&body).unwrap()).is_err() {
                return;
            }
        }
    });
    rx
}

/// Whether rust-analyzer can run here; if not, says so (and fails where it is required).
fn have_rust_analyzer() -> bool {
    if Command::new("rust-analyzer").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    let msg = "rust-analyzer is not installed (`rustup component add rust-analyzer`)";
    assert!(std::env::var_os("MEMLINT_REQUIRE_VALIDATORS").is_none(), "{msg}");
    eprintln!("SKIPPED: {msg}");
    false
}

/// What one editor session saw.
struct Seen {
    /// The diagnostics published for src/train.rs when `done` first held.
    diagnostics: Vec<Value>,
    /// The quick fix offered for the first memlint diagnostic.
    quick_fix: Option<Value>,
}

/// Opens `s` in rust-analyzer with `check` as its check settings, saves src/train.rs, and
/// waits (up to 3 minutes) until the diagnostics published for it satisfy `done`.
fn session(s: &Scratch, check: Value, done: impl Fn(&[Value]) -> bool) -> Seen {
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_cargo-memlint")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let root_uri = format!("file://{}", s.path().display());
    let file_uri = format!("{root_uri}/src/train.rs");
    let config = json!({
        "check": check,
        "checkOnSave": true,
        "cargo": { "buildScripts": { "enable": false }, "targetDir": s.path().join("target").display().to_string() },
        "procMacro": { "enable": false },
        "cachePriming": { "enable": false },
    });

    let mut server = Command::new("rust-analyzer")
        .current_dir(s.path())
        .env("PATH", path)
        .env_remove("CARGO_TARGET_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("rust-analyzer starts");
    let mut stdin = server.stdin.take().unwrap();
    let rx = reader(server.stdout.take().unwrap());

    send(
        &mut stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": std::process::id(),
            "rootUri": root_uri,
            "workspaceFolders": [{ "uri": root_uri, "name": "trainer" }],
            "capabilities": { "textDocument": {
                "publishDiagnostics": { "relatedInformation": true },
                "codeAction": { "codeActionLiteralSupport": { "codeActionKind": { "valueSet": ["", "quickfix"] } } },
            } },
            "initializationOptions": config,
        }}),
    );
    let text = s.read("src/train.rs");
    let save =
        json!({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": {"uri": file_uri}}});
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut saved = false;
    let mut diagnostics: Option<Vec<Value>> = None;
    let mut quick_fix = None;
    let mut asked = false;
    while Instant::now() < deadline && (diagnostics.is_none() || (asked && quick_fix.is_none())) {
        let Ok(msg) = rx.recv_timeout(Duration::from_secs(5)) else {
            if saved && diagnostics.is_none() {
                // Save again: the first save may come before the workspace is loaded.
                send(&mut stdin, &save);
            }
            continue;
        };
        if msg["id"] == 1 && msg.get("result").is_some() {
            send(&mut stdin, &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
            send(
                &mut stdin,
                &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                    "uri": file_uri, "languageId": "rust", "version": 1, "text": text }}}),
            );
            send(&mut stdin, &save);
            saved = true;
            continue;
        }
        if msg["id"] == 3 {
            let actions = msg["result"].as_array().cloned().unwrap_or_default();
            quick_fix = Some(actions.into_iter().find(|a| a["kind"] == "quickfix").unwrap_or(Value::Null));
            continue;
        }
        // Requests from the server: configuration gets ours, anything else an empty result.
        if let (Some(id), Some(method)) = (msg.get("id"), msg["method"].as_str()) {
            let result = if method == "workspace/configuration" {
                let n = msg["params"]["items"].as_array().map_or(1, Vec::len);
                json!(vec![config.clone(); n])
            } else {
                Value::Null
            };
            send(&mut stdin, &json!({"jsonrpc": "2.0", "id": id, "result": result}));
            continue;
        }
        if diagnostics.is_none()
            && msg["method"] == "textDocument/publishDiagnostics"
            && msg["params"]["uri"] == file_uri.as_str()
        {
            let diags = msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default();
            if done(&diags) {
                // Ask for the quick fixes of the memlint diagnostic.
                if let Some(d) = diags.iter().find(|d| d["source"] == "memlint") {
                    send(
                        &mut stdin,
                        &json!({"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeAction", "params": {
                            "textDocument": { "uri": file_uri }, "range": d["range"], "context": { "diagnostics": [d] } }}),
                    );
                    asked = true;
                }
                diagnostics = Some(diags);
            }
        }
    }
    send(&mut stdin, &json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}));
    send(&mut stdin, &json!({"jsonrpc": "2.0", "method": "exit"}));
    let _ = server.wait();
    Seen { diagnostics: diagnostics.expect("diagnostics for src/train.rs within 3 minutes"), quick_fix }
}

fn has_memlint(diags: &[Value]) -> bool {
    diags.iter().any(|d| d["source"] == "memlint")
}

#[test]
fn memlint_diagnostics_and_quick_fixes_arrive_through_rust_analyzer() {
    if !have_rust_analyzer() {
        return;
    }
    let s = Scratch::of(&trainer(), "lsp");
    let seen = session(&s, json!({ "command": "memlint" }), has_memlint);
    let d = seen.diagnostics.iter().find(|d| d["source"] == "memlint").unwrap();
    eprintln!("rust-analyzer published: {d:#}");
    assert_eq!(d["code"], "retained_graph_output");
    assert_eq!(d["severity"], 2, "warning");
    assert!(d["message"].as_str().unwrap().starts_with("graph-carrying tensor stored in `history`"));
    // LSP positions are 0-based; line 10, columns 9..33 in characters (UTF-16 here: all BMP).
    assert_eq!(d["range"]["start"], json!({"line": 9, "character": 8}));
    assert_eq!(d["range"]["end"], json!({"line": 9, "character": 32}));
    // rust-analyzer links only rustc's and clippy's codes; memlint's docs URL is in the message.
    assert!(d["message"].as_str().unwrap().contains("docs/rules.md#retained_graph_output"), "{d:#}");
    let action = seen.quick_fix.expect("a code action response");
    eprintln!("quick fix: {action:#}");
    assert_eq!(action["title"], "cut the autograd graph before keeping the value: `naïve_copy.detach()`");
    let edits = &action["edit"]["changes"][&format!("file://{}/src/train.rs", s.path().display())];
    assert_eq!(edits[0]["newText"], "naïve_copy.detach()");
    assert_eq!(edits[0]["range"]["start"], json!({"line": 9, "character": 21}));
}

#[test]
fn check_with_gives_compiler_errors_and_findings_in_one_check_command() {
    if !have_rust_analyzer() {
        return;
    }
    let s = Scratch::of(&trainer(), "lsp-check-with");
    // A type error in the same file as the finding.
    let text = s.read("src/train.rs").replace("    Ok(history)", "    let _n: u32 = \"one\";\n    Ok(history)");
    s.write("src/train.rs", &text);
    let check = json!({ "command": "memlint", "extraArgs": ["--check-with", "check"] });
    let seen = session(&s, check, |d| has_memlint(d) && d.iter().any(|d| d["source"] == "rustc"));
    let summary: Vec<(String, String, u64)> = seen
        .diagnostics
        .iter()
        .filter(|d| d["severity"].as_u64() <= Some(2))
        .map(|d| {
            (
                d["source"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap_or("").to_string(),
                d["range"]["start"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(summary.contains(&("rustc".into(), "E0308".into(), 11)), "{summary:?}");
    assert!(summary.contains(&("memlint".into(), "retained_graph_output".into(), 9)), "{summary:?}");
}
