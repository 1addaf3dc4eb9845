//! `autodiff_ops_after_backward`: burn tensor operations on the iteration's graph after its
//! backward call.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{FnModel, Span, Store, Taint, TrainingCallKind};
use crate::rule::{Applies, Group, Rule, RuleMeta};

pub struct AutodiffOpsAfterBackward;

pub static META: RuleMeta = RuleMeta {
    id: "autodiff_ops_after_backward",
    summary: "tensor operations on an autodiff graph after its backward call",
    default_level: Level::Warn,
    group: Group::Nursery,
    docs: r#"### What it does
In burn code, finds tensor operations (`mean`, `reshape`, `sum`, `mul`, …) applied after the
iteration's `backward()` to a value computed before it — the loss, the model's outputs — in
the same loop body or train-step function, or inside a function of the crate that such a value
is handed to after the backward (`ctc_sum += scalar(ctc_loss)` with
`fn scalar(t: Tensor<B, 1>) -> f32 { t.mean().into_scalar() }`). Comparisons, `argmax`, scalar extraction
(`into_scalar`, `into_data`), `detach()` and `inner()` record nothing and are not reported,
nor is a branch that leaves the function (`if !loss.is_finite() { ..; bail!(..) }`): it runs at
most once.

### Why is this bad?
burn keeps autodiff graph state in a process-wide store that is swept inside `backward()`. An
operation on a tensor of the graph that `backward()` just consumed records a new node that
points at consumed ones. How much stays was measured (`experiments/burn-orphan-forwards/versions`,
CPU, `Autodiff<NdArray>`, 3,000 steps of a small MLP, `output.mean()` or `loss * 2` after the
step): the next backward deletes such nodes on every version measured (0.12.1 to 0.21.0); what
stays is bookkeeping, about 0.4–1.3 KB per step on 0.19.1 and under 0.1 KB on the others, against
about 350 KB for the step's graph. So a finding is a small cost per step on burn 0.19 and close to
none elsewhere, not the graph kept alive; the authors of a PPO trainer on burn 0.19 still fixed
this shape as a leak (`.inner()` before the metrics). Kept across iterations in a sum or a
state (`running = running + loss` after the backward), such an operation keeps the consumed graph
itself from burn 0.19 on (measured on 0.20.1); `accumulated_loss_tensor` reports that. Crates on
burn 0.12 or older (no store) are left alone.

### Example
```rust
let output = model.forward(batch.inputs);
let loss = loss_fn.forward(output.clone(), batch.targets.clone());
let grads = GradientsParams::from_grads(loss.backward(), &model);
model = optim.step(lr, model, grads);
let mean_output = output.mean();              // a new node on the consumed graph
```

### Use instead
```rust
let output = model.forward(batch.inputs);
let loss = loss_fn.forward(output.clone(), batch.targets.clone());
let stats = output.inner();                    // leave the graph before backward
let grads = GradientsParams::from_grads(loss.backward(), &model);
model = optim.step(lr, model, grads);
let mean_output = stats.mean();
```
"#,
};

impl Rule for AutodiffOpsAfterBackward {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn applies(&self) -> Applies {
        Applies::Known(|s| s.graph_swept_by_backward)
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        // Graph-carrying values pushed are reported by the retention rule; their ops are not
        // reported again. A running sum (`total = total + loss`) is reported here: on burn it
        // keeps bookkeeping, not graphs (`accumulated_loss_tensor` leaves burn alone).
        let stored: Vec<_> = f
            .stores()
            .filter(|s| matches!(s.3, Store::Push) && f.taint(s.1).has(Taint::GRAPH))
            .map(|s| s.4.clone())
            .collect();
        // One report per backward call: the first op is primary, later ones are labelled.
        let mut groups: Vec<OpGroup> = Vec::new();
        for e in f.uses_after_backward().iter().filter(|e| !e.no_grad()) {
            // A test that checks values after one backward (or a few, over literal inputs) runs
            // once: the nodes it adds do not pile up.
            if f.is_test() && f.literally_bounded(e.in_loop(), super::autodiff_forward_without_backward::TEST_LOOP_MAX)
            {
                continue;
            }
            let value = e.operand();
            if !f.taint(value).has(Taint::GRAPH) {
                continue;
            }
            if stored.iter().any(|s| s.start <= e.span().start && e.span().end <= s.end) {
                continue;
            }
            // A later backward of the same iteration sweeps the new nodes (a second loss built
            // after the first backward, as in actor-critic updates).
            let iteration = f.iteration_of(e.in_loop());
            if f.training_calls().iter().any(|c| {
                matches!(c.kind(), TrainingCallKind::Backward | TrainingCallKind::BackwardStep)
                    && c.span().start > e.span().end
                    && f.iteration_of(c.in_loop()) == iteration
            }) {
                continue;
            }
            let group = match groups.iter_mut().find(|(b, _)| b == e.backward()) {
                Some(g) => g,
                None => {
                    groups.push((e.backward().clone(), Vec::new()));
                    groups.last_mut().expect("just pushed")
                }
            };
            // Nested ops of one expression (`(-loss).reshape([1])`): keep the outermost.
            let ops = &mut group.1;
            if ops.iter().any(|(s, _, _)| s.start <= e.span().start && e.span().end <= s.end) {
                continue;
            }
            ops.retain(|(s, _, _)| !(e.span().start <= s.start && s.end <= e.span().end));
            ops.push((e.span().clone(), f.binding_of(value), e.via().map(str::to_string)));
        }
        for (backward, mut ops) in groups {
            ops.sort_by_key(|(s, _, _)| s.start);
            let Some((first, binding, via)) = ops.first().cloned() else { continue };
            let message = match ops.len() {
                1 => "tensor operation on an autodiff graph after its backward".to_string(),
                n => format!("{n} tensor operations on an autodiff graph after its backward"),
            };
            let mut report = Report::new(message, first, op_label(via.as_deref(), "new node on a consumed graph"));
            if let Some(b) = binding {
                report = report.label(
                    f.binding(b).decl().clone(),
                    format!("`{}` belongs to the graph that backward consumed", f.binding(b).name()),
                );
            }
            for (span, _, via) in ops.iter().skip(1).take(MAX_LABELS) {
                report = report.label(span.clone(), op_label(via.as_deref(), "another new node"));
            }
            report = report.label(backward, "backward runs here");
            cx.report(
                report
                    .help("take `.inner()` tensors or host scalars before `backward()`, and compute metrics from those")
                    .note("burn sweeps graph state inside `backward()`; ops recorded after it on the consumed graph stay in the store"),
            );
        }
    }
}

