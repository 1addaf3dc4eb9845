//! Which phase of a training step a call belongs to: forward, loss, backward, optimizer step or
//! gradient clearing, in any supported framework. `#[mem_guard]` uses it to record memory after
//! each phase of the sampled loop.

use super::{Framework, is_loss_function};

/// A phase of a training step, in the order a step runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Gradients cleared (`opt.zero_grad()`, dfdx `zero_grads`).
    Clear,
    /// A model's forward pass (`forward`, `forward_t`, `apply`, …).
    Forward,
    /// A loss function (`loss::cross_entropy`, `mse_loss`, …).
    Loss,
    /// Backward (`loss.backward()`).
    Backward,
    /// An optimizer step (`opt.step(&grads)`, `optim.step(lr, model, grads)`, `opt.update(..)`).
    Step,
}

impl Phase {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Clear => "clear",
            Phase::Forward => "forward",
            Phase::Loss => "loss",
            Phase::Backward => "backward",
            Phase::Step => "step",
        }
    }
}

/// The phases a method call `receiver.name(args)` with `argc` arguments runs in `framework`
/// (every framework when unknown), in step order (candle's `backward_step(&loss)` runs backward
/// and step; tch's `backward_step` clears first).
pub fn method_phases(name: &str, argc: usize, framework: Option<Framework>) -> Vec<Phase> {
    let mut phases = Vec::new();
    let frameworks = match framework {
        Some(fw) => vec![fw],
        None => Framework::all().collect(),
    };
    for fw in frameworks {
        let spec = fw.spec();
        if spec.is_forward_method(name) {
            phases.push(Phase::Forward);
        }
        if spec.is_clear(name, argc) {
            phases.push(Phase::Clear);
        }
        if spec.is_backward(name, argc) {
            phases.push(Phase::Backward);
        }
        if spec.is_backward_step(name, argc) {
            phases.push(Phase::Backward);
            phases.push(Phase::Step);
        }
        if spec.is_step(name, argc) {
            phases.push(Phase::Step);
        }
    }
    phases.sort();
    phases.dedup();
    phases
}

/// The phases a call of a free function or path (`loss::mse(..)`, `Linear::forward(..)`)
/// whose last path segment is `last` runs.
pub fn function_phases(last: &str, argc: usize, framework: Option<Framework>) -> Vec<Phase> {
    let mut phases = Vec::new();
    if is_loss_function(last) {
        phases.push(Phase::Loss);
    }
    // `Module::forward(&model, &xs)`: the receiver is the first argument.
    phases.extend(method_phases(last, argc.saturating_sub(1), framework));
    phases.sort();
    phases.dedup();
    phases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_map_to_phases() {
        let candle = Some(Framework::Candle);
        assert_eq!(method_phases("forward", 1, candle), [Phase::Forward]);
        assert_eq!(method_phases("backward", 0, candle), [Phase::Backward]);
        assert_eq!(method_phases("backward_step", 1, candle), [Phase::Backward, Phase::Step]);
        assert_eq!(
            method_phases("backward_step", 1, Some(Framework::Tch)),
            [Phase::Clear, Phase::Backward, Phase::Step]
        );
        assert_eq!(method_phases("step", 1, candle), [Phase::Step]);
        assert_eq!(method_phases("zero_grad", 0, None), [Phase::Clear]);
        assert_eq!(method_phases("update", 2, Some(Framework::Dfdx)), [Phase::Step]);
        assert_eq!(function_phases("cross_entropy", 2, candle), [Phase::Loss]);
        assert_eq!(function_phases("forward", 2, candle), [Phase::Forward]);
        assert!(method_phases("matmul", 1, None).is_empty());
        assert!(function_phases("randn", 4, None).is_empty());
    }
}
