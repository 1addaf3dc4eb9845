//! `cargo memlint`: finds memory leaks in machine-learning training loops from source.
//!
//! Works as a cargo subcommand (`cargo memlint …`, where cargo passes `memlint` as the first
//! argument) and when run directly (`cargo-memlint …`).

mod args;
mod check;
mod check_with;
mod explain;
mod fix;
mod lint_flags;
mod report;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use memlint_lint::Level;

fn main() -> ExitCode {
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == "memlint") {
        argv.remove(1);
    }
    let color = match args::Color::resolve(color_flag(&argv)) {
        Ok(color) => color,
        Err(e) => {
            eprintln!("{:?}", miette::miette!(code = "memlint::usage", "{e}"));
            return ExitCode::from(2);
        }
    };
    set_colors(color);
    let parsed = args::Cli::command()
        .after_help(args::after_help())
        .color(match color {
            args::Color::Auto => clap::ColorChoice::Auto,
            args::Color::Always => clap::ColorChoice::Always,
            args::Color::Never => clap::ColorChoice::Never,
        })
        .try_get_matches_from(argv)
        .and_then(|m| args::Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, matches) = match parsed {
        Ok(ok) => ok,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    match &cli.command {
        Some(args::Command::Explain(e)) => explain::run(e).unwrap_or_else(|report| {
            eprintln!("{report:?}");
            ExitCode::from(2)
        }),
        Some(args::Command::Report(r)) => report::run(r),
        None => ExitCode::from(check(&cli.check, &matches)),
    }
}

/// Lints (after `cargo check`/`clippy` with `--check-with`); returns the exit status.
fn check(args: &args::CheckArgs, matches: &clap::ArgMatches) -> u8 {
    let report = |report: miette::Report| {
        eprintln!("{report:?}");
        2
    };
    let cargo = match args.check_with {
        Some(tool) => {
            let format = check::Outputs::from_args(args).map(|o| o.stdout);
            match format.and_then(|f| check_with::run(tool, args, f)) {
                Ok(code) => Some(code),
                Err(e) => return report(e),
            }
        }
        None => None,
    };
    let memlint = levels(matches, &args.lint_flags).and_then(|levels| check::run(args, &levels)).unwrap_or_else(report);
    match cargo {
        Some(code) => check_with::combine(code, memlint),
        None => memlint,
    }
}

/// `-D`/`-W`/`-A` in command-line order (later ones win, as with rustc), then the lint flags
/// after `--`.
fn levels(matches: &clap::ArgMatches, after_dashes: &[String]) -> miette::Result<Vec<(String, Level)>> {
    let mut ordered: Vec<(usize, String, Level)> = Vec::new();
    for (id, level) in [("deny", Level::Deny), ("warn", Level::Warn), ("allow", Level::Allow)] {
        if let (Some(values), Some(indices)) = (matches.get_many::<String>(id), matches.indices_of(id)) {
            ordered.extend(indices.zip(values).map(|(i, v)| (i, v.clone(), level)));
        }
    }
    ordered.sort_by_key(|(i, _, _)| *i);
    let trailing = lint_flags::parse(after_dashes)
        .map_err(|e| miette::miette!(code = "memlint::usage", help = lint_flags::HELP, "{e}"))?;
    let mut levels = Vec::new();
    for (name, level) in ordered.into_iter().map(|(_, n, l)| (n, l)).chain(trailing) {
        if name != "warnings" && name != "nursery" && memlint_lint::rules::find(&name).is_none() {
            let known: Vec<&str> = memlint_lint::rules::all_meta().iter().map(|m| m.id).collect();
            return Err(miette::miette!(
                code = "memlint::unknown_rule",
                help = format!(
                    "known rules: {}, or `warnings` for all of them, or `nursery` for those off by default",
                    known.join(", ")
                ),
                "no rule named `{name}`"
            ));
        }
        levels.push((name, level));
    }
    Ok(levels)
}

/// `--color WHEN` or `--color=WHEN` before `--`, read ahead of parsing so that clap's own
/// messages follow it too.
fn color_flag(argv: &[std::ffi::OsString]) -> Option<args::Color> {
    use clap::ValueEnum;
    let args: Vec<&str> = argv.iter().map_while(|a| a.to_str()).take_while(|a| *a != "--").collect();
    let value = args.iter().enumerate().rev().find_map(|(i, a)| match a.strip_prefix("--color") {
        Some(v) if v.starts_with('=') => Some(&v[1..]),
        Some("") => args.get(i + 1).copied(),
        _ => None,
    })?;
    args::Color::from_str(value, true).ok()
}

/// Colour of memlint's own error reports on stderr.
fn set_colors(color: args::Color) {
    use std::io::IsTerminal;
    let on = color.enabled(std::io::stderr().is_terminal());
    let _ = miette::set_hook(Box::new(move |_| Box::new(miette::MietteHandlerOpts::new().color(on).build())));
}
