//! Several memory sources per run: which ones are opened, which one is primary, how often each
//! secondary one is read, and what each one found.
//!
//! The primary source (the report's top-level numbers, read every iteration) is chosen in this
//! order unless one is pinned (`#[mem_guard(source = "..")]` or `MEMLINT_SOURCE`): a watched
//! cubecl client ([`crate::watch`]), the CUDA pool, the [`crate::TrackingAllocator`], the RSS.
//! Every other source that can be opened is read as a *secondary* source: the process's device
//! memory (NVML per process, and the whole device's from `cuMemGetInfo` when that is cheaper to
//! read; `cuMemGetInfo` alone when NVML cannot see the process) when a GPU is in use, the host
//! heap when the allocator is installed, and the RSS always. Each secondary source is read every
//! `read_every`-th iteration, chosen after warm-up from its measured read cost and the loop's
//! measured step time so that all reads together stay within [`OVERHEAD_BUDGET`] of a step. A
//! source read every few iterations is judged by a [`Detector::sparse`] fed the iteration of
//! each read: strong growth is declared after 10 reads, within 10 × `read_every` iterations of
//! the rates being chosen.
//!
//! Each source has its own series and its own detector, so a source that grows while the
//! primary one stays flat is reported by name, with a note saying the primary one is blind to
//! it: the guard is never silently blind.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::detector::{Detector, DetectorConfig, iterations_until, overall_fit};
use crate::pace::on_grid;
use crate::report::{SampleRecord, SourceReport, Verdict, human_bytes};
use crate::sampler::{BackendKind, DeviceChoice, Sample};

pub use crate::pace::OVERHEAD_BUDGET;
/// The lowest rate: a secondary source is read at least every this many iterations.
pub const MAX_READ_EVERY: u64 = 1024;
/// Samples kept per source before every other one is dropped.
const MAX_SOURCE_SAMPLES: usize = 1 << 12;

/// One opened source and its measured read cost.
pub struct Opened {
    /// The sampler.
    pub sampler: Box<dyn Sample>,
    /// Median cost of one read, measured when the source was opened.
    pub cost: Duration,
}

/// The sources of a run, as opened.
pub struct SourceSet {
    /// Read every iteration; the report's top-level numbers.
    pub primary: Box<dyn Sample>,
    /// Read at their own rates.
    pub secondary: Vec<Opened>,
    /// One-line notices for stderr (shown once per process).
    pub notices: Vec<String>,
    /// Sources that could not be used, and why (kept in the report's `blind` notes).
    pub unavailable: Vec<String>,
    /// Median cost of one read of the primary source.
    pub primary_cost: Duration,
    key: Key,
}

/// What a run keeps of its [`SourceSet`] besides the samplers, to give them back at its end.
pub struct Shell {
    unavailable: Vec<String>,
    primary_cost: Duration,
    key: Key,
}

impl SourceSet {
    /// A set of given sources, for tests elsewhere in the crate.
    #[cfg(test)]
    pub(crate) fn for_tests(primary: Box<dyn Sample>, secondary: Vec<Opened>) -> Self {
        let key = Key { device: DeviceChoice::Auto, pin: None, watched: 0, allocator: false };
        SourceSet {
            primary,
            secondary,
            notices: Vec::new(),
            unavailable: Vec::new(),
            primary_cost: Duration::ZERO,
            key,
        }
    }

    /// Splits the set into its primary sampler, its secondary ones and the rest.
    pub fn split(self) -> (Box<dyn Sample>, Vec<Opened>, Shell) {
        let shell = Shell { unavailable: self.unavailable, primary_cost: self.primary_cost, key: self.key };
        (self.primary, self.secondary, shell)
    }
}

impl Shell {
    /// The notes on sources that could not be used.
    pub fn unavailable(&self) -> &[String] {
        &self.unavailable
    }

    /// The primary source's read cost.
    pub fn primary_cost(&self) -> Duration {
        self.primary_cost
    }

    /// Puts the samplers back together, for [`give_back`].
    /// The primary source changed during the run (see [`Secondaries::promote`]).
    pub fn set_primary_cost(&mut self, cost: Duration) {
        self.primary_cost = cost;
    }

    pub fn join(self, primary: Box<dyn Sample>, secondary: Vec<Opened>) -> SourceSet {
        SourceSet {
            primary,
            secondary,
            notices: Vec::new(),
            unavailable: self.unavailable,
            primary_cost: self.primary_cost,
            key: self.key,
        }
    }
}

/// What a set of sources was opened for: sets are reused by later runs with the same key.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    device: DeviceChoice,
    pin: Option<BackendKind>,
    watched: usize,
    allocator: bool,
}

/// Sets given back by finished runs (opening CUDA/NVML costs milliseconds per run).
static CACHE: Mutex<Vec<SourceSet>> = Mutex::new(Vec::new());

/// The pinned source: `pin` (from the macro) or `MEMLINT_SOURCE`. An unknown name is a notice.
pub fn pinned(pin: Option<&str>) -> (Option<BackendKind>, Option<String>) {
    let env = std::env::var("MEMLINT_SOURCE").ok().filter(|s| !s.trim().is_empty() && s.trim() != "auto");
    match pin.map(str::to_owned).or(env) {
        None => (None, None),
        Some(name) => match BackendKind::parse(&name) {
            Some(kind) => (Some(kind), None),
            None => (
                None,
                Some(format!(
                    "memlint: unknown source `{name}` (expected cuda-pool, nvml-process, cuda-device, cubecl, host-allocator or host-rss); choosing automatically"
                )),
            ),
        },
    }
}

