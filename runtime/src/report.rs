//! What the guard hands to people: the JSON report (versioned schema) and the miette diagnostic.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource};
use serde::Serialize;

/// Version of the JSON report schema, raised whenever the field set changes (2: `sources[]`,
/// `blind[]`, `phases`, `lines`; 3: `phases.secondary[]`; 4: `guard_seconds`, `guard_time`;
/// 5: `pace`). Readers take every version.
pub const SCHEMA_VERSION: u32 = 5;

/// A static finding embedded at compile time: a likely cause of a leak in the guarded function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StaticFinding {
    /// Rule id, e.g. `accumulated_loss_tensor`.
    pub rule: &'static str,
    /// 1-based line in the guarded function's file.
    pub line: u32,
    /// The rule's message.
    pub message: &'static str,
}

/// The guard's own time by kind of work, seconds (schema 4); the rest of `guard_seconds` is the
/// detector, the phase records at iteration starts and ends, and the bookkeeping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct GuardTime {
    /// Reading the primary source at iteration ends and resetting its peak at starts.
    pub primary_seconds: f64,
    /// Reading the secondary sources at their rates.
    pub secondary_seconds: f64,
    /// Writing the report while the run goes on (at 256, 512, … iterations and on detection),
    /// with the diagnostic printed on detection.
    pub write_seconds: f64,
    /// Reading the primary source at the marks of recorded iterations (phases, lines).
    pub marks_seconds: f64,
    /// The primary source's leak detector and the recording of its samples (schema 5, added
    /// later: absent from older reports).
    #[serde(default)]
    pub detector_seconds: f64,
}

/// One sample: the memory in use after an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SampleRecord {
    /// 0-based iteration the sample ends.
    pub iteration: u64,
    /// Bytes in use after the iteration.
    pub allocated_bytes: u64,
    /// Bytes held by the allocator (CUDA pool), or null.
    pub reserved_bytes: Option<u64>,
    /// Highest bytes in use during the iteration, or null.
    pub peak_bytes: Option<u64>,
}

/// The leak verdict of a report.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Verdict {
    /// Whether a leak was declared.
    pub leak: bool,
    /// Estimated growth, bytes per iteration (Theil–Sen over the samples after warm-up).
    pub growth_bytes_per_iteration: f64,
    /// Last minus first sample after warm-up, bytes (negative when memory shrank).
    pub total_growth_bytes: i64,
    /// Iteration at which the leak was declared, or null.
    pub detected_at_iteration: Option<u64>,
    /// `window` (sliding window) or `long` (block medians), or null.
    pub detected_by: Option<&'static str>,
    /// Iterations left until the budget or the memory runs out at this rate, or null.
    pub projected_iterations_to_exhaustion: Option<u64>,
    /// The same projection in seconds of wall time, or null.
    pub projected_seconds_to_exhaustion: Option<f64>,
    /// What runs out first: `budget`, `device` or `host`, or null.
    pub exhaustion_limit: Option<&'static str>,
    /// `error` (runs out within the horizon, or no limit known) or `warning` (a slow leak that
    /// runs out only beyond it); null without a leak.
    pub severity: Option<&'static str>,
    /// The horizon in iterations the severity was judged against, or null.
    pub horizon_iterations: Option<u64>,
    /// Noise around the growth line when the leak was declared (robust sd), bytes, or null.
    pub noise_bytes: Option<f64>,
    /// 99 % lower confidence bound of the growth when the leak was declared, or null.
    pub growth_lower_bytes_per_iteration: Option<f64>,
}

/// A crossing of the `budget` option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BudgetBreach {
    /// The budget, bytes.
    pub budget_bytes: u64,
    /// The iteration in which it was crossed.
    pub iteration: u64,
    /// Bytes in use (the iteration's peak when known) at that moment.
    pub bytes: u64,
}

