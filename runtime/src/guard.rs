//! The run state behind `#[mem_guard]`: sampling, verdicts, budget, reports.
//!
//! Two shapes, chosen by the macro:
//! - **loop**: [`Guard`] lives in the guarded function; the macro calls [`Guard::tick`] at the
//!   start of each iteration of the sampled loop and [`Guard::loop_exit`] after it. A tick ends
//!   the previous iteration (one sample) and starts the next (peak reset). The report is written
//!   when the guard drops: on return, early return, `?`, or panic.
//! - **call**: each call of the function is one iteration; the state lives in a `static`
//!   [`SiteState`] across calls and [`CallScope`] brackets one call. Reports are written when a
//!   leak or budget crossing is found, at doubling iteration counts (256, 512, …), and at process
//!   exit.
//!
//! ```text
//!  Guard::enter ──► (disabled: MEMLINT=off) ──► no-op
//!       │
//!       ▼ first tick: pick backend, baseline
//!   ┌─► begin iteration (peak reset) ── body ── end iteration: sample → detector → budget ─┐
//!   └──────────────────────────────────────────────────────────────────────────────────────┘
//!       │ drop (any exit)
//!       ▼ final verdict → JSON report (atomic) → diagnostic if leak/breach not yet shown
//! ```

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::cost::{HorizonSpec, Severity, negligible, severity};
use crate::detector::{Detector, DetectorConfig, Horizon, iterations_until, overall_fit};
use crate::pace::{Counters, Ledger, Pace, PaceReport};
use crate::phases::{END, Mark, Phases, Recorder, line_table};
use crate::report::{
    BudgetBreach, GuardDiagnostic, Location, Report, SampleRecord, SourceReport, StaticFinding, Verdict, human_bytes,
    human_seconds,
};
use crate::sampler::{BackendKind, Capacity, DeviceChoice, Reading, Sample};
use crate::sources::{self, Secondaries, Shell};

/// Samples kept per run before every other one is dropped (and the stride doubles): enough for
/// any plot, and a report that stays small to write (the series is in it twice).
const MAX_SAMPLES: usize = 1 << 12;
/// Iterations after which a running report is first written (then at doubling counts).
const FIRST_FLUSH: u64 = 256;
/// A running report is written at a flush only once the run is this old: a shorter run's final
/// report comes soon enough, and a report costs a short call a good part of its budget.
const MIN_FLUSH_AGE: Duration = Duration::from_secs(1);
/// Iterations timed (the first one excepted) before the pace is first chosen, when the warm-up
/// is shorter.
const MIN_TIMED_ITERATIONS: u64 = 5;
/// Sampling errors kept per run.
const MAX_ERRORS: usize = 16;

/// What to do when a leak or a budget crossing is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnLeak {
    /// Print a diagnostic on stderr and go on.
    Warn,
    /// Print the diagnostic and panic (in loop mode at once; in call mode at the next call).
    Panic,
}

/// The `#[mem_guard(...)]` options, resolved at compile time.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Iterations ignored at the start.
    pub warmup: u64,
    /// Sliding-window length.
    pub window: usize,
    /// Consecutive growing windows needed.
    pub persistence: usize,
    /// Growth across one window that counts as flat, bytes (0: no floor).
    pub tolerance_bytes: u64,
    /// How far ahead a leak's cost is judged (error within it, warning beyond).
    pub horizon: HorizonSpec,
    /// Budget, bytes.
    pub budget_bytes: Option<u64>,
    /// Reaction to a leak or a budget crossing.
    pub on_leak: OnLeak,
    /// Where to sample.
    pub device: DeviceChoice,
    /// Report path; `None` = `$MEMLINT_REPORT_DIR/<function>-<pid>-<n>.json`.
    pub report: Option<&'static str>,
    /// The pinned primary source (`source = "nvml"`); `None` = automatic or `MEMLINT_SOURCE`.
    pub source: Option<&'static str>,
    /// Readings inside the sampled loop's body (phases, or every statement with `lines`).
    pub marks: &'static [Mark],
    /// `#[mem_guard(lines)]`: every statement of the loop body is marked.
    pub lines: bool,
}

impl Options {
    /// The defaults of `#[mem_guard]` without arguments.
    pub const DEFAULT: Options = Options {
        warmup: 10,
        window: 32,
        persistence: 3,
        tolerance_bytes: 0,
        horizon: HorizonSpec::DEFAULT,
        budget_bytes: None,
        on_leak: OnLeak::Warn,
        device: DeviceChoice::Auto,
        report: None,
        source: None,
        marks: &[],
        lines: false,
    };
}

/// Everything the macro knows about one guarded function, as a `static`.
#[derive(Debug)]
pub struct Site {
    /// Function name.
    pub function: &'static str,
    /// `file!()`.
    pub file: &'static str,
    /// The file's path on disk when the macro ran (for the snippet), or empty.
    pub source_path: &'static str,
    /// 1-based line of the function.
    pub line: u32,
    /// 1-based line and column of the sampled loop; `None` in call mode.
    pub loop_at: Option<(u32, u32)>,
    /// Options.
    pub options: Options,
    /// Static findings inside the function.
    pub static_findings: &'static [StaticFinding],
}

/// Whether guards are enabled (`MEMLINT` is not `off`/`0`/`false`), read once.
pub fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| {
        !matches!(
            std::env::var("MEMLINT").map(|v| v.trim().to_ascii_lowercase()).as_deref(),
            Ok("off" | "0" | "false" | "no")
        )
    })
}

/// Folder of the JSON reports: `$MEMLINT_REPORT_DIR`, default `target/memlint`.
pub fn report_dir() -> PathBuf {
    match std::env::var_os("MEMLINT_REPORT_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from("target").join("memlint"),
    }
}

fn report_path(site: &Site) -> PathBuf {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    match site.options.report {
        Some(path) => PathBuf::from(path),
        None => {
            let run = RUNS.fetch_add(1, Ordering::Relaxed);
            let name: String =
                site.function.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
            report_dir().join(format!("{name}-{}-{run}.json", std::process::id()))
        }
    }
}

pub(crate) fn notice_once(notice: &str) {
    static SHOWN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut shown = SHOWN.lock().unwrap_or_else(|p| p.into_inner());
    if !shown.iter().any(|s| s == notice) {
        eprintln!("{notice}");
        shown.push(notice.to_owned());
    }
}

/// What an iteration's end found that needs a reaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Leak,
    Budget,
}

/// The state of one run (loop mode) or one call site (call mode).
struct Run {
    site: &'static Site,
    /// Chosen at the first iteration (so a GPU set up before the loop is seen).
    sampler: Option<Box<dyn Sample>>,
    kind: BackendKind,
    device: String,
    /// The secondary sources (read at their own rates) and what the run keeps of the set.
    secondaries: Secondaries,
    shell: Option<Shell>,
    /// The first source whose detector declared a leak.
    leak_source: Option<BackendKind>,
    detector: Detector,
    /// Recorded samples; every `stride`-th iteration.
    samples: Vec<SampleRecord>,
    stride: u64,
    /// Completed iterations.
    iterations: u64,
    /// A sampled iteration is open (its start reset the peak; its end reads the sources).
    in_iteration: bool,
    /// How often to sample (`pace.rs`), and the iterations left to skip before the next
    /// sampled one; a skipped iteration is open.
    pace: Pace,
    skip: u64,
    skipping: bool,
    /// Added to `iterations` when the sampled iterations are chosen (multiples of the pace): a
    /// run that resumed its predecessor's pace goes on where that run's next read was due.
    phase: u64,
    /// Sampled iterations completed.
    sampled: u64,
    /// The primary source was pinned (`source = ..`, `MEMLINT_SOURCE`): never switched.
    source_pinned: bool,
    /// Start of the first iteration.
    started: Option<Instant>,
    last_allocated: u64,
    budget_breach: Option<BudgetBreach>,
    /// Leak diagnostic shown / budget diagnostic shown.
    leak_shown: bool,
    budget_shown: bool,
    /// Next iteration count at which the report is written while running.
    next_flush: u64,
    errors: Vec<String>,
    path: PathBuf,
    /// Readings at the marks of the loop body.
    phases: Recorder,
    /// The phases of the function's last run that recorded them, for a run that records none
    /// (it started owing time budget: `pace.rs`).
    earlier_phases: Option<Arc<Phases>>,
    /// Wall time spent inside the guard (ticks, reads at marks, reports written while running),
    /// nanoseconds: what the guard adds to the loop, measured where it runs.
    own_ns: u64,
    /// Of which: primary reads and peak resets, secondary reads, reports written while running.
    primary_ns: u64,
    secondary_ns: u64,
    write_ns: u64,
    /// Reads at the marks of recorded iterations (phases, lines), secondary sources excepted.
    marks_ns: u64,
    /// The primary detector and the sample records.
    detector_ns: u64,
}

impl Run {
    fn new(site: &'static Site) -> Self {
        let mut run = Self::fresh(site);
        if let Some(Resumed { pace, phases, due_in }) = resumed(site, site.options.warmup.max(MIN_TIMED_ITERATIONS)) {
            if pace.resumes() {
                // One loop over the runs: the first read is where the previous run's next one
                // was due, so a short call may read nothing (its time still repays the debt).
                let every = pace.every().max(1);
                run.skip = due_in % every;
                run.phase = (every - run.skip) % every;
                run.started = Some(Instant::now());
            }
            run.pace = pace;
            run.phases.pause();
            run.earlier_phases = phases;
        }
        run
    }

