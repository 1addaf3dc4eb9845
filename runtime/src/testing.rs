//! Memory assertions for tests, in the spirit of dhat-rs's heap assertions, for training steps.
//!
//! - [`assert_no_growth`]: N steps of a closure do not grow memory. Judged by the same detector
//!   as `#[mem_guard]` (robust slope, persistence, noise), so batch-size noise, caches filled
//!   once and lazily created optimizer state do not fail it; a steady leak does.
//! - [`assert_peak_below`]: the peak of one step stays under a limit.
//!
//! Both read the guard's memory source: the CUDA pool when the process uses a GPU (feature
//! `cuda`), else [`crate::TrackingAllocator`] — install it as the test binary's global allocator,
//! as dhat's heap tests do (one integration-test file per binary, since the counters are
//! process-wide). Both have `try_` forms that return the failure instead of panicking.

use std::fmt;

use crate::detector::{Detection, Detector, DetectorConfig, overall_fit};
use crate::report::human_bytes;
use crate::sampler::{self, BackendKind, DeviceChoice, Sample};

/// Settings of a growth check; [`GrowthCheck::new`] then [`GrowthCheck::run`].
#[derive(Debug, Clone, Copy)]
pub struct GrowthCheck {
    steps: u64,
    config: DetectorConfig,
    device: DeviceChoice,
}

/// The memory after each step, as measured by a check.
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    /// `host-allocator`, `cuda` or `host-rss`.
    pub backend: &'static str,
    /// `(step, allocated bytes after it)`.
    pub points: Vec<(u64, u64)>,
}

/// Why a memory assertion failed.
#[derive(Debug)]
pub enum Failure<E> {
    /// Memory grew: the detector declared a leak.
    Growth {
        /// The detector's verdict.
        detection: Detection,
        /// Every sample taken.
        samples: Samples,
        /// The detector's settings.
        config: DetectorConfig,
    },
    /// A step's peak went over the limit.
    Peak {
        /// Peak of the step, bytes.
        peak: u64,
        /// The limit, bytes.
        limit: u64,
        /// Held before the step, bytes.
        before: u64,
        /// `host-allocator` or `cuda`.
        backend: &'static str,
    },
    /// The step itself failed.
    Step {
        /// The 0-based step that failed.
        step: u64,
        /// Its error.
        error: E,
    },
    /// The check cannot run as asked (settings, or a source without what it needs).
    Setup(String),
}

impl Samples {
    fn lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<String> = if self.points.len() <= 16 {
            self.points.iter().map(|&(i, b)| format!("{i}: {}", human_bytes(b as f64))).collect()
        } else {
            let head = self.points[..8].iter();
            let tail = self.points[self.points.len() - 8..].iter();
            let mut v: Vec<String> = head.map(|&(i, b)| format!("{i}: {}", human_bytes(b as f64))).collect();
            v.push("…".to_owned());
            v.extend(tail.map(|&(i, b)| format!("{i}: {}", human_bytes(b as f64))));
            v
        };
        write!(f, "  samples ({}, step: allocated after it): {}", self.backend, shown.join(", "))
    }
}

impl<E: fmt::Display> fmt::Display for Failure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Growth { detection, samples, config } => {
                let first = samples.points.get(config.warmup as usize).or(samples.points.first());
                let last = samples.points.last();
                writeln!(
                    f,
                    "memory grows by {} per step (declared at step {}, after a warm-up of {} steps)",
                    human_bytes(detection.growth_bytes_per_iteration),
                    detection.iteration,
                    config.warmup
                )?;
                if let (Some(&(i0, b0)), Some(&(i1, b1))) = (first, last) {
                    writeln!(
                        f,
                        "  from {} at step {i0} to {} at step {i1}",
                        human_bytes(b0 as f64),
                        human_bytes(b1 as f64)
                    )?;
                }
                samples.lines(f)
            }
            Failure::Peak { peak, limit, before, backend } => write!(
                f,
                "the step's peak is {} ({backend}), over the limit of {} by {} (held before the step: {})",
                human_bytes(*peak as f64),
                human_bytes(*limit as f64),
                human_bytes(peak.saturating_sub(*limit) as f64),
                human_bytes(*before as f64)
            ),
            Failure::Step { step, error } => write!(f, "step {step} failed: {error}"),
            Failure::Setup(why) => f.write_str(why),
        }
    }
}

