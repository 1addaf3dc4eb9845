//! `retained_graph_output`: a graph-carrying value stored where it outlives the iteration.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::graph::{BindingKind, FnGraph, Store, Taint};
use crate::rule::{Rule, RuleMeta};

pub struct RetainedGraphOutput;

pub static META: RuleMeta = RuleMeta {
    id: "retained_graph_output",
    summary: "a graph-carrying tensor is kept past its training iteration",
    default_level: Level::Warn,
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
into host scalars, and plain data
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

impl Rule for RetainedGraphOutput {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_function(&self, f: &FnGraph, cx: &mut Context<'_>) {
        for (edge, value, target, how, span) in f.stores() {
            if !matches!(how, Store::Push | Store::Assign) || !f.graph[value].taint.has(Taint::GRAPH) {
                continue;
            }
            let Some(binding) = f.binding_of(target) else { continue };
            let Some(iteration) = f.iteration_of(f.graph[value].in_loop) else { continue };
            if !f.outlives(binding, iteration) || (how == Store::Push && f.cleared_within(binding, iteration)) {
                continue;
            }
            let b = &f.bindings[binding];
            // A local replaced each iteration by a value that does not derive from its old one
            // keeps one graph at a time (carried into the next iteration and consumed there).
            if how == Store::Assign && b.kind == BindingKind::Local && !f.derives_from(value, binding) {
                continue;
            }
            let through = f.through(edge);
            let value_span = f.graph[value].span.clone();
            let value_text = match f.binding_of(value) {
                // A binding passed to a function that stores it.
                Some(b) if through.is_some() => f.bindings[b].name.clone(),
                _ => cx.snippet(&value_span).trim().to_string(),
            };
            let value_text = value_text.strip_suffix(".clone()").map(str::to_string).unwrap_or(value_text);
            let shown = if value_text.is_empty() || value_text.len() > 40 { "value".to_string() } else { value_text };
            let (message, primary_label) = match (how, &b.kind) {
                _ if through.is_some() => {
                    let t = through.expect("checked");
                    (
                        format!("graph-carrying tensor stored by `{}`, which outlives the iteration", t.callee),
                        format!("`{shown}` is passed to `{}`, which stores it in `{}`", t.callee, t.target),
                    )
                }
                (Store::Push, _) => (
                    format!("graph-carrying tensor stored in `{}`, which outlives the iteration", b.name),
                    format!("`{shown}` is stored with its autograd graph"),
                ),
                (_, BindingKind::SelfField) => (
                    format!("graph-carrying tensor assigned to `{}`, which outlives the iteration", b.name),
                    format!("`{shown}` is kept with its autograd graph"),
                ),
                _ => (
                    format!("graph-carrying tensor assigned to `{}`, declared outside the iteration", b.name),
                    format!("`{shown}` is kept with its autograd graph"),
                ),
            };
            let source = f.graph_source(value, Some(binding));
            // Name the fix after the graph-carrying binding (`loss`), not a wrapper (`Some(loss)`).
            let fix_on = source.as_ref().map_or(shown.clone(), |(b, _)| f.bindings[*b].name.clone());
            let mut report = Report::new(message, span.clone(), primary_label);
            let decl_text = match b.kind {
                BindingKind::SelfField => format!("`{}` lives as long as `self`", b.name),
                BindingKind::Param => format!("`{}` is a parameter and outlives the call", b.name),
                _ => format!("`{}` is declared outside the training iteration", b.name),
            };
            if b.kind != BindingKind::SelfField {
                report = report.label(b.decl.clone(), decl_text);
            }
            if let Some((src, decl)) = source {
                report = report.label(decl, format!("`{}` carries the autograd graph", f.bindings[src].name));
            }
            if let Some((span, text)) = f.iteration_label(iteration) {
                report = report.label(span, text);
            }
            // The chain of calls down to the store: one label per hop.
            for hop in through.into_iter().flat_map(crate::graph::Through::hops) {
                let text = match &hop.inner {
                    Some(next) => format!("`{}` passes it to `{}`", hop.callee, next.callee),
                    None => format!("`{}` stores it in `{}` here", hop.callee, hop.target),
                };
                if cx.file().is_some_and(|file| file.path == hop.file) {
                    report = report.label(hop.span.clone(), text);
                } else {
                    report.elsewhere.push((hop.file.clone(), hop.line, text));
                }
            }
            report = report
                .help(format!(
                    "store `{}` or a host value such as `{}` instead",
                    crate::frameworks::fill(f.spec.detach_fix, &fix_on),
                    crate::frameworks::fill(f.spec.scalar_fix, &fix_on)
                ))
                .note("a stored tensor keeps the autograd graph it was computed with, so every iteration adds one more graph that is never freed");
            let text = cx.snippet(&value_span).to_string();
            if through.is_none()
                && let Some(s) = crate::frameworks::detach_suggestion(f.spec, value_span, &text)
            {
                report = report.suggest(s);
            }
            cx.report(report);
        }
    }
}
