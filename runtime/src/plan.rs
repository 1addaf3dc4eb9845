//! The batch-size planner: "what batch size fits?", measured instead of guessed.
//!
//! [`Planner::run`] runs a few complete training steps (forward, loss, backward, optimizer step)
//! at two or more batch sizes, reads the peak of the last step at each size from the same memory
//! source the guard samples (the CUDA pool's high-water mark, or [`crate::TrackingAllocator`]'s
//! window peak on the host), fits `peak = fixed + per_sample × batch` by least squares and
//! predicts the largest batch whose peak fits in the memory this process can reach (or a
//! budget), with a stated safety margin.
//!
//! What is measured and what is inferred:
//! - measured: the peak of a complete step at each batch size (after the first step at that size,
//!   so lazily created optimizer state exists), the memory held before the first step (model,
//!   data already on the device) and the memory the first step left behind (optimizer state and
//!   anything else created lazily), the memory this process can still reach;
//! - inferred: fixed and per-sample bytes (the fit), the largest batch (the fit extrapolated),
//!   and — when the caller states the parameters' size with [`Planner::parameter_bytes`] —
//!   the gradients' share (one gradient per parameter, alive inside the step).

use std::fmt;
use std::time::Instant;

use serde::Serialize;

use crate::report::human_bytes;
use crate::sampler::{self, BackendKind, DeviceChoice, Sample};

/// Default batch sizes tried when none are given.
pub const DEFAULT_BATCHES: [usize; 3] = [8, 16, 32];
/// Default safety margin: the recommended batch leaves this share of the limit free.
pub const DEFAULT_MARGIN: f64 = 0.10;

/// Settings of a plan. Build with [`Planner::new`] or [`Planner::from_env`], run with
/// [`Planner::run`].
#[derive(Debug, Clone)]
pub struct Planner {
    batches: Vec<usize>,
    steps: usize,
    margin: f64,
    budget: Option<u64>,
    device: DeviceChoice,
    parameter_bytes: Option<u64>,
    refine: bool,
}

impl Default for Planner {
    fn default() -> Self {
        Self::new()
    }
}

/// One batch size's measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measurement {
    /// Batch size.
    pub batch: usize,
    /// Peak of the last complete step at this size, in bytes.
    pub peak_bytes: u64,
    /// Peak of the first step at this size, in bytes.
    pub first_step_peak_bytes: u64,
    /// Bytes held after the last step (what stays between steps).
    pub after_step_bytes: u64,
    /// Wall time of the last step.
    pub step_seconds: f64,
    /// Highest bytes the allocator reserved during the last step, where the backend knows (the
    /// CUDA pool): above `peak_bytes` when blocks fragment, and what runs out first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_peak_bytes: Option<u64>,
}

impl Measurement {
    /// What the fit uses: the reserved peak where known, else the peak of live allocations.
    #[must_use]
    pub fn footprint_bytes(&self) -> u64 {
        self.reserved_peak_bytes.map_or(self.peak_bytes, |r| r.max(self.peak_bytes))
    }
}

/// Where the fixed memory goes, as far as it can be told.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FixedSplit {
    /// Bytes held before the first step (parameters, inputs already resident): measured.
    pub before_first_step_bytes: u64,
    /// Bytes the first step left behind (optimizer state and other lazily created buffers):
    /// measured as held-after minus held-before the first step.
    pub created_by_first_step_bytes: u64,
    /// Parameters, as stated by the caller ([`Planner::parameter_bytes`]).
    pub parameter_bytes: Option<u64>,
    /// Gradients inferred as one per parameter (present inside the step only).
    pub gradient_bytes: Option<u64>,
    /// The rest of the fixed peak (gradients when not stated, framework workspace), inferred.
    pub other_bytes: u64,
}