    /// A run that knows nothing of the function's earlier runs.
    fn fresh(site: &'static Site) -> Self {
        let o = site.options;
        Self {
            site,
            sampler: None,
            kind: BackendKind::HostRss,
            device: String::new(),
            secondaries: Secondaries::empty(),
            shell: None,
            leak_source: None,
            detector: Detector::new(detector_config(&o)),
            samples: Vec::with_capacity(256),
            stride: 1,
            iterations: 0,
            in_iteration: false,
            pace: Pace::new(o.warmup.max(MIN_TIMED_ITERATIONS)),
            skip: 0,
            skipping: false,
            phase: 0,
            sampled: 0,
            source_pinned: false,
            started: None,
            last_allocated: 0,
            budget_breach: None,
            leak_shown: false,
            budget_shown: false,
            next_flush: FIRST_FLUSH,
            errors: Vec::new(),
            path: report_path(site),
            phases: Recorder::new(o.marks),
            earlier_phases: None,
            own_ns: 0,
            primary_ns: 0,
            secondary_ns: 0,
            write_ns: 0,
            marks_ns: 0,
            detector_ns: 0,
        }
    }

    /// Adds the time since `from` to the guard's own time.
    fn charge(&mut self, from: Instant) {
        self.own_ns = self.own_ns.saturating_add(from.elapsed().as_nanos() as u64);
    }