/// Opens (or takes from the cache) the sources for `device`, with `pin` as primary if it opens.
pub fn open(device: DeviceChoice, pin: Option<BackendKind>) -> SourceSet {
    let key = Key {
        device,
        pin,
        watched: crate::backends::watched::count(),
        allocator: crate::TrackingAllocator::is_installed(),
    };
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(i) = cache.iter().position(|s| s.key == key) {
        let mut set = cache.swap_remove(i);
        set.notices.clear();
        return set;
    }
    drop(cache);
    let (candidates, notices, unavailable) = open_candidates(device);
    choose(candidates, pin, notices, unavailable, key)
}

/// Gives a run's sources back for the next run with the same options.
pub fn give_back(set: SourceSet) {
    CACHE.lock().unwrap_or_else(|p| p.into_inner()).push(set);
}

/// Every source that opens, in the order of automatic preference, with notices.
fn open_candidates(device: DeviceChoice) -> (Vec<Box<dyn Sample>>, Vec<String>, Vec<String>) {
    let mut found: Vec<Box<dyn Sample>> = crate::backends::watched::open_all();
    let mut notices = Vec::new();
    let mut unavailable = Vec::new();
    let cuda = match device {
        DeviceChoice::Host => None,
        DeviceChoice::Auto => match crate::backends::cuda::open_in_use() {
            Ok(s) => Some(s),
            Err(why) => {
                notices.extend(why);
                None
            }
        },
        DeviceChoice::Cuda(ordinal) => match crate::backends::cuda::open(ordinal) {
            Ok(s) => Some(s),
            Err(why) => {
                notices.push(why);
                None
            }
        },
    };
    if let Some(pool) = cuda {
        found.push(pool);
        match crate::backends::nvml::open() {
            Ok(s) => {
                found.push(s);
                // Device-wide, but often far cheaper to read than an NVML listing: kept when it
                // is (see `choose`), so that memory outside the pool is read at a useful rate.
                found.extend(crate::backends::cuda_device::open().ok());
            }
            Err(why) => {
                let fallback = crate::backends::cuda_device::open();
                let then = if fallback.is_ok() { "reading cuMemGetInfo (whole device) instead" } else { "" };
                unavailable.push(format!("nvml-process not read: {why}; {then}"));
                found.extend(fallback.ok());
            }
        }
    }
    if crate::TrackingAllocator::is_installed() {
        found.push(crate::backends::host::open_allocator());
    }
    found.push(crate::backends::host::open_rss());
    (found, notices, unavailable)
}

fn choose(
    mut candidates: Vec<Box<dyn Sample>>,
    pin: Option<BackendKind>,
    mut notices: Vec<String>,
    unavailable: Vec<String>,
    key: Key,
) -> SourceSet {
    let mut index = 0;
    if let Some(kind) = pin {
        match candidates.iter().position(|s| s.kind() == kind) {
            Some(i) => index = i,
            None => notices.push(format!(
                "memlint: source `{}` pinned but not available in this process; choosing automatically",
                kind.source_name()
            )),
        }
    }
    let Opened { sampler: primary, cost: primary_cost } = measure(candidates.remove(index));
    let mut secondary: Vec<Opened> = candidates.into_iter().map(measure).collect();
    let primary_kind = primary.kind();
    keep_device_reads_if_cheaper(primary_kind, &mut secondary);
    SourceSet { primary, secondary, notices, unavailable, primary_cost, key }
}

/// Drops `cuda-device` (device-wide `cuMemGetInfo`) when `nvml-process` (this process only) is
/// read too and is not dearer: both see memory outside the CUDA pool, and the device-wide figure
/// is worth its share of the budget only when it can be read more often. An NVML listing costs
/// 35 µs at open and 130–290 µs in a busy loop on an H100, `cuMemGetInfo` 8–20 µs.
fn keep_device_reads_if_cheaper(primary: BackendKind, secondary: &mut Vec<Opened>) {
    let nvml = if primary == BackendKind::NvmlProcess {
        Some(Duration::ZERO)
    } else {
        secondary.iter().find(|o| o.sampler.kind() == BackendKind::NvmlProcess).map(|o| o.cost)
    };
    if let Some(nvml) = nvml {
        secondary.retain(|o| o.sampler.kind() != BackendKind::CudaDevice || o.cost < nvml);
    }
}

/// Times a few reads of a source (the first one, which may load things, untimed).
pub fn measure(mut sampler: Box<dyn Sample>) -> Opened {
    let _ = sampler.read();
    let mut costs: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let _ = sampler.read();
            t.elapsed()
        })
        .collect();
    costs.sort();
    Opened { sampler, cost: costs[costs.len() / 2] }
}

