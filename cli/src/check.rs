//! `cargo memlint [PATH]...`: lint and print findings.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use cargo_memlint::baseline::{self, Baseline, BaselineEntry};
use cargo_memlint::config::{Config, Table};
use cargo_memlint::output::{self, Entry, MessageFormat, RunInfo, human, json};
use cargo_memlint::workspace::{self, Workspace};
use memlint_lint::{BurnEra, Finding, Framework, Level, Levels, Linter};

use crate::args::{CheckArgs, Color};

/// A set of files linted together (one crate: the type graph spans them).
struct Group {
    /// Index into the workspace's members.
    package: Option<usize>,
    files: Vec<PathBuf>,
    fallback: Option<Framework>,
    /// The burn release era the package's requirement allows (the nearest `Cargo.toml`'s for
    /// files outside the loaded workspace).
    burn_era: BurnEra,
}

/// The findings of one run, with what is needed to print them.
pub struct Outcome {
    pub ws: Workspace,
    pub cwd: PathBuf,
    /// Findings per package (index into `ws.members`, or none for files outside any package).
    pub results: Vec<(Option<usize>, Vec<Finding>)>,
    pub file_count: usize,
}

/// Where the output goes: one format on stdout, others into files.
pub struct Outputs {
    pub stdout: MessageFormat,
    pub files: Vec<(MessageFormat, PathBuf)>,
}

impl Outputs {
    pub fn from_args(args: &CheckArgs) -> miette::Result<Self> {
        let stdout = MessageFormat::parse_list(args.message_format.iter().map(String::as_str))
            .map_err(format_error)?
            .unwrap_or(MessageFormat::Human);
        let mut files = Vec::new();
        for spec in &args.output_file {
            let Some((format, path)) = spec.split_once('=') else {
                return Err(miette::miette!(
                    code = "memlint::usage",
                    help = "write it as FORMAT=PATH, e.g. `--output-file sarif=memlint.sarif`",
                    "`--output-file {spec}` names no format"
                ));
            };
            let format = MessageFormat::parse_list([format])
                .map_err(format_error)?
                .ok_or_else(|| miette::miette!(code = "memlint::usage", "`--output-file {spec}` names no format"))?;
            if path.is_empty() {
                return Err(miette::miette!(code = "memlint::usage", "`--output-file {spec}` names no file"));
            }
            files.push((format, PathBuf::from(path)));
        }
        Ok(Self { stdout, files })
    }
}

fn format_error(e: output::FormatError) -> miette::Report {
    let names: Vec<&str> = output::FORMAT_NAMES.iter().map(|(n, _)| *n).collect();
    miette::miette!(
        code = "memlint::usage",
        help = format!("formats: {}; write other formats to files with `--output-file FORMAT=PATH`", names.join(", ")),
        "{e}"
    )
}

