//! Helpers for the pass/fail tests beside each rule: lint real source text as one file.

use std::path::Path;

use crate::{Framework, Level, Levels, Linter};

/// A linter with every rule on (the nursery too): these tests check what a rule finds.
fn linter(framework: Option<Framework>) -> Linter {
    let mut levels = Levels::default();
    levels.set("nursery", Level::Warn);
    Linter { framework, ..Linter::new(levels) }
}

/// How many findings of `rule` linting `src` gives, as a file of `framework` (`None`: detected).
pub(crate) fn count(rule: &str, framework: Option<&str>, src: &str) -> usize {
    let framework = framework.map(|f| Framework::from_name(f).expect("a registered framework"));
    let linter = linter(framework);
    linter.lint_text(Path::new("src/lib.rs"), src, None).iter().filter(|f| f.rule == rule).count()
}

/// How many findings of `rule` linting `src` gives (every rule on) for a crate whose manifest
/// puts it in burn's `era`.
pub(crate) fn count_in_era(rule: &str, src: &str, era: crate::BurnEra) -> usize {
    let linter = Linter { burn_era: era, ..linter(None) };
    linter.lint_text(Path::new("src/lib.rs"), src, None).iter().filter(|f| f.rule == rule).count()
}

/// `rule`'s findings linting `src` (framework detected).
fn findings(rule: &str, src: &str) -> Vec<crate::Finding> {
    linter(None).lint_text(Path::new("src/lib.rs"), src, None).into_iter().filter(|f| f.rule == rule).collect()
}

/// The messages of `rule`'s findings linting `src` (framework detected).
pub(crate) fn messages(rule: &str, src: &str) -> Vec<String> {
    findings(rule, src).into_iter().map(|f| f.message).collect()
}

/// The 1-based lines and messages of `rule`'s findings linting `src` (framework detected).
pub(crate) fn findings_at(rule: &str, src: &str) -> Vec<(usize, String)> {
    findings(rule, src).into_iter().map(|f| (f.line, f.message)).collect()
}

/// The 1-based lines of `rule`'s findings linting `src` (framework detected).
pub(crate) fn lines(rule: &str, src: &str) -> Vec<usize> {
    findings(rule, src).into_iter().map(|f| f.line).collect()
}

/// The notes naming other places (line, text) of `rule`'s findings linting `src`.
pub(crate) fn elsewhere(rule: &str, src: &str) -> Vec<(usize, String)> {
    findings(rule, src).into_iter().flat_map(|f| f.elsewhere.into_iter().map(|(_, line, text)| (line, text))).collect()
}

/// The secondary labels (1-based line, text) of `rule`'s findings linting `src`.
pub(crate) fn labels(rule: &str, src: &str) -> Vec<(usize, String)> {
    findings(rule, src)
        .into_iter()
        .flat_map(|f| f.secondary.iter().map(|l| (f.file.line(l.span.start), l.text.clone())).collect::<Vec<_>>())
        .collect()
}
