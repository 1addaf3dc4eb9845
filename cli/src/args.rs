//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
Exit status:
  0  no finding at deny level
  1  at least one finding at deny level (see -D)
  2  memlint itself failed (bad arguments, unreadable workspace, missing path, bad config)
  With --check-with, cargo's own failure status (101 for a compile error) comes before 1.

Rules (all warn by default): accumulated_loss_tensor, retained_graph_output, missing_zero_grad,
rc_cycle, no_grad_guard_dropped, eval_without_no_grad, leaky_trace_in_loop,
grads_allocated_in_loop, param_rebuilt_in_loop, autodiff_forward_without_backward.
`cargo memlint explain <rule>` prints one.";

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

    /// Output format for stdout: human, short, json, json-diagnostic-rendered-ansi,
    /// json-diagnostic-short, sarif, github. Repeatable and comma-separated like cargo's: the json
    /// modifiers combine with `json`; other formats go to files with `--output-file`.
    #[arg(long, value_name = "FMT", action = clap::ArgAction::Append)]
    pub message_format: Vec<String>,

    /// Also write the findings in FORMAT to PATH (repeatable), e.g. `--output-file sarif=memlint.sarif`.
    #[arg(long, value_name = "FORMAT=PATH", action = clap::ArgAction::Append)]
    pub output_file: Vec<String>,

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

    /// Apply machine-applicable suggestions to the files, then lint again and report what remains.
    #[arg(long, help_heading = "Fixes")]
    pub fix: bool,

    /// With `--fix`: also fix when the git work tree has uncommitted changes (or is no git repository).
    #[arg(long, requires = "fix", help_heading = "Fixes")]
    pub allow_dirty: bool,

    /// Report only findings that are not recorded in this baseline file.
    #[arg(long, value_name = "FILE", help_heading = "Baselines")]
    pub baseline: Option<PathBuf>,

    /// Record the current findings in this baseline file (and report them as usual).
    #[arg(long, value_name = "FILE", help_heading = "Baselines")]
    pub write_baseline: Option<PathBuf>,

    /// First run `cargo check` or `cargo clippy` with the same message format, passing its
    /// output through unchanged, then lint: one command for rust-analyzer's check.
    #[arg(long, value_enum, value_name = "TOOL")]
    pub check_with: Option<CheckWith>,

    #[command(flatten)]
    pub cargo: CargoCompat,
}

/// Flags that cargo and rust-analyzer pass to a check command. memlint reads source without
/// building, so they do not change what it lints; `--check-with` passes them on to cargo.
#[derive(Debug, Args, Default)]
#[command(next_help_heading = "Accepted for cargo compatibility (passed on by --check-with, else no effect)")]
pub struct CargoCompat {
    /// Space or comma separated features to activate.
    #[arg(short = 'F', long, value_name = "FEATURES", action = clap::ArgAction::Append)]
    pub features: Vec<String>,
    /// Activate all features.
    #[arg(long)]
    pub all_features: bool,
    /// Do not activate the `default` feature.
    #[arg(long)]
    pub no_default_features: bool,
    /// Build for the target triple.
    #[arg(long, value_name = "TRIPLE", action = clap::ArgAction::Append)]
    pub target: Vec<String>,
    /// Directory for all generated artifacts.
    #[arg(long, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// Check all targets (memlint always lints every target's files).
    #[arg(long)]
    pub all_targets: bool,
    /// Check only this package's library.
    #[arg(long)]
    pub lib: bool,
    /// Check all binaries.
    #[arg(long)]
    pub bins: bool,
    /// Check only the named binary.
    #[arg(long, value_name = "NAME", action = clap::ArgAction::Append)]
    pub bin: Vec<String>,
    /// Check all examples.
    #[arg(long)]
    pub examples: bool,
    /// Check only the named example.
    #[arg(long, value_name = "NAME", action = clap::ArgAction::Append)]
    pub example: Vec<String>,
    /// Check all tests.
    #[arg(long)]
    pub tests: bool,
    /// Check only the named test target.
    #[arg(long, value_name = "NAME", action = clap::ArgAction::Append)]
    pub test: Vec<String>,
    /// Check all benches.
    #[arg(long)]
    pub benches: bool,
    /// Check only the named bench target.
    #[arg(long, value_name = "NAME", action = clap::ArgAction::Append)]
    pub bench: Vec<String>,
    /// Do not stop at the first error.
    #[arg(long)]
    pub keep_going: bool,
    /// Check artifacts in release mode.
    #[arg(short = 'r', long)]
    pub release: bool,
    /// Check artifacts with the named profile.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Number of parallel jobs.
    #[arg(short = 'j', long, value_name = "N", allow_hyphen_values = true)]
    pub jobs: Option<String>,
    /// Assert that `Cargo.lock` will remain unchanged.
    #[arg(long)]
    pub locked: bool,
    /// Run without accessing the network.
    #[arg(long)]
    pub offline: bool,
    /// Equivalent to `--locked --offline`.
    #[arg(long)]
    pub frozen: bool,
    /// Unstable (nightly-only) flags to cargo.
    #[arg(short = 'Z', value_name = "FLAG", action = clap::ArgAction::Append)]
    pub unstable: Vec<String>,
}

impl CargoCompat {
    /// The flags again, as cargo takes them.
    pub fn to_cargo_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut flag = |on: bool, name: &str| {
            if on {
                out.push(name.to_string());
            }
        };
        flag(self.all_features, "--all-features");
        flag(self.no_default_features, "--no-default-features");
        flag(self.all_targets, "--all-targets");
        flag(self.lib, "--lib");
        flag(self.bins, "--bins");
        flag(self.examples, "--examples");
        flag(self.tests, "--tests");
        flag(self.benches, "--benches");
        flag(self.keep_going, "--keep-going");
        flag(self.release, "--release");
        flag(self.locked, "--locked");
        flag(self.offline, "--offline");
        flag(self.frozen, "--frozen");
        let valued: [(&str, &[String]); 7] = [
            ("--features", &self.features),
            ("--target", &self.target),
            ("--bin", &self.bin),
            ("--example", &self.example),
            ("--test", &self.test),
            ("--bench", &self.bench),
            ("-Z", &self.unstable),
        ];
        for (name, values) in valued {
            for v in values {
                out.push(name.to_string());
                out.push(v.clone());
            }
        }
        for (name, value) in [
            ("--target-dir", self.target_dir.as_ref().map(|d| d.display().to_string())),
            ("--profile", self.profile.clone()),
            ("--jobs", self.jobs.clone()),
        ] {
            if let Some(v) = value {
                out.push(name.to_string());
                out.push(v);
            }
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckWith {
    /// `cargo check`
    Check,
    /// `cargo clippy`
    Clippy,
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
