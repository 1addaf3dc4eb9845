//! `accumulated_loss_tensor`: a graph-carrying value folded into a binding that outlives the
//! training iteration.

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{CallKind, FnModel, Iteration, Span, Store, Taint, TrainingCallKind};
use crate::rule::{Group, Rule, RuleMeta};
use petgraph::graph::NodeIndex;

pub struct AccumulatedLossTensor;

pub static META: RuleMeta = RuleMeta {
    id: "accumulated_loss_tensor",
    summary: "a loss tensor is summed across training iterations",
    default_level: Level::Warn,
    group: Group::Stable,
    docs: r#"### What it does
Finds a value that carries an autograd graph (a loss, a model output) folded into a binding that
lives longer than one iteration of the loop that runs backward: `total = (total + &loss)?`,
`total += &loss`, `total = total.add(&loss)?`, `running = running + loss`, a sum kept in an
`Option` (`total = Some(match total { Some(t) => t + loss, None => loss })`), also through a method
of the crate that keeps the sum (`stats.update(&loss)?` with `self.total = (&self.total + loss)?`,
also on a value shared behind `Rc<RefCell<..>>` or `Arc<Mutex<..>>`: `log.borrow_mut().record(..)`),
a closure bound before the loop that the loop calls (`let mut record = |l: &Tensor| total =
(&total + l)?; .. record(&loss)?`), and an entry of a map (`*metrics.entry("loss")
.or_insert_with(..) += &loss`, also through a local bound to the entry: `let e =
self.sums.entry(name).or_insert_with(|| loss.zeros_like()); *e = e.clone() + loss`), or an entry
blended from the one it replaces (a memory bank keyed by item id: `let old = self.bank.remove(&id);
self.bank.insert(id, (old * m + row * (1.0 - m))?)`, handed an encoder's output).

### Why is this bad?
The sum is itself a node of the autograd graph, and it holds on to every summand: each
iteration's whole graph (activations included) stays alive until the sum is dropped. Memory grows
every step until the process runs out. Measured with candle 0.11 on an H200: +12.6 MB per step
for a small MLP; on CPU, 5 MB → 850 MB of RSS in 400 steps.

Also finds a recurrent state whose new value is computed from the old one by a forward pass
(`h = (wx.forward(&x)? + wh.forward(&h)?)?.tanh()?`, or a field, local or one layer's element
written from a local of the step: `let h = ..self.w_h.forward(&self.h)?..; ..; self.h = h;`,
`hs[i] = h.clone()`) when nothing cuts it: each iteration's graph
links to every earlier one. For such a state no automatic fix is offered: cutting the new value
would stop the gradients that train `wx` and `wh`. Cut the incoming state once per training
iteration instead. The same holds for a state a method of the crate keeps in its receiver on every
call (`self.h = self.cell.step(x, &self.h)?` in `fn forward_chunk(&mut self, ..)`, or the last of
the states `self.lstm.seq_init(&chunk, &init)?` runs a candle cell over a chunk from), called once
per training iteration on a model that outlives it (also through fields of the crate's types,
`self.layer.run(x)` reaching `self.cell.step(x)`): reported at the call, unless the method cuts
the state first (`self.h = self.h.detach()`, or calls a method of its own type that starts it
afresh on every path, `self.reset()?` with `self.state = self.lstm.zero_state(1)?`; not one that only
multiplies it by a mask of finished episodes, `self.h = self.h.broadcast_mul(&keep)?`, which computes the
new state from the old one), the loop resets it (`model.reset_state()`, with the same proviso) or cuts
the field it is kept in (`model.h = model.h.detach()`; a state kept in several fields, such as a
two-rate net's `fast` and `slow` tiers, only when every one of them is cut). So does a training-step method that
carries its state to its next call through a local its loop folds (`let (mut h, mut c) =
self.carry.take().unwrap(); for x in xs { (h, c) = self.cell.forward(x, &h, &c)?; } ..;
self.carry = Some((h, c));`) or takes it out with a method of its own (`let s = self.take_state()?;
.. self.state = Some(last);`), reported at that write unless the local starts from a cut. A
cell stepped over the elements of a window (`for x in xs { s = self.lstm.step(x, &s)?; }`) is one
forward pass over it, whose last state carries its graph. A state written through a mutable
reference that a method of the crate hands out (`let s = store.entry_for(user)?; s.h = next;`
with `fn entry_for(&mut self, ..) -> Result<&mut Entry>`) is kept in that method's receiver. A state handed through a function of the
crate declared to return a struct of tensors (candle's `LSTMState`, or the crate's own `struct
Carry { h: Tensor, c: Tensor }`) carries whatever part of it that function does not cut
(`LSTMState { h: s.h.detach(), c: s.c.clone() }` cuts only `h`). So does a
method whose training loop calls another method of its own type that keeps a state in `self`
(`for xs in windows { let loss = self.unroll(xs)?; self.opt.backward_step(&loss)?; }`), unless
the loop cuts that field. A state kept only when a `training` flag is on counts on every call
that passes `true` (`net.forward(&x, true)`), and on none that passes `false`; likewise one kept
in the arm of one variant of a mode (`match mode { Mode::Train => self.bn.forward_train(&h), ..
}`) on the calls that pass that variant. `self.step(..)`
in a method of a type that defines `step` is that method, not an optimizer's. States kept one per layer may be cut
element by element (`for h in self.hs.iter_mut() { *h = h.detach(); }`, an index loop over
`0..hs.len()`, `hs.iter().map(|h| h.detach()).collect()`), or started afresh by a method of
any name (`agent.start_episode()` with `self.mem = self.core.zero_state(1)?`); a method named like
a reset that does nothing (`fn reset_filter(&mut self) {}`) starts nothing afresh. Also reported at
the call: a state a function keeps in a struct it is lent (`unroll(&cells, &mut st, &x)`; also
through a method of that struct, `log.record(logits)` in `fn step_loss(&self, .., log: &mut Log)`,
unless the function resets it first; not a rollout buffer lent to the collection step,
`agent.rollout(.., &mut buf)` pushing into `buf.log_probs`, that the caller empties every
iteration with a method of its type that empties those fields, `buf.clear()`), and a
running statistic a layer keeps of a graph-carrying argument (`self.running = (&self.running *
m + z.mean_keepdim(0)? * (1.0 - m))?` with `z` a forward pass's output; also kept by a helper
method the layer hands the batch statistics, `self.update_stats(&z.mean_keepdim(0)?)`; also when
kept only under a flag the caller passes, `if train { self.running = .. }`, on the calls that pass
`true`; `z` may come from a hand-written model whose weights are `Var` fields of its own,
`weights: Vec<Var>`), shadow copies a mean
teacher blends from the student's variables (`for (s, v) in self.shadows.iter_mut().zip(vars) {
*s = ((&*s * d)? + (v.as_tensor() * (1.0 - d))?)?; }` with `vars: &[Var]`, or with the variables held
in a field, `self.sources.iter()` with `sources: Vec<Var>`; or kept by name and
blended from the `VarMap` it is handed, `if let Some(avg) = self.avgs.get_mut(name) { *avg = .. }`
over `vm.data().lock()`, or from the one it holds (`varmap: VarMap`, a target network by name
updated through `let target = self.targets.get_mut(name).expect(..)`); also an average of a
trainable model's weights, `teacher.update(&student)` blending the tensors a getter such as
`fn weights(&self) -> Vec<&Tensor>` hands on into tensor fields; also an average of a variable
kept by a method that trains, `self.avg = ((&self.avg * 0.99)? + (self.emb.as_tensor() * 0.01)?)?`
after `self.opt.backward_step(&loss)?`), a state updated on
every k-th call only (`if t % self.period == 0 { self.slow = .. }`), and a log a method pushes
graph-carrying values into (`self.history.push(preds)` in a monitor's `observe`; also a norm
of each trainable variable it is handed, pushed into histories walked beside them, `for (h, v) in
self.norms.iter_mut().zip(vars) { if let Some(g) = grads.get(v) { .. h.push(v.sqr()?.sum_all()?) } }`;
not a snapshot of a variable, `self.snapshots.push(self.image.as_tensor().copy()?)`, whose graph
is that variable alone;
also in a method that is a training step of its own, `fn update(&mut self, ..)` running backward, or in a
loop that runs backward every iteration, `for x in xs { let (l, y) = self.step(x)?;
self.progress.push(y); }`) that no method
of its type empties (`clear()`, `drain(..)`, `std::mem::take`). A log of values a backward of
the caller already runs on (`backward_step(&loss)?; self.metrics.record(&loss)`, for an epoch's
mean) is reported even when another method of its type empties it, where the caller empties it
only now and then (`self.metrics.end_epoch()` behind `if step % steps_per_epoch == 0`): every
graph pushed since stays alive until then. Not when the caller empties it wherever it pushes,
nor an on-policy buffer, whose values a later backward runs on. A loop over a collection of trait
objects (`for m in self.metrics.iter_mut() { m.update(&loss)? }` with `metrics: Vec<Box<dyn
Metric>>`, or a local annotated so; also walked with an iterator method, `self.callbacks
.iter_mut().try_for_each(|c| c.on_step(&ctx))`) calls every impl it holds: it keeps what any of them keeps,
in the collection. So does an element of a local collected from a closure that builds each one
(`let mut crew: Vec<_> = seeds.map(|s| { let critic = Critic::new(..)?; (s, critic) }).collect()`,
walked as `for (s, critic) in crew.iter_mut()`): its type is the one the closure builds. In dfdx, a prediction made on a
taped input (`model.forward(x.leaky_trace())`, also inside a model's own method that attaches the
tape itself, `model.predict(x)`) carries its tape and is kept the same way. A reset method of the
crate counts for the fields it starts afresh, through the reset calls it makes in turn: a
`clear_buffers()` that empties a window buffer leaves the recurrent state beside it chaining,
while `self.state.reset(..)` starting every part of `state` afresh resets a state kept there.
A state written only under a condition (a key/value cache behind a `use_cache` flag, a state
kept with its graph only when a `training` argument is `true` and the caller passes `false`) is
not reported.

Not flagged: sums of host scalars, sums of detached tensors, a loss summed over the inner steps
of one sample (decoder steps) that is backpropagated in the same outer iteration, gradient
accumulation whose sum the backward runs on and empties (`acc.take().unwrap().backward()`; also
behind the crate's methods: `acc.add(&loss)` and then `if let Some(total) = acc.ready() {
opt.backward_step(&total)? }` with a `ready` that takes the sum out, or an `add` that flushes the
sum into a backward every `k` calls, or a method of `self` that takes the sum, backpropagates it
and returns its value as a number, `self.close_window()`), and a value cut
or replaced once per training iteration (truncated backpropagation through time: `h = h.detach();`
at the top of each chunk; also by a method of its own the step calls, `self.close_window()` giving
`self.state` a detached value once a window is full). A sum of losses emptied only now and then (`if step % 2000 == 0 {
running = zeros }`) is reported: every summand's graph stays alive until the reset.

burn (0.13 on) keeps its graph state in a store that every backward sweeps, so a running sum of
the losses backpropagated (or of their parts, or of metrics on the outputs they came from), made
before the backward, keeps a node of bookkeeping per step, not the summands' graphs (measured in
`experiments/burn-orphan-forwards/versions`: under 1.3 KB per step); it is left alone. Made after
the backward, on the graph it consumed, such a sum is left alone on burn 0.13 to 0.18, whose next
backward clears the whole store, and reported from 0.19 on, where a backward sweeps only what its
loss reaches and no later loss reaches the sum (measured on a DQN's `learn`, `self.q_ema =
self.q_ema.clone() + loss` after `loss.backward()`: flat on 0.16.1, about 0.2 MB a step on 0.20.1,
about 5 KB on 0.21.0; detached, flat). A sum in a loop that runs backward
of a forward no backward consumes (a second forward on a probe set, summed into a monitor with
`monitor.check(model.forward(monitor.probe()))`) is reported: the store frees no graph a value
still holds. So is a running statistic a method of the crate keeps in its receiver, called once
per training step, of a forward no backward consumes: a dashboard's smoothed Q computed by
`self.track_q(obs, act)` after the update (`self.q_ema = self.q_ema.clone() * 0.99 + q * 0.01`,
`q` a forward of the critic), or an EMA codebook handed a fresh encoder pass after the step
(`self.book.update(self.ae.encode(x), onehot)`). A statistic of what the loss was computed from, kept
before the backward, or a state the method hands back to its caller (a recurrent cell's output),
is swept with the graph; kept by a call made after the backward (`self.metrics.update(&forecast,
&y)` summing `(forecast - y).abs().mean()` into a field), the callee's ops hang on the consumed
graph and the state keeps them, with what they saved, for good. The same holds for a log a
method pushes such values into (`self.dice.push(soft_dice(logits, mask))` called after the
backward), unless some method of its type empties that log. A parameter typed on the inner
backend (`keys: Tensor<B::InnerBackend, 2>`) carries no graph. burn 0.12 and older, whose tensors own their graphs, are checked like candle.

### Example
```rust
let mut total = Tensor::zeros((), DType::F32, &dev)?;
for (x, y) in batches {
    let loss = loss::mse(&model.forward(&x)?, &y)?;
    opt.backward_step(&loss)?;
    total = (total + &loss)?;
}
```

### Use instead
```rust
let mut total = 0f32;
for (x, y) in batches {
    let loss = loss::mse(&model.forward(&x)?, &y)?;
    opt.backward_step(&loss)?;
    total += loss.to_scalar::<f32>()?;
}
```
(tch: `f64::try_from(&loss)?`; burn: `loss.into_scalar()`; or accumulate `loss.detach()`.)
"#,
};

impl Rule for AccumulatedLossTensor {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        // burn (0.13 on) keeps graph state in a store that every backward sweeps: a sum that
        // outlives the iteration holds a node of bookkeeping, not the summands' graphs
        // (`autodiff_ops_after_backward` reports that cost).
        // A sum of what no backward consumes (a second forward on a probe set, summed into a
        // monitor) keeps that graph alive all the same.
        let swept = f.spec().graph_swept_by_backward;
        // There, only a function that runs backward has anything to report (cheap: most burn
        // code is a library's, with no backward at all).
        if swept && !f.has_training_loop() && f.iteration_of(None).is_none() {
            return;
        }
        // Where a fold is reported: a call that keeps its sum in its receiver is reported once.
        let mut folds_at = Vec::new();
        for (_, value, target, how, span) in f.stores() {
            if !matches!(how, Store::Fold | Store::Assign) || !f.taint(value).has(Taint::GRAPH) {
                continue;
            }
            if swept && how != Store::Fold {
                continue;
            }
            let Some(binding) = f.binding_of(target) else { continue };
            // A state computed from its old value through a local of the step (`let h =
            // (wx.forward(x)? + wh.forward(&self.h)?)?.tanh()?; .. self.h = h;`, `hs[i] = h`)
            // is a fold too.
            // So is one that lives past the call, carried through a local the step's loop
            // folds it into (`let mut h = self.carry.clone(); for x in xs { h = cell.forward(x,
            // &h)?; } .. self.carry = h;`).
            // Or one a method of `self` hands back before the step's forward (`let s =
            // self.take_state()?; .. self.state = Some(last);`).
            if how == Store::Assign
                && !f.feeds_forward_through_locals(value, binding)
                && (f.binding(binding).kind() == crate::model::BindingKind::Local
                    || !f.feeds_forward_through_folds(value, binding))
                && (swept || !f.reads_field_back_through_own_method(value, binding, target))
            {
                continue;
            }
            let Some(iteration) = f.iteration_of(f.loop_of(value)) else { continue };
            if !f.outlives(binding, iteration) {
                continue;
            }
            // Only the old value carries a graph here (`*metrics.entry("tokens").or_default() +=
            // n as f64` beside a `"loss"` entry of the same map, one binding to the model): this
            // write chains nothing new in.
            if !f.adds_graph(value, binding) {
                continue;
            }
            // burn: what a backward consumes is swept (last: the walk over the losses costs most).
            // Not one computed after that backward, on the graph it consumed, where a backward
            // sweeps only what its loss reaches (burn 0.19 on, measured; see
            // `FnModel::computed_after_backward`): the sum hangs the consumed graph on a chain no
            // later loss reaches.
            if swept
                && f.graph_meets_backward(value)
                && !(f.spec().untrained_graphs_kept && f.computed_after_backward(value))
            {
                continue;
            }
            // burn: only sums come this far (above), and a value the sum feeds (`monitor.check(
            // student.forward(monitor.probe()))`, the probe set kept beside the sum) makes no chain.
            let recurrent = !swept && (f.feeds_forward(value, binding) || how == Store::Assign);
            // Cut or replaced once per training iteration: the chain through it is bounded by
            // one iteration (truncated backpropagation through time, also every k steps). A sum
            // of losses emptied only now and then (`if step % 2000 == 0 { log; running = zeros
            // }`) keeps every summand's graph until then.
            let cut =
                if recurrent { f.cut_within(binding, iteration) } else { f.cut_whenever(binding, iteration, target) };
            if cut {
                continue;
            }
            // Deliberate gradient accumulation: the sum is what a backward of this iteration
            // runs on, and it is emptied there (`loss_acc.take().unwrap().backward()`).
            // Also behind the crate's methods (`acc.add(&loss)`, then `if let Some(total) =
            // acc.ready() { opt.backward_step(&total)? }`, or an `add` that flushes every k calls).
            // Not a state taken out and put back (`let s = self.take_state()?; .. self.state =
            // Some(last)`): what the backward runs on is carried to the next call.
            if f.cleared_within(binding, iteration)
                && (f.loss_derives_from(binding) || f.emptied_into_backward(binding, iteration))
                && !f.reads_field_back_through_own_method(value, binding, target)
            {
                continue;
            }
            let source = f.graph_source(value, Some(binding));
            // The old value is the only graph the new one carries, and no forward pass runs on
            // it: nothing new is chained in per iteration (state handed through a task and back).
            // A call that makes a graph of its own (`total = (total + train_step(x, y)?)?`, the
            // step returning its loss) chains in a new one all the same.
            if source.is_none() && !recurrent && f.fresh_graph_source(value, binding).is_none() {
                continue;
            }
            let acc = f.binding(binding);
            let source_name = source.clone().map(|(b, _)| f.binding(b).name().to_string());
            let fresh = if source.is_none() && !recurrent { f.fresh_graph_source(value, binding) } else { None };
            // A forward pass's value node has no span of its own: nothing to point at then.
            let fresh = fresh.filter(|call| !call.is_empty());
            let shown = source_name
                .clone()
                .or_else(|| fresh.as_ref().map(|call| format!("{}(..)", cx.snippet(call))))
                .or_else(|| {
                    // burn: the summand no backward consumes, as written (`model.forward(probe)
                    // .mean()`), rather than a name it does not have.
                    let text = cx.snippet(f.span_of(value));
                    let summand = summand_after(text, acc.name()).unwrap_or(text);
                    (swept && !summand.is_empty() && !summand.contains('\n') && summand.len() <= 80)
                        .then(|| summand.to_string())
                });
            // A value kept inside a call of the crate has no text here: say what to do with it.
            let shown = shown.or_else(|| (!swept).then(|| "loss".to_string()));
            let mut report = Report::new(
                format!("`{}` accumulates a graph-carrying tensor across iterations", acc.name()),
                span.clone(),
                format!("`{}` keeps this iteration's autograd graph alive", acc.name()),
            )
            .label(acc.decl().clone(), format!("`{}` is declared outside the training iteration", acc.name()));
            if let Some((b, decl)) = source {
                report = report.label(decl, format!("`{}` carries the autograd graph", f.binding(b).name()));
            } else if let Some(call) = &fresh {
                report = report.label(call.clone(), "this returns a graph-carrying tensor");
            }
            if let Some((span, text)) = f.iteration_label(iteration) {
                report = report.label(span, text);
            }
            // A call of the crate that keeps the sum in its receiver: where it does.
            if let Some((file, line, at, label)) =
                f.stateful_calls_always().find(|c| c.span() == span).and_then(|c| c.kept_at())
            {
                report = report.label_in(cx, (file, *line, at.clone()), label.clone());
            }
            let fold = Fold::of(cx.snippet(span), cx.snippet(f.span_of(value)), acc.name(), recurrent);
            report = report.help(help(f, fold, acc.name(), shown.as_deref())).note(match fold {
                Fold::Recurrent => "the new state is computed from the old one, so each iteration's graph links to every earlier one; cutting the new state instead would stop the gradients that train the parameters of this forward pass",
                Fold::Sum => "every summand stays reachable from the sum, so each iteration's whole graph (activations included) is kept until the sum is dropped",
                Fold::Other => "every value folded into it stays reachable, so each iteration's whole graph (activations included) is kept until it is dropped",
            });
            // A recurrent state is never cut where it is computed: that removes the gradients
            // that reach the parameters of its forward pass. The fix is a human's choice.
            // Cutting a whole concatenation also cuts what a later use of it would train:
            // offered, not applied by machine.
            if fold != Fold::Recurrent
                && let Some(mut s) = suggestion(f, cx, value, acc.name())
            {
                if fold == Fold::Other {
                    s.applicability = crate::Applicability::MaybeIncorrect;
                }
                report = report.suggest(s);
            }
            cx.report(report);
            folds_at.push(span.clone());
        }
        state_kept_by_a_call(f, cx, &folds_at);
        pushed_in_the_step(f, cx);
    }
}

/// A training step of its own (`fn update(&mut self, ..)` running backward) that pushes a
/// graph-carrying value into a field of `self` that no method of its type empties (candle, tch,
/// burn 0.12 and older: the value holds its step's whole graph).
fn pushed_in_the_step(f: &FnModel, cx: &mut Context<'_>) {
    for (span, field, value) in f.pushed_into_unemptied_fields() {
        // A snapshot of a variable (`self.w.as_tensor().copy()?`): its graph is the variable.
        if f.holds_only_params(value) {
            continue;
        }
        let mut report = Report::new(
            format!("`{field}` keeps a graph-carrying tensor from every training step"),
            span.clone(),
            format!("`{field}` keeps this step's autograd graph alive"),
        );
        if let Some((at, text)) = f.iteration_label(Iteration::Call) {
            report = report.label(at, text);
        }
        // What is pushed, as written (`loss.clone()`); a tuple or a struct holding it is cut by
        // hand.
        let pushed = cx.snippet(f.span_of(value));
        let pushed = pushed.strip_suffix(".clone()").unwrap_or(pushed);
        let shown = if pushed.is_empty() || pushed.contains('\n') || pushed.len() > 60 { "x" } else { pushed };
        report = report
            .help(format!(
                "push `{}` or a host value such as `{}` instead, or empty `{field}` once per training step",
                crate::frameworks::fill(f.spec().detach_fix, shown),
                crate::frameworks::fill(f.spec().scalar_fix, shown)
            ))
            .note("each call runs a training step and pushes a value that holds its whole graph into a field that no method of its type empties, so every step's graph is kept");
        if let Some(s) = suggestion(f, cx, value, field) {
            report = report.suggest(s);
        }
        cx.report(report);
    }
}

/// A method of the crate that keeps a graph-carrying state in its receiver (`self.h =
/// self.cell.step(x, &self.h)?` in `fn forward_chunk(&mut self, ..)`), called once per training
/// iteration on a model that outlives it and is not reset in it: as for a state kept in a local,
/// each iteration's graph links to every earlier one.
fn state_kept_by_a_call(f: &FnModel, cx: &mut Context<'_>, folds_at: &[Span]) {
    for call in f.stateful_calls_always() {
        let (span, in_loop, receiver, callee) = (call.span(), call.in_loop(), call.receiver(), call.callee());
        // Reported as a fold above, or (burn) as a forward whose outputs the callee keeps for
        // good (`autodiff_forward_without_backward`): one finding per call.
        if folds_at.contains(span)
            || (f.spec().graph_swept_by_backward
                && f.calls_of(CallKind::Forward).any(|e| e.span() == span && f.forward_kept_for_good(e).is_some()))
        {
            continue;
        }
        let Some(iteration) = f.iteration_of(in_loop) else { continue };
        // A callee that runs the backward itself is a training step of its own: what it keeps
        // is judged there.
        if f.training_calls().iter().any(|c| {
            matches!(c.kind(), TrainingCallKind::Backward | TrainingCallKind::BackwardStep) && c.span() == span
        }) {
            continue;
        }
        // Where the state lives: the receiver, or what the call lends by `&mut` (`unroll(&cells,
        // &mut st, &x)`); each must outlive the iteration and not start afresh in it.
        let cut = |b| f.fields_cut_within(b, call.kept_fields(), iteration);
        // Emptied by a call of the crate whose contents a backward consumes: gradient
        // accumulation behind methods (see above).
        let consumed = |b| f.cleared_within(b, iteration) && f.emptied_into_backward(b, iteration);
        let lasting = |b| f.outlives(b, iteration) && !f.reset_within(b, iteration) && !cut(b) && !consumed(b);
        // `self.unroll(..)` in a method whose own loop trains: the state is kept in `self`, by the
        // field the callee writes, unless this loop cuts or resets that field.
        if call.receiver_self() && call.always() {
            if !call.kept_fields().is_empty()
                && !call.kept_fields().iter().all(|field| f.self_field_cut_within(field, iteration))
            {
                report_kept_in_self(f, cx, call, iteration);
            }
            continue;
        }
        let in_receiver = call.always().then(|| receiver.and_then(|r| f.receiver_binding(r))).flatten();
        let Some(b) = in_receiver.into_iter().chain(call.always_in().iter().copied()).find(|&b| lasting(b)) else {
            continue;
        };
        let kept_in = f.binding(b);
        let mut report = Report::new(
            format!("`{callee}` keeps each training iteration's graph in the state of `{}`", kept_in.name()),
            span.clone(),
            format!(
                "`{callee}` keeps a graph-carrying value in {}",
                if Some(b) == in_receiver { "its receiver's state" } else { "what it is lent" }
            ),
        );
        if kept_in.kind() == crate::model::BindingKind::Local {
            report = report.label(
                kept_in.decl().clone(),
                format!("`{}` is declared outside the training iteration", kept_in.name()),
            );
        }
        if let Some((span, text)) = f.iteration_label(iteration) {
            report = report.label(span, text);
        }
        if let Some((file, line, at, label)) = call.kept_at() {
            report = report.label_in(cx, (file, *line, at.clone()), label.clone());
        }
        cx.report(if call.kept_by_push() {
            pushed_help(report, call.kept_until_emptied())
        } else {
            report
                .help("cut the kept state once per training iteration (for a field `h`: `self.h = self.h.detach()` at the start of the call), or reset it before each sequence")
                .note("the new state is computed from the old one inside the call, so each iteration's graph links to every earlier one and is never freed")
        });
    }
}