/// Lints what the arguments select, applying config and suppressions.
pub fn lint(args: &CheckArgs, cli_levels: &[(String, Level)], pool: &rayon::ThreadPool) -> miette::Result<Outcome> {
    let cwd = std::env::current_dir().map_err(|e| miette::miette!("cannot read the current directory: {e}"))?;
    let mut groups: Vec<Group> = Vec::new();
    let selection = args.targets.selection();
    let ws = if args.paths.is_empty() {
        let ws = Workspace::load(args.manifest_path.as_deref())?;
        let names = package_names(&ws, &args.packages);
        let selected = ws.select(args.workspace, &names, &cwd)?;
        selection.check(&selected)?;
        let selected: Vec<String> = selected.iter().map(|p| p.id.clone()).collect();
        for id in selected {
            let i = ws.members.iter().position(|p| p.id == id).expect("selected from members");
            let package = &ws.members[i];
            let files = package.files_for(&selection);
            if !files.is_empty() {
                groups.push(Group { package: Some(i), files, fallback: package.framework, burn_era: package.burn_era });
            }
        }
        ws
    } else {
        if !selection.is_all() {
            return Err(miette::miette!(
                code = "memlint::usage",
                help = "drop the paths to lint the package's targets, or drop the target flags",
                "target selection flags (`--lib`, `--bin`, …) choose targets of packages, not files given by path"
            ));
        }
        let files = workspace::expand_paths(&args.paths)?;
        let ws = match Workspace::load(args.manifest_path.as_deref()) {
            Ok(ws) => ws,
            Err(e) if args.manifest_path.is_some() => return Err(e.into()),
            Err(_) => Workspace { root: cwd.clone(), members: Vec::new(), root_package: None },
        };
        // Files outside the loaded workspace are grouped by the nearest `Cargo.toml` above them
        // (one crate each), so the call graph, type graph and framework fallback are per crate.
        let mut outside: Vec<(Option<PathBuf>, usize)> = Vec::new();
        for file in files {
            let package = ws.package_of(&file).and_then(|p| ws.members.iter().position(|m| m.id == p.id));
            let index = match package {
                Some(_) => groups.iter().position(|g| g.package == package),
                None => {
                    let root = workspace::manifest_dir_near(&file);
                    outside.iter().find(|(r, _)| *r == root).map(|(_, i)| *i).or_else(|| {
                        outside.push((root, groups.len()));
                        None
                    })
                }
            };
            match index {
                Some(i) => groups[i].files.push(file),
                None => {
                    let fallback =
                        package.and_then(|i| ws.members[i].framework).or_else(|| workspace::framework_near(&file));
                    let burn_era = match package {
                        Some(i) => ws.members[i].burn_era,
                        None => workspace::burn_era_near(&file),
                    };
                    groups.push(Group { package, files: vec![file], fallback, burn_era });
                }
            }
        }
        ws
    };

    // Files under a crate's `src/` that no `mod` reaches are never compiled: leave them out.
    for g in &mut groups {
        let root = match g.package {
            Some(i) => Some(ws.members[i].root().to_path_buf()),
            None => g.files.first().and_then(|f| workspace::manifest_dir_near(f)),
        };
        let Some(root) = root else { continue };
        let absolute = |f: &PathBuf| if f.is_absolute() { f.clone() } else { cwd.join(f) };
        let all: Vec<PathBuf> = g.files.iter().map(absolute).collect();
        let targets: Vec<PathBuf> = g
            .package
            .map(|i| ws.members[i].targets.iter().map(|t| absolute(&t.src_path)).collect())
            .unwrap_or_default();
        let kept: std::collections::HashSet<PathBuf> =
            cargo_memlint::modtree::compiled(&absolute(&root), all, &targets, |f| std::fs::read_to_string(f).ok())
                .into_iter()
                .collect();
        let before = g.files.len();
        let left_out: Vec<PathBuf> = g.files.iter().filter(|f| !kept.contains(&absolute(f))).cloned().collect();
        g.files.retain(|f| kept.contains(&absolute(f)));
        if args.verbose > 0 && g.files.len() < before {
            eprintln!(
                "memlint: {} file(s) under {} left out: no `mod` declares them",
                before - g.files.len(),
                root.display()
            );
            // `-vv`: which ones.
            if args.verbose > 1 {
                for f in &left_out {
                    eprintln!("memlint:   {}", f.display());
                }
            }
        }
    }

    // Config: the workspace's table, then the package's, then the command line.
    let ws_config = if ws.members.is_empty() {
        None
    } else {
        Config::load(&ws.root.join("Cargo.toml"), Table::Workspace).map_err(|e| miette::Report::new(*e))?
    };
    let cli_framework = args.framework;

    let mut file_count = 0;
    let mut results = Vec::new();
    for g in &groups {
        let pkg_config = match g.package {
            Some(i) => {
                Config::load(&ws.members[i].manifest_path, Table::Package).map_err(|e| miette::Report::new(*e))?
            }
            None => None,
        };
        let configs: Vec<&Config> = ws_config.iter().chain(pkg_config.iter()).collect();
        let mut levels = Levels::default();
        for c in &configs {
            for (name, level) in &c.levels {
                levels.set(name, *level);
            }
        }
        for (name, level) in cli_levels {
            levels.set(name, *level);
        }
        let mut linter = Linter::new(levels.clone());
        linter.framework = cli_framework.or_else(|| configs.iter().rev().find_map(|c| c.framework));
        linter.burn_era = g.burn_era;
        linter.binary = g.package.is_some_and(|i| !ws.members[i].has_library());
        let files: Vec<PathBuf> =
            g.files.iter().filter(|f| !configs.iter().any(|c| c.excludes(f))).map(|f| relative_to(f, &cwd)).collect();
        file_count += files.len();
        if args.verbose > 0 {
            eprintln!("{}", describe(g, &ws, &files, linter.framework));
        }
        // The workspace members this package depends on by path (a sibling crate of agents) and
        // those that depend on it (the trainer that calls its `update_on_batch` once per batch)
        // are read for the call graph: calls into them and from them are followed, as within
        // one crate. What is found in them is reported in their own group.
        let mut context: Vec<PathBuf> = match g.package {
            Some(i) => groups
                .iter()
                .filter(|o| {
                    o.package.is_some_and(|j| {
                        let (me, other) = (&ws.members[i], &ws.members[j]);
                        j != i && (me.path_deps.contains(&other.name) || other.path_deps.contains(&me.name))
                    })
                })
                .flat_map(|o| o.files.iter().map(|f| relative_to(f, &cwd)))
                .collect(),
            None => Vec::new(),
        };
        // Files given by path inside a package are read with the rest of the package (its type
        // aliases, the callers that instantiate its generic functions): what a path selects is
        // reported, what the crate declares elsewhere is known.
        if !args.paths.is_empty()
            && let Some(i) = g.package
        {
            let member = &ws.members[i];
            let absolute = |f: &PathBuf| if f.is_absolute() { f.clone() } else { cwd.join(f) };
            let targets: Vec<PathBuf> = member.targets.iter().map(|t| absolute(&t.src_path)).collect();
            let given: std::collections::HashSet<PathBuf> = g.files.iter().map(absolute).collect();
            let rest: Vec<PathBuf> = member.files().iter().map(absolute).filter(|f| !given.contains(f)).collect();
            let compiled =
                cargo_memlint::modtree::compiled(&absolute(&member.root().to_path_buf()), rest, &targets, |f| {
                    std::fs::read_to_string(f).ok()
                });
            context.extend(compiled.iter().map(|f| relative_to(f, &cwd)));
        }
        // Suppression comments and levels are applied by the engine itself.
        let findings = pool.install(|| linter.lint_crate_with(&files, &context, g.fallback));
        results.push((g.package, findings));
    }
    Ok(Outcome { ws, cwd, results, file_count })
}

