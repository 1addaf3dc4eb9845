//! The rule trait and rule metadata.

use crate::context::Context;
use crate::diagnostic::Level;
use crate::frameworks::Spec;
use crate::model::FnModel;
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

/// Which functions a rule applies to: its framework gating, declared instead of checked inside
/// the rule.
#[derive(Debug, Clone, Copy)]
pub enum Applies {
    /// Every function, whatever its framework.
    Always,
    /// Functions of a known (detected or configured) framework with this capability.
    Known(fn(&Spec) -> bool),
}

impl Applies {
    /// Whether a function of framework `spec` (`known`: detected or configured, not guessed) is
    /// checked.
    pub fn to(self, spec: &Spec, known: bool) -> bool {
        match self {
            Applies::Always => true,
            Applies::Known(has) => known && has(spec),
        }
    }
}

/// A lint rule. Rules read the graphs built by the one traversal; they never walk the AST.
pub trait Rule: Sync + Send {
    fn meta(&self) -> &'static RuleMeta;

    /// The frameworks (by capability) whose functions this rule checks.
    fn applies(&self) -> Applies {
        Applies::Always
    }

    /// Called once per function with its reference graph.
    fn check_function(&self, _f: &FnModel, _cx: &mut Context<'_>) {}

    /// Called once per crate with the graph of its types.
    fn check_types(&self, _types: &TypeGraph, _cx: &mut Context<'_>) {}
}
