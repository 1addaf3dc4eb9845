//! burn (0.22 `Tensor<D>` with `device.autodiff()`; 0.20–0.21 `Tensor<B, D>` with `Autodiff<B>`).
//!
//! `backward()` returns fresh `Gradients`, so nothing piles up; graph state lives in a
//! process-wide store swept inside `backward()`. `model.valid()` gives a model without autodiff.

use super::{Call, Spec};

pub(super) static SPEC: Spec = BURN;

/// burn before 0.13: each tensor owns its part of the graph, which is freed with the tensors;
/// there is no process-wide store for forwards without backward, or ops after it, to fill.
pub(super) static SPEC_BEFORE_GRAPH_STORE: Spec =
    Spec { graph_swept_by_backward: false, untrained_graphs_kept: false, autodiff_device_method: None, ..BURN };

/// burn 0.13 to 0.18: one graph for all tensors, cleared as a whole by any backward, so the
/// forwards of a module no backward trains are swept with the rest.
pub(super) static SPEC_ONE_GRAPH: Spec = Spec { untrained_graphs_kept: false, autodiff_device_method: None, ..BURN };

/// burn 0.19 to 0.21: the store of 0.22, with backends named in types and no `device.autodiff()`.
pub(super) static SPEC_TYPED_BACKENDS: Spec = Spec { autodiff_device_method: None, ..BURN };

/// burn 0.19: as 0.20 and 0.21, and burn-train's `learner.fit(train, valid)` returns a
/// `TrainingResult` whose `model` is the inference module (`LC::InnerModel`; up to 0.18 `fit`
/// returned the trained autodiff model, and from 0.20 on `launch` does what it did).
pub(super) static SPEC_FIT_RETURNS_INFERENCE: Spec =
    Spec { autodiff_device_method: None, frozen_methods: &["fit"], ..BURN };

const BURN: Spec = Spec {
    name: "burn",
    crate_names: &["burn", "burn_core", "burn_tensor", "burn_autodiff", "burn_train", "burn_optim"],
    backward: &[Call::with("backward", &[0])],
    // A learner's `train_step(batch)` runs the model's `TrainStep::step`, whose backward the
    // crate writes (burn's `Learner` API); its grads go to `optimizer_step`.
    backward_step: &[Call::with("train_step", &[1])],
    step: &[Call::with("step", &[3])],
    clear: &[],
    // `x.grad(&grads)` returns a tensor of the inner backend.
    cut_methods: &["detach", "inner", "into_scalar", "into_data", "to_data", "into_primitive", "grad", "grad_remove"],
    cut_functions: &[],
    no_grad_functions: &[],
    no_grad_guards: &[],
    // burn-train 0.20 on: `SupervisedTraining::launch(learner)` returns the trained model as the
    // inference (inner) module, `LearningResult<InferenceModel<LC>>`.
    no_grad_models: &["valid", "no_grad", "launch"],
    tape_methods: &[],
    fresh_tape_methods: &[],
    module_apply_methods: &[],
    clear_per_optimizer: false,
    grads_accumulate: false,
    global_grad_mode: false,
    autodiff_by_type: true,
    // `net: &M::InnerModule`: a module of the inner backend, as `valid()` returns.
    inner_backend_names: &["InnerBackend", "InnerModule"],
    graph_swept_by_backward: true,
    untrained_graphs_kept: true,
    graph_from_input_tape: false,
    autodiff_device_method: Some("autodiff"),
    param_read_methods: &["val"],
    param_map_methods: &["map"],
    param_rebuild: &[("initialized", false), ("from_tensor", true), ("from", true), ("from_mapped_value", false)],
    param_mapper: Some(("ModuleMapper", "map_float")),
    param_type: "Param",
    explicit_grads: false,
    grads_alloc_methods: &[],
    grad_store_types: &["Gradients", "GradientsParams"],
    copies_keep_weights: true,
    var_builders: &[],
    var_methods: &[],
    trainable_constructors: &[],
    variable_type: None,
    module_weight_methods: &[],
    variable_store_type: None,
    variable_store_reads: &[],
    state_types: &["LstmState", "RnnState"],
    frozen_methods: &[],
    grad_zero_in_place: None,
    frozen_constructors: &[],
    detach_changes_type: false,
    copy_into_methods: &[],
    view_methods: &[],
    host_number_types: &["ElemType", "FloatElem"],
    scalar_fix: "{}.into_scalar::<f32>()",
    detach_fix: "{}.detach()",
    clear_fix: "",
};
