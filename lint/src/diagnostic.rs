//! Findings and their miette rendering.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use miette::{LabeledSpan, NamedSource, SourceSpan};

use crate::source::SourceFile;

/// How seriously a finding is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Allow,
    Warn,
    Deny,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Warn => "warning",
            Level::Deny => "error",
        }
    }
}

/// A labelled span in a finding's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub span: Range<usize>,
    pub text: String,
}

impl Label {
    pub fn new(span: Range<usize>, text: impl Into<String>) -> Self {
        Self { span, text: text.into() }
    }
}

/// How safe a suggested edit is (rustc's applicability).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Applicability {
    /// Types and behaviour are unchanged except for the fix: apply without review.
    MachineApplicable,
    /// Likely right, but may not compile or may change behaviour: review.
    MaybeIncorrect,
}

/// A suggested edit: replace `span` (in the finding's file) with `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    /// What the edit does, imperative (`detach the value before storing it`).
    pub message: String,
    pub span: Range<usize>,
    pub replacement: String,
    pub applicability: Applicability,
}

/// One finding of one rule. Rules fill the message, labels, help and note; the context stamps
/// rule id, level, file and position.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Rule id, e.g. `accumulated_loss_tensor` (code `memlint::<rule>`).
    pub rule: &'static str,
    pub level: Level,
    /// What is wrong: lowercase, no trailing period.
    pub message: String,
    /// The file the primary label is in.
    pub file: Arc<SourceFile>,
    /// Where: the exact expression.
    pub primary: Label,
    /// The other ends of the reference-graph edge.
    pub secondary: Vec<Label>,
    /// What to do.
    pub help: Option<String>,
    /// Why.
    pub note: Option<String>,
    /// Places in other files (e.g. fields of an `Rc` cycle spread over modules).
    pub elsewhere: Vec<(PathBuf, usize, String)>,
    /// Suggested edits in this file.
    pub suggestions: Vec<Suggestion>,
    /// 1-based line of the primary label.
    pub line: usize,
    /// 1-based column (characters) of the primary label.
    pub column: usize,
}

impl Finding {
    /// `memlint::<rule>`.
    pub fn code(&self) -> String {
        format!("memlint::{}", self.rule)
    }

    /// Where the rule's documentation lives.
    pub fn url(&self) -> String {
        crate::rules::docs_url(self.rule)
    }

    /// A miette diagnostic borrowing this finding.
    pub fn diagnostic(&self) -> FindingDiagnostic<'_> {
        let source = NamedSource::new(self.file.path.display().to_string(), self.file.text.clone());
        FindingDiagnostic { finding: self, source }
    }
}

/// Adapter implementing [`miette::Diagnostic`] for a [`Finding`].
#[derive(Debug)]
pub struct FindingDiagnostic<'a> {
    finding: &'a Finding,
    source: NamedSource<Arc<str>>,
}

impl std::fmt::Display for FindingDiagnostic<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.finding.message)
    }
}

impl std::error::Error for FindingDiagnostic<'_> {}

impl miette::Diagnostic for FindingDiagnostic<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        Some(Box::new(self.finding.code()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.finding.level {
            Level::Deny => miette::Severity::Error,
            Level::Warn => miette::Severity::Warning,
            Level::Allow => miette::Severity::Advice,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        let f = self.finding;
        let mut parts: Vec<String> = Vec::new();
        if let Some(h) = &f.help {
            parts.push(h.clone());
        }
        if let Some(n) = &f.note {
            parts.push(format!("note: {n}"));
        }
        for (path, line, text) in &f.elsewhere {
            parts.push(format!("see {}:{line}: {text}", path.display()));
        }
        (!parts.is_empty()).then(|| Box::new(parts.join("\n")) as Box<dyn std::fmt::Display>)
    }

    fn url<'b>(&'b self) -> Option<Box<dyn std::fmt::Display + 'b>> {
        Some(Box::new(self.finding.url()))
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let f = self.finding;
        let to_span = |l: &Label| SourceSpan::from(l.span.start..l.span.end);
        let primary = LabeledSpan::new_primary_with_span(Some(f.primary.text.clone()), to_span(&f.primary));
        let rest = f.secondary.iter().map(move |l| LabeledSpan::new_with_span(Some(l.text.clone()), to_span(l)));
        Some(Box::new(std::iter::once(primary).chain(rest)))
    }
}
