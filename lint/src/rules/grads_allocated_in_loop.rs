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
inside a loop that runs backward, or in a function that such a loop calls on every step (an
agent's `learn` or `act`, directly or through other calls). A store is recognised by what it is, whatever its name: a
binding made by `alloc_grads()`, a binding, parameter or field declared as `Gradients<..>`, or a
value handed to `trace(..)`/`traced(..)` (`model.forward(x.trace(zeroed.clone()))`). Not
flagged: a store made once per epoch around an inner loop that trains (also in a function called
once per epoch, or per setting of a sweep that trains through another function, or in a
function called every step that trains several steps in a loop of its own), one made only
when none is kept yet (`self.grads.take().unwrap_or_else(|| self.net.alloc_grads())`, `if
self.grads.is_none() { .. }`), a value of another type named like one (`episode_grads:
GradStats`), and a test's loop of at most 256 literal iterations.

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

/// What a finding's note says it costs: the peak and the allocations, not growth (unless the
/// copies are kept).
const ONE_BUFFER_PER_PARAMETER: &str = "a gradient store holds one buffer per parameter: a fresh one every step doubles gradient memory at its peak and reallocates it each time; memory grows only where the copies are kept";

impl Rule for GradsAllocatedInLoop {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        let mut calls: Vec<_> = [CallKind::AllocGrads, CallKind::GradsCopy]
            .into_iter()
            .flat_map(|k| f.calls_in_training_loops(k))
            // Not made only when missing (`unwrap_or_else(|| model.alloc_grads())`), nor once per
            // epoch around an inner loop whose iterations train.
            .filter(|(c, _)| !c.lazy() && c.in_loop().is_none_or(|l| !f.has_inner_training_loop(l)))
            .collect();
        calls.sort_by_key(|(c, _)| c.span().start);
        for (e, l) in calls {
            // A test that runs a few steps on a fresh store and ends: nothing piles up.
            if f.is_test() && f.literally_bounded(Some(l), super::autodiff_forward_without_backward::TEST_LOOP_MAX) {
                continue;
            }
            let (message, label) = match e.kind() {
                CallKind::AllocGrads => ("gradients allocated every iteration", "a new gradient store per iteration"),
                _ => ("gradients cloned every iteration", "a copy of every gradient buffer per iteration"),
            };
            cx.report(
                Report::new(message, e.span().clone(), label)
                    .label(f.loop_header(l).clone(), TRAINING_LOOP)
                    .help("allocate the gradients once before the loop and reuse them: `model.zero_grads(&mut grads)` clears them in place")
                    .note(ONE_BUFFER_PER_PARAMETER),
            );
        }
        // A function that a training loop calls once per step (`agent.learn()` from the episode
        // loop) allocates or copies the store on every step as well.
        // Not one called once per epoch (around an inner loop that trains, inline or in a
        // function it calls): that store is made once per epoch.
        let Some((file, line, caller)) = f.per_iteration_from() else { return };
        // A function that trains in a loop of its own (`for _ in 0..20 { ..; backward; update }`)
        // uses the store it makes per call across those steps: once per call, like once per
        // epoch, not once per training step.
        if f.has_training_loop() {
            return;
        }
        let mut per_call: Vec<_> = [CallKind::AllocGrads, CallKind::GradsCopy]
            .into_iter()
            .flat_map(|k| f.calls_of(k))
            .filter(|c| c.in_loop().is_none() && !c.lazy())
            .collect();
        per_call.sort_by_key(|c| c.span().start);
        for e in per_call {
            let (message, label) = match e.kind() {
                CallKind::AllocGrads => ("gradients allocated on every training step", "a new gradient store per call"),
                _ => ("gradients cloned on every training step", "a copy of every gradient buffer per call"),
            };
            cx.report(
                Report::new(message, e.span().clone(), label)
                    .help("keep one gradient store (in the agent or the caller) and reuse it: `model.zero_grads(&mut grads)` clears it in place")
                    .note(format!(
                        "this function runs on every step of a training loop: `{caller}` calls it at {}:{line}",
                        file.display()
                    ))
                    .note(ONE_BUFFER_PER_PARAMETER),
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

    /// An agent whose per-step methods copy its store: the episode loop runs backward only
    /// through `agent.observe(..)`, which calls `learn`.
    const AGENT: &str = r#"
use dfdx::prelude::*;
struct Agent { net: Net, opt: Sgd, grads: Gradients<f32, Cpu> }
impl Agent {
    fn act(&mut self, s: Obs) -> usize {
        argmax(&self.net.forward(s.trace(self.grads.clone())).array())
    }
    fn learn(&mut self, x: Obs, y: Target) {
        let q = self.net.forward(x.trace(self.grads.clone()));
        self.grads = mse_loss(q, y).backward();
        self.opt.update(&mut self.net, &self.grads).unwrap();
        self.net.zero_grads(&mut self.grads);
    }
    fn observe(&mut self, x: Obs, y: Target) {
        self.learn(x, y);
    }
}
fn main() {
    let mut agent = Agent::new();
    let mut env = Env::new();
    for _ in 0..1000 {
        let s = env.state();
        let a = agent.act(s.clone());
        agent.observe(s, env.step(a));
    }
}
"#;

    #[test]
    fn reports_copies_in_the_functions_a_training_loop_calls_every_step() {
        assert_eq!(count("grads_allocated_in_loop", None, AGENT), 2);
        // Traced with the store itself (moved in and back), nothing is copied.
        let moved = AGENT
            .replace("s.trace(self.grads.clone())", "s")
            .replace("x.trace(self.grads.clone())", "x.trace(std::mem::take(&mut self.grads))");
        assert_eq!(count("grads_allocated_in_loop", None, &moved), 0);
        // Called once, after training: not per step.
        let once = AGENT.replace("        let a = agent.act(s.clone());\n", "").replace(
            "agent.observe(s, env.step(a));",
            "agent.observe(s, env.step(0));\n    }\n    {\n        agent.act(env.state());",
        );
        assert_ne!(once, AGENT);
        assert_eq!(count("grads_allocated_in_loop", None, &once), 1);
    }

    #[test]
    fn accepts_a_store_made_once_per_epoch_or_only_when_missing() {
        // Once per epoch, around the inner loop that trains.
        let per_epoch = PASSES
            .replace(
                "    let mut grads = model.alloc_grads();\n    for (x, y) in data {",
                "    for _epoch in 0..10 {\n    let mut grads = model.alloc_grads();\n    for (x, y) in data {",
            )
            .replace(
                "        model.zero_grads(&mut grads);\n    }\n}",
                "        model.zero_grads(&mut grads);\n    }\n    }\n}",
            );
        assert!(per_epoch.contains("for _epoch"));
        assert_eq!(count("grads_allocated_in_loop", None, &per_epoch), 0);
        // Made only when the agent holds none yet, and kept.
        let lazy = r#"
use dfdx::prelude::*;
impl Agent {
    fn learn(&mut self, x: X, y: Y) {
        let g = self.grads.take().unwrap_or_else(|| self.net.alloc_grads());
        let loss = mse_loss(self.net.forward(x.traced(g)), y);
        let mut g = loss.backward();
        self.opt.update(&mut self.net, &g).unwrap();
        self.net.zero_grads(&mut g);
        self.grads = Some(g);
    }
}
fn run(agent: &mut Agent, data: Vec<(X, Y)>) {
    for (x, y) in data {
        agent.learn(x, y);
    }
}
"#;
        assert_eq!(count("grads_allocated_in_loop", None, lazy), 0);
        let eager =
            lazy.replace("self.grads.take().unwrap_or_else(|| self.net.alloc_grads())", "self.net.alloc_grads()");
        assert_eq!(count("grads_allocated_in_loop", None, &eager), 1);
        // Made once per call of a step function that trains twenty steps on it.
        let trains_many = r#"
use dfdx::prelude::*;
impl Agent {
    fn train_dqn(&mut self, x: X, y: Y) {
        let mut grads = self.net.alloc_grads();
        for _step in 0..20 {
            let loss = mse_loss(self.net.forward(x.clone().traced(grads)), y.clone());
            grads = loss.backward();
            self.opt.update(&mut self.net, &grads).unwrap();
            self.net.zero_grads(&mut grads);
        }
    }
}
fn run(agent: &mut Agent, data: Vec<(X, Y)>) {
    for (x, y) in data {
        agent.train_dqn(x, y);
    }
}
"#;
        assert_eq!(count("grads_allocated_in_loop", None, trains_many), 0);
    }

    /// A counter struct named like a store, and a test that runs a few steps on fresh stores.
    const NOT_STORES: &str = r#"
use dfdx::prelude::*;
#[derive(Clone, Default)]
pub struct GradStats { pub steps: usize, pub clipped: usize }
fn fit(model: &mut M, opt: &mut O, data: &[(X, Y)], log: &Sender<GradStats>) {
    let mut grads = model.alloc_grads();
    let mut episode_grads = GradStats::default();
    for (x, y) in data {
        let loss = mse_loss(model.forward(x.trace(grads)), y.clone());
        grads = loss.backward();
        opt.update(model, &grads).unwrap();
        model.zero_grads(&mut grads);
        episode_grads.steps += 1;
        log.send(episode_grads.clone()).ok();
    }
}
#[cfg(test)]
mod tests {
    #[test]
    fn three_steps() {
        for _ in 0..3 {
            let g = model().alloc_grads();
            let loss = mse_loss(model().forward(x().trace(g)), y());
            opt().update(&mut model(), &loss.backward()).unwrap();
        }
    }
}
"#;

    #[test]
    fn a_struct_of_counters_and_a_short_test_are_not_reported() {
        assert_eq!(count("grads_allocated_in_loop", None, NOT_STORES), 0);
        let long = NOT_STORES.replace("for _ in 0..3 {", "for _ in 0..3000 {");
        assert_eq!(count("grads_allocated_in_loop", None, &long), 1);
    }

    /// A checkpoint helper that copies the store, called once per epoch.
    const EPOCH_HELPER: &str = r#"
use dfdx::prelude::*;
fn checkpoint(model: &M, grads: &Gradients<f32, Cpu>) -> Checkpoint {
    Checkpoint { model: model.clone(), grads: grads.clone() }
}
fn fit(model: &mut M, opt: &mut O, data: &[(X, Y)], epochs: usize) -> Option<Checkpoint> {
    let mut grads = model.alloc_grads();
    let mut last = None;
    for _ in 0..epochs {
        for (x, y) in data {
            let loss = mse_loss(model.forward(x.trace(grads)), y.clone());
            grads = loss.backward();
            opt.update(model, &grads).unwrap();
            model.zero_grads(&mut grads);
            INNER
        }
        OUTER
    }
    last
}
"#;

    #[test]
    fn a_helper_called_once_per_epoch_copies_once_per_epoch() {
        let call = "last = Some(checkpoint(model, &grads));";
        assert_eq!(
            count("grads_allocated_in_loop", None, &EPOCH_HELPER.replace("INNER", "").replace("OUTER", call)),
            0
        );
        assert_eq!(
            count("grads_allocated_in_loop", None, &EPOCH_HELPER.replace("INNER", call).replace("OUTER", "")),
            1
        );
    }

    /// A bound closure that allocates a store, called once per batch.
    const CLOSURE_ALLOC: &str = r#"
use dfdx::prelude::*;
fn main() {
    let dev: Cpu = Default::default();
    let mut m = dev.build_module::<Arch, f32>();
    let mut opt = Adam::new(&m, AdamConfig::default());
    STORE
    let mut fit_batch = |x: X, y: Y| {
        let loss = mse_loss(m.forward_mut(x.traced(GRADS)), y);
        let g = loss.backward();
        opt.update(&mut m, &g).unwrap();
    };
    for _ in 0..100_000 {
        fit_batch(dev.sample_normal(), dev.sample_normal());
    }
}
"#;

    #[test]
    fn a_closure_that_allocates_allocates_where_it_is_called() {
        let fresh = CLOSURE_ALLOC.replace("STORE", "").replace("GRADS", "m.alloc_grads()");
        assert_eq!(crate::rules::testing::lines("grads_allocated_in_loop", &fresh), vec![14]);
        let reused = CLOSURE_ALLOC.replace("STORE", "let mut grads = m.alloc_grads();").replace("GRADS", "grads");
        assert_eq!(count("grads_allocated_in_loop", None, &reused), 0);
    }
}
