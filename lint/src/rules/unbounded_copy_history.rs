//! `unbounded_copy_history`: a copy of a model or of gradients pushed every training step into a
//! collection that nothing in the crate ever empties.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{BindingKind, Copied, FnModel, Iteration, KeptCopy};
use crate::rule::{Group, Rule, RuleMeta};

pub struct UnboundedCopyHistory;

pub static META: RuleMeta = RuleMeta {
    id: "unbounded_copy_history",
    summary: "a copy of a model or of gradients is kept every training step in a collection nothing empties",
    default_level: Level::Warn,
    group: Group::Nursery,
    docs: r#"### What it does
Finds a copy of a whole model (burn, dfdx) or of gradients (burn, candle, dfdx) pushed into a
collection once per training iteration, where nothing in the crate ever empties the collection:
a `Vec` or `VecDeque` made once for the whole run (at the top of a function that no training
loop calls, not once per episode or epoch), or a field. The push may happen in a method of the
crate the copy is handed to (`checkpoints.save(epoch, &model)` whose `save` pushes
`model.clone()`) or lent the collection (`trainer.apply(&mut history)` whose `apply` pushes its
own gradients into `history`), or in a method a training loop calls that keeps it in a field of
its own (`trainer.end_epoch(..)` pushing `self.model.valid()`); the copy may come from a method
of the crate (`self.learner.snapshot()` returning `self.net.clone()`).

What counts as a model: a value a forward pass runs on, a value of a type of the crate that has a
forward method or derives `Module`, a field that holds one, or such a model without autodiff
(`model.valid()`, the same parameters). What counts as gradients: a value
of the framework's gradient store type (`GradientsParams`, `Gradients`, `GradStore`, also the
result of `loss.backward()`), or one gradient read from it (`grads.get(..)`). A value computed
from them (`grad.abs().sum()`, a norm read back as a number) is not a copy.

Not reported: a collection that some method of its type, or the function that owns it, clears,
drains, truncates, shrinks (`remove`, `pop_front`, `retain`) or replaces; a keyed insert
(`map.insert(k, v)`), which replaces what the key held; a copy that replaces the last one
(`best = Some(model.clone())`); candle and tch model copies, which share the variables the
optimizer writes in place.

### Why is this bad?
A copy of a model holds its parameters as they were when copied: burn's optimizer returns new
parameter tensors and dfdx copies a buffer a copy shares before writing it, so each copy kept is
one more model's worth of memory. A gradient store (or one gradient of it) is as large as the
parameters it is for, and `backward()` makes a fresh one every step. Kept once per step or epoch
in a collection that is never emptied, they grow memory for the whole run. Measured in blind
test programs written for memlint's evaluation (CPU): a burn checkpoint manager keeping
`model.clone()` every epoch grew RSS from 3 MB to 108 MB in 40 epochs; a dfdx one keeping a
snapshot at every evaluation, 6 MB to 163 MB; a burn monitor keeping one layer's gradient every
update, 3 MB to 215 MB.

### Example
```rust
impl<M: Clone> CheckpointManager<M> {
    pub fn save(&mut self, epoch: usize, val_acc: f32, model: &M) {
        self.history.push(Checkpoint { epoch, val_acc, model: model.clone() });
    }
}

for epoch in 0..epochs {
    model = train_epoch(model, &mut optim, &data);
    checkpoints.save(epoch, accuracy(&model.valid(), &val), &model);
}
```

### Use instead
Keep only what the run needs: the best copy, replacing the one before; the last few, removing
the oldest; copies saved to disk; or numbers (a gradient's norm) instead of tensors.
```rust
impl<M: Clone> CheckpointManager<M> {
    pub fn save(&mut self, epoch: usize, val_acc: f32, model: &M) {
        if self.best.as_ref().is_none_or(|b| val_acc > b.val_acc) {
            self.best = Some(Checkpoint { epoch, val_acc, model: model.clone() });
        }
    }
}
```
"#,
};

