//! How often the guard samples, so that it stays inside its time budget.
//!
//! The guard's own work per sampled iteration (driver calls, the detector, phase records,
//! bookkeeping) costs a few microseconds on a GPU machine (about 7–10 µs measured inside an H100
//! candle loop, against 1–2 µs on an empty loop: the caches are cold after a GPU step). Against a
//! 1.7 ms step that is 0.5 %, five times the budget of [`OVERHEAD_BUDGET`]. So the guard measures
//! both, the mean step and its own mean cost per sampled iteration, and samples every
//! `every`-th iteration (a power of two, at most [`MAX_EVERY`]); the other iterations cost one
//! counter update. Half the budget goes to the primary source when secondary sources exist,
//! the rest is shared by them (`sources.rs`), each read at a multiple of `every`.
//!
//! ```text
//!  iterations 1..decide_at: every iteration sampled, timed ──► first choice
//!  the next DENSE iterations: sampled all the same
//!  at each report flush (256, 512, …): the interval since the last choice ──► choice again
//! ```
//!
//! The first [`DENSE`] iterations after the first choice are sampled all the same, so that a
//! leak present from the start is flagged as fast as with every iteration sampled. That is an
//! advance on the budget, and the budget holds over the whole run, short calls included: each
//! choice first counts the guard's time spent so far against 0.1 % of the time elapsed (plus, at
//! the first choice, the dense iterations still to come), and spreads any excess over the
//! iterations until the next choice (the next report flush), sampling less until it is repaid.
//! A 300-step call of 1.7 ms steps has 510 µs in all; its warm-up and dense iterations take
//! about half, so the pace after them is sparser than in a long run, where the advance is
//! repaid within the first few hundred iterations.
//!
//! A function called many times (a 200-step call per epoch) would pay its warm-up and dense
//! iterations in every call. So the advance is kept per function across its runs in the process
//! ([`Ledger`]): a later run that starts owing budget goes on at the pace its predecessor ended
//! with, as if the runs were one loop (no warm-up or dense iterations; its first read is due where
//! the predecessor's next read would have been, so a short call may read nothing at all), and
//! repays what is owed from its first choice on ([`Pace::resumed`]). Once the debt is repaid,
//! the next run starts afresh (warm-up and dense iterations), so the budget holds over the
//! function's runs together. Their leak is then judged from fewer reads; the first run, whose
//! dense iterations flag a leak present from the start within about 30 iterations, is unchanged.
//!
//! `MEMLINT_SAMPLE_EVERY=n` pins the rate (1: every iteration, the fastest detection).

use std::time::{Duration, Instant};

use serde::Serialize;

/// Share of a step that the guard may take (0.1 %).
pub const OVERHEAD_BUDGET: f64 = 0.001;
/// Iterations after the first choice that are sampled whatever the pace: a leak present from
/// the start is then judged from every iteration (flagged within about 30 after warm-up), and
/// their cost, paid once per run, stays out of a long run's budget.
pub const DENSE: u64 = 32;
/// The lowest automatic rate, as for the secondary sources: a source whose read waits for the
/// device (a cubecl client's `memory_usage()` took 72–500 µs per sampled iteration inside an
/// H100 burn loop of 1 ms steps) still fits the budget. A leak that starts after the dense
/// iterations is then judged from reads this far apart (16 reads: 16 × this many iterations).
pub const MAX_EVERY: u64 = 1024;

/// The pace chosen for a run, as the report gives it (schema 5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PaceReport {
    /// The primary source is read every this many iterations (1: every iteration).
    pub sample_every: u64,
    /// Set by `MEMLINT_SAMPLE_EVERY` rather than chosen.
    pub pinned: bool,
    /// Mean step (one iteration, guard included) over the last timed interval, seconds.
    pub step_seconds: f64,
    /// Mean guard time per sampled iteration over that interval, secondary reads and report
    /// writes excepted, seconds.
    pub tick_seconds: f64,
    /// The budget per iteration for the next interval, seconds: step × 0.1 %, less what the
    /// guard spent ahead of its budget so far, spread over the interval.
    pub budget_seconds: f64,
    /// Times the rate was chosen.
    pub choices: u32,
    /// What this function's earlier runs in the process spent beyond 0.1 % of their time,
    /// carried into this run's budget, seconds (schema 5, added in session 8). Above 0 this run
    /// had no dense iterations and chose its pace after its first timed iteration.
    pub carried_seconds: f64,
}

