//! `leaky_trace_in_loop`: dfdx `leaky_trace()` in a training loop.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{CallKind, FnModel};
use crate::rule::{Group, Rule, RuleMeta};

use super::TRAINING_LOOP;

pub struct LeakyTraceInLoop;

pub static META: RuleMeta = RuleMeta {
    id: "leaky_trace_in_loop",
    summary: "dfdx leaky_trace() allocates a new gradient store every iteration",
    default_level: Level::Warn,
    group: Group::Nursery,
    docs: r#"### What it does
Finds `leaky_trace()`/`leaky_traced()` (dfdx) inside a loop that runs backward.

### Why is this bad?
`leaky_trace()` starts a tape with a brand-new `Gradients` store, allocating gradient buffers for
every parameter it touches, every iteration. Memory churns and peaks at twice the gradients;
with a cloned or kept store it grows.

### Example
```rust
for (x, y) in batches {
    let loss = mse_loss(model.forward_mut(x.leaky_trace()), y);
    let grads = loss.backward();
    opt.update(&mut model, &grads)?;
}
```

### Use instead
```rust
let mut grads = model.alloc_grads();
for (x, y) in batches {
    let loss = mse_loss(model.forward_mut(x.traced(grads)), y);
    grads = loss.backward();
    opt.update(&mut model, &grads)?;
    model.zero_grads(&mut grads);
}
```
"#,
};

impl Rule for LeakyTraceInLoop {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        for (e, l) in f.calls_in_training_loops(CallKind::FreshTape) {
            cx.report(
                Report::new("`leaky_trace()` allocates new gradients every iteration", e.span().clone(), "a fresh gradient store per call")
                    .label(f.loop_header(l).clone(), TRAINING_LOOP)
                    .help("allocate once with `model.alloc_grads()` before the loop, trace with `.traced(grads)`, and clear with `model.zero_grads(&mut grads)`")
                    .note("each call allocates gradient buffers for every parameter it reaches"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
use dfdx::prelude::*;
fn fit(model: &mut M, opt: &mut O, data: &[(X, Y)]) {
    for (x, y) in data {
        let loss = mse_loss(model.forward(x.leaky_trace()), y.clone());
        let grads = loss.backward();
        opt.update(model, &grads).unwrap();
    }
}
"#;

    const PASSES: &str = r#"
use dfdx::prelude::*;
fn fit(model: &mut M, opt: &mut O, data: &[(X, Y)]) {
    let mut grads = model.alloc_grads();
    for (x, y) in data {
        let loss = mse_loss(model.forward(x.trace(grads)), y.clone());
        grads = loss.backward();
        opt.update(model, &grads).unwrap();
        model.zero_grads(&mut grads);
    }
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("leaky_trace_in_loop", None, FAILS), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("leaky_trace_in_loop", None, PASSES), 0);
    }
}
