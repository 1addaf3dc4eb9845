//! Which files under a crate's `src/` the compiler would build: those reached through `mod`
//! declarations from `src/lib.rs`, `src/main.rs` and `src/bin/`. A file no `mod` names (an old
//! module left in the folder, one whose `mod` line is commented out) is never compiled, so its
//! findings would be about code that does not run.
//!
//! Resolution follows the compiler where the layout is the usual one: `mod agent;` in
//! `src/main.rs` (or a `mod.rs`, or a target's root) reaches `src/agent.rs` or
//! `src/agent/mod.rs`, and in `src/model.rs` it reaches `src/model/agent.rs` or
//! `src/model/agent/mod.rs`; `#[path = "…"]` reaches the file it names. Where no such file
//! exists (a `mod` inside an inline module, a layout the scan does not follow) it is generous: any
//! file of that module name is reached. Only files that nothing could reach are left out; files
//! outside `src/`, and crates whose `src/` has no root among the files, are kept whole.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The files of one crate (rooted at `root`) that are compiled, in their order; `read` gives a
/// file's text (a file that cannot be read declares nothing). `targets` are the root files of
/// the package's targets as `Cargo.toml` names them (`[[bin]] path = "src/train.rs"`), besides
/// the conventional ones.
pub fn compiled(
    root: &Path,
    files: Vec<PathBuf>,
    targets: &[PathBuf],
    read: impl Fn(&Path) -> Option<String>,
) -> Vec<PathBuf> {
    let src = root.join("src");
    let in_src = |f: &Path| f.starts_with(&src);
    let is_root = |f: &Path| {
        targets.iter().any(|t| t == f)
            || f == src.join("lib.rs")
            || f == src.join("main.rs")
            || f.parent().is_some_and(|d| d == src.join("bin"))
            || f.parent().and_then(Path::parent).is_some_and(|d| d == src.join("bin"))
    };
    // Every file the walk knows: the files linted, then the crate's roots and the module files
    // between them when they are not among those (`cargo memlint src/training` in a crate whose
    // `src/lib.rs` declares `mod training;`): read for their declarations, not returned.
    let mut universe: Vec<PathBuf> = files.clone();
    let mut texts: std::collections::HashMap<PathBuf, String> = std::collections::HashMap::new();
    let listed: HashSet<PathBuf> = files.iter().cloned().collect();
    for extra in targets.iter().cloned().chain([src.join("lib.rs"), src.join("main.rs")]) {
        if in_src(&extra)
            && !listed.contains(&extra)
            && !texts.contains_key(&extra)
            && let Some(text) = read(&extra)
        {
            texts.insert(extra.clone(), text);
            universe.push(extra);
        }
    }
    if !universe.iter().any(|f| is_root(f)) {
        return files;
    }
    let mut index: std::collections::HashMap<PathBuf, usize> =
        universe.iter().enumerate().map(|(i, f)| (f.clone(), i)).collect();
    let mut reached: Vec<bool> = universe.iter().map(|f| !in_src(f) || is_root(f)).collect();
    let mut scanned: Vec<bool> = vec![false; universe.len()];
    let mut names: HashSet<String> = HashSet::new();
    let mut paths: HashSet<PathBuf> = HashSet::new();
    loop {
        let mut grew = false;
        let mut i = 0;
        while i < universe.len() {
            if reached[i] && !scanned[i] {
                scanned[i] = true;
                let f = universe[i].clone();
                let text = texts.remove(&f).or_else(|| read(&f)).unwrap_or_default();
                let mut declared = HashSet::new();
                declarations(&text, &f, &mut declared, &mut paths);
                // Where the compiler looks for `mod name;` declared in `f`.
                let own_dir = is_root(&f) || matches!(f.file_name().and_then(|n| n.to_str()), Some("mod.rs"));
                let dir = match (f.parent(), f.file_stem()) {
                    (Some(parent), _) if own_dir => parent.to_path_buf(),
                    (Some(parent), Some(stem)) => parent.join(stem),
                    _ => PathBuf::new(),
                };
                for name in declared {
                    let at = [dir.join(format!("{name}.rs")), dir.join(&name).join("mod.rs")];
                    let found = at.iter().find(|p| index.contains_key(*p)).cloned().or_else(|| {
                        // A module file outside the files linted, on the way to them.
                        at.iter().find_map(|p| {
                            let text = read(p)?;
                            texts.insert(p.clone(), text);
                            Some(p.clone())
                        })
                    });
                    match found {
                        Some(p) => {
                            if !index.contains_key(&p) {
                                index.insert(p.clone(), universe.len());
                                universe.push(p.clone());
                                reached.push(false);
                                scanned.push(false);
                            }
                            paths.insert(p);
                        }
                        None => {
                            names.insert(name);
                        }
                    }
                }
            }
            i += 1;
        }
        for (i, f) in universe.iter().enumerate() {
            if !reached[i] && (paths.contains(f) || module_name(f).is_some_and(|n| names.contains(n))) {
                reached[i] = true;
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    files.iter().filter(|f| index.get(*f).is_some_and(|&i| reached[i])).cloned().collect()
}

/// The module name a file defines: its stem, or its folder's name for `mod.rs`.
fn module_name(file: &Path) -> Option<&str> {
    match file.file_stem()?.to_str()? {
        "mod" => file.parent()?.file_name()?.to_str(),
        stem => Some(stem),
    }
}

/// `mod name;` declarations (any visibility, several on a line: `mod config; mod data;`) and
/// the `#[path = "…"]` files declared in `text`.
fn declarations(text: &str, file: &Path, names: &mut HashSet<String>, paths: &mut HashSet<PathBuf>) {
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut pending_path: Option<PathBuf> = None;
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or_default();
        for item in line.split_inclusive(';') {
            let mut item = item.trim();
            // `#[path = "…"]` and `#[cfg(..)]` before the item, on its line or the lines above.
            while let Some(rest) = item.strip_prefix("#[") {
                let Some(end) = rest.find(']') else { break };
                if let Some(path) = rest[..end].strip_prefix("path") {
                    pending_path = path.split('"').nth(1).map(|p| normalize(&dir.join(p)));
                }
                item = rest[end + 1..].trim_start();
            }
            if item.is_empty() {
                continue;
            }
            match declared_module(item) {
                Some(name) => {
                    names.insert(name.to_string());
                    if let Some(p) = pending_path.take() {
                        paths.insert(p);
                    }
                }
                None => pending_path = None,
            }
        }
    }
}

/// The name `item` declares a module file by (`mod agent;`, `pub(in crate::a) mod r#type;`).
fn declared_module(item: &str) -> Option<&str> {
    let mut rest = item;
    if let Some(r) = rest.strip_prefix("pub") {
        let r = r.trim_start();
        rest = match r.strip_prefix('(') {
            Some(scope) => scope.split_once(')')?.1.trim_start(),
            None => r,
        };
    }
    let name = rest.strip_prefix("mod ")?.strip_suffix(';')?.trim();
    let name = name.strip_prefix("r#").unwrap_or(name);
    (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')).then_some(name)
}

/// `a/b/../c.rs` → `a/c.rs`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn run(files: &[(&str, &str)]) -> Vec<String> {
        run_with_targets(files, &[])
    }

    fn run_with_targets(files: &[(&str, &str)], targets: &[&str]) -> Vec<String> {
        let texts: HashMap<PathBuf, String> =
            files.iter().map(|(p, t)| (Path::new("/c").join(p), (*t).to_string())).collect();
        let list: Vec<PathBuf> = files.iter().map(|(p, _)| Path::new("/c").join(p)).collect();
        let targets: Vec<PathBuf> = targets.iter().map(|t| Path::new("/c").join(t)).collect();
        compiled(Path::new("/c"), list, &targets, |f| texts.get(f).cloned())
            .into_iter()
            .map(|p| p.strip_prefix("/c").unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn files_no_mod_names_are_left_out() {
        let kept = run(&[
            (
                "src/main.rs",
                "mod agent;\n// mod old_agent;\npub(crate) mod model;\n#[cfg(feature = \"gpu\")] mod gpu;\n",
            ),
            ("src/gpu.rs", ""),
            ("src/agent.rs", "pub mod memory;\n"),
            ("src/agent/memory.rs", ""),
            ("src/model/mod.rs", "#[path = \"../extra/layers.rs\"]\nmod layers;\n"),
            ("src/extra/layers.rs", ""),
            ("src/old_agent.rs", "fn leaky() {}"),
            ("src/scratch.rs", ""),
            ("examples/demo.rs", ""),
        ]);
        assert_eq!(
            kept,
            [
                "src/main.rs",
                "src/gpu.rs",
                "src/agent.rs",
                "src/agent/memory.rs",
                "src/model/mod.rs",
                "src/extra/layers.rs",
                "examples/demo.rs"
            ]
        );
    }

    #[test]
    fn a_mod_reaches_the_file_where_the_compiler_looks() {
        // `models/mod.rs` declares `lstm` (`models/lstm/mod.rs`); `models/lstm/v1/lstm.rs`,
        // a stale file of the same module name one folder down, is never compiled.
        let kept = run(&[
            ("src/lib.rs", "pub mod models;\n"),
            ("src/models/mod.rs", "pub mod lstm;\n"),
            ("src/models/lstm/mod.rs", "pub mod v1;\n"),
            ("src/models/lstm/v1.rs", "pub mod domain;\n"),
            ("src/models/lstm/v1/domain.rs", ""),
            ("src/models/lstm/v1/lstm.rs", "fn leaky() {}"),
        ]);
        assert_eq!(
            kept,
            [
                "src/lib.rs",
                "src/models/mod.rs",
                "src/models/lstm/mod.rs",
                "src/models/lstm/v1.rs",
                "src/models/lstm/v1/domain.rs"
            ]
        );
        // A `mod` whose file is not where the compiler looks (inside an inline module here)
        // still reaches any file of that name.
        let inline = run(&[("src/main.rs", "mod net {\n    pub mod layers;\n}\n"), ("src/net/layers.rs", "")]);
        assert_eq!(inline, ["src/main.rs", "src/net/layers.rs"]);
    }

    #[test]
    fn the_roots_and_modules_on_the_way_are_read_when_only_a_folder_is_linted() {
        // `cargo memlint src/ai/algorithms` in a crate with a library and a binary: `src/lib.rs`
        // declares `ai`, `src/ai/mod.rs` declares `algorithms`; neither is linted.
        let disk: HashMap<PathBuf, String> = [
            ("src/lib.rs", "pub mod ai;\n"),
            ("src/ai/mod.rs", "pub mod algorithms;\n"),
            ("src/ai/algorithms/mod.rs", "pub mod dqn;\n"),
            ("src/ai/algorithms/dqn.rs", ""),
            ("src/ai/algorithms/stale.rs", ""),
            ("src/bin/train.rs", "fn main() {}\n"),
        ]
        .iter()
        .map(|(p, t)| (Path::new("/c").join(p), (*t).to_string()))
        .collect();
        let linted: Vec<PathBuf> =
            ["src/ai/algorithms/mod.rs", "src/ai/algorithms/dqn.rs", "src/ai/algorithms/stale.rs", "src/bin/train.rs"]
                .iter()
                .map(|p| Path::new("/c").join(p))
                .collect();
        let kept: Vec<String> = compiled(Path::new("/c"), linted, &[], |f| disk.get(f).cloned())
            .into_iter()
            .map(|p| p.strip_prefix("/c").unwrap().display().to_string())
            .collect();
        assert_eq!(kept, ["src/ai/algorithms/mod.rs", "src/ai/algorithms/dqn.rs", "src/bin/train.rs"]);
    }

    #[test]
    fn several_declarations_on_a_line_are_read() {
        let kept = run(&[
            ("src/main.rs", "mod config; mod data; pub(in crate) mod loss; // mod stale;\nfn main() {}\n"),
            ("src/config.rs", ""),
            ("src/data.rs", ""),
            ("src/loss.rs", ""),
            ("src/stale.rs", ""),
        ]);
        assert_eq!(kept, ["src/main.rs", "src/config.rs", "src/data.rs", "src/loss.rs"]);
    }

    #[test]
    fn a_crate_without_a_root_among_the_files_is_kept_whole() {
        let kept = run(&[("src/agent.rs", ""), ("src/old.rs", "")]);
        assert_eq!(kept, ["src/agent.rs", "src/old.rs"]);
    }

    #[test]
    fn targets_cargo_toml_names_are_roots() {
        // `[[bin]] name = "train" path = "src/train.rs"` beside a library.
        let files = [
            ("src/lib.rs", "pub mod model;\n"),
            ("src/model.rs", ""),
            ("src/train.rs", "mod schedule;\n"),
            ("src/schedule.rs", ""),
            ("src/old.rs", ""),
        ];
        let kept = run_with_targets(&files, &["src/lib.rs", "src/train.rs"]);
        assert_eq!(kept, ["src/lib.rs", "src/model.rs", "src/train.rs", "src/schedule.rs"]);
        // Without the manifest's targets, `src/train.rs` looks like a file no `mod` declares.
        assert_eq!(run(&files), ["src/lib.rs", "src/model.rs"]);
    }

    #[test]
    fn binaries_under_src_bin_are_roots() {
        let kept = run(&[
            ("src/lib.rs", ""),
            ("src/bin/train.rs", "mod cli;\n"),
            ("src/bin/cli.rs", ""),
            ("src/unused.rs", ""),
        ]);
        assert_eq!(kept, ["src/lib.rs", "src/bin/train.rs", "src/bin/cli.rs"]);
    }
}
