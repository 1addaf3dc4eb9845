//! A JSON report as read back from a file: owned, every field optional, so reports of schema
//! version 1 (no phases, lines or sources), version 2, version 3 (phases of the secondary
//! sources), version 4 (the guard's own time) and version 5 (the pace) read alike. The renderers (`MEMLINT_SUMMARY`, `cargo memlint report`) work on this.

use serde::Deserialize;

use crate::phases::{LineRow, Phases};

/// One sample of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct SampleView {
    /// 0-based iteration.
    pub iteration: u64,
    /// Bytes in use after it.
    pub allocated_bytes: u64,
    /// Bytes held by the allocator, when known.
    #[serde(default)]
    pub reserved_bytes: Option<u64>,
    /// Highest bytes in use during it, when known.
    #[serde(default)]
    pub peak_bytes: Option<u64>,
}

/// The verdict of a report (or of one source).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct VerdictView {
    /// A leak was declared.
    pub leak: bool,
    /// Growth, bytes per iteration.
    pub growth_bytes_per_iteration: f64,
    /// Last minus first post-warm-up sample.
    pub total_growth_bytes: i64,
    /// When the leak was declared.
    pub detected_at_iteration: Option<u64>,
    /// By which check.
    pub detected_by: Option<String>,
    /// Iterations until exhaustion.
    pub projected_iterations_to_exhaustion: Option<u64>,
    /// Seconds until exhaustion.
    pub projected_seconds_to_exhaustion: Option<f64>,
    /// `budget`, `device` or `host`.
    pub exhaustion_limit: Option<String>,
}

/// A static finding of the guarded function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct FindingView {
    /// Rule id.
    pub rule: String,
    /// 1-based line.
    pub line: u32,
    /// Message.
    pub message: String,
}

/// The pace of a version 5 report: the primary source read every `sample_every` iterations.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct PaceView {
    /// 1: every iteration.
    #[serde(default = "one")]
    pub sample_every: u64,
    /// Pinned by `MEMLINT_SAMPLE_EVERY`.
    #[serde(default)]
    pub pinned: bool,
    /// Mean step, seconds (0 when never timed).
    #[serde(default)]
    pub step_seconds: f64,
    /// Guard time beyond the budget carried from earlier runs of the function, seconds (0 in
    /// reports written before session 8).
    #[serde(default)]
    pub carried_seconds: f64,
}

impl Default for PaceView {
    fn default() -> Self {
        Self { sample_every: 1, pinned: false, step_seconds: 0.0, carried_seconds: 0.0 }
    }
}

fn one() -> u64 {
    1
}

/// One memory source of a version 2 report (`sources[]`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SourceView {
    /// `cuda-pool`, `nvml-process`, `host-allocator`, `host-rss`, …
    pub source: String,
    /// The device it describes.
    pub device: String,
    /// Read every N iterations.
    pub read_every: Option<u64>,
    /// Its samples.
    pub samples: Vec<SampleView>,
    /// Its verdict.
    pub verdict: Option<VerdictView>,
}

/// A JSON report of any schema version.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ReportView {
    /// Schema version.
    pub version: u32,
    /// Guarded function.
    pub function: String,
    /// Its file.
    pub file: String,
    /// Its line.
    pub line: u32,
    /// The sampled loop's line.
    pub loop_line: Option<u32>,
    /// `loop` or `call`.
    pub mode: String,
    /// Primary source.
    pub backend: String,
    /// Its device.
    pub device: String,
    /// `running`, `returned` or `panicked`.
    pub outcome: String,
    /// Warm-up iterations.
    pub warmup: u64,
    /// Budget, bytes.
    pub budget_bytes: Option<u64>,
    /// Completed iterations.
    pub iterations: u64,
    /// Iterations whose memory the primary source read (added in session 10; absent before).
    #[serde(default)]
    pub reads: Option<u64>,
    /// Wall time, seconds.
    pub elapsed_seconds: f64,
    /// Wall time inside the guard itself, seconds (version 4; 0 before).
    #[serde(default)]
    pub guard_seconds: f64,
    /// How often the primary source was read (version 5; every iteration before).
    #[serde(default)]
    pub pace: PaceView,
    /// Samples of the primary source.
    pub samples: Vec<SampleView>,
    /// Verdict of the primary source.
    pub verdict: VerdictView,
    /// Static findings inside the function.
    pub static_findings: Vec<FindingView>,
    /// Sampling errors.
    pub errors: Vec<String>,
    /// Every source (version 2 with several sources); empty otherwise.
    pub sources: Vec<SourceView>,
    /// Phases (version 2; with `secondary[]` since version 3).
    pub phases: Option<Phases>,
    /// Lines (version 2, `lines`).
    pub lines: Vec<LineRow>,
}

/// Why a report could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The text is not a memlint report.
    #[error("{path} is not a memlint report: {message}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

impl ReportView {
    /// Parses a report from JSON text; `name` is used in errors.
    pub fn parse(name: &str, text: &str) -> Result<Self, ReadError> {
        let format = |message: String| ReadError::Format { path: name.to_owned(), message };
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format(e.to_string()))?;
        if !value.is_object() || value.get("version").is_none() || value.get("samples").is_none() {
            return Err(format("expected a JSON object with `version` and `samples`".to_owned()));
        }
        serde_json::from_value(value).map_err(|e| format(e.to_string()))
    }

    /// Reads a report file.
    pub fn read(path: &std::path::Path) -> Result<Self, ReadError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ReadError::Io { path: name.clone(), source })?;
        Self::parse(&name, &text)
    }

    /// The sources to show: `sources[]` when present, else the primary one.
    pub fn source_list(&self) -> Vec<SourceView> {
        if !self.sources.is_empty() {
            return self.sources.clone();
        }
        vec![SourceView {
            source: self.backend.clone(),
            device: self.device.clone(),
            read_every: Some(1),
            samples: self.samples.clone(),
            verdict: Some(self.verdict.clone()),
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for text in ["", "[]", "{\"a\": 1}", "{\"version\": 1, \"samples\": 3}", "not json"] {
            let err = ReportView::parse("r.json", text).unwrap_err();
            assert!(err.to_string().starts_with("r.json is not a memlint report"), "{err}");
        }
        let err = ReportView::read(std::path::Path::new("/nonexistent/r.json")).unwrap_err();
        assert!(err.to_string().starts_with("cannot read /nonexistent/r.json"), "{err}");
    }

    #[test]
    fn a_minimal_report_reads_with_defaults() {
        let r = ReportView::parse("r", r#"{"version": 1, "samples": [], "backend": "cuda"}"#).unwrap();
        assert_eq!(r.version, 1);
        assert!(r.phases.is_none() && r.lines.is_empty());
        assert_eq!(r.source_list()[0].source, "cuda");
    }
}
