//! The `cargo memlint` command line around the [`memlint_lint`] engine: which files to lint
//! ([`workspace`], from `cargo metadata`), configuration in `Cargo.toml` ([`config`]), baselines
//! ([`baseline`]) and the output formats for terminals, editors and CI ([`output`]).
//!
//! The engine itself has none of these dependencies, so that `#[mem_guard]` (which embeds it)
//! does not compile them.

pub mod baseline;
pub mod config;
pub mod modtree;
pub mod output;
pub mod workspace;