impl<E: fmt::Display + fmt::Debug> std::error::Error for Failure<E> {}

impl GrowthCheck {
    /// `steps` steps, the guard's default warm-up (10) and window (32), automatic device.
    pub fn new(steps: u64) -> Self {
        Self { steps, config: DetectorConfig::default(), device: DeviceChoice::Auto }
    }

    /// Steps ignored at first (caches, lazily created optimizer state).
    pub fn warmup(mut self, steps: u64) -> Self {
        self.config.warmup = steps;
        self
    }

    /// Samples in the detector's sliding window.
    pub fn window(mut self, samples: usize) -> Self {
        self.config.window = samples;
        self
    }

    /// The detector's settings, whole.
    pub fn detector(mut self, config: DetectorConfig) -> Self {
        self.config = config;
        self
    }

    /// Where to measure (as `#[mem_guard(device = ..)]`).
    pub fn device(mut self, device: DeviceChoice) -> Self {
        self.device = device;
        self
    }

    /// Fewest steps with which the detector can declare a leak at all.
    pub fn min_steps(&self) -> u64 {
        Detector::earliest_detection(&self.config) + 1
    }

    /// Runs `step(i)` for `i` in `0..steps`, reading memory after each, and judges the series.
    pub fn run<E>(&self, mut step: impl FnMut(u64) -> Result<(), E>) -> Result<Samples, Failure<E>> {
        if self.steps < self.min_steps() {
            return Err(Failure::Setup(format!(
                "{} steps cannot show a leak with warm-up {} and window {}: use at least {}",
                self.steps,
                self.config.warmup,
                self.config.window,
                self.min_steps()
            )));
        }
        let mut source = sampler::select(self.device).sampler;
        let mut samples = Samples { backend: source.kind().as_str(), points: Vec::with_capacity(self.steps as usize) };
        for i in 0..self.steps {
            step(i).map_err(|error| Failure::Step { step: i, error })?;
            let bytes = source.read().map_err(|e| Failure::Setup(format!("reading memory failed: {e}")))?.allocated;
            samples.points.push((i, bytes));
        }
        match judge(&samples.points, self.config) {
            Some(detection) => Err(Failure::Growth { detection, samples, config: self.config }),
            None => Ok(samples),
        }
    }
}

/// The guard's verdict on a series of `(step, bytes)` samples: the detector fed in order.
pub fn judge(points: &[(u64, u64)], config: DetectorConfig) -> Option<Detection> {
    let mut detector = Detector::new(config);
    points.iter().find_map(|&(i, bytes)| detector.observe(i, bytes))
}

/// Growth per step over the samples after warm-up (Theil–Sen), for messages and reports.
pub fn growth_per_step(samples: &Samples, warmup: u64) -> f64 {
    let after: Vec<(u64, u64)> = samples.points.iter().copied().filter(|&(i, _)| i >= warmup).collect();
    overall_fit(&after).slope
}

/// Panics with the samples when `steps` steps of `step` grow memory (see [`GrowthCheck`]).
#[track_caller]
pub fn assert_no_growth<E: fmt::Display>(steps: u64, step: impl FnMut(u64) -> Result<(), E>) -> Samples {
    match GrowthCheck::new(steps).run(step) {
        Ok(samples) => samples,
        Err(failure) => panic!("memlint: {failure}"),
    }
}

/// Runs one step and returns its peak, or why it is over `limit` bytes.
pub fn try_assert_peak_below<E>(
    limit: u64,
    device: DeviceChoice,
    step: impl FnOnce() -> Result<(), E>,
) -> Result<u64, Failure<E>> {
    let mut source = sampler::select(device).sampler;
    if source.kind() == BackendKind::HostRss {
        return Err(Failure::Setup(
            "a peak needs `memlint::TrackingAllocator` as the global allocator, or a CUDA device".to_owned(),
        ));
    }
    let read = |s: &mut Box<dyn Sample>| s.read().map_err(|e| Failure::Setup(format!("reading memory failed: {e}")));
    let before = read(&mut source)?.allocated;
    source.begin_iteration();
    step().map_err(|error| Failure::Step { step: 0, error })?;
    let r = read(&mut source)?;
    let peak = r.peak.unwrap_or(r.allocated).max(r.allocated);
    if peak > limit {
        return Err(Failure::Peak { peak, limit, before, backend: source.kind().as_str() });
    }
    Ok(peak)
}

