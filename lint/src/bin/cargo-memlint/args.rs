//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use memlint_lint::output::MessageFormat;

const AFTER_HELP: &str = "\
Exit status:
  0  no finding at deny level
  1  at least one finding at deny level (see -D)
  2  memlint itself failed (bad arguments, unreadable workspace, missing path)

Rules: accumulated_loss_tensor, retained_graph_output, missing_zero_grad, rc_cycle
(all warn by default). `cargo memlint explain <rule>` prints a rule's documentation.";

/// Find memory leaks in machine-learning training loops (candle, tch, burn, dfdx) from source,
/// without compiling or running anything.
#[derive(Debug, Parser)]
#[command(name = "cargo-memlint", bin_name = "cargo memlint", version, after_help = AFTER_HELP)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub check: CheckArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the documentation of a rule.
    Explain(ExplainArgs),
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Rule id, e.g. `accumulated_loss_tensor` (or `memlint::accumulated_loss_tensor`).
    pub rule: String,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files or folders to lint instead of the package's targets.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Path to Cargo.toml.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,

    /// Lint every package in the workspace.
    #[arg(long)]
    pub workspace: bool,

    /// Package(s) to lint.
    #[arg(short = 'p', long = "package", value_name = "SPEC")]
    pub packages: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human, value_name = "FMT")]
    pub message_format: MessageFormat,

    /// Colour in human output.
    #[arg(long, value_enum, default_value_t = Color::Auto, value_name = "WHEN")]
    pub color: Color,

    /// Set a rule (or `warnings`: every rule) to deny: findings make the exit status 1.
    #[arg(short = 'D', long = "deny", value_name = "RULE")]
    pub deny: Vec<String>,

    /// Set a rule (or `warnings`) to warn.
    #[arg(short = 'W', long = "warn", value_name = "RULE")]
    pub warn: Vec<String>,

    /// Allow a rule (or `warnings`): do not report it.
    #[arg(short = 'A', long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,

    /// Assume this framework for every file instead of detecting it.
    #[arg(long, value_enum, value_name = "NAME")]
    pub framework: Option<FrameworkArg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FrameworkArg {
    Candle,
    Tch,
    Burn,
    Dfdx,
}
