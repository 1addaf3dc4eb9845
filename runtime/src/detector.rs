//! The leak verdict: robust growth per iteration, persistence, tolerance, projection.
//!
//! Samples taken during warm-up are ignored (allocators, caches and lazily created optimizer
//! state grow at first). After that, every iteration the detector fits a Theil–Sen line (the
//! median of all pairwise slopes, insensitive to outliers) over a sliding window of the last
//! `window` samples, and measures how consistently memory rises with Kendall's tau (the share
//! of increasing pairs minus the share of decreasing ones). A window is *growing* when
//!
//! - the fitted growth across the window (slope × (window − 1)) exceeds the tolerance, and
//! - tau ≥ [`MIN_TAU`]: memory rises in most pairs of samples, not just across one jump.
//!
//! - that growth is at least [`MIN_SIGNAL_TO_NOISE`] times the noise around the fitted line
//!   (1.4826 × the median absolute residual, a robust standard deviation);
//! - the window's median exceeds every earlier sample after warm-up (there must be
//!   them, at least `window`): a leak keeps setting new highs, bounded noise does not.
//!
//! A leak is declared after `persistence` consecutive growing windows. Stationary loops whose
//! memory varies with the batch (noise), single steps (a cache filled once) and sawtooth
//! patterns (periodic frees) fail the tau, noise or new-high tests. A second, long-horizon check
//! applies the growth, tau and noise tests (after a cheap gate: the latest median must exceed
//! every median of the older half) to the medians of consecutive blocks of `window` samples, which finds slow leaks whose
//! growth within one window stays below the tolerance.

use std::collections::VecDeque;

/// Minimum ratio of the growth across a window to the noise around the fitted line.
pub const MIN_SIGNAL_TO_NOISE: f64 = 6.0;
/// Minimum Kendall tau of a growing window.
pub const MIN_TAU: f64 = 0.6;
/// Minimum Kendall tau of a growing long-horizon history (block medians).
pub const MIN_LONG_TAU: f64 = 0.7;
/// Block medians kept for the long-horizon check.
pub const LONG_BLOCKS: usize = 32;
/// Block medians needed before the long-horizon check runs.
pub const MIN_LONG_BLOCKS: usize = 16;
/// Consecutive growing long-horizon checks needed.
pub const LONG_PERSISTENCE: usize = 3;

/// The detector's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetectorConfig {
    /// Iterations ignored at the start.
    pub warmup: u64,
    /// Samples in the sliding window (at least 3).
    pub window: usize,
    /// Growth across one window below which memory counts as flat, in bytes.
    pub tolerance_bytes: u64,
    /// Consecutive growing windows needed to declare a leak.
    pub persistence: usize,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        Self { warmup: 10, window: 12, tolerance_bytes: 1 << 20, persistence: 4 }
    }
}

/// A line fitted through samples.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Fit {
    /// Theil–Sen slope: bytes per iteration.
    pub slope: f64,
    /// Kendall's tau between iteration and bytes, in [-1, 1].
    pub tau: f64,
}

/// Which check declared the leak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Horizon {
    /// The sliding window of single iterations.
    Window,
    /// The history of block medians.
    Long,
}

/// A declared leak.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Detection {
    /// Iteration at which the leak was declared.
    pub iteration: u64,
    /// Estimated growth at that moment, bytes per iteration.
    pub growth_bytes_per_iteration: f64,
    /// Which check fired.
    pub horizon: Horizon,
}

/// Online leak detector over one sampled loop.
#[derive(Debug, Clone)]
pub struct Detector {
    config: DetectorConfig,
    /// The last `window` post-warm-up samples: (iteration, bytes).
    recent: VecDeque<(f64, f64)>,
    /// Consecutive growing windows so far.
    streak: usize,
    /// Highest sample after warm-up that has left the window, bytes.
    history_max: f64,
    /// Samples after warm-up that have left the window.
    history_len: u64,
    /// Samples of the block being filled, bytes.
    block: Vec<f64>,
    /// Medians of the last [`LONG_BLOCKS`] blocks: (block index, bytes).
    blocks: VecDeque<(f64, f64)>,
    /// Blocks completed so far.
    blocks_done: u64,
    /// Consecutive growing long-horizon checks so far.
    long_streak: usize,
    /// Pairwise slopes, reused between fits.
    scratch: Vec<f64>,
    /// The latest window fit.
    last_fit: Option<Fit>,
    detection: Option<Detection>,
}

