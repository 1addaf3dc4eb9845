//! dfdx (0.13).
//!
//! The tape travels in the tensor's type; `backward()` adds into the `Gradients` the tape was
//! started with, so they pile up until `model.zero_grads(&mut grads)`.

use super::{Call, Framework, Spec};

pub(super) static SPEC: Spec = Spec {
    framework: Framework::Dfdx,
    name: "dfdx",
    crate_names: &["dfdx", "dfdx_core", "dfdx_nn"],
    backward: &[Call::with("backward", &[0])],
    backward_step: &[],
    step: &[Call::with("update", &[2])],
    clear: &[Call::with("zero_grads", &[1]), Call::with("alloc_grads", &[0])],
    cut_methods: &["detach", "array", "as_vec", "split_tape", "retaped"],
    cut_functions: &[],
    no_grad_functions: &[],
    no_grad_guards: &[],
    no_grad_models: &[],
    tape_methods: &["trace", "traced", "leaky_trace", "leaky_traced", "trace_into"],
    fresh_tape_methods: &["leaky_trace", "leaky_traced"],
    clear_per_optimizer: false,
    grads_accumulate: true,
    scalar_fix: "{}.array()",
    detach_fix: "{}.retaped::<NoneTape>()",
    clear_fix: "model.zero_grads(&mut grads)",
};
