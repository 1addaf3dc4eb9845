//! A slow leak that a byte threshold hides: a candle MLP on the CPU, trained on batches whose size
//! varies between 16 and 128, keeps a copy of its 128×128 hidden weight (64 KiB) every step,
//! "for later inspection". The fixed loop keeps only the latest copy.
//!
//!     cargo run --example candle_slow_leak -- 200          # leaky
//!     cargo run --example candle_slow_leak -- 200 fixed    # fixed
//!
//! `#[mem_guard]` flags the leaky loop with its growth (64 KiB and a few bytes per iteration) and
//! how long until memory runs out; the fixed loop stays silent.

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Linear, Optimizer, SGD, VarBuilder, VarMap, linear, loss};

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

const INPUTS: usize = 128;
const HIDDEN: usize = 128;
const CLASSES: usize = 8;

/// The model and what it trains on.
pub struct Setup {
    hidden: Linear,
    out: Linear,
    opt: SGD,
    teacher: Tensor,
    /// Seed of the batch sizes (a small LCG: no dependency).
    state: u64,
}

impl Setup {
    fn new() -> Result<Self> {
        let device = Device::Cpu;
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
        let hidden = linear(INPUTS, HIDDEN, vb.pp("hidden"))?;
        let out = linear(HIDDEN, CLASSES, vb.pp("out"))?;
        let opt = SGD::new(varmap.all_vars(), 0.05)?;
        let teacher = Tensor::randn(0f32, 1.0, (INPUTS, CLASSES), &device)?;
        Ok(Self { hidden, out, opt, teacher, state: 0x2545_F491 })
    }

    /// A batch size in 16..=128.
    fn batch_size(&mut self) -> usize {
        self.state = self.state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        16 + (self.state >> 33) as usize % 113
    }

    /// One SGD step on a random batch of a random size; returns the loss.
    fn step(&mut self) -> Result<f32> {
        let n = self.batch_size();
        let xs = Tensor::randn(0f32, 1.0, (n, INPUTS), self.teacher.device())?;
        let ys = xs.matmul(&self.teacher)?.argmax(1)?;
        let logits = self.out.forward(&self.hidden.forward(&xs)?.relu()?)?;
        let loss = loss::cross_entropy(&logits, &ys)?;
        self.opt.backward_step(&loss)?;
        loss.to_scalar::<f32>()
    }
}

#[memlint::mem_guard]
fn train_leaky(setup: &mut Setup, steps: usize) -> Result<usize> {
    let mut snapshots = Vec::new();
    for _step in 0..steps {
        setup.step()?;
        snapshots.push(setup.hidden.weight().copy()?);
    }
    Ok(snapshots.len())
}

#[memlint::mem_guard]
fn train_fixed(setup: &mut Setup, steps: usize) -> Result<usize> {
    let mut latest = None;
    for _step in 0..steps {
        setup.step()?;
        latest = Some(setup.hidden.weight().copy()?);
    }
    Ok(latest.map_or(0, |t| t.elem_count()))
}

/// Trains for `steps` iterations, leaky or fixed.
pub fn run(steps: usize, leaky: bool) -> Result<usize> {
    let mut setup = Setup::new()?;
    if leaky { train_leaky(&mut setup, steps) } else { train_fixed(&mut setup, steps) }
}

#[allow(dead_code)] // unused when the file is included by the integration tests
fn main() -> Result<()> {
    let steps = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    let leaky = std::env::args().nth(2).as_deref() != Some("fixed");
    run(steps, leaky)?;
    Ok(())
}