impl Rule for UnboundedCopyHistory {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        if f.is_test() {
            return;
        }
        let mut reported = Vec::new();
        for KeptCopy { what, source, binding, span, in_loop, through } in f.kept_copies() {
            if reported.contains(span) {
                continue;
            }
            let b = f.binding(binding);
            // Once per training iteration, into what outlives the whole run: a local made once
            // per call of a function no training loop calls (not once per episode or epoch), or
            // a field. A method a training loop calls (`trainer.end_epoch(..)`) keeps it in a
            // field once per call.
            let iteration = f.iteration_of(in_loop);
            let per_call = iteration.is_none() && f.per_step_from().is_some();
            let lives = match b.kind() {
                BindingKind::Local => {
                    matches!(iteration, Some(Iteration::Loop(_)))
                        && b.decl_loop().is_none()
                        && f.per_step_from().is_none()
                }
                BindingKind::SelfField => iteration.is_some() || per_call,
                BindingKind::Param | BindingKind::Global => false,
            };
            // A method handed the copy by its caller (`fn record(&mut self, grads: &Gradients)`):
            // reported where the caller hands it, with this push as a label.
            if !lives || (per_call && source.is_some_and(|s| f.binding(s).kind() == BindingKind::Param)) {
                continue;
            }
            reported.push(span.clone());
            let (copied, is) = match (what, source) {
                (Copied::Model, Some(s)) => (format!("a copy of the model `{}`", f.binding(s).name()), "is"),
                (Copied::Model, None) => ("a copy of a model".to_string(), "is"),
                (Copied::Gradients, Some(s)) => (format!("gradients from `{}`", f.binding(s).name()), "are"),
                (Copied::Gradients, None) => ("a copy of gradients".to_string(), "is"),
            };
            let primary = match through {
                Some(t) => format!("`{}` keeps {copied} in `{}`", t.callee(), t.target()),
                None => format!("{copied} {is} pushed into `{}`", b.name()),
            };
            let mut report = Report::new(
                format!("{copied} {is} kept every training iteration in `{}`, which is never emptied", b.name()),
                span.clone(),
                primary,
            );
            if b.kind() == BindingKind::Local {
                report = report
                    .label(b.decl().clone(), format!("`{}` is declared outside the training iteration", b.name()));
            }
            if let Some((at, text)) = iteration.and_then(|it| f.iteration_label(it)) {
                report = report.label(at, text);
            }
            if per_call && let Some((path, line, caller)) = f.per_step_from() {
                report.elsewhere.push((path.clone(), *line, format!("`{caller}` calls this function during training")));
            }
            report = super::label_hops(report, cx, through, |hop| {
                format!("`{}` pushes it into `{}` here, and nothing removes it", hop.callee(), hop.target())
            });
            let note = match what {
                Copied::Model => {
                    "a copy keeps the parameters it was made with once the optimizer writes new ones: each one kept is one more model's worth of memory"
                }
                Copied::Gradients => {
                    "gradients are as large as the parameters they are for, and each backward makes new ones"
                }
            };
            let help = match what {
                Copied::Model => {
                    "keep only the best copy (replace the one before), the last few (remove the oldest), or save copies to disk"
                }
                Copied::Gradients => {
                    "keep numbers computed from the gradients (a norm read back to the host), or only the last few"
                }
            };
            cx.report(report.help(help).note(note));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{count, labels, lines};

    const RULE: &str = "unbounded_copy_history";

    /// burn: a generic checkpoint manager handed the autodiff model once per epoch.
    const BURN_CHECKPOINTS: &str = r#"
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::{backend::AutodiffBackend, Tensor};
pub struct Checkpoint<M> { pub epoch: usize, pub model: M }
pub struct CheckpointManager<M> { history: Vec<Checkpoint<M>> }
impl<M: Clone> CheckpointManager<M> {
    pub fn new() -> Self { Self { history: Vec::new() } }
    pub fn save(&mut self, epoch: usize, model: &M) {
        self.history.push(Checkpoint { epoch, model: model.clone() });
    }
    pub fn len(&self) -> usize { self.history.len() }
}
fn train<B: AutodiffBackend>(mut model: Net<B>, data: &[Tensor<B, 2>]) {
    let mut optim = AdamConfig::new().init();
    let mut checkpoints = CheckpointManager::new();
    for epoch in 0..40 {
        for x in data {
            let loss = model.forward(x.clone()).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(1e-3, model, grads);
        }
        checkpoints.save(epoch, &model);
    }
    println!("{}", checkpoints.len());
}
"#;

    #[test]
    fn reports_model_copies_kept_through_a_method() {
        assert_eq!(lines(RULE, BURN_CHECKPOINTS), vec![22]);
        let labels = labels(RULE, BURN_CHECKPOINTS);
        assert!(
            labels.iter().any(|(line, text)| *line == 9 && text.contains("pushes it into `self.history`")),
            "{labels:?}"
        );
    }

    #[test]
    fn accepts_a_history_pruned_replaced_or_kept_by_key() {
        let pruned = BURN_CHECKPOINTS.replace(
            "        self.history.push(Checkpoint { epoch, model: model.clone() });\n",
            "        self.history.push(Checkpoint { epoch, model: model.clone() });\n        if self.history.len() > 3 { self.history.remove(0); }\n",
        );
        assert_ne!(pruned, BURN_CHECKPOINTS);
        assert_eq!(count(RULE, None, &pruned), 0);
        // Pruned by another method of the type.
        let elsewhere = BURN_CHECKPOINTS.replace(
            "    pub fn len(&self)",
            "    pub fn keep_last(&mut self, k: usize) { self.history.truncate(k); }\n    pub fn len(&self)",
        );
        assert_eq!(count(RULE, None, &elsewhere), 0);
        // The best one replaces the one before.
        let best = BURN_CHECKPOINTS
            .replace("history: Vec<Checkpoint<M>>", "history: Option<Checkpoint<M>>")
            .replace("Self { history: Vec::new() }", "Self { history: None }")
            .replace(
                "self.history.push(Checkpoint { epoch, model: model.clone() });",
                "self.history = Some(Checkpoint { epoch, model: model.clone() });",
            )
            .replace("self.history.len()", "self.history.iter().count()");
        assert_eq!(count(RULE, None, &best), 0);
        // Emptied where it is owned.
        let cleared = BURN_CHECKPOINTS.replace(
            "        checkpoints.save(epoch, &model);\n",
            "        checkpoints.save(epoch, &model);\n        if epoch % 10 == 0 { checkpoints = CheckpointManager::new(); }\n",
        );
        assert_eq!(count(RULE, None, &cleared), 0);
    }

    #[test]
    fn accepts_numbers_computed_from_the_copy() {
        // What is kept is a number of the model, not the model.
        let numbers = BURN_CHECKPOINTS.replace("model: model.clone() }", "model: model.num_params() }");
        assert_ne!(numbers, BURN_CHECKPOINTS);
        assert_eq!(count(RULE, None, &numbers), 0);
    }

    #[test]
    fn accepts_candle_model_copies_which_share_their_variables() {
        let candle = r#"
use candle_core::{Tensor, Var};
use candle_nn::{AdamW, Optimizer, VarMap};
#[derive(Clone)]
struct Net { w: Tensor }
impl Net { fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> { x.matmul(&self.w) } }
fn train(net: Net, opt: &mut AdamW, xs: &[Tensor]) -> candle_core::Result<Vec<Net>> {
    let mut snapshots = Vec::new();
    for x in xs {
        let loss = net.forward(x)?.sum_all()?;
        opt.backward_step(&loss)?;
        snapshots.push(net.clone());
    }
    Ok(snapshots)
}
"#;
        assert_eq!(count(RULE, None, candle), 0);
    }

    /// burn: a monitor that keeps one layer's gradient every update.
    const BURN_GRADIENTS: &str = r#"
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
pub struct Monitor<B: Backend> { history: Vec<Tensor<B, 2>> }
impl<B: Backend> Monitor<B> {
    pub fn observe(&mut self, g: Tensor<B, 2>) { self.history.push(g); }
}
pub struct Agent<B: AutodiffBackend> { policy: Net<B>, monitor: Monitor<B::InnerBackend> }
impl<B: AutodiffBackend> Agent<B> {
    pub fn update(&mut self, x: Tensor<B, 2>) {
        let loss = self.policy.forward(x).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &self.policy);
        if let Some(g) = grads.get::<B::InnerBackend, 2>(self.policy.hidden.weight.id) {
            self.monitor.observe(g);
        }
    }
}
"#;

