//! Renderings of one finding shared by every front end: `human` (miette's graphical report) and
//! `short` (one line). The command line's machine formats (JSON, SARIF, GitHub) live in the
//! `cargo-memlint` crate.

pub mod human;
pub mod short;
