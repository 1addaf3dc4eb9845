//! `retained_graph_output`: a graph-carrying value stored where it outlives the iteration.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use petgraph::graph::{EdgeIndex, NodeIndex};

use crate::model::{BindingId, BindingKind, FnModel, Iteration, Span, Store, Taint};
use crate::rule::{Group, Rule, RuleMeta};

pub struct RetainedGraphOutput;

pub static META: RuleMeta = RuleMeta {
    id: "retained_graph_output",
    summary: "a graph-carrying tensor is kept past its training iteration",
    default_level: Level::Warn,
    group: Group::Nursery,
    docs: r#"### What it does
Finds a value that carries an autograd graph (a loss, a model output, anything computed from
them) stored where it outlives the iteration of the loop that runs backward: pushed or inserted
into a collection declared outside the loop, assigned to or pushed into a `self` field, or
assigned to a binding declared outside the loop.

### Why is this bad?
A kept output keeps its graph: in candle every op node holds its inputs, so one kept loss keeps
all of that step's activations; in tch it keeps autograd bookkeeping and its storage. A list of
per-step losses grows by a whole graph every iteration.

Not flagged: buffers emptied in the same iteration (`memory.push(out)` … `backward()` …
`memory.clear()`, the on-policy A2C/PPO pattern), values passed through `detach()` or turned
into host scalars, a local or a `self` field replaced every iteration by a value that does not
derive from its old one (it holds one iteration's graph at a time: `self.state = Some(h)` after
a window that starts from `self.state.take()` detached), and plain data
tensors (observations made with `Tensor::new`/`from_vec`/`from_slice`, batches): a replay buffer
of observations is not a leak.

### Example
```rust
let mut losses = Vec::new();
for (x, y) in batches {
    let loss = loss::mse(&model.forward(&x)?, &y)?;
    opt.backward_step(&loss)?;
    losses.push(loss);
}
```

### Use instead
```rust
let mut losses = Vec::new();
for (x, y) in batches {
    let loss = loss::mse(&model.forward(&x)?, &y)?;
    opt.backward_step(&loss)?;
    losses.push(loss.to_scalar::<f32>()?);
}
```
"#,
};

/// A store that qualifies: edge, stored value, how, where, target binding, iteration.
type Candidate = (EdgeIndex, NodeIndex, Store, Span, BindingId, Iteration);

/// A candidate and the names of the values it stores (several when one call stores several).
type Grouped = (Candidate, Vec<String>);

impl Rule for RetainedGraphOutput {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        let candidates = candidates(f);
        for (c, names) in group_by_call(f, cx, &candidates) {
            let report = report(f, cx, &c, &names);
            cx.report(report);
        }
    }
}

/// Graph-carrying values pushed or assigned into bindings that outlive their training iteration.
fn candidates(f: &FnModel) -> Vec<Candidate> {
    // A training step's push into a field of `self` that nothing empties is
    // `accumulated_loss_tensor`'s (stable): one finding per store.
    let stable = f.pushed_into_unemptied_fields();
    f.stores()
        .filter_map(|(edge, value, target, how, span)| {
            if !matches!(how, Store::Push | Store::Assign) || !f.taint(value).has(Taint::GRAPH) {
                return None;
            }
            if how == Store::Push && stable.iter().any(|(at, ..)| *at == span) {
                return None;
            }
            let binding = f.binding_of(target)?;
            let iteration = f.iteration_of(f.loop_of(value))?;
            if !f.outlives(binding, iteration) || (how == Store::Push && f.cleared_within(binding, iteration)) {
                return None;
            }
            // A local or a field of `self` replaced each iteration by a value that does not
            // derive from its old one keeps one graph at a time (carried into the next
            // iteration, consumed or replaced there: `self.state = Some(h)` after a window whose
            // start detaches the state it takes).
            if how == Store::Assign
                && matches!(f.binding(binding).kind(), BindingKind::Local | BindingKind::SelfField)
                && !f.derives_from(value, binding)
            {
                return None;
            }
            // A state fed back through a forward pass (`hidden = out` with `out =
            // cell.forward(&(x + &hidden)?)?`) is a fold: `accumulated_loss_tensor` judges it.
            if how == Store::Assign
                && !f.spec().graph_swept_by_backward
                && f.feeds_forward_through_locals(value, binding)
            {
                return None;
            }
            Some((edge, value, how, span.clone(), binding, iteration))
        })
        .collect()
}

