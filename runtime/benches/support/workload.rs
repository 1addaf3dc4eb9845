//! The candle CPU training loop the benchmarks time (shared by both bench binaries).

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Linear, Optimizer, SGD, VarBuilder, VarMap, linear, loss};

pub const INPUTS: usize = 256;
pub const HIDDEN: usize = 512;
pub const CLASSES: usize = 10;
pub const BATCH: usize = 64;

pub struct Workload {
    hidden: Linear,
    out: Linear,
    opt: SGD,
    teacher: Tensor,
}

impl Workload {
    pub fn new() -> Result<Self> {
        let device = Device::Cpu;
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
        let hidden = linear(INPUTS, HIDDEN, vb.pp("hidden"))?;
        let out = linear(HIDDEN, CLASSES, vb.pp("out"))?;
        let opt = SGD::new(varmap.all_vars(), 0.01)?;
        let teacher = Tensor::randn(0f32, 1.0, (INPUTS, CLASSES), &device)?;
        Ok(Self { hidden, out, opt, teacher })
    }

    /// One training step (random batch, forward, cross-entropy, backward + SGD step); the loss.
    pub fn step(&mut self) -> Result<f32> {
        let xs = Tensor::randn(0f32, 1.0, (BATCH, INPUTS), self.teacher.device())?;
        let ys = xs.matmul(&self.teacher)?.argmax(1)?;
        let logits = self.out.forward(&self.hidden.forward(&xs)?.relu()?)?;
        let loss = loss::cross_entropy(&logits, &ys)?;
        self.opt.backward_step(&loss)?;
        loss.to_scalar::<f32>()
    }
}

/// Median of `values` (sorts them).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
