//! `graph_copied_into_buffer`: a graph-carrying tensor copied in place into a tensor that lives
//! across training steps (tch `buf.narrow(..).copy_(&v)`).

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{BindingKind, FnModel, Iteration, Store, Taint};
use crate::rule::{Group, Rule, RuleMeta};

pub struct GraphCopiedIntoBuffer;

pub static META: RuleMeta = RuleMeta {
    id: "graph_copied_into_buffer",
    summary: "a graph-carrying tensor is copied in place into a buffer that lives across training steps",
    default_level: Level::Warn,
    group: Group::Stable,
    docs: r#"### What it does
In tch code, finds `copy_` of a value that carries an autograd graph (computed from a forward pass
outside `no_grad`) into a tensor that outlives the training step: a field of `self` (a rollout
buffer allocated once, `self.advantages.narrow(0, t, n).copy_(&gae)`), or a local declared
outside the loop that runs backward. The copy may happen in a method of the crate that the
value is handed to (`self.buffer.compute_advantages(&last_value)`); it is then reported at that
call.

Not reported: copies of detached values or of values computed under `no_grad`; a buffer the
same function allocates anew (`self.adv = Tensor::zeros(..)`) or detaches in place
(`self.adv.detach_()`) each call, or a local made inside the training loop: it holds one
step's graph at a time.

A function that every call of the crate makes with gradients off (after a caller's `let _g =
tch::no_grad_guard();`, inside `tch::no_grad(|| ..)`, or from a function itself only so called)
records no graph, so its copies are not reported either.

### Why is this bad?
An in-place copy into a tensor that does not require gradients makes it require them: libtorch
records a `CopySlices` node whose inputs are the source's graph and the tensor's previous
history. The tensor keeps that chain for as long as it lives, so every later copy adds one more
step's graph (with its saved activations) and none is ever freed, even though backward runs
elsewhere. Measured with PyTorch 2.x on an H200 (`experiments/tch-copy-into-buffer`): a PPO-style
GAE copy into a preallocated buffer grew CUDA memory by 48 KiB per update (0.31 MiB of host
memory per update on the CPU); with
`.detach()` on the copied value, `no_grad` around the bootstrap forward, a buffer allocated each
update, or `detach_()` on the buffer, memory stayed flat. Zeroing the buffer (`zero_()`) does not
cut the chain.

### Example
```rust
impl Rollout {
    fn finish(&mut self, last_value: &Tensor) {
        let mut gae = Tensor::zeros([self.envs], FLOAT_CPU);
        for t in (0..self.steps).rev() {
            gae = self.delta(t, last_value) + self.discount * &gae;
            self.advantages.narrow(0, t, 1).copy_(&gae);
        }
    }
}
```

### Use instead
```rust
impl Rollout {
    fn finish(&mut self, last_value: &Tensor) {
        let mut gae = Tensor::zeros([self.envs], FLOAT_CPU);
        for t in (0..self.steps).rev() {
            gae = self.delta(t, last_value) + self.discount * &gae;
            self.advantages.narrow(0, t, 1).copy_(&gae.detach());
        }
    }
}
```
"#,
};

impl Rule for GraphCopiedIntoBuffer {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        // Only frameworks with in-place copies make such stores.
        if f.spec().copy_into_methods.is_empty() {
            return;
        }
        let mut reported = Vec::new();
        for (edge, value, target, how, span) in f.stores() {
            if how != Store::CopyInto || !f.taint(value).has(Taint::GRAPH) || reported.contains(span) {
                continue;
            }
            let Some(binding) = f.binding_of(target) else { continue };
            let b = f.binding(binding);
            let through = f.through(edge);
            let lives = match b.kind() {
                // Allocated anew or cut in place by this function: one call's graph at a time.
                BindingKind::SelfField => !f.replaces(binding),
                // A local outlives the step only when declared outside the loop that runs backward.
                BindingKind::Local => match f.iteration_of(f.loop_of(value)) {
                    Some(it @ Iteration::Loop(_)) => f.outlives(binding, it) && !f.cleared_within(binding, it),
                    _ => false,
                },
                // The caller's tensor: judged where the caller's model sees the copy.
                BindingKind::Param | BindingKind::Global => false,
            };
            if !lives {
                continue;
            }
            reported.push(span.clone());
            let mut report = match through {
                Some(t) => {
                    let last = t.hops().last().unwrap_or(t);
                    Report::new(
                        format!(
                            "graph-carrying tensor copied by `{}` into `{}`, which keeps its graph",
                            last.callee(),
                            last.target()
                        ),
                        span.clone(),
                        format!("`{}` copies it in place into `{}`", t.callee(), t.target()),
                    )
                }
                None => Report::new(
                    format!("graph-carrying tensor copied into `{}`, which keeps its graph", b.name()),
                    span.clone(),
                    "an in-place copy of a tensor with an autograd graph",
                ),
            };
            let source = f.graph_source(value, Some(binding));
            let fix_on = source.as_ref().map_or("value", |(src, _)| f.binding(*src).name()).to_string();
            if let Some((src, decl)) = source {
                report = report.label(decl, format!("`{}` carries the autograd graph", f.binding(src).name()));
            }
            if b.kind() == BindingKind::Local {
                report = report
                    .label(b.decl().clone(), format!("`{}` is declared outside the training iteration", b.name()));
            }
            report = super::label_hops(report, cx, through, |hop| {
                format!("`{}` copies it into `{}` here", hop.callee(), hop.target())
            });
            let fix = crate::frameworks::fill(f.spec().detach_fix, &fix_on);
            cx.report(
                report
                    .help(format!(
                        "copy a detached value (`{fix}`), or compute it under `no_grad`, unless gradients are meant to flow through the buffer"
                    ))
                    .note("each in-place copy chains the copied value's graph onto the buffer's autograd history, which lives as long as the buffer"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{count, elsewhere, lines};

    const FIELD_BUFFER: &str = r#"
use tch::{nn, nn::Module, Kind, Tensor};
struct Buffer { advantages: Tensor, values: Tensor, steps: i64 }
impl Buffer {
    fn finish(&mut self, last_value: &Tensor) {
        let mut gae = Tensor::zeros([4], (Kind::Float, tch::Device::Cpu));
        for t in (0..self.steps).rev() {
            let next = if t == self.steps - 1 { last_value.shallow_clone() } else { self.values.get(t + 1) };
            gae = &next - &self.values.get(t) + 0.95 * &gae;
            self.advantages.narrow(0, t, 1).copy_(&gae);
        }
    }
}
struct Trainer { policy: nn::Sequential, buffer: Buffer, opt: nn::Optimizer }
impl Trainer {
    fn update(&mut self, obs: &Tensor) {
        let last_value = self.policy.forward(obs);
        self.buffer.finish(&last_value);
        let loss = self.policy.forward(obs).mean(Kind::Float);
        self.opt.backward_step(&loss);
    }
}
"#;

    #[test]
    fn reports_a_graph_copied_into_a_field_through_a_method() {
        assert_eq!(lines("graph_copied_into_buffer", FIELD_BUFFER), vec![18]);
        let notes = elsewhere("graph_copied_into_buffer", FIELD_BUFFER);
        assert!(notes.is_empty(), "same file: a label, not a note: {notes:?}");
    }

    #[test]
    fn accepts_a_detached_or_no_grad_value() {
        let detached = FIELD_BUFFER.replace("copy_(&gae)", "copy_(&gae.detach())");
        assert_eq!(count("graph_copied_into_buffer", None, &detached), 0);
        let no_grad = FIELD_BUFFER.replace(
            "let last_value = self.policy.forward(obs);",
            "let last_value = tch::no_grad(|| self.policy.forward(obs));",
        );
        assert_eq!(count("graph_copied_into_buffer", None, &no_grad), 0);
    }

    #[test]
    fn accepts_a_forward_in_a_helper_only_called_with_gradients_off() {
        let helper = FIELD_BUFFER.replace(
            "        let last_value = self.policy.forward(obs);\n        self.buffer.finish(&last_value);\n",
            "        {\n            let _g = tch::no_grad_guard();\n            self.bootstrap(obs);\n        }\n",
        ) + r#"
impl Trainer {
    fn bootstrap(&mut self, obs: &Tensor) {
        let last_value = self.policy.forward(obs);
        self.buffer.finish(&last_value);
    }
}
"#;
        assert_eq!(count("graph_copied_into_buffer", None, &helper), 0);
        // One level further up, through a closure: still off.
        let deeper = helper.replace(
            "            let _g = tch::no_grad_guard();\n            self.bootstrap(obs);",
            "            tch::no_grad(|| self.gather_rollout(obs));",
        ) + "impl Trainer { fn gather_rollout(&mut self, obs: &Tensor) { self.bootstrap(obs) } }\n";
        assert_eq!(count("graph_copied_into_buffer", None, &deeper), 0);
        // A second call with gradients on makes the helper record a graph again.
        let also_on = helper
            .replace("        let loss = self.policy", "        self.bootstrap(obs);\n        let loss = self.policy");
        assert_eq!(count("graph_copied_into_buffer", None, &also_on), 1);
    }

    #[test]
    fn accepts_a_buffer_made_anew_or_cut_each_call() {
        let fresh = FIELD_BUFFER.replace(
            "let mut gae = Tensor::zeros",
            "self.advantages = Tensor::zeros([64], (Kind::Float, tch::Device::Cpu));\n        let mut gae = Tensor::zeros",
        );
        assert_eq!(count("graph_copied_into_buffer", None, &fresh), 0);
        let cut = FIELD_BUFFER
            .replace("let mut gae = Tensor::zeros", "self.advantages.detach_();\n        let mut gae = Tensor::zeros");
        assert_eq!(count("graph_copied_into_buffer", None, &cut), 0);
        // Zeroing keeps the history (measured): still reported.
        let zeroed = FIELD_BUFFER
            .replace("let mut gae = Tensor::zeros", "self.advantages.zero_();\n        let mut gae = Tensor::zeros");
        assert_eq!(count("graph_copied_into_buffer", None, &zeroed), 1);
    }

    #[test]
    fn accepts_data_copied_into_a_replay_buffer() {
        let src = r#"
use tch::{nn, nn::Module, Kind, Tensor};
struct Memory { obs: Tensor, rewards: Tensor }
impl Memory {
    fn add(&mut self, i: i64, obs: &[f32], reward: f64) {
        self.obs.get(i).copy_(&Tensor::from_slice(obs));
        self.rewards.get(i).copy_(&Tensor::from(reward));
    }
}
"#;
        assert_eq!(count("graph_copied_into_buffer", None, src), 0);
    }

    const LOCAL: &str = r#"
use tch::{nn, nn::Module, Kind, Tensor};
fn train(net: &nn::Sequential, opt: &mut nn::Optimizer, xs: &[Tensor]) {
    let preds = Tensor::zeros([64], (Kind::Float, tch::Device::Cpu));
    for (i, x) in xs.iter().enumerate() {
        let out = net.forward(x);
        preds.get(i as i64).copy_(&out.mean(Kind::Float));
        let loss = out.pow_tensor_scalar(2).mean(Kind::Float);
        opt.backward_step(&loss);
    }
}
"#;

    #[test]
    fn reports_a_local_buffer_declared_outside_the_training_loop() {
        assert_eq!(lines("graph_copied_into_buffer", LOCAL), vec![7]);
        let inside =
            LOCAL.replace("    let preds = Tensor::zeros([64], (Kind::Float, tch::Device::Cpu));\n", "").replace(
                "let out = net.forward(x);",
                "let out = net.forward(x);\n        let preds = Tensor::zeros([64], (Kind::Float, tch::Device::Cpu));",
            );
        assert_eq!(count("graph_copied_into_buffer", None, &inside), 0);
    }

    #[test]
    fn a_per_call_local_buffer_is_not_reported() {
        // GAE into a buffer the function allocates and returns: one update's graph at a time.
        let src = r#"
use tch::{nn, nn::Module, Kind, Tensor};
fn advantages(values: &Tensor, last: &Tensor, steps: i64) -> Tensor {
    let adv = Tensor::zeros([steps], (Kind::Float, tch::Device::Cpu));
    let mut gae = last.shallow_clone();
    for t in (0..steps).rev() {
        gae = &values.get(t) + 0.9 * &gae;
        adv.get(t).copy_(&gae);
    }
    adv
}
"#;
        assert_eq!(count("graph_copied_into_buffer", None, src), 0);
    }
}