/// What a stored value is called in messages.
fn shown_of(f: &FnModel, cx: &Context<'_>, edge: EdgeIndex, value: NodeIndex) -> String {
    let value_span = f.span_of(value).clone();
    let value_text = match f.binding_of(value) {
        // A binding passed to a function that stores it.
        Some(b) if f.through(edge).is_some() => f.binding(b).name().to_string(),
        // Another argument of such a call (its text is not kept).
        None if f.through(edge).is_some() => String::new(),
        _ => cx.snippet(&value_span).trim().to_string(),
    };
    let value_text = value_text.strip_suffix(".clone()").map(str::to_string).unwrap_or(value_text);
    if value_text.is_empty() || value_text.len() > 40 { "value".to_string() } else { value_text }
}

/// Several arguments stored by one call: one report for the call, naming them all.
fn group_by_call(f: &FnModel, cx: &Context<'_>, candidates: &[Candidate]) -> Vec<Grouped> {
    let same_call = |a: &Candidate, b: &Candidate| a.3 == b.3 && f.through(a.0).is_some() && f.through(b.0).is_some();
    let mut out = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        if candidates[..i].iter().any(|d| same_call(d, c)) {
            continue;
        }
        let mut names = vec![shown_of(f, cx, c.0, c.1)];
        for d in candidates[i + 1..].iter().filter(|d| same_call(c, d)) {
            let name = shown_of(f, cx, d.0, d.1);
            if !names.contains(&name) {
                names.push(name);
            }
        }
        out.push((c.clone(), names));
    }
    out
}

/// The message and primary label of one report.
fn message(f: &FnModel, c: &Candidate, names: &[String]) -> (String, String) {
    let (edge, _, how, _, binding, _) = c;
    let b = f.binding(*binding);
    let shown = &names[0];
    let listed = match names {
        [one] => format!("`{one}` is"),
        [init @ .., last] => {
            let quote = |n: &String| if n == "value" { "another value".to_string() } else { format!("`{n}`") };
            let init: Vec<String> = init.iter().map(quote).collect();
            format!("{} and {} are", init.join(", "), quote(last))
        }
        [] => "the value is".to_string(),
    };
    match (f.through(*edge), how, b.kind()) {
        (Some(t), ..) => (
            format!("graph-carrying tensor stored by `{}`, which outlives the iteration", t.callee()),
            format!(
                "{listed} passed to `{}`, which stores {} in `{}`",
                t.callee(),
                if names.len() > 1 { "them" } else { "it" },
                t.target()
            ),
        ),
        (None, Store::Push, _) => (
            format!("graph-carrying tensor stored in `{}`, which outlives the iteration", b.name()),
            format!("`{shown}` is stored with its autograd graph"),
        ),
        (None, _, BindingKind::SelfField) => (
            format!("graph-carrying tensor assigned to `{}`, which outlives the iteration", b.name()),
            format!("`{shown}` is kept with its autograd graph"),
        ),
        _ => (
            format!("graph-carrying tensor assigned to `{}`, declared outside the iteration", b.name()),
            format!("`{shown}` is kept with its autograd graph"),
        ),
    }
}

