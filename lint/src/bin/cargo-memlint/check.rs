//! `cargo memlint [PATH]...`: lint and print findings.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use memlint_lint::output::{MessageFormat, human, json, short};
use memlint_lint::workspace::{self, Package, Workspace};
use memlint_lint::{Finding, Framework, Level, Levels, Linter};

use crate::args::{CheckArgs, Color, FrameworkArg};

/// A set of files linted together (one crate: the type graph spans them).
struct Group<'a> {
    package: Option<&'a Package>,
    files: Vec<PathBuf>,
    fallback: Option<Framework>,
}

pub fn run(args: &CheckArgs, levels: Levels) -> miette::Result<ExitCode> {
    let cwd = std::env::current_dir().map_err(|e| miette::miette!("cannot read the current directory: {e}"))?;
    let mut linter = Linter::new(levels);
    linter.framework = args.framework.map(|f| match f {
        FrameworkArg::Candle => Framework::Candle,
        FrameworkArg::Tch => Framework::Tch,
        FrameworkArg::Burn => Framework::Burn,
        FrameworkArg::Dfdx => Framework::Dfdx,
    });

    let ws;
    let mut groups: Vec<Group<'_>> = Vec::new();
    if args.paths.is_empty() {
        ws = Workspace::load(args.manifest_path.as_deref())?;
        for package in ws.select(args.workspace, &args.packages, &cwd)? {
            groups.push(Group { package: Some(package), files: package.files(), fallback: package.framework });
        }
    } else {
        let files = workspace::expand_paths(&args.paths)?;
        ws = match Workspace::load(args.manifest_path.as_deref()) {
            Ok(ws) => ws,
            Err(e) if args.manifest_path.is_some() => return Err(e.into()),
            Err(_) => Workspace { root: cwd.clone(), members: Vec::new(), root_package: None },
        };
        for file in files {
            let package = ws.package_of(&file);
            match groups.iter_mut().find(|g| g.package.map(|p| &p.id) == package.map(|p| &p.id)) {
                Some(g) => g.files.push(file),
                None => {
                    let fallback = package.and_then(|p| p.framework).or_else(|| workspace::framework_near(&file));
                    groups.push(Group { package, files: vec![file], fallback });
                }
            }
        }
    }

    let pool = rayon::ThreadPoolBuilder::new()
        .stack_size(memlint_lint::PARSE_STACK_SIZE)
        .build()
        .map_err(|e| miette::miette!("cannot start worker threads: {e}"))?;
    let mut file_count = 0;
    let mut results: Vec<(Option<&Package>, Vec<Finding>)> = Vec::new();
    for g in &groups {
        file_count += g.files.len();
        let relative: Vec<PathBuf> = g.files.iter().map(|f| relative_to(f, &cwd)).collect();
        let findings = pool.install(|| linter.lint_crate(&relative, g.fallback));
        results.push((g.package, findings));
    }

    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    };
    let width = terminal_width();
    let mut stdout = std::io::stdout().lock();
    let (mut warnings, mut errors) = (0usize, 0usize);
    for (package, findings) in &results {
        for f in findings {
            match f.level {
                Level::Deny => errors += 1,
                Level::Warn => warnings += 1,
                Level::Allow => continue,
            }
            let line = match args.message_format {
                MessageFormat::Human => human::render(f, human::Style { color, width, links: false }),
                MessageFormat::Short => short::render(f),
                MessageFormat::Json => {
                    let owner = match package {
                        Some(p) => p.owner(&f.file.path),
                        None => orphan_owner(&f.file.path),
                    };
                    json::render(f, &owner, &human::render(f, human::Style::plain()))
                }
            };
            if writeln!(stdout, "{line}").is_err() {
                // Closed pipe (`| head`): stop printing, keep the exit status.
                break;
            }
        }
    }
    drop(stdout);
    if args.message_format != MessageFormat::Json {
        eprintln!(
            "memlint: {} file{} checked, {warnings} warning{}, {errors} error{}",
            file_count,
            plural(file_count),
            plural(warnings),
            plural(errors)
        );
    }
    Ok(if errors > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// A stand-in owner for files outside any cargo package.
fn orphan_owner(path: &std::path::Path) -> json::Owner {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = abs.parent().unwrap_or(&abs);
    let name = abs.file_stem().map_or("unknown".to_string(), |s| s.to_string_lossy().replace('-', "_"));
    json::Owner {
        package_id: format!("path+file://{}#{name}@0.0.0", dir.display()),
        manifest_path: None,
        target_name: name,
        target_kind: vec!["lib".to_string()],
        src_path: abs.display().to_string(),
    }
}

fn relative_to(path: &std::path::Path, base: &std::path::Path) -> PathBuf {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    abs.strip_prefix(base).map(PathBuf::from).unwrap_or(abs)
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).unwrap_or(100)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