/// [`state_kept_by_a_call`]'s finding for a state kept in the caller's own `self`.
fn report_kept_in_self(f: &FnModel, cx: &mut Context<'_>, call: &crate::model::StateCall, iteration: Iteration) {
    let callee = call.callee();
    let mut report = Report::new(
        format!("`{callee}` keeps each training iteration's graph in the state of `self`"),
        call.span().clone(),
        format!("`{callee}` keeps a graph-carrying value in `self`"),
    );
    if let Some((span, text)) = f.iteration_label(iteration) {
        report = report.label(span, text);
    }
    if let Some((file, line, at, label)) = call.kept_at() {
        report = report.label_in(cx, (file, *line, at.clone()), label.clone());
    }
    cx.report(if call.kept_by_push() {
        pushed_help(report, call.kept_until_emptied())
    } else {
        report
            .help("cut the kept state once per training iteration (for a field `h`: `self.h = self.h.detach()` in the loop, or at the start of the call)")
            .note("the new state is computed from the old one inside the call, so each iteration's graph links to every earlier one and is never freed")
    });
}

/// Help and note for a state kept by pushing into a collection that nothing empties.
/// `until_emptied`: the collection is emptied now and then by another method of its type, and
/// what is pushed is a value a backward already runs on (a log of the losses for an epoch's mean).
fn pushed_help(report: Report, until_emptied: bool) -> Report {
    if until_emptied {
        return report
            .help("keep a host number instead (`loss.to_scalar::<f32>()?`), or push a detached value (`loss.detach()`)")
            .note("each call pushes a value whose graph a backward already ran on; the collection is emptied only now and then, so every graph pushed since the last emptying stays alive");
    }
    report
        .help("push a value that carries no graph (`.detach()`, or a host number), or empty the collection once per training iteration")
        .note("each call pushes a value that holds its iteration's whole graph, and nothing empties the collection, so every iteration's graph is kept")
}

/// What a fold into the accumulator is, for the help text and whether a fix may be offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fold {
    /// `total = total + loss`, `total += &loss`, `total.add(&loss)`.
    Sum,
    /// The old value is fed to a forward pass: a hidden state.
    Recurrent,
    /// Anything else (`Tensor::cat(&[&feats, &y], 0)`, `stack`, products).
    Other,
}

impl Fold {
    fn of(store: &str, value: &str, acc: &str, recurrent: bool) -> Fold {
        if recurrent {
            return Fold::Recurrent;
        }
        let compound = store.trim_start().strip_prefix(acc).is_some_and(|r| {
            let r = r.trim_start();
            r.starts_with("+=") || r.starts_with("-=")
        });
        if compound || summand_after(unwrapped(value), acc).is_some() { Fold::Sum } else { Fold::Other }
    }
}

/// `(a + b)?` → `a + b`: the expression inside `?` and enclosing parentheses.
fn unwrapped(mut text: &str) -> &str {
    loop {
        text = text.trim();
        if let Some(t) = text.strip_suffix('?') {
            text = t;
        } else if let Some(t) = text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
            text = t;
        } else {
            return text;
        }
    }
}

/// The help text that fits the fold.
fn help(f: &FnModel, fold: Fold, acc: &str, shown: Option<&str>) -> String {
    let Some(shown) = shown else {
        return format!(
            "keep only values without a graph in `{acc}`: cut what it keeps (`{}`) or keep a host scalar",
            crate::frameworks::fill(f.spec().detach_fix, "value")
        );
    };
    let detached = crate::frameworks::fill(f.spec().detach_fix, shown);
    match fold {
        Fold::Sum => format!(
            "accumulate a host scalar instead: `{acc} += {}`, or `{detached}`",
            crate::frameworks::fill(f.spec().scalar_fix, shown),
        ),
        Fold::Recurrent => format!(
            "cut the state once per training iteration, before its first use: `{acc} = {};` at the top of the loop that runs backward",
            crate::frameworks::fill(f.spec().detach_fix, acc),
        ),
        Fold::Other => format!("keep only values without a graph in `{acc}`: use `{detached}` where `{shown}` is kept"),
    }
}

/// The machine fix: cut the graph of the stored value (burn: of the summand).
fn suggestion(f: &FnModel, cx: &Context<'_>, value: NodeIndex, acc: &str) -> Option<crate::Suggestion> {
    let mut value_span = f.span_of(value).clone();
    let mut text = cx.snippet(&value_span).to_string();
    // burn: cut the summand, not the sum — `(total + loss).detach()` after backward would
    // still record the addition on the consumed graph.
    if f.spec().graph_swept_by_backward
        && let Some(summand) = summand_after(&text, acc)
    {
        let at = value_span.start + (summand.as_ptr() as usize - text.as_ptr() as usize);
        value_span = at..at + summand.len();
        text = summand.to_string();
    }
    crate::frameworks::detach_suggestion(f.spec(), value_span, &text)
}

/// The right operand of `acc + x`, `acc - x` or `acc.add(x)` as written, when the left one is
/// the accumulator.
fn summand_after<'t>(text: &'t str, acc: &str) -> Option<&'t str> {
    let rest = text.strip_prefix(acc)?.trim_start();
    let rest = match rest.strip_prefix(['+', '-']) {
        Some(r) => r.trim_start(),
        None => rest.strip_prefix(".add(").or_else(|| rest.strip_prefix(".sub("))?.strip_suffix(')')?,
    };
    (!rest.is_empty() && rest.len() == rest.trim_end().len() && !rest.contains(',')).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    /// candle: a mean teacher blended from the student's variables without `detach`, updated by
    /// a training step written as a closure, warmed up for a few steps before the training loop.
    const MEAN_TEACHER_CLOSURE: &str = r#"
use candle_core::{Result, Tensor, Var};
use candle_nn::{AdamW, Optimizer, VarMap};
pub struct Teacher { weights: Vec<Tensor>, decay: f64 }
impl Teacher {
    pub fn update(&mut self, varmap: &VarMap) -> Result<()> {
        let vars = varmap.all_vars();
        for (t, v) in self.weights.iter_mut().zip(vars.iter()) {
            *t = (t.affine(self.decay, 0.0)? + v.as_tensor().affine(1.0 - self.decay, 0.0)?)?;
        }
        Ok(())
    }
}
fn train(varmap: &VarMap, opt: &mut AdamW, mut teacher: Teacher, data: &[Tensor]) -> Result<()> {
    let vb = candle_nn::VarBuilder::from_varmap(varmap, candle_core::DType::F32, &candle_core::Device::Cpu);
    let student = Student::new(vb)?;
    let mut step = |x: &Tensor, teacher: &mut Teacher| -> Result<()> {
        let loss = student.forward(x)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        teacher.update(varmap)?;
        Ok(())
    };
    for i in 0..3 {
        step(&data[i], &mut teacher)?;
    }
    for epoch in 0..100 {
        for x in data {
            step(x, &mut teacher)?;
        }
    }
    Ok(())
}
"#;

    #[test]
    fn reports_a_state_kept_by_a_call_in_a_training_step_closure() {
        assert_eq!(count("accumulated_loss_tensor", None, MEAN_TEACHER_CLOSURE), 1);
        // Detached: nothing chains.
        let detached = MEAN_TEACHER_CLOSURE.replace("v.as_tensor().affine(", "v.as_tensor().detach().affine(");
        assert_ne!(detached, MEAN_TEACHER_CLOSURE);
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
    }

    /// A mean teacher (candle): shadow copies blended from the student's variables, handed as a
    /// slice of `Var`s, in a method called once per training step.
    const EMA_OF_VARS: &str = r#"
use candle_core::{DType, Device, Result, Tensor, Var};
use candle_nn::{linear, Module, Optimizer, VarBuilder, VarMap, SGD};
pub struct Shadow { shadows: Vec<Tensor>, decay: f64 }
impl Shadow {
    pub fn update(&mut self, vars: VARS) -> Result<()> {
        for (shadow, var) in self.shadows.iter_mut().zip(vars) {
            *shadow = ((&*shadow * self.decay)? + (var.as_tensor() * (1.0 - self.decay))?)?;
        }
        Ok(())
    }
}
pub fn train(dev: &Device) -> Result<()> {
    let vm = VarMap::new();
    let model = linear(4, 1, VarBuilder::from_varmap(&vm, DType::F32, dev))?;
    let vars = vm.all_vars();
    let mut opt = SGD::new(vars.clone(), 0.05)?;
    let mut ema = Shadow { shadows: vars.iter().map(|v| v.as_tensor().copy()).collect::<Result<_>>()?, decay: 0.99 };
    for _ in 0..10_000 {
        let loss = model.forward(&Tensor::randn(0f32, 1.0, (8, 4), dev)?)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        ema.update(&vars)?;
    }
    Ok(())
}
"#;

    /// The same average kept by name, blended from the variables of the `VarMap` it is handed.
    const EMA_OF_VARMAP: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Module, Optimizer, VarBuilder, VarMap, SGD};