    fn error(&mut self, message: String) {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(message);
        }
    }

    /// Bytes of this run's own growing storage, subtracted from host readings so the guard does
    /// not see itself grow.
    fn own_bytes(&self) -> u64 {
        (self.samples.capacity() * size_of::<SampleRecord>()) as u64
            + self.secondaries.own_bytes()
            + self.phases.heap_bytes()
    }

    /// Opens the sources (or takes them from the previous run with the same options).
    fn open_sources(&mut self) {
        let (pin, notice) = sources::pinned(self.site.options.source);
        self.source_pinned = pin.is_some();
        if let Some(notice) = notice {
            notice_once(&notice);
        }
        let set = sources::open(self.site.options.device, pin);
        for notice in &set.notices {
            notice_once(notice);
        }
        let (primary, secondary, shell) = set.split();
        self.kind = primary.kind();
        self.device = primary.device();
        self.sampler = Some(primary);
        let config = *self.detector.config();
        self.secondaries = Secondaries::new(secondary, config);
        let names: Vec<&'static str> = self.secondaries.kinds().iter().map(|k| k.source_name()).collect();
        self.phases.set_secondary(&names);
        self.shell = Some(shell);
    }

    /// Gives the sources back for the next run (opening them again costs milliseconds).
    fn release_sources(&mut self) {
        if let (Some(primary), Some(shell)) = (self.sampler.take(), self.shell.take()) {
            let secondaries = std::mem::replace(&mut self.secondaries, Secondaries::empty());
            sources::give_back(shell.join(primary, secondaries.into_opened()));
        }
    }

    /// The cheap path of a tick: ends a skipped iteration and, when the next one is skipped too,
    /// opens it; true when nothing else is to be done.
    #[inline]
    fn skip_tick(&mut self) -> bool {
        if self.skipping {
            self.skipping = false;
            self.iterations += 1;
        }
        if self.skip == 0 || self.in_iteration {
            return false;
        }
        self.skip -= 1;
        self.skipping = true;
        true
    }

    /// Starts the next iteration after a sampled one ended: sampled, or the first skipped one.
    fn begin_next(&mut self) {
        if self.skip > 0 {
            self.skip -= 1;
            self.skipping = true;
        } else {
            self.begin();
        }
    }

    /// Ends a skipped iteration at the loop's exit (a sampled one goes through `end`).
    fn end_skipped(&mut self) {
        if self.skipping {
            self.skipping = false;
            self.iterations += 1;
        }
    }

    fn begin(&mut self) {
        // The run's wall time includes the opening of the sources, which the guard's time does.
        if self.started.is_none() {
            self.started = Some(Instant::now());
        }
        if self.sampler.is_none() {
            self.open_sources();
        }
        if let Some(sampler) = self.sampler.as_mut() {
            let from = Instant::now();
            sampler.begin_iteration();
            self.primary_ns += from.elapsed().as_nanos() as u64;
        }
        self.in_iteration = true;
        if self.phases.enabled() {
            let iteration = self.iterations;
            let start = if self.phases.will_record(iteration) { self.read_sources() } else { None };
            let t_us = self.t_us();
            self.phases.begin(iteration, t_us, start.map(|r| r.allocated));
            if self.phases.active()
                && self.secondary_points(None)
                && let Some(sampler) = self.sampler.as_mut()
            {
                // The primary's peak starts after the secondary reads (the RSS read allocates).
                sampler.begin_iteration();
            }
        }
    }

    /// Microseconds since the first iteration started.
    fn t_us(&self) -> u64 {
        self.started.map_or(0, |s| s.elapsed().as_micros() as u64)
    }

    /// One reading of the memory source(s), the guard's own storage subtracted; `None` after a
    /// failed read (recorded in `errors`).
    fn read_sources(&mut self) -> Option<Reading> {
        let own = if self.kind.on_device() { 0 } else { self.own_bytes() };
        match self.sampler.as_mut()?.read() {
            Ok(r) => {
                let allocated = r.allocated.saturating_sub(own);
                Some(Reading {
                    allocated,
                    reserved: r.reserved,
                    peak: r.peak.map(|p| p.saturating_sub(own).max(allocated)),
                })
            }
            Err(e) => {
                self.error(format!("iteration {}: {e}", self.iterations));
                None
            }
        }
    }

    /// A mark inside the loop body: reads memory and starts the next segment (peak reset).
    fn mark(&mut self, mark: u32) {
        if !self.in_iteration || !self.phases.active() {
            return;
        }
        let (from, secondary) = (Instant::now(), self.secondary_ns);
        self.mark_inner(mark);
        let spent = from.elapsed().as_nanos() as u64;
        self.marks_ns += spent.saturating_sub(self.secondary_ns - secondary);
        self.charge(from);
    }

    fn mark_inner(&mut self, mark: u32) {
        let t_us = self.t_us();
        if let Some(reading) = self.read_sources() {
            self.phases.point(mark, t_us, reading);
        }
        self.secondary_points(Some(mark));
        if let Some(sampler) = self.sampler.as_mut() {
            sampler.begin_iteration();
        }
    }

    /// Reads the secondary sources that are read at the marks of this recorded iteration (see
    /// `phases.rs`) at `mark`, or at its start (`None`); returns whether any was read.
    fn secondary_points(&mut self, mark: Option<u32>) -> bool {
        let due = match mark {
            None => {
                let rates = self.secondaries.rates();
                let previous = (self.iterations == 0).then(|| previous_rates(self.site, rates.len())).flatten();
                self.phases.secondary_begin(previous.as_deref().unwrap_or(&rates))
            }
            Some(_) => self.phases.secondary_active(),
        };
        if due.is_empty() {
            return false;
        }
        let own = self.own_bytes();
        let from = Instant::now();
        for &index in &due {
            let Some((kind, result)) = self.secondaries.read_now(index) else { continue };
            let own = if kind.on_device() { 0 } else { own };
            let allocated = result.ok().map(|r| r.allocated.saturating_sub(own));
            let t_us = self.t_us();
            match mark {
                None => self.phases.secondary_start(index, t_us, allocated),
                Some(mark) => self.phases.secondary_point(index, mark, t_us, allocated),
            }
        }
        self.secondary_ns += from.elapsed().as_nanos() as u64;
        true
    }

    /// Ends the current iteration: samples, feeds the detector, checks the budget.
    fn end(&mut self) -> Option<Event> {
        if !self.in_iteration {
            return None;
        }
        self.in_iteration = false;
        let iteration = self.iterations;
        self.iterations += 1;
        let own = self.own_bytes();
        // One clock read: the primary read's time and the tick's own time so far.
        let entered = Instant::now();
        let read = self.sampler.as_mut().map(|s| s.read());
        self.primary_ns += entered.elapsed().as_nanos() as u64;
        let reading = match read {
            Some(Ok(r)) => r,
            Some(Err(e)) => {
                self.error(format!("iteration {iteration}: {e}"));
                return None;
            }
            None => return None,
        };
        let own_here = if self.kind.on_device() { 0 } else { own };
        let allocated = reading.allocated.saturating_sub(own_here);
        let peak = reading.peak.map(|p| p.saturating_sub(own_here).max(allocated));
        let mut peak = peak;
        if self.phases.active() {
            // The marks reset the high-water mark: the iteration's peak is the highest segment's.
            let segments = self.phases.iteration_peak();
            let t_us = self.t_us();
            self.phases.point(END, t_us, Reading { allocated, reserved: reading.reserved, peak });
            self.secondary_points(Some(END));
            peak = match (peak, segments) {
                (Some(p), Some(s)) => Some(p.max(s)),
                (p, s) => p.or(s),
            };
        }
        self.last_allocated = allocated;
        let from = Instant::now();
        self.record(iteration, Reading { allocated, reserved: reading.reserved, peak });
        let mut event = None;
        let observed = self.detector.observe(iteration, allocated);
        self.detector_ns += from.elapsed().as_nanos() as u64;
        if let Some(hit) = observed {
            if self.is_negligible(hit.growth_bytes_per_iteration) {
                // A few bytes per iteration for years: not worth a report. Start over, so a
                // real leak that begins later is still seen.
                self.detector = self.new_detector();
            } else {
                event = Some(Event::Leak);
                self.leak_source.get_or_insert(self.kind);
            }
        }
        let from = Instant::now();
        let secondary_leak = self.secondaries.end(iteration, own).first().copied();
        self.secondary_ns += from.elapsed().as_nanos() as u64;
        if let Some(kind) = secondary_leak {
            event = Some(Event::Leak);
            self.leak_source.get_or_insert(kind);
        }
        if let (Some(budget), None) = (self.site.options.budget_bytes, self.budget_breach) {
            let bytes = peak.unwrap_or(allocated);
            if bytes > budget {
                self.budget_breach = Some(BudgetBreach { budget_bytes: budget, iteration, bytes });
                event = Some(Event::Budget);
            }
        }
        self.sampled += 1;
        let flush = self.iterations >= self.next_flush;
        self.choose_pace(flush, entered);
        if flush {
            self.next_flush = self.next_flush.saturating_mul(2);
            // On a leak or a budget crossing `react` writes the report.
            if event.is_none() && self.started.is_some_and(|s| s.elapsed() >= MIN_FLUSH_AGE) {
                let from = Instant::now();
                if let Some(report) = self.report_if_open("running") {
                    crate::writer::write_later(self.path.clone(), report);
                }
                self.write_ns += from.elapsed().as_nanos() as u64;
            }
        }
        event
    }

    /// Chooses the pace again when it is due (`pace.rs`), and how many iterations to skip before
    /// the next sampled one: sampled iterations are the multiples of the rate.
    /// `entered`: when this tick's `end` began. The tick is charged to `own_ns` only when it
    /// returns, but its secondary reads are already in `secondary_ns`: the guard's time so far
    /// counts it, so that the time left once those reads are taken out never runs backwards (it
    /// did, by a whole NVML read, and the pace then read a mean tick of 0 and sampled every
    /// iteration).
    fn choose_pace(&mut self, flush: bool, entered: Instant) {
        // The next choice is at the next flush (`next_flush` doubles after this one).
        let next = if flush { self.next_flush.saturating_mul(2) } else { self.next_flush };
        let own = self.own_ns + entered.elapsed().as_nanos() as u64;
        let counters = Counters {
            iterations: self.iterations,
            sampled: self.sampled,
            tick_ns: own.saturating_sub(self.secondary_ns + self.write_ns),
            marks_ns: self.marks_ns,
            spent_ns: own,
            horizon: next.saturating_sub(self.iterations),
        };
        let chosen = self.pace.after_sample(Instant::now(), counters, flush, self.secondaries.len());
        if chosen.is_some() && self.pace.report().choices == 1 {
            self.leave_an_empty_pool();
        }
        let every = self.pace.every_at(self.iterations);
        if let Some(choice) = chosen {
            self.secondaries.set_rates(choice.secondary_share, every);
        }
        self.secondaries.regrid(every);
        let at = self.iterations + self.phase;
        self.skip = at.next_multiple_of(every) - at;
    }

    /// Never silently blind: when the CUDA pool has held nothing in every iteration of the
    /// warm-up (libtorch's caching allocator bypasses it) and NVML sees this process's device
    /// memory, NVML becomes the primary source for the rest of the run (and for later runs of
    /// the function) and the pool a secondary one. The pool's series so far is dropped.
    fn leave_an_empty_pool(&mut self) {
        let empty = |s: &SampleRecord| s.allocated_bytes == 0 && s.reserved_bytes.unwrap_or(0) == 0;
        if self.source_pinned || self.kind != BackendKind::Cuda || !self.samples.iter().all(empty) {
            return;
        }
        let (Some(pool), Some(shell)) = (self.sampler.take(), self.shell.as_mut()) else { return };
        let old = sources::Opened { sampler: pool, cost: shell.primary_cost() };
        match self.secondaries.promote(BackendKind::NvmlProcess, old) {
            Ok(nvml) => {
                notice_once(&format!(
                    "memlint: `{}`: the CUDA pool held no memory in the first {} iterations (this \
                     process allocates outside it, as libtorch does): reading its device memory \
                     through nvml-process from now on",
                    self.site.function, self.iterations
                ));
                shell.set_primary_cost(nvml.cost);
                self.kind = nvml.sampler.kind();
                self.device = nvml.sampler.device();
                self.sampler = Some(nvml.sampler);
                self.samples.clear();
                self.stride = 1;
                self.detector = Detector::new(detector_config(&self.site.options));
                // The new source starts without the warm-up iterations the detector learns the
                // loop's steps from (libtorch's cache grows in 20 MiB blocks): it gets as many
                // more iterations read every iteration.
                self.pace.extend_dense(self.site.options.warmup);
                let names: Vec<&'static str> = self.secondaries.kinds().iter().map(|k| k.source_name()).collect();
                self.phases = Recorder::new(self.site.options.marks);
                self.phases.set_secondary(&names);
            }
            Err(old) => self.sampler = Some(old.sampler),
        }
    }

    /// A detector for the primary source at the current pace.
    fn new_detector(&self) -> Detector {
        let config = detector_config(&self.site.options);
        if self.pace.every() > 1 { Detector::sparse(config) } else { Detector::new(config) }
    }

    fn record(&mut self, iteration: u64, reading: Reading) {
        if !iteration.is_multiple_of(self.stride) {
            return;
        }
        if self.samples.len() == MAX_SAMPLES {
            let mut keep = 0;
            for i in (0..self.samples.len()).step_by(2) {
                self.samples[keep] = self.samples[i];
                keep += 1;
            }
            self.samples.truncate(keep);
            self.stride *= 2;
            if !iteration.is_multiple_of(self.stride) {
                return;
            }
        }
        self.samples.push(SampleRecord {
            iteration,
            allocated_bytes: reading.allocated,
            reserved_bytes: reading.reserved,
            peak_bytes: reading.peak,
        });
    }

    fn seconds_per_iteration(&self) -> Option<f64> {
        let started = self.started?;
        (self.iterations > 0).then(|| started.elapsed().as_secs_f64() / self.iterations as f64)
    }

    fn capacity(&mut self) -> Option<Capacity> {
        self.sampler.as_mut()?.capacity()
    }

    fn verdict(&mut self) -> Verdict {
        let warmup = self.site.options.warmup;
        let after: Vec<(u64, u64)> =
            self.samples.iter().filter(|s| s.iteration >= warmup).map(|s| (s.iteration, s.allocated_bytes)).collect();
        let fit = overall_fit(&after);
        let total_growth = match (after.first(), after.last()) {
            (Some(first), Some(last)) => last.1 as i64 - first.1 as i64,
            _ => 0,
        };
        let detection = self.detector.detection();
        let growth = match detection {
            Some(d) if after.len() < 2 => d.growth_bytes_per_iteration,
            _ => fit.slope,
        };
        let mut verdict = Verdict {
            leak: detection.is_some(),
            growth_bytes_per_iteration: growth,
            total_growth_bytes: total_growth,
            detected_at_iteration: detection.map(|d| d.iteration),
            detected_by: detection.map(|d| match d.horizon {
                Horizon::Window => "window",
                Horizon::Long => "long",
            }),
            projected_iterations_to_exhaustion: None,
            projected_seconds_to_exhaustion: None,
            exhaustion_limit: None,
            severity: None,
            horizon_iterations: None,
            noise_bytes: detection.map(|d| d.noise_bytes),
            growth_lower_bytes_per_iteration: detection.map(|d| d.growth_lower_bytes_per_iteration),
        };
        if detection.is_some() || self.budget_breach.is_some() {
            self.project(&mut verdict);
        }
        if detection.is_some() {
            let horizon = self.site.options.horizon.iterations(self.seconds_per_iteration());
            verdict.horizon_iterations = horizon;
            verdict.severity = Some(severity(verdict.projected_iterations_to_exhaustion, horizon).as_str());
        }
        verdict
    }

    /// Whether growth at `rate` bytes per iteration runs out of memory only after more than
    /// [`crate::cost::NEGLIGIBLE_HORIZONS`] horizons.
    fn is_negligible(&mut self, rate: f64) -> bool {
        let mut verdict = Verdict { growth_bytes_per_iteration: rate, ..Verdict::default() };
        self.project(&mut verdict);
        let horizon = self.site.options.horizon.iterations(self.seconds_per_iteration());
        negligible(verdict.projected_iterations_to_exhaustion, horizon)
    }

    /// Fills the projection: the earlier of the budget and the device/host memory.
    fn project(&mut self, verdict: &mut Verdict) {
        let growth = verdict.growth_bytes_per_iteration;
        let used = self.last_allocated;
        let mut best: Option<(u64, &'static str)> = None;
        if let Some(budget) = self.site.options.budget_bytes {
            best = iterations_until(used, budget, growth).map(|n| (n, "budget"));
        }
        if let Some(capacity) = self.capacity() {
            let limit = if self.kind == BackendKind::Cuda { "device" } else { "host" };
            // `available` is what is still free; for the host RSS it excludes our own usage.
            if let Some(n) = iterations_until(0, capacity.available, growth)
                && best.is_none_or(|(b, _)| n < b)
            {
                best = Some((n, limit));
            }
        }
        if let Some((n, limit)) = best {
            verdict.projected_iterations_to_exhaustion = Some(n);
            verdict.exhaustion_limit = Some(limit);
            verdict.projected_seconds_to_exhaustion = self.seconds_per_iteration().map(|s| s * n as f64);
        }
    }

    /// Every source's entry (the primary one first) and the blind notes.
    fn sources_report(&mut self, verdict: &Verdict) -> (Vec<SourceReport>, Vec<String>) {
        let seconds = self.seconds_per_iteration();
        let mut entries = vec![SourceReport {
            source: self.kind.source_name(),
            device: self.device.clone(),
            primary: true,
            read_every: 1,
            read_cost_ns: self.shell.as_ref().map_or(0, |s| s.primary_cost().as_nanos() as u64),
            run_read_cost_ns: None,
            run_read_max_ns: None,
            sample_stride: self.stride,
            samples: self.samples.clone(),
            verdict: verdict.clone(),
            errors: self.errors.len() as u64,
        }];
        entries.extend(self.secondaries.reports(self.site.options.warmup, seconds));
        let mut blind: Vec<String> = self.shell.as_ref().map_or_else(Vec::new, |s| s.unavailable().to_vec());
        blind.extend(sources::blind_notes(self.kind, verdict.leak, &self.secondaries.leaking()));
        blind.extend(sources::empty_primary_note(self.kind, self.site.options.warmup, &self.samples, &entries));
        (entries, blind)
    }

    fn report(&mut self, outcome: &'static str) -> Report {
        let verdict = self.verdict();
        let (sources, blind) = self.sources_report(&verdict);
        let o = self.site.options;
        Report {
            version: crate::report::SCHEMA_VERSION,
            function: self.site.function,
            file: self.site.file,
            line: self.site.line,
            loop_line: self.site.loop_at.map(|(line, _)| line),
            mode: if self.site.loop_at.is_some() { "loop" } else { "call" },
            backend: self.kind.as_str(),
            device: if self.device.is_empty() { "host".to_owned() } else { self.device.clone() },
            pid: std::process::id(),
            outcome,
            warmup: o.warmup,
            window: o.window,
            tolerance_bytes: o.tolerance_bytes,
            budget_bytes: o.budget_bytes,
            iterations: self.iterations,
            reads: self.sampled,
            elapsed_seconds: self.started.map_or(0.0, |s| s.elapsed().as_secs_f64()),
            guard_seconds: self.own_ns as f64 * 1e-9,
            guard_time: crate::report::GuardTime {
                primary_seconds: self.primary_ns as f64 * 1e-9,
                secondary_seconds: self.secondary_ns as f64 * 1e-9,
                write_seconds: self.write_ns as f64 * 1e-9,
                marks_seconds: self.marks_ns as f64 * 1e-9,
                detector_seconds: self.detector_ns as f64 * 1e-9,
            },
            pace: self.pace.report(),
            sample_stride: self.stride,
            samples: self.samples.clone(),
            verdict,
            budget_breach: self.budget_breach,
            static_findings: self.site.static_findings,
            errors: self.errors.clone(),
            sources,
            blind,
            phases: match &self.earlier_phases {
                Some(earlier) => Some(Phases { from_earlier_run: true, ..(**earlier).clone() }),
                None => self.phases.report(self.kind.as_str(), o.lines, &self.secondaries.rates()),
            },
            lines: self.line_rows(o.lines),
        }
    }

    /// The line table of `#[mem_guard(lines)]`, with the static findings at each line.
    fn line_rows(&self, lines: bool) -> Vec<crate::phases::LineRow> {
        if !lines {
            return Vec::new();
        }
        let recorded;
        let phases = match &self.earlier_phases {
            Some(earlier) => &**earlier,
            None => match self.phases.primary(self.kind.as_str(), true) {
                Some(p) => {
                    recorded = p;
                    &recorded
                }
                None => return Vec::new(),
            },
        };
        let findings: Vec<(u32, String)> =
            self.site.static_findings.iter().map(|f| (f.line, format!("{}: {}", f.rule, f.message))).collect();
        line_table(phases, &findings)
    }

    /// The report of the run so far, once its sources are open.
    fn report_if_open(&mut self, outcome: &'static str) -> Option<Report> {
        self.sampler.as_ref()?;
        Some(self.report(outcome))
    }

    /// Hands the report of the run so far to the writer thread (`writer.rs`), and returns it.
    fn write_running(&mut self) -> Option<Report> {
        let report = self.report_if_open("running")?;
        crate::writer::write_later(self.path.clone(), report.clone());
        Some(report)
    }

    /// Reacts to an event: prints the diagnostic; returns the panic message for `on_leak = "panic"`.
    /// A slow leak (severity `warning`: memory runs out only beyond the horizon) never panics.
    fn react(&mut self, event: Event) -> Option<String> {
        let from = Instant::now();
        let shown = self.write_running().and_then(|report| Some((self.show(&report, event)?, report)));
        // Counted with the writes: a one-off cost, not the cost of a sampled iteration.
        self.write_ns += from.elapsed().as_nanos() as u64;
        let (message, report) = shown?;
        let slow = event == Event::Leak && report.verdict.severity == Some(Severity::Warning.as_str());
        (self.site.options.on_leak == OnLeak::Panic && !slow).then_some(message)
    }

    /// Prints the diagnostic for `event` once; returns its one-line message.
    fn show(&mut self, report: &Report, event: Event) -> Option<String> {
        let shown = match event {
            Event::Leak => &mut self.leak_shown,
            Event::Budget => &mut self.budget_shown,
        };
        if *shown {
            return None;
        }
        *shown = true;
        let diagnostic = diagnostic(self.site, report, event, &self.path);
        eprint!("{}", diagnostic.render(std::io::stderr().is_terminal(), 100));
        Some(diagnostic.to_string())
    }

    /// Final report; never panics (called from `Drop`). It is handed to the writer thread
    /// (`writer.rs`) unless `now`: a panicking run, or the flush at process exit, writes it on
    /// this thread.
    fn finish(&mut self, outcome: &'static str, now: bool) {
        if self.sampler.is_none() {
            if self.iterations == 0 {
                return;
            }
            // A run that went on at its predecessor's pace and read nothing: its report says so,
            // from the sources the predecessor left open (taking them reads nothing).
            self.open_sources();
        }
        let report = self.report(outcome);
        if crate::summary::wanted() {
            print_summary(&report);
        }
        if report.verdict.leak && !self.leak_shown {
            self.show(&report, Event::Leak);
        }
        // Never silently blind: a device source that saw nothing at all is said once.
        if !self.leak_shown
            && let Some(note) =
                sources::empty_primary_note(self.kind, self.site.options.warmup, &self.samples, &report.sources)
        {
            // Once per guarded function: the read counts in the text differ from call to call.
            static NAMED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
            let mut named = NAMED.lock().unwrap_or_else(|p| p.into_inner());
            if !named.contains(&self.site.function) {
                named.push(self.site.function);
                eprintln!("memlint: `{}`: {note}", self.site.function);
            }
        }
        if report.budget_breach.is_some() && !self.budget_shown {
            self.show(&report, Event::Budget);
        }
        let ledger = self.pace.ledger(Instant::now(), self.own_ns);
        let memory = RunMemory {
            rates: self.secondaries.rates(),
            ledger,
            pace: self.pace.report(),
            phases: report.phases.as_ref(),
            due_in: self.skip,
        };
        remember_run(self.site, memory);
        if now {
            if let Err(e) = crate::writer::write_now(&self.path, &report) {
                notice_once(&format!("memlint: cannot write report {}: {e}", self.path.display()));
            }
        } else {
            crate::writer::write_later(self.path.clone(), report);
        }
    }
}

