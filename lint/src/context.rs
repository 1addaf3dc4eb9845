//! Where rules report: the context stamps rule id, level and position on each finding.

use std::ops::Range;
use std::sync::Arc;

use crate::diagnostic::{Finding, Label, Level, Suggestion};
use crate::levels::Levels;
use crate::rule::RuleMeta;
use crate::source::SourceFile;

/// What a rule says about one place; the context turns it into a [`Finding`].
#[derive(Debug, Default)]
pub struct Report {
    pub message: String,
    pub primary: Option<Label>,
    pub secondary: Vec<Label>,
    pub help: Option<String>,
    pub note: Option<String>,
    pub elsewhere: Vec<(std::path::PathBuf, usize, String)>,
    pub suggestions: Vec<Suggestion>,
}

impl Report {
    pub fn new(message: impl Into<String>, primary: Range<usize>, label: impl Into<String>) -> Self {
        Self { message: message.into(), primary: Some(Label::new(primary, label)), ..Self::default() }
    }

    pub fn label(mut self, span: Range<usize>, text: impl Into<String>) -> Self {
        self.secondary.push(Label::new(span, text));
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// A label at `span` of `file` (line `line`): on the finding's own file a label, elsewhere a
    /// note naming the place.
    pub fn label_in(
        mut self,
        cx: &Context<'_>,
        (file, line, span): (&std::path::Path, usize, Range<usize>),
        text: impl Into<String>,
    ) -> Self {
        if cx.file().is_some_and(|f| f.path == file) {
            self.label(span, text)
        } else {
            self.elsewhere.push((file.to_path_buf(), line, text.into()));
            self
        }
    }

    pub fn suggest(mut self, suggestion: Suggestion) -> Self {
        self.suggestions.push(suggestion);
        self
    }
}

pub struct Context<'a> {
    file: Option<Arc<SourceFile>>,
    rule: &'static RuleMeta,
    levels: &'a Levels,
    findings: &'a mut Vec<Finding>,
}

impl<'a> Context<'a> {
    pub(crate) fn new(
        file: Option<Arc<SourceFile>>,
        rule: &'static RuleMeta,
        levels: &'a Levels,
        findings: &'a mut Vec<Finding>,
    ) -> Self {
        Self { file, rule, levels, findings }
    }

    /// How many findings have been reported so far.
    pub(crate) fn reported(&self) -> usize {
        self.findings.len()
    }

    /// Takes back the findings reported since there were `mark`.
    pub(crate) fn take_since(&mut self, mark: usize) -> std::vec::Drain<'_, Finding> {
        self.findings.drain(mark..)
    }

    /// The file being checked (function rules).
    pub fn file(&self) -> Option<&Arc<SourceFile>> {
        self.file.as_ref()
    }

    /// The source text of a span in the current file.
    pub fn snippet(&self, span: &Range<usize>) -> &str {
        self.file.as_ref().and_then(|f| f.text.get(span.clone())).unwrap_or("")
    }

    /// Reports in the current file.
    pub fn report(&mut self, report: Report) {
        if let Some(file) = self.file.clone() {
            self.report_in(&file, report);
        }
    }

    /// Reports in `file` (crate-level rules).
    pub fn report_in(&mut self, file: &Arc<SourceFile>, report: Report) {
        let level = self.levels.level_of(self.rule);
        if level == Level::Allow {
            return;
        }
        let primary = report.primary.unwrap_or_else(|| Label::new(0..0, ""));
        let (line, column) = file.line_col(primary.span.start);
        let secondary =
            report.secondary.into_iter().filter(|l| l.span != primary.span && l.span.end <= file.text.len()).collect();
        self.findings.push(Finding {
            rule: self.rule.id,
            level,
            message: report.message,
            file: file.clone(),
            primary,
            secondary,
            help: report.help,
            note: report.note,
            elsewhere: report.elsewhere,
            suggestions: report.suggestions.into_iter().filter(|s| s.span.end <= file.text.len()).collect(),
            line,
            column,
        });
    }
}
