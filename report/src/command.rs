//! `cargo memlint report <report.json> [--html FILE] [--perfetto FILE]`: the command behind the
//! CLI's subcommand, here so that any front end calls the same code.

use std::path::{Path, PathBuf};

use crate::{RenderError, ReportView, html, perfetto};

/// The usage line.
pub const USAGE: &str = "usage: cargo memlint report <report.json> [--html FILE] [--perfetto FILE]";

/// What `report` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The JSON report to read.
    pub report: PathBuf,
    /// Where to write the HTML page.
    pub html: Option<PathBuf>,
    /// Where to write the trace.
    pub perfetto: Option<PathBuf>,
}

/// Why the command failed.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Bad arguments.
    #[error("{0}\n{USAGE}")]
    Usage(String),
    /// The report could not be read.
    #[error(transparent)]
    Read(#[from] crate::ReadError),
    /// A chart could not be drawn.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// An output could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

impl Request {
    /// Parses the arguments after `report`.
    pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Self, CommandError> {
        let mut report = None;
        let (mut html, mut perfetto) = (None, None);
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let slot = match arg.as_str() {
                "--html" => &mut html,
                "--perfetto" => &mut perfetto,
                flag if flag.starts_with('-') => return Err(CommandError::Usage(format!("unknown option `{flag}`"))),
                _ if report.is_some() => return Err(CommandError::Usage(format!("unexpected argument `{arg}`"))),
                _ => {
                    report = Some(PathBuf::from(arg));
                    continue;
                }
            };
            let value = args.next().ok_or_else(|| CommandError::Usage(format!("`{arg}` needs a file name")))?;
            *slot = Some(PathBuf::from(value));
        }
        let report = report.ok_or_else(|| CommandError::Usage("missing the report file".to_owned()))?;
        Ok(Self { report, html, perfetto })
    }

    /// Runs it: returns the terminal summary (plus a line per written file).
    pub fn run(&self) -> Result<String, CommandError> {
        let report = ReportView::read(&self.report)?;
        let mut out = crate::summary(&report);
        if let Some(path) = &self.html {
            write(path, &html::page(&report)?)?;
            out.push_str(&format!("wrote {}\n", path.display()));
        }
        if let Some(path) = &self.perfetto {
            let text = serde_json::to_string(&perfetto::trace(&report)).unwrap_or_default();
            write(path, &text)?;
            out.push_str(&format!(
                "wrote {} (open it in https://ui.perfetto.dev or chrome://tracing)\n",
                path.display()
            ));
        }
        Ok(out)
    }
}

fn write(path: &Path, text: &str) -> Result<(), CommandError> {
    std::fs::write(path, text).map_err(|source| CommandError::Write { path: path.display().to_string(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Request, CommandError> {
        Request::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn arguments() {
        let r = parse(&["r.json", "--html", "a.html", "--perfetto", "t.json"]).unwrap();
        assert_eq!(r.report, PathBuf::from("r.json"));
        assert_eq!(r.html, Some(PathBuf::from("a.html")));
        assert_eq!(r.perfetto, Some(PathBuf::from("t.json")));
        for (args, message) in [
            (&[][..], "missing the report file"),
            (&["r.json", "--html"][..], "`--html` needs a file name"),
            (&["r.json", "--svg", "x"][..], "unknown option `--svg`"),
            (&["a.json", "b.json"][..], "unexpected argument `b.json`"),
        ] {
            let err = parse(args).unwrap_err().to_string();
            assert!(err.starts_with(message) && err.ends_with(USAGE), "{err}");
        }
    }

    #[test]
    fn missing_report_is_an_error() {
        let err = parse(&["/nonexistent/r.json"]).unwrap().run().unwrap_err();
        assert!(err.to_string().starts_with("cannot read /nonexistent/r.json"), "{err}");
    }
}