/// What a site's finished runs in this process left for its later ones, by the site's address.
struct SiteMemory {
    key: usize,
    /// The secondary sources' rates the last run ended with (0: never chosen).
    rates: Vec<u64>,
    /// The guard's time over all the runs, for the budget ([`Pace::resumed`]).
    ledger: Ledger,
    /// The last pace chosen (a run that made no choice keeps its predecessor's).
    pace: PaceReport,
    /// The phases of the last run that recorded them (shared with the runs that resume from it:
    /// a call that starts at an earlier pace takes them without copying the records).
    phases: Option<Arc<Phases>>,
    /// Iterations the last run still had to go, when it ended, before its next read.
    due_in: u64,
}

/// What one finished run leaves for [`remember_run`].
struct RunMemory<'a> {
    /// The secondary sources' rates it ended with (0: never chosen).
    rates: Vec<u64>,
    /// Its guard time and wall time, as the budget counts them.
    ledger: Ledger,
    /// Its pace.
    pace: PaceReport,
    /// Its report's phases.
    phases: Option<&'a Phases>,
    /// Iterations it still had to go, when it ended, before its next read.
    due_in: u64,
}

static FINISHED: Mutex<Vec<SiteMemory>> = Mutex::new(Vec::new());

/// Remembers the rates `site`'s run ended with, its pace and where its next read was due, and
/// adds its guard time to the site's ledger. Rates and a pace never chosen (a short run that
/// went on at its predecessor's pace) keep the earlier ones; `phases` are kept when the run
/// recorded some.
fn remember_run(site: &'static Site, run: RunMemory<'_>) {
    let key = std::ptr::from_ref(site) as usize;
    let RunMemory { rates, ledger, pace, phases, due_in } = run;
    let phases = phases.filter(|p| !p.from_earlier_run && !p.records.is_empty()).map(|p| Arc::new(p.clone()));
    let mut sites = FINISHED.lock().unwrap_or_else(|p| p.into_inner());
    match sites.iter_mut().find(|m| m.key == key) {
        Some(m) => {
            if rates.iter().all(|&n| n > 0) || m.rates.len() != rates.len() {
                m.rates = rates;
            }
            m.ledger.add(ledger);
            if pace.choices > 0 || m.pace.choices == 0 {
                m.pace = pace;
            }
            if phases.is_some() {
                m.phases = phases;
            }
            m.due_in = due_in;
        }
        None => sites.push(SiteMemory { key, rates, ledger, pace, phases, due_in }),
    }
}