/// The whole report of one store (or one call that stores).
fn report(f: &FnModel, cx: &Context<'_>, c: &Candidate, names: &[String]) -> Report {
    let (edge, value, how, span, binding, iteration) = c;
    let b = f.binding(*binding);
    let through = f.through(*edge);
    let value_span = f.span_of(*value).clone();
    let (message, primary_label) = message(f, c, names);
    let source = f.graph_source(*value, Some(*binding));
    // Name the fix after the graph-carrying binding (`loss`), not a wrapper (`Some(loss)`).
    let fix_on = source.as_ref().map_or(names[0].clone(), |(b, _)| f.binding(*b).name().to_string());
    let mut report = Report::new(message, span.clone(), primary_label);
    let decl_text = match b.kind() {
        BindingKind::SelfField => format!("`{}` lives as long as `self`", b.name()),
        BindingKind::Param => format!("`{}` is a parameter and outlives the call", b.name()),
        _ => format!("`{}` is declared outside the training iteration", b.name()),
    };
    if b.kind() != BindingKind::SelfField {
        report = report.label(b.decl().clone(), decl_text);
    }
    if let Some((src, decl)) = source {
        report = report.label(decl, format!("`{}` carries the autograd graph", f.binding(src).name()));
    }
    if let Some((span, text)) = f.iteration_label(*iteration) {
        report = report.label(span, text);
    }
    // The chain of calls down to the store: one label per hop.
    report = super::label_hops(report, cx, through, |hop| {
        format!("`{}` stores it in `{}` here", hop.callee(), hop.target())
    });
    // A state fed back into the next iteration (`hidden = cell(x, hidden)`): cutting it is
    // truncated backpropagation through time, which changes the gradients that reach the
    // parameters; a human decides where to truncate.
    let recurrent = *how == Store::Assign && f.derives_from(*value, *binding);
    report = if recurrent {
        report.help(format!(
            "cut the state once per training iteration, where truncating the gradients is intended: `{} = {}`",
            b.name(),
            crate::frameworks::fill(f.spec().detach_fix, &fix_on)
        ))
    } else {
        report.help(format!(
            "store `{}` or a host value such as `{}` instead",
            crate::frameworks::fill(f.spec().detach_fix, &fix_on),
            crate::frameworks::fill(f.spec().scalar_fix, &fix_on)
        ))
    }
    .note("a stored tensor keeps the autograd graph it was computed with, so every iteration adds one more graph that is never freed");
    let text = cx.snippet(&value_span).to_string();
    if through.is_none()
        && let Some(mut s) = crate::frameworks::detach_suggestion(f.spec(), value_span, &text)
    {
        if recurrent {
            s.applicability = crate::Applicability::MaybeIncorrect;
        }
        report = report.suggest(s);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    /// Gradient accumulation by hand: the optimizer holds the variables (`vars: Vec<Var>`) and
    /// adds each step's gradients, read from the store by variable, into a map it keeps.
    const ACCUMULATED_GRADS: &str = r#"
use candle_core::{Result, Tensor, Var};
use std::collections::HashMap;
pub struct Accum { vars: Vec<Var>, sums: HashMap<usize, Tensor> }
impl Accum {
    pub fn accumulate(&mut self, loss: &Tensor) -> Result<()> {
        let grads = loss.backward()?;
        for (i, var) in self.vars.iter().enumerate() {
            if let Some(grad) = grads.get(var) {
                let new = match self.sums.remove(&i) {
                    Some(old) => (old + grad)?,
                    None => grad.clone(),
                };
                self.sums.insert(i, new);
            }
        }
        Ok(())
    }
}
"#;

    #[test]
    fn gradients_read_from_the_store_by_variable_carry_no_graph() {
        assert_eq!(count("retained_graph_output", None, ACCUMULATED_GRADS), 0);
        // What a variable computes is graph-carrying, kept all the same.
        let kept =
            ACCUMULATED_GRADS.replace("Some(old) => (old + grad)?", "Some(old) => (old + var.as_tensor().sqr()?)?");
        assert_ne!(kept, ACCUMULATED_GRADS);
        assert_eq!(count("retained_graph_output", None, &kept), 1);
    }

    const FAILS: &str = r#"
use candle_core::Tensor;
fn train(model: &Mlp, xs: &[Tensor]) -> candle_core::Result<Vec<Tensor>> {
    let mut kept = Vec::new();
    for x in xs {
        let out = model.forward(x)?;
        out.sum_all()?.backward()?;
        kept.push(out);
    }
    Ok(kept)
}
"#;

    const PASSES: &str = r#"
use candle_core::Tensor;
fn train(model: &Mlp, xs: &[Tensor]) -> candle_core::Result<Vec<Tensor>> {
    let mut kept = Vec::new();
    for x in xs {
        let out = model.forward(x)?;
        out.sum_all()?.backward()?;
        kept.push(out.detach());
    }
    Ok(kept)
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("retained_graph_output", None, FAILS), 1);
    }

    #[test]
    fn leaves_tensors_of_other_crates_alone() {
        // The same code on a look-alike framework's `Tensor`: none of the four frameworks'
        // semantics apply (`item()` and friends are its own).
        let foreign = FAILS
            .replace("use candle_core::Tensor;", "use flame_core::{Result, Tensor};")
            .replace("candle_core::Result", "Result");
        assert_ne!(foreign, FAILS);
        assert_eq!(count("retained_graph_output", None, &foreign), 0);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("retained_graph_output", None, PASSES), 0);
    }

    /// tch: `t.try_into()` converts to host values (`f64`, `Vec<f32>`), as `f64::try_from(&t)` does.
    #[test]
    fn accepts_tch_outputs_converted_to_host_values() {
        let tch = r#"
use tch::{nn, Tensor};
fn train(net: &Net, opt: &mut nn::Optimizer, xs: &[Tensor]) -> Vec<f64> {
    let mut variances: Vec<f64> = Vec::new();
    for x in xs {
        let loss = net.forward(x).mean(tch::Kind::Float);
        opt.backward_step(&loss);
        variances.push(net.forward(x).var(false).try_into().unwrap());
    }
    variances
}
"#;
        assert_eq!(count("retained_graph_output", None, tch), 0);
        let kept = tch.replace(".var(false).try_into().unwrap()", ".var(false)").replace("Vec<f64>", "Vec<Tensor>");
        assert_eq!(count("retained_graph_output", None, &kept), 1);
    }

    /// A crate method named like a forward pass (`apply`) whose signature returns host data:
    /// the action it returns carries no graph, and neither does what the environment makes of it.
    const HOST_ACTION: &str = r#"