/// The result of [`Planner::run`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// `host-allocator` or `cuda` (`host-rss` has no per-step peak and is refused).
    pub backend: &'static str,
    /// `host` or `cuda:N`.
    pub device: String,
    /// One entry per batch size, in the order run.
    pub measurements: Vec<Measurement>,
    /// Fitted bytes that do not depend on the batch.
    pub fixed_bytes: f64,
    /// Fitted bytes per sample.
    pub per_sample_bytes: f64,
    /// Largest distance of a measured peak from the final fit (made on the two largest batches),
    /// as a share of that peak: large when the peak is not linear in the batch at small sizes.
    pub fit_error: f64,
    /// The split of the fixed memory.
    pub split: FixedSplit,
    /// The memory a step's peak may reach, in bytes.
    pub limit_bytes: u64,
    /// What the limit is: `budget`, or the memory this process can reach on its device.
    pub limit_source: &'static str,
    /// Safety margin applied to the limit for [`Plan::recommended_batch`].
    pub margin: f64,
    /// Largest batch whose fitted peak fits the limit.
    pub largest_batch: u64,
    /// Largest batch whose fitted peak fits the limit less the margin.
    pub recommended_batch: u64,
    /// Why refinement stopped early (a step failed), when it did; the largest batch is then
    /// capped below the failed size.
    pub refinement_stopped: Option<String>,
    /// Wall time of the whole plan.
    pub seconds: f64,
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError<E> {
    /// The user's step failed.
    #[error("the step failed at batch size {batch}: {error}")]
    Step {
        /// Batch size of the failed step.
        batch: usize,
        /// The step's error.
        error: E,
    },
    /// The settings cannot give a plan.
    #[error("{0}")]
    Settings(String),
    /// The memory source cannot give what a plan needs.
    #[error("{0}")]
    Source(String),
}

impl Planner {
    /// Batch sizes 8, 16 and 32, two steps each, a 10 % margin, the guard's automatic device.
    pub fn new() -> Self {
        Self {
            batches: DEFAULT_BATCHES.to_vec(),
            steps: 2,
            margin: DEFAULT_MARGIN,
            budget: None,
            device: DeviceChoice::Auto,
            parameter_bytes: None,
            refine: true,
        }
    }

    /// Settings from the environment, for running a plan from the command line:
    /// `MEMLINT_PLAN_BATCHES=64,128,256`, `MEMLINT_PLAN_STEPS=2`, `MEMLINT_PLAN_MARGIN=0.1`,
    /// `MEMLINT_PLAN_BUDGET=40GiB`, `MEMLINT_PLAN_DEVICE=auto|host|cuda:N`. Unset variables keep
    /// the defaults of [`Planner::new`]; a malformed one is an error naming it.
    pub fn from_env() -> Result<Self, String> {
        let mut planner = Self::new();
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if let Some(v) = var("MEMLINT_PLAN_BATCHES") {
            planner.batches = parse_batches(&v).map_err(|e| format!("MEMLINT_PLAN_BATCHES: {e}"))?;
        }
        if let Some(v) = var("MEMLINT_PLAN_STEPS") {
            planner.steps = v.trim().parse().map_err(|_| format!("MEMLINT_PLAN_STEPS: `{v}` is not a count"))?;
        }
        if let Some(v) = var("MEMLINT_PLAN_MARGIN") {
            planner.margin = v.trim().parse().map_err(|_| format!("MEMLINT_PLAN_MARGIN: `{v}` is not a number"))?;
        }
        if let Some(v) = var("MEMLINT_PLAN_BUDGET") {
            planner.budget = Some(parse_bytes(&v).map_err(|e| format!("MEMLINT_PLAN_BUDGET: {e}"))?);
        }
        if let Some(v) = var("MEMLINT_PLAN_DEVICE") {
            planner.device = parse_device(&v).map_err(|e| format!("MEMLINT_PLAN_DEVICE: {e}"))?;
        }
        Ok(planner)
    }

    /// The batch sizes to measure (at least two distinct ones).
    pub fn batches(mut self, batches: &[usize]) -> Self {
        self.batches = batches.to_vec();
        self
    }

    /// Steps per batch size (at least 2: the first creates the optimizer state).
    pub fn steps(mut self, steps: usize) -> Self {
        self.steps = steps;
        self
    }

    /// Share of the limit kept free by the recommended batch, in `[0, 1)`.
    pub fn margin(mut self, margin: f64) -> Self {
        self.margin = margin;
        self
    }