/// The rates of `site`'s previous run when it had `count` secondary sources and chose them: the
/// first iteration of a later run reads at its marks only the sources read every iteration (the
/// first run reads them all there once: an NVML listing costs up to 290 µs a read, and six of
/// them took a 300-step call's whole budget).
fn previous_rates(site: &'static Site, count: usize) -> Option<Vec<u64>> {
    let key = std::ptr::from_ref(site) as usize;
    let sites = FINISHED.lock().unwrap_or_else(|p| p.into_inner());
    sites
        .iter()
        .find(|m| m.key == key && m.rates.len() == count && m.rates.iter().all(|&n| n > 0))
        .map(|m| m.rates.clone())
}

/// A new run of a function whose earlier runs in this process spent beyond the budget.
struct Resumed {
    /// Its pace ([`Pace::resumed`], from what they owe and the last pace chosen).
    pace: Pace,
    /// The phases of the last run that recorded them.
    phases: Option<Arc<Phases>>,
    /// Iterations before its first read, where the last run's next one was due.
    due_in: u64,
}

/// How a new run of `site` goes on from its earlier runs; `None` when nothing is owed.
fn resumed(site: &'static Site, decide_at: u64) -> Option<Resumed> {
    let key = std::ptr::from_ref(site) as usize;
    let sites = FINISHED.lock().unwrap_or_else(|p| p.into_inner());
    let m = sites.iter().find(|m| m.key == key)?;
    let pace = Pace::resumed(decide_at, m.ledger.owed(), Some(m.pace));
    (pace.report().carried_seconds > 0.0).then(|| Resumed { pace, phases: m.phases.clone(), due_in: m.due_in })
}

/// The detector's settings from the macro's options.
fn detector_config(o: &Options) -> DetectorConfig {
    DetectorConfig {
        warmup: o.warmup,
        window: o.window,
        tolerance_bytes: o.tolerance_bytes,
        persistence: o.persistence,
    }
}

/// `MEMLINT_SUMMARY=1`: the summary of the final report on stderr (read back through the same
/// model as `cargo memlint report`, so both print the same).
fn print_summary(report: &Report) {
    let view =
        serde_json::to_value(report).ok().and_then(|v| serde_json::from_value::<crate::view::ReportView>(v).ok());
    if let Some(view) = view {
        eprint!("{}", crate::summary::render(&view));
    }
}

/// Builds the miette diagnostic of `event` from a report.
fn diagnostic(site: &Site, report: &Report, event: Event, path: &std::path::Path) -> GuardDiagnostic {
    let (line, column) = site.loop_at.unwrap_or((site.line, 0));
    let location = Location { display: site.file, path: site.source_path, line, column };
    // The source that grew: the primary one, else the first secondary one that found a leak.
    let grew = if report.verdict.leak { None } else { report.sources.iter().find(|s| !s.primary && s.verdict.leak) };
    let v = grew.map_or(&report.verdict, |s| &s.verdict);
    let per_iteration = human_bytes(v.growth_bytes_per_iteration);
    let unit = if site.loop_at.is_some() { "iteration" } else { "call" };
    let (source, memory) = match grew {
        Some(s) => (s.source, BackendKind::parse(s.source).map_or("memory", BackendKind::memory_noun)),
        None => (report.sources.first().map_or(report.backend, |s| s.source), report.backend_memory()),
    };
    let slow = event == Event::Leak && v.severity == Some(Severity::Warning.as_str());
    let (code, message, label) = match event {
        Event::Leak if slow => (
            "memlint::runtime_slow_leak",
            format!("memory grows slowly but steadily by {per_iteration} per {unit} in `{}` ({source})", site.function),
            format!("{per_iteration} more {memory} after each {unit} of this loop"),
        ),
        Event::Leak => (
            "memlint::runtime_leak",
            format!("memory grows by {per_iteration} per {unit} in `{}` ({source})", site.function),
            format!("{per_iteration} more {memory} after each {unit} of this loop"),
        ),
        Event::Budget => {
            let breach = report.budget_breach.unwrap_or(BudgetBreach { budget_bytes: 0, iteration: 0, bytes: 0 });
            (
                "memlint::budget_exceeded",
                format!(
                    "memory budget of {} exceeded in `{}`: {} in use at {unit} {}",
                    human_bytes(breach.budget_bytes as f64),
                    site.function,
                    human_bytes(breach.bytes as f64),
                    breach.iteration
                ),
                format!("{unit} {} crossed the budget", breach.iteration),
            )
        }
    };
    let label = if site.loop_at.is_some() { label } else { format!("each call of `{}` is one {unit}", site.function) };
    let mut d = GuardDiagnostic::new(code, message, label, location);
    if slow {
        d = d.with_severity(miette::Severity::Warning);
    }
    for finding in site.static_findings {
        d = d.with_line_label(finding.line, format!("likely cause: {}", finding.rule));
    }
    let mut help = String::new();
    if let (Some(n), Some(limit)) = (v.projected_iterations_to_exhaustion, v.exhaustion_limit) {
        let what = match limit {
            "budget" => format!("the budget of {}", human_bytes(report.budget_bytes.unwrap_or(0) as f64)),
            "device" => format!("{} memory", report.device),
            _ => "host memory".to_owned(),
        };
        help.push_str(&format!("at this rate {what} runs out in {n} {unit}s"));
        if let Some(s) = v.projected_seconds_to_exhaustion {
            help.push_str(&format!(" (about {})", human_seconds(s)));
        }
        if event == Event::Leak {
            let within = if slow { "beyond" } else { "within" };
            help.push_str(&format!(", {within} the horizon of {}", site.options.horizon.describe(unit)));
        }
        help.push('\n');
    }
    if site.static_findings.is_empty() {
        help.push_str(
            "look for values kept across iterations that hold tensors or graphs (sums of losses, Vecs of outputs)",
        );
    } else {
        help.push_str("likely causes found by memlint's static rules:");
        for f in site.static_findings {
            help.push_str(&format!("\n  - line {}: {} [{}]", f.line, f.message, f.rule));
        }
    }
    for note in &report.blind {
        help.push_str(&format!("\nnot seen by the primary source: {note}"));
    }
    let detected = match v.detected_at_iteration {
        Some(i) => format!(", detected at {unit} {i}"),
        None => String::new(),
    };
    d.with_help(help).with_note(format!(
        "{} {unit}s sampled on {} ({}), warm-up {}{detected}; total growth {}; report: {}",
        report.iterations,
        report.device,
        report.backend,
        report.warmup,
        human_bytes(v.total_growth_bytes as f64),
        path.display()
    ))
}

impl Report {
    fn backend_memory(&self) -> &'static str {
        match self.backend {
            "cuda" => "GPU memory",
            other => BackendKind::parse(other).map_or("memory", BackendKind::memory_noun),
        }
    }
}

/// The guard of one run of a function whose loop is sampled (loop mode).
pub struct Guard {
    run: Option<Box<Run>>,
}

impl Guard {
    /// Starts a run of `site`; a no-op guard when `MEMLINT=off`.
    pub fn enter(site: &'static Site) -> Self {
        Self { run: enabled().then(|| Box::new(Run::new(site))) }
    }

    /// Start of an iteration of the sampled loop: ends the previous one (if any) and begins this
    /// one. Panics with `on_leak = "panic"` when the previous iteration revealed a leak or crossed
    /// the budget.
    #[inline]
    pub fn tick(&mut self) {
        if let Some(run) = self.run.as_deref_mut() {
            if run.skip_tick() {
                return;
            }
            let from = Instant::now();
            let panic = run.end().and_then(|event| run.react(event));
            run.begin_next();
            run.charge(from);
            if let Some(message) = panic {
                panic!("{message}");
            }
        }
    }

    /// After a statement of the loop body that ends a phase (or any statement with `lines`):
    /// reads memory in recorded iterations (see `phases.rs`); a branch otherwise.
    #[inline]
    pub fn mark(&mut self, mark: u32) {
        if let Some(run) = self.run.as_deref_mut() {
            run.mark(mark);
        }
    }

    /// The sampled loop finished: ends its last iteration.
    #[inline]
    pub fn loop_exit(&mut self) {
        if let Some(run) = self.run.as_deref_mut() {
            run.end_skipped();
            let from = Instant::now();
            let panic = run.end().and_then(|event| run.react(event));
            run.charge(from);
            if let Some(message) = panic {
                panic!("{message}");
            }
        }
    }