/// A point the next interval is measured from.
#[derive(Debug, Clone, Copy)]
struct Checkpoint {
    at: Instant,
    iterations: u64,
    sampled: u64,
    tick_ns: u64,
    marks_ns: u64,
    spent_ns: u64,
}

/// What the guard measured so far: iterations completed, iterations sampled and the guard's own
/// time in them (see [`PaceReport::tick_seconds`]), of which at the marks, and all its time
/// (secondary reads and report writes included), with the iterations left until the next choice.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    pub iterations: u64,
    pub sampled: u64,
    pub tick_ns: u64,
    pub marks_ns: u64,
    pub spent_ns: u64,
    /// Iterations until the pace is chosen again (the next report flush).
    pub horizon: u64,
}

/// The sampling rate of one run.
#[derive(Debug)]
pub struct Pace {
    every: u64,
    pinned: bool,
    /// Completed iterations at which the first choice is made.
    decide_at: u64,
    from: Option<Checkpoint>,
    /// The end of the first iteration (which opened the sources): the budget counts from here.
    base: Option<Checkpoint>,
    /// Iterations sampled whatever the pace after the first choice: [`DENSE`], or 0 in a run
    /// that starts owing budget ([`Pace::resumed`]).
    dense: u64,
    /// Iterations added to the dense ones (a primary source switched at the first choice).
    extra_dense: u64,
    /// Guard time owed by earlier runs of the function, nanoseconds, counted at the first choice.
    carried_ns: u64,
    /// The first choice waits for a report flush too (a run that starts at its predecessor's pace).
    at_flush: bool,
    /// The start of a run that resumed its predecessor's pace: its budget counts from here, its
    /// first iteration included (its sources come opened from the predecessor, and it may read
    /// nothing at all).
    started: Option<Instant>,
    report: PaceReport,
}

/// A function's guard time over its finished runs in this process, as the budget counts it
/// (from the end of each run's first iteration, which opens the sources).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ledger {
    /// The guard's own time, nanoseconds.
    pub spent_ns: u64,
    /// Wall time of the runs, nanoseconds.
    pub elapsed_ns: u64,
}

impl Ledger {
    /// Adds a run's figures.
    pub fn add(&mut self, run: Ledger) {
        self.spent_ns = self.spent_ns.saturating_add(run.spent_ns);
        self.elapsed_ns = self.elapsed_ns.saturating_add(run.elapsed_ns);
    }

    /// What the runs spent beyond [`OVERHEAD_BUDGET`] of their time (zero when within it).
    pub fn owed(&self) -> Duration {
        let allowed = self.elapsed_ns as f64 * OVERHEAD_BUDGET;
        Duration::from_nanos((self.spent_ns as f64 - allowed).max(0.0) as u64)
    }
}

/// The choice for one interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    /// The primary is read every this many iterations.
    pub every: u64,
    /// Each secondary source's share of a step, for `sources::read_every`.
    pub secondary_share: Duration,
}

impl Pace {
    /// A pace that decides after `decide_at` completed iterations (at least 2: the first
    /// iteration opens the sources and is not timed); pinned by `MEMLINT_SAMPLE_EVERY`.
    pub fn new(decide_at: u64) -> Self {
        let pinned = pinned_rate();
        let every = pinned.unwrap_or(1);
        Self {
            every,
            pinned: pinned.is_some(),
            decide_at: decide_at.max(2),
            from: None,
            base: None,
            dense: DENSE,
            extra_dense: 0,
            carried_ns: 0,
            at_flush: false,
            started: None,
            report: PaceReport { sample_every: every, pinned: pinned.is_some(), ..PaceReport::default() },
        }
    }

    /// The pace of a later run of a function whose earlier runs in this process spent `owed`
    /// beyond the budget (their dense iterations are an advance, [`Ledger::owed`]): it samples no
    /// dense iterations and repays `owed` from its first choice on. When the previous run chose a
    /// pace (`previous`), this run goes on at it from its first iteration ([`Pace::resumes`]:
    /// the caller starts it where the predecessor's next read was due) and chooses again at its
    /// first report flush; otherwise it chooses after its first timed iteration. The budget
    /// then holds over all the function's runs together, short calls included (a 200-step burn
    /// call whose primary read waits for the device spent 5 % of its time in the guard, nearly
    /// all of it in its warm-up and dense iterations). With nothing owed it is [`Pace::new`].
    pub fn resumed(decide_at: u64, owed: Duration, previous: Option<PaceReport>) -> Self {
        let mut pace = Self::new(decide_at);
        if owed.is_zero() || pace.pinned {
            return pace;
        }
        pace.dense = 0;
        pace.carried_ns = owed.as_nanos().min(u128::from(u64::MAX)) as u64;
        match previous.filter(|p| p.choices > 0 && p.sample_every > 0) {
            Some(p) => {
                // Every iteration is at the previous pace; the first choice waits for a flush.
                pace.decide_at = 0;
                pace.every = p.sample_every;
                pace.at_flush = true;
                pace.started = Some(Instant::now());
                pace.report = PaceReport { choices: 0, carried_seconds: owed.as_secs_f64(), ..p };
            }
            None => {
                pace.decide_at = 2;
                pace.report.carried_seconds = owed.as_secs_f64();
            }
        }
        pace
    }