    /// Plan for a memory budget instead of the device's reachable memory.
    pub fn budget(mut self, bytes: u64) -> Self {
        self.budget = Some(bytes);
        self
    }

    /// Where to measure (as `#[mem_guard(device = ..)]`).
    pub fn device(mut self, device: DeviceChoice) -> Self {
        self.device = device;
        self
    }

    /// The model's parameter bytes, if known (e.g. the sum of a candle `VarMap`'s variables'
    /// `elem_count() × dtype size`): lets the plan split gradients out of the fixed memory.
    pub fn parameter_bytes(mut self, bytes: u64) -> Self {
        self.parameter_bytes = Some(bytes);
        self
    }

    fn validate<E>(&self) -> Result<Vec<usize>, PlanError<E>> {
        let mut batches = self.batches.clone();
        batches.sort_unstable();
        batches.dedup();
        if batches.len() < 2 || batches[0] == 0 {
            return Err(PlanError::Settings(format!(
                "a plan needs at least two distinct non-zero batch sizes, got {:?}",
                self.batches
            )));
        }
        if self.steps < 2 {
            return Err(PlanError::Settings(format!(
                "a plan needs at least 2 steps per batch size (the first creates optimizer state), got {}",
                self.steps
            )));
        }
        if !(0.0..1.0).contains(&self.margin) {
            return Err(PlanError::Settings(format!("the margin must be in [0, 1), got {}", self.margin)));
        }
        Ok(batches)
    }

    /// Runs `step(batch)` — one complete training step at that batch size — `steps` times per
    /// batch size, smallest first, then (unless [`Planner::refine`] is off) at batch sizes closer
    /// to the predicted limit, and returns the plan. The step should end the way a training step
    /// does (e.g. by reading the loss to the host), so the device has finished its work.
    ///
    /// Peaks are often not linear over a wide range of batch sizes (kernels and their workspaces
    /// change with the problem size: measured on candle's CPU backend, 17.7 KiB per sample up to
    /// a batch of 128 and 45.6 KiB above 256). So the final fit uses the two largest batches
    /// measured, and refinement measures at about half and four fifths of the predicted largest
    /// batch, where the fit holds. A step that fails during refinement (e.g. out of memory) ends
    /// it: the plan then caps the largest batch below the failed size and says so.
    pub fn run<E: fmt::Display>(&self, step: impl FnMut(usize) -> Result<(), E>) -> Result<Plan, PlanError<E>> {
        let batches = self.validate()?;
        let started = Instant::now();
        let source = sampler::select(self.device).sampler;
        if source.kind() == BackendKind::HostRss {
            return Err(PlanError::Source(
                "a plan needs the peak of a step: install `memlint::TrackingAllocator` as the \
                 global allocator, or run on a CUDA device"
                    .to_owned(),
            ));
        }
        let mut session = Session::new(source, step, self.steps)?;
        for &batch in &batches {
            session.measure(batch)?;
        }
        let limit = self.limit(&mut session)?;
        let mut stopped = None;
        if self.refine {
            for fraction in REFINEMENT {
                let guess = self.fit(&session, limit)?.largest_batch;
                let target = (guess as f64 * fraction) as usize;
                let largest = session.largest_batch();
                if (target as f64) < largest as f64 * 1.05 {
                    break; // already measured close to the limit
                }
                if let Err(PlanError::Step { batch, error }) = session.measure(target) {
                    stopped = Some((batch, error.to_string()));
                    break;
                }
            }
        }
        let mut plan = self.fit(&session, limit)?;
        if let Some((batch, error)) = stopped {
            let cap = batch.saturating_sub(1) as u64;
            plan.largest_batch = plan.largest_batch.min(cap);
            plan.recommended_batch = plan.recommended_batch.min(cap);
            plan.refinement_stopped = Some(format!("the step failed at batch size {batch}: {error}"));
        }
        plan.backend = session.source.kind().as_str();
        plan.device = session.source.device();
        plan.limit_source = limit.1;
        plan.seconds = started.elapsed().as_secs_f64();
        Ok(plan)
    }

