//! `memlint::assert_no_growth` and `assert_peak_below` on real candle CPU training steps: a step
//! that keeps every loss tensor (and so every step's graph) fails; the fixed step passes, with
//! batch sizes varying 16..128 from step to step.

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{AdamW, Linear, Optimizer, ParamsAdamW, VarBuilder, VarMap, linear, loss};
use memlint::testing::{Failure, GrowthCheck};

/// The allocator's counters are process-wide and the test harness runs tests on threads: one test
/// at a time, so no test measures another's allocations.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

struct Mlp {
    hidden: Linear,
    out: Linear,
}

impl Mlp {
    fn new(vb: VarBuilder) -> Result<Self> {
        Ok(Self { hidden: linear(64, 128, vb.pp("hidden"))?, out: linear(128, 4, vb.pp("out"))? })
    }
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.out.forward(&self.hidden.forward(xs)?.relu()?)
    }
}

struct Trainer {
    model: Mlp,
    opt: AdamW,
    teacher: Tensor,
    /// Losses kept as tensors: the leak (each keeps its whole graph alive).
    kept: Vec<Tensor>,
    /// Losses kept as host numbers: the fix.
    history: Vec<f32>,
    seed: u64,
}

impl Trainer {
    fn new() -> Result<Self> {
        let device = Device::Cpu;
        let varmap = VarMap::new();
        let model = Mlp::new(VarBuilder::from_varmap(&varmap, DType::F32, &device))?;
        let opt = AdamW::new(varmap.all_vars(), ParamsAdamW::default())?;
        let teacher = Tensor::randn(0f32, 1.0, (64, 4), &device)?;
        Ok(Self { model, opt, teacher, kept: Vec::new(), history: Vec::with_capacity(1024), seed: 7 })
    }

    /// A batch size in 16..128 from a fixed-seed LCG, different every step.
    fn batch_size(&mut self) -> usize {
        self.seed = self.seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        16 + (self.seed >> 33) as usize % 112
    }

    fn step(&mut self, leak: bool) -> Result<()> {
        let n = self.batch_size();
        let xs = Tensor::randn(0f32, 1.0, (n, 64), &Device::Cpu)?;
        let ys = xs.matmul(&self.teacher)?.argmax(1)?;
        let loss = loss::cross_entropy(&self.model.forward(&xs)?, &ys)?;
        self.opt.backward_step(&loss)?;
        if leak {
            self.kept.push(loss);
        } else {
            self.history.push(loss.to_scalar::<f32>()?);
        }
        Ok(())
    }
}

#[test]
fn leaky_step_fails_with_its_growth_and_samples() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut trainer = Trainer::new().unwrap();
    let check = GrowthCheck::new(80).device(memlint::DeviceChoice::Host);
    let failure = check.run(|_| trainer.step(true)).expect_err("a step that keeps its graph must fail");
    let Failure::Growth { detection, samples, .. } = &failure else { panic!("not a growth failure: {failure}") };
    // Every kept loss holds its inputs (n × 64 f32, n ≥ 16: 4 KiB at least) and activations.
    assert!(detection.growth_bytes_per_iteration > 4096.0, "{failure}");
    assert_eq!(samples.backend, "host-allocator");
    assert_eq!(samples.points.len(), 80);
    let text = failure.to_string();
    eprintln!("{text}");
    assert!(text.starts_with("memory grows by "), "{text}");
    assert!(text.contains("per step (declared at step"), "{text}");
}

#[test]
fn fixed_step_passes_under_varying_batch_sizes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut trainer = Trainer::new().unwrap();
    let samples = memlint::assert_no_growth(200, |_| trainer.step(false));
    assert_eq!(samples.points.len(), 200);
    assert_eq!(trainer.history.len(), 200);
}

#[test]
fn peak_assertion_compares_a_real_step_with_the_limit() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut trainer = Trainer::new().unwrap();
    trainer.step(false).unwrap(); // optimizer state exists from here on
    let peak = memlint::assert_peak_below(1 << 30, || trainer.step(false));
    assert!(peak > 0);
    // A limit below what the step needs fails, naming both numbers.
    let held = memlint::TrackingAllocator::stats().current_bytes;
    let failure = memlint::testing::try_assert_peak_below(held, memlint::DeviceChoice::Host, || trainer.step(false))
        .expect_err("a step allocates above what is held before it");
    let text = failure.to_string();
    assert!(text.starts_with("the step's peak is ") && text.contains("over the limit of"), "{text}");
}