/// The rate of a source costing `cost` per read, given `share` of a step's time for it.
pub fn read_every(cost: Duration, share: Duration) -> u64 {
    if cost <= share {
        return 1;
    }
    if share.is_zero() {
        return MAX_READ_EVERY;
    }
    let ratio = cost.as_secs_f64() / share.as_secs_f64();
    (ratio.ceil() as u64).next_power_of_two().min(MAX_READ_EVERY)
}

/// The `MEMLINT_READ_EVERY` override (every source at this rate), for measurements.
fn forced_rate() -> Option<u64> {
    std::env::var("MEMLINT_READ_EVERY").ok()?.trim().parse().ok().filter(|&n| n > 0)
}

/// One secondary source during a run.
struct Secondary {
    opened: Opened,
    kind: BackendKind,
    device: String,
    /// 0 until the rate is chosen.
    read_every: u64,
    detector: Detector,
    samples: Vec<SampleRecord>,
    stride: u64,
    reads: u64,
    last_allocated: u64,
    errors: u64,
    /// Time spent in this run's reads, and the longest one.
    spent: Duration,
    longest: Duration,
    /// This source's share of a step's time (set with the rates).
    share: Duration,
}

/// The secondary sources of a run: rates, series, detectors.
pub struct Secondaries {
    sources: Vec<Secondary>,
    config: DetectorConfig,
}

impl Secondaries {
    /// Secondary sources for a run whose primary detector has `config`; read once their rates
    /// are set ([`Secondaries::set_rates`]).
    pub fn new(opened: Vec<Opened>, config: DetectorConfig) -> Self {
        let sources = opened.into_iter().map(|opened| Secondary::new(opened, config)).collect();
        Self { sources, config }
    }

    /// Makes the secondary source of `kind` the primary one when it sees memory of this process
    /// (a read above 0 B): it is taken out and returned, and `old` (the primary so far, with its
    /// read cost) joins the secondary sources. `Err(old)` (nothing changed) otherwise.
    pub fn promote(&mut self, kind: BackendKind, old: Opened) -> Result<Opened, Opened> {
        let Some(i) = self
            .sources
            .iter_mut()
            .position(|s| s.kind == kind && s.opened.sampler.read().is_ok_and(|r| r.allocated > 0))
        else {
            return Err(old);
        };
        let promoted = self.sources.remove(i).opened;
        self.sources.push(Secondary::new(old, self.config));
        Ok(promoted)
    }

    /// No secondary sources.
    pub fn empty() -> Self {
        Self::new(Vec::new(), DetectorConfig::default())
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Takes the samplers back out (to cache them when the run ends).
    /// Each source's cost becomes the mean of this run's reads inside the loop when there were
    /// any: the next run's rates are then chosen from what a read costs there (an NVML listing
    /// took 22 µs at open and 184 µs inside an H100 candle loop, `cuMemGetInfo` 5 and 55 µs, the
    /// RSS 4 and 61 µs), not from the cost at open, which let a 300-step call spend its whole
    /// budget on a few secondary reads.
    pub fn into_opened(self) -> Vec<Opened> {
        self.sources
            .into_iter()
            .map(|mut s| {
                if s.reads > 0 {
                    s.opened.cost = s.spent / s.reads.min(u64::from(u32::MAX)) as u32;
                }
                s.opened
            })
            .collect()
    }

    /// Bytes of the series kept here (subtracted from host readings with the run's own).
    pub fn own_bytes(&self) -> u64 {
        self.sources.iter().map(|s| s.samples.capacity() * size_of::<SampleRecord>()).sum::<usize>() as u64
    }

    /// Ends iteration `iteration` (0-based), a sampled one: reads the sources due, once their
    /// rates are set. `own` = the guard's own host bytes. Returns the kinds of the sources whose
    /// detector declared a leak at this iteration.
    pub fn end(&mut self, iteration: u64, own: u64) -> Vec<BackendKind> {
        let mut found = Vec::new();
        for s in &mut self.sources {
            if s.read_every == 0 || !iteration.is_multiple_of(s.read_every) {
                continue;
            }
            if s.read(iteration, own) {
                found.push(s.kind);
            }
        }
        found
    }

    /// Sets each source's rate from its share of a step (`pace.rs`), on the grid of the
    /// primary's sampled iterations (every `every`-th). The first call also gives each source
    /// the detector for its rate; later calls (the pace is chosen again as the run goes on) keep
    /// the detectors and rates, and only move rates that fall off the grid.
    pub fn set_rates(&mut self, share: Duration, every: u64) {
        let forced = forced_rate();
        let config = DetectorConfig { warmup: 0, ..self.config };
        for s in &mut self.sources {
            if s.read_every == 0 {
                s.share = if forced.is_some() { Duration::MAX } else { share };
                s.read_every = on_grid(forced.unwrap_or_else(|| read_every(s.opened.cost, share)), every);
                // A source read every few iterations is judged from fewer reads (see
                // `Detector::sparse`): with the 0.1 % budget an NVML listing may be read only
                // every 512 iterations, and 18 reads would take 9,000.
                s.detector = if s.read_every > 1 { Detector::sparse(config) } else { Detector::new(config) };
            } else {
                s.read_every = on_grid(s.read_every, every);
            }
        }
    }

    /// Moves the rates set so far onto the grid of the primary's sampled iterations (every
    /// `every`-th), when the pace changes.
    pub fn regrid(&mut self, every: u64) {
        for s in &mut self.sources {
            if s.read_every != 0 && !s.read_every.is_multiple_of(every) {
                s.read_every = on_grid(s.read_every, every);
            }
        }
    }

    /// One report entry per source.
    pub fn reports(&mut self, warmup: u64, seconds_per_iteration: Option<f64>) -> Vec<SourceReport> {
        let _ = warmup;
        self.sources.iter_mut().map(|s| s.report(seconds_per_iteration)).collect()
    }

    /// The kinds and verdicts of sources that declared a leak, with their growth per iteration.
    pub fn leaking(&self) -> Vec<(BackendKind, f64)> {
        self.sources.iter().filter_map(|s| s.detector.detection().map(|_| (s.kind, s.growth_per_iteration()))).collect()
    }

    /// The window configuration the detectors use.
    pub fn config(&self) -> DetectorConfig {
        self.config
    }
}

/// For the phase marks (`phases.rs`): which sources are read every iteration, and reads outside
/// their schedules.
impl Secondaries {
    /// Each source's kind, in order.
    pub fn kinds(&self) -> Vec<BackendKind> {
        self.sources.iter().map(|s| s.kind).collect()
    }