    /// Completed iterations so far (0 when disabled).
    pub fn iterations(&self) -> u64 {
        self.run.as_ref().map_or(0, |r| r.iterations)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(run) = self.run.as_deref_mut() {
            let outcome = if std::thread::panicking() { "panicked" } else { "returned" };
            // An iteration cut short by `return`/`?`/panic is not a sample.
            run.in_iteration = false;
            run.skipping = false;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run.finish(outcome, outcome == "panicked");
                run.release_sources();
            }));
        }
    }
}

/// Per-call-site state of a function sampled once per call (call mode), kept in a `static`.
pub struct SiteState {
    site: &'static Site,
    run: Mutex<Option<Run>>,
    /// A leak/breach found at the end of a call with `on_leak = "panic"`: the next call panics
    /// (a `Drop` must not).
    pending_panic: Mutex<Option<String>>,
    registered: AtomicBool,
}

impl SiteState {
    /// State for `site`; `const` so it can initialise a `static`.
    pub const fn new(site: &'static Site) -> Self {
        Self { site, run: Mutex::new(None), pending_panic: Mutex::new(None), registered: AtomicBool::new(false) }
    }

    /// Completed calls so far.
    pub fn iterations(&self) -> u64 {
        self.run.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map_or(0, |r| r.iterations)
    }

    /// Writes the report now (also done at process exit).
    pub fn flush(&self) {
        if let Some(run) = self.run.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            run.finish("returned", true);
        }
    }
}

static SITES: Mutex<Vec<&'static SiteState>> = Mutex::new(Vec::new());

extern "C" fn flush_sites_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        let sites: Vec<&'static SiteState> = SITES.lock().map(|s| s.clone()).unwrap_or_default();
        for site in sites {
            site.flush();
        }
    });
}

fn register(state: &'static SiteState) {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    if !state.registered.swap(true, Ordering::AcqRel) {
        SITES.lock().unwrap_or_else(|p| p.into_inner()).push(state);
        AT_EXIT.call_once(|| {
            // SAFETY: registers a plain `extern "C"` function without arguments.
            unsafe { libc::atexit(flush_sites_at_exit) };
        });
    }
}

/// One call of a function sampled per call (call mode).
pub struct CallScope {
    state: Option<&'static SiteState>,
}