/// The JSON report written for each run of a guarded function (schema [`SCHEMA_VERSION`]).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Schema version.
    pub version: u32,
    /// Guarded function's name.
    pub function: &'static str,
    /// Its source file, as `file!()` names it.
    pub file: &'static str,
    /// 1-based line of the function.
    pub line: u32,
    /// 1-based line of the sampled loop, or null when each call is one iteration.
    pub loop_line: Option<u32>,
    /// `loop` (one sample per iteration of a loop) or `call` (one sample per call).
    pub mode: &'static str,
    /// `cuda`, `host-allocator` or `host-rss`.
    pub backend: &'static str,
    /// `host` or `cuda:N[,M…]`.
    pub device: String,
    /// Process id.
    pub pid: u32,
    /// `running` (written while the run goes on), `returned` or `panicked`.
    pub outcome: &'static str,
    /// Warm-up iterations ignored by the detector.
    pub warmup: u64,
    /// Sliding-window length.
    pub window: usize,
    /// Tolerance, bytes of growth per window.
    pub tolerance_bytes: u64,
    /// Budget, bytes, or null.
    pub budget_bytes: Option<u64>,
    /// Completed iterations.
    pub iterations: u64,
    /// Iterations whose memory the primary source read (schema 5, added in session 10). Below
    /// `iterations` when the guard samples to stay inside its time budget (`pace`); 0 in a short
    /// run that went on at an earlier run's pace and whose next read was not yet due.
    pub reads: u64,
    /// Wall time from the first iteration's start, seconds.
    pub elapsed_seconds: f64,
    /// Wall time spent inside the guard itself over that time (ticks, reads at marks, reports
    /// written while running; the final write is not in it), seconds (schema 4).
    pub guard_seconds: f64,
    /// Where that time went (schema 4).
    pub guard_time: GuardTime,
    /// How often the primary source was read to stay inside the time budget (schema 5).
    pub pace: crate::pace::PaceReport,
    /// Every `sample_stride`-th iteration is in `samples` (1 unless the run was very long).
    pub sample_stride: u64,
    /// One sample per iteration (see `sample_stride`).
    pub samples: Vec<SampleRecord>,
    /// The verdict.
    pub verdict: Verdict,
    /// The budget crossing, or null.
    pub budget_breach: Option<BudgetBreach>,
    /// Static findings inside the guarded function (likely causes).
    pub static_findings: &'static [StaticFinding],
    /// Sampling errors, in order (at most 16).
    pub errors: Vec<String>,
    /// Every source read during the run, the primary one first (schema 2).
    #[serde(default)]
    pub sources: Vec<SourceReport>,
    /// Where the guard could not see, or saw growth that the primary source did not (schema 2).
    #[serde(default)]
    pub blind: Vec<String>,
    /// Readings after each phase of the loop body and the phase table (schema 2; per secondary
    /// source in `phases.secondary[]` since schema 3), or null.
    pub phases: Option<crate::phases::Phases>,
    /// Per-statement table of `#[mem_guard(lines)]` (schema 2); empty without `lines`.
    pub lines: Vec<crate::phases::LineRow>,
}

/// One memory source of a run: its series and its own verdict (schema 2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceReport {
    /// `cuda-pool`, `nvml-process`, `cuda-device`, `cubecl`, `host-allocator` or `host-rss`.
    pub source: &'static str,
    /// `host`, `cuda:N`, `nvml:N`, `cubecl:...`.
    pub device: String,
    /// Whether this is the primary source (the report's top-level numbers).
    pub primary: bool,
    /// The source is read every `read_every`-th iteration (chosen from its read cost).
    pub read_every: u64,
    /// The cost of one read the rate was chosen from, nanoseconds: measured when the source was
    /// opened, or the mean inside the loop of the last run that read it (a read inside a busy
    /// GPU loop cost 8–16 times more than at open on an H100).
    pub read_cost_ns: u64,
    /// Mean cost of this run's reads (inside the loop), nanoseconds, or null.
    pub run_read_cost_ns: Option<u64>,
    /// The longest of this run's reads, nanoseconds, or null.
    pub run_read_max_ns: Option<u64>,
    /// Every `sample_stride`-th read is in `samples`.
    pub sample_stride: u64,
    /// The readings.
    pub samples: Vec<SampleRecord>,
    /// This source's own verdict.
    pub verdict: Verdict,
    /// Failed reads.
    pub errors: u64,
}

/// Writes `report` to `path` atomically (a temporary file in the same folder, then a rename).
pub fn write_atomic(path: &Path, report: &Report) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    // Serialised in memory first: one write, not one per JSON token.
    let mut bytes = serde_json::to_vec_pretty(report)?;
    bytes.push(b'\n');
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&bytes)?;
        // No fsync: the rename makes the file whole or absent even if the process is killed
        // (the page cache survives it); an fsync per report cost milliseconds on the GPU machine.
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Byte sizes in a human unit (B, KiB, MiB, GiB, TiB), three significant digits.
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let sign = if bytes < 0.0 { "-" } else { "" };
    let mut value = bytes.abs();
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{sign}{value:.0} B")
    } else if value >= 100.0 {
        format!("{sign}{value:.0} {}", UNITS[unit])
    } else if value >= 10.0 {
        format!("{sign}{value:.1} {}", UNITS[unit])
    } else {
        format!("{sign}{value:.2} {}", UNITS[unit])
    }
}

/// Durations for people: seconds, minutes, hours or days.
pub fn human_seconds(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.0} min", seconds / 60.0)
    } else if seconds < 172_800.0 {
        format!("{:.1} h", seconds / 3600.0)
    } else {
        format!("{:.1} days", seconds / 86_400.0)
    }
}

