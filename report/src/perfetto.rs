//! Chrome trace-event JSON (the format Perfetto and `chrome://tracing` open): one counter track
//! per memory source, a counter of the readings inside recorded iterations per source read at
//! the marks, and slices for the recorded iterations, their phases (with each secondary source's
//! allocated bytes and delta in their arguments) and (with `lines`) their statements.
//!
//! Times are microseconds since the first iteration started. Readings inside recorded iterations
//! carry their real times; per-iteration samples of other iterations are placed by linear
//! interpolation between recorded iterations (or at the mean iteration time when the report has
//! no recorded iterations, as in version 1 reports).

use memlint_runtime::phases::{END, IterationRecord, PhaseValue, Phases, phase_values};
use memlint_runtime::view::ReportView;
use serde_json::{Value, json};

const PID: u64 = 1;
const TID_ITERATIONS: u64 = 1;
const TID_PHASES: u64 = 2;
const TID_LINES: u64 = 3;

/// The trace of `report` as a JSON value (`{"traceEvents": [...], ...}`).
pub fn trace(report: &ReportView) -> Value {
    let mut events = vec![
        meta("process_name", None, &format!("memlint: {} ({})", report.function, report.file)),
        meta("thread_name", Some(TID_ITERATIONS), "iterations"),
        meta("thread_name", Some(TID_PHASES), "phases"),
    ];
    let clock = Clock::new(report);
    for source in report.source_list() {
        let name = format!("{} ({})", source.source, source.device);
        for s in &source.samples {
            let mut args = json!({ "allocated": s.allocated_bytes });
            if let Some(r) = s.reserved_bytes {
                args["reserved"] = json!(r);
            }
            if let Some(p) = s.peak_bytes {
                args["peak"] = json!(p);
            }
            events.push(json!({ "name": name, "ph": "C", "ts": clock.end_of(s.iteration), "pid": PID, "args": args }));
        }
    }
    if let Some(phases) = &report.phases {
        if phases.lines_mode {
            events.push(meta("thread_name", Some(TID_LINES), "lines"));
        }
        for record in &phases.records {
            // The secondary sources' values of this iteration's phases, shown in its slices.
            let others: Vec<(&str, Vec<(u32, PhaseValue)>)> = phases
                .secondary
                .iter()
                .filter_map(|s| {
                    let theirs = s.records.iter().find(|r| r.iteration == record.iteration)?;
                    Some((s.source.as_str(), phase_values(&phases.marks, theirs)))
                })
                .collect();
            slices(&mut events, phases, record, &others);
        }
        for source in &phases.secondary {
            let counter = format!("{} inside iterations", source.source);
            for record in &source.records {
                events.push(json!({ "name": counter, "ph": "C", "ts": record.start_us, "pid": PID,
                    "args": { "allocated": record.start_allocated_bytes } }));
                for point in &record.points {
                    events.push(json!({ "name": counter, "ph": "C", "ts": point.t_us, "pid": PID,
                        "args": { "allocated": point.allocated_bytes } }));
                }
            }
        }
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": { "memlint_report_version": report.version, "function": report.function, "iterations": report.iterations },
    })
}

fn meta(kind: &str, tid: Option<u64>, name: &str) -> Value {
    let mut event = json!({ "name": kind, "ph": "M", "pid": PID, "args": { "name": name } });
    if let Some(tid) = tid {
        event["tid"] = json!(tid);
    }
    event
}