    /// Turns refinement near the limit on (default) or off.
    pub fn refine(mut self, on: bool) -> Self {
        self.refine = on;
        self
    }

    fn limit<E, F>(&self, session: &mut Session<F>) -> Result<(u64, &'static str), PlanError<E>> {
        if let Some(b) = self.budget {
            return Ok((b, "budget"));
        }
        let held = read(&mut *session.source)?.allocated;
        let capacity = session.source.capacity().ok_or_else(|| {
            PlanError::Source(format!("cannot read how much memory is left on {}", session.source.device()))
        })?;
        Ok((held.saturating_add(capacity.available), "reachable memory of this process"))
    }

    /// The plan from the two largest batches measured (where the fit is local), with the fit
    /// error measured over every batch.
    fn fit<E, F>(&self, session: &Session<F>, limit: (u64, &'static str)) -> Result<Plan, PlanError<E>> {
        let mut sorted = session.measurements.clone();
        sorted.sort_by_key(|m| m.batch);
        let top = &sorted[sorted.len().saturating_sub(2)..];
        let inputs = FitInputs {
            limit_bytes: limit.0,
            margin: self.margin,
            before_first: session.before_first,
            created_by_first_step_bytes: session.created_by_first.unwrap_or(0),
            parameter_bytes: self.parameter_bytes,
        };
        let mut plan = fit_plan(top, inputs).map_err(PlanError::Source)?;
        plan.fit_error = sorted
            .iter()
            .map(|m| {
                (plan.fixed_bytes + plan.per_sample_bytes * m.batch as f64 - m.footprint_bytes() as f64).abs()
                    / m.footprint_bytes().max(1) as f64
            })
            .fold(0.0, f64::max);
        plan.measurements = session.measurements.clone();
        Ok(plan)
    }
}

/// Where refinement measures, as fractions of the latest predicted largest batch.
const REFINEMENT: [f64; 2] = [0.5, 0.8];

/// The state of one plan's measurements.
struct Session<F> {
    source: Box<dyn Sample>,
    step: F,
    steps: usize,
    /// Bytes held before the first step.
    before_first: u64,
    /// Bytes the first step left behind.
    created_by_first: Option<u64>,
    measurements: Vec<Measurement>,
}

impl<F> Session<F> {
    fn new<E>(mut source: Box<dyn Sample>, step: F, steps: usize) -> Result<Self, PlanError<E>> {
        let before_first = read(&mut *source)?.allocated;
        Ok(Self { source, step, steps, before_first, created_by_first: None, measurements: Vec::new() })
    }

    fn largest_batch(&self) -> usize {
        self.measurements.iter().map(|m| m.batch).max().unwrap_or(0)
    }