impl CallScope {
    /// Begins a call. Panics when the previous call found a leak and `on_leak = "panic"`.
    pub fn enter(state: &'static SiteState) -> Self {
        if !enabled() {
            return Self { state: None };
        }
        if let Some(message) = state.pending_panic.lock().unwrap_or_else(|p| p.into_inner()).take() {
            panic!("{message}");
        }
        register(state);
        let mut run = state.run.lock().unwrap_or_else(|p| p.into_inner());
        let run = run.get_or_insert_with(|| Run::new(state.site));
        if !run.skip_tick() {
            let from = Instant::now();
            run.begin_next();
            run.charge(from);
        }
        Self { state: Some(state) }
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        let Some(state) = self.state else { return };
        let panicking = std::thread::panicking();
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut guard = state.run.lock().unwrap_or_else(|p| p.into_inner());
            let Some(run) = guard.as_mut() else { return };
            if run.skipping {
                run.end_skipped();
                return;
            }
            if panicking {
                run.in_iteration = false;
                run.skipping = false;
                run.finish("panicked", true);
                return;
            }
            let from = Instant::now();
            let panic = run.end().and_then(|event| run.react(event));
            run.charge(from);
            if let Some(message) = panic {
                *state.pending_panic.lock().unwrap_or_else(|p| p.into_inner()) = Some(message);
            }
        }));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::SCHEMA_VERSION;

    /// A loop site of `src/train.rs` with `options`, for the tests (leaked: sites are static).
    fn test_site(function: &'static str, options: Options) -> &'static Site {
        Box::leak(Box::new(Site {
            function,
            file: "src/train.rs",
            source_path: "",
            line: 1,
            loop_at: Some((4, 5)),
            options,
            static_findings: &[],
        }))
    }

    /// A report of a run that found nothing, for tests elsewhere in the crate.
    pub(crate) fn empty_report() -> Report {
        let site = test_site("train", Options::DEFAULT);
        let mut report = leak_report(site);
        report.verdict = Verdict::default();
        report
    }

    fn leak_report(site: &'static Site) -> Report {
        Report {
            version: SCHEMA_VERSION,
            function: site.function,
            file: site.file,
            line: site.line,
            loop_line: site.loop_at.map(|l| l.0),
            mode: "loop",
            backend: "host-allocator",
            device: "host".to_owned(),
            pid: 1,
            outcome: "running",
            warmup: 10,
            window: 12,
            tolerance_bytes: 1 << 20,
            budget_bytes: Some(1 << 30),
            iterations: 37,
            reads: 37,
            elapsed_seconds: 3.7,
            guard_seconds: 0.0,
            guard_time: Default::default(),
            pace: Default::default(),
            sample_stride: 1,
            samples: Vec::new(),
            verdict: Verdict {
                leak: true,
                growth_bytes_per_iteration: 2.0 * 1024.0 * 1024.0,
                total_growth_bytes: 54 << 20,
                detected_at_iteration: Some(36),
                detected_by: Some("window"),
                projected_iterations_to_exhaustion: Some(480),
                projected_seconds_to_exhaustion: Some(48.0),
                exhaustion_limit: Some("budget"),
                severity: Some("error"),
                horizon_iterations: Some(864_000),
                noise_bytes: Some(0.0),
                growth_lower_bytes_per_iteration: Some(2.0 * 1024.0 * 1024.0),
            },
            budget_breach: None,
            static_findings: site.static_findings,
            errors: Vec::new(),
            sources: Vec::new(),
            blind: Vec::new(),
            phases: None,
            lines: Vec::new(),
        }
    }

    /// Memory the fake sources of each test report, set by its loop (one static per test:
    /// tests run in parallel).
    static MEMORY: AtomicU64 = AtomicU64::new(0);
    static PACED_MEMORY: AtomicU64 = AtomicU64::new(0);
    static SWITCH_MEMORY: AtomicU64 = AtomicU64::new(0);

    /// A device source (no own bytes subtracted) reading `scale × memory`.
    struct Fake {
        kind: BackendKind,
        memory: &'static AtomicU64,
        scale: u64,
        /// Time each read takes.
        delay: std::time::Duration,
    }

    fn fake(kind: BackendKind, memory: &'static AtomicU64, scale: u64) -> Box<Fake> {
        Box::new(Fake { kind, memory, scale, delay: std::time::Duration::ZERO })
    }

    impl Sample for Fake {
        fn kind(&self) -> BackendKind {
            self.kind
        }
        fn device(&self) -> String {
            "cuda:0".to_owned()
        }
        fn begin_iteration(&mut self) {}
        fn read(&mut self) -> Result<Reading, crate::sampler::SampleError> {
            if !self.delay.is_zero() {
                std::thread::sleep(self.delay);
            }
            let bytes = self.memory.load(Ordering::Relaxed) * self.scale;
            Ok(Reading { allocated: bytes, reserved: None, peak: Some(bytes) })
        }
        fn capacity(&mut self) -> Option<Capacity> {
            None
        }
    }

    /// A loop with a primary source and two secondary ones: the cheap one is read at the marks
    /// of the first iteration and of the recorded iterations after the rates are chosen, the
    /// dear one (read every 1024th iteration) at the first iteration's marks only.
    /// A loop of `n` iterations driven as `Guard::tick` and `Guard::loop_exit` drive it.
    fn drive(run: &mut Run, n: u64, memory: impl Fn(u64) -> u64) {
        for i in 0..n {
            PACED_MEMORY.store(memory(i), Ordering::Relaxed);
            if !run.skip_tick() {
                run.end();
                run.begin_next();
            }
        }
        PACED_MEMORY.store(memory(n), Ordering::Relaxed);
        run.end_skipped();
        run.end();
    }

    /// The pace measures the guard's mean tick without its secondary reads; a dear secondary
    /// read inside the tick that makes the choice must not make that mean 0 (the pace would then
    /// sample every iteration whatever the budget).
    #[test]
    fn a_dear_secondary_read_in_the_choosing_tick_leaves_the_mean_tick_positive() {
        static SLOW: AtomicU64 = AtomicU64::new(1000);
        let site = test_site("slow_secondary", Options { warmup: 2, ..Options::DEFAULT });
        let mut run = Run::new(site);
        run.kind = BackendKind::Cuda;
        run.sampler = Some(fake(BackendKind::Cuda, &SLOW, 1));
        let mut slow = fake(BackendKind::NvmlProcess, &SLOW, 1);
        slow.delay = std::time::Duration::from_millis(2);
        // Declared cheap, so that it is read every iteration; each read takes 2 ms.
        let secondary = vec![sources::Opened { sampler: slow, cost: std::time::Duration::from_nanos(1) }];
        run.secondaries = Secondaries::new(secondary, *run.detector.config());
        let tick = |run: &mut Run| {
            if !run.skip_tick() {
                let from = Instant::now();
                run.end();
                run.begin_next();
                run.charge(from);
            }
        };
        for i in 0..FIRST_FLUSH + 64 {
            if i < 6 {
                // Long steps while the first choice is made: the secondary gets a share.
                std::thread::sleep(std::time::Duration::from_millis(30));
            }
            tick(&mut run);
        }
        let pace = run.pace.report();
        assert_eq!(pace.choices, 2, "{pace:?}");
        assert!(pace.tick_seconds > 0.0, "{pace:?}");
        assert!(pace.tick_seconds < 0.001, "the secondary reads are not in the tick: {pace:?}");
    }

    #[test]
    fn a_paced_run_samples_the_multiples_of_its_rate_and_counts_every_iteration() {
        let site = test_site("paced", Options::DEFAULT);
        let mut run = Run::new(site);
        run.kind = BackendKind::Cuda;
        run.sampler = Some(fake(BackendKind::Cuda, &PACED_MEMORY, 1));
        run.pace = Pace::pinned(4);
        // The memory in use during iteration i is 1 MiB per iteration: a leak.
        drive(&mut run, 403, |i| i << 20);
        assert_eq!(run.iterations, 403, "skipped iterations are counted");
        let sampled: Vec<u64> = run.samples.iter().map(|s| s.iteration).collect();
        assert_eq!(sampled, (0..403).step_by(4).collect::<Vec<_>>());
        // The sample of iteration i is read at its end, when i + 1 MiB are in use.
        assert!(run.samples.iter().all(|s| s.allocated_bytes == (s.iteration + 1) << 20));
        let report = run.report("returned");
        assert_eq!(report.pace.sample_every, 4);
        assert!(report.verdict.leak, "{:?}", report.verdict);
        assert!((report.verdict.growth_bytes_per_iteration - (1 << 20) as f64).abs() < 1.0);
    }

    /// The tch case: the CUDA pool holds 0 B throughout while the process's device memory (NVML)
    /// grows. After warm-up NVML becomes the primary source, and the leak is found on it.
    /// libtorch's cache as NVML saw it grow in a tch eval loop on an H100 (2 MiB granularity,
    /// a 20 MiB block every 5 iterations: 5.2 MiB per iteration): after the switch at the
    /// first choice, NVML (read in 300 µs here, the loop's steps far shorter) costs the whole
    /// budget, so the pace after the dense iterations is the slowest; the leak is flagged in
    /// the dense iterations, which the switch extends by a warm-up.
    #[test]
    fn a_switched_primary_flags_a_stepwise_leak_in_its_dense_iterations() {
        static MEMORY: AtomicU64 = AtomicU64::new(0);
        let site = test_site("tch_eval_leaky", Options::DEFAULT);
        let mut run = Run::new(site);
        run.kind = BackendKind::Cuda;
        run.sampler = Some(fake(BackendKind::Cuda, &MEMORY, 0));
        let mut nvml = fake(BackendKind::NvmlProcess, &MEMORY, 1);
        nvml.delay = std::time::Duration::from_micros(300);
        let (primary, secondary, shell) = sources::SourceSet::for_tests(
            fake(BackendKind::Cuda, &MEMORY, 0),
            vec![sources::Opened { sampler: nvml, cost: std::time::Duration::from_micros(300) }],
        )
        .split();
        drop(primary);
        run.secondaries = Secondaries::new(secondary, *run.detector.config());
        run.shell = Some(shell);
        // Iterations 10..42 as read on the H100, then the same 5-iteration steps.
        const SEEN: [u64; 32] = [
            940, 940, 942, 962, 964, 964, 966, 966, 988, 988, 990, 990, 992, 1014, 1014, 1016, 1016, 1018, 1038, 1040,
            1040, 1042, 1042, 1064, 1064, 1066, 1066, 1068, 1088, 1090, 1090, 1092,
        ];
        let mib = |i: u64| {
            let mib = match i {
                0..10 => 940,
                10..42 => SEEN[(i - 10) as usize],
                _ => 1092 + 26 * ((i - 42) / 5) + [22, 24, 24, 26, 26][((i - 42) % 5) as usize],
            };
            mib << 20
        };
        for i in 0..300u64 {
            MEMORY.store(mib(i), Ordering::Relaxed);
            if !run.skip_tick() {
                let from = Instant::now();
                run.end();
                run.begin_next();
                run.charge(from);
            }
        }
        assert_eq!(run.kind, BackendKind::NvmlProcess);
        assert_eq!(run.pace.every(), crate::pace::MAX_EVERY, "{:?}", run.pace.report());
        let report = run_report(run);
        let at = report.verdict.detected_at_iteration.expect("flagged");
        assert!(at <= 10 + 10 + 32, "flagged at {at}");
    }

    /// A function called many times with a primary source that is dear to read (a cubecl
    /// client's read waits for the device): its first run's warm-up and dense iterations are an
    /// advance on the budget, which its later runs repay. They go on at the first run's pace as
    /// if the calls were one loop (no warm-up or dense iterations; a 200-iteration call at one
    /// read per 1,024 iterations mostly reads nothing), say what they carried, and once the debt
    /// is repaid a run starts afresh.
    #[test]
    fn later_runs_of_a_function_repay_what_its_first_run_spent_ahead() {
        static MEMORY: AtomicU64 = AtomicU64::new(1 << 20);
        static MARKS: [Mark; 1] = [Mark { line: 5, phase: "forward", code: "let y = m.forward(&x)?;" }];
        let site = test_site("short_calls", Options { marks: &MARKS, ..Options::DEFAULT });
        let call = |step: std::time::Duration| {
            let mut run = Run::new(site);
            let fresh = run.sampler.is_none();
            for _ in 0..200 {
                std::thread::sleep(step);
                run.mark(0);
                if !run.skip_tick() {
                    if run.sampler.is_none() {
                        // The sources a real run opens at its first read; a fake one here.
                        run.kind = BackendKind::Cuda;
                        let mut primary = fake(BackendKind::Cuda, &MEMORY, 1);
                        primary.delay = std::time::Duration::from_micros(50);
                        run.sampler = Some(primary);
                    }
                    let from = Instant::now();
                    run.end();
                    run.begin_next();
                    run.charge(from);
                }
            }
            run.end_skipped();
            assert!(fresh);
            let report = run.report("returned");
            let memory = RunMemory {
                rates: run.secondaries.rates(),
                ledger: run.pace.ledger(Instant::now(), run.own_ns),
                pace: run.pace.report(),
                phases: report.phases.as_ref(),
                due_in: run.skip,
            };
            remember_run(site, memory);
            (run.sampled, report)
        };
        let owed = || {
            let key = std::ptr::from_ref(site) as usize;
            let sites = FINISHED.lock().unwrap();
            sites.iter().find(|m| m.key == key).map(|m| m.ledger.owed()).unwrap()
        };
        // The step: twice the read's time, so the guard takes about a third of the first run's
        // dense iterations, and a read per 1,024 iterations 0.05 % of the later runs.
        let step = std::time::Duration::from_micros(100);
        let (first_sampled, first) = call(step);
        let first_phases = first.phases.expect("marks: phases");
        assert!(!first_phases.from_earlier_run && !first_phases.records.is_empty());
        assert_eq!(first.pace.carried_seconds, 0.0);
        assert!(first_sampled >= 10 + crate::pace::DENSE, "warm-up and dense iterations: {first_sampled}");
        assert_eq!(first.pace.sample_every, crate::pace::MAX_EVERY);
        let debt = owed();
        // The first run read some 44 iterations at 50 µs each: milliseconds owed.
        assert!(debt > std::time::Duration::from_millis(1), "{debt:?}");

        // At the first run's pace, read every 1,024 iterations of the runs together: the first
        // run read last at its iteration 0 of that pace's grid, so the next four 200-iteration
        // runs read nothing and the fifth reads once.
        // Slower later runs (as a training loop's calls are, next to this test's 100 µs steps):
        // 0.1 % of their 0.5 s is 500 µs, ten reads' worth, so that a read slowed down by a busy
        // machine does not tip the balance.
        let later_step = std::time::Duration::from_micros(500);
        let mut reads = Vec::new();
        for _ in 0..5 {
            let (sampled, later) = call(later_step);
            assert!(later.pace.carried_seconds > 0.0, "{:?}", later.pace);
            assert_eq!(later.pace.sample_every, crate::pace::MAX_EVERY);
            assert_eq!(later.pace.choices, 0, "200 iterations: no flush, so no choice");
            assert_eq!(later.iterations, 200);
            assert_eq!(later.reads, sampled);
            assert!(later.elapsed_seconds >= 0.02, "{}", later.elapsed_seconds);
            // It recorded no phases (each recorded iteration reads at every mark) and reports
            // the first run's, saying so.
            let phases = later.phases.expect("the first run's phases");
            assert!(phases.from_earlier_run);
            assert_eq!(phases.records, first_phases.records);
            reads.push(sampled);
        }
        assert_eq!(reads, [0, 0, 0, 0, 1]);
        // Their time repays the debt: 0.1 % of their time is more than one read.
        assert!(owed() < debt, "{:?} of {debt:?}", owed());

        // Once it is repaid (here: as if the runs had lasted long enough), a run starts afresh.
        {
            let key = std::ptr::from_ref(site) as usize;
            let mut sites = FINISHED.lock().unwrap();
            let m = sites.iter_mut().find(|m| m.key == key).unwrap();
            m.ledger.elapsed_ns = (m.ledger.spent_ns as f64 / crate::pace::OVERHEAD_BUDGET) as u64;
        }
        assert_eq!(owed(), std::time::Duration::ZERO);
        let (fresh_sampled, fresh) = call(step);
        assert_eq!(fresh.pace.carried_seconds, 0.0);
        assert!(fresh_sampled >= 10 + crate::pace::DENSE, "{fresh_sampled}");
    }

    #[test]
    fn an_empty_pool_hands_the_primary_role_to_nvml() {
        let site = test_site("eval_leaky", Options::DEFAULT);
        let run_with = |pinned: bool| {
            let mut run = Run::new(site);
            run.kind = BackendKind::Cuda;
            run.sampler = Some(fake(BackendKind::Cuda, &SWITCH_MEMORY, 0));
            run.source_pinned = pinned;
            let (primary, secondary, shell) = sources::SourceSet::for_tests(
                fake(BackendKind::Cuda, &SWITCH_MEMORY, 0),
                vec![sources::Opened {
                    sampler: fake(BackendKind::NvmlProcess, &SWITCH_MEMORY, 1),
                    cost: std::time::Duration::ZERO,
                }],
            )
            .split();
            drop(primary);
            run.secondaries = Secondaries::new(secondary, *run.detector.config());
            run.shell = Some(shell);
            for i in 0..120u64 {
                SWITCH_MEMORY.store((1 << 30) + (i << 20), Ordering::Relaxed);
                run.end();
                run.begin_next();
            }
            run
        };
        let run = run_with(false);
        assert_eq!(run.kind, BackendKind::NvmlProcess);
        let report = run_report(run);
        assert_eq!(report.backend, "nvml-process");
        assert!(report.verdict.leak, "{:?}", report.verdict);
        assert!((report.verdict.growth_bytes_per_iteration - (1 << 20) as f64).abs() < 1.0);
        assert!(report.sources.iter().any(|s| s.source == "cuda-pool" && !s.primary));
        // Pinned: the pool stays primary (and the report says it is blind).
        let pinned = run_with(true);
        assert_eq!(pinned.kind, BackendKind::Cuda);
    }

    fn run_report(mut run: Run) -> Report {
        run.report("returned")
    }

    #[test]
    fn marks_read_the_secondary_sources_that_are_read_every_iteration() {
        static MARKS: [Mark; 2] = [
            Mark { line: 5, phase: "forward", code: "let y = m.forward(&x)?;" },
            Mark { line: 6, phase: "backward+step", code: "opt.backward_step(&y)?;" },
        ];
        let site = test_site("train", Options { marks: &MARKS, ..Options::DEFAULT });
        let mut run = Run::new(site);
        run.kind = BackendKind::Cuda;
        run.sampler = Some(fake(BackendKind::Cuda, &MEMORY, 1));
        let opened = |kind, scale, cost| sources::Opened { sampler: fake(kind, &MEMORY, scale), cost };
        let secondary = vec![
            opened(BackendKind::NvmlProcess, 2, std::time::Duration::from_nanos(1)),
            opened(BackendKind::CudaDevice, 3, std::time::Duration::from_secs(1)),
        ];
        run.secondaries = Secondaries::new(secondary, *run.detector.config());
        run.phases.set_secondary(&["nvml-process", "cuda-device"]);
        let mut base = 1000;
        for i in 0..40u64 {
            // The first iteration creates 500 bytes of state in `backward+step`.
            let state = if i == 0 { 500 } else { 0 };
            run.begin();
            if i < 10 {
                // A 20 ms step while the rates are chosen (after warm-up).
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            MEMORY.store(base + 100, Ordering::Relaxed);
            run.mark(0);
            MEMORY.store(base + 100 + state, Ordering::Relaxed);
            run.mark(1);
            base += state;
            MEMORY.store(base, Ordering::Relaxed);
            run.end();
        }
        let report = run.report("returned");
        let phases = report.phases.expect("phases");
        assert_eq!(phases.records.len(), 12, "0..8, then 8, 16, 24 and 32");
        let [cheap, dear] = &phases.secondary[..] else { panic!("{:?}", phases.secondary) };
        assert_eq!((cheap.source.as_str(), dear.source.as_str()), ("nvml-process", "cuda-device"));
        if std::env::var_os("MEMLINT_READ_EVERY").is_none() {
            assert_eq!((cheap.read_every, dear.read_every), (1, sources::MAX_READ_EVERY));
            let iterations: Vec<u64> = cheap.records.iter().map(|r| r.iteration).collect();
            assert_eq!(iterations, [0, 16, 24, 32]);
            assert_eq!(dear.records.len(), 1, "the dear source at the first iteration only");
            assert!(dear.table.iter().all(|r| r.first.is_some() && r.steady.is_none()));
        }
        // Each source's rows follow its own readings (2× and 3× the primary's).
        for (source, scale) in [(cheap, 2), (dear, 3)] {
            let step = source.table.iter().find(|r| r.phase == "backward+step").unwrap();
            assert_eq!(step.first.unwrap().delta_bytes, 500 * scale, "{}", source.source);
            assert_eq!(step.first.unwrap().allocated_bytes, 1600 * scale as u64);
        }
        let steady: Vec<i64> = cheap.table.iter().map(|r| r.steady.unwrap().delta_bytes).collect();
        assert_eq!(steady, [200, 0, -200], "forward, backward+step, end");
        let primary: Vec<i64> = phases.table.iter().map(|r| r.steady.unwrap().delta_bytes).collect();
        assert_eq!(primary, [100, 0, -100]);

        // A later run of the same function reads at its first iteration's marks only the source
        // its predecessor read every iteration: the dear one is not read there again.
        if std::env::var_os("MEMLINT_READ_EVERY").is_none() {
            let memory = RunMemory {
                rates: run.secondaries.rates(),
                ledger: Ledger::default(),
                pace: run.pace.report(),
                phases: None,
                due_in: 0,
            };
            remember_run(site, memory);
            let mut again = Run::new(site);
            again.kind = BackendKind::Cuda;
            again.sampler = Some(fake(BackendKind::Cuda, &MEMORY, 1));
            let secondary = vec![
                opened(BackendKind::NvmlProcess, 2, std::time::Duration::from_nanos(1)),
                opened(BackendKind::CudaDevice, 3, std::time::Duration::from_secs(1)),
            ];
            again.secondaries = Secondaries::new(secondary, *again.detector.config());
            again.phases.set_secondary(&["nvml-process", "cuda-device"]);
            again.begin();
            again.mark(0);
            again.mark(1);
            again.end();
            let phases = again.report("returned").phases.expect("phases");
            let counts: Vec<usize> = phases.secondary.iter().map(|s| s.records.len()).collect();
            assert_eq!(counts, [1, 0], "the cheap source at the first iteration, the dear one not");
        }
    }

    #[test]
    fn leak_diagnostic_points_at_the_loop_and_the_likely_cause() {
        let dir = std::env::temp_dir().join(format!("memlint-diag-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("train.rs");
        std::fs::write(
            &file,
            "fn train() {\n    let mut total = zero();\n    for batch in data {\n        total = total + loss(batch);\n    }\n}\n",
        )
        .unwrap();
        let path: &'static str = Box::leak(file.display().to_string().into_boxed_str());
        static FINDINGS: [StaticFinding; 1] = [StaticFinding {
            rule: "accumulated_loss_tensor",
            line: 4,
            message: "`total` accumulates a graph-carrying tensor across iterations",
        }];
        let site: &'static Site = Box::leak(Box::new(Site {
            function: "train",
            file: "src/train.rs",
            source_path: path,
            line: 1,
            loop_at: Some((3, 5)),
            options: Options::DEFAULT,
            static_findings: &FINDINGS,
        }));
        let report = leak_report(site);
        let d = diagnostic(site, &report, Event::Leak, std::path::Path::new("target/memlint/train-1-0.json"));
        assert!(d.has_snippet());
        let text = d.render(false, 200);
        for expected in [
            "memlint::runtime_leak",
            "memory grows by 2.00 MiB per iteration in `train`",
            "╭─[src/train.rs:3:5]",
            "2.00 MiB more heap after each iteration of this loop",
            "likely cause: accumulated_loss_tensor",
            "at this rate the budget of 1.00 GiB runs out in 480 iterations (about 48 s), within the horizon of 24.0 h",
            "line 4: `total` accumulates a graph-carrying tensor across iterations",
            "report: target/memlint/train-1-0.json",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }
        assert!(!text.contains('\u{1b}'), "no colour codes");

        // A slow leak (memory runs out only beyond the horizon) is a warning, not an error.
        let mut slow = leak_report(site);
        slow.verdict.severity = Some("warning");
        slow.verdict.projected_iterations_to_exhaustion = Some(2_000_000);
        slow.verdict.projected_seconds_to_exhaustion = Some(200_000.0);
        let d = diagnostic(site, &slow, Event::Leak, std::path::Path::new("r.json"));
        assert_eq!(miette::Diagnostic::severity(&d), Some(miette::Severity::Warning));
        let text = d.render(false, 200);
        for expected in [
            "memlint::runtime_slow_leak",
            "memory grows slowly but steadily by 2.00 MiB per iteration in `train`",
            "runs out in 2000000 iterations (about 2.3 days), beyond the horizon of 24.0 h",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
        }

        // Without the source file: no snippet, the location in words.
        std::fs::remove_dir_all(&dir).unwrap();
        let d = diagnostic(site, &report, Event::Leak, std::path::Path::new("r.json"));
        assert!(!d.has_snippet());
        assert!(d.render(false, 80).contains("at src/train.rs:3:5 (source not readable)"));
    }
}
