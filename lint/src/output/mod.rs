//! Output formats: `human` (miette), `short` (one line each), `json` (cargo's compiler-message).

pub mod human;
pub mod json;
pub mod short;

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MessageFormat {
    /// Rich diagnostics with source snippets.
    Human,
    /// One line per finding: `path:line:col: level[code]: message`.
    Short,
    /// One JSON object per line, in cargo's `compiler-message` shape.
    Json,
}