    /// `steps` steps at `batch`; the last one's peak is the measurement.
    fn measure<E>(&mut self, batch: usize) -> Result<(), PlanError<E>>
    where
        F: FnMut(usize) -> Result<(), E>,
    {
        let mut m = Measurement {
            batch,
            peak_bytes: 0,
            first_step_peak_bytes: 0,
            after_step_bytes: 0,
            step_seconds: 0.0,
            reserved_peak_bytes: None,
        };
        for i in 0..self.steps {
            self.source.begin_iteration();
            let t = Instant::now();
            (self.step)(batch).map_err(|error| PlanError::Step { batch, error })?;
            let elapsed = t.elapsed();
            let r = read(&mut *self.source)?;
            let peak = r.peak.unwrap_or(r.allocated).max(r.allocated);
            if i == 0 {
                m.first_step_peak_bytes = peak;
                let before = self.before_first;
                self.created_by_first.get_or_insert(r.allocated.saturating_sub(before));
            }
            m.peak_bytes = peak;
            m.reserved_peak_bytes = self.source.reserved_peak();
            m.after_step_bytes = r.allocated;
            m.step_seconds = elapsed.as_secs_f64();
        }
        self.measurements.push(m);
        Ok(())
    }
}

fn read<E>(source: &mut dyn Sample) -> Result<crate::sampler::Reading, PlanError<E>> {
    source.read().map_err(|e| PlanError::Source(format!("reading {} failed: {e}", source.device())))
}

/// What [`fit_plan`] needs besides the measurements.
#[derive(Debug, Clone, Copy)]
pub struct FitInputs {
    /// The memory a step's peak may reach.
    pub limit_bytes: u64,
    /// Safety margin in `[0, 1)`.
    pub margin: f64,
    /// Bytes held before the first step.
    pub before_first: u64,
    /// Bytes the first step left behind.
    pub created_by_first_step_bytes: u64,
    /// The caller's parameter bytes, if stated.
    pub parameter_bytes: Option<u64>,
}

/// Fits `peak = fixed + per_sample × batch` (ordinary least squares) and predicts the largest
/// batch. Pure, so it is tested without a device. Errors when the peak does not grow with the
/// batch (nothing to extrapolate) or when even the fixed memory exceeds the limit.
pub fn fit_plan(measurements: &[Measurement], inputs: FitInputs) -> Result<Plan, String> {
    let n = measurements.len() as f64;
    if measurements.len() < 2 {
        return Err("a plan needs measurements at two batch sizes or more".to_owned());
    }
    let mean_x = measurements.iter().map(|m| m.batch as f64).sum::<f64>() / n;
    let mean_y = measurements.iter().map(|m| m.footprint_bytes() as f64).sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for m in measurements {
        let dx = m.batch as f64 - mean_x;
        sxy += dx * (m.footprint_bytes() as f64 - mean_y);
        sxx += dx * dx;
    }
    let per_sample = sxy / sxx;
    if !per_sample.is_finite() || per_sample <= 0.0 {
        return Err(format!(
            "the step's peak does not grow with the batch size (fitted {per_sample:.1} bytes per sample): \
             check that the step really uses the batch size it is given"
        ));
    }
    let fixed = mean_y - per_sample * mean_x;
    let fit_error = measurements
        .iter()
        .map(|m| {
            ((fixed + per_sample * m.batch as f64) - m.footprint_bytes() as f64).abs()
                / m.footprint_bytes().max(1) as f64
        })
        .fold(0.0, f64::max);
    // The small epsilon keeps an exact fit (899.999… from rounding) at its integer.
    let fits = |limit: f64| ((limit - fixed) / per_sample + 1e-6).floor().max(0.0) as u64;
    let limit = inputs.limit_bytes as f64;
    if fixed >= limit {
        return Err(format!(
            "the fixed memory ({}) already exceeds the limit ({})",
            human_bytes(fixed),
            human_bytes(limit)
        ));
    }
    let gradient_bytes = inputs.parameter_bytes;
    let accounted = inputs.before_first + inputs.created_by_first_step_bytes + gradient_bytes.unwrap_or(0);
    Ok(Plan {
        backend: "",
        device: String::new(),
        measurements: measurements.to_vec(),
        fixed_bytes: fixed,
        per_sample_bytes: per_sample,
        fit_error,
        split: FixedSplit {
            before_first_step_bytes: inputs.before_first,
            created_by_first_step_bytes: inputs.created_by_first_step_bytes,
            parameter_bytes: inputs.parameter_bytes,
            gradient_bytes,
            other_bytes: (fixed.max(0.0) as u64).saturating_sub(accounted),
        },
        limit_bytes: inputs.limit_bytes,
        limit_source: "",
        margin: inputs.margin,
        largest_batch: fits(limit),
        recommended_batch: fits(limit * (1.0 - inputs.margin)),
        refinement_stopped: None,
        seconds: 0.0,
    })
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "memlint plan: {} on {} (peak of complete steps, {:.1} s)",
            self.backend, self.device, self.seconds
        )?;
        let reserved = self.measurements.iter().any(|m| m.reserved_peak_bytes.is_some());
        write!(f, "  {:>8}  {:>12}  {:>12}  {:>12}", "batch", "peak", "first step", "held after")?;
        if reserved {
            write!(f, "  {:>13}", "reserved peak")?;
        }
        writeln!(f)?;
        for m in &self.measurements {
            write!(
                f,
                "  {:>8}  {:>12}  {:>12}  {:>12}",
                m.batch,
                human_bytes(m.peak_bytes as f64),
                human_bytes(m.first_step_peak_bytes as f64),
                human_bytes(m.after_step_bytes as f64)
            )?;
            if let Some(r) = m.reserved_peak_bytes {
                write!(f, "  {:>13}", human_bytes(r as f64))?;
            }
            writeln!(f)?;
        }
        if reserved {
            writeln!(f, "  (fitted on the reserved peak: the allocator's blocks, fragmentation included)")?;
        }
        writeln!(
            f,
            "  fixed           {:>12}  (fit on the two largest batches; worst point {:.1} % off the line)",
            human_bytes(self.fixed_bytes),
            self.fit_error * 100.0
        )?;
        let s = &self.split;
        writeln!(
            f,
            "    held before the first step   {:>12}  measured",
            human_bytes(s.before_first_step_bytes as f64)
        )?;
        writeln!(
            f,
            "    created by the first step    {:>12}  measured (optimizer state, caches)",
            human_bytes(s.created_by_first_step_bytes as f64)
        )?;
        if let Some(g) = s.gradient_bytes {
            writeln!(
                f,
                "    gradients                    {:>12}  inferred: one per stated parameter",
                human_bytes(g as f64)
            )?;
        }
        writeln!(f, "    other (workspace, transient)  {:>12}  inferred", human_bytes(s.other_bytes as f64))?;
        writeln!(
            f,
            "  per sample      {:>12}  (fit: activations and per-sample buffers)",
            human_bytes(self.per_sample_bytes)
        )?;
        writeln!(f, "  limit           {:>12}  ({})", human_bytes(self.limit_bytes as f64), self.limit_source)?;
        writeln!(f, "  largest batch   {:>12}  (fitted peak = limit)", self.largest_batch)?;
        write!(
            f,
            "  recommended     {:>12}  (keeps {:.0} % of the limit free)",
            self.recommended_batch,
            self.margin * 100.0
        )?;
        if let Some(why) = &self.refinement_stopped {
            write!(f, "\n  note: refinement stopped: {why}")?;
        }
        Ok(())
    }
}