    /// Each source's rate, in order: 0 until the rates are chosen (after warm-up), then read
    /// every this many iterations (1: every iteration).
    pub fn rates(&self) -> Vec<u64> {
        self.sources.iter().map(|s| s.read_every).collect()
    }

    /// Reads source `index` now, outside its schedule: the reading is not in its series and its
    /// cost not in its accounting. `None` when there is no such source.
    pub fn read_now(
        &mut self,
        index: usize,
    ) -> Option<(BackendKind, Result<crate::sampler::Reading, crate::sampler::SampleError>)> {
        let s = self.sources.get_mut(index)?;
        Some((s.kind, s.opened.sampler.read()))
    }
}

impl Secondary {
    fn new(opened: Opened, config: DetectorConfig) -> Self {
        Secondary {
            kind: opened.sampler.kind(),
            device: opened.sampler.device(),
            opened,
            read_every: 0,
            // Replaced when the rate is chosen; fed (iteration, bytes) per read, after the
            // run's warm-up.
            detector: Detector::new(DetectorConfig { warmup: 0, ..config }),
            samples: Vec::new(),
            stride: 1,
            reads: 0,
            last_allocated: 0,
            errors: 0,
            spent: Duration::ZERO,
            longest: Duration::ZERO,
            share: Duration::ZERO,
        }
    }

    /// Reads the source at `iteration`; true when its detector declares a leak now.
    fn read(&mut self, iteration: u64, own: u64) -> bool {
        let started = Instant::now();
        let result = self.opened.sampler.read();
        self.account(started.elapsed());
        let reading = match result {
            Ok(r) => r,
            Err(_) => {
                self.errors += 1;
                return false;
            }
        };
        let own = if self.kind.on_device() { 0 } else { own };
        let allocated = reading.allocated.saturating_sub(own);
        self.last_allocated = allocated;
        self.push(SampleRecord {
            iteration,
            allocated_bytes: allocated,
            reserved_bytes: reading.reserved,
            peak_bytes: reading.peak.map(|p| p.saturating_sub(own).max(allocated)),
        });
        let already = self.detector.detection().is_some();
        self.reads += 1;
        // The iteration, not the read count: growth per iteration whatever the rate (which may
        // fall during the run).
        self.detector.observe(iteration, allocated).is_some() && !already
    }

    /// Adds a read's cost; halves the rate when reads cost more in the loop than when measured
    /// at open (a busy GPU makes NVML and cubecl reads slower).
    fn account(&mut self, cost: Duration) {
        self.spent += cost;
        self.longest = self.longest.max(cost);
        let mean = self.spent / (self.reads + 1) as u32;
        let allowed = self.share.saturating_mul(self.read_every as u32);
        // Both this read and the mean: one preempted read does not lower the rate for good.
        if self.read_every < MAX_READ_EVERY && mean > allowed && cost > allowed {
            // Keep iterations already read on the new grid: the next read is a multiple of both.
            self.read_every = (self.read_every * 2).min(MAX_READ_EVERY);
        }
    }

    fn push(&mut self, record: SampleRecord) {
        if self.reads.is_multiple_of(self.stride) {
            if self.samples.len() == MAX_SOURCE_SAMPLES {
                let mut keep = 0;
                for i in (0..self.samples.len()).step_by(2) {
                    self.samples[keep] = self.samples[i];
                    keep += 1;
                }
                self.samples.truncate(keep);
                self.stride *= 2;
            }
            self.samples.push(record);
        }
    }

    /// Growth per iteration over the whole series (Theil–Sen).
    fn growth_per_iteration(&self) -> f64 {
        let points: Vec<(u64, u64)> = self.samples.iter().map(|s| (s.iteration, s.allocated_bytes)).collect();
        overall_fit(&points).slope
    }

