//! Command-line arguments.

use std::path::PathBuf;

use cargo_memlint::workspace::TargetSelection;
use clap::{Args, Parser, Subcommand, ValueEnum};
use memlint_lint::Framework;

/// The text after the options: exit codes and every diagnostic code, read from the registry.
pub fn after_help() -> String {
    let rules: Vec<String> = memlint_lint::rules::all()
        .iter()
        .map(|r| r.meta())
        .map(|m| match (m.group.name(), m.default_level) {
            (Some(group), _) => format!("{} ({group})", m.id),
            (None, memlint_lint::Level::Warn) => m.id.to_string(),
            (None, other) => format!("{} ({})", m.id, other.as_str()),
        })
        .collect();
    let others: Vec<&str> = memlint_lint::rules::all_meta()
        .iter()
        .map(|m| m.id)
        .filter(|id| !rules.iter().any(|r| r.split(' ').next() == Some(*id)))
        .collect();
    format!(
        "\
Exit status:
  0  no finding at deny level
  1  at least one finding at deny level (see -D)
  2  memlint itself failed (bad arguments, unreadable workspace, missing path, bad config)
  With --check-with, cargo's own failure status (101 for a compile error) comes before 1.

Lint levels may also follow `--`, as with clippy: `cargo memlint -- -D warnings`.

Rules ({} of them; each warns by default unless noted; `-W nursery` turns the nursery on):
{}
Also reported: {}.
`cargo memlint explain <rule>` prints one.",
        rules.len(),
        wrap(&rules, 98),
        others.join(", ")
    )
}