use burn::tensor::{backend::AutodiffBackend, Tensor};
struct Noise { sigma: f32 }
impl Noise {
    fn apply(&self, mean: &[f32]) -> Vec<f32> {
        mean.iter().map(|m| m + self.sigma).collect()
    }
}
struct Agent<B: AutodiffBackend, O, A> { noise: Noise, buffer: Vec<(O, A)> }
impl<B: AutodiffBackend, O, A: Action> Agent<B, O, A> {
    fn act(&self, obs: &O) -> A {
        let mean = obs.features();
        A::from_slice(&self.noise.apply(&mean))
    }
    fn remember(&mut self, obs: O, action: &A) {
        self.buffer.push((obs, action.clone()));
    }
}
fn train<B: AutodiffBackend, O, A: Action>(agent: &mut Agent<B, O, A>, env: &mut Env, n: usize) {
    let mut obs = env.reset();
    for _ in 0..n {
        let action = agent.act(&obs);
        let next = env.step(action.clone());
        agent.remember(obs, &action);
        let loss = agent.loss();
        loss.backward();
        obs = next;
    }
}
"#;

    #[test]
    fn accepts_host_values_from_a_forward_named_crate_method() {
        assert_eq!(count("retained_graph_output", None, HOST_ACTION), 0);
        // The same code with tensors where it has host vectors: the action carries the graph
        // into the buffer.
        let tensor = HOST_ACTION.replace(
            "-> Vec<f32> {\n        mean.iter().map(|m| m + self.sigma).collect()",
            "-> Tensor<B, 1> {\n        self.net.forward(mean)",
        );
        assert_ne!(tensor, HOST_ACTION);
        assert!(count("retained_graph_output", None, &tensor) >= 1);
    }

    /// A crate function returning a tuple whose second element is a host number: what is kept
    /// of it carries no graph, though the first element does.
    const TUPLE_STEP: &str = r#"
