//! `missing_zero_grad`: gradients accumulate across iterations because nothing clears them.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{FnModel, Iteration, TrainingCall, TrainingCallKind};
use crate::rule::{Applies, Group, Rule, RuleMeta};

pub struct MissingZeroGrad;

pub static META: RuleMeta = RuleMeta {
    id: "missing_zero_grad",
    summary: "an optimizer steps on gradients that are never cleared",
    default_level: Level::Warn,
    group: Group::Stable,
    docs: r#"### What it does
Where gradients accumulate until cleared (tch, dfdx), finds a training iteration that runs
backward and steps the optimizer with no gradient clearing on the path of every step:
no `opt.zero_grad()` (tch), no `model.zero_grads(&mut grads)` (dfdx), no combined call that
clears (`opt.backward_step(&loss)` in tch), no clearing of each variable of the store (`for mut
v in vs.trainable_variables() { v.zero_grad(); }`, or by hand: `v.grad().zero_()`, also behind `if
g.defined()`), no clearing of each optimizer of a collection that a loop steps (`for opt in &mut
self.optimizers { opt.zero_grad(); }` with `for opt in &mut self.optimizers { opt.step(); }`). A
closure bound to a local that runs backward
and steps (`let mut fit_batch = |x, y| { ..; loss.backward(); opt.step() };`) is an iteration
wherever a loop calls it.

Not reported for candle or burn, where `backward()` returns a fresh gradient store, nor where each
iteration traces with a fresh copy of a store that nothing writes into (dfdx
`x.trace(zeroed.clone())`, also of a field, `x.trace(self.zeroed.clone())` in a training-step
method: no accumulation, though `grads_allocated_in_loop` reports the copy),
or with a fresh tape (dfdx 0.10's `x.traced()`, which takes no store, and `leaky_traced()`),
nor where no loop runs the steps and the optimizer is made in the same function (a unit test
running one backward and a step or two on a fresh store), and not for
deliberate gradient accumulation where the step and the clearing run together under a condition
(`if i % k == 0 { opt.step(); opt.zero_grad(); }`).

### Why is this bad?
Each backward adds into the previous gradients, so every step uses the sum of all gradients so
far: training diverges, and libtorch keeps the gradient buffers of every parameter alive.

### Example
```rust
for (x, y) in batches {
    let loss = net.forward(&x).cross_entropy_for_logits(&y);
    loss.backward();
    opt.step();
}
```

### Use instead
```rust
for (x, y) in batches {
    let loss = net.forward(&x).cross_entropy_for_logits(&y);
    opt.zero_grad();
    loss.backward();
    opt.step();
}
```
or `opt.backward_step(&loss)`, which clears, runs backward and steps.
"#,
};

impl Rule for MissingZeroGrad {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn applies(&self) -> Applies {
        Applies::Known(|s| s.grads_accumulate)
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        let mut iterations: Vec<Iteration> = Vec::new();
        for c in f.training_calls() {
            if let Some(it) = f.iteration_of(c.in_loop())
                && !iterations.contains(&it)
            {
                iterations.push(it);
            }
        }
        for it in iterations {
            let calls: Vec<&TrainingCall> =
                f.training_calls().iter().filter(|c| f.iteration_of(c.in_loop()) == Some(it)).collect();
            let Some(backward) = calls.iter().find(|c| c.kind() == TrainingCallKind::Backward) else { continue };
            let clears: Vec<&&TrainingCall> = calls.iter().filter(|c| c.kind() == TrainingCallKind::Clear).collect();
            // One call is the iteration, and the optimizer is made in it (a unit test that runs
            // one backward and a step or two on a fresh store): no gradient survives the call
            // to pile up in the next one.
            let fresh = |step: &TrainingCall| it == Iteration::Call && f.is_local(step.receiver());
            for step in calls.iter().filter(|c| c.kind() == TrainingCallKind::Step && !fresh(c)) {
                // Per optimizer where the framework clears per optimizer; but a clear or a step
                // made inside a callee (receiver `helper()`) names no optimizer to compare.
                let same_optimizer = |c: &TrainingCall| {
                    !f.spec().clear_per_optimizer
                        || c.receiver() == step.receiver()
                        || c.receiver().ends_with("()")
                        || step.receiver().ends_with("()")
                };
                // `for mut v in vs.trainable_variables() { v.zero_grad(); }` clears what every
                // optimizer on the store steps, wherever the loop around it runs.
                // Also written as an iterator method (`vs.trainable_variables().iter_mut()
                // .for_each(|v| v.zero_grad())`), whose closure is a branch of its own in the loop.
                let clears_variables = |c: &TrainingCall| {
                    let path = c.path();
                    c.in_loop().is_some_and(|l| f.loop_over_variables(l))
                        && (1..=2.min(path.len())).any(|k| step.path().starts_with(&path[..path.len() - k]))
                };
                // `for opt in &mut self.optimizers { opt.zero_grad() }` clears each optimizer that
                // a loop over the same collection steps (`for opt in &mut self.optimizers {
                // opt.step() }`), where that loop runs whenever the step does.
                let clears_each = |c: &TrainingCall| {
                    let (Some(lc), Some(ls)) = (c.in_loop(), step.in_loop()) else { return false };
                    let (Some((header_c, body)), Some((header_s, _))) =
                        (f.loop_element(lc, c.receiver()), f.loop_element(ls, step.receiver()))
                    else {
                        return false;
                    };
                    lc != ls
                        && c.path().last() == Some(&body)
                        && f.runs_whenever(&c.path()[..c.path().len() - 1], step.path())
                        && collection(cx.snippet(header_c)).is_some_and(|o| collection(cx.snippet(header_s)) == Some(o))
                };
                let cleared = clears.iter().any(|c| {
                    (f.runs_whenever(c.path(), step.path()) && same_optimizer(c))
                        || clears_variables(c)
                        || clears_each(c)
                });
                if cleared {
                    continue;
                }
                let clear_fix = if f.spec().clear_fix.contains("{}") {
                    crate::frameworks::fill(f.spec().clear_fix, step.receiver())
                } else {
                    f.spec().clear_fix.to_string()
                };
                let mut report = Report::new(
                    "optimizer steps on gradients that are never cleared",
                    step.span().clone(),
                    "this step uses the gradients of every earlier iteration too",
                )
                .label(backward.span().clone(), "backward adds into the existing gradients");
                if let Some((span, text)) = f.iteration_label(it) {
                    report = report.label(span, text);
                }
                let help = if clears.is_empty() {
                    format!("call `{clear_fix}` before `backward()` in every iteration")
                } else {
                    format!("clear the gradients on every path that steps: call `{clear_fix}` together with the step")
                };
                report = report.help(help).note(format!(
                    "in {} gradients accumulate until cleared, so each step applies the sum of all gradients so far",
                    f.spec().name
                ));
                cx.report(report);
            }
        }
    }
}

/// The collection a `for` loop's header (`for opt in &mut self.opts`) iterates over, as written,
/// without the borrow or iterator call around it: `&mut self.opts`, `self.opts.iter_mut()` and
/// `self.opts` are one collection.
fn collection(header: &str) -> Option<&str> {
    let (_, text) = header.strip_prefix("for ")?.split_once(" in ")?;
    let text = text.trim();
    let text = text.strip_prefix("&mut ").or_else(|| text.strip_prefix('&')).unwrap_or(text).trim();
    Some(text.strip_suffix(".iter_mut()").or_else(|| text.strip_suffix(".iter()")).unwrap_or(text))
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
use tch::nn::OptimizerConfig;
fn train(net: &dyn tch::nn::Module, opt: &mut tch::nn::Optimizer, xs: &[tch::Tensor]) {
    for x in xs {
        let loss = net.forward(x).mean(tch::Kind::Float);
        loss.backward();
        opt.step();
    }
}
"#;

    const PASSES: &str = r#"
use tch::nn::OptimizerConfig;
fn train(net: &dyn tch::nn::Module, opt: &mut tch::nn::Optimizer, xs: &[tch::Tensor]) {
    for x in xs {
        opt.zero_grad();
        let loss = net.forward(x).mean(tch::Kind::Float);
        loss.backward();
        opt.step();
    }
}
"#;

    /// dfdx: each iteration traces with a fresh clone of a zeroed store that is never updated.
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
        assert_eq!(count("missing_zero_grad", None, FAILS), 1);
    }

    /// Gradient accumulation: the step and the clear in two blocks on the same local `bool`.
    const TWO_BLOCKS: &str = r#"
use tch::nn::OptimizerConfig;
fn train(net: &dyn tch::nn::Module, opt: &mut tch::nn::Optimizer, xs: &[tch::Tensor]) {
    for (i, x) in xs.iter().enumerate() {
        let loss = net.forward(x).mean(tch::Kind::Float) / 8.0;
        loss.backward();
        let boundary = (i + 1) % 8 == 0;
        if boundary {
            opt.step();
        }
        if i % 100 == 0 {
            println!("{i}");
        }
        if CLEAR_ON {
            opt.zero_grad();
        }
    }
}
"#;

    #[test]
    fn a_clear_under_the_same_flag_as_the_step_clears_it() {
        assert_eq!(count("missing_zero_grad", None, &TWO_BLOCKS.replace("CLEAR_ON", "boundary")), 0);
        // Another flag: steps where it is false keep the gradients.
        let other = TWO_BLOCKS.replace("CLEAR_ON", "i % 16 == 0");
        assert_eq!(count("missing_zero_grad", None, &other), 1);
    }

    /// A unit test: one backward and two steps on an optimizer made in the test, no loop.
    const UNIT_TEST: &str = r#"
use tch::nn::{Module, OptimizerConfig};
#[test]
fn one_step_moves_the_weights() {
    let vs = tch::nn::VarStore::new(tch::Device::Cpu);
    let net = tch::nn::linear(vs.root(), 4, 1, Default::default());
    let mut opt = tch::nn::Sgd::default().build(&vs, 0.1).unwrap();
    let x = tch::Tensor::ones([2, 4], (tch::Kind::Float, tch::Device::Cpu));
    let loss = net.forward(&x).mean(tch::Kind::Float);
    loss.backward();
    opt.step();
    opt.step();
}
"#;

    /// A per-step function whose optimizer outlives the call: each call adds into the same
    /// gradients.
    const PER_STEP: &str = r#"
use tch::nn::{Module, OptimizerConfig};
fn train_step(net: &dyn Module, opt: &mut tch::nn::Optimizer, x: &tch::Tensor) {
    let loss = net.forward(x).mean(tch::Kind::Float);
    loss.backward();
    opt.step();
}
"#;

    #[test]
    fn accepts_a_unit_test_on_a_fresh_optimizer() {
        assert_eq!(count("missing_zero_grad", None, UNIT_TEST), 0);
    }

    #[test]
    fn reports_a_step_function_whose_optimizer_outlives_the_call() {
        assert_eq!(count("missing_zero_grad", None, PER_STEP), 1);
    }

    #[test]
    fn accepts_a_fresh_clone_of_a_store_never_updated() {
        assert_eq!(count("missing_zero_grad", None, FRESH_CLONE), 0);
        // Once backward writes into the cloned store, gradients pile up in it.
        let updated = FRESH_CLONE
            .replace("let zeroed", "let mut zeroed")
            .replace("let g = loss.backward();", "zeroed = loss.backward();")
            .replace("&g)", "&zeroed)");
        assert_eq!(count("missing_zero_grad", None, &updated), 1);
    }

    /// The same with the zeroed store kept in a field of a local (`agent.grads`).
    const FRESH_CLONE_OF_A_FIELD: &str = r#"
use dfdx::prelude::*;
struct Agent { net: M, grads: Gradients<f32, Cpu> }
fn fit(agent: &mut Agent, opt: &mut O, data: &[(X, Y)]) {
    for (x, y) in data {
        let loss = mse_loss(agent.net.forward(x.trace(agent.grads.clone())), y.clone());
        let g = loss.backward();
        opt.update(&mut agent.net, &g).unwrap();
    }
}
"#;

    #[test]
    fn accepts_a_fresh_clone_of_a_field_never_updated() {
        assert_eq!(count("missing_zero_grad", None, FRESH_CLONE_OF_A_FIELD), 0);
        // Backward's store written back into the field: gradients pile up in it.
        let updated = FRESH_CLONE_OF_A_FIELD
            .replace("let g = loss.backward();", "agent.grads = loss.backward();")
            .replace("&g)", "&agent.grads)");
        assert_eq!(count("missing_zero_grad", None, &updated), 1);
    }

    /// A training-step method tracing with a clone of a zeroed store kept in `self`, called
    /// once per step by the caller's loop.
    const FRESH_CLONE_OF_SELF_FIELD: &str = r#"
use dfdx::prelude::*;
struct Learner { net: M, opt: O, zeroed: Gradients<f32, Cpu> }
impl Learner {
    fn step(&mut self, x: &X, y: &Y) -> f32 {
        let loss = mse_loss(self.net.forward(x.trace(self.zeroed.clone())), y.clone());
        let value = loss.array();
        let g = loss.backward();
        self.opt.update(&mut self.net, &g).unwrap();
        value
    }
}
fn fit(learner: &mut Learner, data: &[(X, Y)]) {
    for (x, y) in data {
        learner.step(x, y);
    }
}
"#;

    #[test]
    fn accepts_a_fresh_clone_of_a_self_field_never_updated() {
        assert_eq!(count("missing_zero_grad", None, FRESH_CLONE_OF_SELF_FIELD), 0);
        // Backward's store written back into the field: gradients pile up in it.
        let updated = FRESH_CLONE_OF_SELF_FIELD
            .replace("let g = loss.backward();", "self.zeroed = loss.backward();")
            .replace("&g)", "&self.zeroed)");
        assert!(count("missing_zero_grad", None, &updated) >= 1);
    }

    /// The clear and the step happen in two helpers the loop calls: the one that runs
    /// backward clears first.
    const CLEAR_IN_A_HELPER: &str = r#"
use tch::nn::{Module, OptimizerConfig};
struct Ctx { net: tch::nn::Sequential, opt: tch::nn::Optimizer }
fn backward_pass(ctx: &mut Ctx, x: &tch::Tensor) {
    ctx.opt.zero_grad();
    let loss = ctx.net.forward(x).mean(tch::Kind::Float);
    loss.backward();
}
fn apply_update(ctx: &mut Ctx) {
    ctx.opt.step();
}
fn train(ctx: &mut Ctx, xs: &[tch::Tensor]) {
    for x in xs {
        backward_pass(ctx, x);
        apply_update(ctx);
    }
}
"#;

    #[test]
    fn accepts_a_clear_made_in_a_helper() {
        assert_eq!(count("missing_zero_grad", None, CLEAR_IN_A_HELPER), 0);
        // Without the clear the helpers pile gradients up.
        let never = CLEAR_IN_A_HELPER.replace("    ctx.opt.zero_grad();\n", "");
        assert_ne!(never, CLEAR_IN_A_HELPER);
        assert!(count("missing_zero_grad", None, &never) >= 1);
    }

    /// The crate wraps tch's optimizer in a trait whose `backward_step` clears through the
    /// trait path (`BaseOptimizer::zero_grad(self)`), then runs backward and steps.
    const CLEAR_BY_TRAIT_PATH: &str = r#"
use tch::{COptimizer, Tensor};
trait BaseOptimizer { fn zero_grad(&mut self); }
impl BaseOptimizer for COptimizer {
    fn zero_grad(&mut self) { Self::zero_grad(self).unwrap(); }
}
trait Optimizer { fn backward_step(&mut self, loss_fn: &mut dyn FnMut() -> Tensor, log: &mut Log) -> Tensor; }
impl Optimizer for COptimizer {
    fn backward_step(&mut self, loss_fn: &mut dyn FnMut() -> Tensor, _: &mut Log) -> Tensor {
        let loss = loss_fn();
        BaseOptimizer::zero_grad(self);
        loss.backward();
        self.step().unwrap();
        loss
    }
}
fn fit(opt: &mut COptimizer, net: &Net, xs: &[Tensor], log: &mut Log) {
    for x in xs {
        let mut loss_fn = || net.forward(x).mean(tch::Kind::Float);
        opt.backward_step(&mut loss_fn, log);
    }
}
"#;

    #[test]
    fn accepts_a_clear_through_a_trait_path() {
        assert_eq!(count("missing_zero_grad", None, CLEAR_BY_TRAIT_PATH), 0);
        let never = CLEAR_BY_TRAIT_PATH.replace("        BaseOptimizer::zero_grad(self);\n", "");
        assert_ne!(never, CLEAR_BY_TRAIT_PATH);
        assert!(count("missing_zero_grad", None, &never) >= 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("missing_zero_grad", None, PASSES), 0);
    }

    /// Gradients cleared variable by variable over the store the optimizer steps.
    const PER_VARIABLE: &str = r#"
use tch::nn::{Module, OptimizerConfig};
fn train(vs: &tch::nn::VarStore, net: &tch::nn::Sequential, xs: &[tch::Tensor]) {
    let mut opt = tch::nn::Adam::default().build(vs, 1e-3).unwrap();
    for x in xs {
        let loss = net.forward(x).mean(tch::Kind::Float);
        loss.backward();
        opt.step();
        for mut v in vs.trainable_variables() {
            CLEAR
        }
    }
}
"#;

    #[test]
    fn clearing_each_variable_of_the_store_clears_the_step() {
        assert_eq!(count("missing_zero_grad", None, &PER_VARIABLE.replace("CLEAR", "v.zero_grad();")), 0);
        // A loop over the variables that clears nothing.
        assert_eq!(
            count("missing_zero_grad", None, &PER_VARIABLE.replace("CLEAR", "println!(\"{:?}\", v.size());")),
            1
        );
    }

    /// tch: the backward and the step sit in a closure bound to a local and called per batch.
    const CLOSURE_STEP: &str = r#"
use tch::{nn, nn::ModuleT, nn::OptimizerConfig, Tensor};
fn main() {
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let net = build(&vs.root());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let mut fit_batch = |bx: &Tensor, by: &Tensor| -> f64 {
        let loss = net.forward_t(bx, true).cross_entropy_for_logits(by);
        CLEAR
        loss.backward();
        opt.step();
        loss.double_value(&[])
    };
    for (bx, by) in batches() {
        println!("{}", fit_batch(&bx, &by));
    }
}
"#;

    #[test]
    fn reports_a_step_in_a_closure_called_per_batch() {
        let src = CLOSURE_STEP.replace("CLEAR", "");
        assert_eq!(crate::rules::testing::lines("missing_zero_grad", &src), vec![15]);
        let cleared = CLOSURE_STEP.replace("CLEAR", "opt.zero_grad();");
        assert_eq!(count("missing_zero_grad", None, &cleared), 0);
    }

    /// Gradients cleared by hand, one variable at a time (as PyTorch's `p.grad.zero_()`).
    const BY_HAND: &str = r#"
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};
fn main() -> anyhow::Result<()> {
    let vs = nn::VarStore::new(Device::Cpu);
    let net = nn::seq().add(nn::linear(vs.root() / "a", 10, 10, Default::default()));
    let mut opt = nn::Sgd::default().build(&vs, 1e-2)?;
    for _ in 0..100_000 {
        for v in vs.trainable_variables() {
            let mut g = v.grad();
            if g.defined() {
                CLEAR
            }
        }
        let x = Tensor::randn([8, 10], (Kind::Float, Device::Cpu));
        let loss = net.forward(&x).mse_loss(&x, tch::Reduction::Mean);
        loss.backward();
        opt.step();
    }
    Ok(())
}
"#;

    #[test]
    fn a_gradient_zeroed_in_place_is_cleared() {
        assert_eq!(count("missing_zero_grad", None, &BY_HAND.replace("CLEAR", "let _ = g.zero_();")), 0);
        assert_eq!(count("missing_zero_grad", None, &BY_HAND.replace("CLEAR", "let _ = v.grad().zero_();")), 0);
        // Read, not cleared: the gradients pile up.
        assert_eq!(count("missing_zero_grad", None, &BY_HAND.replace("CLEAR", "println!(\"{}\", g.norm());")), 1);
    }

    #[test]
    fn clearing_every_variable_through_an_iterator_method_clears() {
        let src = BY_HAND.replace(
            "        for v in vs.trainable_variables() {\n            let mut g = v.grad();\n            if g.defined() {\n                CLEAR\n            }\n        }\n",
            "        vs.trainable_variables().iter_mut().for_each(|v| v.zero_grad());\n",
        );
        assert!(src.contains("for_each(|v| v.zero_grad())"));
        assert_eq!(count("missing_zero_grad", None, &src), 0);
        let other = src.replace("v.zero_grad()", "println!(\"{}\", v.norm())");
        assert_eq!(count("missing_zero_grad", None, &other), 1);
    }

    /// dfdx 0.10: `x.traced()` takes no store; each backward starts from a fresh tape and
    /// `opt.update(&mut model, gradients)` consumes what it returns.
    const DFDX_010: &str = r#"