    /// Whether this run goes on at its predecessor's pace ([`Pace::resumed`] with a previous
    /// pace): its reads are due where the predecessor's next one was.
    pub fn resumes(&self) -> bool {
        self.started.is_some()
    }

    /// The run's figures for the function's [`Ledger`] at `now`, with `spent_ns` the guard's
    /// time so far; zero before the first iteration ended (all of a resumed run's time counts).
    pub fn ledger(&self, now: Instant, spent_ns: u64) -> Ledger {
        if let Some(started) = self.started {
            return Ledger {
                spent_ns,
                elapsed_ns: now.saturating_duration_since(started).as_nanos().min(u128::from(u64::MAX)) as u64,
            };
        }
        match self.base {
            Some(base) => Ledger {
                spent_ns: spent_ns.saturating_sub(base.spent_ns),
                elapsed_ns: now.saturating_duration_since(base.at).as_nanos().min(u128::from(u64::MAX)) as u64,
            },
            None => Ledger::default(),
        }
    }

    /// A pace pinned at `every` (as `MEMLINT_SAMPLE_EVERY` does), for tests.
    #[cfg(test)]
    pub(crate) fn pinned(every: u64) -> Self {
        Self {
            every,
            pinned: true,
            decide_at: 2,
            from: None,
            base: None,
            dense: DENSE,
            extra_dense: 0,
            carried_ns: 0,
            at_flush: false,
            started: None,
            report: PaceReport { sample_every: every, pinned: true, ..PaceReport::default() },
        }
    }

    /// The current rate.
    #[inline]
    pub fn every(&self) -> u64 {
        self.every
    }

    /// The rate for the iteration after `completed` iterations: 1 until [`DENSE`] iterations
    /// after the first choice (unless pinned).
    #[inline]
    pub fn every_at(&self, completed: u64) -> u64 {
        if self.pinned || completed >= self.decide_at + self.dense + self.extra_dense { self.every } else { 1 }
    }

    /// Samples `more` iterations after the dense ones as well (the primary source changed).
    pub fn extend_dense(&mut self, more: u64) {
        self.extra_dense += more;
    }

    /// What the report says.
    pub fn report(&self) -> PaceReport {
        self.report
    }

    /// Called at the end of each sampled iteration with the run's counters; `flush` when the
    /// report is about to be written while running. Returns a new choice when one is made.
    pub fn after_sample(&mut self, now: Instant, c: Counters, flush: bool, secondaries: usize) -> Option<Choice> {
        let here = Checkpoint {
            at: now,
            iterations: c.iterations,
            sampled: c.sampled,
            tick_ns: c.tick_ns,
            marks_ns: c.marks_ns,
            spent_ns: c.spent_ns,
        };
        if c.iterations == 1 || self.from.is_none() {
            // The first iteration opened the sources (milliseconds): time from its end.
            self.from = Some(here);
            self.base = Some(here);
            return None;
        }
        let first = self.report.choices == 0;
        let due = if first && !self.at_flush { c.iterations >= self.decide_at } else { flush };
        if !due {
            return None;
        }
        let (from, base) = (self.from?, self.base?);
        let (iterations, sampled) = (c.iterations - from.iterations, c.sampled - from.sampled);
        if iterations == 0 || sampled == 0 {
            return None;
        }
        let step = (now - from.at) / iterations.min(u32::MAX as u64) as u32;
        let tick = Duration::from_nanos(c.tick_ns.saturating_sub(from.tick_ns) / sampled);
        // What the guard has spent beyond 0.1 % of the time since the first iteration, plus the
        // dense iterations still to come at the first choice (at the cost of a tick without
        // marks: most of them record no phases).
        let allowed = (now - base.at).as_secs_f64() * OVERHEAD_BUDGET * 1e9;
        let mut debt = c.spent_ns.saturating_sub(base.spent_ns) as f64 - allowed;
        if first && !self.pinned {
            let plain = c.tick_ns.saturating_sub(from.tick_ns).saturating_sub(c.marks_ns.saturating_sub(from.marks_ns));
            debt += (self.dense * plain / sampled) as f64 + self.carried_ns as f64;
        }
        let horizon = c.horizon.max(1) as f64;
        let owed = Duration::from_nanos((debt.max(0.0) / horizon) as u64);
        self.from = Some(here);
        let mut choice = choose(step, tick, secondaries, owed);
        if self.pinned {
            choice.every = self.every;
        }
        self.every = choice.every;
        self.report = PaceReport {
            sample_every: choice.every,
            pinned: self.pinned,
            step_seconds: step.as_secs_f64(),
            tick_seconds: tick.as_secs_f64(),
            budget_seconds: step.mul_f64(OVERHEAD_BUDGET).saturating_sub(owed).as_secs_f64(),
            choices: self.report.choices + 1,
            carried_seconds: self.report.carried_seconds,
        };
        Some(choice)
    }
}

