//! candle (candle-core / candle-nn 0.11).
//!
//! `backward()` returns a fresh `GradStore` every call, so gradients never pile up; every op
//! node holds `Arc`s of its inputs, so a kept tensor keeps all its upstream activations alive.

use super::{Call, Spec};

pub(super) static SPEC: Spec = Spec {
    name: "candle",
    crate_names: &["candle_core", "candle_nn", "candle", "candle_transformers", "candle_optimisers"],
    backward: &[Call::with("backward", &[0])],
    backward_step: &[Call::with("backward_step", &[1])],
    step: &[Call::with("step", &[1])],
    clear: &[],
    cut_methods: &["detach", "to_scalar", "to_vec0", "to_vec1", "to_vec2", "to_vec3"],
    cut_functions: &[],
    no_grad_functions: &[],
    no_grad_guards: &[],
    no_grad_models: &[],
    tape_methods: &[],
    fresh_tape_methods: &[],
    clear_per_optimizer: false,
    grads_accumulate: false,
    global_grad_mode: false,
    autodiff_by_type: false,
    inner_backend_names: &[],
    graph_swept_by_backward: false,
    param_read_methods: &[],
    param_map_methods: &[],
    param_rebuild: &[],
    param_mapper: None,
    param_type: "",
    explicit_grads: false,
    grads_alloc_methods: &[],
    var_builders: &[],
    var_methods: &[],
    trainable_constructors: &[
        "VarBuilder::from_varmap",
        "Var::new",
        "Var::from_tensor",
        "Var::zeros",
        "Var::ones",
        "Var::rand",
        "Var::randn",
        "Var::from_vec",
        "Var::from_slice",
    ],
    detach_changes_type: false,
    host_number_types: &[],
    scalar_fix: "{}.to_scalar::<f32>()?",
    detach_fix: "{}.detach()",
    clear_fix: "",
};
