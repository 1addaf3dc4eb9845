//! `grads_allocated_in_loop`: dfdx gradient stores allocated or cloned every iteration.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{CallKind, FnModel};
use crate::rule::{Group, Rule, RuleMeta};

use super::TRAINING_LOOP;

pub struct GradsAllocatedInLoop;

pub static META: RuleMeta = RuleMeta {
    id: "grads_allocated_in_loop",
    summary: "dfdx gradients are allocated or cloned every training iteration",
    default_level: Level::Warn,
    group: Group::Stable,
    docs: r#"### What it does
Finds `model.alloc_grads()` and copies of a gradient store (`.clone()`/`.to_owned()`, dfdx)
inside a loop that runs backward. A store is recognised by what it is, whatever its name: a
binding made by `alloc_grads()`, a binding, parameter or field declared as `Gradients<..>`, or a
value handed to `trace(..)`/`traced(..)` (`model.forward(x.trace(zeroed.clone()))`).

### Why is this bad?
A `Gradients` store holds one buffer per parameter: allocating or cloning it every iteration
doubles gradient memory at the peak and, when the copies are kept, grows it every step.

### Example
```rust
for (x, y) in batches {
    let grads = model.alloc_grads();
    let loss = mse_loss(model.forward_mut(x.traced(grads)), y);
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

impl Rule for GradsAllocatedInLoop {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        let mut calls: Vec<_> = [CallKind::AllocGrads, CallKind::GradsCopy]
            .into_iter()
            .flat_map(|k| f.calls_in_training_loops(k))
            .collect();
        calls.sort_by_key(|(c, _)| c.span().start);
        for (e, l) in calls {
            let (message, label) = match e.kind() {
                CallKind::AllocGrads => ("gradients allocated every iteration", "a new gradient store per iteration"),
                _ => ("gradients cloned every iteration", "a copy of every gradient buffer per iteration"),
            };
            cx.report(
                Report::new(message, e.span().clone(), label)
                    .label(f.loop_header(l).clone(), TRAINING_LOOP)
                    .help("allocate the gradients once before the loop and reuse them: `model.zero_grads(&mut grads)` clears them in place")
                    .note("a gradient store holds one buffer per parameter"),
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
        let fresh = model.alloc_grads();
        let loss = mse_loss(model.forward(x.trace(fresh)), y.clone());
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

    /// A clone of a zeroed store handed to the tape, under a name that is not `grads`.
    const FRESH_CLONE: &str = r#"
use dfdx::prelude::*;
fn fit(model: &mut M, opt: &mut O, data: &[(X, Y)]) {
    let zeroed = model.alloc_grads();
    for (x, y) in data {
        let loss = mse_loss(model.forward(x.trace(zeroed.clone())), y.clone());
        let g = loss.backward();
        opt.update(model, &g).unwrap();
    }
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("grads_allocated_in_loop", None, FAILS), 1);
    }

    #[test]
    fn reports_a_clone_of_a_store_by_what_it_is() {
        assert_eq!(count("grads_allocated_in_loop", None, FRESH_CLONE), 1);
        // Not by name: a clone of another value is not a store.
        let other = FRESH_CLONE.replace("x.trace(zeroed.clone())", "x.clone().trace(zeroed)");
        assert_eq!(count("grads_allocated_in_loop", None, &other), 0);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("grads_allocated_in_loop", None, PASSES), 0);
    }

    /// dfdx's fallible forms: `try_alloc_grads`, `traced(grads.clone())`, `try_backward`,
    /// `try_zero_grads` (gradient accumulation over `k` examples, a store copied per example).
    const FALLIBLE: &str = r#"
use dfdx::prelude::*;
fn fit(model: &mut M, opt: &mut O, data: &[(X, Y)], k: usize) -> Result<(), E> {
    let mut grads = model.try_alloc_grads()?;
    for (i, (x, y)) in data.iter().enumerate() {
        let out = model.try_forward_mut(x.clone().traced(grads.clone()))?;
        let loss = mse_loss(out, y.clone());
        grads = loss.try_backward()?;
        if i % k == 0 {
            opt.update(model, &grads).unwrap();
            model.try_zero_grads(&mut grads)?;
        }
    }
    Ok(())
}
"#;

    #[test]
    fn reports_a_copy_per_iteration_with_the_fallible_calls() {
        assert_eq!(count("grads_allocated_in_loop", None, FALLIBLE), 1);
        let traced_once = FALLIBLE.replace("traced(grads.clone())", "traced(grads)");
        assert_eq!(count("grads_allocated_in_loop", None, &traced_once), 0);
    }
}