    fn report(&mut self, seconds_per_iteration: Option<f64>) -> SourceReport {
        let detection = self.detector.detection();
        let total = match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) => b.allocated_bytes as i64 - a.allocated_bytes as i64,
            _ => 0,
        };
        let growth = self.growth_per_iteration();
        let mut verdict = Verdict {
            leak: detection.is_some(),
            growth_bytes_per_iteration: growth,
            total_growth_bytes: total,
            detected_at_iteration: detection.map(|d| d.iteration),
            detected_by: detection.map(|d| match d.horizon {
                crate::detector::Horizon::Window => "window",
                crate::detector::Horizon::Long => "long",
            }),
            projected_iterations_to_exhaustion: None,
            projected_seconds_to_exhaustion: None,
            exhaustion_limit: None,
            // Severity against the horizon is judged for the primary source only (guard.rs).
            severity: None,
            horizon_iterations: None,
            noise_bytes: detection.map(|d| d.noise_bytes),
            growth_lower_bytes_per_iteration: detection.map(|d| d.growth_lower_bytes_per_iteration),
        };
        if detection.is_some()
            && let Some(capacity) = self.opened.sampler.capacity()
            && let Some(n) = iterations_until(0, capacity.available, growth)
        {
            verdict.projected_iterations_to_exhaustion = Some(n);
            verdict.exhaustion_limit = Some(if self.kind.on_device() { "device" } else { "host" });
            verdict.projected_seconds_to_exhaustion = seconds_per_iteration.map(|s| s * n as f64);
        }
        SourceReport {
            source: self.kind.source_name(),
            device: self.device.clone(),
            primary: false,
            read_every: self.read_every,
            read_cost_ns: self.opened.cost.as_nanos() as u64,
            run_read_cost_ns: (self.reads > 0).then(|| (self.spent / self.reads as u32).as_nanos() as u64),
            run_read_max_ns: (self.reads > 0).then_some(self.longest.as_nanos() as u64),
            sample_stride: self.stride,
            samples: self.samples.clone(),
            verdict,
            errors: self.errors,
        }
    }
}

/// The "never silently blind" notes: each secondary source that found a leak the primary one
/// did not.
pub fn blind_notes(primary: BackendKind, primary_leak: bool, leaking: &[(BackendKind, f64)]) -> Vec<String> {
    if primary_leak {
        return Vec::new();
    }
    leaking
        .iter()
        .map(|(kind, growth)| {
            let whole = if *kind == BackendKind::CudaDevice { " (whole device: other processes included)" } else { "" };
            format!(
                "{}{whole} grows by {} per iteration while the primary source {} stays flat: {} does not see this memory",
                kind.source_name(),
                human_bytes(*growth),
                primary.source_name(),
                primary.source_name()
            )
        })
        .collect()
}

