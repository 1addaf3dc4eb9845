//! Robustness: lint every `.rs` file of the local cargo registry (`$CARGO_HOME/registry/src`)
//! with no panic and no stack overflow; unparsable and non-UTF-8 files must come back as
//! `parse_error` findings. Prints the figures.
//!
//!     cargo test --release -p memlint-lint --test registry_sweep -- --ignored --nocapture

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use memlint_lint::Linter;

#[test]
#[ignore = "reads the whole local cargo registry (minutes); run with --ignored"]
fn lint_the_whole_registry() {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cargo"));
    let root = home.join("registry/src");
    let files: Vec<PathBuf> = ignore::WalkBuilder::new(&root)
        .standard_filters(false)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()) && e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| e.into_path())
        .collect();
    assert!(!files.is_empty(), "no sources under {}", root.display());
    let bytes: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();

    let pool = rayon::ThreadPoolBuilder::new().stack_size(memlint_lint::PARSE_STACK_SIZE).build().unwrap();
    let mut levels = memlint_lint::Levels::default();
    levels.set("nursery", memlint_lint::Level::Warn);
    let linter = Linter::new(levels);
    let start = Instant::now();
    // One crate at a time (the type graph is per crate), as `cargo memlint` would.
    let mut by_crate: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for f in &files {
        let krate = f.strip_prefix(&root).ok().and_then(|r| r.iter().take(2).collect::<PathBuf>().into());
        by_crate.entry(krate.unwrap_or_default()).or_default().push(f.clone());
    }
    let mut per_rule: BTreeMap<&str, usize> = BTreeMap::new();
    let (mut not_utf8, mut unparsable, mut internal) = (0, 0, Vec::new());
    for crate_files in by_crate.values() {
        for f in pool.install(|| linter.lint_crate(crate_files, None)) {
            *per_rule.entry(f.rule).or_default() += 1;
            if f.rule != "parse_error" || !f.message.contains("UTF-8") {
                println!("  {}", memlint_lint::output::short::render(&f));
            }
            if f.rule == "parse_error" {
                if f.message.contains("UTF-8") {
                    not_utf8 += 1;
                } else if f.message.contains("internal error") {
                    internal.push(format!("{}: {}", f.file.path.display(), f.message));
                } else {
                    unparsable += 1;
                }
            }
        }
    }
    let elapsed = start.elapsed();
    let lines: usize =
        files.iter().filter_map(|f| std::fs::read(f).ok()).map(|b| b.iter().filter(|&&c| c == b'\n').count()).sum();
    println!(
        "registry sweep: {} crates, {} files, {} lines, {:.0} MiB",
        by_crate.len(),
        files.len(),
        lines,
        bytes as f64 / 1048576.0
    );
    println!("  time: {:.1}s on {} threads", elapsed.as_secs_f64(), pool.current_num_threads());
    println!("  not UTF-8: {not_utf8}, unparsable: {unparsable}, internal errors: {}", internal.len());
    println!("  findings by rule: {per_rule:?}");
    assert!(internal.is_empty(), "memlint panicked on:\n{}", internal.join("\n"));
}