/// The slices and inner readings of one recorded iteration; `others` are the phase values of
/// the secondary sources read at its marks, added to the phase slices' arguments.
fn slices(
    events: &mut Vec<Value>,
    phases: &Phases,
    record: &IterationRecord,
    others: &[(&str, Vec<(u32, PhaseValue)>)],
) {
    let Some(end) = record.points.last() else { return };
    let counter = format!("{} inside iterations", phases.source);
    events.push(json!({ "name": counter, "ph": "C", "ts": record.start_us, "pid": PID,
        "args": { "allocated": record.start_allocated_bytes } }));
    events.push(json!({ "name": format!("iteration {}", record.iteration), "cat": "iteration", "ph": "X",
        "ts": record.start_us, "dur": end.t_us.saturating_sub(record.start_us), "pid": PID, "tid": TID_ITERATIONS,
        "args": { "start_allocated": record.start_allocated_bytes, "end_allocated": end.allocated_bytes } }));
    let (mut phase_start, mut phase_alloc, mut phase_peak) = (record.start_us, record.start_allocated_bytes, 0u64);
    let (mut line_start, mut line_alloc) = (record.start_us, record.start_allocated_bytes);
    for point in &record.points {
        events.push(json!({ "name": counter, "ph": "C", "ts": point.t_us, "pid": PID,
            "args": { "allocated": point.allocated_bytes } }));
        let peak = point.peak_bytes.unwrap_or(point.allocated_bytes).max(point.allocated_bytes);
        phase_peak = phase_peak.max(peak);
        let mark = phases.marks.get(point.mark as usize);
        let args = |start_alloc: u64, peak: u64| {
            json!({ "allocated": point.allocated_bytes, "peak": peak,
                "delta": point.allocated_bytes as i64 - start_alloc as i64 })
        };
        if phases.lines_mode {
            let name = match mark {
                Some(m) => format!("line {}: {}", m.line, m.code),
                None => "end of iteration".to_owned(),
            };
            events.push(json!({ "name": name, "cat": "line", "ph": "X", "ts": line_start,
                "dur": point.t_us.saturating_sub(line_start), "pid": PID, "tid": TID_LINES, "args": args(line_alloc, peak) }));
            (line_start, line_alloc) = (point.t_us, point.allocated_bytes);
        }
        let phase = match mark {
            Some(m) => m.phase.clone(),
            None if point.mark == END => Some("end".to_owned()),
            None => None,
        };
        if let Some(phase) = phase {
            let mut args = args(phase_alloc, phase_peak);
            for (source, values) in others {
                if let Some((_, v)) = values.iter().find(|(mark, _)| *mark == point.mark) {
                    args[*source] = json!({ "allocated": v.allocated_bytes, "delta": v.delta_bytes });
                }
            }
            events.push(json!({ "name": phase, "cat": "phase", "ph": "X", "ts": phase_start,
                "dur": point.t_us.saturating_sub(phase_start), "pid": PID, "tid": TID_PHASES, "args": args }));
            (phase_start, phase_alloc, phase_peak) = (point.t_us, point.allocated_bytes, 0);
        }
    }
}

/// When each iteration ended, in microseconds since the first one started.
struct Clock {
    /// `(iteration, end µs)` of the recorded iterations, by iteration.
    known: Vec<(u64, f64)>,
    /// Mean iteration time, µs.
    mean: f64,
}

impl Clock {
    fn new(report: &ReportView) -> Self {
        let mean = if report.iterations > 0 { report.elapsed_seconds * 1e6 / report.iterations as f64 } else { 0.0 };
        let mut known: Vec<(u64, f64)> = report
            .phases
            .iter()
            .flat_map(|p| &p.records)
            .filter_map(|r| r.points.iter().find(|p| p.mark == END).map(|p| (r.iteration, p.t_us as f64)))
            .collect();
        known.sort_by_key(|k| k.0);
        Self { known, mean }
    }

    fn end_of(&self, iteration: u64) -> u64 {
        let after = self.known.partition_point(|k| k.0 < iteration);
        let t = match (after.checked_sub(1).map(|i| self.known[i]), self.known.get(after)) {
            (_, Some(&(i, t))) if i == iteration => t,
            (Some((i0, t0)), Some(&(i1, t1))) => t0 + (t1 - t0) * (iteration - i0) as f64 / (i1 - i0) as f64,
            (Some((i0, t0)), None) => t0 + self.mean * (iteration - i0) as f64,
            (None, Some(&(i1, t1))) => (t1 - self.mean * (i1 - iteration) as f64).max(0.0),
            (None, None) => self.mean * (iteration + 1) as f64,
        };
        t.round() as u64
    }
}