/// Panics when the peak of one `step` goes over `limit` bytes; returns the peak otherwise.
#[track_caller]
pub fn assert_peak_below<E: fmt::Display>(limit: u64, step: impl FnOnce() -> Result<(), E>) -> u64 {
    match try_assert_peak_below(limit, DeviceChoice::Auto, step) {
        Ok(peak) => peak,
        Err(failure) => panic!("memlint: {failure}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny seeded generator (SplitMix64): the tests need reproducible noise, not quality.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn range(&mut self, lo: u64, hi: u64) -> u64 {
            lo + self.next() % (hi - lo)
        }
    }

    /// A clean training loop's memory after each step: a model, optimizer state created at the
    /// first step, per-batch buffers sized by a batch drawn from 16..128, a cache that fills in
    /// steps and plateaus, and an evaluation spike every 50 steps.
    fn clean(seed: u64, steps: u64) -> Vec<(u64, u64)> {
        let mut rng = Rng(seed);
        let mut cache = 0u64;
        (0..steps)
            .map(|i| {
                let optimizer = if i == 0 { 0 } else { 8 << 20 };
                let batch = rng.range(16, 128) * 48 * 1024;
                if cache < (6 << 20) && rng.range(0, 10) == 0 {
                    cache += 1 << 20;
                }
                let eval = if i % 50 == 49 { 3 << 20 } else { 0 };
                (i, (40 << 20) + optimizer + batch + cache + eval)
            })
            .collect()
    }

    #[test]
    fn clean_noisy_loops_never_fail_the_check() {
        // While the cache fills (1 MiB at a time, 6 MiB over ~60 steps) under 5 MiB of batch
        // noise, memory grows by a few noise widths per window: the detector waits for such weak
        // growth to last a whole window, and the cache is full before that.
        let config = GrowthCheck::new(200).config;
        for seed in 0..2_000 {
            let points = clean(seed, 200);
            assert_eq!(judge(&points, config), None, "false alarm with seed {seed}");
        }
        // And over thousands of steps.
        for seed in 0..200 {
            let points = clean(seed, 3_000);
            assert_eq!(judge(&points, config), None, "false alarm with seed {seed} over 3,000 steps");
        }
    }

    #[test]
    fn a_steady_leak_under_the_same_noise_fails_it() {
        let config = GrowthCheck::new(200).config;
        for seed in 0..200 {
            let points: Vec<(u64, u64)> = clean(seed, 200).into_iter().map(|(i, b)| (i, b + i * (2 << 20))).collect();
            let detection = judge(&points, config).unwrap_or_else(|| panic!("missed with seed {seed}"));
            let rate = detection.growth_bytes_per_iteration;
            assert!((1.0e6..3.0e6).contains(&rate), "seed {seed}: {rate} B/step");
        }
    }

    #[test]
    fn too_few_steps_are_refused_before_running() {
        let mut ran = false;
        let result = GrowthCheck::new(5).device(DeviceChoice::Host).run(|_| -> Result<(), String> {
            ran = true;
            Ok(())
        });
        assert!(matches!(result, Err(Failure::Setup(ref why)) if why.contains("use at least")), "{result:?}");
        assert!(!ran);
    }

    #[test]
    fn growth_failure_message_shows_rate_and_samples() {
        let config = DetectorConfig::default();
        let points: Vec<(u64, u64)> = (0..60).map(|i| (i, 1_000_000 + i * 262_144)).collect();
        let detection = judge(&points, config).expect("a 256 KiB/step leak is declared");
        let failure: Failure<String> =
            Failure::Growth { detection, samples: Samples { backend: "host-allocator", points }, config };
        let text = failure.to_string();
        assert!(text.starts_with("memory grows by 256"), "{text}");
        assert!(text.contains("samples (host-allocator"), "{text}");
    }
}
