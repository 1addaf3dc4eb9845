//! The `cargo-memlint` binary end to end: formats, exit codes, package selection.

use std::path::Path;
use std::process::{Command, Output};

use cargo_metadata::Message;

fn memlint(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-memlint"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("cargo-memlint runs")
}

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture_crate")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

#[test]
fn json_lines_are_cargo_compiler_messages_with_the_real_package_id() {
    let out = memlint(&["memlint", "--message-format", "json"], &fixture());
    assert_eq!(code(&out), 0, "stderr: {}", String::from_utf8_lossy(&out.stderr));

    let meta = cargo_metadata::MetadataCommand::new()
        .manifest_path(fixture().join("Cargo.toml"))
        .no_deps()
        .other_options(vec!["--offline".to_string()])
        .exec()
        .expect("cargo metadata");
    let package_id = meta.packages[0].id.clone();

    let mut seen = Vec::new();
    for message in Message::parse_stream(&out.stdout[..]) {
        let Message::CompilerMessage(m) = message.expect("valid JSON line") else {
            panic!("not a compiler message");
        };
        assert_eq!(m.package_id, package_id);
        let code = m.message.code.as_ref().expect("code").code.clone();
        let primary = m.message.spans.iter().find(|s| s.is_primary).expect("primary span");
        assert!(m.message.rendered.as_deref().is_some_and(|r| r.contains(&code)));
        assert!(m.message.children.iter().any(|c| c.message.contains("docs/rules.md#")));
        seen.push((code, primary.file_name.clone(), primary.line_start, m.target.name.clone()));
        // Columns count characters: the push on the line with «ü» starts at column 9.
        if primary.line_start == 14 {
            assert_eq!(primary.column_start, 9);
            assert!(primary.text[0].text.contains('ü'));
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("memlint::accumulated_loss_tensor".into(), "examples/train.rs".into(), 12, "train".into()),
            ("memlint::rc_cycle".into(), "src/lib.rs".into(), 6, "fixture_crate".into()),
            ("memlint::retained_graph_output".into(), "src/lib.rs".into(), 14, "fixture_crate".into()),
        ]
    );
}