/// `-v`: one line per group of files linted together.
fn describe(g: &Group, ws: &Workspace, files: &[PathBuf], framework: Option<Framework>) -> String {
    let what = match g.package {
        Some(i) => format!("package `{}`", ws.members[i].name),
        None => format!("{} (no package)", files.first().map_or(String::new(), |f| f.display().to_string())),
    };
    let framework = match framework.or(g.fallback) {
        Some(f) if framework.is_some() => format!("framework {} (set)", f.name()),
        Some(f) => format!("framework detected per file, else {} (dependencies)", f.name()),
        None => "framework detected per file".to_string(),
    };
    format!("memlint: linting {what}: {} file{}, {framework}", files.len(), plural(files.len()))
}

/// Maps `-p` package id specs (as rust-analyzer passes them: `path+file:///…#name@0.1.0`,
/// `name@0.1.0`, or a plain name) to member names; unknown ones are kept for the error.
fn package_names(ws: &Workspace, specs: &[String]) -> Vec<String> {
    specs
        .iter()
        .map(|spec| {
            if let Some(p) = ws.members.iter().find(|p| &p.id == spec) {
                return p.name.clone();
            }
            let (url, fragment) = match spec.split_once('#') {
                Some((u, f)) => (Some(u), f),
                None if spec.contains("://") => (Some(spec.as_str()), ""),
                None => (None, spec.as_str()),
            };
            let name = fragment.split('@').next().unwrap_or("");
            // `…#0.1.0`: the fragment is only a version; the name is the URL's last segment.
            let name = if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                url.and_then(|u| u.trim_end_matches('/').rsplit('/').next()).unwrap_or(name)
            } else {
                name
            };
            if let Some(dir) = url.and_then(|u| u.split_once("file://")).map(|(_, path)| PathBuf::from(path))
                && let Some(p) = ws.members.iter().find(|p| p.root() == dir)
            {
                return p.name.clone();
            }
            ws.members
                .iter()
                .find(|p| p.name == name || p.name.replace('-', "_") == name.replace('-', "_"))
                .map_or_else(|| spec.clone(), |p| p.name.clone())
        })
        .collect()
}

/// Lints, applies the baseline, prints. Returns the exit status.
pub fn run(args: &CheckArgs, cli_levels: &[(String, Level)]) -> miette::Result<u8> {
    let outputs = Outputs::from_args(args)?;
    let baseline = args.baseline.as_deref().map(Baseline::read).transpose()?;
    let pool = rayon::ThreadPoolBuilder::new()
        .stack_size(memlint_lint::PARSE_STACK_SIZE)
        .build()
        .map_err(|e| miette::miette!("cannot start worker threads: {e}"))?;

    let outcome = if args.fix { crate::fix::run(args, cli_levels, &pool)? } else { lint(args, cli_levels, &pool)? };
    report(args, &outputs, baseline.as_ref(), &outcome, &pool)
}

