//! `eval_without_no_grad`: tch evaluation loops that keep outputs computed with gradients on.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{FnModel, Store, Taint};
use crate::rule::{Applies, Group, Rule, RuleMeta};

pub struct EvalWithoutNoGrad;

pub static META: RuleMeta = RuleMeta {
    id: "eval_without_no_grad",
    summary: "an evaluation loop keeps outputs computed with gradients enabled",
    default_level: Level::Warn,
    group: Group::Nursery,
    docs: r#"### What it does
In tch code, finds a loop that runs no backward (evaluation, inference) and keeps a value
computed by a forward pass with gradients enabled in a collection declared outside the loop
(`outputs.push(net.forward(&x))`). Model code is left alone: `forward` methods, functions that
return a graph-carrying value to their caller, and loops over the model's own parts
(`for layer in &self.layers`, `for i in 0..self.n_layers`) chain activations on purpose, and a
collection handed to one of the crate's own functions is that function's business. Sums and reassignments in evaluation loops are not
reported yet (they are indistinguishable from layer chaining without types).

### Why is this bad?
With gradients on, every forward pass records an autograd graph that holds its inputs and
activations. Without a backward pass nothing frees them early, and a kept output keeps its whole
graph: evaluation over a data set grows memory batch after batch.

### Example
```rust
let mut outputs = Vec::new();
for (x, _) in test_batches {
    outputs.push(net.forward(&x));
}
```

### Use instead
```rust
let _guard = tch::no_grad_guard();
let mut outputs = Vec::new();
for (x, _) in test_batches {
    outputs.push(net.forward(&x));
}
```
or keep host values (`f64::try_from(&acc)?`), or `detach()` what you keep.
"#,
};

impl Rule for EvalWithoutNoGrad {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn applies(&self) -> Applies {
        Applies::Known(|s| s.global_grad_mode)
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        // Model code: forward methods, and functions that hand the caller a graph computed from
        // what the loop collected (a loss to backpropagate) rather than the collection itself.
        if f.spec().is_forward_method(f.ident()) {
            return;
        }
        let returns_graph = f.returns().iter().any(|&n| f.taint(n).has(Taint::GRAPH));
        for (_, value, target, how, span) in f.stores() {
            if how != Store::Push || !f.taint(value).has(Taint::GRAPH) {
                continue;
            }
            let node_loop = f.loop_of(value);
            let Some(l) = node_loop else { continue };
            if f.loop_over_self(l) {
                continue;
            }
            // Training iterations are the other rules' business.
            if f.iteration_of(Some(l)).is_some() {
                continue;
            }
            let Some(binding) = f.binding_of(target) else { continue };
            let returns_collection = f.returns().iter().any(|&n| f.binding_of(n) == Some(binding));
            if returns_graph && !returns_collection {
                continue;
            }
            // Handed to one of the crate's functions (an optimizer's `tell(solutions, losses)`
            // that runs backward on them): that function decides, not this loop.
            if f.handed_to_crate_call(binding) {
                continue;
            }
            let b = f.binding(binding);
            let outlives = match b.kind() {
                crate::model::BindingKind::Local => !f.loop_within(b.decl_loop(), l),
                _ => true,
            };
            if !outlives {
                continue;
            }
            let report = Report::new(
                format!("`{}` keeps values computed with gradients enabled", b.name()),
                span.clone(),
                "this value carries an autograd graph",
            )
            .label(b.decl().clone(), format!("`{}` outlives the loop", b.name()))
            .label(f.loop_header(l).clone(), "this loop runs no backward")
            .help("run the loop under `let _guard = tch::no_grad_guard();` or `tch::no_grad(|| …)`, or keep `detach()`ed or host values")
            .note("with gradients on, each forward pass records a graph; nothing frees it while the output is kept");
            cx.report(report);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
use tch::Tensor;
fn predict(net: &dyn tch::nn::Module, xs: &[Tensor]) -> Vec<Tensor> {
    let mut outs = Vec::new();
    for x in xs {
        outs.push(net.forward(x));
    }
    outs
}
"#;

    const PASSES: &str = r#"
use tch::Tensor;
fn predict(net: &dyn tch::nn::Module, xs: &[Tensor]) -> Vec<Tensor> {
    let _guard = tch::no_grad_guard();
    let mut outs = Vec::new();
    for x in xs {
        outs.push(net.forward(x));
    }
    outs
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("eval_without_no_grad", None, FAILS), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("eval_without_no_grad", None, PASSES), 0);
    }

