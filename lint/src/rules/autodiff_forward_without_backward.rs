//! `autodiff_forward_without_backward`: burn forward passes on an autodiff model in a loop that
//! never runs backward.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{CallKind, FnModel, Taint};
use crate::rule::{Applies, Rule, RuleMeta};

pub struct AutodiffForwardWithoutBackward;

pub static META: RuleMeta = RuleMeta {
    id: "autodiff_forward_without_backward",
    summary: "forward passes on an autodiff model in a loop that never runs backward",
    default_level: Level::Warn,
    docs: r#"### What it does
In burn code that works on an autodiff backend (`B: AutodiffBackend`, `Autodiff<_>`, or a device
from `device.autodiff()`), finds forward passes inside a loop that runs no backward — rollouts,
`act()` in reinforcement-learning agents, evaluation — directly or through a function of the
crate that runs such a forward (`agent.act(obs)`).

### Why is this bad?
burn keeps autodiff graph state in a process-wide store that is swept only inside `backward()`.
Forward passes with no backward grow it even after the tensors are dropped: 400 forwards of a
512×512 linear layer grew RSS from 4.6 to 242 MB (burn 0.22.1, CPU), against 9.8 MB with
`model.valid()`.

### Example
```rust
for step in 0..steps {
    let q = agent.model.forward(state.clone());   // autodiff model, no backward in this loop
    let action = q.argmax(1).into_scalar();
}
```

### Use instead
```rust
let policy = agent.model.valid();                  // the inner (non-autodiff) backend
for step in 0..steps {
    let q = policy.forward(state.clone().inner());
    let action = q.argmax(1).into_scalar();
}
```
"#,
};

impl Rule for AutodiffForwardWithoutBackward {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn applies(&self) -> Applies {
        Applies::Known(|s| s.graph_swept_by_backward)
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        for e in f.calls_of(CallKind::Forward) {
            // The model is autodiff when this function works on one, or the called function does.
            if !(f.autodiff() || e.via().is_some()) || e.no_grad() {
                continue;
            }
            if e.receiver().is_some_and(|r| f.taint(r).has(Taint::INERT_MODEL)) {
                continue;
            }
            let Some(l) = e.in_loop() else { continue };
            // A loop that runs backward (or a body that does) sweeps the graph store.
            if f.iteration_of(Some(l)).is_some() {
                continue;
            }
            let label = match e.via() {
                Some(callee) => format!("`{callee}` runs a forward pass on an autodiff model"),
                None => "forward pass on an autodiff model".to_string(),
            };
            cx.report(
                Report::new("forward pass on an autodiff model in a loop without backward", e.span().clone(), label)
                    .label(f.loop_header(l).clone(), "this loop never runs backward")
                    .help("run the forward on `model.valid()` (the inner backend), or take `.inner()` tensors before the loop")
                    .note("burn sweeps its autodiff graph store only inside `backward()`; forwards without one grow it every iteration"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn rollout<B: AutodiffBackend>(model: &Net<B>, xs: Vec<Tensor<B, 2>>) -> Vec<f32> {
    let mut out = Vec::new();
    for x in xs {
        let y = model.forward(x);
        out.push(y.into_scalar());
    }
    out
}
"#;

    const PASSES: &str = r#"
use burn::tensor::backend::AutodiffBackend;
fn rollout<B: AutodiffBackend>(model: &Net<B>, xs: Vec<Tensor<B, 2>>) -> Vec<f32> {
    let model = model.valid();
    let mut out = Vec::new();
    for x in xs {
        let y = model.forward(x.inner());
        out.push(y.into_scalar());
    }
    out
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("autodiff_forward_without_backward", None, FAILS), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("autodiff_forward_without_backward", None, PASSES), 0);
    }

    /// The backend is named by a local's annotation, not by the function's signature.
    const ANNOTATED_LOCAL: &str = r#"
use burn::backend::{Autodiff, NdArray};
fn main() {
    let device = Default::default();
    let model: QNet<Autodiff<NdArray>> = QNet::new(&device);
    let mut state = reset();
    for _ in 0..1000 {
        let q = model.forward(state.clone());
        state = step(q.argmax(1).into_scalar());
    }
}
"#;

    #[test]
    fn reports_a_local_annotated_with_an_autodiff_backend() {
        assert_eq!(count("autodiff_forward_without_backward", None, ANNOTATED_LOCAL), 1);
        let inner = ANNOTATED_LOCAL.replace("QNet<Autodiff<NdArray>>", "QNet<NdArray>");
        assert_eq!(count("autodiff_forward_without_backward", None, &inner), 0);
    }
}