/// The note for a device primary source that held nothing in any iteration after warm-up (the
/// CUDA pool under libtorch, whose caching allocator takes device memory with `cudaMalloc`): the
/// guard could not judge device memory every iteration, and says how the other device sources
/// were read instead. `None` when the primary source saw memory or is not a device source.
pub fn empty_primary_note(
    primary: BackendKind,
    warmup: u64,
    samples: &[SampleRecord],
    others: &[SourceReport],
) -> Option<String> {
    let after: Vec<&SampleRecord> = samples.iter().filter(|s| s.iteration >= warmup).collect();
    if !primary.on_device() || after.is_empty() || after.iter().any(|s| s.allocated_bytes > 0) {
        return None;
    }
    let device: Vec<String> = others
        .iter()
        .filter(|o| !o.primary && BackendKind::parse(o.source).is_some_and(BackendKind::on_device))
        .map(|o| {
            let cost = o.run_read_cost_ns.unwrap_or(o.read_cost_ns) as f64 / 1e3;
            format!(
                "{} read every {} iterations ({} reads here; a verdict needs about 10; {cost:.0} µs per read)",
                o.source,
                o.read_every,
                o.samples.len()
            )
        })
        .collect();
    let seen = if device.is_empty() { "no other device source could be opened".to_owned() } else { device.join("; ") };
    Some(format!(
        "{} held 0 B in every iteration: the framework allocates device memory outside it (libtorch \
         does), so device memory was not judged every iteration: {seen}. Pin a source that sees it \
         with #[mem_guard(source = \"nvml-process\")] or MEMLINT_SOURCE=nvml-process (or \
         cuda-device) to read it every iteration",
        primary.source_name()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::{Capacity, Reading, SampleError};

    /// A fake source following its own loop's iteration: `base + growth × iteration` bytes.
    struct Growing {
        kind: BackendKind,
        base: u64,
        growth: u64,
        iteration: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }

    impl Sample for Growing {
        fn kind(&self) -> BackendKind {
            self.kind
        }
        fn device(&self) -> String {
            "fake".to_owned()
        }
        fn begin_iteration(&mut self) {}
        fn read(&mut self) -> Result<Reading, SampleError> {
            let iteration = self.iteration.load(std::sync::atomic::Ordering::Relaxed);
            Ok(Reading { allocated: self.base + self.growth * iteration, reserved: None, peak: None })
        }
        fn capacity(&mut self) -> Option<Capacity> {
            Some(Capacity { available: 80 << 30, total: 80 << 30 })
        }
    }

    /// What the guard does at the end of the warm-up (iteration 10): chooses the pace from the
    /// mean step and the primary's cost per sampled iteration, and sets the rates. These tests
    /// read the primary every iteration, so the pace must choose 1.
    fn choose_at_warmup(secondaries: &mut Secondaries, iteration: u64, step: Duration, tick: Duration) {
        if iteration == 10 {
            let choice = crate::pace::choose(step, tick, secondaries.len(), Duration::ZERO);
            assert_eq!(choice.every, 1);
            secondaries.set_rates(choice.secondary_share, choice.every);
        }
    }

    /// A run gives its sources back with the cost their reads had inside its loop, for the
    /// next run's rates; a source this run never read keeps its cost.
    #[test]
    fn sources_go_back_with_the_cost_measured_in_the_loop() {
        let config = DetectorConfig::default();
        let iteration = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let fake = |kind| Growing { kind, base: 1 << 20, growth: 0, iteration: iteration.clone() };
        let opened = vec![
            Opened { sampler: Box::new(fake(BackendKind::HostRss)), cost: Duration::from_secs(1) },
            Opened { sampler: Box::new(fake(BackendKind::CudaDevice)), cost: Duration::from_secs(1) },
        ];
        let mut secondaries = Secondaries::new(opened, config);
        // A share of a whole second: both would be read every iteration.
        secondaries.set_rates(Duration::from_secs(1), 1);
        secondaries.sources[1].read_every = 0;
        for i in 0..20 {
            secondaries.end(i, 0);
        }
        let costs: Vec<Duration> = secondaries.into_opened().into_iter().map(|o| o.cost).collect();
        assert!(costs[0] < Duration::from_millis(1), "the mean of 20 reads of an atomic: {:?}", costs[0]);
        assert_eq!(costs[1], Duration::from_secs(1), "never read: the cost at open");
    }

    /// The H100 case: a 1.7 ms step leaking 4 MiB per step outside the CUDA pool (the pool stays
    /// flat). Reads are costed as measured there (pool 0.26 µs; NVML 250 µs; `cuMemGetInfo`
    /// 20 µs; RSS 50 µs), so within the 0.1 % budget NVML is read every 1,024 iterations and
    /// `cuMemGetInfo` every 64: the device-wide
    /// source flags the leak within 10 of its reads, and the note says the pool is blind to it.
    #[test]
    fn a_sparsely_read_source_flags_a_large_leak_within_ten_reads() {
        let config = DetectorConfig::default();
        let iteration = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let fake = |kind, growth| Growing { kind, base: 2 << 30, growth, iteration: iteration.clone() };
        let opened = vec![
            Opened { sampler: Box::new(fake(BackendKind::NvmlProcess, 4 << 20)), cost: Duration::from_micros(250) },
            Opened { sampler: Box::new(fake(BackendKind::CudaDevice, 4 << 20)), cost: Duration::from_micros(20) },
            Opened { sampler: Box::new(fake(BackendKind::HostRss, 0)), cost: Duration::from_micros(50) },
        ];
        let mut primary = fake(BackendKind::Cuda, 0);
        let mut primary_detector = Detector::new(config);
        let mut secondaries = Secondaries::new(opened, config);
        let mut found = Vec::new();
        for i in 0..4_000 {
            // The pool read's 0.26 µs is the primary's cost per sampled iteration here.
            choose_at_warmup(&mut secondaries, i, Duration::from_micros(1_700), Duration::from_nanos(260));
            iteration.store(i, std::sync::atomic::Ordering::Relaxed);
            assert!(primary_detector.observe(i, primary.read().unwrap().allocated).is_none());
            found.extend(secondaries.end(i, 0).into_iter().map(|k| (i, k)));
        }
        let reports = secondaries.reports(10, Some(0.0017));
        let device = &reports[1];
        assert_eq!(device.source, "cuda-device");
        if forced_rate().is_none() {
            assert!(device.read_every >= 32, "a sparse source: every {}", device.read_every);
            assert!(reports[0].read_every > device.read_every, "NVML is read less often");
        }
        // The rates are chosen after the warm-up (iteration 10); 8 reads fill the first window
        // and 2 more make 3 growing windows in a row.
        let bound = 10 + 10 * device.read_every;
        let (at, kind) = found[0];
        assert_eq!(kind, BackendKind::CudaDevice);
        assert!(at <= bound, "flagged at iteration {at}, read every {}", device.read_every);
        assert_eq!(device.verdict.detected_at_iteration, Some(at));
        // Growth is per iteration, not per read.
        assert!((device.verdict.growth_bytes_per_iteration - (4 << 20) as f64).abs() < 1.0, "{:?}", device.verdict);
        let lower = device.verdict.growth_lower_bytes_per_iteration.unwrap();
        assert!(lower > 0.9 * (4 << 20) as f64 && lower <= (4 << 20) as f64 + 1.0, "{lower}");
        assert!(!reports[2].verdict.leak, "flat RSS stays silent");
        let notes = blind_notes(BackendKind::Cuda, false, &secondaries.leaking());
        assert!(
            notes.iter().any(|n| n.starts_with(
                "cuda-device (whole device: other processes included) grows by 4.00 MiB per iteration while the primary source cuda-pool stays flat"
            )),
            "{notes:?}"
        );
    }

    /// NVML alone (no cheaper device-wide reader), read every 512 iterations as on the H100 (a
    /// 500 µs read in a 1 ms step): a 4 MiB/step leak is flagged after 10 reads, within 5,130
    /// iterations (before, the detector needed 18 reads, 9,000 iterations).
    #[test]
    fn nvml_read_every_512_iterations_flags_a_large_leak() {
        let config = DetectorConfig::default();
        let iteration = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let nvml =
            Growing { kind: BackendKind::NvmlProcess, base: 2 << 30, growth: 4 << 20, iteration: iteration.clone() };
        let opened = vec![Opened { sampler: Box::new(nvml), cost: Duration::from_micros(500) }];
        let mut secondaries = Secondaries::new(opened, config);
        let mut found = None;
        for i in 0..8_000 {
            choose_at_warmup(&mut secondaries, i, Duration::from_millis(1), Duration::ZERO);
            iteration.store(i, std::sync::atomic::Ordering::Relaxed);
            if !secondaries.end(i, 0).is_empty() {
                found.get_or_insert(i);
            }
        }
        let report = &secondaries.reports(10, None)[0];
        let at = found.expect("flagged");
        assert!(at <= 10 + 10 * report.read_every, "flagged at {at}, read every {}", report.read_every);
        assert_eq!(report.verdict.detected_at_iteration, Some(at));
        if forced_rate().is_none() {
            assert!(report.read_every >= 256, "read every {}", report.read_every);
        }
    }

    #[test]
    fn device_wide_reads_are_kept_only_when_cheaper_than_nvml() {
        let iteration = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let fake = |kind| Growing { kind, base: 0, growth: 0, iteration: iteration.clone() };
        let set = |nvml_us, device_us| {
            vec![
                Opened { sampler: Box::new(fake(BackendKind::NvmlProcess)), cost: Duration::from_micros(nvml_us) },
                Opened { sampler: Box::new(fake(BackendKind::CudaDevice)), cost: Duration::from_micros(device_us) },
            ]
        };
        let kinds = |v: &[Opened]| v.iter().map(|o| o.sampler.kind()).collect::<Vec<_>>();
        let mut cheaper = set(35, 10);
        keep_device_reads_if_cheaper(BackendKind::Cuda, &mut cheaper);
        assert_eq!(kinds(&cheaper), [BackendKind::NvmlProcess, BackendKind::CudaDevice]);
        let mut dearer = set(35, 40);
        keep_device_reads_if_cheaper(BackendKind::Cuda, &mut dearer);
        assert_eq!(kinds(&dearer), [BackendKind::NvmlProcess]);
        // NVML as the primary source is read every iteration: the device-wide one adds nothing.
        let mut device_only = vec![Opened { sampler: Box::new(fake(BackendKind::CudaDevice)), cost: Duration::ZERO }];
        keep_device_reads_if_cheaper(BackendKind::NvmlProcess, &mut device_only);
        assert!(device_only.is_empty());
        // Without NVML, `cuMemGetInfo` is the fallback and stays.
        let mut fallback = vec![Opened { sampler: Box::new(fake(BackendKind::CudaDevice)), cost: Duration::ZERO }];
        keep_device_reads_if_cheaper(BackendKind::Cuda, &mut fallback);
        assert_eq!(fallback.len(), 1);
    }

    #[test]
    fn rates_keep_reads_within_the_budget() {
        let share = Duration::from_nanos(850);
        assert_eq!(read_every(Duration::from_nanos(30), share), 1);
        assert_eq!(read_every(Duration::from_nanos(850), share), 1);
        assert_eq!(read_every(Duration::from_micros(5), share), 8);
        assert_eq!(read_every(Duration::from_micros(100), share), 128);
        assert_eq!(read_every(Duration::from_millis(50), share), MAX_READ_EVERY);
        assert_eq!(read_every(Duration::from_micros(1), Duration::ZERO), MAX_READ_EVERY);
    }

    #[test]
    fn pinned_names_are_parsed_and_unknown_ones_explained() {
        assert_eq!(pinned(Some("nvml")).0, Some(BackendKind::NvmlProcess));
        assert_eq!(pinned(Some("cuda-pool")).0, Some(BackendKind::Cuda));
        let (kind, notice) = pinned(Some("vram"));
        assert_eq!(kind, None);
        assert!(notice.unwrap().contains("unknown source `vram`"));
    }

    /// A pool that stays flat while the process's device memory grows: the secondary source
    /// A CUDA pool that held nothing after warm-up (libtorch allocates outside it) is named as
    /// blind even when nothing was flagged, with how the other device sources were read.
    #[test]
    fn an_empty_device_primary_is_reported_as_blind() {
        let sample = |iteration, allocated_bytes| SampleRecord {
            iteration,
            allocated_bytes,
            reserved_bytes: Some(0),
            peak_bytes: Some(0),
        };
        let empty: Vec<SampleRecord> = (0..300).map(|i| sample(i, 0)).collect();
        let nvml = SourceReport {
            source: "nvml-process",
            device: "nvml:0".to_owned(),
            primary: false,
            read_every: 1024,
            read_cost_ns: 18_644,
            run_read_cost_ns: None,
            run_read_max_ns: None,
            sample_stride: 1,
            samples: Vec::new(),
            verdict: Verdict::default(),
            errors: 0,
        };
        let note = empty_primary_note(BackendKind::Cuda, 10, &empty, std::slice::from_ref(&nvml))
            .expect("an empty pool is blind");
        assert!(note.starts_with("cuda-pool held 0 B in every iteration"), "{note}");
        assert!(note.contains("nvml-process read every 1024 iterations (0 reads here"), "{note}");
        assert!(note.contains("MEMLINT_SOURCE=nvml-process"), "{note}");
        // Memory in the pool after warm-up, a host primary, or nothing after warm-up: no note.
        let mut used = empty.clone();
        used[200].allocated_bytes = 1;
        assert_eq!(empty_primary_note(BackendKind::Cuda, 10, &used, &[]), None);
        assert_eq!(empty_primary_note(BackendKind::HostRss, 10, &empty, &[]), None);
        assert_eq!(empty_primary_note(BackendKind::Cuda, 300, &empty, &[]), None);
        // Zero only during warm-up (lazy first allocation) is not blind.
        let late: Vec<SampleRecord> = (0..300).map(|i| sample(i, if i < 10 { 0 } else { 4096 })).collect();
        assert_eq!(empty_primary_note(BackendKind::Cuda, 10, &late, &[]), None);
    }

    /// declares the leak, and the notes say that the primary one is blind to it.
    #[test]
    fn a_flat_primary_with_a_growing_secondary_is_reported_as_blind() {
        let config = DetectorConfig::default();
        let iteration = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let fake = |kind, base, growth| Growing { kind, base, growth, iteration: iteration.clone() };
        let growing = fake(BackendKind::NvmlProcess, 1 << 30, 12 << 20);
        let flat_rss = fake(BackendKind::HostRss, 300 << 20, 0);
        let opened = vec![
            Opened { sampler: Box::new(growing), cost: Duration::ZERO },
            Opened { sampler: Box::new(flat_rss), cost: Duration::ZERO },
        ];
        let mut primary = fake(BackendKind::Cuda, 64 << 20, 0);
        let mut primary_detector = Detector::new(config);
        let mut secondaries = Secondaries::new(opened, config);
        let mut found = Vec::new();
        for i in 0..200 {
            choose_at_warmup(&mut secondaries, i, Duration::from_millis(1), Duration::ZERO);
            iteration.store(i, std::sync::atomic::Ordering::Relaxed);
            let r = primary.read().unwrap();
            assert!(primary_detector.observe(i, r.allocated).is_none(), "the flat pool never leaks");
            found.extend(secondaries.end(i, 0).into_iter().map(|k| (i, k)));
        }
        assert_eq!(found.len(), 1, "one detection, once: {found:?}");
        assert_eq!(found[0].1, BackendKind::NvmlProcess);
        let leaking = secondaries.leaking();
        assert_eq!(leaking.len(), 1);
        assert!((leaking[0].1 - (12 << 20) as f64).abs() < 1.0, "growth {}", leaking[0].1);
        let notes = blind_notes(BackendKind::Cuda, false, &leaking);
        assert_eq!(
            notes,
            [
                "nvml-process grows by 12.0 MiB per iteration while the primary source cuda-pool stays flat: cuda-pool does not see this memory"
            ]
        );
        assert!(blind_notes(BackendKind::Cuda, true, &leaking).is_empty(), "no note when the primary saw it too");
        let reports = secondaries.reports(10, Some(0.01));
        assert_eq!(reports[0].source, "nvml-process");
        assert!(reports[0].verdict.leak);
        assert_eq!(reports[0].verdict.exhaustion_limit, Some("device"));
        assert!(!reports[1].verdict.leak, "flat RSS stays silent");
        assert_eq!(reports[1].source, "host-rss");
        assert!(reports[0].samples.len() > 90, "{} reads", reports[0].samples.len());
    }

    /// Expensive sources are read less often; the chosen rate is what the series shows.
    #[test]
    fn an_expensive_source_is_read_at_a_lower_rate() {
        let config = DetectorConfig::default();
        let iteration = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let cheap = Growing { kind: BackendKind::HostAllocator, base: 1, growth: 0, iteration: iteration.clone() };
        let dear = Growing { kind: BackendKind::NvmlProcess, base: 1, growth: 0, iteration };
        let opened = vec![
            Opened { sampler: Box::new(cheap), cost: Duration::from_nanos(1) },
            Opened { sampler: Box::new(dear), cost: Duration::from_secs(1) },
        ];
        let mut secondaries = Secondaries::new(opened, config);
        for i in 0..2048 {
            // A 1 ms step: the budget is 1 µs per step.
            choose_at_warmup(&mut secondaries, i, Duration::from_millis(1), Duration::ZERO);
            secondaries.end(i, 0);
        }
        let reports = secondaries.reports(10, None);
        if forced_rate().is_none() {
            assert_eq!(reports[1].read_every, MAX_READ_EVERY);
            assert_eq!(reports[1].samples.len(), 1, "iterations 10..2048 hold one multiple of 1024");
            assert!(reports[0].read_every < MAX_READ_EVERY);
        }
        for pair in reports[0].samples.windows(2) {
            // The rate may only fall during the run (a read slower in the loop than at open).
            let gap = pair[1].iteration - pair[0].iteration;
            assert!(gap >= 1 && gap <= reports[0].read_every, "gap {gap}, rate {}", reports[0].read_every);
        }
    }
}
