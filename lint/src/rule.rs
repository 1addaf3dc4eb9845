//! The rule trait and rule metadata.

use crate::context::Context;
use crate::diagnostic::Level;
use crate::graph::FnGraph;
use crate::type_graph::TypeGraph;

/// What `cargo memlint explain` prints and what the context stamps on findings.
#[derive(Debug)]
pub struct RuleMeta {
    /// snake_case id; the diagnostic code is `memlint::<id>`.
    pub id: &'static str,
    /// One line: what the rule finds.
    pub summary: &'static str,
    /// Markdown: what it does, why it is bad, example, use instead.
    pub docs: &'static str,
    pub default_level: Level,
}

/// A lint rule. Rules read the graphs built by the one traversal; they never walk the AST.
pub trait Rule: Sync + Send {
    fn meta(&self) -> &'static RuleMeta;

    /// Called once per function with its reference graph.
    fn check_function(&self, _f: &FnGraph, _cx: &mut Context<'_>) {}

    /// Called once per crate with the graph of its types.
    fn check_types(&self, _types: &TypeGraph, _cx: &mut Context<'_>) {}
}