/// The ops that follow one backward call (its span): each op's span, the binding it reads and,
/// for an op inside a called function, that function's name.
type OpGroup = (Span, Vec<(Span, Option<usize>, Option<String>)>);

/// The label of an op: `plain`, or for a call, what the called function does.
fn op_label(via: Option<&str>, plain: &str) -> String {
    match via {
        Some(callee) => format!("`{callee}` runs tensor operations on it: {plain}"),
        None => plain.to_string(),
    }
}

/// Further ops of one group shown as labels.
const MAX_LABELS: usize = 4;

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn fit<B: AutodiffBackend>(model: &Net<B>, xs: Vec<Tensor<B, 2>>) -> Vec<f32> {
    let mut log = Vec::new();
    for x in xs {
        let out = model.forward(x);
        let loss = out.clone().sum();
        let grads = loss.backward();
        let m = out.mean();
        log.push(m.into_scalar());
    }
    log
}
"#;

    const PASSES: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn fit<B: AutodiffBackend>(model: &Net<B>, xs: Vec<Tensor<B, 2>>) -> Vec<f32> {
    let mut log = Vec::new();
    for x in xs {
        let out = model.forward(x);
        let loss = out.clone().sum();
        let m = out.inner().mean();
        let grads = loss.backward();
        log.push(m.into_scalar());
    }
    log
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("autodiff_ops_after_backward", None, FAILS), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("autodiff_ops_after_backward", None, PASSES), 0);
    }

    /// A test that compares values after one backward, with no loop: it runs once.
    #[test]
    fn a_test_that_checks_values_after_one_backward_is_left_alone() {
        let once = r#"
use burn::backend::{Autodiff, NdArray};
type B = Autodiff<NdArray>;
#[test]
fn gradients_match_the_reference() {
    let net: Net<B> = Net::new();
    let out = net.forward(input());
    let loss = out.clone().sum();
    let grads = loss.backward();
    let mean = out.mean().into_scalar();
    check(mean, grads);
}
"#;
        assert_eq!(count("autodiff_ops_after_backward", None, once), 0);
        let not_test = once.replace("#[test]\n", "");
        assert_eq!(count("autodiff_ops_after_backward", None, &not_test), 1);
    }

    /// A method the framework does not name as a tensor operation (burn's gradient
    /// accumulator) records no node, even on a value that holds the graph's tensors.
    #[test]
    fn a_call_that_is_no_tensor_operation_records_nothing() {
        let src = r#"
use burn::tensor::backend::AutodiffBackend;
fn fit<B: AutodiffBackend>(state: &mut State<B>, xs: Vec<Tensor<B, 2>>) {
    for x in xs {
        let out = state.model.forward(x);
        let loss = out.clone().sum();
        let grads = GradientsParams::from_grads(loss.backward(), &state.model);
        state.accumulator.accumulate(&state.model, grads);
        log(out.dims());
    }
}
"#;
        assert_eq!(count("autodiff_ops_after_backward", None, src), 0);
        let op = src.replace("log(out.dims());", "log(out.mean().into_scalar());");
        assert_ne!(op, src);
        assert_eq!(count("autodiff_ops_after_backward", None, &op), 1);
    }

    /// The op runs in a helper of the crate that the loop calls after backward.
    const THROUGH_A_HELPER: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn scalar<B: AutodiffBackend>(t: Tensor<B, 1>) -> f32 {
    t.mean().into_scalar()
}
fn fit<B: AutodiffBackend>(model: &Net<B>, xs: Vec<Tensor<B, 2>>) -> f32 {
    let mut total = 0.0;
    for x in xs {
        let loss = model.forward(x).sum();
        let grads = loss.clone().backward();
        total += scalar(loss);
    }
    total
}
"#;

    #[test]
    fn reports_an_op_made_by_a_helper_called_after_backward() {
        assert_eq!(count("autodiff_ops_after_backward", None, THROUGH_A_HELPER), 1);
        // Read before backward: the op is on a live graph that the backward then sweeps.
        let before = THROUGH_A_HELPER.replace(
            "        let grads = loss.clone().backward();\n        total += scalar(loss);",
            "        total += scalar(loss.clone());\n        let grads = loss.backward();",
        );
        assert_ne!(before, THROUGH_A_HELPER);
        assert_eq!(count("autodiff_ops_after_backward", None, &before), 0);
        // A helper that only reads the value out records nothing.
        let reads = THROUGH_A_HELPER.replace("t.mean().into_scalar()", "t.into_scalar()");
        assert_ne!(reads, THROUGH_A_HELPER);
        assert_eq!(count("autodiff_ops_after_backward", None, &reads), 0);
    }
}