use dfdx::prelude::*;
fn fit(model: &mut Mlp, opt: &mut Sgd<Mlp>, data: &[(X, Y)]) {
    for (x, y) in data {
        let loss = mse_loss(model.forward_mut(x.clone().TRACE), y.clone());
        let gradients = loss.backward();
        opt.update(model, gradients).unwrap();
    }
}
"#;

    #[test]
    fn a_tape_with_no_store_handed_in_starts_from_zero() {
        assert_eq!(count("missing_zero_grad", None, &DFDX_010.replace("TRACE", "traced()")), 0);
        // A store handed back in every step accumulates until cleared.
        let reused = DFDX_010
            .replace("for (x, y) in data {", "let mut grads = model.alloc_grads();\n    for (x, y) in data {")
            .replace("TRACE", "traced(grads)")
            .replace(
                "let gradients = loss.backward();\n        opt.update(model, gradients).unwrap();",
                "grads = loss.backward();\n        opt.update(model, &grads).unwrap();",
            );
        assert_eq!(count("missing_zero_grad", None, &reused), 1);
    }

    /// One optimizer per agent: each is cleared in a loop over the optimizers, and stepped in
    /// another loop over the same collection.
    const EACH_OPTIMIZER: &str = r#"
use tch::nn::OptimizerConfig;
impl Trainer {
    fn update(&mut self, xs: &tch::Tensor, epochs: usize) {
        for _ in 0..epochs {
            CLEAR
            let loss = xs.mean(tch::Kind::Float);
            if loss.double_value(&[]) > 0.0 {
                loss.backward();
                for opt in self.optimizers.iter_mut() {
                    opt.step();
                }
            }
        }
    }
}
"#;

    #[test]
    fn clearing_each_optimizer_of_the_collection_it_steps_clears() {
        let each = "for opt in &mut self.optimizers { opt.zero_grad(); }";
        assert_eq!(count("missing_zero_grad", None, &EACH_OPTIMIZER.replace("CLEAR", each)), 0);
        // Not cleared at all; another collection's optimizers; or only now and then.
        for clear in [
            "",
            "for opt in &mut self.critics { opt.zero_grad(); }",
            "if self.reset { for opt in &mut self.optimizers { opt.zero_grad(); } }",
            "for opt in &mut self.optimizers { if opt.ready() { opt.zero_grad(); } }",
        ] {
            assert_eq!(count("missing_zero_grad", None, &EACH_OPTIMIZER.replace("CLEAR", clear)), 1, "{clear}");
        }
    }
}