impl Detector {
    /// A detector; `window` below 3 is raised to 3 and `persistence` below 1 to 1.
    pub fn new(mut config: DetectorConfig) -> Self {
        config.window = config.window.max(3);
        config.persistence = config.persistence.max(1);
        let w = config.window;
        Self {
            config,
            recent: VecDeque::with_capacity(w),
            streak: 0,
            history_max: f64::NEG_INFINITY,
            history_len: 0,
            block: Vec::with_capacity(w),
            blocks: VecDeque::with_capacity(LONG_BLOCKS),
            blocks_done: 0,
            long_streak: 0,
            scratch: Vec::with_capacity(w * w / 2 + LONG_BLOCKS * LONG_BLOCKS / 2),
            last_fit: None,
            detection: None,
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &DetectorConfig {
        &self.config
    }

    /// Bytes of heap this detector holds (fixed after construction).
    pub fn heap_bytes(&self) -> usize {
        self.recent.capacity() * size_of::<(f64, f64)>()
            + self.block.capacity() * size_of::<f64>()
            + self.blocks.capacity() * size_of::<(f64, f64)>()
            + self.scratch.capacity() * size_of::<f64>()
    }

    /// Feeds the bytes in use after `iteration` (0-based). Returns the detection the first time a
    /// leak is declared.
    pub fn observe(&mut self, iteration: u64, bytes: u64) -> Option<Detection> {
        if iteration < self.config.warmup {
            return None;
        }
        let (x, y) = (iteration as f64, bytes as f64);
        if self.recent.len() == self.config.window
            && let Some((_, old)) = self.recent.pop_front()
        {
            self.history_max = self.history_max.max(old);
            self.history_len += 1;
        }
        self.recent.push_back((x, y));
        let mut fired = None;
        if self.recent.len() == self.config.window {
            let points = self.recent.make_contiguous();
            // The cheap test first: a flat loop rarely sets a new high, so it skips the fit.
            let new_high = self.history_len >= self.config.window as u64 && {
                self.scratch.clear();
                self.scratch.extend(points.iter().map(|&(_, y)| y));
                median(&mut self.scratch) > self.history_max
            };
            let growing = new_high && {
                let fit = theil_sen(points, &mut self.scratch);
                self.last_fit = Some(fit);
                let growth = fit.slope * (self.config.window - 1) as f64;
                let noise = residual_noise(points, fit.slope, &mut self.scratch);
                growth > self.config.tolerance_bytes as f64
                    && fit.tau >= MIN_TAU
                    && growth >= MIN_SIGNAL_TO_NOISE * noise
            };
            if growing {
                self.streak += 1;
            } else {
                self.streak = 0;
            }
            if self.streak >= self.config.persistence {
                fired = Some(Detection {
                    iteration,
                    growth_bytes_per_iteration: self.last_fit.map_or(0.0, |f| f.slope),
                    horizon: Horizon::Window,
                });
            }
        }
        self.block.push(y);
        if self.block.len() == self.config.window {
            let median = median(&mut self.block);
            self.block.clear();
            if self.blocks.len() == LONG_BLOCKS {
                self.blocks.pop_front();
            }
            self.blocks.push_back((self.blocks_done as f64, median));
            self.blocks_done += 1;
            // Cheap gate: a growing history ends above everything in its older half.
            let rising = {
                let blocks = self.blocks.make_contiguous();
                let (older, newer) = blocks.split_at(blocks.len() / 2);
                let older_max = older.iter().map(|b| b.1).fold(f64::NEG_INFINITY, f64::max);
                newer.last().is_some_and(|last| last.1 > older_max)
            };
            if !rising {
                self.long_streak = 0;
            } else if fired.is_none() && self.blocks.len() >= MIN_LONG_BLOCKS {
                let blocks = self.blocks.make_contiguous();
                let fit = theil_sen(blocks, &mut self.scratch);
                let growth = fit.slope * (blocks.len() - 1) as f64;
                let noise = residual_noise(blocks, fit.slope, &mut self.scratch);
                if growth > self.config.tolerance_bytes as f64
                    && fit.tau >= MIN_LONG_TAU
                    && growth >= MIN_SIGNAL_TO_NOISE * noise
                {
                    self.long_streak += 1;
                } else {
                    self.long_streak = 0;
                }
                if self.long_streak >= LONG_PERSISTENCE {
                    fired = Some(Detection {
                        iteration,
                        growth_bytes_per_iteration: fit.slope / self.config.window as f64,
                        horizon: Horizon::Long,
                    });
                }
            }
        }
        match (fired, self.detection) {
            (Some(d), None) => {
                self.detection = Some(d);
                Some(d)
            }
            _ => None,
        }
    }

    /// The leak, once declared (it stays declared).
    pub fn detection(&self) -> Option<Detection> {
        self.detection
    }

    /// The latest sliding-window fit (windows that set no new high are not fitted).
    pub fn last_fit(&self) -> Option<Fit> {
        self.last_fit
    }
}

/// Theil–Sen slope and Kendall tau of `points` (x strictly increasing). `scratch` is reused.
pub fn theil_sen(points: &[(f64, f64)], scratch: &mut Vec<f64>) -> Fit {
    scratch.clear();
    let mut rising = 0i64;
    let mut falling = 0i64;
    for (i, &(xi, yi)) in points.iter().enumerate() {
        for &(xj, yj) in &points[i + 1..] {
            let dx = xj - xi;
            if dx <= 0.0 {
                continue;
            }
            let dy = yj - yi;
            scratch.push(dy / dx);
            rising += i64::from(dy > 0.0);
            falling += i64::from(dy < 0.0);
        }
    }
    if scratch.is_empty() {
        return Fit::default();
    }
    let pairs = scratch.len() as f64;
    Fit { slope: median(scratch), tau: (rising - falling) as f64 / pairs }
}

/// Robust standard deviation of the residuals around the line with `slope` through `points`
/// (intercept = median of `y - slope·x`): 1.4826 × the median absolute residual.
pub fn residual_noise(points: &[(f64, f64)], slope: f64, scratch: &mut Vec<f64>) -> f64 {
    scratch.clear();
    scratch.extend(points.iter().map(|&(x, y)| y - slope * x));
    let intercept = median(scratch);
    scratch.clear();
    scratch.extend(points.iter().map(|&(x, y)| (y - slope * x - intercept).abs()));
    1.4826 * median(scratch)
}

/// Median of `values` (reorders them). Zero for an empty slice.
pub fn median(values: &mut [f64]) -> f64 {
    let n = values.len();
    if n == 0 {
        return 0.0;
    }
    let mid = n / 2;
    let (lower, upper, _) = values.select_nth_unstable_by(mid, f64::total_cmp);
    let upper = *upper;
    if n % 2 == 1 {
        upper
    } else {
        let below = lower.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (below + upper) / 2.0
    }
}

/// Growth over a whole run: Theil–Sen over at most 64 evenly spread `(iteration, bytes)` samples.
pub fn overall_fit(samples: &[(u64, u64)]) -> Fit {
    const MAX_POINTS: usize = 64;
    let step = samples.len().div_ceil(MAX_POINTS).max(1);
    let picked: Vec<(f64, f64)> = samples.iter().step_by(step).map(|&(x, y)| (x as f64, y as f64)).collect();
    let mut scratch = Vec::with_capacity(picked.len() * picked.len() / 2);
    theil_sen(&picked, &mut scratch)
}

/// Iterations until `used` bytes growing by `growth_per_iteration` reach `limit` bytes.
/// `None` when memory is not growing; `Some(0)` when the limit is already reached.
pub fn iterations_until(used: u64, limit: u64, growth_per_iteration: f64) -> Option<u64> {
    if growth_per_iteration <= 0.0 || !growth_per_iteration.is_finite() {
        return None;
    }
    let left = limit.saturating_sub(used) as f64;
    Some((left / growth_per_iteration).floor() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: deterministic noise without a dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        /// Uniform in [0, 1).
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
        fn range(&mut self, lo: u64, hi: u64) -> u64 {
            lo + self.next() % (hi - lo)
        }
    }

    const MIB: f64 = 1024.0 * 1024.0;

    /// Runs `series(i)` through a default detector; returns the first detection.
    fn run(iterations: u64, mut series: impl FnMut(u64) -> f64) -> Option<Detection> {
        let mut d = Detector::new(DetectorConfig::default());
        let mut first = None;
        for i in 0..iterations {
            if let Some(hit) = d.observe(i, series(i).max(0.0) as u64) {
                assert!(first.is_none(), "a leak is reported once");
                first = Some(hit);
            }
        }
        assert_eq!(first, d.detection());
        first
    }

    #[test]
    fn theil_sen_of_a_line_with_outliers() {
        let mut points: Vec<(f64, f64)> = (0..20).map(|i| (i as f64, 100.0 + 7.0 * i as f64)).collect();
        points[3].1 = 1e9;
        points[11].1 = -1e9;
        let fit = theil_sen(&points, &mut Vec::new());
        assert_eq!(fit.slope, 7.0);
        assert!(fit.tau > 0.6, "{fit:?}");
    }

    #[test]
    fn median_even_and_odd() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }

    #[test]
    fn linear_leak_with_noise_found_soon_after_warmup() {
        let mut rng = Rng(7);
        // 12 MiB per iteration (candle's leaky MLP on the H200) over ±8 MiB of batch noise.
        let hit =
            run(2000, |i| 500.0 * MIB + 12.0 * MIB * i as f64 + (rng.unit() - 0.5) * 16.0 * MIB).expect("leak found");
        assert_eq!(hit.horizon, Horizon::Window);
        assert!(hit.iteration < 10 + 30, "found at {}", hit.iteration);
        assert!((hit.growth_bytes_per_iteration / MIB - 12.0).abs() < 1.5, "{hit:?}");
    }

    #[test]
    fn small_exact_leak_found() {
        // 200 KiB per iteration, no noise: 2.1 MiB per window, above the 1 MiB tolerance.
        let hit = run(200, |i| 1e8 + 200.0 * 1024.0 * i as f64).expect("leak found");
        assert!(hit.iteration <= 10 + 30, "found at {}", hit.iteration);
        assert!((hit.growth_bytes_per_iteration - 204_800.0).abs() < 1.0);
    }

    #[test]
    fn slow_leak_below_window_tolerance_found_by_long_horizon() {
        let mut rng = Rng(99);
        // 20 KiB per iteration = 220 KiB per window (< 1 MiB tolerance), under ±1 MiB noise.
        let hit =
            run(5000, |i| 3e8 + 20.0 * 1024.0 * i as f64 + (rng.unit() - 0.5) * 2.0 * MIB).expect("slow leak found");
        assert_eq!(hit.horizon, Horizon::Long);
        assert!((hit.growth_bytes_per_iteration / 1024.0 - 20.0).abs() < 4.0, "{hit:?}");
    }

    #[test]
    fn stationary_loops_with_varying_batches_are_not_flagged() {
        // Memory after an iteration depends on the batch (size or sequence length), plus
        // allocator noise and rare spikes: thousands of samples, many seeds, no alarm.
        for seed in 1..=24u64 {
            let mut rng = Rng(seed * 0x9E37_79B9);
            let mut batch = 64;
            let hit = run(3000, |_| {
                if rng.unit() < 0.3 {
                    batch = rng.range(8, 512);
                }
                let spike = if rng.unit() < 0.01 { 300.0 * MIB } else { 0.0 };
                2e9 + batch as f64 * 0.25 * MIB + rng.unit() * 4.0 * MIB + spike
            });
            assert_eq!(hit, None, "seed {seed}");
        }
    }

    #[test]
    fn warmup_growth_steps_and_sawtooth_are_not_leaks() {
        // Growth during warm-up only, then flat.
        assert_eq!(run(1000, |i| 1e8 + 50.0 * MIB * i.min(9) as f64), None);
        // One-off steps: a cache filled at iteration 100 and again at 400.
        assert_eq!(
            run(1000, |i| 1e8 + if i >= 100 { 64.0 * MIB } else { 0.0 } + if i >= 400 { 64.0 * MIB } else { 0.0 }),
            None
        );
        // Sawtooth: grows for 8 iterations, then a periodic flush frees everything.
        assert_eq!(run(3000, |i| 1e8 + (i % 8) as f64 * 4.0 * MIB), None);
    }

    #[test]
    fn growth_below_tolerance_is_flat() {
        // 1 KiB per iteration: 12 KiB per window, and under 1 MiB across the 64-block history
        // (64 × 12 iterations × 1 KiB = 768 KiB).
        assert_eq!(run(900, |i| 1e8 + 1024.0 * i as f64), None);
    }

    #[test]
    fn projections() {
        assert_eq!(iterations_until(100, 1100, 10.0), Some(100));
        assert_eq!(iterations_until(2000, 1100, 10.0), Some(0));
        assert_eq!(iterations_until(100, 1100, 0.0), None);
        assert_eq!(iterations_until(100, 1100, -3.0), None);
        let samples: Vec<(u64, u64)> = (0..1000).map(|i| (i, 5000 + 3 * i)).collect();
        assert_eq!(overall_fit(&samples).slope, 3.0);
    }
}
