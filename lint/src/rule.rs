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
    /// The level the rule reports at once it is on.
    pub default_level: Level,
    /// Whether the rule is on by default ([`Group::Stable`]) or only when asked for
    /// ([`Group::Nursery`], `-W nursery`).
    pub group: Group,
}

/// Whether a rule is on by default.
///
/// A rule is **stable** when its findings on the tuning half of the evaluation corpus
/// (`eval/`) were measured at 90 % precision or better with at least one true finding; until
/// then it is in the **nursery**: off by default, on with `-W nursery` (or by its id), as
/// clippy's nursery lints are. `docs/rules.md` gives each rule's evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// On by default.
    Stable,
    /// Off by default; `-W nursery` turns every nursery rule on.
    Nursery,
}

impl Group {
    /// The name used on the command line and in configuration (`nursery`), or `None`.
    pub fn name(self) -> Option<&'static str> {
        match self {
            Group::Stable => None,
            Group::Nursery => Some("nursery"),
        }
    }
}

impl RuleMeta {
    /// The level before any override: allow for a nursery rule.
    pub fn initial_level(&self) -> Level {
        match self.group {
            Group::Stable => self.default_level,
            Group::Nursery => Level::Allow,
        }
    }
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