/// `items` joined by `, ` in lines of at most `width` characters, each indented by two spaces.
fn wrap(items: &[String], width: usize) -> String {
    let mut out = String::new();
    let mut line = String::from(" ");
    for (i, item) in items.iter().enumerate() {
        let piece = if i + 1 < items.len() { format!("{item},") } else { item.clone() };
        if line.len() + 1 + piece.len() > width && !line.trim().is_empty() {
            out.push_str(&line);
            out.push('\n');
            line = String::from(" ");
        }
        line.push(' ');
        line.push_str(&piece);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// Find memory leaks in machine-learning training loops (candle, tch, burn, dfdx) from source,
/// without compiling or running anything.
#[derive(Debug, Parser)]
#[command(name = "cargo-memlint", bin_name = "cargo memlint", version)]
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
    /// Render a JSON report of `#[mem_guard]`: summary on stdout, `--html` page, `--perfetto` trace.
    Report(ReportArgs),
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The JSON report (e.g. `target/memlint/train-1234-0.json`), schema version 1, 2 or 3.
    pub report: PathBuf,
    /// Also write a self-contained HTML page (timeline, projection, phases, lines) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write a Chrome trace-event JSON (Perfetto, chrome://tracing) to FILE.
    #[arg(long, value_name = "FILE")]
    pub perfetto: Option<PathBuf>,
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

    /// Colour in human output [default: `CARGO_TERM_COLOR`, else auto].
    #[arg(long, value_enum, value_name = "WHEN")]
    pub color: Option<Color>,

    /// No summary line or progress on stderr (findings are still printed).
    #[arg(short = 'q', long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Also print, for each package or group of files, how many files and which framework.
    #[arg(short = 'v', long, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Set a rule (or `warnings`: every rule) to deny: findings make the exit status 1.
    #[arg(short = 'D', long = "deny", value_name = "RULE")]
    pub deny: Vec<String>,

    /// Set a rule (or `warnings`, or `nursery`: the rules off by default) to warn.
    #[arg(short = 'W', long = "warn", value_name = "RULE")]
    pub warn: Vec<String>,

    /// Allow a rule (or `warnings`): do not report it.
    #[arg(short = 'A', long = "allow", value_name = "RULE")]
    pub allow: Vec<String>,

    /// Assume this framework for every file instead of detecting it.
    #[arg(long, value_name = "NAME", value_parser = framework_parser())]
    pub framework: Option<Framework>,

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
    pub targets: Targets,

    #[command(flatten)]
    pub cargo: CargoCompat,

    /// Lint levels after `--`, as clippy takes them: `-D RULE`, `-W RULE`, `-A RULE` (also
    /// `--deny=RULE`, `-DRULE`); they apply after the ones before `--`.
    #[arg(last = true, value_name = "LINT_FLAGS", allow_hyphen_values = true, help_heading = "Arguments")]
    pub lint_flags: Vec<String>,
}

/// Which targets of the selected packages to lint (all of them when none is named), as cargo
/// selects them; `--check-with` passes them on to cargo.
#[derive(Debug, Args, Default)]
#[command(next_help_heading = "Target selection")]
pub struct Targets {
    /// Lint only this package's library.
    #[arg(long)]
    pub lib: bool,
    /// Lint all binaries.
    #[arg(long)]
    pub bins: bool,
    /// Lint only the named binary.
    #[arg(long, value_name = "NAME", action = clap::ArgAction::Append)]
    pub bin: Vec<String>,
    /// Lint all examples.
    #[arg(long)]
    pub examples: bool,
    /// Lint only the named example.
    #[arg(long, value_name = "NAME", action = clap::ArgAction::Append)]
    pub example: Vec<String>,
    /// Lint all tests.
    #[arg(long)]
    pub tests: bool,
    /// Lint only the named test target.
    #[arg(long, value_name = "NAME", action = clap::ArgAction::Append)]
    pub test: Vec<String>,
    /// Lint all benches.
    #[arg(long)]
    pub benches: bool,
    /// Lint only the named bench target.
    #[arg(long, value_name = "NAME", action = clap::ArgAction::Append)]
    pub bench: Vec<String>,
    /// Lint all targets (the default).
    #[arg(long)]
    pub all_targets: bool,
}

impl Targets {
    /// The selection as the library takes it.
    pub fn selection(&self) -> TargetSelection {
        TargetSelection {
            lib: self.lib,
            bins: self.bins,
            bin: self.bin.clone(),
            examples: self.examples,
            example: self.example.clone(),
            tests: self.tests,
            test: self.test.clone(),
            benches: self.benches,
            bench: self.bench.clone(),
            all_targets: self.all_targets,
        }
    }

    /// The flags again, as cargo takes them.
    pub fn to_cargo_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (on, name) in [
            (self.all_targets, "--all-targets"),
            (self.lib, "--lib"),
            (self.bins, "--bins"),
            (self.examples, "--examples"),
            (self.tests, "--tests"),
            (self.benches, "--benches"),
        ] {
            if on {
                out.push(name.to_string());
            }
        }
        for (name, values) in
            [("--bin", &self.bin), ("--example", &self.example), ("--test", &self.test), ("--bench", &self.bench)]
        {
            for v in values {
                out.push(name.to_string());
                out.push(v.clone());
            }
        }
        out
    }
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
        flag(self.keep_going, "--keep-going");
        flag(self.release, "--release");
        flag(self.locked, "--locked");
        flag(self.offline, "--offline");
        flag(self.frozen, "--frozen");
        let valued: [(&str, &[String]); 3] =
            [("--features", &self.features), ("--target", &self.target), ("-Z", &self.unstable)];
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

impl Color {
    /// The name as cargo and `CARGO_TERM_COLOR` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Color::Auto => "auto",
            Color::Always => "always",
            Color::Never => "never",
        }
    }

    /// `--color`, else `CARGO_TERM_COLOR` (which cargo sets for subcommands it runs), else auto.
    /// An unknown value in the variable is an error, as cargo makes it.
    pub fn resolve(flag: Option<Color>) -> Result<Color, String> {
        if let Some(c) = flag {
            return Ok(c);
        }
        match std::env::var("CARGO_TERM_COLOR") {
            Err(_) => Ok(Color::Auto),
            Ok(v) => Color::from_str(v.trim(), true)
                .map_err(|_| format!("`CARGO_TERM_COLOR={v}` is not a colour choice (auto, always, never)")),
        }
    }

    /// Whether to colour a stream that is (or is not) a terminal; `NO_COLOR` turns auto off.
    pub fn enabled(self, terminal: bool) -> bool {
        match self {
            Color::Always => true,
            Color::Never => false,
            Color::Auto => terminal && std::env::var_os("NO_COLOR").is_none(),
        }
    }
}

/// `--framework NAME`: the names come from the engine's framework registry.
fn framework_parser() -> impl clap::builder::TypedValueParser<Value = Framework> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Framework::all().map(|f| f.name()))
        .try_map(|name| Framework::from_name(&name).ok_or_else(|| format!("unknown framework `{name}`")))
}
