//! A small candle MLP trained on synthetic data, on the CPU, with a classic leak: the running
//! loss is summed as a tensor, so every step's graph (activations, inputs) stays alive.
//!
//!     cargo run --example candle_leaky -- 120
//!
//! `#[mem_guard]` reports the growth per iteration and points at `total = (total + &loss)?`.
//! The fixed version is `candle_fixed.rs`.

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Linear, Optimizer, SGD, VarBuilder, VarMap, linear, loss};

#[global_allocator]
static ALLOC: memlint::TrackingAllocator = memlint::TrackingAllocator::new();

const INPUTS: usize = 128;
const HIDDEN: usize = 128;
const CLASSES: usize = 8;
const BATCH: usize = 32;

struct Mlp {
    hidden: Linear,
    out: Linear,
}

impl Mlp {
    fn new(vb: VarBuilder) -> Result<Self> {
        Ok(Self { hidden: linear(INPUTS, HIDDEN, vb.pp("hidden"))?, out: linear(HIDDEN, CLASSES, vb.pp("out"))? })
    }
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.out.forward(&self.hidden.forward(xs)?.relu()?)
    }
}

/// A batch of random inputs labelled by a fixed random linear "teacher".
fn batch(teacher: &Tensor, device: &Device) -> Result<(Tensor, Tensor)> {
    let xs = Tensor::randn(0f32, 1.0, (BATCH, INPUTS), device)?;
    let ys = xs.matmul(teacher)?.argmax(1)?;
    Ok((xs, ys))
}

#[memlint::mem_guard(lines, tolerance = "256KiB")]
fn train(model: &Mlp, opt: &mut SGD, teacher: &Tensor, steps: usize) -> Result<f32> {
    let device = teacher.device();
    let mut total = Tensor::zeros((), DType::F32, device)?;
    for _step in 0..steps {
        let (xs, ys) = batch(teacher, device)?;
        let logits = model.forward(&xs)?;
        let loss = loss::cross_entropy(&logits, &ys)?;
        opt.backward_step(&loss)?;
        total = (total + &loss)?;
    }
    (total / steps as f64)?.to_scalar::<f32>()
}

/// Builds the model and trains it for `steps` iterations; returns the mean loss.
pub fn run(steps: usize) -> Result<f32> {
    let device = Device::Cpu;
    let varmap = VarMap::new();
    let model = Mlp::new(VarBuilder::from_varmap(&varmap, DType::F32, &device))?;
    let mut opt = SGD::new(varmap.all_vars(), 0.05)?;
    let teacher = Tensor::randn(0f32, 1.0, (INPUTS, CLASSES), &device)?;
    train(&model, &mut opt, &teacher, steps)
}

#[allow(dead_code)] // unused when the file is included by the integration tests
fn main() -> Result<()> {
    let steps = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(120);
    let mean = run(steps)?;
    println!("mean loss over {steps} steps: {mean:.4}");
    Ok(())
}
