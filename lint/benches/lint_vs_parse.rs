//! Lint time against bare `syn` parse time on the same real files, measured side by side.
//!
//! Default corpus: the newest candle-core, candle-nn, burn-core, dfdx and tch sources in the
//! local cargo registry (`cargo fetch` a crate that depends on them first). Override with
//! `MEMLINT_BENCH_DIRS=dir1:dir2`. Rounds interleave the three measurements and the table shows
//! medians, so machine noise hits all of them alike.
//!
//!     cargo bench -p memlint-lint --bench lint_vs_parse

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memlint_lint::{Linter, SourceFile};

const ROUNDS: usize = 7;

fn registry_dirs() -> Vec<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"));
    let mut dirs = Vec::new();
    let Ok(indexes) = std::fs::read_dir(home.join("registry/src")) else { return dirs };
    let mut all: Vec<PathBuf> = indexes
        .flatten()
        .flat_map(|i| std::fs::read_dir(i.path()).into_iter().flatten().flatten().map(|e| e.path()))
        .collect();
    all.sort();
    for krate in ["candle-core", "candle-nn", "burn-core", "dfdx", "tch"] {
        // The newest version: the last `krate-<digit>…` in sorted order.
        if let Some(d) = all.iter().rev().find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(krate).and_then(|r| r.strip_prefix('-')))
                .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
        }) {
            dirs.push(d.clone());
        }
    }
    dirs
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let dirs: Vec<PathBuf> = match std::env::var("MEMLINT_BENCH_DIRS") {
        Ok(s) => s.split(':').map(PathBuf::from).collect(),
        Err(_) => registry_dirs(),
    };
    let mut paths = Vec::new();
    for d in &dirs {
        rust_files(d, &mut paths);
    }
    let files: Vec<Arc<SourceFile>> =
        paths.iter().filter_map(|p| std::fs::read_to_string(p).ok().map(|t| Arc::new(SourceFile::new(p, t)))).collect();
    if files.is_empty() {
        eprintln!(
            "no sources found: `cargo fetch` candle-core, candle-nn, burn-core, dfdx and tch, or set MEMLINT_BENCH_DIRS"
        );
        std::process::exit(1);
    }
    let bytes: usize = files.iter().map(|f| f.text.len()).sum();
    let lines: usize = files.iter().map(|f| f.line_count()).sum();
    println!("corpus: {} files, {} lines, {:.1} MiB from", files.len(), lines, bytes as f64 / 1048576.0);
    for d in &dirs {
        println!("  {}", d.display());
    }

    let linter = Linter::default();
    // One pass of one measurement, for instruction counting under `valgrind --tool=callgrind`
    // (repeatable whatever else the machine is doing).
    match std::env::var("MEMLINT_BENCH_MODE").as_deref() {
        // Both on a pool's worker thread, as `lint_sources` parses: glibc gives other threads an
        // allocator arena of their own, whose bookkeeping costs more than the main thread's (a
        // parse on the main thread counted about 2.7 % fewer instructions than the same parse
        // inside the linter).
        Ok("parse") => {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            pool.install(|| {
                for f in &files {
                    std::hint::black_box(syn::parse_file(&f.text).ok());
                    proc_macro2::extra::invalidate_current_thread_spans();
                }
            });
            return;
        }
        Ok("lint") => {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            std::hint::black_box(pool.install(|| linter.lint_sources(&files, None)));
            return;
        }
        _ => {}
    }
    let threads = rayon::current_num_threads();
    let one_thread =
        rayon::ThreadPoolBuilder::new().num_threads(1).stack_size(memlint_lint::PARSE_STACK_SIZE).build().unwrap();
    let all_threads = rayon::ThreadPoolBuilder::new().stack_size(memlint_lint::PARSE_STACK_SIZE).build().unwrap();
    let (mut parse, mut lint1, mut lintn) = (Vec::new(), Vec::new(), Vec::new());
    let mut findings = 0;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        one_thread.install(|| {
            for f in &files {
                let parsed = syn::parse_file(&f.text);
                std::hint::black_box(&parsed);
                drop(parsed);
                proc_macro2::extra::invalidate_current_thread_spans();
            }
        });
        parse.push(t.elapsed());

        let t = Instant::now();
        findings = one_thread.install(|| linter.lint_sources(&files, None).len());
        lint1.push(t.elapsed());

        let t = Instant::now();
        all_threads.install(|| std::hint::black_box(linter.lint_sources(&files, None)));
        lintn.push(t.elapsed());
    }
    let (p, l1, ln) = (median(parse), median(lint1), median(lintn));
    println!();
    println!("{:<40} {:>12} {:>14}", "measurement (median of 7)", "time", "ratio to parse");
    println!("{:<40} {:>10.1}ms {:>14.2}", "syn::parse_file, 1 thread", p.as_secs_f64() * 1e3, 1.0);
    println!(
        "{:<40} {:>10.1}ms {:>14.2}",
        "memlint (parse+graphs+rules), 1 thread",
        l1.as_secs_f64() * 1e3,
        l1.as_secs_f64() / p.as_secs_f64()
    );
    println!(
        "{:<40} {:>10.1}ms {:>14.2}",
        format!("memlint, {threads} threads"),
        ln.as_secs_f64() * 1e3,
        ln.as_secs_f64() / p.as_secs_f64()
    );
    println!("\nfindings on the corpus: {findings}");
}
