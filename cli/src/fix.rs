//! `cargo memlint --fix`: applies the machine-applicable suggestions of memlint's own JSON output
//! with `rustfix` (as `cargo fix` does for rustc's), then lints again.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use cargo_memlint::output::json;
use memlint_lint::Level;

use crate::args::CheckArgs;
use crate::check::{self, Outcome};

/// Fixing stops after this many rounds even if new fixes keep appearing.
const MAX_ROUNDS: usize = 4;

pub fn run(args: &CheckArgs, cli_levels: &[(String, Level)], pool: &rayon::ThreadPool) -> miette::Result<Outcome> {
    let mut outcome = check::lint(args, cli_levels, pool)?;
    if !args.allow_dirty {
        ensure_clean(&outcome.ws.root)?;
    }
    let mut fixed = 0;
    let mut files_fixed = HashSet::new();
    for _ in 0..MAX_ROUNDS {
        let by_file = suggestions(&outcome)?;
        if by_file.is_empty() {
            break;
        }
        for (file, suggestions) in &by_file {
            let text = std::fs::read_to_string(file)
                .map_err(|e| miette::miette!(code = "memlint::fix", "cannot read {file}: {e}"))?;
            let new = rustfix::apply_suggestions(&text, suggestions)
                .map_err(|e| miette::miette!(code = "memlint::fix", "cannot apply the fixes to {file}: {e}"))?;
            if new != text {
                std::fs::write(file, new)
                    .map_err(|e| miette::miette!(code = "memlint::fix", "cannot write {file}: {e}"))?;
                fixed += suggestions.len();
                files_fixed.insert(file.clone());
            }
        }
        outcome = check::lint(args, cli_levels, pool)?;
    }
    if args.quiet {
        return Ok(outcome);
    }
    eprintln!(
        "memlint: applied {fixed} fix{} in {} file{}; linted again",
        if fixed == 1 { "" } else { "es" },
        files_fixed.len(),
        if files_fixed.len() == 1 { "" } else { "s" }
    );
    Ok(outcome)
}

/// The machine-applicable suggestions of an outcome, read back from the JSON memlint prints.
fn suggestions(outcome: &Outcome) -> miette::Result<BTreeMap<String, Vec<rustfix::Suggestion>>> {
    let mut by_file: BTreeMap<String, Vec<rustfix::Suggestion>> = BTreeMap::new();
    let only = HashSet::new();
    for (_, findings) in &outcome.results {
        for f in findings.iter().filter(|f| f.level != Level::Allow && !f.suggestions.is_empty()) {
            let owner = json::Owner {
                package_id: String::new(),
                manifest_path: None,
                target_name: String::new(),
                target_kind: Vec::new(),
                src_path: String::new(),
                edition: String::new(),
            };
            let line: serde_json::Value = serde_json::from_str(&json::render(f, &owner, ""))
                .map_err(|e| miette::miette!("memlint wrote invalid JSON: {e}"))?;
            let message = line["message"].to_string();
            let found = rustfix::get_suggestions_from_json(&message, &only, rustfix::Filter::MachineApplicableOnly)
                .map_err(|e| miette::miette!("rustfix cannot read memlint's JSON: {e}"))?;
            for s in found {
                let file =
                    s.solutions.iter().flat_map(|sol| &sol.replacements).map(|r| r.snippet.file_name.clone()).next();
                if let Some(file) = file {
                    by_file.entry(file).or_default().push(s);
                }
            }
        }
    }
    Ok(by_file)
}

/// Refuses to edit files in a work tree with uncommitted changes (they could not be told apart
/// from the fixes), like `cargo fix`.
fn ensure_clean(root: &Path) -> miette::Result<()> {
    let out = std::process::Command::new("git").arg("-C").arg(root).args(["status", "--porcelain"]).output();
    let help = "commit or stash your changes first, or pass `--allow-dirty`";
    match out {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            let dirty: Vec<&str> = text.lines().map(|l| l.get(3..).unwrap_or(l)).collect();
            if dirty.is_empty() {
                return Ok(());
            }
            let mut shown = dirty.iter().take(10).map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n");
            if dirty.len() > 10 {
                shown.push_str(&format!("\n  … and {} more", dirty.len() - 10));
            }
            Err(miette::miette!(
                code = "memlint::fix",
                help = help,
                "the work tree has uncommitted changes; `--fix` will not edit it:\n{shown}"
            ))
        }
        _ => Err(miette::miette!(
            code = "memlint::fix",
            help = help,
            "{} is not in a git work tree, so `--fix` cannot tell its edits from yours",
            root.display()
        )),
    }
}
