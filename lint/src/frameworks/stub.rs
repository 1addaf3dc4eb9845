//! A fifth framework that exists only in tests: adding one takes this file (a [`Spec`]), one
//! registry line and fixtures; the engine and the rules need no change.

use super::{Call, Spec};

pub(super) static SPEC: Spec = Spec {
    name: "stubfw",
    crate_names: &["stubfw"],
    backward: &[Call::with("backprop", &[0])],
    backward_step: &[],
    step: &[Call::with("apply_grads", &[0])],
    clear: &[Call::with("reset_grads", &[0])],
    cut_methods: &["freeze"],
    cut_functions: &[],
    no_grad_functions: &[],
    no_grad_guards: &[],
    no_grad_models: &[],
    tape_methods: &[],
    fresh_tape_methods: &[],
    module_apply_methods: &["apply", "apply_t"],
    clear_per_optimizer: true,
    grads_accumulate: true,
    global_grad_mode: false,
    autodiff_by_type: false,
    inner_backend_names: &[],
    graph_swept_by_backward: false,
    untrained_graphs_kept: false,
    graph_from_input_tape: false,
    autodiff_device_method: None,
    param_read_methods: &[],
    param_map_methods: &[],
    param_rebuild: &[],
    param_mapper: None,
    param_type: "",
    explicit_grads: false,
    grads_alloc_methods: &[],
    grad_store_types: &[],
    copies_keep_weights: false,
    var_builders: &[],
    var_methods: &[],
    trainable_constructors: &[],
    variable_type: None,
    module_weight_methods: &[],
    variable_store_type: None,
    variable_store_reads: &[],
    state_types: &[],
    frozen_methods: &[],
    grad_zero_in_place: None,
    frozen_constructors: &[],
    detach_changes_type: false,
    copy_into_methods: &[],
    view_methods: &[],
    host_number_types: &[],
    scalar_fix: "{}.item()",
    detach_fix: "{}.freeze()",
    clear_fix: "{}.reset_grads()",
};

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{Framework, Spec, burn, candle, detect_in, dfdx, tch};
    use crate::Linter;

    /// The registry with the stub added: one line.
    static REGISTRY: &[&Spec] = &[&candle::SPEC, &tch::SPEC, &burn::SPEC, &dfdx::SPEC, &super::SPEC];

    const LEAKS: &str = r#"
use stubfw::{Net, Opt, Tensor};
fn train(net: &Net, opt: &mut Opt, xs: &[Tensor]) -> Tensor {
    let mut total = Tensor::zeros(1);
    for x in xs {
        let loss = net.forward(x).mean();
        loss.backprop();
        opt.apply_grads();
        total = total + loss;
    }
    total
}
"#;

    const FIXED: &str = r#"
use stubfw::{Net, Opt, Tensor};
fn train(net: &Net, opt: &mut Opt, xs: &[Tensor]) -> Tensor {
    let mut total = Tensor::zeros(1);
    for x in xs {
        opt.reset_grads();
        let loss = net.forward(x).mean();
        loss.backprop();
        opt.apply_grads();
        total = total + loss.freeze();
    }
    total
}
"#;

    fn rules(text: &str) -> Vec<&'static str> {
        let file = syn::parse_file(text).expect("fixture parses");
        let framework = detect_in(REGISTRY, &file).expect("the stub is detected from its `use`");
        assert_eq!(framework.name(), "stubfw");
        let mut levels = crate::Levels::default();
        levels.set("nursery", crate::Level::Warn);
        let linter = Linter { framework: Some(framework), ..Linter::new(levels) };
        linter.lint_text(Path::new("src/lib.rs"), text, None).iter().map(|f| f.rule).collect()
    }

    #[test]
    fn a_fifth_framework_needs_only_its_spec() {
        assert_eq!(rules(LEAKS), ["missing_zero_grad", "accumulated_loss_tensor"]);
        assert!(rules(FIXED).is_empty(), "{:?}", rules(FIXED));
        assert_ne!(Framework::new(&super::SPEC), Framework::Candle);
    }
}