use candle_core::{Result, Tensor};
fn step(model: &Mlp, x: &Tensor) -> Result<(Tensor, f32)> {
    let out = model.forward(x)?;
    let acc = out.max(1)?.mean_all()?.to_scalar::<f32>()?;
    Ok((out, acc))
}
fn train(model: &Mlp, xs: &[Tensor]) -> Result<Vec<f32>> {
    let mut accuracies = Vec::new();
    for x in xs {
        let (out, acc) = step(model, x)?;
        out.sum_all()?.backward()?;
        accuracies.push(acc);
    }
    Ok(accuracies)
}
"#;

    #[test]
    fn keeps_host_elements_of_a_returned_tuple_apart() {
        assert_eq!(count("retained_graph_output", None, TUPLE_STEP), 0);
        // With a tensor in the second place, the kept element carries the graph.
        let tensor = TUPLE_STEP
            .replace("Result<(Tensor, f32)>", "Result<(Tensor, Tensor)>")
            .replace(".mean_all()?.to_scalar::<f32>()?;", ".mean_all()?;")
            .replace("Result<Vec<f32>>", "Result<Vec<Tensor>>");
        assert_ne!(tensor, TUPLE_STEP);
        assert_eq!(count("retained_graph_output", None, &tensor), 1);
    }

    /// Truncated backpropagation through time with the carry kept in `self`: each window takes
    /// the state out, detaches it, and puts the window's last state back.
    const WINDOW_CARRY: &str = r#"
use candle_core::{Result, Tensor};
use candle_nn::{AdamW, Optimizer};
pub struct Trainer { cell: Cell, opt: AdamW, state: Option<Tensor> }
impl Trainer {
    pub fn train_window(&mut self, xs: &[Tensor]) -> Result<f32> {
        let mut h = START;
        let mut losses = Vec::new();
        for x in xs {
            h = self.cell.forward(x, &h)?;
            losses.push(h.sqr()?.mean_all()?);
        }
        let loss = Tensor::stack(&losses, 0)?.mean_all()?;
        self.opt.backward_step(&loss)?;
        self.state = Some(h);
        loss.to_scalar::<f32>()
    }
}
"#;

    #[test]
    fn accepts_a_carry_in_self_replaced_every_call() {
        let detached = WINDOW_CARRY.replace("START", "self.state.take().unwrap().detach()");
        assert_eq!(count("retained_graph_output", None, &detached), 0);
        // Built on the old state without a cut: each window's graph hangs on the last one, a
        // recurrent state that `accumulated_loss_tensor` reports.
        let chained = WINDOW_CARRY.replace("START", "self.state.take().unwrap()");
        assert_eq!(count("accumulated_loss_tensor", None, &chained), 1);
    }

    /// A policy's method returns the sampled action (host data made into a tensor) beside the
    /// logits its forward made; the loop keeps one of them.
    const ACT_TUPLE: &str = r#"
use tch::{nn, nn::Module, Kind, Tensor};
struct Policy { net: nn::Linear }
impl Policy {
    fn act(&self, obs: &Tensor) -> (Tensor, Tensor) {
        let logits = self.net.forward(obs);
        let action = Tensor::from_slice(&[sample(&Vec::<f32>::try_from(&logits).unwrap())]);
        (action, logits)
    }
}
fn train(policy: &Policy, env: &mut Env, opt: &mut nn::Optimizer) -> Vec<Tensor> {
    let mut history = Vec::new();
    for _ in 0..1000 {
        let (action, logits) = policy.act(&env.obs());
        env.step(&action);
        let loss = logits.mean(Kind::Float);
        opt.backward_step(&loss);
        history.push(KEPT);
    }
    history
}
"#;

    #[test]
    fn each_element_of_a_returned_tuple_carries_what_the_callee_put_there() {
        // The logits carry the forward's graph; the action was made from host numbers.
        assert_eq!(count("retained_graph_output", None, &ACT_TUPLE.replace("KEPT", "logits")), 1);
        assert_eq!(count("retained_graph_output", None, &ACT_TUPLE.replace("KEPT", "action")), 0);
    }
}
