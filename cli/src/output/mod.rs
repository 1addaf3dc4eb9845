//! Output formats: `human` (miette), `short` (one line each), `json` (cargo's compiler-message,
//! with rustc's `json-diagnostic-*` variants), `sarif` (SARIF 2.1.0 for code scanning) and
//! `github` (workflow-command annotations).
//!
//! Every format but SARIF prints one finding at a time; [`write`] renders a whole run.

pub mod github;
pub mod json;
pub mod sarif;

pub use memlint_lint::output::{human, short};

use std::io::Write;
use std::path::{Path, PathBuf};

use memlint_lint::Finding;

/// What `--message-format` names: one output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageFormat {
    /// Rich diagnostics with source snippets.
    Human,
    /// One line per finding: `path:line:col: level[code]: message`.
    Short,
    /// One JSON object per line, in cargo's `compiler-message` shape; `rendered` as chosen.
    Json(Rendered),
    /// One SARIF 2.1.0 log for the whole run.
    Sarif,
    /// GitHub Actions workflow commands (`::warning file=…::…`).
    Github,
}

/// What the `rendered` field of a JSON message holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendered {
    /// The miette rendering without colour (`json`).
    Plain,
    /// The miette rendering with ANSI colour (`json-diagnostic-rendered-ansi`).
    Ansi,
    /// The one-line rendering (`json-diagnostic-short`).
    Short,
}

/// The names `--message-format` accepts, with one line of help each.
pub const FORMAT_NAMES: &[(&str, &str)] = &[
    ("human", "rich diagnostics with source snippets (default)"),
    ("short", "one line per finding: `path:line:col: level[code]: message`"),
    ("json", "cargo `compiler-message` lines, for editors"),
    ("json-diagnostic-rendered-ansi", "json, with ANSI colour in `rendered` (rust-analyzer)"),
    ("json-diagnostic-short", "json, with the one-line rendering in `rendered`"),
    ("sarif", "one SARIF 2.1.0 log, for GitHub code scanning"),
    ("github", "GitHub Actions annotations (`::warning file=…`)"),
];

/// A `--message-format` value could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("unknown message format `{0}`")]
    Unknown(String),
    #[error("message formats `{0}` and `{1}` cannot both go to the same output")]
    Conflict(String, String),
}

impl MessageFormat {
    /// Parses one or more comma-separated names, combined as cargo does: `json` and its
    /// `json-diagnostic-*` modifiers merge (`json,json-diagnostic-short`); any other pair conflicts.
    pub fn parse_list<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Option<Self>, FormatError> {
        let mut base: Option<(Self, String)> = None;
        let mut rendered: Option<Rendered> = None;
        for name in names.into_iter().flat_map(|n| n.split(',')).map(str::trim).filter(|n| !n.is_empty()) {
            let (format, modifier) = match name {
                "human" => (Self::Human, None),
                "short" => (Self::Short, None),
                "json" => (Self::Json(Rendered::Plain), None),
                "json-diagnostic-rendered-ansi" => (Self::Json(Rendered::Plain), Some(Rendered::Ansi)),
                "json-diagnostic-short" => (Self::Json(Rendered::Plain), Some(Rendered::Short)),
                "sarif" => (Self::Sarif, None),
                "github" => (Self::Github, None),
                other => return Err(FormatError::Unknown(other.to_string())),
            };
            if let Some(m) = modifier {
                match rendered {
                    Some(r) if r != m => return Err(FormatError::Conflict(name.to_string(), rendered_name(r).into())),
                    _ => rendered = Some(m),
                }
            }
            match &base {
                Some((b, b_name)) if *b != format => {
                    return Err(FormatError::Conflict(b_name.clone(), name.to_string()));
                }
                Some(_) => {}
                None => base = Some((format, name.to_string())),
            }
        }
        Ok(base.map(|(format, _)| match format {
            Self::Json(_) => Self::Json(rendered.unwrap_or(Rendered::Plain)),
            other => other,
        }))
    }