/// The rate of the primary source and the secondary sources' share, for a mean step `step` and
/// a guard cost of `tick` per sampled iteration, with `secondaries` secondary sources, when the
/// guard owes `owed` per iteration of the budget spent ahead (see the module's docs).
pub fn choose(step: Duration, tick: Duration, secondaries: usize, owed: Duration) -> Choice {
    let budget = step.mul_f64(OVERHEAD_BUDGET).saturating_sub(owed);
    let primary = if secondaries == 0 { budget } else { budget / 2 };
    let every = if tick <= primary {
        1
    } else if primary.is_zero() {
        MAX_EVERY
    } else {
        let ratio = tick.as_secs_f64() / primary.as_secs_f64();
        (ratio.ceil() as u64).next_power_of_two().min(MAX_EVERY)
    };
    let left = budget.saturating_sub(tick / every as u32);
    let secondary_share = left / secondaries.max(1) as u32;
    Choice { every, secondary_share }
}

/// Rounds a secondary rate `n` up to a multiple of the primary's `every`, so that its reads fall
/// on sampled iterations.
pub fn on_grid(n: u64, every: u64) -> u64 {
    let every = every.max(1);
    n.max(1).div_ceil(every) * every
}

/// The `MEMLINT_SAMPLE_EVERY` pin.
fn pinned_rate() -> Option<u64> {
    std::env::var("MEMLINT_SAMPLE_EVERY").ok()?.trim().parse().ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn a_cheap_guard_samples_every_iteration() {
        // 20 ms step: 20 µs budget, 10 µs for the primary with secondaries.
        let c = choose(20_000 * US, 8 * US, 2, Duration::ZERO);
        assert_eq!(c.every, 1);
        assert_eq!(c.secondary_share, 6 * US);
    }

    #[test]
    fn a_short_step_is_sampled_at_a_power_of_two_within_the_budget() {
        // The H100 candle MLP: 1.7 ms step, 10 µs per sampled tick, no secondary source.
        let c = choose(1_700 * US, 10 * US, 0, Duration::ZERO);
        assert_eq!(c.every, 8);
        assert!((10 * US) / c.every as u32 <= (1_700 * US).mul_f64(OVERHEAD_BUDGET));
        // With secondaries the primary has half the budget.
        assert_eq!(choose(1_700 * US, 10 * US, 1, Duration::ZERO).every, 16);
    }

    #[test]
    fn the_rate_is_capped_and_the_secondaries_then_get_nothing() {
        let c = choose(10 * US, 100 * US, 1, Duration::ZERO);
        assert_eq!(c.every, MAX_EVERY);
        assert_eq!(c.secondary_share, Duration::ZERO);
        assert_eq!(choose(Duration::ZERO, US, 0, Duration::ZERO).every, MAX_EVERY);
    }

    #[test]
    fn secondary_rates_land_on_sampled_iterations() {
        assert_eq!(on_grid(3, 4), 4);
        assert_eq!(on_grid(8, 4), 8);
        assert_eq!(on_grid(5, 1), 5);
        assert_eq!(on_grid(0, 0), 1);
    }

    #[test]
    fn the_first_choice_waits_for_the_timed_iterations_and_later_ones_for_flushes() {
        let mut pace = Pace {
            every: 1,
            pinned: false,
            decide_at: 4,
            from: None,
            base: None,
            dense: DENSE,
            extra_dense: 0,
            carried_ns: 0,
            at_flush: false,
            started: None,
            report: PaceReport::default(),
        };
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // A horizon so long that the advance on the budget is negligible here (see below).
        let c = |iterations, sampled, tick_ns| Counters {
            iterations,
            sampled,
            tick_ns,
            spent_ns: tick_ns,
            horizon: 1 << 40,
            ..Counters::default()
        };
        // Iteration 1 ends at 10 ms (its own time is not timed).
        assert_eq!(pace.after_sample(at(10), c(1, 1, 5_000_000), false, 0), None);
        assert_eq!(pace.after_sample(at(12), c(2, 2, 5_010_000), false, 0), None);
        assert_eq!(pace.after_sample(at(14), c(3, 3, 5_020_000), false, 0), None);
        // 3 iterations of 2 ms, 10 µs each: budget 2 µs → every 8.
        let choice = pace.after_sample(at(16), c(4, 4, 5_030_000), false, 0).expect("a choice at decide_at");
        assert_eq!(choice.every, 8);
        assert_eq!(pace.every(), 8);
        assert_eq!(pace.report().choices, 1);
        // Not again until a flush; then over the interval since the choice (steps now 20 ms).
        assert_eq!(pace.after_sample(at(176), c(12, 5, 5_040_000), false, 0), None);
        let again = pace.after_sample(at(336), c(20, 6, 5_050_000), true, 0).expect("a choice at a flush");
        assert_eq!(again.every, 1);
        assert_eq!(pace.report().choices, 2);
        assert!((pace.report().step_seconds - 0.02).abs() < 1e-9);
    }

    #[test]
    fn iterations_right_after_the_first_choice_are_all_sampled() {
        let pace = Pace {
            every: 8,
            pinned: false,
            decide_at: 10,
            from: None,
            base: None,
            dense: DENSE,
            extra_dense: 0,
            carried_ns: 0,
            at_flush: false,
            started: None,
            report: PaceReport::default(),
        };
        assert_eq!(pace.every_at(10), 1);
        assert_eq!(pace.every_at(10 + DENSE - 1), 1);
        assert_eq!(pace.every_at(10 + DENSE), 8);
        let pinned = Pace { pinned: true, ..pace };
        assert_eq!(pinned.every_at(0), 8);
    }

    #[test]
    fn an_advance_on_the_budget_makes_the_pace_sparser_until_it_is_repaid() {
        // 1.7 ms steps, 10 µs per sampled tick: 8 without debt; 1 µs owed per step leaves
        // 0.7 µs of the 1.7 µs budget, so 16.
        assert_eq!(choose(1_700 * US, 10 * US, 0, Duration::ZERO).every, 8);
        assert_eq!(choose(1_700 * US, 10 * US, 0, US).every, 16);
        assert_eq!(choose(1_700 * US, 10 * US, 0, 2 * US).every, MAX_EVERY);

        // A short call: 10 timed iterations of 1.7 ms, every one sampled at 10 µs (4 µs of it
        // at the marks); the first choice at iteration 10, the next at the flush at 256.
        let mut pace = Pace::new(10);
        pace.pinned = false;
        pace.every = 1;
        let t0 = Instant::now();
        let at = |us: u64| t0 + Duration::from_micros(us);
        let c = |iterations: u64, sampled: u64, spent_us: u64, horizon| Counters {
            iterations,
            sampled,
            tick_ns: spent_us * 1_000,
            marks_ns: iterations * 4_000,
            spent_ns: spent_us * 1_000,
            horizon,
        };
        assert_eq!(pace.after_sample(at(2_000), c(1, 1, 0, 255), false, 0), None);
        let first = pace.after_sample(at(2_000 + 9 * 1_700), c(10, 10, 90, 246), false, 0).expect("first choice");
        // Spent 90 µs against 15.3 µs allowed, and 32 dense ticks of 6 µs to come: 266.7 µs
        // over 246 iterations, 1.08 µs per step owed of 1.7: 0.62 µs left, 10 µs ticks → 32.
        assert_eq!(first.every, 32);
        assert!(pace.report().budget_seconds < 0.7e-6 && pace.report().budget_seconds > 0.5e-6);
        // At the flush (256), after the dense ticks and 6 at that pace, the advance is repaid
        // (342 µs spent, 433 µs allowed): the pace follows the mean tick since (6.6 µs) alone.
        let (sampled, spent) = (42 + (256 - 42) / 32, 90 + 32 * 6 + (256 - 42) / 32 * 10);
        let again =
            pace.after_sample(at(2_000 + 255 * 1_700), c(256, sampled, spent, 256), true, 0).expect("at a flush");
        assert_eq!(again.every, 4);
    }
}
