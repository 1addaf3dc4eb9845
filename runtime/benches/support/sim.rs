//! Seeded simulations of the memory a training loop holds after each iteration, for the
//! detector's false-alarm and detection-delay measurements (tests and the `detector` bench).
//!
//! A clean loop's memory is the sum of realistic, non-leaking parts, each drawn per seed:
//! - weights and buffers (a constant base);
//! - activations kept until the next step, proportional to a batch size drawn from 16..=128 every
//!   iteration (`per_sample` bytes per sample: the noise level);
//! - allocator jitter (a few KiB);
//! - an allocator cache sized for the largest batch seen so far, in 2 MiB segments (stepwise
//!   growth at ever rarer new maxima, plateauing once the largest batch was seen);
//! - optimizer state created lazily at the first optimizer step (one jump, sometimes after the
//!   warm-up: gradient accumulation delays it);
//! - evaluation every N steps: a spike for 1..=3 samples, and a cache kept after the first one;
//! - fragmentation settling at the start: `F (1 - exp(-t / tau))` with tau of a few iterations;
//! - slow fragmentation that plateaus: 2 MiB segments added at ever rarer times (chance
//!   `c / (t + 1)` per iteration) until a cap of a few segments;
//! - rarely, a second segment-sized cache step much later (a new shape seen once).
//!
//! A leaky loop is the same with `leak` bytes more per iteration.
#![allow(dead_code)]

/// KiB in bytes.
pub const KIB: f64 = 1024.0;
/// MiB in bytes.
pub const MIB: f64 = 1024.0 * 1024.0;

/// splitmix64: a tiny seeded generator (no dependency).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// Uniform integer in lo..=hi.
    pub fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// One simulated loop: call [`Loop::next`] once per iteration.
#[derive(Debug, Clone)]
pub struct Loop {
    rng: Rng,
    /// Iteration of the next sample.
    t: u64,
    /// Leak, bytes per iteration.
    leak: f64,
    base: f64,
    /// Bytes kept per sample of the batch.
    per_sample: f64,
    /// Allocator cache: bytes per sample of the largest batch, and that batch.
    cache_per_sample: f64,
    max_batch: u64,
    /// Lazy optimizer state: size and the iteration that creates it.
    optimizer: f64,
    optimizer_at: u64,
    /// Evaluation: period, spike size and length, cache kept after the first one.
    eval_every: u64,
    eval_spike: f64,
    eval_len: u64,
    eval_cache: f64,
    /// Fragmentation that plateaus: amplitude and time constant (iterations).
    frag: f64,
    frag_tau: f64,
    /// Slow fragmentation: chance scale, segments left to add, segments added.
    seg_rate: f64,
    seg_left: u64,
    segments: f64,
    /// A late cache step: size and iteration.
    late_step: f64,
    late_at: u64,
}

/// Segment size of the simulated caching allocator.
const SEGMENT: f64 = 2.0 * MIB;

impl Loop {
    /// A loop for `seed` keeping `per_sample` bytes per batch sample and leaking `leak` bytes
    /// per iteration (0 = clean).
    pub fn new(seed: u64, per_sample: f64, leak: f64) -> Self {
        let mut rng = Rng::new(seed);
        let base = rng.uniform(50.0 * MIB, 4096.0 * MIB).round();
        let cache_per_sample = rng.uniform(4.0 * KIB, 64.0 * KIB);
        let optimizer = rng.uniform(1.0 * MIB, 512.0 * MIB).round();
        let optimizer_at = rng.int(1, 40);
        let eval_every = [25, 50, 100, 200, 500][rng.int(0, 4) as usize];
        let eval_spike = rng.uniform(4.0 * MIB, 256.0 * MIB).round();
        let eval_len = rng.int(1, 3);
        let eval_cache = (eval_spike / 4.0).round();
        let frag = rng.uniform(0.25 * MIB, 2.0 * MIB);
        let frag_tau = rng.uniform(1.0, 3.0);
        let seg_rate = rng.uniform(0.2, 1.0);
        let seg_left = rng.int(2, 8);
        let late = rng.unit() < 0.3;
        let late_step = if late { SEGMENT * rng.int(1, 4) as f64 } else { 0.0 };
        let late_at = rng.int(50, 3000);
        Self {
            rng,
            t: 0,
            leak,
            base,
            per_sample,
            cache_per_sample,
            max_batch: 0,
            optimizer,
            optimizer_at,
            eval_every,
            eval_spike,
            eval_len,
            eval_cache,
            frag,
            frag_tau,
            seg_rate,
            seg_left,
            segments: 0.0,
            late_step,
            late_at,
        }
    }

    /// The same loop with smooth fragmentation of `bytes` settling with time constant `tau`
    /// iterations instead of the few iterations of the default (a slow plateau).
    pub fn with_fragmentation(mut self, bytes: f64, tau: f64) -> Self {
        self.frag = bytes;
        self.frag_tau = tau;
        self
    }

    /// Bytes held after the next iteration.
    pub fn next(&mut self) -> u64 {
        let t = self.t;
        self.t += 1;
        let batch = self.rng.int(16, 128);
        self.max_batch = self.max_batch.max(batch);
        let cache = (self.max_batch as f64 * self.cache_per_sample / SEGMENT).ceil() * SEGMENT;
        let mut bytes = self.base + batch as f64 * self.per_sample + self.rng.uniform(0.0, 8.0 * KIB) + cache;
        if t >= self.optimizer_at {
            bytes += self.optimizer;
        }
        let since_eval = t % self.eval_every;
        if t >= self.eval_every {
            bytes += self.eval_cache;
            if since_eval < self.eval_len {
                bytes += self.eval_spike;
            }
        }
        bytes += self.frag * (1.0 - (-(t as f64) / self.frag_tau).exp());
        if self.seg_left > 0 && self.rng.unit() < self.seg_rate / (t + 1) as f64 {
            self.seg_left -= 1;
            self.segments += SEGMENT;
        }
        bytes += self.segments;
        if t >= self.late_at {
            bytes += self.late_step;
        }
        bytes += self.leak * t as f64;
        bytes.round() as u64
    }
}

/// Noise levels of the sweeps: bytes kept per batch sample (batch 16..=128).
pub const NOISE_LEVELS: [(&str, f64); 3] = [("low", 1.0 * KIB), ("medium", 4.0 * KIB), ("high", 16.0 * KIB)];
