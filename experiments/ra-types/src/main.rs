//! ra-types: loads a cargo workspace with rust-analyzer's library crates (no build scripts, no
//! proc-macro server: nothing of the workspace runs) and prints the inferred types of the
//! expressions and patterns on given lines.
//!
//!     ra-types <workspace root> <file:line>...
//!
//! Prints one line per position: `file:line<TAB>load_s<TAB>n_exprs<TAB>n_unknown<TAB>types`,
//! with `types` = `text => type` pairs for the let patterns and the method-call/call
//! expressions on the line (the values memlint reasons about).

use std::path::{Path, PathBuf};
use std::time::Instant;

use ra_ap_hir::{HirDisplay, Semantics};
use ra_ap_ide_db::RootDatabase;
use ra_ap_load_cargo::{LoadCargoConfig, ProcMacroServerChoice, load_workspace_at};
use ra_ap_paths::AbsPathBuf;
use ra_ap_project_model::{CargoConfig, RustLibSource};
use ra_ap_syntax::{AstNode, ast};
use ra_ap_vfs::VfsPath;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(root) = args.next() else {
        eprintln!("usage: ra-types <workspace root> <file:line>...");
        std::process::exit(2);
    };
    let root = std::fs::canonicalize(&root).unwrap_or_else(|e| {
        eprintln!("{root}: {e}");
        std::process::exit(2)
    });
    let cargo = CargoConfig { sysroot: Some(RustLibSource::Discover), ..CargoConfig::default() };
    let load = LoadCargoConfig {
        load_out_dirs_from_check: false,
        with_proc_macro_server: ProcMacroServerChoice::None,
        prefill_caches: false,
        num_worker_threads: 1,
        proc_macro_processes: 0,
    };
    let started = Instant::now();
    let (db, vfs, _) = match load_workspace_at(&root, &cargo, &load, &|_| {}) {
        Ok(x) => x,
        Err(e) => {
            println!("LOAD-ERROR\t{:.2}\t{e:#}", started.elapsed().as_secs_f64());
            std::process::exit(1);
        }
    };
    let loaded = started.elapsed().as_secs_f64();
    println!("LOADED\t{loaded:.2}");
    // The trait solver reads the database from a thread-local: attach it.
    ra_ap_hir::attach_db(&db, || {
        let sema = Semantics::new(&db);
        for position in args {
            let t = Instant::now();
            let out = types_at(&sema, &db, &vfs, &root, &position);
            println!("{position}\t{:.3}\t{out}", t.elapsed().as_secs_f64());
        }
    });
}

fn types_at(sema: &Semantics<'_, RootDatabase>, db: &RootDatabase, vfs: &ra_ap_vfs::Vfs, root: &Path, position: &str) -> String {
    let Some((file, line)) = position.rsplit_once(':') else { return "bad position".into() };
    let Ok(line) = line.parse::<usize>() else { return "bad line".into() };
    let path: PathBuf = root.join(file);
    let Ok(abs) = AbsPathBuf::try_from(path.to_string_lossy().as_ref()) else { return "bad path".into() };
    let Some((file_id, _)) = vfs.file_id(&VfsPath::from(abs)) else { return "file not in the workspace".into() };
    let source = sema.parse_guess_edition(file_id);
    let text = source.syntax().text().to_string();
    let Some(start) = line_start(&text, line) else { return "no such line".into() };
    let end = text[start..].find('\n').map_or(text.len(), |n| start + n);
    let target = match sema.file_to_module_def(file_id) {
        Some(m) => m.krate(db).to_display_target(db),
        None => return "file in no module".into(),
    };
    let (mut n, mut unknown, mut shown) = (0, 0, Vec::new());
    for node in source.syntax().descendants() {
        let range = node.text_range();
        let (s, e) = (usize::from(range.start()), usize::from(range.end()));
        if s < start || s >= end || e > end + 400 {
            continue;
        }
        let ty = if let Some(pat) = ast::IdentPat::cast(node.clone()) {
            sema.type_of_pat(&ast::Pat::IdentPat(pat)).map(|t| t.original)
        } else if let Some(expr) = ast::Expr::cast(node.clone()) {
            match expr {
                ast::Expr::MethodCallExpr(_) | ast::Expr::CallExpr(_) | ast::Expr::PathExpr(_) | ast::Expr::FieldExpr(_) => {
                    sema.type_of_expr(&expr).map(|t| t.original)
                }
                _ => continue,
            }
        } else {
            continue;
        };
        n += 1;
        let shown_ty = match ty {
            Some(t) if !t.contains_unknown() => t.display(db, target).to_string(),
            Some(t) => {
                unknown += 1;
                format!("{} (partly unknown)", t.display(db, target))
            }
            None => {
                unknown += 1;
                "{none}".to_string()
            }
        };
        let snippet: String = node.text().to_string().split_whitespace().collect::<Vec<_>>().join(" ");
        let snippet: String = snippet.chars().take(60).collect();
        shown.push(format!("{snippet} => {shown_ty}"));
    }
    format!("{n}\t{unknown}\t{}", shown.join(" | "))
}

/// Byte offset of 1-based `line` in `text`.
fn line_start(text: &str, line: usize) -> Option<usize> {
    if line == 1 {
        return Some(0);
    }
    text.match_indices('\n').nth(line - 2).map(|(i, _)| i + 1)
}
