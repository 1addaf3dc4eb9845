//! The detector on seeded simulated training loops (`benches/support/sim.rs`): clean loops with
//! batch noise, allocator caching, lazy optimizer state, evaluation spikes and fragmentation stay
//! silent; leaks are found soon. Sized to run in seconds in debug builds; the large sweep is the
//! `detector` bench (`cargo bench -p memlint-runtime --bench detector`).

use memlint_runtime::detector::{Detector, DetectorConfig, Horizon, overall_fit};

#[path = "../benches/support/sim.rs"]
mod sim;

use sim::{KIB, Loop, MIB, NOISE_LEVELS};

const WARMUP: u64 = 10;

/// The first detection in `iterations` of `sim`: its iteration, the growth fitted over all
/// post-warm-up samples of the run (what the report states) and the check that fired.
fn first_detection(sim: &mut Loop, iterations: u64) -> Option<(u64, f64, Horizon)> {
    let mut d = Detector::new(DetectorConfig::default());
    assert_eq!(d.config().warmup, WARMUP);
    let samples: Vec<(u64, u64)> = (0..iterations).map(|i| (i, sim.next())).collect();
    let hit = samples.iter().find_map(|&(i, bytes)| d.observe(i, bytes))?;
    let fit = overall_fit(&samples[WARMUP as usize..]);
    Some((hit.iteration, fit.slope, hit.horizon))
}

#[test]
fn clean_noisy_loops_stay_silent() {
    // Low and medium noise × 100 seeds × 2,000 iterations = 400,000 observations of clean
    // loops. (The bench's sweep over 2,000 seeds finds no run alarmed at these levels and 28
    // (1.4 %) at the high one: see docs/runtime.md.)
    for (name, per_sample) in &NOISE_LEVELS[..2] {
        for seed in 0..100 {
            let mut sim = Loop::new(seed, *per_sample, 0.0);
            let hit = first_detection(&mut sim, 2000);
            assert_eq!(hit, None, "false alarm: noise {name}, seed {seed}");
        }
    }
}

#[test]
fn leak_of_64_kib_is_found_within_30_iterations_after_warmup() {
    // Batch sizes 16..=128 keeping 1 or 4 KiB per sample (noise of 112 or 448 KiB peak to peak)
    // plus the clean loop's caches, jumps and spikes. The goal is ≥ 99 % within 30 iterations;
    // measured over 2,000 seeds: 99.9 % (low noise) and 85.2 % (medium). Asserted: what was
    // measured on these seeds (100 % and 86.5 %), less a margin, so a regression fails.
    for ((name, per_sample), share) in NOISE_LEVELS[..2].iter().zip([0.98, 0.84]) {
        let runs = 200;
        let mut late = Vec::new();
        for seed in 0..runs {
            let mut sim = Loop::new(seed + 1_000_000, *per_sample, 64.0 * KIB);
            match first_detection(&mut sim, 400) {
                Some((at, _, _)) if at - WARMUP <= 30 => {}
                other => late.push((seed, other.map(|h| h.0))),
            }
        }
        let within = 1.0 - late.len() as f64 / runs as f64;
        assert!(within >= share, "noise {name}: {within} within 30; late or missed {late:?}");
    }
}

#[test]
fn small_and_large_leaks_are_found() {
    for seed in 0..20 {
        let mut sim = Loop::new(seed + 2_000_000, NOISE_LEVELS[1].1, 1.0 * MIB);
        let (at, growth, _) = first_detection(&mut sim, 400).expect("1 MiB/iteration found");
        assert!(at - WARMUP <= 30, "seed {seed}: found at {at}");
        assert!((0.5..2.0).contains(&(growth / MIB)), "seed {seed}: growth {growth}");
        let mut sim = Loop::new(seed + 3_000_000, NOISE_LEVELS[0].1, 4.0 * KIB);
        let (at, growth, _) = first_detection(&mut sim, 3000).expect("4 KiB/iteration found");
        assert!(at < 3000, "seed {seed}: found at {at}");
        assert!((2.0..8.0).contains(&(growth / KIB)), "seed {seed}: growth {growth}");
    }
}