    /// The format's name as `--message-format` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::Short => "short",
            Self::Json(Rendered::Plain) => "json",
            Self::Json(r) => rendered_name(r),
            Self::Sarif => "sarif",
            Self::Github => "github",
        }
    }

    /// Whether the output is for machines (no summary line on stderr then).
    pub fn is_machine_readable(self) -> bool {
        matches!(self, Self::Json(_) | Self::Sarif)
    }
}

fn rendered_name(r: Rendered) -> &'static str {
    match r {
        Rendered::Plain => "json",
        Rendered::Ansi => "json-diagnostic-rendered-ansi",
        Rendered::Short => "json-diagnostic-short",
    }
}

/// One finding to print, with the cargo package and target it belongs to.
#[derive(Debug)]
pub struct Entry<'a> {
    pub finding: &'a Finding,
    pub owner: json::Owner,
    /// Stable fingerprint of the finding (see [`crate::baseline`]); SARIF needs it, the other
    /// formats ignore it.
    pub fingerprint: String,
}

/// Settings shared by the formats.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The workspace root: SARIF URIs are relative to it.
    pub root: PathBuf,
    /// The working directory the findings' relative paths start from.
    pub cwd: PathBuf,
    /// Colour and width of the human format.
    pub style: human::Style,
}

impl RunInfo {
    /// A finding's path relative to the workspace root (with `/`), or absolute if outside it.
    pub fn root_relative(&self, path: &Path) -> String {
        let abs = if path.is_absolute() { path.to_path_buf() } else { self.cwd.join(path) };
        let abs = std::path::absolute(&abs).unwrap_or(abs);
        let rel = abs.strip_prefix(&self.root).map(Path::to_path_buf).unwrap_or(abs);
        rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/").replace("//", "/")
    }
}

/// Writes every entry in `format`. Stops quietly on a closed pipe.
pub fn write(format: MessageFormat, entries: &[Entry<'_>], run: &RunInfo, out: &mut dyn Write) -> std::io::Result<()> {
    if format == MessageFormat::Sarif {
        let log = sarif::render(entries, run);
        return writeln!(out, "{log}");
    }
    for e in entries {
        let f = e.finding;
        let line = match format {
            MessageFormat::Human => human::render(f, run.style),
            MessageFormat::Short => short::render(f),
            MessageFormat::Json(rendered) => {
                let text = match rendered {
                    Rendered::Plain => human::render(f, human::Style::plain()),
                    Rendered::Ansi => human::render(f, human::Style { color: true, width: 100, links: false }),
                    Rendered::Short => short::render(f) + "\n",
                };
                json::render_named(f, &e.owner, &text, &run.root_relative(&f.file.path))
            }
            MessageFormat::Github => github::render(f),
            MessageFormat::Sarif => unreachable!("handled above"),
        };
        match writeln!(out, "{line}") {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            other => other?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_combine_like_cargo() {
        let p = |v: &[&str]| MessageFormat::parse_list(v.iter().copied());
        assert_eq!(p(&[]), Ok(None));
        assert_eq!(p(&["json-diagnostic-rendered-ansi"]), Ok(Some(MessageFormat::Json(Rendered::Ansi))));
        assert_eq!(p(&["json,json-diagnostic-short"]), Ok(Some(MessageFormat::Json(Rendered::Short))));
        assert_eq!(p(&["json", "json-diagnostic-rendered-ansi"]), Ok(Some(MessageFormat::Json(Rendered::Ansi))));
        assert_eq!(p(&["sarif"]), Ok(Some(MessageFormat::Sarif)));
        assert_eq!(p(&["human", "sarif"]), Err(FormatError::Conflict("human".into(), "sarif".into())));
        assert_eq!(p(&["xml"]), Err(FormatError::Unknown("xml".into())));
        assert_eq!(
            p(&["json-diagnostic-short,json-diagnostic-rendered-ansi"]),
            Err(FormatError::Conflict("json-diagnostic-rendered-ansi".into(), "json-diagnostic-short".into()))
        );
    }
}
