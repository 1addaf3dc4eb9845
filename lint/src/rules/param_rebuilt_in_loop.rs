//! `param_rebuilt_in_loop`: burn parameters rebuilt with fresh ids in a training loop.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{CallKind, FnModel};
use crate::rule::{Group, Rule, RuleMeta};

use super::TRAINING_LOOP;

pub struct ParamRebuiltInLoop;

pub static META: RuleMeta = RuleMeta {
    id: "param_rebuilt_in_loop",
    summary: "a burn parameter is rebuilt with a new id every training iteration",
    default_level: Level::Warn,
    group: Group::Nursery,
    docs: r#"### What it does
Finds `Param::from_tensor(..)` and `Param::from(..)` (burn) inside a loop that runs backward.

### Why is this bad?
`Param::from_tensor` creates a parameter with a new `ParamId`. Optimizers keep their state
(momentum, Adam moments) per id, so the state of the old id is never freed and a new one is
allocated every iteration.

### Example
```rust
for batch in batches {
    model.weight = Param::from_tensor(model.weight.val().clamp(-1.0, 1.0));
    // ... forward, backward, optim.step
}
```

### Use instead
```rust
for batch in batches {
    model.weight = model.weight.map(|w| w.clamp(-1.0, 1.0));
    // ... forward, backward, optim.step
}
```
(`Param::map` keeps the id.)
"#,
};

impl Rule for ParamRebuiltInLoop {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        for (e, l) in f.calls_in_training_loops(CallKind::ParamNewId) {
            cx.report(
                Report::new(
                    "parameter rebuilt with a new id every iteration",
                    e.span().clone(),
                    "a new `ParamId` each time",
                )
                .label(f.loop_header(l).clone(), TRAINING_LOOP)
                .help("update the existing parameter with `param.map(|t| …)`, which keeps its id")
                .note("optimizer state is kept per parameter id: the old id's state is never freed"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
use burn::module::Param;
use burn::tensor::backend::AutodiffBackend;
fn fit<B: AutodiffBackend>(mut w: Param<Tensor<B, 2>>, xs: Vec<Tensor<B, 2>>) {
    for x in xs {
        let loss = x.matmul(w.val()).sum();
        let grads = loss.backward();
        w = Param::from_tensor(w.val().detach());
    }
}
"#;

    const PASSES: &str = r#"
use burn::module::Param;
use burn::tensor::backend::AutodiffBackend;
fn fit<B: AutodiffBackend>(mut w: Param<Tensor<B, 2>>, xs: Vec<Tensor<B, 2>>) {
    for x in xs {
        let loss = x.matmul(w.val()).sum();
        let grads = loss.backward();
        w = w.map(|t| t.detach());
    }
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("param_rebuilt_in_loop", None, FAILS), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("param_rebuilt_in_loop", None, PASSES), 0);
    }

    #[test]
    fn reports_the_conversion_spelling() {
        // `Param::from(tensor)` (burn ≤ 0.12, and `From` since) also makes a new id.
        let from = FAILS.replace("Param::from_tensor(", "Param::from(");
        assert_ne!(from, FAILS);
        assert_eq!(count("param_rebuilt_in_loop", None, &from), 1);
    }
}