/// Prints an outcome in every requested format and returns the exit status.
pub fn report(
    args: &CheckArgs,
    outputs: &Outputs,
    baseline: Option<&Baseline>,
    outcome: &Outcome,
    pool: &rayon::ThreadPool,
) -> miette::Result<u8> {
    let color = Color::resolve(args.color)
        .map_err(|e| miette::miette!(code = "memlint::usage", "{e}"))?
        .enabled(std::io::stdout().is_terminal());
    let run = RunInfo {
        root: outcome.ws.root.clone(),
        cwd: outcome.cwd.clone(),
        style: human::Style { color, width: terminal_width(), links: false },
    };
    let all: Vec<(&Finding, Option<usize>)> = outcome
        .results
        .iter()
        .flat_map(|(p, fs)| fs.iter().filter(|f| f.level != Level::Allow).map(move |f| (f, *p)))
        .collect();
    let findings: Vec<&Finding> = all.iter().map(|(f, _)| *f).collect();
    // Fingerprints re-parse the files with findings: only when a baseline or SARIF needs them.
    let needed = baseline.is_some()
        || args.write_baseline.is_some()
        || std::iter::once(outputs.stdout)
            .chain(outputs.files.iter().map(|(f, _)| *f))
            .any(|f| f == MessageFormat::Sarif);
    let fingerprints = if needed {
        pool.install(|| baseline::fingerprints(&findings, |p| run.root_relative(p)))
    } else {
        vec![String::new(); findings.len()]
    };

    if let Some(path) = &args.write_baseline {
        let entries = all
            .iter()
            .zip(&fingerprints)
            .map(|((f, _), fp)| BaselineEntry {
                rule: f.rule.to_string(),
                file: run.root_relative(&f.file.path),
                line: f.line,
                message: f.message.clone(),
                fingerprint: fp.clone(),
            })
            .collect();
        Baseline::new(entries).write(path)?;
    }

    let known = baseline.map(|b| b.fingerprints()).unwrap_or_default();
    let mut hidden = 0;
    let mut entries = Vec::new();
    for ((f, package), fp) in all.iter().zip(&fingerprints) {
        if known.contains(fp.as_str()) {
            hidden += 1;
            continue;
        }
        let owner = match package {
            Some(i) => outcome.ws.members[*i].owner(&f.file.path),
            None => orphan_owner(&f.file.path),
        };
        entries.push(Entry { finding: f, owner, fingerprint: fp.clone() });
    }

    for (format, path) in &outputs.files {
        let mut buf = Vec::new();
        output::write(*format, &entries, &run, &mut buf).and_then(|()| std::fs::write(path, &buf)).map_err(|e| {
            miette::miette!(
                code = "memlint::output",
                "cannot write {} output to {}: {e}",
                format.name(),
                path.display()
            )
        })?;
    }
    let mut stdout = std::io::stdout().lock();
    output::write(outputs.stdout, &entries, &run, &mut stdout)
        .map_err(|e| miette::miette!(code = "memlint::output", "cannot write to stdout: {e}"))?;
    drop(stdout);

    let errors = entries.iter().filter(|e| e.finding.level == Level::Deny).count();
    let warnings = entries.iter().filter(|e| e.finding.level == Level::Warn).count();
    if !outputs.stdout.is_machine_readable() && !args.quiet {
        let n = outcome.file_count;
        let mut summary = format!(
            "memlint: {n} file{} checked, {warnings} warning{}, {errors} error{}",
            plural(n),
            plural(warnings),
            plural(errors)
        );
        if hidden > 0 {
            summary.push_str(&format!(" ({hidden} known from the baseline not shown)"));
        }
        eprintln!("{summary}");
    }
    Ok(if errors > 0 { 1 } else { 0 })
}

/// A stand-in owner for files outside any cargo package.
fn orphan_owner(path: &Path) -> json::Owner {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = abs.parent().unwrap_or(&abs);
    let name = abs.file_stem().map_or("unknown".to_string(), |s| s.to_string_lossy().replace('-', "_"));
    json::Owner {
        package_id: format!("path+file://{}#{name}@0.0.0", dir.display()),
        manifest_path: None,
        target_name: name,
        target_kind: vec!["lib".to_string()],
        src_path: abs.display().to_string(),
        edition: workspace::edition_near(&abs),
    }
}

pub fn relative_to(path: &Path, base: &Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    abs.strip_prefix(base).map(PathBuf::from).unwrap_or(abs)
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).unwrap_or(100)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