    #[test]
    fn reports_gradients_kept_by_a_field_of_the_trainer() {
        assert_eq!(lines(RULE, BURN_GRADIENTS), vec![15]);
        // A number computed from the gradient is not.
        let norm = BURN_GRADIENTS
            .replace("history: Vec<Tensor<B, 2>>", "history: Vec<f32>")
            .replace("observe(&mut self, g: Tensor<B, 2>)", "observe(&mut self, g: f32)")
            .replace(
                "self.monitor.observe(g);",
                "self.monitor.observe(g.powf_scalar(2.0).sum().sqrt().into_scalar());",
            );
        assert_ne!(norm, BURN_GRADIENTS);
        assert_eq!(count(RULE, None, &norm), 0);
        // A monitor its agent starts afresh.
        let reset = BURN_GRADIENTS.replace(
            "            self.monitor.observe(g);\n        }\n",
            "            self.monitor.observe(g);\n        }\n        if self.monitor.history.len() > 100 { self.monitor = Monitor { history: Vec::new() }; }\n",
        );
        assert_ne!(reset, BURN_GRADIENTS);
        assert_eq!(count(RULE, None, &reset), 0);
    }

    #[test]
    fn reports_a_parameter_gradient_read_from_the_store() {
        // `w.grad(&grads)` reads one parameter's gradient out of the store `backward` made: a
        // tensor as large as the parameter, kept every update.
        let read = BURN_GRADIENTS
            .replace(
                "let grads = GradientsParams::from_grads(loss.backward(), &self.policy);",
                "let grads = loss.backward();",
            )
            .replace(
                "grads.get::<B::InnerBackend, 2>(self.policy.hidden.weight.id)",
                "self.policy.hidden.weight.grad(&grads)",
            );
        assert_ne!(read, BURN_GRADIENTS);
        assert_eq!(lines(RULE, &read), vec![15]);
        // Its norm, read back to the host, is a number.
        let norm = read.replace("self.monitor.observe(g);", "self.monitor.observe(g.powf_scalar(2.0).sum());");
        assert_ne!(norm, read);
        assert_eq!(count(RULE, None, &norm), 0);
    }

