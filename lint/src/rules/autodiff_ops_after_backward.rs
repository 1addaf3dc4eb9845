//! `autodiff_ops_after_backward`: burn tensor operations on the iteration's graph after its
//! backward call.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::frameworks::Framework;
use crate::graph::{EventKind, FnGraph, Store, Taint};
use crate::rule::{Rule, RuleMeta};

pub struct AutodiffOpsAfterBackward;

pub static META: RuleMeta = RuleMeta {
    id: "autodiff_ops_after_backward",
    summary: "tensor operations on an autodiff graph after its backward call",
    default_level: Level::Warn,
    docs: r#"### What it does
In burn code, finds tensor operations (`mean`, `reshape`, `sum`, `mul`, …) applied after the
iteration's `backward()` to a value computed before it — the loss, the model's outputs — in
the same loop body or train-step function. Comparisons, `argmax`, scalar extraction
(`into_scalar`, `into_data`), `detach()` and `inner()` record nothing and are not reported.

### Why is this bad?
burn keeps autodiff graph state in a process-wide store that is swept inside `backward()`. An
operation on a tensor of the graph that `backward()` just consumed records a new node that
points at consumed ones; nothing sweeps it until a later backward that does not reach it, so
metrics computed this way every iteration keep graph state alive.

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

    fn check_function(&self, f: &FnGraph, cx: &mut Context<'_>) {
        if !f.framework_known || f.spec.framework != Framework::Burn {
            return;
        }
        // Folds and pushes are reported by the accumulation and retention rules.
        let stored: Vec<_> =
            f.stores().filter(|s| matches!(s.3, Store::Fold | Store::Push)).map(|s| s.4.clone()).collect();
        let mut reported = Vec::new();
        for e in f.events.iter().filter(|e| e.kind == EventKind::OpAfterBackward && !e.no_grad) {
            let Some(value) = e.receiver else { continue };
            if !f.graph[value].taint.has(Taint::GRAPH) || reported.contains(&e.span) {
                continue;
            }
            if stored.iter().any(|s| s.start <= e.span.start && e.span.end <= s.end) {
                continue;
            }
            reported.push(e.span.clone());
            let what = match f.binding_of(value) {
                Some(b) => format!("`{}` belongs to the graph that backward consumed", f.bindings[b].name),
                None => "this value belongs to the graph that backward consumed".to_string(),
            };
            let mut report = Report::new(
                "tensor operation on an autodiff graph after its backward",
                e.span.clone(),
                "new node on a consumed graph",
            );
            if let Some(b) = f.binding_of(value) {
                report = report.label(f.bindings[b].decl.clone(), what);
            }
            if let Some(backward) = &e.related {
                report = report.label(backward.clone(), "backward runs here");
            }
            cx.report(
                report
                    .help("take `.inner()` tensors or host scalars before `backward()`, and compute metrics from those")
                    .note("burn sweeps graph state inside `backward()`; ops recorded after it on the consumed graph stay in the store"),
            );
        }
    }
}