/// `"64,128,256"` → sizes.
fn parse_batches(text: &str) -> Result<Vec<usize>, String> {
    text.split(',')
        .map(|p| p.trim().parse::<usize>().map_err(|_| format!("`{}` is not a batch size", p.trim())))
        .collect()
}

/// `"40GiB"`, `"512 MiB"`, `"1000000"` → bytes.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number.parse().map_err(|_| format!("`{t}` is not a size such as `40GiB`"))?;
    let scale = match unit.trim() {
        "" | "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0f64.powi(4),
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        other => return Err(format!("unknown unit `{other}` in `{t}` (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)")),
    };
    Ok((number * scale) as u64)
}

fn parse_device(text: &str) -> Result<DeviceChoice, String> {
    match text.trim() {
        "auto" => Ok(DeviceChoice::Auto),
        "host" => Ok(DeviceChoice::Host),
        other => other
            .strip_prefix("cuda:")
            .and_then(|n| n.parse().ok())
            .map(DeviceChoice::Cuda)
            .ok_or_else(|| format!("`{other}` is not `auto`, `host` or `cuda:N`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(batch: usize, peak: u64) -> Measurement {
        Measurement {
            batch,
            peak_bytes: peak,
            first_step_peak_bytes: peak,
            after_step_bytes: 0,
            step_seconds: 0.0,
            reserved_peak_bytes: None,
        }
    }

    fn inputs(limit: u64) -> FitInputs {
        FitInputs {
            limit_bytes: limit,
            margin: 0.1,
            before_first: 0,
            created_by_first_step_bytes: 0,
            parameter_bytes: None,
        }
    }

    #[test]
    fn exact_line_gives_exact_prediction() {
        // 100 MB fixed + 1 MB per sample; 1 GB limit → (1e9 - 1e8) / 1e6 = 900.
        let ms = [m(8, 108_000_000), m(16, 116_000_000), m(32, 132_000_000)];
        let plan = fit_plan(&ms, inputs(1_000_000_000)).unwrap();
        assert!((plan.per_sample_bytes - 1e6).abs() < 1e-3, "{}", plan.per_sample_bytes);
        assert!((plan.fixed_bytes - 1e8).abs() < 1.0, "{}", plan.fixed_bytes);
        assert_eq!(plan.largest_batch, 900);
        // 10 % margin: (0.9e9 - 1e8) / 1e6 = 800.
        assert_eq!(plan.recommended_batch, 800);
        assert!(plan.fit_error < 1e-9);
    }

    #[test]
    fn the_reserved_peak_is_fitted_where_the_allocator_knows_it() {
        // Live allocations peak at 100 MB + 1 MB per sample, but the pool's blocks at
        // 100 MB + 1.25 MB per sample: the blocks run out first, so they are what is fitted.
        let with_reserved = |batch: usize| Measurement {
            reserved_peak_bytes: Some(100_000_000 + 1_250_000 * batch as u64),
            ..m(batch, 100_000_000 + 1_000_000 * batch as u64)
        };
        let plan = fit_plan(&[with_reserved(100), with_reserved(200)], inputs(1_100_000_000)).unwrap();
        assert_eq!(plan.largest_batch, 800);
        let text = plan.to_string();
        assert!(text.contains("reserved peak"), "{text}");
        // A reserved figure below the live peak (a backend that does not track it well) never
        // lowers the footprint.
        let low = Measurement { reserved_peak_bytes: Some(1), ..m(100, 200_000_000) };
        assert_eq!(low.footprint_bytes(), 200_000_000);
    }

    #[test]
    fn flat_peak_is_refused_with_a_reason() {
        let ms = [m(8, 100), m(16, 100)];
        let err = fit_plan(&ms, inputs(1000)).unwrap_err();
        assert!(err.contains("does not grow with the batch size"), "{err}");
    }

    #[test]
    fn fixed_memory_over_the_limit_is_refused() {
        let ms = [m(8, 2_000), m(16, 2_100)];
        let err = fit_plan(&ms, inputs(1_000)).unwrap_err();
        assert!(err.contains("already exceeds the limit"), "{err}");
    }

    #[test]
    fn the_split_accounts_for_measured_parts() {
        let ms = [m(10, 1_100), m(20, 1_200)];
        let plan = fit_plan(
            &ms,
            FitInputs {
                limit_bytes: 10_000,
                margin: 0.0,
                before_first: 300,
                created_by_first_step_bytes: 500,
                parameter_bytes: Some(100),
            },
        )
        .unwrap();
        assert_eq!(plan.split.gradient_bytes, Some(100));
        // fixed 1000 = 300 + 500 + 100 + other 100
        assert_eq!(plan.split.other_bytes, 100);
        assert_eq!(plan.largest_batch, 900);
        assert_eq!(plan.recommended_batch, plan.largest_batch);
    }

    #[test]
    fn sizes_and_env_forms_parse() {
        assert_eq!(parse_bytes("40GiB").unwrap(), 40 << 30);
        assert_eq!(parse_bytes("1.5 MiB").unwrap(), 3 << 19);
        assert_eq!(parse_bytes("123").unwrap(), 123);
        assert!(parse_bytes("12 parsecs").unwrap_err().contains("unknown unit"));
        assert_eq!(parse_batches("8, 16,32").unwrap(), vec![8, 16, 32]);
        assert!(parse_batches("8,x").is_err());
        assert_eq!(parse_device("cuda:1").unwrap(), DeviceChoice::Cuda(1));
        assert!(parse_device("tpu").is_err());
    }

    #[test]
    fn settings_are_validated_before_anything_runs() {
        let mut ran = false;
        let err = Planner::new().batches(&[16, 16]).run(|_| -> Result<(), String> {
            ran = true;
            Ok(())
        });
        assert!(matches!(err, Err(PlanError::Settings(_))));
        assert!(!ran);
        assert!(matches!(Planner::new().steps(1).run(|_| Ok::<(), String>(())), Err(PlanError::Settings(_))));
        assert!(matches!(Planner::new().margin(1.0).run(|_| Ok::<(), String>(())), Err(PlanError::Settings(_))));
    }
}
