//! memlint's findings arriving in an editor through the real rust-analyzer: the test speaks LSP
//! to `rust-analyzer` with `check.command = "memlint"` (as the VS Code and Neovim settings in
//! docs/editors-and-ci.md do), saves a file, and reads the diagnostics rust-analyzer publishes.
//! Skipped with a message when rust-analyzer is not installed
//! (`rustup component add rust-analyzer` installs it).

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

#[test]
fn memlint_diagnostics_arrive_through_rust_analyzer() {
    if !Command::new("rust-analyzer").arg("--version").output().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: rust-analyzer is not installed (`rustup component add rust-analyzer`)");
        return;
    }
    let s = Scratch::of(&trainer(), "lsp");
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_cargo-memlint")).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let root_uri = format!("file://{}", s.path().display());
    let file_uri = format!("{root_uri}/src/train.rs");
    let config = json!({
        "check": { "command": "memlint" },
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
    let deadline = Instant::now() + Duration::from_secs(180);
    let mut saved = false;
    let mut found: Option<Value> = None;
    while found.is_none() && Instant::now() < deadline {
        let Ok(msg) = rx.recv_timeout(Duration::from_secs(5)) else {
            if saved {
                // Save again: the first save may come before the workspace is loaded.
                send(
                    &mut stdin,
                    &json!({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": {"uri": file_uri}}}),
                );
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
            send(
                &mut stdin,
                &json!({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": {"uri": file_uri}}}),
            );
            saved = true;
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
        if msg["method"] == "textDocument/publishDiagnostics" && msg["params"]["uri"] == file_uri.as_str() {
            let diags = msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default();
            found = diags.into_iter().find(|d| d["source"] == "memlint");
        }
    }
    // The quick fix: rust-analyzer offers memlint's machine-applicable suggestion as a code action.
    let mut action: Option<Value> = None;
    if let Some(d) = &found {
        send(
            &mut stdin,
            &json!({"jsonrpc": "2.0", "id": 3, "method": "textDocument/codeAction", "params": {
                "textDocument": { "uri": file_uri }, "range": d["range"], "context": { "diagnostics": [d] } }}),
        );
        while action.is_none() && Instant::now() < deadline {
            let Ok(msg) = rx.recv_timeout(Duration::from_secs(5)) else { continue };
            if msg["id"] == 3 {
                let actions = msg["result"].as_array().cloned().unwrap_or_default();
                eprintln!(
                    "code actions: {}",
                    Value::from(actions.iter().map(|a| a["title"].clone()).collect::<Vec<_>>())
                );
                action = Some(actions.into_iter().find(|a| a["kind"] == "quickfix").unwrap_or(Value::Null));
            } else if let (Some(id), Some(_)) = (msg.get("id"), msg["method"].as_str()) {
                send(&mut stdin, &json!({"jsonrpc": "2.0", "id": id, "result": Value::Null}));
            }
        }
    }
    send(&mut stdin, &json!({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}));
    send(&mut stdin, &json!({"jsonrpc": "2.0", "method": "exit"}));
    let _ = server.wait();

    let d = found.expect("a memlint diagnostic published by rust-analyzer for src/train.rs");
    eprintln!("rust-analyzer published: {d:#}");
    assert_eq!(d["code"], "retained_graph_output");
    assert_eq!(d["severity"], 2, "warning");
    assert!(d["message"].as_str().unwrap().starts_with("graph-carrying tensor stored in `history`"));
    // LSP positions are 0-based; line 10, columns 9..33 in characters (UTF-16 here: all BMP).
    assert_eq!(d["range"]["start"], json!({"line": 9, "character": 8}));
    assert_eq!(d["range"]["end"], json!({"line": 9, "character": 32}));
    // rust-analyzer links only rustc's and clippy's codes; memlint's docs URL is in the message.
    assert!(d["message"].as_str().unwrap().contains("docs/rules.md#retained_graph_output"), "{d:#}");
    let action = action.expect("a code action response");
    eprintln!("quick fix: {action:#}");
    assert_eq!(action["title"], "cut the autograd graph before keeping the value: `naïve_copy.detach()`");
    let edits = &action["edit"]["changes"][&file_uri];
    assert_eq!(edits[0]["newText"], "naïve_copy.detach()");
    assert_eq!(edits[0]["range"]["start"], json!({"line": 9, "character": 21}));
}
