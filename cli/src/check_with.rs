//! `--check-with check|clippy`: runs `cargo check` or `cargo clippy` first, with memlint's
//! selection flags and message format, its output passed through unchanged (it writes straight
//! to memlint's stdout and stderr), so that rust-analyzer's single check command shows
//! compiler errors, clippy lints and memlint findings together.

use cargo_memlint::output::MessageFormat;

use crate::args::{CheckArgs, CheckWith};

/// Runs cargo; returns its exit code (101 when it cannot be started).
pub fn run(tool: CheckWith, args: &CheckArgs, format: MessageFormat) -> miette::Result<i32> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(&cargo);
    cmd.arg(match tool {
        CheckWith::Check => "check",
        CheckWith::Clippy => "clippy",
    });
    match format {
        // SARIF and GitHub annotations are memlint's own: cargo prints its human output on stderr.
        MessageFormat::Sarif | MessageFormat::Github => {}
        other => {
            cmd.arg(format!("--message-format={}", other.name()));
        }
    }
    if args.workspace {
        cmd.arg("--workspace");
    }
    for p in &args.packages {
        cmd.args(["-p", p]);
    }
    if let Some(m) = &args.manifest_path {
        cmd.arg("--manifest-path").arg(m);
    }
    cmd.args(args.targets.to_cargo_args());
    cmd.args(args.cargo.to_cargo_args());
    if args.quiet {
        cmd.arg("--quiet");
    }
    for _ in 0..args.verbose {
        cmd.arg("--verbose");
    }
    if let Some(color) = args.color {
        cmd.arg(format!("--color={}", color.name()));
    }
    let status = cmd.status().map_err(|e| {
        miette::miette!(code = "memlint::check_with", "cannot run `{} {tool:?}`: {e}", cargo.to_string_lossy())
    })?;
    Ok(status.code().unwrap_or(101))
}

/// The exit status of the whole run: memlint's own failure (2) first, then cargo's failure (its
/// own code, e.g. 101 for a compile error), then memlint's findings (1).
pub fn combine(cargo: i32, memlint: u8) -> u8 {
    if memlint == 2 {
        2
    } else if cargo != 0 {
        u8::try_from(cargo).unwrap_or(101)
    } else {
        memlint
    }
}