#[test]
fn exit_codes_follow_the_documented_contract() {
    // Warnings only: 0.
    assert_eq!(code(&memlint(&[], &fixture())), 0);
    // `-D warnings`: 1.
    let out = memlint(&["-D", "warnings"], &fixture());
    assert_eq!(code(&out), 1);
    assert!(String::from_utf8_lossy(&out.stdout).contains("memlint::rc_cycle"));
    // One rule denied, the other allowed: still 1; everything allowed: 0 and silent.
    assert_eq!(code(&memlint(&["-D", "rc_cycle"], &fixture())), 1);
    let out = memlint(&["-D", "rc_cycle", "-A", "warnings"], &fixture());
    assert_eq!(code(&out), 0);
    assert!(out.stdout.is_empty());
    // Tool failures: 2, with a clear message and no panic.
    let out = memlint(&["does/not/exist.rs"], &fixture());
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    let out = memlint(&["-D", "no_such_rule"], &fixture());
    assert_eq!(code(&out), 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no rule named `no_such_rule`"));
    let out = memlint(&["--manifest-path", "/nonexistent/Cargo.toml"], &fixture());
    assert_eq!(code(&out), 2);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn short_format_and_paths() {
    let out = memlint(&["--message-format", "short", "src/lib.rs"], &fixture());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        vec![
            "src/lib.rs:6:5: warning[memlint::rc_cycle]: strong reference cycle: Cache → Cache",
            "src/lib.rs:14:9: warning[memlint::retained_graph_output]: graph-carrying tensor stored in `history`, which outlives the iteration",
        ]
    );
}

#[test]
fn unparsable_and_non_utf8_files_are_reported_not_fatal() {
    let dir = std::env::temp_dir().join(format!("memlint-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.rs"), "fn f( {").unwrap();
    std::fs::write(dir.join("latin1.rs"), b"// caf\xe9\nfn f() {}\n").unwrap();
    std::fs::copy(fixture().join("src/lib.rs"), dir.join("good.rs")).unwrap();
    let out = memlint(&["--message-format", "short", "--framework", "candle", "-W", "nursery", "."], &dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{stdout}");
    assert!(stdout.contains("bad.rs:1:7: warning[memlint::parse_error]"), "{stdout}");
    assert!(stdout.contains("latin1.rs:1:1: warning[memlint::parse_error]: file is not valid UTF-8"), "{stdout}");
    assert!(stdout.contains("good.rs:14:9: warning[memlint::retained_graph_output]"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A module file no `mod` declares is not compiled: its findings are left out, in path mode and
/// in package mode alike; the declared module with the same code is still reported.
#[test]
fn files_no_mod_declares_are_not_linted() {
    let dir = std::env::temp_dir().join(format!("memlint-cli-orphan-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"orphan\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ncandle-core = \"0.11\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), "pub mod train;\n// pub mod old_train;\n").unwrap();
    let leaky = std::fs::read_to_string(fixture().join("src/lib.rs")).unwrap();
    std::fs::write(dir.join("src/train.rs"), &leaky).unwrap();
    std::fs::write(dir.join("src/old_train.rs"), &leaky).unwrap();
    for args in [
        &["--message-format", "short", "--framework", "candle", "-W", "nursery", "src"][..],
        &["--message-format", "short", "--framework", "candle", "-W", "nursery"][..],
    ] {
        let out = memlint(args, &dir);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("train.rs:14:9: warning[memlint::retained_graph_output]"), "{args:?}: {stdout}");
        assert!(!stdout.contains("old_train.rs"), "{args:?}: {stdout}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A two-member workspace in a fresh temporary folder: the library `lib` (its `src/lib.rs`) and
/// the binary `bin` (its `src/main.rs`) that depends on it by path, both on `framework`.
fn two_crate_workspace(tag: &str, framework: &str, lib: (&str, &str), bin: (&str, &str)) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("memlint-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let ((lib_name, lib_src), (bin_name, bin_src)) = (lib, bin);
    let manifest = |name: &str, deps: &str| {
        format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n{framework}\n{deps}"
        )
    };
    let files = [
        (
            "Cargo.toml".to_string(),
            format!("[workspace]\nresolver = \"2\"\nmembers = [\"{lib_name}\", \"{bin_name}\"]\n"),
        ),
        (format!("{lib_name}/Cargo.toml"), manifest(lib_name, "")),
        (
            format!("{bin_name}/Cargo.toml"),
            manifest(bin_name, &format!("{lib_name} = {{ path = \"../{lib_name}\" }}\n")),
        ),
        (format!("{lib_name}/src/lib.rs"), lib_src.to_string()),
        (format!("{bin_name}/src/main.rs"), bin_src.to_string()),
    ];
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// The lines of `rule`'s findings in memlint's short output for `args`, run in `dir`.
fn short_hits(args: &[&str], dir: &std::path::Path, rule: &str) -> Vec<String> {
    let out = memlint(args, dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let hits: Vec<String> = stdout.lines().filter(|l| l.contains(rule)).map(str::to_owned).collect();
    assert!(hits.len() <= 1, "{args:?}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    hits
}

/// A workspace whose binary crate calls a sibling crate by path: the call graph crosses the
/// crate boundary (a rollout helper of the `agents` crate runs the forward), and each finding is
/// reported once, in the crate it is in.
#[test]
fn calls_into_path_dependencies_are_followed() {
    let dir = two_crate_workspace(
        "ws",
        "burn = \"0.20\"",
        (
            "agents",
            "use burn::tensor::backend::Backend;\n\
             pub fn act<B: Backend>(net: &Net<B>, obs: Tensor<B, 2>) -> usize {\n    \
             net.forward(obs).argmax(1).into_scalar() as usize\n}\n",
        ),
        (
            "app",
            "use burn::tensor::backend::AutodiffBackend;\n\
             fn play<B: AutodiffBackend>(net: &Net<B>, env: &mut Env, steps: usize) {\n    \
             for _ in 0..steps {\n        let a = agents::act(net, env.obs());\n        env.step(a);\n    }\n}\n\
             fn main() {\n    play(&net(), &mut env(), 10);\n}\n",
        ),
    );
    for args in
        [&["--message-format", "short", "--workspace"][..], &["--message-format", "short", "agents/src", "app/src"][..]]
    {
        let hits = short_hits(args, &dir, "autodiff_forward_without_backward");
        assert_eq!(hits.len(), 1, "{args:?}");
        assert!(hits[0].starts_with("app/src/main.rs:4:"), "{args:?}: {hits:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The other direction: a library crate's function that the trainer crate calls once per batch
/// runs on every training step, and what it does per call is reported in the library crate.
#[test]
fn calls_from_dependent_crates_are_followed() {
    let dir = two_crate_workspace(
        "ws-rev",
        "dfdx = \"0.13\"",
        (
            "learn",
            "use dfdx::prelude::*;\n\
             pub fn update_on_batch(model: &mut Net, opt: &mut Adam<Net, f32, Cpu>, x: Batch, y: Target) -> f32 {\n    \
             let grads = model.alloc_grads();\n    \
             let loss = mse_loss(model.forward_mut(x.traced(grads)), y);\n    \
             let value = loss.array();\n    \
             let grads = loss.backward();\n    \
             opt.update(model, &grads).unwrap();\n    \
             value\n}\n",
        ),
        (
            "trainer",
            "use learn::update_on_batch;\n\
             fn train(model: &mut Net, opt: &mut Adam<Net, f32, Cpu>, data: &Data, batches: usize) {\n    \
             for _ in 0..batches {\n        let (x, y) = data.sample();\n        update_on_batch(model, opt, x, y);\n    }\n}\n\
             fn main() {}\n",
        ),
    );
    for args in [
        &["--message-format", "short", "--workspace"][..],
        &["--message-format", "short", "learn/src", "trainer/src"][..],
    ] {
        let hits = short_hits(args, &dir, "grads_allocated_in_loop");
        assert_eq!(hits.len(), 1, "{args:?}");
        assert!(hits[0].starts_with("learn/src/lib.rs:3:"), "{args:?}: {hits:?}");
    }
    // Linted alone, the library does not know who calls it.
    assert!(short_hits(&["--message-format", "short", "-p", "learn"], &dir, "grads_allocated_in_loop").is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Files given by path are linted with the rest of their package as context: the backend alias
/// declared in `src/main.rs` makes the model in `src/training/rollout.rs` autodiff, and what
/// `src/main.rs` itself holds is not reported.
#[test]
fn paths_inside_a_package_are_read_with_the_rest_of_it() {
    let dir = std::env::temp_dir().join(format!("memlint-cli-pkgctx-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"c4\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nburn = \"0.20\"\n",
        ),
        (
            "src/main.rs",
            "use burn::backend::{Autodiff, NdArray};\nmod training;\npub type Bknd = Autodiff<NdArray>;\n\
             fn main() {\n    let net: Net<Bknd> = Net::new();\n    for _ in 0..10_000 {\n        \
             let q = net.forward(obs());\n        show(q.argmax(1).into_scalar());\n    }\n    \
             training::rollout::play(&net, &mut Env::new());\n}\n",
        ),
        ("src/training/mod.rs", "pub mod rollout;\n"),
        (
            "src/training/rollout.rs",
            "use crate::Bknd;\npub fn play(net: &Net<Bknd>, env: &mut Env) {\n    loop {\n        \
             let a = net.forward(env.obs()).argmax(1).into_scalar();\n        if env.step(a) { break; }\n    }\n}\n",
        ),
    ];
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let out = memlint(&["--message-format", "short", "src/training"], &dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let hits: Vec<&str> = stdout.lines().filter(|l| l.contains("autodiff_forward_without_backward")).collect();
    assert_eq!(hits.len(), 1, "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(hits[0].starts_with("src/training/rollout.rs:4:"), "{hits:?}");
    // The whole package reports both loops.
    let out = memlint(&["--message-format", "short"], &dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().filter(|l| l.contains("autodiff_forward_without_backward")).count(), 2, "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// In a package of binaries only, nothing outside it can call its functions: a loop in one that
/// nothing in the crate calls never runs and is not reported. With a library target its `pub`
/// items may be used elsewhere, so the same loop is reported.
#[test]
fn code_a_binary_never_runs_is_not_reported() {
    let dir = std::env::temp_dir().join(format!("memlint-cli-unreached-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rollout = "use burn::backend::{Autodiff, NdArray};\n\
                   pub fn play(net: &Net<Autodiff<NdArray>>, env: &mut Env) {\n    loop {\n        \
                   let a = net.forward(env.obs()).argmax(1).into_scalar();\n        if env.step(a) { break; }\n    }\n}\n";
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"c5\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nburn = \"0.20\"\n",
        ),
        ("src/main.rs", "mod rollout;\nfn main() {\n    // rollout::play(&net, &mut env);\n}\n"),
        ("src/rollout.rs", rollout),
    ];
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let hits = || short_hits(&["--message-format", "short"], &dir, "autodiff_forward_without_backward");
    assert!(hits().is_empty());
    // Called from `main`: reported.
    std::fs::write(dir.join("src/main.rs"), "mod rollout;\nfn main() {\n    rollout::play(&net, &mut env);\n}\n")
        .unwrap();
    assert_eq!(hits().len(), 1);
    // Not called, but a library's: reported.
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.join("src/lib.rs"), "pub mod rollout;\n").unwrap();
    assert_eq!(hits().len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn explain_prints_rule_docs() {
    let out = memlint(&["explain", "memlint::missing_zero_grad"], &fixture());
    assert_eq!(code(&out), 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("memlint::missing_zero_grad: "));
    assert!(stdout.contains("### Why is this bad?"));
    assert_eq!(code(&memlint(&["explain", "nope"], &fixture())), 2);
}

#[test]
fn help_documents_flags_and_exit_codes() {
    let out = memlint(&["--help"], &fixture());
    assert_eq!(code(&out), 0);
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout));
}

/// A package on burn `req` whose `main` runs an autodiff model in a loop with no backward (one
/// `autodiff_forward_without_backward` finding at `src/main.rs:6`, on burn 0.13 and later).
fn burn_rollout_package(dir: &Path, req: &str) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"rollout\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nburn = \"{req}\"\n"),
    )
    .unwrap();
    std::fs::write(
        dir.join("src/main.rs"),
        "use burn::backend::{Autodiff, NdArray};\ntype B = Autodiff<NdArray>;\n\
         fn main() {\n    let net: Net<B> = Net::new();\n    for _ in 0..10_000 {\n        \
         let q = net.forward(obs());\n        show(q.argmax(1).into_scalar());\n    }\n}\n",
    )
    .unwrap();
}

/// A project that pins a toolchain this machine lacks (`rust-toolchain.toml`, often a nightly)
/// is still linted: memlint compiles nothing, and its `cargo metadata` runs under a toolchain
/// that is installed.
#[test]
fn a_pinned_toolchain_that_is_not_installed_does_not_stop_the_lint() {
    let dir = std::env::temp_dir().join(format!("memlint-cli-toolchain-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    burn_rollout_package(&dir, "0.20");
    std::fs::write(dir.join("rust-toolchain.toml"), "[toolchain]\nchannel = \"nightly-2001-01-01\"\n").unwrap();
    let out = memlint(&["--message-format", "short"], &dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(code(&out), 0, "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.starts_with("src/main.rs:6:"), "{stdout}");
    assert!(stdout.contains("autodiff_forward_without_backward"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// burn before 0.13 keeps a graph in the tensors themselves, freed with them: a forward with no
/// backward leaves nothing behind. The version comes from the package's manifest.
#[test]
fn burn_before_its_graph_store_has_no_forward_without_backward_hazard() {
    let dir = std::env::temp_dir().join(format!("memlint-cli-burnversion-{}", std::process::id()));
    let run = |req: &str| {
        let _ = std::fs::remove_dir_all(&dir);
        burn_rollout_package(&dir, req);
        let out = memlint(&["--message-format", "short"], &dir);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("autodiff_forward_without_backward")).count()
    };
    assert_eq!(run("0.12.1"), 0);
    assert_eq!(run("=0.10.0"), 0);
    assert_eq!(run("0.13"), 1);
    assert_eq!(run(">=0.10"), 1, "a requirement that allows 0.13 or later keeps the rule on");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A repository whose package lies in a folder, with no `Cargo.toml` at its root, linted by path
/// from the root (no workspace loads there): the version still comes from the package's
/// manifest.
#[test]
fn the_burn_version_of_a_package_linted_by_path_comes_from_its_manifest() {
    let dir = std::env::temp_dir().join(format!("memlint-cli-burnnested-{}", std::process::id()));
    let run = |req: &str| {
        let _ = std::fs::remove_dir_all(&dir);
        burn_rollout_package(&dir.join("models/rollout"), req);
        let out = memlint(&["--message-format", "short", "models"], &dir);
        assert_eq!(code(&out), 0, "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("autodiff_forward_without_backward")).count()
    };
    assert_eq!(run("0.12.1"), 0);
    assert_eq!(run("0.13"), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
