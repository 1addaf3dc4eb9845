//! The MLP of the phase tests on candle's CPU backend: SGD with momentum whose state is created
//! at the first step (as PyTorch's optimizers do), and random batches labelled by a fixed
//! teacher. Included with `#[path]` by the tests that use it.

use candle_core::backprop::GradStore;
use candle_core::{DType, Device, Module, Result, Tensor, Var};
use candle_nn::{Linear, VarBuilder, VarMap, linear};

pub const INPUTS: usize = 128;
pub const CLASSES: usize = 8;
pub const BATCH: usize = 32;

/// f32 parameters of the MLP with `hidden` units: its momentum state has as many.
pub const fn params(hidden: usize) -> usize {
    INPUTS * hidden + hidden + hidden * CLASSES + CLASSES
}

pub struct Mlp {
    hidden: Linear,
    out: Linear,
}

impl Module for Mlp {
    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        self.out.forward(&self.hidden.forward(xs)?.relu()?)
    }
}

/// SGD with momentum whose state is created at the first step.
pub struct Momentum {
    vars: Vec<Var>,
    velocity: Option<Vec<Tensor>>,
}

impl Momentum {
    pub fn step(&mut self, grads: &GradStore) -> Result<()> {
        if self.velocity.is_none() {
            let state = self.vars.iter().map(|v| v.zeros_like()).collect::<Result<Vec<_>>>()?;
            self.velocity = Some(state);
        }
        let velocity = self.velocity.as_mut().expect("created above");
        for (var, v) in self.vars.iter().zip(velocity.iter_mut()) {
            if let Some(g) = grads.get(var) {
                *v = ((&*v * 0.9)? + g)?;
                var.set(&(var.as_tensor() - (&*v * 0.01)?)?)?;
            }
        }
        Ok(())
    }
}

pub struct Setup {
    pub model: Mlp,
    pub opt: Momentum,
    pub teacher: Tensor,
}

pub fn setup(hidden: usize) -> Result<Setup> {
    let device = Device::Cpu;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
    let model = Mlp { hidden: linear(INPUTS, hidden, vb.pp("hidden"))?, out: linear(hidden, CLASSES, vb.pp("out"))? };
    let opt = Momentum { vars: varmap.all_vars(), velocity: None };
    let teacher = Tensor::randn(0f32, 1.0, (INPUTS, CLASSES), &device)?;
    Ok(Setup { model, opt, teacher })
}

pub fn batch(teacher: &Tensor) -> Result<(Tensor, Tensor)> {
    let xs = Tensor::randn(0f32, 1.0, (BATCH, INPUTS), teacher.device())?;
    let ys = xs.matmul(teacher)?.argmax(1)?;
    Ok((xs, ys))
}