use std::collections::HashMap;
pub struct Shadow { avgs: HashMap<String, Tensor>, decay: f64 }
impl Shadow {
    pub fn update(&mut self, vm: &VarMap) -> Result<()> {
        let data = vm.data().lock().unwrap();
        for (name, var) in data.iter() {
            if let Some(avg) = self.avgs.get_mut(name) {
                *avg = ((&*avg * self.decay)? + (VAR * (1.0 - self.decay))?)?;
            }
        }
        Ok(())
    }
}
pub fn train(dev: &Device) -> Result<()> {
    let vm = VarMap::new();
    let model = linear(4, 1, VarBuilder::from_varmap(&vm, DType::F32, dev))?;
    let mut opt = SGD::new(vm.all_vars(), 0.05)?;
    let mut ema = Shadow { avgs: HashMap::new(), decay: 0.99 };
    for _ in 0..10_000 {
        let loss = model.forward(&Tensor::randn(0f32, 1.0, (8, 4), dev)?)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        ema.update(&vm)?;
    }
    Ok(())
}
"#;

    #[test]
    fn an_ema_of_a_varmaps_variables_kept_by_name_chains_every_update() {
        let kept = EMA_OF_VARMAP.replace("VAR", "var.as_tensor()");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![25]);
        let cut = EMA_OF_VARMAP.replace("VAR", "var.as_tensor().detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    #[test]
    fn an_ema_of_a_slice_of_variables_chains_every_update() {
        for vars in ["&[Var]", "&Vec<Var>"] {
            let src = EMA_OF_VARS.replace("VARS", vars);
            assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![22], "{vars}");
        }
        // Blended from a slice of plain tensors into shadows made by `detach`: nothing is tracked.
        let plain = EMA_OF_VARS
            .replace("VARS", "&[Tensor]")
            .replace("var.as_tensor()", "var")
            .replace("v.as_tensor().copy()", "v.as_tensor().detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &plain), 0);
    }

    /// A weight EMA kept in a local of the training function and blended element by element
    /// (`*e = ..` through `iter_mut`), from the variables of a `VarMap` the function made.
    const EMA_IN_A_LOCAL: &str = r#"
use candle_core::{DType, Device, Result, Tensor, Var};
use candle_nn::{linear, Module, Optimizer, VarBuilder, VarMap, SGD};
fn main() -> Result<()> {
    let dev = Device::Cpu;
    let varmap = VarMap::new();
    let model = linear(4, 1, VarBuilder::from_varmap(&varmap, DType::F32, &dev))?;
    let params: PARAMS = {
        let data = varmap.data().lock().unwrap();
        ["weight", "bias"].iter().map(|n| data[*n].clone()).collect()
    };
    let mut opt = SGD::new(varmap.all_vars(), 0.05)?;
    let mut ema: Vec<Tensor> = params.iter().map(|p| INIT).collect();
    for step in 0..10_000 {
        let loss = model.forward(&Tensor::randn(0f32, 1.0, (8, 4), &dev)?)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        for (e, p) in ema.iter_mut().zip(params.iter()) {
            *e = ((&*e * 0.99)? + (SRC * 0.01)?)?;
        }
    }
    Ok(())
}
"#;

    #[test]
    fn an_ema_kept_in_a_local_and_blended_through_iter_mut_chains_every_step() {
        let src = |params: &str, init: &str, src: &str| {
            EMA_IN_A_LOCAL.replace("PARAMS", params).replace("INIT", init).replace("SRC", src)
        };
        // The variables read out of the store the function made (`Vec<_>`), or annotated.
        for params in ["Vec<_>", "Vec<Var>"] {
            let kept = src(params, "p.as_tensor().clone()", "p.as_tensor()");
            assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![18], "{params}");
        }
        // Detached on the way in and at every blend: nothing is tracked.
        let cut = src("Vec<_>", "p.as_tensor().detach()", "p.as_tensor().detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
        // The variables handed out as they are stay leaves: keeping them holds no graph.
        assert_eq!(count("retained_graph_output", None, &cut), 0);
    }

    /// Shadow weights kept in a map by name, blended from named variables handed as a slice of
    /// `(String, Var)` pairs (the variable type inside a tuple of a slice).
    const EMA_OF_NAMED_VARS: &str = r#"
use std::collections::BTreeMap;
use candle_core::{DType, Device, Result, Tensor, Var};
use candle_nn::{linear, Module, Optimizer, VarBuilder, VarMap, SGD};
pub struct NamedEma { shadow: BTreeMap<String, Tensor>, decay: f64 }
impl NamedEma {
    pub fn update(&mut self, named: NAMED) -> Result<()> {
        for (name, var) in named {
            let prev = &self.shadow[name];
            let next = (prev.affine(self.decay, 0.0)? + SRC.affine(1.0 - self.decay, 0.0)?)?;
            self.shadow.insert(name.clone(), next);
        }
        Ok(())
    }
}
pub fn train(vm: &VarMap, named: Vec<(String, Var)>, dev: &Device) -> Result<()> {
    let model = linear(4, 1, VarBuilder::from_varmap(vm, DType::F32, dev))?;
    let mut opt = SGD::new(vm.all_vars(), 0.05)?;
    let shadow = named.iter().map(|(n, v)| (n.clone(), v.as_tensor().detach())).collect();
    let mut ema = NamedEma { shadow, decay: 0.99 };
    for _ in 0..10_000 {
        let loss = model.forward(&Tensor::randn(0f32, 1.0, (8, 4), dev)?)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        ema.update(&named)?;
    }
    Ok(())
}
"#;

    #[test]
    fn an_ema_of_named_variables_in_a_map_chains_every_update() {
        for named in ["&[(String, Var)]", "&Vec<(String, candle_core::Var)>"] {
            let src = EMA_OF_NAMED_VARS.replace("NAMED", named).replace("SRC", "var.as_tensor()");
            assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![24], "{named}");
        }
        let cut = EMA_OF_NAMED_VARS.replace("NAMED", "&[(String, Var)]").replace("SRC", "var.as_tensor().detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
        // Plain tensors by name (`&[(String, Tensor)]`): nothing is tracked.
        let plain = EMA_OF_NAMED_VARS.replace("NAMED", "&[(String, Tensor)]").replace("SRC", "var");
        assert_eq!(count("accumulated_loss_tensor", None, &plain), 0);
        // `Var::as_detached_tensor` is a detached copy.
        let detached =
            EMA_OF_NAMED_VARS.replace("NAMED", "&[(String, Var)]").replace("SRC", "var.as_detached_tensor()");
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
    }

    /// A Polyak target blended from variables a crate function hands out (`-> Vec<Var>`).
    const TARGET_FROM_VARS_OF: &str = r#"
use candle_core::{DType, Device, Result, Tensor, Var};
use candle_nn::{linear, Module, Optimizer, VarBuilder, VarMap, SGD};
fn vars_of(vm: &VarMap, names: &[String]) -> RET {
    let data = vm.data().lock().unwrap();
    names.iter().map(|n| data[n].clone()).collect()
}
pub struct Target { weights: Vec<Tensor> }
impl Target {
    pub fn soft_update(&mut self, vm: &VarMap, names: &[String], tau: f64) -> Result<()> {
        let vars = vars_of(vm, names);
        for (w, v) in self.weights.iter_mut().zip(vars.iter()) {
            *w = ((&*w * (1.0 - tau))? + (SRC * tau)?)?;
        }
        Ok(())
    }
}
pub fn train(vm: &VarMap, names: Vec<String>, mut target: Target, dev: &Device) -> Result<()> {
    let model = linear(4, 1, VarBuilder::from_varmap(vm, DType::F32, dev))?;
    let mut opt = SGD::new(vm.all_vars(), 0.05)?;
    for _ in 0..10_000 {
        let loss = model.forward(&Tensor::randn(0f32, 1.0, (8, 4), dev)?)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        target.soft_update(vm, &names, 0.01)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_target_blended_from_variables_a_crate_function_returns_chains_every_update() {
        let src = |ret: &str, src: &str| TARGET_FROM_VARS_OF.replace("RET", ret).replace("SRC", src);
        assert_eq!(
            crate::rules::testing::lines("accumulated_loss_tensor", &src("Vec<Var>", "v.as_tensor()")),
            vec![24]
        );
        assert_eq!(count("accumulated_loss_tensor", None, &src("Vec<Var>", "v.as_detached_tensor()")), 0);
        // Plain copies handed out (`-> Vec<Tensor>`, `data[n].as_tensor().detach()`): untracked.
        let plain = src("Vec<Tensor>", "v").replace("data[n].clone()", "data[n].as_tensor().detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &plain), 0);
    }

    /// The same shadow copies, the variables held in a field of the struct that blends them
    /// (`sources: Vec<Var>`, given once at construction).
    const EMA_OF_VAR_FIELD: &str = r#"
use candle_core::{DType, Device, Result, Tensor, Var};
use candle_nn::{linear, Module, Optimizer, VarBuilder, VarMap, SGD};
pub struct Shadow { shadows: Vec<Tensor>, sources: SOURCES, decay: f64 }
impl Shadow {
    pub fn update(&mut self) -> Result<()> {
        for (shadow, src) in self.shadows.iter_mut().zip(self.sources.iter()) {
            *shadow = ((&*shadow * self.decay)? + (SRC * (1.0 - self.decay))?)?;
        }
        Ok(())
    }
}
pub fn train(dev: &Device) -> Result<()> {
    let vm = VarMap::new();
    let model = linear(4, 1, VarBuilder::from_varmap(&vm, DType::F32, dev))?;
    let mut opt = SGD::new(vm.all_vars(), 0.05)?;
    let shadows = vm.all_vars().iter().map(|v| v.as_tensor().detach()).collect();
    let mut ema = Shadow { shadows, sources: vm.all_vars().into_iter().map(Into::into).collect(), decay: 0.99 };
    for _ in 0..10_000 {
        let loss = model.forward(&Tensor::randn(0f32, 1.0, (8, 4), dev)?)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        ema.update()?;
    }
    Ok(())
}
"#;

    #[test]
    fn an_ema_of_variables_held_in_a_field_chains_every_update() {
        for sources in ["Vec<Var>", "Vec<candle_core::Var>"] {
            let src = EMA_OF_VAR_FIELD.replace("SOURCES", sources).replace("SRC", "src.as_tensor()");
            assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![22], "{sources}");
        }
        // Detached on the way in, or the field holds plain tensors: nothing is tracked.
        let cut = EMA_OF_VAR_FIELD.replace("SOURCES", "Vec<Var>").replace("SRC", "src.as_tensor().detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
        let plain = EMA_OF_VAR_FIELD.replace("SOURCES", "Vec<Tensor>").replace("SRC", "src");
        assert_eq!(count("accumulated_loss_tensor", None, &plain), 0);
    }

    /// A readout layer keeps a running mean of its pooled activations, only when its caller
    /// says it trains (`if train { .. }`); the model hands on its own `train` flag, and the
    /// trainer's step passes `TRAIN`.
    const GATED_RUNNING_MEAN: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, loss::mse, Linear, Module, Optimizer, VarBuilder, VarMap, SGD};
pub struct Readout { head: Linear, running: Option<Tensor>, momentum: f64 }
impl Readout {
    fn apply(&mut self, h: &Tensor, train: bool) -> Result<Tensor> {
        let pooled = h.mean(1)?;
        if train {
            let m = pooled.mean(0)?;
            self.running = Some(match self.running.take() {
                None => m,
                Some(r) => ((r * (1.0 - self.momentum))? + (m * self.momentum)?)?,
            });
        }
        self.head.forward(&pooled)
    }
}
pub struct Net { enc: Linear, readout: Readout }
impl Net {
    pub fn run(&mut self, x: &Tensor, train: bool) -> Result<Tensor> {
        let h = self.enc.forward(x)?.relu()?;
        self.readout.apply(&h, train)
    }
}
pub struct Trainer { net: Net, opt: SGD }
impl Trainer {
    fn step(&mut self, x: &Tensor, y: &Tensor) -> Result<f32> {
        let pred = self.net.run(x, TRAIN)?;
        let loss = mse(&pred, y)?;
        self.opt.backward_step(&loss)?;
        loss.to_scalar::<f32>()
    }
}
pub fn fit(dev: &Device) -> Result<()> {
    let vm = VarMap::new();
    let vb = VarBuilder::from_varmap(&vm, DType::F32, dev);
    let net = Net { enc: linear(8, 8, vb.pp("enc"))?, readout: Readout { head: linear(8, 1, vb.pp("head"))?, running: None, momentum: 0.01 } };
    let mut t = Trainer { net, opt: SGD::new(vm.all_vars(), 0.01)? };
    for _ in 0..10_000 {
        t.step(&Tensor::randn(0f32, 1.0, (4, 3, 8), dev)?, &Tensor::zeros((4, 3, 1), DType::F32, dev)?)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_running_statistic_kept_when_a_flag_says_train_is_kept_on_the_calls_that_pass_true() {
        let train = GATED_RUNNING_MEAN.replace("TRAIN", "true");
        let lines = crate::rules::testing::lines("accumulated_loss_tensor", &train);
        assert_eq!(lines, vec![28], "{:?}", crate::rules::testing::messages("accumulated_loss_tensor", &train));
        // Evaluation mode keeps nothing.
        assert_eq!(count("accumulated_loss_tensor", None, &GATED_RUNNING_MEAN.replace("TRAIN", "false")), 0);
        // Detached where it is kept: nothing chains.
        let cut = train.replace("let m = pooled.mean(0)?;", "let m = pooled.mean(0)?.detach();");
        assert_ne!(cut, train);
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// A hand-written model whose weights are `Var`s it holds itself (`weights: Vec<Var>`), and
    /// a calibrator that sums its predictions into a tensor field after every step.
    const VAR_FIELD_MODEL: &str = r#"
use candle_core::{DType, Device, Result, Tensor, Var};
use candle_nn::{Optimizer, SGD};
pub struct Mlp { weights: WEIGHTS }
impl Mlp {
    pub fn new(dims: &[usize], dev: &Device) -> Result<Self> {
        let mut weights = Vec::new();
        for d in dims.windows(2) {
            weights.push(Var::randn(0f32, 0.1, (d[0], d[1]), dev)?);
        }
        Ok(Self { weights })
    }
    pub fn vars(&self) -> Vec<Var> { self.weights.clone() }
    pub fn predict(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = x.clone();
        for w in self.weights.iter() {
            h = h.matmul(w.as_tensor())?.relu()?;
        }
        Ok(h)
    }
}
pub struct Calibrator { expected: Tensor }
impl Calibrator {
    pub fn observe(&mut self, mu: &Tensor) -> Result<()> {
        self.expected = (&self.expected + mu.sum_all()?)?;
        Ok(())
    }
}
pub struct Learner { model: Mlp, opt: SGD, calib: Calibrator }
impl Learner {
    pub fn new(model: Mlp, dev: &Device) -> Result<Self> {
        let opt = SGD::new(model.vars(), 0.01)?;
        Ok(Self { model, opt, calib: Calibrator { expected: Tensor::zeros((), DType::F32, dev)? } })
    }
    pub fn train_step(&mut self, x: &Tensor) -> Result<f32> {
        let pred = self.model.predict(x)?;
        let loss = pred.sqr()?.mean_all()?;
        self.opt.backward_step(&loss)?;
        self.calib.observe(&PRED)?;
        loss.to_scalar::<f32>()
    }
}
"#;

    #[test]
    fn a_models_own_var_fields_make_its_outputs_graph_carrying() {
        let kept = VAR_FIELD_MODEL.replace("WEIGHTS", "Vec<Var>").replace("PRED", "pred");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![39]);
        let cut = VAR_FIELD_MODEL.replace("WEIGHTS", "Vec<Var>").replace("PRED", "pred.detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// A registry of metrics as trait objects (`Vec<Box<dyn Metric>>`), each updated with the
    /// step's loss after the backward: one of them sums the loss as a tensor.
    const METRIC_REGISTRY: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Module, Optimizer, VarBuilder, VarMap, SGD};
pub trait Metric {
    fn update(&mut self, loss: &Tensor) -> Result<()>;
}
pub struct LossMeter { total: Option<Tensor> }
impl Metric for LossMeter {
    fn update(&mut self, loss: &Tensor) -> Result<()> {
        self.total = Some(match self.total.take() { Some(t) => (t + LOSS)?, None => LOSS.clone() });
        Ok(())
    }
}
pub struct StepCounter { steps: usize }
impl Metric for StepCounter {
    fn update(&mut self, _loss: &Tensor) -> Result<()> {
        self.steps += 1;
        Ok(())
    }
}
pub struct Trainer { metrics: Vec<Box<dyn Metric>> }
impl Trainer {
    pub fn fit(&mut self, dev: &Device) -> Result<()> {
        let vm = VarMap::new();
        let model = linear(4, 1, VarBuilder::from_varmap(&vm, DType::F32, dev))?;
        let mut opt = SGD::new(vm.all_vars(), 0.05)?;
        for _ in 0..10_000 {
            let loss = model.forward(&Tensor::randn(0f32, 1.0, (8, 4), dev)?)?.sqr()?.mean_all()?;
            opt.backward_step(&loss)?;
            for m in COLLECTION {
                m.update(&loss)?;
            }
        }
        Ok(())
    }
}
"#;

    #[test]
    fn a_loop_over_trait_objects_keeps_what_any_impl_keeps() {
        for collection in ["self.metrics.iter_mut()", "&mut self.metrics"] {
            let kept = METRIC_REGISTRY.replace("COLLECTION", collection).replace("LOSS", "loss");
            assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![31], "{collection}");
            let labels = crate::rules::testing::labels("accumulated_loss_tensor", &kept);
            assert!(labels.iter().any(|(line, _)| *line == 10), "{labels:?}");
            let cut = METRIC_REGISTRY.replace("COLLECTION", collection).replace("LOSS", "loss.detach()");
            assert_eq!(count("accumulated_loss_tensor", None, &cut), 0, "{collection}");
        }
        // Walked with an iterator method and a closure, as a `for` loop walks it.
        for walk in [
            "self.metrics.iter_mut().try_for_each(|m| m.update(&LOSS))?;",
            "self.metrics.iter_mut().for_each(|m| m.update(&LOSS).unwrap());",
        ] {
            let loop_ = "for m in COLLECTION {\n                m.update(&loss)?;\n            }";
            assert!(METRIC_REGISTRY.contains(loop_));
            let src = METRIC_REGISTRY.replace(loop_, walk);
            assert_eq!(count("accumulated_loss_tensor", None, &src.replace("LOSS", "loss")), 1, "{walk}");
            assert_eq!(count("accumulated_loss_tensor", None, &src.replace("LOSS", "loss.detach()")), 0, "{walk}");
        }
        // A local registry, annotated.
        let local = METRIC_REGISTRY
            .replace(
                "        for _ in 0..10_000 {",
                "        let mut meters: Vec<Box<dyn Metric>> = vec![Box::new(LossMeter { total: None })];\n        for _ in 0..10_000 {",
            )
            .replace("COLLECTION", "meters.iter_mut()")
            .replace("LOSS", "loss");
        assert_eq!(count("accumulated_loss_tensor", None, &local), 1);
        // Made afresh each iteration, it keeps nothing past it.
        let fresh = METRIC_REGISTRY
            .replace("for m in COLLECTION {", "let mut meters: Vec<Box<dyn Metric>> = vec![Box::new(LossMeter { total: None })];\n            for m in meters.iter_mut() {")
            .replace("LOSS", "loss");
        assert_eq!(count("accumulated_loss_tensor", None, &fresh), 0);
    }

    /// Truncated backpropagation through time in a per-tick method: the recurrent state is kept
    /// in `self` and cut by a method of its own that closes each window (`CUT`).
    const WINDOW_CLOSED_BY_A_METHOD: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{gru, AdamW, GRUConfig, Optimizer, ParamsAdamW, VarBuilder, VarMap, GRU, RNN};
use candle_nn::rnn::GRUState;
pub struct Tbptt { cell: GRU, opt: AdamW, state: GRUState, ticks: usize, window: usize }
impl Tbptt {
    pub fn new(vm: &VarMap, dev: &Device) -> Result<Self> {
        let cell = gru(4, 8, GRUConfig::default(), VarBuilder::from_varmap(vm, DType::F32, dev))?;
        let state = cell.zero_state(1)?;
        Ok(Self { cell, opt: AdamW::new(vm.all_vars(), ParamsAdamW::default())?, state, ticks: 0, window: 16 })
    }
    pub fn observe(&mut self, x: &Tensor, y: &Tensor) -> Result<()> {
        let next = self.cell.step(x, &self.state)?;
        self.state = next;
        self.ticks += 1;
        if self.ticks < self.window {
            return Ok(());
        }
        let loss = (self.state.h() - y)?.sqr()?.mean_all()?;
        self.close_window(&loss)
    }
    fn close_window(&mut self, loss: &Tensor) -> Result<()> {
        self.opt.backward_step(loss)?;
        CUT
        self.ticks = 0;
        Ok(())
    }
}
"#;

    #[test]
    fn a_state_cut_by_a_method_of_its_own_at_each_window_is_not_kept() {
        let cut = WINDOW_CLOSED_BY_A_METHOD.replace("CUT", "self.state = GRUState { h: self.state.h.detach() };");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
        // The method that closes the window keeps the state as it is: every window chains on.
        let kept = WINDOW_CLOSED_BY_A_METHOD.replace("CUT", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![14]);
    }

    /// The same trainer summing each tick's loss over the window in `self`, backpropagated and
    /// taken by the method that closes the window, which reports the window's mean as a number.
    const WINDOW_SUM_CLOSED_BY_A_METHOD: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Windowed { head: Linear, opt: AdamW, window_loss: Option<Tensor>, ticks: usize }
impl Windowed {
    pub fn new(vm: &VarMap, dev: &Device) -> Result<Self> {
        let head = linear(4, 1, VarBuilder::from_varmap(vm, DType::F32, dev))?;
        Ok(Self { head, opt: AdamW::new(vm.all_vars(), ParamsAdamW::default())?, window_loss: None, ticks: 0 })
    }
    pub fn observe(&mut self, x: &Tensor, y: &Tensor) -> Result<Option<f32>> {
        let err = (self.head.forward(x)? - y)?.sqr()?.mean_all()?;
        self.window_loss = Some(match self.window_loss.take() {
            Some(acc) => (acc + err)?,
            None => err,
        });
        self.ticks += 1;
        if self.ticks < 16 {
            return Ok(None);
        }
        self.close_window().map(Some)
    }
    fn close_window(&mut self) -> Result<f32> {
        let loss = match TAKE {
            Some(l) => (l / self.ticks as f64)?,
            None => return Ok(0.0),
        };
        self.opt.backward_step(&loss)?;
        self.ticks = 0;
        loss.to_scalar::<f32>()
    }
}
"#;

    #[test]
    fn a_window_sum_a_method_of_its_own_backpropagates_and_takes_is_not_kept() {
        let taken = WINDOW_SUM_CLOSED_BY_A_METHOD.replace("TAKE", "self.window_loss.take()");
        assert_eq!(count("accumulated_loss_tensor", None, &taken), 0);
        // Read but never taken: every window's sum chains onto the next.
        let kept = WINDOW_SUM_CLOSED_BY_A_METHOD.replace("TAKE", "self.window_loss.clone()");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![12]);
    }

    const FAILS: &str = r#"
use candle_core::{Tensor, Var};
fn train(w: &Var, xs: &[Tensor]) -> candle_core::Result<()> {
    let mut total = Tensor::zeros((), candle_core::DType::F32, &candle_core::Device::Cpu)?;
    for x in xs {
        let loss = x.matmul(w.as_tensor())?.sum_all()?;
        loss.backward()?;
        total = (total + loss)?;
    }
    Ok(())
}
"#;

    const PASSES: &str = r#"
use candle_core::{Tensor, Var};
fn train(w: &Var, xs: &[Tensor]) -> candle_core::Result<()> {
    let mut total = 0f32;
    for x in xs {
        let loss = x.matmul(w.as_tensor())?.sum_all()?;
        loss.backward()?;
        total += loss.to_scalar::<f32>()?;
    }
    Ok(())
}
"#;

    /// Truncated backpropagation through time: the state is cut at the top of each chunk.
    const TBPTT: &str = r#"
use candle_core::{Tensor, DType, Device};
use candle_nn::{Linear, Module, Optimizer};
fn train(wx: &Linear, wh: &Linear, opt: &mut candle_nn::SGD, chunks: &[Vec<Tensor>]) -> candle_core::Result<()> {
    let mut h = Tensor::zeros((1, 8), DType::F32, &Device::Cpu)?;
    for chunk in chunks {
        h = h.detach();
        let mut loss = Tensor::zeros((), DType::F32, &Device::Cpu)?;
        for x in chunk {
            h = (wx.forward(x)? + wh.forward(&h)?)?.tanh()?;
            loss = (loss + h.sqr()?.mean_all()?)?;
        }
        opt.backward_step(&loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("accumulated_loss_tensor", None, FAILS), 1);
    }

    #[test]
    fn accepts_a_state_cut_once_per_chunk() {
        assert_eq!(count("accumulated_loss_tensor", None, TBPTT), 0);
    }

    #[test]
    fn reports_a_state_never_cut() {
        let uncut = TBPTT.replace("        h = h.detach();\n", "");
        assert_ne!(uncut, TBPTT);
        assert_eq!(count("accumulated_loss_tensor", None, &uncut), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("accumulated_loss_tensor", None, PASSES), 0);
    }

    /// The sum is kept by a method of the crate (a metrics tracker's `update`).
    const THROUGH_A_METHOD: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::Optimizer;
pub struct Stats { total: Tensor }
impl Stats {
    pub fn update(&mut self, loss: &Tensor) -> Result<()> {
        self.total = KEEP;
        Ok(())
    }
}
pub fn train(model: &Mlp, opt: &mut candle_nn::AdamW, data: &[(Tensor, Tensor)], stats: &mut Stats) -> Result<()> {
    for (x, y) in data {
        let loss = candle_nn::loss::mse(&model.forward(x)?, y)?;
        opt.backward_step(&loss)?;
        stats.update(&loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_sum_kept_by_a_method_of_the_crate_is_seen_at_the_call() {
        let lines = crate::rules::testing::lines(
            "accumulated_loss_tensor",
            &THROUGH_A_METHOD.replace("KEEP", "(&self.total + loss)?"),
        );
        assert_eq!(lines, vec![15]);
        // A detached sum, or a host number, keeps no graph.
        let detached = THROUGH_A_METHOD.replace("KEEP", "(&self.total + loss.detach())?");
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
        // The last value only (an assignment) is not a sum.
        assert_eq!(count("accumulated_loss_tensor", None, &THROUGH_A_METHOD.replace("KEEP", "loss.clone()")), 0);
    }

    /// A sum kept in an `Option` (no zero tensor to start from): the arm binding `prev` holds
    /// the old sum, so the new one is still a fold.
    const OPTION_SUM: &str = r#"
use candle_core::{Tensor, Var};
pub fn train(w: &Var, opt: &mut candle_nn::SGD, data: Vec<Tensor>) -> candle_core::Result<()> {
    let mut total: Option<Tensor> = None;
    for x in data {
        let loss = x.matmul(w.as_tensor())?.mean_all()?;
        opt.backward_step(&loss)?;
        FOLD
    }
    println!("{:?}", total.map(|t| t.to_scalar::<f32>()));
    Ok(())
}
"#;

    /// The same sum on burn (0.13 on), made after the iteration's backward on the graph it
    /// consumed: on 0.13 to 0.18 the next backward clears the whole store, so the sum keeps a
    /// node of bookkeeping; from 0.19 on a backward sweeps only what its loss reaches, and no
    /// later loss reaches the sum (measured: a DQN's loss summed this way grows about 0.2 MB a
    /// step on 0.20.1, stays flat on 0.16.1).
    const OPTION_SUM_BURN: &str = r#"
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
pub fn train<B: AutodiffBackend>(mut model: Net<B>, data: Vec<Tensor<B, 2>>) {
    let mut optim = AdamConfig::new().init();
    let mut total: Option<Tensor<B, 1>> = None;
    for x in data {
        let loss = model.forward(x).mean();
        let grads = loss.backward();
        model = optim.step(1e-3, model, GradientsParams::from_grads(grads, &model));
        FOLD
    }
    println!("{:?}", total.map(|t| t.into_scalar()));
}
"#;

    #[test]
    fn a_sum_kept_in_an_option_is_a_fold() {
        let forms = [
            "total = Some(match total { Some(prev) => (prev + loss)?, None => loss });",
            "total = match total.take() { Some(prev) => Some((prev + loss)?), None => Some(loss) };",
            "if let Some(prev) = total.take() { total = Some((prev + loss)?); } else { total = Some(loss); }",
        ];
        for form in forms {
            let src = OPTION_SUM.replace("FOLD", form);
            assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![8], "{form}");
        }
        // The last loss only: no fold.
        let last = OPTION_SUM.replace("FOLD", "total = Some(loss);");
        assert_eq!(count("accumulated_loss_tensor", None, &last), 0);
    }

    #[test]
    fn burn_sums_made_after_the_backward_are_swept_only_before_0_19() {
        let forms = [
            "total = Some(match total { Some(prev) => prev + loss, None => loss });",
            "if let Some(prev) = total.take() { total = Some(prev + loss); } else { total = Some(loss); }",
        ];
        for form in forms {
            let src = OPTION_SUM_BURN.replace("FOLD", form);
            assert_eq!(
                crate::rules::testing::count_in_era("accumulated_loss_tensor", &src, crate::BurnEra::OneGraph),
                0,
                "{form}"
            );
            assert_eq!(
                crate::rules::testing::count_in_era("accumulated_loss_tensor", &src, crate::BurnEra::TypedBackends),
                1,
                "{form}"
            );
            assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![12], "{form}");
            // Made before the backward, the sum is part of the graph that backward sweeps.
            let before = OPTION_SUM_BURN.replace("        FOLD\n", "").replace(
                "        let grads = loss.backward();",
                &format!("        {}\n        let grads = loss.backward();", form.replace("loss", "loss.clone()")),
            );
            assert_ne!(before, src);
            assert_eq!(
                crate::rules::testing::count_in_era("accumulated_loss_tensor", &before, crate::BurnEra::TypedBackends),
                0,
                "{form}"
            );
            // Detached, it keeps no graph in any era.
            let cut = OPTION_SUM_BURN.replace(
                "FOLD",
                &form
                    .replace("prev + loss", "prev + loss.detach()")
                    .replace("total = Some(loss)", "total = Some(loss.detach())")
                    .replace("None => loss", "None => loss.detach()"),
            );
            assert_eq!(
                crate::rules::testing::count_in_era("accumulated_loss_tensor", &cut, crate::BurnEra::TypedBackends),
                0,
                "{form}"
            );
        }
    }

    /// burn: a sum of a forward that no backward consumes (a probe set's confidence, read once at
    /// the end) holds that forward's graph: the store sweeps only what a backward reaches.
    const PROBE_SUM_BURN: &str = r#"
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
pub struct Monitor<B: Backend> { probe: Tensor<B, 2>, sum: Option<Tensor<B, 1>> }
impl<B: Backend> Monitor<B> {
    pub fn probe(&self) -> Tensor<B, 2> { self.probe.clone() }
    pub fn check(&mut self, logits: Tensor<B, 2>) {
        let conf = logits.max_dim(1).mean();
        self.sum = Some(match self.sum.take() { Some(s) => s + conf, None => conf });
    }
}
pub fn train<B: AutodiffBackend>(mut model: Net<B>, data: Vec<Tensor<B, 2>>, mut monitor: Monitor<B>, probe: Tensor<B, 2>) {
    let mut optim = AdamConfig::new().init();
    let mut total = Tensor::<B, 1>::zeros([1], &probe.device());
    for x in data {
        let out = model.forward(x);
        let loss = out.clone().mean();
        let grads = loss.backward();
        model = optim.step(1e-3, model, GradientsParams::from_grads(grads, &model));
        FOLD
    }
    println!("{:?}", total.into_scalar());
}
"#;

    /// burn: a running statistic a method keeps in its receiver, of a forward that no backward
    /// consumes, called once per training step (a twin critic's smoothed Q for a dashboard, an
    /// EMA codebook fed a fresh encoder pass after the update).
    const EMA_KEPT_BURN: &str = r#"
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
pub struct Stats<B: Backend> { pub mean: Tensor<B, 1>, pub log: Vec<Tensor<B, 1>> }
impl<B: Backend> Net<B> {
    pub fn embed(&self, x: Tensor<B, 2>) -> Tensor<B, 2> { self.forward(x) }
}
impl<B: Backend> Stats<B> {
    pub fn record(&mut self, z: Tensor<B, 2>) { self.log.push(z.mean()); }
    DRAIN
    pub fn observe(&mut self, z: Tensor<B, 2>) {
        self.mean = self.mean.clone() * 0.99 + z.mean_dim(0).squeeze(0) * 0.01;
    }
}
pub struct Agent<B: AutodiffBackend> {
    net: Net<B>, probe: Tensor<B, 2>, q_ema: Tensor<B, 1>, stats: Stats<B>,
    key: Net<B::InnerBackend>, queue: Option<Tensor<B::InnerBackend, 2>>,
}
impl<B: AutodiffBackend> Agent<B> {
    fn enqueue(&mut self, keys: Tensor<B::InnerBackend, 2>) {
        let q = match self.queue.take() { None => keys, Some(q) => Tensor::cat(vec![keys, q], 0) };
        self.queue = Some(q.slice([0..4096]));
    }
    fn track(&mut self) {
        let q = self.net.forward(self.probe.clone()).mean();
        self.q_ema = self.q_ema.clone() * 0.99 + q * 0.01;
    }
    pub fn update(&mut self, x: Tensor<B, 2>, optim: &mut impl Optimizer<Net<B>, B>) -> f32 {
        let out = self.net.forward(x.clone());
        let loss = out.clone().mean();
        BEFORE
        let grads = GradientsParams::from_grads(loss.backward(), &self.net);
        self.net = optim.step(1e-3, self.net.clone(), grads);
        AFTER
        0.0
    }
}
"#;

    #[test]
    fn burn_running_statistics_of_forwards_no_backward_consumes_are_kept() {
        let at = |before: &str, after: &str| {
            let src = EMA_KEPT_BURN.replace("BEFORE", before).replace("AFTER", after).replace("DRAIN", "");
            crate::rules::testing::lines("accumulated_loss_tensor", &src)
        };
        let lines = |after: &str| at("", after);
        // Kept in `self` by a method of its own that runs the forward.
        assert_eq!(lines("self.track();"), vec![35]);
        // Kept in a field's state from a fresh forward handed in.
        assert_eq!(lines("self.stats.observe(self.net.forward(x));"), vec![35]);
        // A queue of what a parameter typed on the inner backend receives keeps no graph.
        assert!(lines("self.enqueue(self.key.embed(x.inner()));").is_empty());
        // Of what the loss was computed from, before the backward: swept with it.
        assert!(at("self.stats.observe(out.clone());", "").is_empty());
        assert!(lines("").is_empty());
        // The same after the backward: the callee's ops hang on the consumed graph, and the
        // state keeps them (and what they saved) for good.
        assert_eq!(lines("self.stats.observe(out);"), vec![35]);
        // Pushed into a log after the backward: kept for good, unless a method drains the log.
        assert_eq!(lines("self.stats.record(out);"), vec![35]);
        assert!(at("self.stats.record(out.clone());", "").is_empty());
        let drained = EMA_KEPT_BURN
            .replace("BEFORE", "")
            .replace("AFTER", "self.stats.record(out);")
            .replace("DRAIN", "pub fn drain(&mut self) -> Vec<Tensor<B, 1>> { std::mem::take(&mut self.log) }");
        assert!(crate::rules::testing::lines("accumulated_loss_tensor", &drained).is_empty());
    }

    #[test]
    fn burn_sums_of_forwards_no_backward_consumes_are_kept() {
        let lines =
            |fold: &str| crate::rules::testing::lines("accumulated_loss_tensor", &PROBE_SUM_BURN.replace("FOLD", fold));
        // A second forward, on data no loss is computed from.
        assert_eq!(lines("total = total + model.forward(probe.clone()).mean();"), vec![21]);
        // The same, summed by a method of the crate into its receiver.
        assert_eq!(lines("monitor.check(model.forward(monitor.probe()));"), vec![21]);
        // What the loss was computed from, summed after the backward: kept from burn 0.19 on
        // (see `burn_sums_made_after_the_backward_are_swept_only_before_0_19`).
        assert_eq!(lines("total = total + out.mean();"), vec![21]);
        assert_eq!(lines("total = total + loss;"), vec![21]);
        // Replaced, not summed: one graph at a time.
        assert!(lines("total = model.forward(probe.clone()).mean();").is_empty());
    }

    /// Gradient accumulation over micro-batches: the sum is what the backward runs on, and the
    /// backward takes it out of the `Option`.
    const GRADIENT_ACCUMULATION: &str = r#"
use candle_core::{Tensor, Var};
pub fn train(w: &Var, opt: &mut candle_nn::SGD, data: Vec<Tensor>, accum: usize) -> candle_core::Result<()> {
    let mut acc: Option<Tensor> = None;
    let mut count = 0;
    for x in data {
        let loss = x.matmul(w.as_tensor())?.mean_all()?;
        acc = Some(match acc { None => loss, Some(prev) => (prev + loss)? });
        count += 1;
        if count == accum {
            let grads = TAKEN.backward()?;
            opt.step(&grads)?;
            count = 0;
        }
    }
    Ok(())
}
"#;

    #[test]
    fn accepts_gradient_accumulation_that_backpropagates_the_sum() {
        let src = GRADIENT_ACCUMULATION.replace("TAKEN", "acc.take().unwrap()");
        assert_eq!(count("accumulated_loss_tensor", None, &src), 0);
        // The same sum without the backward on it: every window's graph stays chained to the next.
        let kept = GRADIENT_ACCUMULATION.replace("TAKEN", "loss");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![8]);
    }

    /// A forecaster that runs its LSTM over each chunk from the state the last chunk left
    /// (`seq_init`), and keeps the last state for the next call.
    const CHUNKED_LSTM: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{rnn::{LSTMState, RNN}, Linear, Module, Optimizer, VarBuilder, VarMap, LSTM};
pub struct Forecaster { lstm: LSTM, head: Linear, state: Option<LSTMState>, batch: usize }
impl Forecaster {
    pub fn new(vm: &VarMap, batch: usize, dev: &Device) -> Result<Self> {
        let vb = VarBuilder::from_varmap(vm, DType::F32, dev);
        let lstm = candle_nn::lstm(1, 16, Default::default(), vb.pp("lstm"))?;
        Ok(Self { lstm, head: candle_nn::linear(16, 1, vb.pp("head"))?, state: None, batch })
    }
    pub fn reset_state(&mut self) { self.state = None; }
    pub fn forward_chunk(&mut self, chunk: &Tensor) -> Result<Tensor> {
        let init = match self.state.take() { Some(s) => s, None => self.lstm.zero_state(self.batch)? };
        let states = self.lstm.seq_init(chunk, &init)?;
        let last = states.last().unwrap().clone();
        let hs = self.lstm.states_to_tensor(&states)?;
        self.state = Some(last);
        self.head.forward(&hs)
    }
}
pub fn fit<O: Optimizer>(model: &mut Forecaster, opt: &mut O, chunks: &[(Tensor, Tensor)]) -> Result<()> {
    for (x, y) in chunks {
        RESET
        let loss = (model.forward_chunk(x)? - y)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_cell_run_over_each_chunk_from_the_kept_state_chains() {
        let lines = |reset: &str| {
            crate::rules::testing::lines("accumulated_loss_tensor", &CHUNKED_LSTM.replace("RESET", reset))
        };
        assert_eq!(lines(""), vec![24]);
        assert!(lines("model.reset_state();").is_empty());
    }

    /// The same carried state, stepped by the model's own method that returns the window's
    /// predictions and its last state as a tuple; the trainer keeps the state for the next call.
    const CARRIED_THROUGH_TUPLE: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{rnn::{LSTMState, RNN}, Linear, Module, Optimizer, VarBuilder, VarMap, LSTM};
pub struct Net { lstm: LSTM, head: Linear }
impl Net {
    pub fn new(vm: &VarMap, dev: &Device) -> Result<Self> {
        let vb = VarBuilder::from_varmap(vm, DType::F32, dev);
        Ok(Self { lstm: candle_nn::lstm(3, 16, Default::default(), vb.pp("lstm"))?, head: candle_nn::linear(16, 1, vb.pp("head"))? })
    }
    pub fn run(&self, chunk: &Tensor, init: &LSTMState) -> Result<(Tensor, LSTMState)> {
        let (_, steps, _) = chunk.dims3()?;
        let mut s = init.clone();
        let mut hs = Vec::new();
        for t in 0..steps {
            s = self.lstm.step(&chunk.narrow(1, t, 1)?.squeeze(1)?, &s)?;
            hs.push(self.head.forward(s.h())?);
        }
        Ok((Tensor::stack(&hs, 1)?, s))
    }
}
pub struct Trainer { net: Net, carry: Option<LSTMState>, batch: usize }
impl Trainer {
    pub fn step<O: Optimizer>(&mut self, opt: &mut O, x: &Tensor, y: &Tensor) -> Result<f32> {
        let init = match self.carry.take() { Some(s) => s, None => self.net.lstm.zero_state(self.batch)? };
        let (pred, last) = self.net.run(x, &init)?;
        let loss = (pred - y)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        self.carry = Some(KEPT);
        loss.to_scalar::<f32>()
    }
}
pub fn fit<O: Optimizer>(vm: &VarMap, opt: &mut O, windows: &[(Tensor, Tensor)], dev: &Device) -> Result<()> {
    let mut trainer = Trainer { net: Net::new(vm, dev)?, carry: None, batch: 8 };
    for (x, y) in windows {
        trainer.step(opt, x, y)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_a_trainable_cell_returns_in_a_tuple_chains_when_kept() {
        let src = |kept: &str| CARRIED_THROUGH_TUPLE.replace("KEPT", kept);
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src("last")), vec![28]);
        let detached = src("LSTMState::new(last.h().detach(), last.c().detach())");
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
    }

    /// The carried state handed to the next window through the crate's own helper, which
    /// returns a struct of tensors (the library's `LSTMState`, or the crate's `Carry`): the
    /// helper passes on whatever part of the state it does not cut.
    const CARRIED_THROUGH_HELPER: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{rnn::{LSTMState, RNN}, Linear, Module, Optimizer, VarBuilder, VarMap, LSTM};
pub struct Carry { h: Tensor, c: Tensor }
fn for_next_window(s: &LSTMState) -> STATE {
    BODY
}
pub struct Net { lstm: LSTM, head: Linear }
impl Net {
    pub fn forward(&self, xs: &[Tensor], init: &LSTMState) -> Result<LSTMState> {
        let mut s = init.clone();
        for x in xs {
            s = self.lstm.step(x, &s)?;
        }
        Ok(s)
    }
}
pub struct Seq { net: Net, carry: STATE }
impl Seq {
    pub fn window<O: Optimizer>(&mut self, opt: &mut O, xs: &[Tensor], y: &Tensor) -> Result<f32> {
        let s = self.net.forward(xs, &START)?;
        let loss = (self.net.head.forward(s.h())? - y)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        self.carry = for_next_window(&s);
        loss.to_scalar::<f32>()
    }
}
pub fn fit(vm: &VarMap, data: &[(Vec<Tensor>, Tensor)], dev: &Device) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, dev);
    let lstm = candle_nn::lstm(3, 8, Default::default(), vb.pp("lstm"))?;
    let head = candle_nn::linear(8, 1, vb.pp("head"))?;
    let mut opt = candle_nn::SGD::new(vm.all_vars(), 0.01)?;
    let zero = lstm.zero_state(4)?;
    let mut seq = Seq { net: Net { lstm, head }, carry: INIT };
    for (xs, y) in data {
        seq.window(&mut opt, xs, y)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_a_crate_helper_returns_as_a_struct_of_tensors_chains_unless_every_part_is_cut() {
        let library = |body: &str| {
            CARRIED_THROUGH_HELPER
                .replace("STATE", "LSTMState")
                .replace("BODY", body)
                .replace("START", "self.carry")
                .replace("INIT", "zero")
        };
        let lines = |src: &str| crate::rules::testing::lines("accumulated_loss_tensor", src);
        assert_eq!(lines(&library("LSTMState { h: s.h.detach(), c: s.c.clone() }")), vec![24]);
        assert_eq!(lines(&library("s.clone()")), vec![24]);
        assert!(lines(&library("LSTMState { h: s.h.detach(), c: s.c.detach() }")).is_empty());
        let own = |body: &str| {
            CARRIED_THROUGH_HELPER
                .replace("STATE", "Carry")
                .replace("BODY", body)
                .replace("START", "LSTMState::new(self.carry.h.clone(), self.carry.c.clone())")
                .replace("INIT", "Carry { h: zero.h().clone(), c: zero.c().clone() }")
        };
        assert_eq!(lines(&own("Carry { h: s.h().detach(), c: s.c().clone() }")), vec![24]);
        assert!(lines(&own("Carry { h: s.h().detach(), c: s.c().detach() }")).is_empty());
    }

    /// The cell stepped over the window's elements in the training step itself, from the state
    /// the previous window left: the loop is one forward pass over the window, and its last
    /// state carries that pass's graph into the next window unless it is cut.
    const STEPPED_OVER_ELEMENTS: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{rnn::{LSTMState, RNN}, Linear, Module, Optimizer, VarBuilder, VarMap, LSTM};
pub struct Seq { lstm: LSTM, head: Linear, carry: LSTMState }
impl Seq {
    pub fn window<O: Optimizer>(&mut self, opt: &mut O, xs: &[Tensor], y: &Tensor) -> Result<f32> {
        let mut s = START;
        LOOP
        let loss = (self.head.forward(s.h())? - y)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        self.carry = s;
        loss.to_scalar::<f32>()
    }
}
pub fn fit(vm: &VarMap, data: &[(Vec<Tensor>, Tensor)], dev: &Device) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, dev);
    let lstm = candle_nn::lstm(3, 8, Default::default(), vb.pp("lstm"))?;
    let head = candle_nn::linear(8, 1, vb.pp("head"))?;
    let mut opt = candle_nn::SGD::new(vm.all_vars(), 0.01)?;
    let carry = lstm.zero_state(4)?;
    let mut seq = Seq { lstm, head, carry };
    for (xs, y) in data {
        seq.window(&mut opt, xs, y)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_a_cell_steps_over_the_windows_elements_chains_when_kept_uncut() {
        let src = |start: &str, lp: &str| STEPPED_OVER_ELEMENTS.replace("START", start).replace("LOOP", lp);
        let lines = |src: &str| crate::rules::testing::lines("accumulated_loss_tensor", src);
        for lp in [
            "for x in xs { s = self.lstm.step(x, &s)?; }",
            "for t in 0..xs.len() { s = self.lstm.step(&xs[t], &s)?; }",
            "for x in xs.iter() { s = self.lstm.step(x, &s)?; }",
        ] {
            assert_eq!(lines(&src("self.carry.clone()", lp)), vec![11], "{lp}");
            let cut = "LSTMState::new(self.carry.h().detach(), self.carry.c().detach())";
            assert!(lines(&src(cut, lp)).is_empty(), "{lp}");
        }
        // Not a sampler: the loop is one pass over the window.
        assert!(
            crate::rules::testing::lines(
                "sampling_loop_chains_graph",
                &src("self.carry.clone()", "for x in xs { s = self.lstm.step(x, &s)?; }")
            )
            .is_empty()
        );
    }

    /// An acting agent keeps a belief state across environment steps, stepped by a trainable
    /// recurrent model; a method named like a reset only zeroes the rows of finished episodes
    /// by a mask, which is an operation on the old state, not a fresh one.
    const MASKED_RESET: &str = r#"
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Linear, Optimizer, VarBuilder, VarMap};
pub struct Belief { core: Linear }
impl Belief {
    pub fn observe(&self, h: &Tensor, obs: &Tensor) -> Result<Tensor> {
        self.core.forward(&Tensor::cat(&[h, obs], 1)?)?.tanh()
    }
}
pub struct Agent { belief: Tensor }
impl Agent {
    pub fn act(&mut self, wm: &Belief, obs: &Tensor) -> Result<Vec<f32>> {
        self.belief = wm.observe(&self.belief, obs)?;
        self.belief.sum(1)?.to_vec1::<f32>()
    }
    pub fn reset_done(&mut self, done: &[bool], dev: &Device) -> Result<()> {
        let keep: Vec<f32> = done.iter().map(|&d| if d { 0.0 } else { 1.0 }).collect();
        let keep = Tensor::from_vec(keep, (done.len(), 1), dev)?;
        self.belief = RESET;
        Ok(())
    }
}
pub fn run(vm: &VarMap, obs: &[Tensor], targets: &[Tensor], dev: &Device) -> Result<()> {
    let wm = Belief { core: candle_nn::linear(8, 4, VarBuilder::from_varmap(vm, DType::F32, dev))? };
    let mut opt = candle_nn::SGD::new(vm.all_vars(), 0.01)?;
    let mut agent = Agent { belief: Tensor::zeros((2, 4), DType::F32, dev)? };
    for (step, (o, y)) in obs.iter().zip(targets).enumerate() {
        agent.act(&wm, o)?;
        agent.reset_done(&[step % 50 == 49, false], dev)?;
        let loss = (wm.observe(&Tensor::zeros((2, 4), DType::F32, dev)?, o)? - y)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_a_reset_method_only_masks_is_still_kept() {
        let lines = |reset: &str| {
            crate::rules::testing::lines("accumulated_loss_tensor", &MASKED_RESET.replace("RESET", reset))
        };
        assert_eq!(lines("self.belief.broadcast_mul(&keep)?"), vec![28]);
        assert!(lines("self.belief.detach().broadcast_mul(&keep)?").is_empty());
        assert!(lines("self.belief.zeros_like()?").is_empty());
    }

    /// A recurrent state per user, kept in a store that hands out a mutable reference to the
    /// user's entry (`store.entry_for(user)?`); the serving loop writes the next state through
    /// it and trains now and then.
    const STATE_PER_KEY: &str = r#"
use std::collections::HashMap;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Linear, Optimizer, VarBuilder, VarMap};
pub struct Entry { pub h: Tensor, pub seen: usize }
pub struct Store { by_user: HashMap<u64, Entry>, dim: usize }
impl Store {
    pub fn entry_for(&mut self, user: u64, dev: &Device) -> Result<&mut Entry> {
        if !self.by_user.contains_key(&user) {
            let h = Tensor::zeros((1, self.dim), DType::F32, dev)?;
            self.by_user.insert(user, Entry { h, seen: 0 });
        }
        Ok(self.by_user.get_mut(&user).unwrap())
    }
}
pub fn serve(vm: &VarMap, requests: &[(u64, Tensor, Tensor)], dev: &Device) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, dev);
    let (w_in, w_rec) = (candle_nn::linear(4, 8, vb.pp("in"))?, candle_nn::linear(8, 8, vb.pp("rec"))?);
    let mut opt = candle_nn::SGD::new(vm.all_vars(), 0.01)?;
    let mut store = Store { by_user: HashMap::new(), dim: 8 };
    for (i, (user, x, y)) in requests.iter().enumerate() {
        let entry = store.entry_for(*user, dev)?;
        let next = (w_in.forward(x)? + w_rec.forward(&entry.h)?)?.tanh()?;
        entry.h = NEXT;
        entry.seen += 1;
        if i % 100 == 99 {
            let loss = (w_in.forward(x)? - y)?.sqr()?.mean_all()?;
            opt.backward_step(&loss)?;
        }
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_written_through_a_reference_a_method_hands_out_is_kept_in_its_owner() {
        let lines =
            |next: &str| crate::rules::testing::lines("accumulated_loss_tensor", &STATE_PER_KEY.replace("NEXT", next));
        assert_eq!(lines("next"), vec![24]);
        assert!(lines("next.detach()").is_empty());
    }

    /// A training step of its own that also keeps a moving average of a trainable variable
    /// (`emb: Var`), blended from the variable without cutting it: each average links to the
    /// one before.
    const AVERAGE_IN_THE_STEP: &str = r#"
use candle_core::{DType, Device, Module, Result, Tensor, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
pub struct Tuner { emb: Var, avg: Tensor, opt: AdamW }
impl Tuner {
    pub fn new(dev: &Device) -> Result<Self> {
        let emb = Var::randn(0f32, 0.1, (16, 8), dev)?;
        let avg = emb.as_tensor().detach();
        let opt = AdamW::new(vec![emb.clone()], ParamsAdamW::default())?;
        Ok(Self { emb, avg, opt })
    }
    pub fn step(&mut self, x: &Tensor) -> Result<f32> {
        let loss = x.matmul(&self.emb.as_tensor().t()?)?.sqr()?.mean_all()?;
        self.opt.backward_step(&loss)?;
        self.avg = ((&self.avg * 0.99)? + (SRC * 0.01)?)?;
        loss.to_scalar::<f32>()
    }
}
pub fn fit(batches: &[Tensor], dev: &Device) -> Result<()> {
    let mut tuner = Tuner::new(dev)?;
    for x in batches {
        tuner.step(x)?;
    }
    Ok(())
}
"#;

    #[test]
    fn an_average_of_a_variable_kept_by_a_step_that_trains_chains() {
        let lines = |src: &str| {
            crate::rules::testing::lines("accumulated_loss_tensor", &AVERAGE_IN_THE_STEP.replace("SRC", src))
        };
        assert_eq!(lines("self.emb.as_tensor()"), vec![15]);
        assert!(lines("self.emb.as_detached_tensor()").is_empty());
        assert!(lines("self.emb.as_tensor().detach()").is_empty());
    }

    /// An image optimised directly (`image: Var`), whose training step keeps a snapshot every
    /// so often in a field nothing empties.
    const SNAPSHOTS_IN_THE_STEP: &str = r#"
use candle_core::{DType, Device, Result, Tensor, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
pub struct Painter { image: Var, target: Tensor, opt: AdamW, snapshots: Vec<Tensor> }
impl Painter {
    pub fn step(&mut self, i: usize) -> Result<f32> {
        let loss = (self.image.as_tensor() - &self.target)?.sqr()?.mean_all()?;
        self.opt.backward_step(&loss)?;
        if i % 50 == 0 {
            self.snapshots.push(KEPT);
        }
        loss.to_scalar::<f32>()
    }
}
pub fn paint(target: Tensor, dev: &Device) -> Result<()> {
    let image = Var::zeros((3, 32, 32), DType::F32, dev)?;
    let opt = AdamW::new(vec![image.clone()], ParamsAdamW::default())?;
    let mut p = Painter { image, target, opt, snapshots: Vec::new() };
    for i in 0..1000 {
        p.step(i)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_snapshot_of_a_variable_kept_by_the_step_holds_no_activation() {
        let lines = |kept: &str| {
            crate::rules::testing::lines("accumulated_loss_tensor", &SNAPSHOTS_IN_THE_STEP.replace("KEPT", kept))
        };
        assert!(lines("self.image.as_tensor().copy()?").is_empty());
        assert!(lines("self.image.as_detached_tensor()").is_empty());
        // An operation that also reads the step's data keeps that data, and the loss its graph.
        assert_eq!(lines("(self.image.as_tensor() - &self.target)?"), vec![10]);
        assert_eq!(lines("loss.clone()"), vec![10]);
    }

    /// A helper (not the model) that keeps a running average of the model's outputs, updated by
    /// a method it calls on itself (`self.observe(net, x)` from `probe`), probed once per training
    /// step.
    const PROBE_THROUGH_SELF: &str = r#"
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{Linear, Optimizer, VarBuilder, VarMap};
pub struct Drift { mean: Tensor }
impl Drift {
    fn observe(&mut self, net: &Linear, x: &Tensor) -> Result<f32> {
        let y = net.forward(x)?;
        self.mean = ((&self.mean * 0.9)? + (y * 0.1)?)?CUT;
        self.mean.sum_all()?.to_scalar::<f32>()
    }
    pub fn probe(&mut self, net: &Linear, x: &Tensor) -> Result<f32> {
        let shifted = (x + 1.0)?;
        self.observe(net, &shifted)
    }
}
pub fn fit(vm: &VarMap, batches: &[(Tensor, Tensor)], dev: &Device) -> Result<()> {
    let net = candle_nn::linear(4, 4, VarBuilder::from_varmap(vm, DType::F32, dev))?;
    let mut opt = candle_nn::SGD::new(vm.all_vars(), 0.01)?;
    let mut drift = Drift { mean: Tensor::zeros((1, 4), DType::F32, dev)? };
    for (x, y) in batches {
        let loss = (net.forward(x)? - y)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        println!("{}", drift.probe(&net, x)?);
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_folded_by_a_method_the_called_method_calls_on_itself_chains() {
        let lines = |cut: &str| {
            crate::rules::testing::lines("accumulated_loss_tensor", &PROBE_THROUGH_SELF.replace("CUT", cut))
        };
        assert_eq!(lines(""), vec![23]);
        assert!(lines(".detach()").is_empty());
    }

    /// `model.cell.step(..)` is the library's recurrent cell (`cell: LSTM`), not the crate's
    /// `Trainer::step` of the same name and arity: the inner loop runs no backward.
    const LIBRARY_STEP: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{loss, rnn::{LSTMState, RNN}, Linear, Module, LSTM};
pub struct Trainer { opt: candle_nn::AdamW }
impl Trainer {
    pub fn step(&mut self, loss: &Tensor, verbose: bool) -> Result<f32> {
        self.opt.backward_step(loss)?;
        loss.to_scalar::<f32>()
    }
}
struct Forecaster { cell: LSTM, head: Linear }
fn fit(cell: LSTM, head: Linear, trainer: &mut Trainer, series: &[f32], dev: &Device) -> Result<()> {
    let model = Forecaster { cell, head };
    let mut state = model.cell.zero_state(1)?;
    for start in (0..series.len() - 33).step_by(32) {
        state = LSTMState { h: state.h().detach(), c: state.c().detach() };
        let mut chunk = Tensor::zeros((), DType::F32, dev)?;
        for t in start..start + 32 {
            state = model.cell.step(&Tensor::new(&[[series[t]]], dev)?, &state)?;
            let pred = model.head.forward(state.h())?;
            chunk = (chunk + loss::mse(&pred, &Tensor::new(&[[series[t + 1]]], dev)?)?)?;
        }
        trainer.step(&chunk, false)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_library_method_is_not_the_crates_method_of_the_same_name() {
        assert_eq!(count("accumulated_loss_tensor", None, LIBRARY_STEP), 0);
        // Without the declared type of `model`, the call could be the crate's.
        let untyped = LIBRARY_STEP.replace("let model = Forecaster { cell, head };", "let model = build(cell, head);");
        assert_ne!(untyped, LIBRARY_STEP);
        // The field is declared as candle's `LSTM` in the crate: its `step` is the cell's.
        assert_eq!(count("accumulated_loss_tensor", None, &untyped), 0);
        let opaque = untyped.replace("cell: LSTM", "cell: Cell");
        assert_ne!(opaque, untyped);
        assert_eq!(count("accumulated_loss_tensor", None, &opaque), 1);
    }

    /// The summand is the loss a training-step function returns, called inside the sum.
    const STEP_RETURNS_LOSS: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{loss, AdamW, Module, Optimizer, Sequential};
fn train_step(model: &Sequential, opt: &mut AdamW, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let l = loss::mse(&model.forward(x)?, y)?;
    opt.backward_step(&l)?;
    Ok(RETURNED)
}
fn fit(model: &Sequential, opt: &mut AdamW, data: &[(Tensor, Tensor)]) -> Result<f32> {
    let mut total = Tensor::zeros((), DType::F32, &Device::Cpu)?;
    for (x, y) in data {
        total = (total + train_step(model, opt, x, y)?)?;
    }
    total.to_scalar::<f32>()
}
"#;

    #[test]
    fn reports_a_sum_of_losses_returned_by_a_step_function() {
        let src = STEP_RETURNS_LOSS.replace("RETURNED", "l");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![12]);
        let detached = STEP_RETURNS_LOSS.replace("RETURNED", "l.detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
    }

    /// A running loss logged and emptied every `k` steps: the graphs of every step since the last
    /// reset stay alive until then.
    const PERIODIC_RESET: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{loss, Module, Optimizer};
pub fn fit(model: &Mlp, opt: &mut candle_nn::AdamW, dev: &Device) -> Result<()> {
    let mut running = Tensor::zeros((), DType::F32, dev)?;
    for step in 1..=200_000usize {
        let (x, y) = batch(step, dev)?;
        let l = loss::mse(&model.forward(&x)?, &y)?;
        opt.backward_step(&l)?;
        running = running.add(&l)?;
        RESET
    }
    Ok(())
}
"#;

    #[test]
    fn a_sum_emptied_only_now_and_then_is_reported() {
        let periodic = PERIODIC_RESET.replace(
            "RESET",
            "if step % 2000 == 0 { println!(\"{}\", running.to_scalar::<f32>()?); running = Tensor::zeros((), DType::F32, dev)?; }",
        );
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &periodic), vec![10]);
        // Emptied on every step: nothing outlives the step.
        let every = PERIODIC_RESET.replace("RESET", "running = Tensor::zeros((), DType::F32, dev)?;");
        assert_eq!(count("accumulated_loss_tensor", None, &every), 0);
    }

    /// A metrics meter keeps its running sum in an `Option` field, updated by a method called
    /// every step.
    const OPTION_METER: &str = r#"
use candle_core::{Result, Tensor};
use candle_nn::{loss, Module, Optimizer};
pub struct Meter { sum: Option<Tensor>, n: usize }
impl Meter {
    pub fn update(&mut self, value: &Tensor) -> Result<()> {
        FOLD
        self.n += 1;
        Ok(())
    }
}
pub fn fit(model: &Mlp, opt: &mut candle_nn::AdamW, data: &[(Tensor, Tensor)], meter: &mut Meter) -> Result<()> {
    for (x, y) in data {
        let l = loss::mse(&model.forward(x)?, y)?;
        opt.backward_step(&l)?;
        meter.update(&l)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_sum_kept_in_an_option_field_by_a_method_is_seen_at_the_call() {
        let src = OPTION_METER.replace(
            "FOLD",
            "self.sum = Some(match self.sum.take() { Some(s) => (s + value)?, None => value.clone() });",
        );
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![16]);
        let host = OPTION_METER.replace(
            "FOLD",
            "self.sum = Some(match self.sum.take() { Some(s) => (s + value.detach())?, None => value.detach() });",
        );
        assert_eq!(count("accumulated_loss_tensor", None, &host), 0);
    }

    /// Sums kept per key, and a bank of features a frozen backbone computes.
    const KEYED: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Optimizer, VarBuilder, VarMap};
use std::collections::HashMap;
struct Backbone { l: Linear }
impl Backbone {
    fn load(vb: VarBuilder) -> Result<Self> { Ok(Self { l: linear(8, 4, vb.pp("l"))? }) }
    fn embed(&self, x: &Tensor) -> Result<Tensor> { self.l.forward(x) }
}
fn main() -> Result<()> {
    let dev = Device::Cpu;
    let backbone = Backbone::load(VarBuilder::from_pth("b.pth", DType::F32, &dev)?)?;
    let varmap = VarMap::new();
    let head = linear(4, 2, VarBuilder::from_varmap(&varmap, DType::F32, &dev))?;
    let mut opt = candle_nn::SGD::new(varmap.all_vars(), 0.1)?;
    let mut totals: HashMap<String, f32> = HashMap::new();
    let mut bank = Tensor::zeros((0, 4), DType::F32, &dev)?;
    for (x, tasks) in data() {
        let feats = backbone.embed(&x)?;
        bank = Tensor::cat(&[&bank, &feats], 0)?;
        let per_task: Vec<(String, Tensor)> = tasks.iter().map(|t| (t.name.clone(), head.forward(&feats).unwrap())).collect();
        for (name, l) in &per_task {
            opt.backward_step(l)?;
            *totals.entry(name.clone()).or_default() += l.to_scalar::<f32>()?;
        }
    }
    Ok(())
}
"#;

    #[test]
    fn a_key_picks_the_place_and_a_frozen_backbone_makes_no_graph() {
        assert_eq!(count("accumulated_loss_tensor", None, KEYED), 0);
        // The same bank filled by a trainable backbone keeps every step's graph.
        let trainable = KEYED.replace(
            "VarBuilder::from_pth(\"b.pth\", DType::F32, &dev)?",
            "VarBuilder::from_varmap(&varmap, DType::F32, &dev)",
        );
        assert_ne!(trainable, KEYED);
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &trainable), vec![20]);
    }

    /// A stats struct of the crate with its own `add`, folding each step's loss.
    const STATS_ADD: &str = r#"
use candle_core::{Tensor, Var};
pub struct EpochStats { sum: Option<Tensor>, n: usize }
impl EpochStats {
    pub fn new() -> Self { Self { sum: None, n: 0 } }
    pub fn add(&mut self, l: Tensor) -> candle_core::Result<()> {
        self.sum = Some(match self.sum.take() { Some(s) => (s + l)?, None => l });
        self.n += 1;
        Ok(())
    }
}
pub fn train(w: &Var, opt: &mut candle_nn::SGD, data: &[Tensor]) -> candle_core::Result<()> {
    let mut stats = EpochStats::new();
    for x in data {
        let loss = x.matmul(w.as_tensor())?.mean_all()?;
        stats.add(LOSS)?;
        opt.backward_step(&loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_crate_method_named_like_a_tensor_op_is_the_crates() {
        assert_eq!(
            crate::rules::testing::lines("accumulated_loss_tensor", &STATS_ADD.replace("LOSS", "loss.clone()")),
            vec![16]
        );
        assert_eq!(count("accumulated_loss_tensor", None, &STATS_ADD.replace("LOSS", "loss.clone().detach()")), 0);
    }

    /// tch: a running sum of PyTorch's `.data` (no autograd history).
    const TCH_DATA: &str = r#"
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};
fn main() -> anyhow::Result<()> {
    let vs = nn::VarStore::new(Device::Cpu);
    let net = nn::linear(vs.root() / "a", 10, 1, Default::default());
    let mut opt = nn::Sgd::default().build(&vs, 1e-2)?;
    let mut running = Tensor::zeros([], (Kind::Float, Device::Cpu));
    for _ in 0..10_000 {
        let x = Tensor::randn([8, 10], (Kind::Float, Device::Cpu));
        let loss = net.forward(&x).mean(Kind::Float);
        opt.backward_step(&loss);
        running = running + LOSS;
    }
    Ok(())
}
"#;

    #[test]
    fn tchs_data_has_no_autograd_history() {
        assert_eq!(count("accumulated_loss_tensor", None, &TCH_DATA.replace("LOSS", "loss.data()")), 0);
        assert_eq!(count("accumulated_loss_tensor", None, &TCH_DATA.replace("LOSS", "loss.shallow_clone()")), 1);
    }

    /// Epoch metrics in a map: the `"loss"` entry sums graph-carrying losses (the map outlives
    /// the batches), the `"seen"` entry only counts.
    const METRICS_MAP: &str = r#"
use std::collections::HashMap;
use tch::{nn, Device, Kind, Tensor};
fn fit(model: &Net, opt: &mut nn::Optimizer, batches: &[(Tensor, Tensor)], device: Device) {
    for epoch in 0..10 {
        let mut metrics: HashMap<&str, Tensor> = HashMap::new();
        for (xs, ys) in batches {
            let loss = model.forward(xs).cross_entropy_for_logits(ys);
            opt.backward_step(&loss);
            *metrics.entry("loss").or_insert_with(|| Tensor::zeros([], (Kind::Float, device))) += &loss;
            *metrics.entry("seen").or_insert_with(|| Tensor::zeros([], (Kind::Float, device))) += 64.0;
        }
        println!("{epoch} {}", f64::try_from(&metrics["loss"]).unwrap());
    }
}
"#;

    #[test]
    fn reports_a_loss_summed_into_a_map_entry() {
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", METRICS_MAP), vec![10]);
        let detached = METRICS_MAP.replace("+= &loss;", "+= loss.detach();");
        assert_ne!(detached, METRICS_MAP);
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
    }

    /// The sum sits in a closure bound before the loops, which the loop calls with each loss.
    const CLOSURE_SUM: &str = r#"
use candle_core::{DType, Device, Tensor};
fn update(model: &Policy, opt: &mut candle_nn::AdamW, batches: &[Tensor], dev: &Device) -> candle_core::Result<f32> {
    let mut pi_sum = Tensor::zeros((), DType::F32, dev)?;
    let mut n = 0usize;
    let mut record = |pi: &Tensor| -> candle_core::Result<()> {
        pi_sum = (&pi_sum + pi)?;
        n += 1;
        Ok(())
    };
    for b in batches {
        let pi_loss = model.forward(b)?.mean_all()?;
        opt.backward_step(&pi_loss)?;
        record(&pi_loss)?;
    }
    Ok(pi_sum.to_scalar::<f32>()? / n as f32)
}
"#;

    #[test]
    fn reports_a_sum_kept_by_a_closure_the_loop_calls() {
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", CLOSURE_SUM), vec![7]);
        let detached = CLOSURE_SUM.replace("record(&pi_loss)?;", "record(&pi_loss.detach())?;");
        assert_ne!(detached, CLOSURE_SUM);
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
    }

    /// A running-loss tracker of the crate whose method is named `push`: the crate's method,
    /// which sums, not `Vec::push`.
    const RUNNING_PUSH: &str = r#"
use candle_core::{Result, Tensor};
#[derive(Default)]
pub struct RunningLoss { total: Option<Tensor>, n: usize }
impl RunningLoss {
    pub fn push(&mut self, loss: &Tensor) -> Result<()> {
        self.total = Some(match self.total.take() { Some(t) => (t + loss)?, None => loss.clone() });
        self.n += 1;
        Ok(())
    }
}
pub fn train(model: &Mlp, opt: &mut candle_nn::AdamW, data: &[(Tensor, Tensor)]) -> Result<()> {
    let mut running = RunningLoss::default();
    for (x, y) in data {
        let loss = candle_nn::loss::mse(&model.forward(x)?, y)?;
        opt.backward_step(&loss)?;
        running.push(&loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_crate_method_named_push_is_the_crates() {
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", RUNNING_PUSH), vec![17]);
        let detached = RUNNING_PUSH.replace("running.push(&loss)?;", "running.push(&loss.detach())?;");
        assert_ne!(detached, RUNNING_PUSH);
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
        // Held in a field of a trainer, with a second argument (`insert(loss, weight)`, which
        // `Vec::insert` would take for an index and a value).
        let field = RUNNING_PUSH
            .replace("pub fn push(&mut self, loss: &Tensor)", "pub fn insert(&mut self, loss: &Tensor, _w: f32)")
            .replace(
                "pub fn train(model: &Mlp, opt: &mut candle_nn::AdamW, data: &[(Tensor, Tensor)]) -> Result<()> {\n    let mut running = RunningLoss::default();",
                "pub struct Trainer { running: RunningLoss }\nimpl Trainer {\npub fn train(&mut self, model: &Mlp, opt: &mut candle_nn::AdamW, data: &[(Tensor, Tensor)]) -> Result<()> {",
            )
            .replace("running.push(&loss)?;\n    }\n    Ok(())\n}", "self.running.insert(&LOSS, 1.0)?;\n    }\n    Ok(())\n}\n}");
        assert!(field.contains("self.running.insert(&LOSS, 1.0)"), "{field}");
        assert_eq!(count("accumulated_loss_tensor", None, &field.replace("LOSS", "loss")), 1);
        assert_eq!(count("accumulated_loss_tensor", None, &field.replace("LOSS", "loss.detach()")), 0);
    }

    /// candle: the loss is made from a `Var` the function is handed, and the backward runs on
    /// the sum itself, which is never emptied: every step backpropagates through all earlier ones.
    const BACKWARD_ON_SUM: &str = r#"
use candle_core::{DType, Device, Tensor, Var};
use candle_nn::{Optimizer, SGD};
fn train(w: &Var, xs: &[Tensor]) -> candle_core::Result<()> {
    let mut opt = SGD::new(vec![w.clone()], 0.1)?;
    let mut acc = Tensor::zeros((), DType::F32, &Device::Cpu)?;
    for (i, x) in xs.iter().enumerate() {
        let loss = x.matmul(w.as_tensor())?.sum_all()?;
        acc = (acc + loss)?;
        let grads = acc.backward()?;
        opt.step(&grads)?;
        EMPTY
    }
    Ok(())
}
"#;

    #[test]
    fn reports_a_sum_backpropagated_every_step_and_never_emptied() {
        assert_eq!(
            crate::rules::testing::lines("accumulated_loss_tensor", &BACKWARD_ON_SUM.replace("EMPTY", "")),
            vec![9]
        );
        // Emptied after each backward: deliberate gradient accumulation.
        let emptied = BACKWARD_ON_SUM.replace("EMPTY", "acc = Tensor::zeros((), DType::F32, &Device::Cpu)?;");
        assert_eq!(count("accumulated_loss_tensor", None, &emptied), 0);
    }

    /// A recurrent state kept in `self` by a method called once per training step (issue 11:
    /// found by the runtime guard at 213 KiB per iteration, missed by the linter).
    const STATE_IN_SELF: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
struct Cell { wx: Linear, wh: Linear }
impl Cell {
    fn step(&self, x: &Tensor, h: &Tensor) -> Result<Tensor> { (self.wx.forward(x)? + self.wh.forward(h)?)?.tanh() }
}
struct Model { cell: Cell, h: Tensor }
impl Model {
    fn forward_chunk(&mut self, xs: &[Tensor]) -> Result<Tensor> {
        CUT
        let mut out = Vec::new();
        for x in xs {
            self.h = self.cell.step(x, &self.h)?;
            out.push(self.h.clone());
        }
        Tensor::stack(&out, 0)
    }
    fn reset_state(&mut self) -> Result<()> { self.h = self.h.zeros_like()?; Ok(()) }
}
fn train(chunks: &[Vec<Tensor>]) -> Result<()> {
    let dev = Device::Cpu;
    let vm = VarMap::new();
    let vb = VarBuilder::from_varmap(&vm, DType::F32, &dev);
    let cell = Cell { wx: candle_nn::linear(4, 4, vb.pp("wx"))?, wh: candle_nn::linear(4, 4, vb.pp("wh"))? };
    let mut model = Model { cell, h: Tensor::zeros((1, 4), DType::F32, &dev)? };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for xs in chunks {
        RESET
        let y = model.forward_chunk(xs)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
"#;

    #[test]
    fn reports_a_state_kept_in_self_by_a_method_called_every_step() {
        let src = STATE_IN_SELF.replace("CUT", "").replace("RESET", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![30]);
        // Cut at the start of each call, or reset before each chunk: one chunk's graph at a time.
        let cut = STATE_IN_SELF.replace("CUT", "self.h = self.h.detach();").replace("RESET", "");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
        let reset = STATE_IN_SELF.replace("CUT", "").replace("RESET", "model.reset_state()?;");
        assert_eq!(count("accumulated_loss_tensor", None, &reset), 0);
        let cut_by_loop = STATE_IN_SELF.replace("CUT", "").replace("RESET", "model.h = model.h.detach();");
        assert_eq!(count("accumulated_loss_tensor", None, &cut_by_loop), 0);
        // A method of any name that starts the field afresh, called in the training loop (here
        // one loop out from the call that keeps the state).
        for start in [
            "fn begin_chunk(&mut self) { self.h = self.h.detach(); }",
            "fn begin_chunk(&mut self) { self.h = Some(&self.h).map(|t| t.detach()).unwrap(); }",
        ] {
            let src = STATE_IN_SELF
                .replace("CUT", "")
                .replace("    fn reset_state(", &format!("    {start}\n    fn reset_state("))
                .replace("RESET", "model.begin_chunk();")
                .replace(
                    "let y = model.forward_chunk(xs)?;",
                    "let y = { let mut y = None; for _ in 0..1 { y = Some(model.forward_chunk(xs)?); } y.unwrap() };",
                );
            assert_eq!(count("accumulated_loss_tensor", None, &src), 0, "{start}");
        }
        // Another field cut: the state is still kept.
        let other = STATE_IN_SELF.replace("CUT", "").replace("RESET", "model.cell = model.cell.clone();");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &other), vec![30]);
        // A state kept only when a flag of the model is on (a key/value cache switched off for
        // training) is not known to be kept.
        let flagged = STATE_IN_SELF
            .replace(
                "struct Model { cell: Cell, h: Tensor }",
                "struct Model { cell: Cell, h: Tensor, use_cache: bool }",
            )
            .replace(
                "self.h = self.cell.step(x, &self.h)?;",
                "if self.use_cache { self.h = self.cell.step(x, &self.h)?; }",
            )
            .replace(
                "h: Tensor::zeros((1, 4), DType::F32, &dev)? }",
                "h: Tensor::zeros((1, 4), DType::F32, &dev)?, use_cache: false }",
            )
            .replace("CUT", "")
            .replace("RESET", "");
        assert_eq!(count("accumulated_loss_tensor", None, &flagged), 0);
    }

    /// A training-step method that runs backward itself and keeps the new state, computed from
    /// the old one through a local, in `self`.
    const STEP_KEEPS_STATE: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{loss, AdamW, Linear, Module, Optimizer};
struct Online { w_in: Linear, w_h: Linear, h: Tensor, opt: AdamW }
impl Online {
    fn train_step(&mut self, x: &Tensor, y: &Tensor) -> Result<f32> {
        let h = (self.w_in.forward(x)? + self.w_h.forward(&self.h)?)?.tanh()?;
        let l = loss::mse(&h, y)?;
        self.opt.backward_step(&l)?;
        self.h = KEPT;
        l.to_scalar::<f32>()
    }
}
"#;

    #[test]
    fn reports_a_state_a_training_step_keeps_through_a_local() {
        let src = STEP_KEEPS_STATE.replace("KEPT", "h");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![10]);
        let cut = STEP_KEEPS_STATE.replace("KEPT", "h.detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
        // A field that only keeps the step's output, not computed from its own old value.
        let output =
            STEP_KEEPS_STATE.replace("self.w_h.forward(&self.h)?", "self.w_h.forward(x)?").replace("KEPT", "h");
        assert_eq!(count("accumulated_loss_tensor", None, &output), 0);
    }

    /// tch: a running sum of activations kept in a field by a method the training loop calls
    /// with gradients on; under a caller's no-grad guard it records nothing.
    const TCH_STATS: &str = r#"
use tch::{nn, nn::Module, nn::OptimizerConfig, Kind, Tensor};
struct Stats { sum: Tensor }
impl Stats {
    fn track(&mut self, net: &nn::Sequential, x: &Tensor) {
        let feats = net.forward(x);
        self.sum = &self.sum + feats.sum(Kind::Float);
    }
}
fn train(vs: &nn::VarStore, net: &nn::Sequential, xs: &[Tensor]) {
    let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
    let mut stats = Stats { sum: Tensor::zeros([1], (Kind::Float, tch::Device::Cpu)) };
    for x in xs {
        GUARD
        stats.track(net, x);
        END
        opt.backward_step(&net.forward(x).mean(Kind::Float));
    }
}
"#;

    #[test]
    fn reports_a_tch_sum_a_method_keeps_in_its_receiver() {
        let src = TCH_STATS.replace("GUARD", "").replace("END", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![15]);
        let guarded = TCH_STATS.replace("GUARD", "{ let _g = tch::no_grad_guard();").replace("END", "}");
        assert_eq!(count("accumulated_loss_tensor", None, &guarded), 0);
    }

    #[test]
    fn a_state_kept_by_a_submodule_called_in_a_loop_is_reported() {
        // `Seq::forward_seq` calls the cell once per element: the cell's state is kept on every
        // path through `forward_seq` (a loop body is not a condition).
        let src = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
struct Cell { wx: Linear, wh: Linear, h: Tensor }
impl Cell {
    fn forward_step(&mut self, x: &Tensor) -> Result<Tensor> {
        self.h = (self.wx.forward(x)? + self.wh.forward(&self.h)?)?.tanh()?;
        Ok(self.h.clone())
    }
}
struct Seq { cell: Cell }
impl Seq {
    fn forward_seq(&mut self, xs: &[Tensor]) -> Result<Tensor> {
        let mut last = xs[0].clone();
        for x in xs {
            last = self.cell.forward_step(x)?;
        }
        Ok(last)
    }
}
fn train(chunks: &[Vec<Tensor>]) -> Result<()> {
    let dev = Device::Cpu;
    let vm = VarMap::new();
    let vb = VarBuilder::from_varmap(&vm, DType::F32, &dev);
    let cell = Cell { wx: candle_nn::linear(4, 4, vb.pp("wx"))?, wh: candle_nn::linear(4, 4, vb.pp("wh"))?, h: Tensor::zeros((1, 4), DType::F32, &dev)? };
    let mut model = Seq { cell };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for xs in chunks {
        let y = model.forward_seq(xs)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
"#;
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", src), vec![29]);
    }

    /// A multi-layer recurrent state, one tensor per layer, kept in `self` and cut element by
    /// element at the start of each chunk.
    const LAYER_STATES_IN_SELF: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
struct Cell { wx: Linear, wh: Linear }
impl Cell {
    fn step(&self, x: &Tensor, h: &Tensor) -> Result<Tensor> { (self.wx.forward(x)? + self.wh.forward(h)?)?.tanh() }
}
struct Stack { cells: Vec<Cell>, hs: Vec<Tensor> }
impl Stack {
    fn forward_chunk(&mut self, xs: &[Tensor]) -> Result<Tensor> {
        CUT
        let mut out = Vec::new();
        for x in xs {
            let mut inp = x.clone();
            for (i, cell) in self.cells.iter().enumerate() {
                let h = cell.step(&inp, &self.hs[i])?;
                self.hs[i] = h.clone();
                inp = h;
            }
            out.push(inp);
        }
        Tensor::stack(&out, 0)
    }
}
fn train(chunks: &[Vec<Tensor>], cells: Vec<Cell>, hs: Vec<Tensor>, vm: &VarMap) -> Result<()> {
    let mut model = Stack { cells, hs };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for xs in chunks {
        let y = model.forward_chunk(xs)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
fn main() -> Result<()> {
    let dev = Device::Cpu;
    let vm = VarMap::new();
    let vb = VarBuilder::from_varmap(&vm, DType::F32, &dev);
    let cells = vec![Cell { wx: candle_nn::linear(4, 4, vb.pp("wx"))?, wh: candle_nn::linear(4, 4, vb.pp("wh"))? }];
    train(&[], cells, vec![Tensor::zeros((1, 4), DType::F32, &dev)?], &vm)
}
"#;

    #[test]
    fn a_state_cut_element_by_element_is_cut() {
        let src = LAYER_STATES_IN_SELF.replace("CUT", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![29]);
        for cut in [
            "for h in self.hs.iter_mut() { *h = h.detach(); }",
            "for h in &mut self.hs { *h = h.detach(); }",
            "self.hs = self.hs.iter().map(|h| h.detach()).collect();",
            "for i in 0..self.hs.len() { self.hs[i] = self.hs[i].detach(); }",
        ] {
            let src = LAYER_STATES_IN_SELF.replace("CUT", cut);
            assert_eq!(count("accumulated_loss_tensor", None, &src), 0, "{cut}");
        }
        // Elements written without a cut, or cut only on some paths: the old state is read back.
        for kept in [
            "for h in self.hs.iter_mut() { *h = h.clone(); }",
            "for h in self.hs.iter_mut() { if h.dims().len() > 5 { *h = h.detach(); } }",
            "for i in 1..self.hs.len() { self.hs[i] = self.hs[i].detach(); }",
            "self.hs = self.hs.iter().filter(|h| h.dims().len() < 5).cloned().collect();",
        ] {
            let src = LAYER_STATES_IN_SELF.replace("CUT", kept);
            assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![29], "{kept}");
        }
    }

    /// The same states in a local of the training loop: each layer's new state is computed
    /// from its old one through a local (`let h = ..; hs[i] = h.clone();`).
    const LAYER_STATES_LOCAL: &str = r#"
use candle_core::{Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer};
fn train(chunks: &[Vec<Tensor>], cells: &[(Linear, Linear)], mut hs: Vec<Tensor>, opt: &mut AdamW) -> Result<()> {
    for xs in chunks {
        CUT
        let mut out = Vec::new();
        for x in xs {
            let mut inp = x.clone();
            for (i, (wx, wh)) in cells.iter().enumerate() {
                let h = (wx.forward(&inp)? + wh.forward(&hs[i])?)?.tanh()?;
                hs[i] = h.clone();
                inp = h;
            }
            out.push(inp);
        }
        opt.backward_step(&Tensor::stack(&out, 0)?.sqr()?.mean_all()?)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_local_state_written_through_a_local_is_recurrent() {
        let src = LAYER_STATES_LOCAL.replace("CUT", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &src), vec![12]);
        for cut in [
            "for h in hs.iter_mut() { *h = h.detach(); }",
            "hs = hs.iter().map(|h| h.detach()).collect();",
            "for i in 0..hs.len() { hs[i] = hs[i].detach(); }",
        ] {
            let src = LAYER_STATES_LOCAL.replace("CUT", cut);
            assert_eq!(count("accumulated_loss_tensor", None, &src), 0, "{cut}");
        }
    }

    /// A state kept two calls below the training loop, through fields whose calls are resolved by
    /// the fields' declared types; the innermost method is named like an optimizer's `step`.
    const STATE_TWO_FIELDS_DOWN: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
struct Cell { wx: Linear, wh: Linear, h: Tensor }
impl Cell {
    fn step(&mut self, x: &Tensor) -> Result<Tensor> {
        self.h = (self.wx.forward(x)? + self.wh.forward(&self.h)?)?.tanh()?;
        Ok(self.h.clone())
    }
}
struct Layer { cell: Cell, norm: Linear }
impl Layer {
    fn run(&mut self, x: &Tensor) -> Result<Tensor> {
        let h = self.cell.step(x)?;
        self.norm.forward(&h)
    }
}
struct Model { layer: Layer }
impl Model {
    fn forward_chunk(&mut self, xs: &[Tensor]) -> Result<Tensor> {
        let mut outs = Vec::new();
        for x in xs {
            outs.push(self.layer.run(x)?);
        }
        Tensor::stack(&outs, 0)
    }
}
fn main() -> Result<()> {
    let dev = Device::Cpu;
    let vm = VarMap::new();
    let vb = VarBuilder::from_varmap(&vm, DType::F32, &dev);
    let cell = Cell { wx: candle_nn::linear(4, 4, vb.pp("wx"))?, wh: candle_nn::linear(4, 4, vb.pp("wh"))?, h: Tensor::zeros((1, 4), DType::F32, &dev)? };
    let layer = Layer { cell, norm: candle_nn::linear(4, 4, vb.pp("n"))? };
    let mut model = Model { layer };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    let chunks: Vec<Vec<Tensor>> = Vec::new();
    for xs in &chunks {
        let y = model.forward_chunk(xs)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_kept_through_typed_fields_is_reported_at_the_call() {
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", STATE_TWO_FIELDS_DOWN), vec![38]);
        // `forward_chunk`'s loop over the sequence is the training step's forward pass (its
        // result is backpropagated): not a sampling loop.
        assert_eq!(count("sampling_loop_chains_graph", None, STATE_TWO_FIELDS_DOWN), 0);
        // Called down two fields at once (`self.layer.cell.step(x)`): the crate's `Cell::step`,
        // not an optimizer's.
        let nested =
            STATE_TWO_FIELDS_DOWN.replace("outs.push(self.layer.run(x)?);", "outs.push(self.layer.cell.step(x)?);");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &nested), vec![38]);
        // Reset by the method that calls it: nothing chains across calls.
        let reset = STATE_TWO_FIELDS_DOWN
            .replace(
                "        let h = self.cell.step(x)?;",
                "        self.cell.reset_state()?;\n        let h = self.cell.step(x)?;",
            )
            .replace(
                "impl Cell {",
                "impl Cell {\n    fn reset_state(&mut self) -> Result<()> { self.h = self.h.zeros_like()?; Ok(()) }",
            );
        assert_eq!(count("accumulated_loss_tensor", None, &reset), 0);
        // The field it is kept in cut before each chunk: by the training loop, or by the method
        // that runs the chunk.
        for (at, cut) in [
            ("        let y = model.forward_chunk(xs)?;", "model.layer.cell.h = model.layer.cell.h.detach();"),
            ("        let mut outs = Vec::new();", "self.layer.cell.h = self.layer.cell.h.detach();"),
        ] {
            let src = STATE_TWO_FIELDS_DOWN.replace(at, &format!("        {cut}\n{at}"));
            assert_eq!(count("accumulated_loss_tensor", None, &src), 0, "{cut}");
        }
    }

    /// Cells that keep their own state, walked by a stack; the stack may reset every cell first.
    const CELLS_RESET_BY_THE_STACK: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
struct Cell { wx: Linear, wh: Linear, h: Tensor }
impl Cell {
    fn advance(&mut self, x: &Tensor) -> Result<Tensor> {
        self.h = (self.wx.forward(x)? + self.wh.forward(&self.h)?)?.tanh()?;
        Ok(self.h.clone())
    }
    fn reset(&mut self) -> Result<()> { self.h = self.h.zeros_like()?; Ok(()) }
}
struct Stack { cells: Vec<Cell> }
impl Stack {
    fn run(&mut self, xs: &[Tensor]) -> Result<Tensor> {
        RESET
        let mut last = xs[0].clone();
        for x in xs {
            let mut y = x.clone();
            for c in self.cells.iter_mut() {
                y = c.advance(&y)?;
            }
            last = y;
        }
        Ok(last)
    }
}
pub fn train(chunks: &[Vec<Tensor>], vm: &VarMap, cells: Vec<Cell>) -> Result<()> {
    let mut stack = Stack { cells };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for xs in chunks {
        let y = stack.run(xs)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
pub fn cells(vm: &VarMap) -> Result<Vec<Cell>> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let h = Tensor::zeros((1, 4), DType::F32, &Device::Cpu)?;
    Ok(vec![Cell { wx: candle_nn::linear(4, 4, vb.pp("wx"))?, wh: candle_nn::linear(4, 4, vb.pp("wh"))?, h }])
}
"#;

    #[test]
    fn cells_reset_one_by_one_before_the_sequence_keep_nothing() {
        let kept = CELLS_RESET_BY_THE_STACK.replace("RESET", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![31]);
        let reset = CELLS_RESET_BY_THE_STACK.replace("RESET", "for c in self.cells.iter_mut() { c.reset()?; }");
        assert_eq!(count("accumulated_loss_tensor", None, &reset), 0);
    }

    /// The backward runs inside a method the loop hands the loss to; the data it hands to a
    /// method that computes a loss from it carries no graph.
    const BACKWARD_IN_A_METHOD: &str = r#"
use candle_core::{DType, Device, Result, Tensor, Var};
struct Model { w: Var }
impl Model {
    fn predict(&self, x: &Tensor) -> Result<Tensor> { x.matmul(self.w.as_tensor()) }
    fn update(&self, loss: &Tensor) -> Result<()> {
        let grads = loss.backward()?;
        if let Some(g) = grads.get(self.w.as_tensor()) {
            self.w.set(&(self.w.as_tensor() - g)?)?;
        }
        Ok(())
    }
    fn learn(&self, batch: &Tensor) -> Result<()> {
        let loss = self.predict(batch)?.sqr()?.mean_all()?;
        self.update(&loss)
    }
}
pub fn train(model: &Model, dev: &Device) -> Result<()> {
    let mut total = Tensor::zeros((), DType::F32, dev)?;
    for _ in 0..100 {
        let x = Tensor::randn(0f32, 1f32, (128, 32), dev)?;
        STEP
    }
    println!("{total}");
    Ok(())
}
"#;

    #[test]
    fn a_loss_handed_to_a_method_that_runs_backward_carries_its_graph() {
        let kept = BACKWARD_IN_A_METHOD.replace(
            "STEP",
            "let loss = model.predict(&x)?.sqr()?.mean_all()?;\n        model.update(&loss)?;\n        total = (total + &loss)?;",
        );
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![24]);
        // The batch a loss is computed from inside `learn` is data.
        let data = BACKWARD_IN_A_METHOD.replace("STEP", "model.learn(&x)?;\n        total = (total + x.sum_all()?)?;");
        assert_eq!(count("accumulated_loss_tensor", None, &data), 0);
    }

    /// A layer keeps a running statistic of what its caller hands in.
    const RUNNING_STAT_OF_AN_ARGUMENT: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Centering { running: Tensor }
impl Centering {
    pub fn forward_train(&mut self, z: &Tensor) -> Result<Tensor> {
        self.running = ((&self.running * 0.9)? + (KEPT * 0.1)?)?;
        z.broadcast_sub(&self.running)
    }
}
pub struct Net { enc: Linear, center: Centering }
impl Net {
    pub fn run(&mut self, x: &Tensor) -> Result<Tensor> {
        let z = self.enc.forward(x)?;
        self.center.forward_train(&ARG)
    }
}
pub fn train(xs: &[Tensor]) -> Result<()> {
    let vm = VarMap::new();
    let vb = VarBuilder::from_varmap(&vm, DType::F32, &Device::Cpu);
    let mut net = Net { enc: candle_nn::linear(4, 4, vb.pp("enc"))?, center: Centering { running: Tensor::zeros((1, 4), DType::F32, &Device::Cpu)? } };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for x in xs {
        let y = net.run(x)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_running_statistic_of_a_graph_carrying_argument_is_kept_state() {
        let kept = RUNNING_STAT_OF_AN_ARGUMENT.replace("KEPT", "z.mean_keepdim(0)?").replace("ARG", "z");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![24]);
        // Detached first, or computed from the raw input (data): nothing chains.
        let detached = RUNNING_STAT_OF_AN_ARGUMENT.replace("KEPT", "z.mean_keepdim(0)?.detach()").replace("ARG", "z");
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
        let raw = RUNNING_STAT_OF_AN_ARGUMENT.replace("KEPT", "z.mean_keepdim(0)?").replace("ARG", "x");
        assert_eq!(count("accumulated_loss_tensor", None, &raw), 0);
    }

    /// A state kept in a `&mut` argument by a free function the training loop calls.
    const STATE_IN_A_LENT_STRUCT: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{Linear, Module, Optimizer, VarBuilder, VarMap, SGD};
pub struct RecState { per_layer: Vec<Tensor> }
fn unroll(cells: &[(Linear, Linear)], st: &mut RecState, xs: &[Tensor]) -> Result<Tensor> {
    let mut top = xs[0].clone();
    for x in xs {
        let mut inp = x.clone();
        for (l, (wi, wr)) in cells.iter().enumerate() {
            let nh = (wi.forward(&inp)? + wr.forward(&st.per_layer[l])?)?.tanh()?;
            st.per_layer[l] = nh;
            inp = st.per_layer[l].clone();
        }
        top = inp;
    }
    Ok(top)
}
pub fn train(chunks: &[Vec<Tensor>]) -> Result<()> {
    let vm = VarMap::new();
    let vb = VarBuilder::from_varmap(&vm, DType::F32, &Device::Cpu);
    let cells = vec![(candle_nn::linear(4, 4, vb.pp("i"))?, candle_nn::linear(4, 4, vb.pp("r"))?)];
    let mut st = RecState { per_layer: vec![Tensor::zeros((1, 4), DType::F32, &Device::Cpu)?] };
    let mut opt = SGD::new(vm.all_vars(), 0.01)?;
    for xs in chunks {
        CUT
        let y = unroll(&cells, &mut st, xs)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_kept_in_a_lent_struct_is_reported_at_the_call() {
        let kept = STATE_IN_A_LENT_STRUCT.replace("CUT", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![26]);
        let cut = STATE_IN_A_LENT_STRUCT.replace("CUT", "for h in st.per_layer.iter_mut() { *h = h.detach(); }");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// A layer with a recurrent state beside a window buffer, walked by a stack whose own reset
    /// method may clear only the window, the state too, or go through a sub-struct.
    const STATE_BESIDE_A_BUFFER: &str = r#"
use std::collections::VecDeque;
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
struct Layer { w: Linear, window: VecDeque<Tensor>, s: Tensor }
impl Layer {
    fn clear(&mut self) { CLEAR }
    fn step(&mut self, x: &Tensor) -> Result<Tensor> {
        self.window.push_back(x.clone());
        self.s = (self.w.forward(x)? + &self.s)?.tanh()?;
        Ok(self.s.clone())
    }
}
struct Stack { layers: Vec<Layer> }
impl Stack {
    fn reset_buffers(&mut self) { for l in self.layers.iter_mut() { l.clear(); } }
    fn run(&mut self, x: &Tensor) -> Result<Tensor> {
        let mut y = x.clone();
        for l in self.layers.iter_mut() {
            y = l.step(&y)?;
        }
        Ok(y)
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap, layers: Vec<Layer>) -> Result<()> {
    let mut net = Stack { layers };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for x in xs {
        net.reset_buffers();
        let y = net.run(x)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
pub fn layer(vm: &VarMap) -> Result<Layer> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let s = Tensor::zeros((1, 4), DType::F32, &Device::Cpu)?;
    Ok(Layer { w: candle_nn::linear(4, 4, vb.pp("w"))?, window: VecDeque::new(), s })
}
"#;

    #[test]
    fn a_reset_method_that_clears_another_field_leaves_the_state_chaining() {
        // `step` on an element of `layers: Vec<Layer>` is the crate's method, not an optimizer's.
        let window_only = STATE_BESIDE_A_BUFFER.replace("CLEAR", "self.window.clear();");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &window_only), vec![30]);
        let both =
            STATE_BESIDE_A_BUFFER.replace("CLEAR", "self.window.clear(); self.s = self.s.zeros_like().unwrap();");
        assert_eq!(count("accumulated_loss_tensor", None, &both), 0);
        // What the reset does is not known (a path handed to `for_each`): it resets all, as before.
        let unknown = STATE_BESIDE_A_BUFFER.replace("CLEAR", "self.window.iter_mut().for_each(drop);");
        assert_eq!(count("accumulated_loss_tensor", None, &unknown), 0);
    }

    /// A model whose state lives in a sub-struct that its reset method starts afresh.
    const STATE_IN_A_SUB_STRUCT: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, VarMap};
struct State { h: Tensor, pos: usize }
impl State {
    fn reset(&mut self, dev: &Device) -> Result<()> {
        self.h = Tensor::zeros((1, 4), DType::F32, dev)?;
        self.pos = 0;
        Ok(())
    }
}
struct Model { w: Linear, state: State, dev: Device }
impl Model {
    fn reset_cache(&mut self) { let _ = self.state.reset(&self.dev); }
    fn forward_train(&mut self, x: &Tensor) -> Result<Tensor> {
        let h = (self.w.forward(x)? + &self.state.h)?.tanh()?;
        self.state.h = h.clone();
        self.state.pos += 1;
        Ok(h)
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap, mut model: Model) -> Result<()> {
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for x in xs {
        RESET
        let y = model.forward_train(x)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
pub fn model(vm: &VarMap, dev: Device) -> Result<Model> {
    let vb = candle_nn::VarBuilder::from_varmap(vm, DType::F32, &dev);
    let state = State { h: Tensor::zeros((1, 4), DType::F32, &dev)?, pos: 0 };
    Ok(Model { w: candle_nn::linear(4, 4, vb.pp("w"))?, state, dev })
}
"#;

    #[test]
    fn a_reset_through_a_sub_struct_starts_its_state_afresh() {
        let kept = STATE_IN_A_SUB_STRUCT.replace("RESET", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![26]);
        let reset = STATE_IN_A_SUB_STRUCT.replace("RESET", "model.reset_cache();");
        assert_eq!(count("accumulated_loss_tensor", None, &reset), 0);
    }

    /// A recurrent state cut after every update, and a running baseline of the values beside it.
    const BASELINE_BESIDE_A_CUT_STATE: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Policy { w: Linear, v: Linear, hidden: Tensor, baseline: Tensor }
impl Policy {
    fn act(&mut self, obs: &Tensor) -> Result<Tensor> {
        self.hidden = (self.w.forward(obs)? + &self.hidden)?.tanh()?;
        self.v.forward(&self.hidden)
    }
    fn update_baseline(&mut self, values: &Tensor) -> Result<()> {
        self.baseline = ((&self.baseline * 0.95)? + (VALUES.mean_all()? * 0.05)?)?;
        Ok(())
    }
}
pub fn train(batches: &[Vec<Tensor>], vm: &VarMap, mut pol: Policy) -> Result<()> {
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for obs in batches {
        let mut vals = Vec::new();
        for o in obs {
            vals.push(pol.act(o)?);
        }
        let values = Tensor::stack(&vals, 0)?;
        pol.update_baseline(&values)?;
        let adv = values.broadcast_sub(&pol.baseline.detach())?;
        opt.backward_step(&adv.sqr()?.mean_all()?)?;
        pol.hidden = pol.hidden.detach();
    }
    Ok(())
}
pub fn policy(vm: &VarMap) -> Result<Policy> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let z = Tensor::zeros((1, 4), DType::F32, &Device::Cpu)?;
    Ok(Policy { w: candle_nn::linear(4, 4, vb.pp("w"))?, v: candle_nn::linear(4, 1, vb.pp("v"))?, hidden: z.clone(), baseline: z })
}
"#;

    #[test]
    fn a_running_statistic_is_not_a_reset_of_its_field() {
        // The method continues the baseline with what it is handed: it does not start it afresh.
        let kept = BASELINE_BESIDE_A_CUT_STATE.replace("VALUES", "values");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![23]);
        let detached = BASELINE_BESIDE_A_CUT_STATE.replace("VALUES", "values.detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
    }

    /// A slow state updated on every k-th call, or only while a flag is set.
    const SLOW_STATE: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct TwoRate { fast: Linear, slow: Linear, h: Tensor, s: Tensor, period: usize, keep: bool }
impl TwoRate {
    fn advance(&mut self, x: &Tensor, t: usize) -> Result<Tensor> {
        self.h = (self.fast.forward(x)? + &self.h.detach())?.tanh()?;
        if COND {
            self.s = (self.slow.forward(&self.h)? + &self.s)?.tanh()?;
        }
        self.h.broadcast_add(&self.s)
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap, mut net: TwoRate) -> Result<()> {
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for (t, x) in xs.iter().enumerate() {
        let y = net.advance(x, t)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
pub fn net(vm: &VarMap) -> Result<TwoRate> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let z = Tensor::zeros((1, 4), DType::F32, &Device::Cpu)?;
    Ok(TwoRate { fast: candle_nn::linear(4, 4, vb.pp("f"))?, slow: candle_nn::linear(4, 4, vb.pp("s"))?, h: z.clone(), s: z, period: 8, keep: true })
}
"#;

    #[test]
    fn a_state_updated_every_k_calls_still_chains() {
        let periodic = SLOW_STATE.replace("COND", "t % self.period == 0");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &periodic), vec![17]);
        // Behind a flag it is a cache kept while asked for, not a state of every call.
        let flagged = SLOW_STATE.replace("COND", "self.keep");
        assert_eq!(count("accumulated_loss_tensor", None, &flagged), 0);
    }

    /// A training-step method that carries its recurrent state to the next call through an
    /// `Option` field, unrolled in a local over the segment.
    const CARRIED_STATE: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Module, Optimizer, VarBuilder, VarMap, SGD};
pub struct Lm { cell: Linear, sgd: SGD, carry: Option<(Tensor, Tensor)> }
impl Lm {
    pub fn new(dev: &Device) -> Result<Self> {
        let params = VarMap::new();
        let vb = VarBuilder::from_varmap(&params, DType::F32, dev);
        Ok(Self { cell: linear(4, 4, vb.pp("c"))?, sgd: SGD::new(params.all_vars(), 0.1)?, carry: None })
    }
    fn step(&self, x: &Tensor, h: &Tensor, c: &Tensor) -> Result<(Tensor, Tensor)> {
        let n = (self.cell.forward(h)? + x)?.tanh()?;
        Ok((n, (c + x)?))
    }
    pub fn train_segment(&mut self, inputs: &[Tensor]) -> Result<f32> {
        let (mut h, mut c) = START;
        for x in inputs {
            (h, c) = self.step(x, &h, &c)?;
        }
        let l = h.sqr()?.mean_all()?;
        self.sgd.backward_step(&l)?;
        self.carry = Some((h, c));
        Ok(l.to_scalar::<f32>()?)
    }
}
pub fn fit(segments: &[Vec<Tensor>]) -> Result<()> {
    let mut lm = Lm::new(&Device::Cpu)?;
    for s in segments {
        lm.train_segment(s)?;
    }
    Ok(())
}
"#;

    #[test]
    fn reports_a_state_carried_to_the_next_call_through_a_local() {
        let carried = CARRIED_STATE.replace("START", "self.carry.take().unwrap()");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &carried), vec![22]);
        // Truncated backpropagation through time: the carried state is cut where it is taken.
        let cut =
            CARRIED_STATE.replace("START", "{ let (h, c) = self.carry.take().unwrap(); (h.detach(), c.detach()) }");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// Two tiers of state, each written through a local that lends it (`let f = &mut
    /// self.fast;`), cut from the loop by their paths.
    const TIERS: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Tier { w: Linear, state: Tensor }
pub struct Net { fast: Tier, slow: Tier }
impl Net {
    pub fn step(&mut self, x: &Tensor) -> Result<Tensor> {
        let f = &mut self.fast;
        f.state = (f.w.forward(x)? + &f.state)?.tanh()?;
        let s = &mut self.slow;
        s.state = (s.w.forward(x)? + &s.state)?.tanh()?;
        Ok((&self.fast.state + &self.slow.state)?)
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap, mut net: Net) -> Result<()> {
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for x in xs {
        CUT
        let y = net.step(x)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
pub fn net(vm: &VarMap) -> Result<Net> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let z = Tensor::zeros((1, 4), DType::F32, &Device::Cpu)?;
    let fast = Tier { w: linear(4, 4, vb.pp("f"))?, state: z.clone() };
    Ok(Net { fast, slow: Tier { w: linear(4, 4, vb.pp("s"))?, state: z } })
}
"#;

    #[test]
    fn states_written_through_a_lent_part_are_cut_by_their_paths() {
        let kept = TIERS.replace("CUT", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![19]);
        let both = TIERS.replace(
            "CUT",
            "net.fast.state = net.fast.state.detach();\n        net.slow.state = net.slow.state.detach();",
        );
        assert_eq!(count("accumulated_loss_tensor", None, &both), 0);
        // A cut of one tier's state leaves the other kept chaining, whichever it is.
        let slow = TIERS.replace("CUT", "net.slow.state = net.slow.state.detach();");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &slow), vec![19]);
        let fast = TIERS.replace("CUT", "net.fast.state = net.fast.state.detach();");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &fast), vec![19]);
    }

    /// A trainer whose own `step` method runs the backward and returns the loss it summed.
    const TRAINER_STEP: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Trainer { model: Linear, opt: AdamW, total_loss: Tensor, seen: usize }
impl Trainer {
    pub fn new(vm: &VarMap) -> Result<Self> {
        let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
        let opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
        Ok(Self { model: linear(4, 4, vb.pp("l"))?, opt, total_loss: Tensor::zeros((), DType::F32, &Device::Cpu)?, seen: 0 })
    }
    fn step(&mut self, x: &Tensor) -> Result<Tensor> {
        let loss = self.model.forward(x)?.sqr()?.mean_all()?;
        self.opt.backward_step(&loss)?;
        Ok(loss)
    }
    pub fn fit(&mut self, xs: &[Tensor]) -> Result<f32> {
        for x in xs {
            let loss = self.step(x)?;
            FOLD
        }
        Ok((&self.total_loss / self.seen as f64)?.to_scalar::<f32>()?)
    }
}
"#;

    #[test]
    fn a_method_named_step_on_self_is_the_crates() {
        let summed = TRAINER_STEP.replace("FOLD", "self.total_loss = (&self.total_loss + &loss)?;");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &summed), vec![19]);
        let detached = TRAINER_STEP.replace("FOLD", "self.total_loss = (&self.total_loss + &loss.detach())?;");
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
    }

    /// A session whose training loop calls its own method that carries the hidden state in `self`.
    const SESSION: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Session { w_in: Linear, w_rec: Linear, opt: AdamW, hidden: Tensor }
impl Session {
    pub fn new(vm: &VarMap) -> Result<Self> {
        let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
        let opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
        let hidden = Tensor::zeros((1, 4), DType::F32, &Device::Cpu)?;
        Ok(Self { w_in: linear(4, 4, vb.pp("i"))?, w_rec: linear(4, 4, vb.pp("r"))?, opt, hidden })
    }
    fn unroll(&mut self, xs: &[Tensor]) -> Result<Tensor> {
        let mut h = self.hidden.clone();
        for x in xs {
            h = (self.w_in.forward(x)? + self.w_rec.forward(&h)?)?.tanh()?;
        }
        self.hidden = h.clone();
        h.sqr()?.mean_all()
    }
    pub fn run(&mut self, windows: &[Vec<Tensor>]) -> Result<()> {
        for xs in windows {
            CUT
            let loss = self.unroll(xs)?;
            self.opt.backward_step(&loss)?;
        }
        Ok(())
    }
}
"#;

    #[test]
    fn a_state_a_method_keeps_in_its_own_self_is_reported_at_the_call() {
        let kept = SESSION.replace("CUT", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![23]);
        let cut = SESSION.replace("CUT", "self.hidden = self.hidden.detach();");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// A running statistic kept by a helper method the layer's forward hands the batch
    /// statistics to (`self.update_stats(&mean)`), two calls below the training step.
    const STAT_HELPER: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Norm { running_mean: Tensor, momentum: f64 }
impl Norm {
    fn forward_train(&mut self, x: &Tensor) -> Result<Tensor> {
        let mean = x.mean_keepdim(0)?;
        self.update_stats(&ARG)?;
        x.broadcast_sub(&mean)
    }
    fn update_stats(&mut self, mean: &Tensor) -> Result<()> {
        self.running_mean = ((&self.running_mean * (1.0 - self.momentum))? + (mean * self.momentum)?)?;
        Ok(())
    }
}
pub struct Net { fc: Linear, norm: Norm }
impl Net {
    pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        let h = self.fc.forward(x)?;
        self.norm.forward_train(&h)
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let norm = Norm { running_mean: Tensor::zeros((1, 4), DType::F32, &Device::Cpu)?, momentum: 0.1 };
    let mut net = Net { fc: linear(4, 4, vb.pp("fc"))?, norm };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for x in xs {
        let y = net.forward(x)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_running_statistic_kept_by_a_helper_method_is_reported_at_the_call() {
        let kept = STAT_HELPER.replace("ARG", "mean");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![29]);
        let labels = crate::rules::testing::labels("accumulated_loss_tensor", &kept);
        assert!(
            labels.contains(&(12, "`self.running_mean` is computed from its old value here".to_string())),
            "{labels:?}"
        );
        let cut = STAT_HELPER.replace("ARG", "mean.detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// An average of the student's weights kept by a teacher (mean teacher, EMA weights): each
    /// update blends the trainable weights into the old average, element by element.
    const MODEL_EMA: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Student { layers: Vec<Linear> }
impl Student {
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = x.clone();
        for l in &self.layers { h = l.forward(&h)?; }
        Ok(h)
    }
    pub fn weights(&self) -> Vec<&Tensor> { self.layers.iter().map(|l| l.weight()).collect() }
}
pub struct Teacher { avgs: Vec<Tensor>, decay: f64, seen: usize }
impl Teacher {
    pub fn update(&mut self, student: &Student) -> Result<()> {
        UPDATE
        Ok(())
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let student = Student { layers: vec![linear(4, 4, vb.pp("a"))?, linear(4, 4, vb.pp("b"))?] };
    let avgs = student.weights().into_iter().map(|w| w.detach()).collect();
    let mut teacher = Teacher { avgs, decay: 0.99, seen: 0 };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for x in xs {
        let loss = student.forward(x)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        teacher.update(&student)?;
    }
    Ok(())
}
"#;

    #[test]
    fn an_average_of_a_trainable_models_weights_chains_every_update() {
        let zip = "for (avg, w) in self.avgs.iter_mut().zip(student.weights()) {
            *avg = ((&*avg * self.decay)? + (W * (1.0 - self.decay))?)?;
        }";
        let kept = MODEL_EMA.replace("UPDATE", &zip.replace("W", "w"));
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![31]);
        let labels = crate::rules::testing::labels("accumulated_loss_tensor", &kept);
        assert!(labels.contains(&(17, "`self.avgs` is computed from its old value here".to_string())), "{labels:?}");
        // The same by index, one field at a time.
        let one = "let w = student.weights()[0];
        self.avgs[0] = ((&self.avgs[0] * self.decay)? + (w * (1.0 - self.decay))?)?;";
        assert_eq!(count("accumulated_loss_tensor", None, &MODEL_EMA.replace("UPDATE", one)), 1);
        // Blended from detached weights: nothing is tracked.
        let cut = MODEL_EMA.replace("UPDATE", &zip.replace("W", "w.detach()"));
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
        // A count of what the student holds, kept in a number: no tensor to chain.
        let counted = "self.seen = self.seen + student.weights().len();";
        assert_eq!(count("accumulated_loss_tensor", None, &MODEL_EMA.replace("UPDATE", counted)), 0);
    }

    /// A tracker that sums each named loss into the entry of a map it holds, through a local
    /// bound to the entry (`let entry = self.sums.entry(..).or_insert_with(..); *entry = ..`).
    const ENTRY_SUMS: &str = r#"
use std::collections::HashMap;
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
#[derive(Default)]
pub struct Tracker { sums: HashMap<String, Tensor> }
impl Tracker {
    pub fn record(&mut self, name: &str, loss: &Tensor) -> Result<()> {
        let entry = self.sums.entry(name.to_string()).or_insert_with(|| loss.zeros_like().unwrap());
        *entry = (&*entry + LOSS)?;
        Ok(())
    }
}
pub fn train(xs: &[Tensor], dev: &Device) -> Result<()> {
    let vm = VarMap::new();
    let net = linear(4, 1, VarBuilder::from_varmap(&vm, DType::F32, dev))?;
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    let mut tracker = Tracker::default();
    for x in xs {
        let loss = net.forward(x)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        tracker.record("train", &loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_sum_kept_in_a_map_entry_bound_to_a_local_chains_every_step() {
        assert_eq!(
            crate::rules::testing::lines("accumulated_loss_tensor", &ENTRY_SUMS.replace("LOSS", "loss")),
            vec![22]
        );
        assert_eq!(count("accumulated_loss_tensor", None, &ENTRY_SUMS.replace("LOSS", "loss.detach()")), 0);
    }

    /// Agents built by a closure and collected as tuples with their seeds, then walked by a
    /// `for` loop over the tuples: each agent keeps a running value of its critic's output.
    const COLLECTED_AGENTS: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Critic { net: Linear, opt: AdamW, avg: Tensor }
impl Critic {
    pub fn new(dev: &Device) -> Result<Self> {
        let vm = VarMap::new();
        let net = linear(4, 1, VarBuilder::from_varmap(&vm, DType::F32, dev))?;
        let opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
        Ok(Self { net, opt, avg: Tensor::zeros((8, 1), DType::F32, dev)? })
    }
    pub fn observe(&mut self, x: &Tensor) -> Result<()> {
        let v = self.net.forward(x)?;
        self.avg = ((&self.avg * 0.99)? + (VALUE * 0.01)?)?;
        Ok(())
    }
    pub fn learn(&mut self, x: &Tensor) -> Result<()> {
        let loss = self.net.forward(x)?.sqr()?.mean_all()?;
        self.opt.backward_step(&loss)
    }
}
pub fn run(dev: &Device) -> Result<()> {
    let mut crew: Vec<_> = (0..4u64)
        .map(|seed| {
            let critic = Critic::new(dev).unwrap();
            (seed, critic)
        })
        .collect();
    for _ in 0..1000 {
        for WALK {
            let x = Tensor::randn(0f32, 1.0, (8, 4), dev)?;
            critic.observe(&x)?;
            critic.learn(&x)?;
        }
    }
    Ok(())
}
"#;

    /// The element's type comes from the closure that built it, so its method is known to keep
    /// a state, and the state lives in the collection.
    #[test]
    fn an_element_of_a_collected_local_keeps_its_state_in_the_collection() {
        for walk in ["(_seed, critic) in crew.iter_mut()", "(_i, (_seed, critic)) in crew.iter_mut().enumerate()"] {
            let src = COLLECTED_AGENTS.replace("WALK", walk);
            assert_eq!(
                crate::rules::testing::lines("accumulated_loss_tensor", &src.replace("VALUE", "v")),
                vec![32],
                "{walk}"
            );
            assert_eq!(count("accumulated_loss_tensor", None, &src.replace("VALUE", "v.detach()")), 0, "{walk}");
        }
    }

    /// A teacher that holds whole layers and rebuilds each from a blend of its old weights and
    /// the student's (`*t = Linear::new(w, b)` over `self.layers.iter_mut().zip(..)`), the blend
    /// written as a closure.
    const LAYER_EMA: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Net { layers: Vec<Linear> }
impl Net {
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = x.clone();
        for l in &self.layers { h = l.forward(&h)?.relu()?; }
        Ok(h)
    }
}
pub struct Teacher { layers: Vec<Linear>, decay: f64 }
impl Teacher {
    pub fn follow(&mut self, student: &Net) -> Result<()> {
        let d = self.decay;
        let mix = |a: &Tensor, b: &Tensor| -> Result<Tensor> { MIX };
        for (t, s) in self.layers.iter_mut().zip(&student.layers) {
            let w = mix(t.weight(), s.weight())?;
            *t = Linear::new(w, None);
        }
        Ok(())
    }
}
pub struct Trainer { student: Net, teacher: Teacher, opt: AdamW }
impl Trainer {
    pub fn new(vm: &VarMap) -> Result<Self> {
        let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
        let student = Net { layers: vec![linear(8, 8, vb.pp("a"))?, linear(8, 8, vb.pp("b"))?] };
        let layers = student.layers.iter().map(|l| Linear::new(l.weight().copy().unwrap(), None)).collect();
        let opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
        Ok(Self { student, teacher: Teacher { layers, decay: 0.999 }, opt })
    }
    pub fn step(&mut self, x: &Tensor) -> Result<f32> {
        let loss = self.student.forward(x)?.sqr()?.mean_all()?;
        self.opt.backward_step(&loss)?;
        self.teacher.follow(&self.student)?;
        loss.to_scalar::<f32>()
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap) -> Result<()> {
    let mut trainer = Trainer::new(vm)?;
    for x in xs {
        trainer.step(x)?;
    }
    Ok(())
}
"#;

    /// The student's layers are trainable, so their `weight()` is a variable: each rebuilt
    /// teacher layer is a graph node chained to the one before. A blend that detaches its
    /// result (inside the closure) keeps nothing.
    #[test]
    fn layers_rebuilt_from_a_trainable_models_weights_chain_every_update() {
        let blend = "(a * d)? + (b * (1.0 - d))?";
        let kept = LAYER_EMA.replace("MIX", blend);
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![36]);
        let labels = crate::rules::testing::labels("accumulated_loss_tensor", &kept);
        assert!(labels.contains(&(19, "`self.layers` is computed from its old value here".to_string())), "{labels:?}");
        let cut = LAYER_EMA.replace("MIX", &format!("Ok(({blend})?.detach())"));
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
        // The student's weights detached before the blend: the old teacher weights were copies.
        let detached = LAYER_EMA.replace("MIX", blend).replace("s.weight())", "&s.weight().detach())");
        assert_ne!(detached, kept);
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
    }

    /// A target network kept as tensors by name beside the online model's `VarMap`, blended
    /// towards the variables it holds after every step (Polyak averaging by name).
    const NAMED_TARGETS: &str = r#"
use std::collections::HashMap;
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, loss, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Agent { varmap: VarMap, online: Linear, targets: HashMap<String, Tensor>, opt: AdamW, tau: f64 }
impl Agent {
    pub fn new(dev: &Device) -> Result<Self> {
        let varmap = VarMap::new();
        let online = linear(4, 2, VarBuilder::from_varmap(&varmap, DType::F32, dev).pp("q"))?;
        let targets = varmap.data().lock().unwrap().iter().map(|(k, v)| (k.clone(), v.as_tensor().detach())).collect();
        let opt = AdamW::new(varmap.all_vars(), ParamsAdamW::default())?;
        Ok(Self { varmap, online, targets, opt, tau: 0.005 })
    }
    fn soft_update(&mut self) -> Result<()> {
        let vars = self.varmap.data().lock().unwrap();
        for (name, var) in vars.iter() {
            let target = self.targets.get_mut(name).expect("every variable has a target");
            *target = ((BLEND * self.tau)? + (&*target * (1.0 - self.tau))?)?;
        }
        Ok(())
    }
    pub fn train_step(&mut self, x: &Tensor, y: &Tensor) -> Result<()> {
        let l = loss::mse(&self.online.forward(x)?, y)?;
        self.opt.backward_step(&l)?;
        self.soft_update()
    }
}
pub fn run(data: &[(Tensor, Tensor)]) -> Result<()> {
    let mut agent = Agent::new(&Device::Cpu)?;
    for (x, y) in data {
        agent.train_step(x, y)?;
    }
    Ok(())
}
"#;

    #[test]
    fn targets_blended_from_the_variables_of_a_varmap_field_chain_every_update() {
        let kept = NAMED_TARGETS.replace("BLEND", "var.as_tensor()");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![25]);
        let labels = crate::rules::testing::labels("accumulated_loss_tensor", &kept);
        assert!(labels.contains(&(18, "`self.targets` is computed from its old value here".to_string())), "{labels:?}");
        // Blended from detached values: nothing is tracked.
        let cut = NAMED_TARGETS.replace("BLEND", "var.as_tensor().detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// A log lent to the training step as `&mut` and filled by a method of its own.
    const LENT_LOG: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Log { batches: Vec<Tensor> }
impl Log {
    pub fn record(&mut self, t: Tensor) { self.batches.push(t); }
}
pub struct Model { fc: Linear }
impl Model {
    pub fn step_loss(&self, x: &Tensor, log: &mut Log) -> Result<Tensor> {
        let y = self.fc.forward(x)?;
        log.record(KEPT);
        y.sqr()?.mean_all()
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let model = Model { fc: linear(4, 4, vb.pp("fc"))? };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    let mut log = Log { batches: Vec::new() };
    for x in xs {
        let loss = model.step_loss(x, &mut log)?;
        opt.backward_step(&loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_log_lent_to_the_training_step_is_reported_at_the_call() {
        let kept = LENT_LOG.replace("KEPT", "y.clone()");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![22]);
        let cut = LENT_LOG.replace("KEPT", "y.detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// A cache lent by a sampler to each step of the model, reset at the start of each call.
    const LENT_CACHE: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Cache { k: Option<Tensor> }
impl Cache {
    pub fn reset(&mut self) { self.k = None; }
    fn append(&mut self, k: Tensor) -> Result<Tensor> {
        let k = match self.k.take() { Some(prev) => Tensor::cat(&[&prev, &k], 1)?, None => k };
        self.k = Some(k.clone());
        Ok(k)
    }
}
pub struct Lm { fc: Linear }
impl Lm {
    pub fn step(&self, x: &Tensor, cache: &mut Cache) -> Result<Tensor> {
        let k = self.fc.forward(x)?;
        cache.append(k)
    }
}
pub struct Sampler { cache: Cache }
impl Sampler {
    pub fn generate(&mut self, lm: &Lm, x: &Tensor) -> Result<f32> {
        RESET
        let y = lm.step(x, &mut self.cache)?;
        y.sum_all()?.to_scalar::<f32>()
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let lm = Lm { fc: linear(4, 4, vb.pp("fc"))? };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    let mut sampler = Sampler { cache: Cache { k: None } };
    for x in xs {
        opt.backward_step(&lm.fc.forward(x)?.sqr()?.mean_all()?)?;
        sampler.generate(&lm, x)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_cache_lent_to_each_step_chains_unless_the_caller_resets_it() {
        let kept = LENT_CACHE.replace("RESET", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![35]);
        let reset = LENT_CACHE.replace("RESET", "self.cache.reset();");
        assert_eq!(count("accumulated_loss_tensor", None, &reset), 0);
    }

    /// A helper that hands on the weights of the model it is given, as an iterator.
    const WEIGHTS_HELPER: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Student { layers: Vec<Linear> }
fn weights_of<'a>(s: &'a Student) -> impl Iterator<Item = &'a Tensor> + 'a {
    s.layers.iter().map(|l| l.weight())
}
pub struct Teacher { avgs: Vec<Tensor> }
impl Teacher {
    pub fn update(&mut self, student: &Student) -> Result<()> {
        for (avg, w) in self.avgs.iter_mut().zip(weights_of(student)) {
            *avg = ((&*avg * 0.99)? + (W * 0.01)?)?;
        }
        Ok(())
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let student = Student { layers: vec![linear(4, 4, vb.pp("a"))?] };
    let mut teacher = Teacher { avgs: weights_of(&student).map(|w| w.detach()).collect() };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for x in xs {
        opt.backward_step(&student.layers[0].forward(x)?.sqr()?.mean_all()?)?;
        teacher.update(&student)?;
    }
    Ok(())
}
"#;

    #[test]
    fn weights_handed_on_by_a_helper_keep_the_average_trainable() {
        let kept = WEIGHTS_HELPER.replace("W *", "w *");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![24]);
        let cut = WEIGHTS_HELPER.replace("W *", "w.detach() *");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// A helper returning its gradients with the loss, for a sum over micro-batches.
    const MICRO_STEP: &str = r#"
use candle_core::{backprop::GradStore, DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Module, Optimizer, VarBuilder, VarMap, SGD};
fn micro(model: &Linear, x: &Tensor) -> Result<(GradStore, Tensor)> {
    let loss = model.forward(x)?.sqr()?.mean_all()?;
    let grads = loss.backward()?;
    Ok((grads, LOSS))
}
pub fn train(xs: &[Tensor], vm: &VarMap) -> Result<()> {
    let model = linear(4, 4, VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu))?;
    let mut opt = SGD::new(vm.all_vars(), 0.1)?;
    let mut sum = Tensor::zeros((), DType::F32, &Device::Cpu)?;
    for x in xs {
        let (grads, loss) = micro(&model, x)?;
        opt.step(&grads)?;
        sum = (sum + loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_detached_loss_returned_beside_the_gradients_is_not_a_graph() {
        assert_eq!(count("accumulated_loss_tensor", None, &MICRO_STEP.replace("LOSS", "loss.detach()")), 0);
        assert_eq!(
            crate::rules::testing::lines("accumulated_loss_tensor", &MICRO_STEP.replace("LOSS", "loss")),
            vec![16]
        );
    }

    /// A monitor whose method pushes what it is handed into a log of its own, called once per
    /// training step with a forward's output (candle: the output holds its whole graph).
    const PUSHED_LOG: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Monitor { history: Vec<Tensor> }
impl Monitor {
    pub fn observe(&mut self, preds: Tensor) -> Result<f32> {
        let m = preds.mean_all()?.to_scalar::<f32>()?;
        self.history.push(KEPT);
        Ok(m)
    }
    EMPTY
}
pub fn train(xs: &[Tensor], vm: &VarMap) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let fc: Linear = linear(4, 4, vb.pp("fc"))?;
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    let mut monitor = Monitor { history: Vec::new() };
    for x in xs {
        let y = fc.forward(x)?;
        monitor.observe(y.clone())?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_log_a_method_pushes_graph_carrying_values_into_is_reported_at_the_call() {
        let kept = PUSHED_LOG.replace("KEPT", "preds").replace("EMPTY", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![20]);
        let labels = crate::rules::testing::labels("accumulated_loss_tensor", &kept);
        assert!(labels.contains(&(8, "`self.history` keeps what is pushed into it here".to_string())), "{labels:?}");
        // What is pushed carries no graph.
        let cut = PUSHED_LOG.replace("KEPT", "preds.detach()").replace("EMPTY", "");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
        // A method of the type empties the log (a window drained by a report): nothing is kept
        // for good.
        let drained = PUSHED_LOG
            .replace("KEPT", "preds")
            .replace("EMPTY", "pub fn report(&mut self) -> usize { self.history.drain(..).count() }");
        assert_eq!(count("accumulated_loss_tensor", None, &drained), 0);
    }

    /// A persistent sampling chain a monitor advances through a flow once per training step:
    /// the flow's `decode` walks its layers, whose `decode` shares the name.
    const LAYERED_CHAIN: &str = r#"
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Coupling { fc: Linear }
impl Coupling {
    pub fn decode(&self, z: &Tensor) -> Result<Tensor> { (z + self.fc.forward(z)?.tanh()?)? * 0.5 }
}
pub struct Flow { layers: Vec<Coupling> }
impl Flow {
    pub fn decode(&self, z: &Tensor) -> Result<Tensor> {
        let mut acc = z.clone();
        for layer in self.layers.iter() {
            acc = layer.decode(&acc)?;
        }
        Ok(acc)
    }
}
pub struct Walker { chain: Tensor }
impl Walker {
    pub fn advance(&mut self, flow: &Flow) -> Result<f32> {
        self.chain = KEPT;
        self.chain.mean_all()?.to_scalar::<f32>()
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let flow = Flow { layers: vec![Coupling { fc: linear(4, 4, vb.pp("c0"))? }, Coupling { fc: linear(4, 4, vb.pp("c1"))? }] };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    let mut walker = Walker { chain: Tensor::zeros((1, 4), DType::F32, &Device::Cpu)? };
    for x in xs {
        opt.backward_step(&flow.decode(x)?.sqr()?.mean_all()?)?;
        walker.advance(&flow)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_kept_through_a_method_of_the_layers_a_loop_walks_is_reported() {
        // `layer.decode` is `Coupling::decode` (the element type of `layers`), not the
        // caller's own `Flow::decode`: it runs a forward pass, so the chain carries a graph.
        let kept = LAYERED_CHAIN.replace("KEPT", "flow.decode(&self.chain)?");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![32]);
        let cut = LAYERED_CHAIN.replace("KEPT", "flow.decode(&self.chain)?.detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// dfdx: a tracker scores each batch on a leaky tape and keeps the prediction, whose tape
    /// holds that batch's activations, from the training step.
    const TAPED_LOG: &str = r#"
use dfdx::prelude::*;
pub struct Tracker { preds: Vec<Tensor<Rank1<8>, f32, Cpu, OwnedTape<f32, Cpu>>> }
impl Tracker {
    pub fn observe(&mut self, model: &Net, x: &Tensor<Rank1<4>, f32, Cpu>) {
        let probs = model.forward(INPUT).sigmoid();
        self.preds.push(probs);
    }
}
pub struct Trainer { model: Net, opt: Adam<Net, f32, Cpu>, tracker: Tracker }
impl Trainer {
    pub fn fit_batch(&mut self, x: Tensor<Rank1<4>, f32, Cpu>, y: Tensor<Rank1<8>, f32, Cpu>) {
        self.tracker.observe(&self.model, &x);
        let mut grads = self.model.alloc_grads();
        let loss = mse_loss(self.model.forward(x.traced(grads)), y);
        grads = loss.backward();
        self.opt.update(&mut self.model, &grads).unwrap();
    }
}
"#;

    /// The same log, filled through a model's own method that attaches the tape itself
    /// (`fn predict(&self, x) { self.net.forward(self.dev.tensor(x).leaky_trace()) }`): its
    /// result carries a tape whatever the caller hands it.
    const OWN_TAPE_LOG: &str = r#"
use dfdx::prelude::*;
pub struct Model { net: Net, dev: Cpu }
impl Model {
    pub fn predict(&self, x: [f32; 4]) -> Tensor<Rank1<8>, f32, Cpu, OwnedTape<f32, Cpu>> {
        self.net.forward(INPUT).sigmoid()
    }
}
pub struct Tracker { preds: Vec<Tensor<Rank1<8>, f32, Cpu, OwnedTape<f32, Cpu>>> }
impl Tracker {
    pub fn observe(&mut self, model: &Model, x: [f32; 4]) {
        let probs = model.predict(x);
        self.preds.push(probs);
    }
}
pub struct Trainer { model: Model, opt: Adam<Net, f32, Cpu>, tracker: Tracker }
impl Trainer {
    pub fn fit_batch(&mut self, x: [f32; 4], y: Tensor<Rank1<8>, f32, Cpu>) {
        self.tracker.observe(&self.model, x);
        let mut grads = self.model.net.alloc_grads();
        let loss = mse_loss(self.model.net.forward(self.model.dev.tensor(x).traced(grads)), y);
        grads = loss.backward();
        self.opt.update(&mut self.model.net, &grads).unwrap();
    }
}
"#;

    #[test]
    fn a_prediction_taped_inside_the_models_method_is_kept_with_its_tape() {
        let kept = OWN_TAPE_LOG.replace("INPUT", "self.dev.tensor(x).leaky_trace()");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![19]);
        // Without a tape the forward records nothing.
        let plain = OWN_TAPE_LOG.replace("INPUT", "self.dev.tensor(x)");
        assert_eq!(count("accumulated_loss_tensor", None, &plain), 0);
    }

    #[test]
    fn a_prediction_kept_with_its_tape_is_reported_at_the_call() {
        let kept = TAPED_LOG.replace("INPUT", "x.leaky_trace()");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![13]);
        // Without a tape the forward records nothing.
        let plain = TAPED_LOG.replace("INPUT", "x.clone()");
        assert_eq!(count("accumulated_loss_tensor", None, &plain), 0);
    }

    /// burn 0.12 and older: each tensor owns its graph. An early stopper keeps every epoch's
    /// validation predictions of the autodiff model in a history.
    const BURN_HISTORY: &str = r#"
use burn::tensor::backend::{AutodiffBackend, Backend};
pub struct EarlyStopping<B: Backend> { history: Vec<Tensor<B, 2>> }
impl<B: Backend> EarlyStopping<B> {
    pub fn observe(&mut self, preds: Tensor<B, 2>) -> f32 {
        let m = preds.clone().mean().into_scalar().elem::<f32>();
        self.history.push(preds);
        m
    }
}
pub fn run<B: AutodiffBackend>(device: &B::Device, x: Tensor<B, 2>, epochs: usize) {
    let mut model = Net::<B>::new(device);
    let mut optim = AdamConfig::new().init();
    let mut stopper = EarlyStopping::<B> { history: Vec::new() };
    for _ in 0..epochs {
        let loss = model.forward(x.clone()).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
        stopper.observe(PREDS);
    }
}
"#;

    #[test]
    fn burn_before_its_graph_store_keeps_a_history_of_autodiff_outputs() {
        let lines = |src: &str| -> Vec<usize> {
            let linter = crate::Linter {
                burn_era: crate::BurnEra::BeforeGraphStore,
                ..crate::Linter::new(crate::Levels::default())
            };
            linter
                .lint_text(std::path::Path::new("src/lib.rs"), src, None)
                .into_iter()
                .filter(|f| f.rule == "accumulated_loss_tensor")
                .map(|f| f.line)
                .collect()
        };
        assert_eq!(lines(&BURN_HISTORY.replace("PREDS", "model.forward(x.clone())")), vec![19]);
        // On the inner backend (`valid()`), the predictions carry no graph.
        assert!(lines(&BURN_HISTORY.replace("PREDS", "model.valid().forward(x.clone().inner())")).is_empty());
    }

    /// A trainer whose loop runs backward through a step method of its own and pushes the
    /// step's output into a field of `self` (a progress log for plots at the end).
    const LOOP_LOG: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Module, Optimizer, VarBuilder, VarMap, SGD};
pub struct Trainer { net: Linear, opt: SGD, progress: Vec<Tensor>, losses: Vec<f32> }
impl Trainer {
    fn step(&mut self, x: &Tensor) -> Result<(f32, Tensor)> {
        let y = self.net.forward(x)?;
        let loss = y.sqr()?.mean_all()?;
        self.opt.backward_step(&loss)?;
        Ok((loss.to_scalar::<f32>()?, y))
    }
    pub fn fit(&mut self, xs: &[Tensor]) -> Result<()> {
        for x in xs {
            let (loss, y) = self.step(x)?;
            self.losses.push(loss);
            self.progress.push(KEPT);
        }
        Ok(())
    }
}
"#;

    #[test]
    fn a_training_loop_that_logs_graph_carrying_outputs_in_self_is_reported() {
        let kept = LOOP_LOG.replace("KEPT", "y.clone()");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![16]);
        assert_eq!(count("accumulated_loss_tensor", None, &LOOP_LOG.replace("KEPT", "y.detach()")), 0);
        // Emptied by a method of its type (once an epoch): bounded.
        let emptied = kept
            .replace("impl Trainer {", "impl Trainer {\n    pub fn end_epoch(&mut self) { self.progress.clear(); }");
        assert_eq!(count("accumulated_loss_tensor", None, &emptied), 0);
    }

    /// An online learner whose update is a training step of its own and logs each prediction
    /// in a field of `self`.
    const STEP_LOG: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Module, Optimizer, VarBuilder, VarMap, SGD};
pub struct Learner { net: Linear, opt: SGD, log: Vec<Tensor> }
impl Learner {
    pub fn update(&mut self, x: &Tensor, y: &Tensor) -> Result<()> {
        let p = self.net.forward(x)?;
        self.log.push(KEPT);
        let loss = (&p - y)?.sqr()?.mean_all()?;
        self.opt.backward_step(&loss)
    }
    EMPTY
}
pub fn serve(vm: &VarMap, clicks: &[(Tensor, Tensor)]) -> Result<()> {
    let net = linear(4, 1, VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu))?;
    let mut learner = Learner { net, opt: SGD::new(vm.all_vars(), 0.05)?, log: Vec::new() };
    for (x, y) in clicks {
        learner.update(x, y)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_training_step_that_logs_its_graph_carrying_output_in_self_is_reported() {
        let kept = STEP_LOG.replace("KEPT", "p.clone()").replace("EMPTY", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![8]);
        let cut = STEP_LOG.replace("KEPT", "p.detach()").replace("EMPTY", "");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
        // Emptied by a method of the type (once an epoch, say): bounded.
        let emptied =
            STEP_LOG.replace("KEPT", "p.clone()").replace("EMPTY", "pub fn end_epoch(&mut self) { self.log.clear(); }");
        assert_eq!(count("accumulated_loss_tensor", None, &emptied), 0);
        // A window some method keeps to a size: bounded.
        let window = STEP_LOG
            .replace("KEPT", "p.clone()")
            .replace("EMPTY", "pub fn trim(&mut self) { while self.log.len() > 8 { self.log.remove(0); } }");
        assert_eq!(count("accumulated_loss_tensor", None, &window), 0);
        // Taking the last one out leaves the rest: still kept.
        let last = STEP_LOG
            .replace("KEPT", "p.clone()")
            .replace("EMPTY", "pub fn last(&mut self) -> Option<Tensor> { self.log.pop() }");
        assert_eq!(count("accumulated_loss_tensor", None, &last), 1);
        // An update whose own loop runs backward (minibatch epochs), logging once per call.
        let epochs = kept.replace(
            "        self.opt.backward_step(&loss)\n",
            "        for _ in 0..4 {\n            self.opt.backward_step(&loss)?;\n        }\n        Ok(())\n",
        );
        assert_ne!(epochs, kept);
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &epochs), vec![8]);
    }

    /// A streaming trainer that takes its carried state out with a method of its own, runs the
    /// chunk from it, and puts the last state back.
    const TAKEN_STATE: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Streamer { cell: Linear, opt: AdamW, state: Option<Tensor> }
impl Streamer {
    fn take_state(&mut self) -> Result<Tensor> {
        match self.state.take() {
            Some(s) => Ok(s),
            None => Tensor::zeros((1, 4), DType::F32, &Device::Cpu),
        }
    }
    pub fn train_chunk(&mut self, x: &Tensor) -> Result<f32> {
        let state = self.take_state()?;
        let last = self.cell.forward(&(x + &state)?)?.tanh()?;
        let loss = last.sqr()?.mean_all()?;
        self.opt.backward_step(&loss)?;
        self.state = Some(KEPT);
        loss.to_scalar::<f32>()
    }
}
pub fn run(vm: &VarMap, xs: &[Tensor]) -> Result<()> {
    let cell = linear(4, 4, VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu))?;
    let mut s = Streamer { cell, opt: AdamW::new(vm.all_vars(), ParamsAdamW::default())?, state: None };
    for x in xs {
        s.train_chunk(x)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_taken_out_by_a_method_and_put_back_chains() {
        let kept = TAKEN_STATE.replace("KEPT", "last");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &kept), vec![17]);
        let cut = TAKEN_STATE.replace("KEPT", "last.detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// A hand-written normalisation whose running mean follows the batch without `detach`,
    /// reached only when the model's `training` flag is on.
    const GATED_NORM: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Norm { running_mean: Tensor }
impl Norm {
    fn forward_train(&mut self, x: &Tensor) -> Result<Tensor> {
        let mean = x.mean_keepdim(0)?;
        self.running_mean = ((&self.running_mean * 0.9)? + (&mean * 0.1)?)?;
        x.broadcast_sub(&mean)
    }
    fn forward_eval(&self, x: &Tensor) -> Result<Tensor> { x.broadcast_sub(&self.running_mean) }
}
pub struct Net { fc: Linear, norm: Norm }
impl Net {
    pub fn forward(&mut self, x: &Tensor, training: bool) -> Result<Tensor> {
        let h = self.fc.forward(x)?;
        if training { self.norm.forward_train(&h) } else { self.norm.forward_eval(&h) }
    }
}
pub fn train(xs: &[Tensor], vm: &VarMap) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let norm = Norm { running_mean: Tensor::zeros((1, 4), DType::F32, &Device::Cpu)? };
    let mut net = Net { fc: linear(4, 4, vb.pp("fc"))?, norm };
    let mut opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    for x in xs {
        let y = net.forward(x, FLAG)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_behind_a_flag_the_training_loop_turns_on_is_kept_every_call() {
        let on = GATED_NORM.replace("FLAG", "true");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &on), vec![26]);
        let off = GATED_NORM.replace("FLAG", "false");
        assert_eq!(count("accumulated_loss_tensor", None, &off), 0);
        // The same with a mode of an enum, matched arm by arm.
        let moded = GATED_NORM
            .replace("training: bool", "mode: Mode")
            .replace(
                "if training { self.norm.forward_train(&h) } else { self.norm.forward_eval(&h) }",
                "match mode { Mode::Train => self.norm.forward_train(&h), Mode::Eval => self.norm.forward_eval(&h) }",
            )
            .replace("pub struct Net {", "pub enum Mode { Train, Eval }\npub struct Net {");
        assert_eq!(
            crate::rules::testing::lines("accumulated_loss_tensor", &moded.replace("FLAG", "Mode::Train")),
            vec![27]
        );
        assert_eq!(count("accumulated_loss_tensor", None, &moded.replace("FLAG", "Mode::Eval")), 0);
    }

    /// The layer's input written in place as the argument of the normalisation's forward
    /// (`self.norm.forward_train(&self.fc.forward(x)?)`) carries the graph as a bound one does.
    #[test]
    fn a_forward_handed_a_forward_written_in_place_keeps_its_graph() {
        let inline = GATED_NORM.replace("FLAG", "true").replace(
            "if training { self.norm.forward_train(&h) }",
            "if training { self.norm.forward_train(&self.fc.forward(x)?) }",
        );
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &inline), vec![26]);
        let labels = crate::rules::testing::labels("accumulated_loss_tensor", &inline);
        assert!(
            labels.contains(&(8, "`self.running_mean` is computed from its old value here".to_string())),
            "{labels:?}"
        );
        // A detached input carries none.
        let cut = inline.replace("forward_train(&self.fc.forward(x)?)", "forward_train(&self.fc.forward(x)?.detach())");
        assert_eq!(count("accumulated_loss_tensor", None, &cut), 0);
    }

    /// A log of the losses for an epoch's mean, emptied by another method of its type when the
    /// epoch ends: every loss pushed since keeps its whole graph.
    const EPOCH_LOG: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, loss, AdamW, Linear, Module, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct EpochLog { losses: Vec<Tensor> }
impl EpochLog {
    pub fn record(&mut self, l: &Tensor) { self.losses.push(PUSHED); }
    pub fn end_epoch(&mut self) -> Result<f32> {
        let m = Tensor::stack(&self.losses, 0)?.mean_all()?.to_scalar::<f32>()?;
        self.losses.clear();
        Ok(m)
    }
}
pub struct Trainer { model: Linear, opt: AdamW, log: EpochLog, step: usize }
impl Trainer {
    pub fn step(&mut self, x: &Tensor, y: &Tensor) -> Result<()> {
        let l = loss::mse(&self.model.forward(x)?, y)?;
        self.opt.backward_step(&l)?;
        self.log.record(&l);
        self.step += 1;
        END
        Ok(())
    }
}
pub fn fit(vm: &VarMap, data: &[(Tensor, Tensor)]) -> Result<()> {
    let vb = VarBuilder::from_varmap(vm, DType::F32, &Device::Cpu);
    let opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    let mut t = Trainer { model: linear(4, 4, vb.pp("fc"))?, opt, log: EpochLog { losses: Vec::new() }, step: 0 };
    for (x, y) in data {
        t.step(x, y)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_log_of_backpropagated_losses_emptied_once_an_epoch_is_reported() {
        let epoch = EPOCH_LOG
            .replace("PUSHED", "l.clone()")
            .replace("END", "if self.step % 500 == 0 { println!(\"{}\", self.log.end_epoch()?); }");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &epoch), vec![18]);
        let labels = crate::rules::testing::labels("accumulated_loss_tensor", &epoch);
        assert!(labels.contains(&(6, "`self.losses` keeps what is pushed into it here".to_string())), "{labels:?}");
        // A host number, or a detached value, keeps no graph.
        let detached = EPOCH_LOG
            .replace("PUSHED", "l.detach()")
            .replace("END", "if self.step % 500 == 0 { println!(\"{}\", self.log.end_epoch()?); }");
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
        // Emptied wherever it is pushed: one step's graph at most.
        let every = EPOCH_LOG.replace("PUSHED", "l.clone()").replace("END", "println!(\"{}\", self.log.end_epoch()?);");
        assert_eq!(count("accumulated_loss_tensor", None, &every), 0);
        // Never emptied by the caller: trusted to be drained elsewhere (a report of its own).
        let elsewhere = EPOCH_LOG.replace("PUSHED", "l.clone()").replace("END", "");
        assert_eq!(count("accumulated_loss_tensor", None, &elsewhere), 0);
        // An on-policy buffer: what is pushed is not yet backpropagated; the update that empties
        // it runs the backward on it.
        let on_policy = EPOCH_LOG
            .replace("PUSHED", "l.clone()")
            .replace(
                "        let l = loss::mse(&self.model.forward(x)?, y)?;\n        self.opt.backward_step(&l)?;\n",
                "        let l = loss::mse(&self.model.forward(x)?, y)?;\n",
            )
            .replace("END", "");
        assert_eq!(count("accumulated_loss_tensor", None, &on_policy), 0);
    }

    /// Gradient accumulation behind a struct's methods: `add` folds each micro-batch's loss
    /// into a field, `ready` takes the sum out once `every` are in, and the loop backpropagates
    /// what it hands back.
    const ACCUMULATOR: &str = r#"
use candle_core::{Result, Tensor};
use candle_nn::{AdamW, Optimizer};
pub struct LossAccumulator { every: usize, count: usize, sum: Option<Tensor> }
impl LossAccumulator {
    pub fn add(&mut self, loss: &Tensor) -> Result<()> {
        self.sum = Some(match self.sum.take() {
            None => loss.clone(),
            Some(s) => (s + loss)?,
        });
        self.count += 1;
        Ok(())
    }
    pub fn ready(&mut self) -> Option<Tensor> {
        if self.count < self.every {
            return None;
        }
        self.count = 0;
        TAKE
    }
}
fn train(model: &Net, opt: &mut AdamW, data: &[(Tensor, Tensor)], every: usize) -> Result<()> {
    let mut acc = LossAccumulator { every, count: 0, sum: None };
    for (x, y) in data {
        let loss = candle_nn::loss::mse(&model.forward(x)?, y)?;
        acc.add(&loss)?;
        STEP
        if let Some(total) = acc.ready() {
            USE
        }
    }
    Ok(())
}
"#;

    #[test]
    fn accepts_gradient_accumulation_behind_methods() {
        let take = "self.sum.take()";
        let accumulate =
            ACCUMULATOR.replace("TAKE", take).replace("STEP", "").replace("USE", "opt.backward_step(&total)?;");
        assert_eq!(count("accumulated_loss_tensor", None, &accumulate), 0);
        // A running sum of losses that each step backpropagates, taken out now and then only to
        // be logged: every summand's graph is kept until then.
        let logged = ACCUMULATOR
            .replace("TAKE", take)
            .replace("STEP", "opt.backward_step(&loss)?;")
            .replace("USE", "println!(\"{}\", total.to_scalar::<f32>()?);");
        assert!(count("accumulated_loss_tensor", None, &logged) >= 1);
        // Taken out and put back (`let s = self.sum.take(); .. self.sum = s;`): not emptied.
        let put_back = ACCUMULATOR
            .replace("TAKE", "let s = self.sum.take();\n        self.sum = s.clone();\n        s")
            .replace("STEP", "")
            .replace("USE", "opt.backward_step(&total)?;");
        assert!(count("accumulated_loss_tensor", None, &put_back) >= 1);
    }

    /// The same with the flush inside `add`: every `k` calls it takes the sum and runs the
    /// backward on it itself.
    const FLUSHING_ACCUMULATOR: &str = r#"
use candle_core::{Result, Tensor};
use candle_nn::{AdamW, Optimizer};
pub struct Accum { opt: AdamW, k: usize, count: usize, pending: Option<Tensor> }
impl Accum {
    pub fn add(&mut self, loss: Tensor) -> Result<f32> {
        self.pending = Some(match self.pending.take() {
            Some(p) => (p + loss)?,
            None => loss,
        });
        self.count += 1;
        if self.count < self.k {
            return Ok(0.0);
        }
        self.flush()
    }
    fn flush(&mut self) -> Result<f32> {
        let total = self.pending.take().unwrap();
        self.count = 0;
        self.opt.backward_step(&total)?;
        total.to_scalar::<f32>()
    }
}
fn train(model: &Net, acc: &mut Accum, data: &[(Tensor, Tensor)]) -> Result<()> {
    for (x, y) in data {
        let loss = candle_nn::loss::mse(&model.forward(x)?, y)?;
        acc.add(loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn accepts_an_accumulator_that_flushes_itself() {
        assert_eq!(count("accumulated_loss_tensor", None, FLUSHING_ACCUMULATOR), 0);
        // A `flush` that backpropagates the sum but keeps it: every step's graph stays.
        let kept = FLUSHING_ACCUMULATOR
            .replace("let total = self.pending.take().unwrap();", "let total = self.pending.clone().unwrap();");
        assert_ne!(kept, FLUSHING_ACCUMULATOR);
        assert!(count("accumulated_loss_tensor", None, &kept) >= 1);
    }

    /// A run logger shared behind `Rc<RefCell<..>>` (a closure keeps another handle) that sums a
    /// metric of each step's predictions as a tensor.
    const SHARED_LOGGER: &str = r#"
use std::{cell::RefCell, rc::Rc};
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{Module, Optimizer, VarBuilder, VarMap};
pub struct RunLog { hits: Option<Tensor>, steps: usize }
impl RunLog {
    pub fn record(&mut self, logits: &Tensor, target: &Tensor) -> Result<()> {
        let hit = candle_nn::ops::sigmoid(logits)?.mul(target)?.mean_all()?KEPT;
        self.hits = Some(match self.hits.take() { Some(acc) => (acc + hit)?, None => hit });
        self.steps += 1;
        Ok(())
    }
}
pub fn fit<O: Optimizer>(vm: &VarMap, opt: &mut O, data: &[(Tensor, Tensor)], dev: &Device) -> Result<()> {
    let net = candle_nn::linear(8, 1, VarBuilder::from_varmap(vm, DType::F32, dev))?;
    let log = Rc::new(RefCell::new(RunLog { hits: None, steps: 0 }));
    let report = { let log = Rc::clone(&log); move || log.borrow().steps };
    for (x, y) in data {
        let logits = net.forward(x)?;
        let loss = candle_nn::loss::binary_cross_entropy_with_logit(&logits, y)?;
        opt.backward_step(&loss)?;
        log.borrow_mut().record(&logits, y)?;
    }
    println!("{}", report());
    Ok(())
}
"#;

    #[test]
    fn a_state_behind_a_shared_cell_is_the_inner_types() {
        let lines = crate::rules::testing::lines("accumulated_loss_tensor", &SHARED_LOGGER.replace("KEPT", ""));
        assert_eq!(lines, vec![22]);
        let detached = SHARED_LOGGER.replace("KEPT", ".detach()");
        assert_eq!(count("accumulated_loss_tensor", None, &detached), 0);
        // The same behind `Arc<Mutex<..>>`.
        let locked = SHARED_LOGGER
            .replace("use std::{cell::RefCell, rc::Rc};", "use std::sync::{Arc, Mutex};")
            .replace("Rc::new(RefCell::new(", "Arc::new(Mutex::new(")
            .replace("Rc::clone", "Arc::clone")
            .replace("log.borrow().steps", "log.lock().unwrap().steps")
            .replace("log.borrow_mut().record", "log.lock().unwrap().record")
            .replace("KEPT", "");
        assert_eq!(crate::rules::testing::lines("accumulated_loss_tensor", &locked), vec![22]);
    }

    /// A predictor whose forward steps its LSTM over a sequence from the state kept in `self`,
    /// first calling a method of its own (RESET).
    const RESET_FIRST: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{rnn::{LSTMState, RNN}, Linear, Module, Optimizer, VarBuilder, VarMap, LSTM};
pub struct Predictor { lstm: LSTM, head: Linear, state: LSTMState }
impl Predictor {
    pub fn new(vm: &VarMap, dev: &Device) -> Result<Self> {
        let vb = VarBuilder::from_varmap(vm, DType::F32, dev);
        let lstm = candle_nn::lstm(4, 16, Default::default(), vb.pp("lstm"))?;
        Ok(Self { state: lstm.zero_state(1)?, lstm, head: candle_nn::linear(16, 1, vb.pp("head"))? })
    }
    fn reset(&mut self) -> Result<()> {
        self.state = self.lstm.zero_state(1)?;
        Ok(())
    }
    fn forward(&mut self, inputs: &[Tensor], first: bool) -> Result<Tensor> {
        RESET
        for i in 0..inputs.len() {
            let x = (&inputs[i] * 0.5)?.unsqueeze(0)?;
            self.state = self.lstm.step(&x, &self.state)?;
        }
        self.head.forward(self.state.h())
    }
}
pub fn fit<O: Optimizer>(vm: &VarMap, opt: &mut O, data: &[(Vec<Tensor>, Tensor)], dev: &Device) -> Result<()> {
    let mut model = Predictor::new(vm, dev)?;
    for (xs, y) in data {
        let loss = (model.forward(xs, false)? - y)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_a_method_starts_afresh_before_stepping_it_chains_nothing() {
        let lines =
            |reset: &str| crate::rules::testing::lines("accumulated_loss_tensor", &RESET_FIRST.replace("RESET", reset));
        assert!(lines("self.reset()?;").is_empty());
        // Without it, or only on some calls, each call continues the last one's state.
        assert_eq!(lines(""), vec![27]);
        assert_eq!(lines("if first { self.reset()?; }"), vec![27]);
    }

    /// A policy that low-pass filters its commands in a field, with a method of a reset's name
    /// whose body is RESET_BODY, called at the end of every lap.
    const NAMED_RESET: &str = r#"
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{linear, Linear, Optimizer, VarBuilder, VarMap};
pub struct Policy { head: Linear, smoothed: Option<Tensor> }
impl Policy {
    pub fn act(&mut self, x: &Tensor) -> Result<Vec<f32>> {
        let raw = self.head.forward(x)?;
        let cmd = match self.smoothed.take() {
            Some(prev) => ((prev * 0.9)? + (&raw * 0.1)?)?,
            None => raw,
        };
        let host = cmd.flatten_all()?.to_vec1::<f32>()?;
        self.smoothed = Some(cmd);
        Ok(host)
    }
    pub fn reset_filter(&mut self) {
        RESET_BODY
    }
}
pub fn fly(vm: &VarMap, xs: &[(Tensor, Tensor)], dev: &Device) -> Result<()> {
    let mut policy = Policy { head: linear(4, 2, VarBuilder::from_varmap(vm, DType::F32, dev))?, smoothed: None };
    let mut opt = candle_nn::SGD::new(vm.all_vars(), 0.01)?;
    for (tick, (x, y)) in xs.iter().enumerate() {
        let _cmd = policy.act(x)?;
        if tick % 50 == 49 {
            policy.reset_filter();
        }
        let loss = (policy.head.forward(x)? - y)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_method_of_a_resets_name_that_does_nothing_resets_nothing() {
        let src = |body: &str| NAMED_RESET.replace("RESET_BODY", body);
        let rule = "accumulated_loss_tensor";
        assert_eq!(crate::rules::testing::lines(rule, &src("// keep the filter warm across laps")), vec![24]);
        // Started afresh at the end of each lap: a chain of at most one lap.
        assert_eq!(count(rule, None, &src("self.smoothed = None;")), 0);
        // A body that hands a function on (`for_each(Layer::clear)`) may start anything afresh.
        assert_eq!(count(rule, None, &src("[&mut self.smoothed].into_iter().for_each(Option::take);")), 0);
    }

    /// A memory bank keyed by item id whose entries are blended from the ones they replace
    /// (`let old = self.entries.remove(&id); self.entries.insert(id, old * m + fresh)`): each
    /// entry links to every earlier one, so the bank keeps every step's graph.
    const KEYED_BANK: &str = r#"
use std::collections::HashMap;
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{linear, AdamW, Optimizer, ParamsAdamW, VarBuilder, VarMap};
pub struct Bank {
    entries: HashMap<usize, Tensor>,
    momentum: f64,
}
impl Bank {
    pub fn update(&mut self, ids: &[usize], emb: &Tensor) -> Result<()> {
        for (row, &id) in ids.iter().enumerate() {
            let fresh = emb.get(row)?;
            let blended = match self.entries.remove(&id) {
                Some(old) => ((old * self.momentum)? + (fresh * (1.0 - self.momentum))?)?,
                None => fresh,
            };
            self.entries.insert(id, blended);
        }
        Ok(())
    }
}
pub fn train(xs: Vec<Tensor>, dev: &Device) -> Result<()> {
    let vars = VarMap::new();
    let enc = linear(8, 8, VarBuilder::from_varmap(&vars, DType::F32, dev))?;
    let mut opt = AdamW::new(vars.all_vars(), ParamsAdamW::default())?;
    let mut bank = Bank { entries: HashMap::new(), momentum: 0.5 };
    for x in xs {
        let f = enc.forward(&x)?;
        let loss = f.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        bank.update(&[0, 1], &f)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_keyed_entry_blended_from_the_one_it_replaces_is_a_fold() {
        let rule = "accumulated_loss_tensor";
        assert_eq!(crate::rules::testing::lines(rule, KEYED_BANK), vec![31]);
        let labels = crate::rules::testing::labels(rule, KEYED_BANK);
        assert!(labels.contains(&(17, "`self.entries` is computed from its old value here".to_string())), "{labels:?}");
        // Detached rows keep no graph.
        let cut = KEYED_BANK.replace("bank.update(&[0, 1], &f)?", "bank.update(&[0, 1], &f.detach())?");
        assert_ne!(cut, KEYED_BANK);
        assert_eq!(count(rule, None, &cut), 0);
        // An entry replaced by the new row alone (not blended with the old one) keeps one
        // step's graph per id: a bounded cache, not a chain.
        let replaced = KEYED_BANK.replace(
            "Some(old) => ((old * self.momentum)? + (fresh * (1.0 - self.momentum))?)?,",
            "Some(_old) => fresh,",
        );
        assert_ne!(replaced, KEYED_BANK);
        assert_eq!(count(rule, None, &replaced), 0);
    }

    /// A monitor that keeps, every step, a norm computed from each trainable variable (walked
    /// beside the histories it writes in turn, under the gradient lookup for that variable).
    const WEIGHT_MONITOR: &str = r#"
use candle_core::{backprop::GradStore, DType, Device, Module, Result, Tensor, Var};
use candle_nn::{linear, Optimizer, VarBuilder, VarMap, SGD};
pub struct Monitor {
    grad_sq: Vec<Vec<Tensor>>,
    weight_sq: Vec<Vec<Tensor>>,
}
impl Monitor {
    pub fn observe(&mut self, grads: &GradStore, vars: &[Var]) -> Result<()> {
        for ((gslot, wslot), var) in self.grad_sq.iter_mut().zip(self.weight_sq.iter_mut()).zip(vars) {
            if let Some(g) = grads.get(var.as_tensor()) {
                gslot.push(g.sqr()?.sum_all()?);
                wslot.push(var.as_tensor().sqr()?.sum_all()?);
            }
        }
        Ok(())
    }
}
pub fn train(xs: Vec<Tensor>, dev: &Device) -> Result<()> {
    let vm = VarMap::new();
    let net = linear(8, 8, VarBuilder::from_varmap(&vm, DType::F32, dev))?;
    let vars = vm.all_vars();
    let mut opt = SGD::new(vars.clone(), 0.01)?;
    let mut monitor = Monitor { grad_sq: vec![Vec::new(); 2], weight_sq: vec![Vec::new(); 2] };
    for x in xs {
        let loss = net.forward(&x)?.sqr()?.mean_all()?;
        let grads = loss.backward()?;
        monitor.observe(&grads, &vars)?;
        opt.step(&grads)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_history_of_what_each_variable_computes_keeps_every_step() {
        let rule = "accumulated_loss_tensor";
        assert_eq!(crate::rules::testing::lines(rule, WEIGHT_MONITOR), vec![28]);
        // The same walk over one history.
        let one = WEIGHT_MONITOR
            .replace(
                "for ((gslot, wslot), var) in self.grad_sq.iter_mut().zip(self.weight_sq.iter_mut()).zip(vars) {",
                "for (wslot, var) in self.weight_sq.iter_mut().zip(vars) {",
            )
            .replace("gslot.push(g.sqr()?.sum_all()?);", "let _ = g;");
        assert_ne!(one, WEIGHT_MONITOR);
        assert_eq!(crate::rules::testing::lines(rule, &one), vec![28]);
        // Detached norms keep no graph; gradients carry none of their own.
        let cut =
            WEIGHT_MONITOR.replace("var.as_tensor().sqr()?.sum_all()?", "var.as_tensor().detach().sqr()?.sum_all()?");
        assert_ne!(cut, WEIGHT_MONITOR);
        assert_eq!(count(rule, None, &cut), 0);
        // Kept only when a flag the caller sets says so: not on every call.
        let flagged = WEIGHT_MONITOR
            .replace("if let Some(g) = grads.get(var.as_tensor()) {", "if let Some(g) = self.pick(grads, var) {")
            .replace(
                "impl Monitor {",
                "impl Monitor {\n    fn pick<'a>(&self, grads: &'a GradStore, v: &Var) -> Option<&'a Tensor> { if self.grad_sq.len() > 9 { grads.get(v.as_tensor()) } else { None } }",
            );
        assert_ne!(flagged, WEIGHT_MONITOR);
        assert_eq!(count(rule, None, &flagged), 0);
    }

    /// An on-policy rollout buffer lent to the collection step (`rollout(.., &mut buf)` pushing
    /// each step's log-probabilities into `buf.log_probs`), backpropagated by the update and
    /// emptied by a method of its type in the same iteration (`buf.clear()`).
    const LENT_ROLLOUT: &str = r#"
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{linear, AdamW, Linear, Optimizer, ParamsAdamW, VarBuilder, VarMap};
#[derive(Default)]
pub struct Buffer {
    log_probs: Vec<Tensor>,
    rewards: Vec<f32>,
}
impl Buffer {
    fn clear(&mut self) {
        CLEAR_BODY
    }
}
pub struct Agent {
    net: Linear,
    opt: AdamW,
}
impl Agent {
    fn rollout(&self, xs: &[Tensor], buf: &mut Buffer) -> Result<()> {
        for x in xs {
            let lp = self.net.forward(x)?.sum_all()?;
            buf.log_probs.push(lp);
            buf.rewards.push(1.0);
        }
        Ok(())
    }
    fn update(&mut self, buf: &Buffer) -> Result<()> {
        let loss = Tensor::stack(&buf.log_probs, 0)?.mean_all()?.neg()?;
        self.opt.backward_step(&loss)
    }
}
pub fn train(xs: Vec<Tensor>, dev: &Device) -> Result<()> {
    let vm = VarMap::new();
    let net = linear(8, 1, VarBuilder::from_varmap(&vm, DType::F32, dev))?;
    let opt = AdamW::new(vm.all_vars(), ParamsAdamW::default())?;
    let mut agent = Agent { net, opt };
    let mut buf = Buffer::default();
    for _ in 0..100 {
        agent.rollout(&xs, &mut buf)?;
        agent.update(&buf)?;
        buf.clear();
    }
    Ok(())
}
"#;

    #[test]
    fn a_lent_rollout_buffer_its_caller_empties_each_iteration_keeps_nothing() {
        let rule = "accumulated_loss_tensor";
        let src = |body: &str| LENT_ROLLOUT.replace("CLEAR_BODY", body);
        assert_eq!(count(rule, None, &src("self.log_probs.clear(); self.rewards.clear();")), 0);
        // The whole buffer replaced by a fresh one.
        for fresh in ["*self = Self::default();", "*self = Buffer { log_probs: Vec::new(), rewards: Vec::new() };"] {
            assert_eq!(count(rule, None, &src(fresh)), 0, "{fresh}");
        }
        // Emptying only the host rewards leaves every step's graph in `log_probs`.
        assert_eq!(crate::rules::testing::lines(rule, &src("self.rewards.clear();")), vec![39]);
    }

    /// burn: a recurrent agent acts on its model without autodiff and keeps the state in a
    /// field declared on the inner backend.
    const INNER_STATE: &str = r#"
use burn::backend::{Autodiff, NdArray};
use burn::module::{AutodiffModule, Module};
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
type Train = Autodiff<NdArray>;
#[derive(Module, Debug)]
pub struct Cell<B: Backend> { input: Linear<B>, recur: Linear<B>, head: Linear<B> }
impl<B: Backend> Cell<B> {
    pub fn new(device: &B::Device) -> Self {
        Self { input: LinearConfig::new(4, 8).init(device), recur: LinearConfig::new(8, 8).init(device), head: LinearConfig::new(8, 2).init(device) }
    }
    pub fn advance(&self, x: Tensor<B, 2>, h: Tensor<B, 2>) -> (Tensor<B, 2>, Tensor<B, 2>) {
        let h = (self.input.forward(x) + self.recur.forward(h)).tanh();
        (self.head.forward(h.clone()), h)
    }
}
struct Agent<B: AutodiffBackend> {
    online: Cell<B>,
    optim: burn::optim::adaptor::OptimizerAdaptor<burn::optim::Adam, Cell<B>, B>,
    hidden: Tensor<B::InnerBackend, 2>,
    device: B::Device,
}
impl<B: AutodiffBackend> Agent<B> {
    fn act(&mut self, obs: [f32; 4]) -> usize {
        let x = Tensor::<B::InnerBackend, 2>::from_data(TensorData::new(obs.to_vec(), [1, 4]), &self.device);
        let policy = self.online.valid();
        let (q, h) = policy.advance(x, self.hidden.clone());
        self.hidden = h;
        q.argmax(1).into_scalar().elem::<i64>() as usize
    }
    fn learn(&mut self, x: Tensor<B, 2>, h: Tensor<B, 2>) -> f32 {
        let (q, _) = self.online.advance(x, h);
        let loss = q.mean();
        let value = loss.clone().into_scalar().elem::<f32>();
        let grads = GradientsParams::from_grads(loss.backward(), &self.online);
        self.online = self.optim.step(1e-3, self.online.clone(), grads);
        value
    }
}
fn main() {
    let device = Default::default();
    let online = Cell::<Train>::new(&device);
    let mut agent = Agent { online, optim: AdamConfig::new().init(), hidden: Tensor::zeros([1, 8], &device), device };
    for step in 0..1000 {
        let action = agent.act([0.0; 4]);
        if step >= 100 {
            let x = Tensor::zeros([16, 4], &device);
            let loss = agent.learn(x, Tensor::zeros([16, 8], &device));
            println!("{action} {loss}");
        }
    }
}
"#;

    #[test]
    fn a_state_kept_in_a_field_of_the_inner_backend_holds_no_graph() {
        assert_eq!(count("accumulated_loss_tensor", None, INNER_STATE), 0);
        // The same state kept on the autodiff backend, from the trained model, chains.
        let tracked = INNER_STATE
            .replace("hidden: Tensor<B::InnerBackend, 2>,", "hidden: Tensor<B, 2>,")
            .replace("Tensor::<B::InnerBackend, 2>::from_data", "Tensor::<B, 2>::from_data")
            .replace("let policy = self.online.valid();", "let policy = &self.online;");
        assert_ne!(tracked, INNER_STATE);
        assert_eq!(count("accumulated_loss_tensor", None, &tracked), 1);
    }
}