/// Where a diagnostic points: the guarded function's file and the loop in it.
#[derive(Debug, Clone)]
pub struct Location {
    /// The file as `file!()` names it (shown).
    pub display: &'static str,
    /// The file on disk (read for the snippet), empty when unknown.
    pub path: &'static str,
    /// 1-based line of what the primary label points at.
    pub line: u32,
    /// 1-based column of it.
    pub column: u32,
}

/// A runtime finding rendered with miette: a leak or a budget crossing.
#[derive(Debug)]
pub struct GuardDiagnostic {
    code: &'static str,
    message: String,
    primary_label: String,
    location: Location,
    source: Option<NamedSource<String>>,
    labels: Vec<LabeledSpan>,
    help: Option<String>,
    notes: Vec<String>,
    severity: miette::Severity,
}

impl fmt::Display for GuardDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GuardDiagnostic {}

impl Diagnostic for GuardDiagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        let mut text = String::new();
        if let Some(help) = &self.help {
            text.push_str(help);
        }
        for note in &self.notes {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(note);
        }
        (!text.is_empty()).then(|| Box::new(text) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.source.as_ref()?;
        Some(Box::new(self.labels.iter().cloned()))
    }
}

impl GuardDiagnostic {
    /// A diagnostic pointing at `location` with `message` (what is wrong) and `primary_label`
    /// (a short noun phrase at the loop). The source snippet is read when the file is readable.
    pub fn new(code: &'static str, message: String, primary_label: String, location: Location) -> Self {
        let source = (!location.path.is_empty())
            .then(|| std::fs::read_to_string(location.path).ok())
            .flatten()
            .map(|text| NamedSource::new(location.display, text));
        let mut diagnostic = Self {
            code,
            message,
            primary_label,
            location,
            source,
            labels: Vec::new(),
            help: None,
            notes: Vec::new(),
            severity: miette::Severity::Error,
        };
        let (line, column, label) =
            (diagnostic.location.line, diagnostic.location.column, diagnostic.primary_label.clone());
        if let Some(span) = diagnostic.line_span(line, column) {
            diagnostic.labels.push(LabeledSpan::new_primary_with_span(Some(label), span));
        }
        diagnostic
    }

    /// Adds a secondary label at `line` (from its first non-blank character to its end).
    pub fn with_line_label(mut self, line: u32, label: String) -> Self {
        if let Some(span) = self.line_span(line, 0) {
            self.labels.push(LabeledSpan::new_with_span(Some(label), span));
        }
        self
    }

    /// Sets the severity (error by default).
    pub fn with_severity(mut self, severity: miette::Severity) -> Self {
        self.severity = severity;
        self
    }

    /// Sets the help text (what to do).
    pub fn with_help(mut self, help: String) -> Self {
        self.help = Some(help);
        self
    }

    /// Adds a note line under the help.
    pub fn with_note(mut self, note: String) -> Self {
        self.notes.push(note);
        self
    }

    /// Whether the source snippet could be read.
    pub fn has_snippet(&self) -> bool {
        self.source.is_some()
    }

    /// `(offset, length)` of `line` from `column` (1-based; 0 = first non-blank) to its end.
    fn line_span(&self, line: u32, column: u32) -> Option<(usize, usize)> {
        let text = self.source.as_ref()?.inner();
        let mut offset = 0usize;
        for (index, content) in text.split_inclusive('\n').enumerate() {
            if index + 1 == line as usize {
                let content = content.trim_end_matches(['\n', '\r']);
                let start = if column == 0 {
                    content.len() - content.trim_start().len()
                } else {
                    content.char_indices().nth(column as usize - 1).map_or(0, |(i, _)| i)
                };
                let len = content.len().saturating_sub(start).max(1);
                return Some((offset + start, len));
            }
            offset += content.len();
        }
        None
    }

    /// Renders the diagnostic as text: no colour unless `color`, wrapped at `width` columns.
    pub fn render(&self, color: bool, width: usize) -> String {
        let theme = if color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
        let handler = GraphicalReportHandler::new_themed(theme).with_width(width).with_links(false);
        let mut out = String::new();
        if handler.render_report(&mut out, self).is_err() {
            out = format!("{}: {}", self.code, self.message);
        }
        if self.source.is_none() {
            out.push_str(&format!(
                "  at {}:{}:{} (source not readable)\n",
                self.location.display, self.location.line, self.location.column
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_units() {
        assert_eq!(human_bytes(512.0), "512 B");
        assert_eq!(human_bytes(12_638_220.0), "12.1 MiB");
        assert_eq!(human_bytes(1536.0), "1.50 KiB");
        assert_eq!(human_bytes(-2048.0), "-2.00 KiB");
        assert_eq!(human_bytes(70.0 * 1024.0 * 1024.0 * 1024.0), "70.0 GiB");
        assert_eq!(human_seconds(30.0), "30 s");
        assert_eq!(human_seconds(600.0), "10 min");
        assert_eq!(human_seconds(36_000.0), "10.0 h");
    }
}