    /// Losses collected over candidate solutions and handed to one of the crate's optimizers
    /// (a gradient one whose `tell` runs backward, or an evolution strategy that reads them).
    const HANDED_TO_OPTIMIZER: &str = r#"
use tch::Tensor;
trait Ask { fn tell(&mut self, losses: Vec<Tensor>); }
struct Es { opt: Box<dyn Ask> }
impl Ask for Adam {
    fn tell(&mut self, losses: Vec<Tensor>) {
        self.opt.zero_grad();
        Tensor::stack(&losses, 0).mean(tch::Kind::Float).backward();
        self.opt.step();
    }
}
impl Ask for Cmaes {
    fn tell(&mut self, losses: Vec<Tensor>) {
        self.fitness = losses.iter().map(|l| f64::try_from(l).unwrap()).collect();
    }
}
fn round(es: &mut Es, net: &dyn tch::nn::Module, xs: &[Tensor]) {
    let mut losses = Vec::new();
    for x in xs {
        losses.push(net.forward(x).mean(tch::Kind::Float));
    }
    es.opt.tell(losses);
}
"#;

    #[test]
    fn accepts_a_collection_handed_to_the_crates_own_function() {
        assert_eq!(count("eval_without_no_grad", None, HANDED_TO_OPTIMIZER), 0);
        // Kept in the function instead (returned to the caller): reported.
        let kept = HANDED_TO_OPTIMIZER
            .replace(
                "fn round(es: &mut Es, net: &dyn tch::nn::Module, xs: &[Tensor]) {",
                "fn round(es: &mut Es, net: &dyn tch::nn::Module, xs: &[Tensor]) -> Vec<Tensor> {",
            )
            .replace("    es.opt.tell(losses);\n}", "    losses\n}");
        assert_ne!(kept, HANDED_TO_OPTIMIZER);
        assert_eq!(count("eval_without_no_grad", None, &kept), 1);
    }

    /// An encoder that returns every layer's output: the loop runs once per layer of the
    /// model (`0..self.depth`), not once per batch of data.
    const LAYER_OUTPUTS: &str = r#"
use tch::Tensor;
struct Encoder { blocks: Vec<tch::nn::Linear>, depth: usize }
impl Encoder {
    fn all_outputs(&self, x: &Tensor) -> Vec<Tensor> {
        let mut outs = Vec::with_capacity(self.depth);
        let mut h = x.shallow_clone();
        for i in 0..self.depth {
            let y = self.blocks[i].forward(&h);
            h = y.shallow_clone();
            outs.push(y);
        }
        outs
    }
}
"#;

    #[test]
    fn accepts_a_loop_over_the_models_own_layers() {
        assert_eq!(count("eval_without_no_grad", None, LAYER_OUTPUTS), 0);
        let by_len = LAYER_OUTPUTS.replace("0..self.depth", "0..self.blocks.len()");
        assert_eq!(count("eval_without_no_grad", None, &by_len), 0);
        // The same loop bounded by the caller's data is an evaluation loop.
        let over_data = LAYER_OUTPUTS
            .replace("fn all_outputs(&self, x: &Tensor)", "fn all_outputs(&self, x: &Tensor, n: usize)")
            .replace("0..self.depth", "0..n")
            .replace("self.blocks[i]", "self.blocks[0]");
        assert_eq!(count("eval_without_no_grad", None, &over_data), 1);
    }
}