    /// burn: workers push their gradients into a queue they share with the driver, which
    /// drains it every tick.
    const BURN_SHARED_QUEUE: &str = r#"
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
pub type GradQueue = Rc<RefCell<VecDeque<GradientsParams>>>;
pub struct Worker<B: AutodiffBackend> { local: Net<B>, queue: GradQueue }
impl<B: AutodiffBackend> Worker<B> {
    pub fn learn(&mut self, x: Tensor<B, 2>) {
        let loss = self.local.forward(x).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &self.local);
        self.queue.borrow_mut().push_back(grads);
    }
}
fn drive<B: AutodiffBackend, O: Optimizer<Net<B>, B>>(mut global: Net<B>, mut optim: O, data: &[Tensor<B, 2>]) {
    let queue: GradQueue = Rc::new(RefCell::new(VecDeque::new()));
    let mut workers: Vec<Worker<B>> = (0..4).map(|_| Worker { local: global.clone(), queue: queue.clone() }).collect();
    for x in data {
        for w in workers.iter_mut() {
            w.learn(x.clone());
        }
        let pending: Vec<_> = queue.borrow_mut().drain(..).collect();
        for grads in pending {
            global = optim.step(1e-3, global.clone(), grads);
        }
    }
}
"#;

    #[test]
    fn accepts_a_shared_queue_its_other_holder_drains() {
        assert_eq!(count(RULE, None, BURN_SHARED_QUEUE), 0);
        // Nobody drains it: every update's gradients stay.
        let kept = BURN_SHARED_QUEUE.replace(
            "let pending: Vec<_> = queue.borrow_mut().drain(..).collect();",
            "let pending: Vec<_> = queue.borrow().iter().cloned().collect();",
        );
        assert_ne!(kept, BURN_SHARED_QUEUE);
        assert_eq!(lines(RULE, &kept), vec![14]);
    }

    /// burn: a method the epoch loop calls keeps the model without autodiff in a field.
    const BURN_END_OF_EPOCH: &str = r#"
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer};
use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::{backend::{AutodiffBackend, Backend}, Tensor};
#[derive(Module, Debug)]
pub struct Net<B: Backend> { hidden: Linear<B> }
pub struct Snapshot<M> { pub epoch: usize, pub weights: M }
pub struct Trainer<B: AutodiffBackend, O> { model: Option<Net<B>>, optim: O, snapshots: Vec<Snapshot<Net<B::InnerBackend>>> }
impl<B: AutodiffBackend, O: Optimizer<Net<B>, B>> Trainer<B, O> {
    pub fn train_step(&mut self, x: Tensor<B, 2>) {
        let model = self.model.take().unwrap();
        let loss = model.forward(x).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        self.model = Some(self.optim.step(1e-3, model, grads));
    }
    pub fn end_epoch(&mut self, epoch: usize) {
        let weights = self.model.as_ref().unwrap().valid();
        self.snapshots.push(Snapshot { epoch, weights });
    }
}
fn run<B: AutodiffBackend, O: Optimizer<Net<B>, B>>(trainer: &mut Trainer<B, O>, data: &[Tensor<B, 2>]) {
    for epoch in 0..100 {
        for x in data {
            trainer.train_step(x.clone());
        }
        trainer.end_epoch(epoch);
    }
}
"#;

    #[test]
    fn reports_a_method_that_training_calls_keeping_the_model_without_autodiff() {
        assert_eq!(lines(RULE, BURN_END_OF_EPOCH), vec![20]);
        // Called by no training loop: nothing says how often.
        let alone = BURN_END_OF_EPOCH.replace(
            "        trainer.end_epoch(epoch);
",
            "",
        );
        assert_ne!(alone, BURN_END_OF_EPOCH);
        assert_eq!(count(RULE, None, &alone), 0);
    }

    #[test]
    fn accepts_a_local_that_lives_one_episode_or_one_call() {
        let per_epoch = BURN_CHECKPOINTS
            .replace(
                "    let mut checkpoints = CheckpointManager::new();
    for epoch in 0..40 {
",
                "    for epoch in 0..40 {
        let mut checkpoints = CheckpointManager::new();
",
            )
            .replace(
                "        checkpoints.save(epoch, &model);
    }
    println!(\"{}\", checkpoints.len());
",
                "        checkpoints.save(epoch, &model);
        println!(\"{}\", checkpoints.len());
    }
",
            );
        assert_ne!(per_epoch, BURN_CHECKPOINTS);
        assert_eq!(count(RULE, None, &per_epoch), 0);
        // A function each epoch calls: its local lives one epoch.
        let per_call = BURN_CHECKPOINTS.replace("fn train<", "fn train_epoch<")
            + "fn main() { for _ in 0..10 { for x in xs { let loss = m.forward(x); let g = loss.backward(); } train_epoch(m.clone(), &xs); } }\n";
        assert_eq!(count(RULE, None, &per_call), 0);
    }

    #[test]
    fn reports_dfdx_snapshots_from_a_method_of_the_crate() {
        let dfdx = r#"
use dfdx::prelude::*;
type Mlp = (Linear<4, 8>, ReLU, Linear<8, 2>);
pub struct Learner { net: <Mlp as BuildOnDevice<Cpu, f32>>::Built, grads: Gradients<f32, Cpu>, opt: Sgd<<Mlp as BuildOnDevice<Cpu, f32>>::Built, f32, Cpu> }
impl Learner {
    pub fn learn(&mut self, x: Tensor<Rank2<16, 4>, f32, Cpu>, y: Tensor<Rank2<16, 2>, f32, Cpu>) {
        let out = self.net.forward(x.trace(self.grads.clone()));
        let loss = mse_loss(out, y);
        self.grads = loss.backward();
        self.opt.update(&mut self.net, &self.grads).unwrap();
        self.net.zero_grads(&mut self.grads);
    }
    pub fn snapshot(&self) -> <Mlp as BuildOnDevice<Cpu, f32>>::Built { self.net.clone() }
}
pub struct Trainer { learner: Learner, snapshots: Vec<(usize, <Mlp as BuildOnDevice<Cpu, f32>>::Built)> }
impl Trainer {
    pub fn fit(&mut self, batches: Vec<(Tensor<Rank2<16, 4>, f32, Cpu>, Tensor<Rank2<16, 2>, f32, Cpu>)>) {
        for (step, (x, y)) in batches.into_iter().enumerate() {
            self.learner.learn(x, y);
            if step % 10 == 0 {
                self.snapshots.push((step, self.learner.snapshot()));
            }
        }
    }
}
"#;
        assert_eq!(lines(RULE, dfdx), vec![21]);
    }

    /// dfdx: a trainer method lent the caller's history pushes its own gradient store into it.
    const DFDX_LENT_HISTORY: &str = r#"
use dfdx::prelude::*;
use dfdx::tensor::Gradients;
type Mlp = (Linear<4, 8>, ReLU, Linear<8, 2>);
type Built = <Mlp as BuildOnDevice<Cpu, f32>>::Built;
pub struct History { kept: Vec<Gradients<f32, Cpu>> }
impl History {
    pub fn record(&mut self, grads: &Gradients<f32, Cpu>) { self.kept.push(grads.clone()); }
}
pub struct Trainer { model: Built, opt: Sgd<Built, f32, Cpu>, grads: Option<Gradients<f32, Cpu>> }
impl Trainer {
    pub fn accumulate(&mut self, x: Tensor<Rank2<16, 4>, f32, Cpu>, y: Tensor<Rank2<16, 2>, f32, Cpu>) {
        let grads = self.grads.take().unwrap();
        let loss = mse_loss(self.model.forward(x.traced(grads)), y);
        self.grads = Some(loss.backward());
    }
    pub fn apply(&mut self, history: &mut History) {
        let grads = self.grads.as_mut().unwrap();
        history.record(grads);
        self.opt.update(&mut self.model, grads).unwrap();
        self.model.zero_grads(grads);
    }
}
fn main() {
    let mut trainer = make_trainer();
    let mut history = History { kept: Vec::new() };
    for _ in 0..1000 {
        for (x, y) in batches() {
            trainer.accumulate(x, y);
        }
        trainer.apply(&mut history);
    }
}
"#;

    #[test]
    fn reports_a_copy_pushed_into_a_collection_the_caller_lends() {
        // At the call that lends the history (`apply` is the crate's, though named like a
        // forward pass), not in `record`, which is handed the store.
        assert_eq!(lines(RULE, DFDX_LENT_HISTORY), vec![31]);
        let labels = labels(RULE, DFDX_LENT_HISTORY);
        assert!(labels.iter().any(|(line, _)| *line == 8), "{labels:?}");
        // A history the caller empties.
        let cleared = DFDX_LENT_HISTORY.replace(
            "        trainer.apply(&mut history);\n",
            "        trainer.apply(&mut history);\n        history.kept.clear();\n",
        );
        assert_ne!(cleared, DFDX_LENT_HISTORY);
        assert_eq!(count(RULE, None, &cleared), 0);
    }

    #[test]
    fn reports_candle_gradients_pushed_into_a_local() {
        let candle = r#"
use candle_core::{Tensor, Var};
use candle_nn::{Optimizer, SGD};
fn train(w: &Var, opt: &mut SGD, xs: &[Tensor]) -> candle_core::Result<usize> {
    let mut history = Vec::new();
    for x in xs {
        let loss = x.matmul(w.as_tensor())?.sum_all()?;
        let grads = loss.backward()?;
        history.push(grads.get(w).unwrap().clone());
        opt.step(&grads)?;
    }
    Ok(history.len())
}
"#;
        assert_eq!(lines(RULE, candle), vec![9]);
        let norms = candle
            .replace("grads.get(w).unwrap().clone()", "grads.get(w).unwrap().sqr()?.sum_all()?.to_scalar::<f32>()?");
        assert_eq!(count(RULE, None, &norms), 0);
        let keyed = candle
            .replace("let mut history = Vec::new();", "let mut history = std::collections::HashMap::new();")
            .replace(
                "history.push(grads.get(w).unwrap().clone());",
                "history.insert(\"w\", grads.get(w).unwrap().clone());",
            );
        assert_eq!(count(RULE, None, &keyed), 0);
        // Made afresh for each episode of steps: it lives one episode.
        let per_episode = candle
            .replace(
                "    let mut history = Vec::new();\n    for x in xs {\n",
                "    let mut n = 0;\n    for _episode in 0..100 {\n    let mut history = Vec::new();\n    for x in xs {\n",
            )
            .replace("    Ok(history.len())\n", "    n += history.len();\n    }\n    Ok(n)\n");
        assert_ne!(per_episode, candle);
        assert_eq!(count(RULE, None, &per_episode), 0);
    }
}
