//! dfdx (0.13), with the fallible `try_*` forms of its calls (`try_backward`, `try_zero_grads`,
//! `try_alloc_grads`).
//!
//! The tape travels in the tensor's type; `backward()` adds into the `Gradients` the tape was
//! started with, so they pile up until `model.zero_grads(&mut grads)`.

use super::{Call, Spec};

pub(super) static SPEC: Spec = Spec {
    name: "dfdx",
    crate_names: &["dfdx", "dfdx_core", "dfdx_nn"],
    backward: &[Call::with("backward", &[0]), Call::with("try_backward", &[0])],
    backward_step: &[],
    step: &[Call::with("update", &[2])],
    clear: &[
        Call::with("zero_grads", &[1]),
        Call::with("try_zero_grads", &[1]),
        Call::with("alloc_grads", &[0]),
        Call::with("try_alloc_grads", &[0]),
    ],
    cut_methods: &["detach", "array", "as_vec", "split_tape", "retaped"],
    cut_functions: &[],
    no_grad_functions: &[],
    no_grad_guards: &[],
    no_grad_models: &[],
    tape_methods: &["trace", "traced", "leaky_trace", "leaky_traced", "trace_into"],
    fresh_tape_methods: &["leaky_trace", "leaky_traced"],
    clear_per_optimizer: false,
    grads_accumulate: true,
    global_grad_mode: false,
    autodiff_by_type: false,
    inner_backend_names: &[],
    graph_swept_by_backward: false,
    param_read_methods: &[],
    param_map_methods: &[],
    param_rebuild: &[],
    param_mapper: None,
    param_type: "",
    explicit_grads: true,
    grads_alloc_methods: &["alloc_grads", "try_alloc_grads"],
    var_builders: &[],
    var_methods: &[],
    trainable_constructors: &[],
    variable_type: None,
    frozen_methods: &[],
    grad_zero_in_place: None,
    frozen_constructors: &[],
    detach_changes_type: true,
    host_number_types: &[],
    scalar_fix: "{}.array()",
    detach_fix: "{}.retaped::<NoneTape>()",
    clear_fix: "model.zero_grads(&mut grads)",
};
