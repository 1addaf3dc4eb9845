//! Every machine-applicable suggestion memlint makes on the UI fixtures round-trips: read back
//! from memlint's JSON by `rustfix` and applied alone, it removes its finding and leaves a file
//! that still parses.

use std::collections::HashSet;
use std::path::PathBuf;

use cargo_memlint::output::json::{self, Owner};
use memlint_lint::{Applicability, Finding, Linter};

fn fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("../lint/tests/ui")
        .expect("../lint/tests/ui exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.push(PathBuf::from("tests/editor_fixtures/trainer/src/train.rs"));
    files.sort();
    files
}

fn owner() -> Owner {
    Owner {
        package_id: "path+file:///fixtures#0.0.0".into(),
        manifest_path: None,
        target_name: "fixtures".into(),
        target_kind: vec!["lib".into()],
        src_path: "lib.rs".into(),
        edition: "2024".into(),
    }
}

fn lint(path: &std::path::Path, text: &str) -> Vec<Finding> {
    // The trainer fixture is candle code by its config; the UI fixtures name their framework.
    Linter::default().lint_text(path, text, memlint_lint::Framework::from_name("candle"))
}

#[test]
fn machine_applicable_suggestions_remove_their_finding() {
    let mut applied = 0;
    let mut failures = Vec::new();
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).unwrap();
        for f in lint(&path, &text) {
            if !f.suggestions.iter().any(|s| s.applicability == Applicability::MachineApplicable) {
                continue;
            }
            let line: serde_json::Value = serde_json::from_str(&json::render(&f, &owner(), "")).unwrap();
            let suggestions = rustfix::get_suggestions_from_json(
                &line["message"].to_string(),
                &HashSet::new(),
                rustfix::Filter::MachineApplicableOnly,
            )
            .unwrap();
            assert_eq!(suggestions.len(), 1, "{}:{}", path.display(), f.line);
            let fixed = rustfix::apply_suggestions(&text, &suggestions).unwrap();
            assert_ne!(fixed, text);
            applied += 1;
            let after = lint(&path, &fixed);
            let where_ = format!("{}:{} `{}`", path.display(), f.line, f.rule);
            if after.iter().any(|g| g.rule == "parse_error") {
                failures.push(format!("{where_}: the fixed file does not parse"));
            }
            if after.iter().any(|g| g.rule == f.rule && g.line == f.line && g.message == f.message) {
                failures.push(format!("{where_}: the finding is still reported after the fix"));
            }
            if after.len() >= lint(&path, &text).len() {
                failures.push(format!("{where_}: the fix removed no finding"));
            }
        }
    }
    eprintln!("applied {applied} machine-applicable suggestions one by one");
    assert!(applied >= 3, "only {applied} machine-applicable suggestions in the fixtures");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The binding a statement writes (`h = …`, `total += …`, `let x = …`), when it is one name.
fn written_name(stmt: &str) -> Option<String> {
    let stmt: syn::Stmt = syn::parse_str(stmt).ok()?;
    let left = match &stmt {
        syn::Stmt::Expr(syn::Expr::Assign(a), _) => &*a.left,
        syn::Stmt::Expr(syn::Expr::Binary(b), _) => &*b.left,
        syn::Stmt::Local(l) => {
            return match &l.pat {
                syn::Pat::Ident(i) => Some(i.ident.to_string()),
                _ => None,
            };
        }
        _ => return None,
    };
    match left {
        syn::Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
        _ => None,
    }
}

/// Whether `name` is read by a forward pass (an argument of `forward*`) or by a backward call
/// (`backward`, `backward_step`) in `body`: its graph is what trains parameters.
fn feeds_training(body: &syn::Block, name: &str) -> bool {
    use syn::visit::Visit;
    struct Mentions<'a>(&'a str, bool);
    impl Visit<'_> for Mentions<'_> {
        fn visit_ident(&mut self, i: &proc_macro2::Ident) {
            self.1 |= i == self.0;
        }
    }
    struct Calls<'a>(&'a str, bool);
    impl<'ast> Visit<'ast> for Calls<'_> {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let method = m.method.to_string();
            let mut seen = Mentions(self.0, false);
            if method.starts_with("forward") {
                m.args.iter().for_each(|a| seen.visit_expr(a));
            } else if method == "backward" || method == "backward_step" {
                seen.visit_expr(&m.receiver);
                m.args.iter().for_each(|a| seen.visit_expr(a));
            }
            self.1 |= seen.1;
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut calls = Calls(name, false);
    calls.visit_block(body);
    calls.1
}

/// The bodies of the file's functions and methods with their byte ranges.
fn fn_bodies(file: &syn::File) -> Vec<(std::ops::Range<usize>, syn::Block)> {
    use syn::spanned::Spanned;
    let mut out = Vec::new();
    for item in &file.items {
        match item {
            syn::Item::Fn(f) => out.push((f.span().byte_range(), (*f.block).clone())),
            syn::Item::Impl(i) => {
                for it in &i.items {
                    if let syn::ImplItem::Fn(f) = it {
                        out.push((f.span().byte_range(), f.block.clone()));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A machine-applicable fix never cuts a value whose graph trains parameters: the binding it
/// writes is not fed to a forward pass or a backward call in its function (a recurrent state
/// `h = cell(x, h)` cut where it is computed stops every gradient to the cell).
#[test]
fn machine_applicable_suggestions_keep_gradients_to_parameters() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(file) = syn::parse_file(&text) else { continue };
        let bodies = fn_bodies(&file);
        for f in lint(&path, &text) {
            for s in f.suggestions.iter().filter(|s| s.applicability == Applicability::MachineApplicable) {
                let line_start = text[..s.span.start].rfind('\n').map_or(0, |i| i + 1);
                let line_end = text[s.span.start..].find('\n').map_or(text.len(), |i| s.span.start + i);
                let line = text[line_start..line_end].split("//").next().unwrap_or("");
                let Some(name) = written_name(line.trim()) else { continue };
                let Some((_, body)) = bodies.iter().find(|(r, _)| r.contains(&s.span.start)) else { continue };
                checked += 1;
                if feeds_training(body, &name) {
                    failures.push(format!(
                        "{}:{} `{}`: the fix cuts `{name}`, which a forward pass or backward reads",
                        path.display(),
                        f.line,
                        f.rule
                    ));
                }
            }
        }
    }
    eprintln!("checked {checked} machine-applicable suggestions for the gradients they keep");
    assert!(checked >= 3, "only {checked} machine-applicable suggestions checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
