//! `sampling_loop_chains_graph`: a sampling loop inside training feeds a forward pass its own
//! output on trainable weights (candle).

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{FnModel, Store, Taint};
use crate::rule::{Applies, Group, Rule, RuleMeta};

pub struct SamplingLoopChainsGraph;

pub static META: RuleMeta = RuleMeta {
    id: "sampling_loop_chains_graph",
    summary: "a sampling loop chains every step's graph through trainable weights",
    default_level: Level::Warn,
    group: Group::Stable,
    docs: r#"### What it does
Finds a loop that runs no backward and feeds a forward pass its own output
(`latents = step(&model.forward(&latents)?)?`, `tokens = model.forward(&tokens)?`), when the
loop runs inside training: nested in a loop that runs backward, or in a function that such a
loop calls (a preview sampler, an evaluation decoder), directly or through other functions.
Frameworks without a no-grad mode (candle).

A model built from plain weights (`VarBuilder::from_mmaped_safetensors`, `from_tensors`,
`from_pth`, quantized GGUF), here or by every caller that hands it over, records no graph, during
training or not: a frozen copy sampled for previews is not reported. Not when the crate lends it
mutably (`install_lora(&mut unet, ..)`): adapters put into it may be trainable variables.

Outside training, the same loop is reported when its model is built from trainable variables:
from a `VarBuilder::from_varmap(..)` (weights loaded with `varmap.load(..)`), `Var::new(..)`, a
function of the crate that returns such a builder or model, or a method that hands back the one
its receiver holds (`trainer.into_model()` after training), in the function or in a caller that
hands it the model, also inside a struct built around it (`Sampler { net: &net }.sample(..)`
stepping `x = self.step(&x)?` through a method that runs the forward pass, or through a
function of the crate handed the model, `x = langevin_step(net, &x, sigma)?`, or through a
value of its own that keeps the state and is handed the model on every call, `chain.advance(&net)`
writing `self.state` from `net.score(&self.state)`); tests, which build
small models from a fresh `VarMap`, hand nothing on. So
is a generation loop whose model keeps a graph-carrying value from call to call, built from what
it kept before (also in a function the training loop calls with the model it trains, a preview
generator): a key/value cache (`self.kv = Some(Tensor::cat(&[prev, &k], 2)?)`, also behind a
`Mutex` or in a `&mut Cache` argument), found through the model's layers; for a library's
model (candle-transformers), a cache lent to its forward (`llama.forward(&x, pos, &mut cache)`,
not one made with `Cache::new(false, ..)`, here or by every caller that lends it: `valid_loss(..,
&mut cache)`) or one the function resets (`model.clear_kv_cache()`). A model of the crate
that keeps its cache only behind a flag (`if self.cache.use_kv_cache { .. }`) keeps nothing when
it was built around a cache made with `Cache::new(false, ..)` (`Llama::load(vb, &cache, cfg)`),
here or by every caller that hands it over (`valid_loss(&dataset, &model, ..)`). A cache made afresh
on every iteration, or reset there (`model.reset_cache()`), is not. A loop over layers (`for
layer in layers { x = layer.forward(&x)? }`) is one forward pass, not a sampling loop. A
recurrent cell of `candle_nn::rnn` stepped on its own state (`state = cell.step(&x, &state)?`)
runs a forward pass, except over the elements of an input sequence (`let x = xs.get(t)?`,
`xs.i((.., t))?`, `for x in xs.iter()`), which is one forward pass over that sequence. So is a
loop up to a dimension of an input (`for i in 0..t` with `let (b, t) = tgt.dims2()?`, greedy
decoding to score a target): it chains no more steps than a pass over that input holds; so is a
generation loop up to the model's context length (`for pos in 0..cfg.block_size`, also with a
cache): it chains no more than one training pass over a block. A state cut in the loop's own pass
(`latents = latents.detach();` after the step, on every path that writes it) does not chain. A method
of the crate that returns the output of a forward pass it runs (`unet.predict_noise(&latents,
t)?`) is a forward pass, and a tensor helper of the crate (`fn euler(x: &Tensor, v: &Tensor) ->
Result<Tensor>`, a scheduler's `step`) hands on the graph of what it is given. A state unrolled
for a loss is not reported: in the loop's own function when a backward runs on a loss computed
from it, or in a loss helper whose callers backpropagate what it returns (`fn sequence_loss(..)
-> Result<Tensor>` unrolling a decoder with teacher forcing).

### Why is this bad?
candle records a graph for every operation on a tensor computed from a `Var`, and there is no
no-grad mode: during training the model's weights are `Var`s, so each sampling step's output
holds the whole graph of the steps before it. Memory grows with the number of steps until the
loop ends, and a long denoising loop runs the device out of memory in the middle of training.
A model whose weights stay `Var`s after training (or were loaded into a `VarMap`) does the same
at inference; with a key/value cache, every generated token keeps the activations of all the
tokens before it, instead of only their keys and values.

### Example
```rust
for step in 0..steps {
    let loss = model.loss(&batch)?;
    opt.backward_step(&loss)?;
    if step % 500 == 0 {
        let mut latents = Tensor::randn(0f32, 1., shape, &dev)?;
        for t in schedule.timesteps() {
            latents = scheduler.step(&model.forward(&latents, t)?, t, &latents)?;
        }
        save_preview(&latents)?;
    }
}
```

### Use instead
```rust
for t in schedule.timesteps() {
    latents = scheduler.step(&model.forward(&latents, t)?, t, &latents)?.detach();
}
```
"#,
};

impl Rule for SamplingLoopChainsGraph {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn applies(&self) -> Applies {
        // Frameworks where every op on a trainable tensor records a graph, no mode turns that
        // off, and backward does not free it.
        Applies::Known(|s| {
            s.no_grad_functions.is_empty()
                && s.no_grad_guards.is_empty()
                && s.no_grad_models.is_empty()
                && !s.graph_swept_by_backward
                && !s.explicit_grads
        })
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        let mut reported = Vec::new();
        let mut reported_loops = Vec::new();
        for (_, value, target, how, span) in f.stores() {
            // A fold, or an assignment of a whole new value that a forward pass computes from
            // the old one through a local of the iteration (`let inp = Tensor::cat(&[&emb,
            // &state], 1)?; state = cell.forward(&inp)?`): checked below.
            let replaced = how == Store::Assign && f.whole_write(target);
            if !(how == Store::Fold || replaced) || !f.taint(value).has(Taint::GRAPH) {
                continue;
            }
            let (Some(binding), Some(l)) = (f.binding_of(target), f.loop_of(value)) else { continue };
            // A loop over the model's own parts (`for block in &self.blocks { h = block.forward(&h)? }`)
            // is one forward pass through its layers, not a sampling loop.
            if f.loop_runs_backward(l) || f.loop_over_self(l) || reported.contains(&binding) {
                continue;
            }
            // A copy built from plain weights (`VarBuilder::from_mmaped_safetensors`, here or
            // handed by every caller) records no graph, during training or not.
            if f.only_inert_forwards_in(l) {
                continue;
            }
            // The state lives across the loop's iterations and a forward pass reads it.
            let declared = f.binding(binding).decl_loop();
            if f.loop_within(declared, l) || !f.feeds_forward_through_locals(value, binding) {
                continue;
            }
            // A decoder stepped over the length of an input (`for i in 0..t` with `let (b, t) =
            // tgt.dims2()?`, greedy decoding to score a target): it chains no more steps than a
            // forward pass over that input holds, and nothing outlives the call.
            if f.loop_over_dim(l) {
                continue;
            }
            // Cut in the same pass (`latents = latents.detach();` after the step): no step's
            // graph reaches the next.
            if f.cut_in_loop(binding, l, target) {
                continue;
            }
            // Unrolled through time for a loss (truncated backpropagation): the chain trains.
            // Also when the loss is this function's result and its callers backpropagate it
            // (`fn sequence_loss(..) -> Result<Tensor>` unrolling a decoder with teacher forcing).
            if f.loss_derives_from(binding)
                || (f.result_backpropagated() && f.returns().iter().any(|&r| f.derives_from(r, binding)))
            {
                continue;
            }
            let training = f.loop_or_outer_runs_backward(l);
            let mut caller = if training { None } else { f.per_step_from() };
            // Outside training: a model built from trainable variables (`VarBuilder::from_varmap`,
            // here or in a caller) records a graph just the same.
            let trainable = if training || caller.is_some() { None } else { f.trainable_forward_in(l) };
            let why = match (caller, trainable) {
                (None, _) if training => "the loop around it runs backward: the weights are trainable".to_string(),
                (Some(_), _) => "it runs during training: the weights are trainable".to_string(),
                (None, Some((model, false))) => {
                    caller = f.trainable_from();
                    let text = cx.snippet(model);
                    format!("`{text}` is built from trainable variables (a `VarMap`'s `Var`s)")
                }
                (None, Some((method, true))) => {
                    caller = f.trainable_from();
                    let text = cx.snippet(method);
                    format!(
                        "`self` holds a model built from trainable variables (a `VarMap`'s `Var`s), which `self.{text}` runs"
                    )
                }
                (None, None) => continue,
            };
            reported.push(binding);
            reported_loops.push(l);
            let name = f.binding(binding).name().to_string();
            let mut report = Report::new(
                format!("`{name}` chains every sampling step's graph through trainable weights"),
                span.clone(),
                format!("`{name}` is fed back into the next step's forward pass"),
            )
            .label(f.loop_header(l).clone(), "this loop runs no backward")
            .help(format!("detach the state every step (`{name} = {name}.detach()`), or sample with weights that are not `Var`s"))
            .note(format!(
                "{why}; every op on a tensor computed from a `Var` records a graph, with no no-grad mode, so each step's output keeps all the steps before it"
            ));
            if let Some((path, line, caller)) = caller {
                let what = if trainable.is_some() {
                    "hands this function a model built from trainable variables"
                } else {
                    "calls this function during training"
                };
                report.elsewhere.push((path.clone(), *line, format!("`{caller}` {what}")));
            }
            cx.report(report);
        }
        // A model that keeps its state (a key/value cache) from call to call, called in a loop
        // with weights built from trainable variables, outside training (generation after
        // loading the weights into a `VarMap`).
        let mut reported_models = Vec::new();
        for call in f.stateful_calls() {
            let (span, in_loop, receiver, callee) = (call.span(), call.in_loop(), call.receiver(), call.callee());
            // `model` of `model.text_decoder().forward(..)`: the getter lends a part of it.
            let (Some(l), Some(model)) = (in_loop, receiver.and_then(|r| f.receiver_root(r))) else { continue };
            // One finding per loop: a loop that also feeds its output back is reported above.
            // In a function a training loop calls (a preview generator) the weights are
            // trainable; elsewhere, the model must be built from trainable variables. A model
            // built from plain weights keeps no graph either way. A loop nested in the training
            // loop itself is left alone: its calls may well turn the cache off
            // (`model.forward(&x, 0, false)` for a validation loss).
            // The training step's own forward pass (its result is backpropagated by a caller:
            // `let y = model.forward_chunk(xs)?; opt.backward_step(..y..)`): a sequence run
            // through stateful parts is unrolled for that backward. What the state keeps across
            // calls is `accumulated_loss_tensor`'s, at the call.
            if f.result_backpropagated() {
                continue;
            }
            let training = f.per_step_from().is_some();
            // A state kept by another value than the model, stepped through a trainable model
            // the call is handed (`chain.advance(&net)` writing `self.state` from
            // `net.score(&self.state)`): the state chains through that model's weights.
            let handed = f.trainable_arg_of(span, l);
            let trainable = f.taint(model).has(Taint::TRAINABLE)
                || receiver.is_some_and(|r| f.taint(r).has(Taint::TRAINABLE))
                || handed.is_some();
            if reported_loops.contains(&l)
                || f.loop_over_dim(l)
                || f.loop_runs_backward(l)
                || f.loop_over_self(l)
                || f.loop_or_outer_runs_backward(l)
                || !(training || trainable)
                // Taken for trainable only because it runs during training: not when it is
                // built from plain weights. (A model with trainable parts beside frozen ones,
                // adapters or gates, keeps their graph.)
                || (!trainable && (f.taint(model).has(Taint::INERT_MODEL) || f.only_inert_forwards_in(l)))
            {
                continue;
            }
            // The model outlives the loop's iterations (one made each iteration starts empty).
            let Some(binding) = f.binding_of(model) else { continue };
            if f.loop_within(f.binding(binding).decl_loop(), l) || reported_models.contains(&binding) {
                continue;
            }
            // During training, the model handed in (a parameter, a field): a copy the function
            // makes for itself (`let sampler = model.merged()?`) may be made of plain weights.
            if !trainable && matches!(f.binding(binding).kind(), crate::model::BindingKind::Local) {
                continue;
            }
            reported_models.push(binding);
            let name = f.binding(binding).name().to_string();
            let method = callee.rsplit("::").next().unwrap_or(callee);
            let mut report = Report::new(
                format!("`{name}` keeps every step's graph in its state through trainable weights"),
                span.clone(),
                format!("`{method}` keeps what it computes for the next call (a cache)"),
            )
            .label(f.loop_header(l).clone(), "this loop runs no backward")
            .help(format!(
                "build `{name}` from weights that are not `Var`s (`VarBuilder::from_mmaped_safetensors`), or detach what `{method}` keeps"
            ))
            .note(format!(
                "{}; every op on a tensor computed from a `Var` records a graph, with no no-grad mode, so the state keeps every earlier step's graph",
                if let Some(model) = handed.filter(|_| !f.taint(model).has(Taint::TRAINABLE)) {
                    format!("`{method}` is handed `{}`, built from trainable variables (a `VarMap`'s `Var`s)", cx.snippet(model))
                } else if trainable {
                    format!("`{name}` is built from trainable variables (a `VarMap`'s `Var`s)")
                } else {
                    "it runs during training: the weights are trainable".to_string()
                }
            ));
            // Where the state is written from its old value (`self.x = (&self.x - eps)?`).
            if let Some((file, line, at, label)) = call.kept_at() {
                report = report.label_in(cx, (file, *line, at.clone()), label.clone());
            }
            if let Some((path, line, caller)) = f.per_step_from() {
                report.elsewhere.push((path.clone(), *line, format!("`{caller}` calls this function during training")));
            } else if let Some((path, line, caller)) = f.trainable_from() {
                report.elsewhere.push((
                    path.clone(),
                    *line,
                    format!("`{caller}` hands this function a model built from trainable variables"),
                ));
            }
            cx.report(report);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{count, elsewhere};

    /// A preview sampler called from the training loop.
    const PREVIEW: &str = r#"
use candle_core::{Result, Tensor};
use candle_nn::Optimizer;
fn sample_preview(model: &Unet, steps: usize, init: Tensor) -> Result<Tensor> {
    let mut latents = init;
    for t in 0..steps {
        let noise = model.forward(&latents, t)?;
        latents = (latents - noise * 0.1)?;
    }
    Ok(latents)
}
fn train(model: &Unet, opt: &mut candle_nn::AdamW, data: &[Tensor], init: &Tensor) -> Result<()> {
    for (i, x) in data.iter().enumerate() {
        let loss = model.forward(x, 0)?.mean_all()?;
        opt.backward_step(&loss)?;
        if i % 100 == 0 {
            let preview = sample_preview(model, 50, init.clone())?;
            save(&preview)?;
        }
    }
    Ok(())
}
"#;

    #[test]
    fn reports_a_sampler_called_from_the_training_loop() {
        assert_eq!(count("sampling_loop_chains_graph", None, PREVIEW), 1);
        // The call that runs it during training is named where an editor can jump to it.
        let notes = elsewhere("sampling_loop_chains_graph", PREVIEW);
        assert_eq!(notes, [(17, "`train` calls this function during training".to_string())]);
    }

    /// The state reaches the forward pass through locals of the step (a classifier-free
    /// guidance batch, a scheduler's input scaling), as denoising loops are usually written.
    #[test]
    fn reports_a_state_that_reaches_the_forward_pass_through_locals() {
        let through = PREVIEW.replace(
            "        let noise = model.forward(&latents, t)?;\n",
            "        let model_in = if guided { Tensor::cat(&[&latents, &latents], 0)? } else { latents.clone() };\n        let model_in = scheduler.scale_model_input(model_in, t)?;\n        let noise = model.forward(&model_in, t)?;\n",
        );
        assert_ne!(through, PREVIEW);
        assert_eq!(count("sampling_loop_chains_graph", None, &through), 1);
        // A local that only reads the state, while the forward pass runs on fresh input: no chain.
        let fresh = through
            .replace("let noise = model.forward(&model_in, t)?;", "let noise = model.forward(&init_noise(t)?, t)?;");
        assert_ne!(fresh, through);
        assert_eq!(count("sampling_loop_chains_graph", None, &fresh), 0);
    }

    /// The update step is a helper of the crate (`fn euler(x, v) -> Result<Tensor>`): its result
    /// carries the graph of what it is handed.
    const HELPER_STEP: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Module, VarBuilder, VarMap};
struct Net { l: Linear }
impl Net {
    fn new(vb: VarBuilder) -> Result<Self> { Ok(Self { l: linear(4, 4, vb.pp("l"))? }) }
    fn forward(&self, x: &Tensor) -> Result<Tensor> { self.l.forward(x) }
}
fn euler(x: &Tensor, v: &Tensor) -> RET {
    BODY
}
fn main() -> Result<()> {
    let mut vm = VarMap::new();
    let net = Net::new(VarBuilder::from_varmap(&vm, DType::F32, &Device::Cpu))?;
    vm.load("net.safetensors")?;
    let mut x = Tensor::randn(0f32, 1., (1, 4), &Device::Cpu)?;
    for _ in 0..100 {
        x = euler(&x, &net.forward(&x)?)?;
    }
    Ok(())
}
"#;

    #[test]
    fn a_tensor_helper_passes_its_arguments_graph_on() {
        let src = HELPER_STEP.replace("RET", "Result<Tensor>").replace("BODY", "x - (v * 0.01)?");
        assert_eq!(super::super::testing::lines("sampling_loop_chains_graph", &src), [18]);
        // A helper that hands back a host value, or a detached one, carries no graph.
        let host = HELPER_STEP.replace("RET", "Result<Vec<f32>>").replace("BODY", "(x - (v * 0.01)?)?.to_vec1()");
        assert_eq!(count("sampling_loop_chains_graph", None, &host), 0);
        let detached = HELPER_STEP.replace("RET", "Result<Tensor>").replace("BODY", "Ok((x - (v * 0.01)?)?.detach())");
        assert_eq!(count("sampling_loop_chains_graph", None, &detached), 0);
    }

    #[test]
    fn a_crate_method_that_returns_a_forward_output_is_a_forward_pass() {
        // `net.predict(&x)` runs the layers' forwards and returns the result.
        let src = HELPER_STEP
            .replace("RET", "Result<Tensor>")
            .replace("BODY", "x - (v * 0.01)?")
            .replace("fn forward(&self, x: &Tensor)", "fn predict(&self, x: &Tensor)")
            .replace("&net.forward(&x)?", "&net.predict(&x)?");
        assert!(src.contains("net.predict(&x)"));
        assert_eq!(count("sampling_loop_chains_graph", None, &src), 1);
        // One that returns host data is no forward pass of the loop.
        let host = src.replace(
            "fn predict(&self, x: &Tensor) -> Result<Tensor> { self.l.forward(x) }",
            "fn predict(&self, x: &Tensor) -> Result<Tensor> { self.l.forward(x)?.detach().copy() }",
        );
        assert_ne!(host, src);
        assert_eq!(count("sampling_loop_chains_graph", None, &host), 0);
    }

    /// Teacher forcing: a loss helper unrolls the decoder over the target, feeding the hidden
    /// state back, and the training loop backpropagates what it returns.
    const LOSS_HELPER: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{loss, Linear, Module, Optimizer};
fn sequence_loss(cx: &Linear, ch: &Linear, out: &Linear, ctx: &Tensor, xs: &[Tensor], ys: &[Tensor]) -> Result<Tensor> {
    let mut h = ctx.clone();
    let mut total = Tensor::zeros((), DType::F32, &Device::Cpu)?;
    for (x, y) in xs.iter().zip(ys) {
        h = (cx.forward(x)? + ch.forward(&h)?)?.tanh()?;
        total = (total + loss::cross_entropy(&out.forward(&h)?, y)?)?;
    }
    RESULT
}
fn train(cx: &Linear, ch: &Linear, out: &Linear, opt: &mut candle_nn::AdamW, data: &[(Tensor, Vec<Tensor>, Vec<Tensor>)]) -> Result<()> {
    for (ctx, xs, ys) in data {
        let l = sequence_loss(cx, ch, out, ctx, xs, ys)?;
        opt.backward_step(&l)?;
    }
    Ok(())
}
"#;

    #[test]
    fn accepts_a_decoder_unrolled_in_a_loss_its_callers_backpropagate() {
        let src = LOSS_HELPER.replace("RESULT", "total / xs.len() as f64");
        assert_eq!(count("sampling_loop_chains_graph", None, &src), 0);
        // A caller that only logs what the helper returns, and trains on another loss: the
        // unrolled chain is no part of the backward (as for a preview sampler).
        let logged = src.replace(
            "        opt.backward_step(&l)?;",
            "        opt.backward_step(&ctx.sqr()?.mean_all()?)?;
        println!(\"{}\", l.to_scalar::<f32>()?);",
        );
        assert_ne!(logged, src);
        assert_eq!(count("sampling_loop_chains_graph", None, &logged), 1);
    }

    #[test]
    fn reports_a_state_rebuilt_through_a_local_of_the_step() {
        // `let inp = ..state..; state = cell.forward(&inp)?`: a whole new state each step,
        // computed by a forward pass from the old one.
        let src = HELPER_STEP.replace("RET", "Result<Tensor>").replace("BODY", "x - (v * 0.01)?").replace(
            "        x = euler(&x, &net.forward(&x)?)?;",
            "        let inp = (&x * 0.5)?;\n        x = net.forward(&inp)?.tanh()?;",
        );
        assert!(src.contains("let inp"));
        assert_eq!(count("sampling_loop_chains_graph", None, &src), 1);
        // Writing one element of a collection keeps the rest: not taken for a chain.
        let element = src
            .replace(
                "let mut x = Tensor::randn(0f32, 1., (1, 4), &Device::Cpu)?;",
                "let mut xs = vec![Tensor::randn(0f32, 1., (1, 4), &Device::Cpu)?];",
            )
            .replace("let inp = (&x * 0.5)?;", "let inp = (&xs[0] * 0.5)?;")
            .replace("x = net.forward(&inp)?.tanh()?;", "xs[0] = net.forward(&inp)?.tanh()?;");
        assert_eq!(count("sampling_loop_chains_graph", None, &element), 0);
    }

    #[test]
    fn accepts_a_detached_state_and_a_sampler_outside_training() {
        let detached =
            PREVIEW.replace("latents = (latents - noise * 0.1)?;", "latents = (latents - noise * 0.1)?.detach();");
        assert_ne!(detached, PREVIEW);
        assert_eq!(count("sampling_loop_chains_graph", None, &detached), 0);
        // Cut in a statement of its own after the step.
        let after = PREVIEW.replace(
            "latents = (latents - noise * 0.1)?;",
            "latents = (latents - noise * 0.1)?;\n                latents = latents.detach();",
        );
        assert_ne!(after, PREVIEW);
        assert_eq!(count("sampling_loop_chains_graph", None, &after), 0);
        // Only now and then: the steps in between chain.
        let sometimes = PREVIEW.replace(
            "latents = (latents - noise * 0.1)?;",
            "latents = (latents - noise * 0.1)?;\n                if t % 10 == 0 { latents = latents.detach(); }",
        );
        assert_eq!(count("sampling_loop_chains_graph", None, &sometimes), 1);
        // The same cut written as a path call.
        let by_path = PREVIEW
            .replace("latents = (latents - noise * 0.1)?;", "latents = Tensor::detach(&(latents - noise * 0.1)?);");
        assert_ne!(by_path, PREVIEW);
        assert_eq!(count("sampling_loop_chains_graph", None, &by_path), 0);
        // Only called after training: the weights may well be plain tensors (a loaded model).
        let after = PREVIEW
            .replace("        if i % 100 == 0 {\n            let preview = sample_preview(model, 50, init.clone())?;\n            save(&preview)?;\n        }\n", "")
            .replace("    Ok(())\n}\n\"#", "    save(&sample_preview(model, 50, init.clone())?)?;\n    Ok(())\n}\n\"#");
        assert_ne!(after, PREVIEW);
        assert_eq!(count("sampling_loop_chains_graph", None, &after), 0);
    }

    /// Generation with a library model (candle-transformers) whose weights were loaded into a
    /// `VarMap`: its cache is lent as `&mut cache`, or kept inside and reset by the caller.
    const LIBRARY_CACHE: &str = r#"
use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::llama::{Cache, Llama};
use candle_transformers::models::mistral::Model;
fn generate(cfg: &Config, dev: &Device, prompt: Vec<u32>) -> anyhow::Result<Vec<u32>> {
    let mut varmap = VarMap::new();
    let vb = BUILDER;
    let llama = Llama::load(vb, cfg)?;
    varmap.load("finetuned.safetensors")?;
    let mut cache = Cache::new(ENABLED, DType::F32, cfg, dev)?;
    let mut tokens = prompt;
    let mut pos = 0;
    for _ in 0..256 {
        let input = Tensor::new(&tokens[pos..], dev)?.unsqueeze(0)?;
        let logits = llama.forward(&input, pos, &mut cache)?;
        pos = tokens.len();
        tokens.push(argmax(&logits)?);
    }
    Ok(tokens)
}
pub struct TextGen { model: Model, dev: Device }
impl TextGen {
    pub fn new(cfg: &MistralConfig, dev: &Device) -> anyhow::Result<Self> {
        let varmap = VarMap::new();
        let model = Model::new(cfg, VarBuilder::from_varmap(&varmap, DType::F32, dev))?;
        Ok(Self { model, dev: dev.clone() })
    }
    pub fn run(&mut self, mut tokens: Vec<u32>) -> anyhow::Result<Vec<u32>> {
        self.model.clear_kv_cache();
        for i in 0..256 {
            let ctx = if i > 0 { &tokens[tokens.len() - 1..] } else { &tokens[..] };
            let input = Tensor::new(ctx, &self.dev)?.unsqueeze(0)?;
            let logits = self.model.forward(&input, tokens.len() - ctx.len())?;
            tokens.push(argmax(&logits)?);
        }
        Ok(tokens)
    }
}
pub fn serve(cfg: &MistralConfig, dev: &Device) -> anyhow::Result<()> {
    let mut gen = TextGen::new(cfg, dev)?;
    for line in std::io::stdin().lines() {
        println!("{:?}", gen.run(encode(&line?))?);
    }
    Ok(())
}
"#;

    #[test]
    fn reports_a_library_models_cache_through_trainable_weights() {
        let src = LIBRARY_CACHE
            .replace("BUILDER", "VarBuilder::from_varmap(&varmap, DType::F32, dev)")
            .replace("ENABLED", "true");
        assert_eq!(crate::rules::testing::lines("sampling_loop_chains_graph", &src), vec![16, 34]);
        // Frozen weights: nothing is a `Var`.
        let frozen = src.replace(
            "VarBuilder::from_varmap(&varmap, DType::F32, dev)",
            "unsafe { VarBuilder::from_mmaped_safetensors(&[\"w.safetensors\"], DType::F32, dev)? }",
        );
        assert_eq!(count("sampling_loop_chains_graph", None, &frozen), 0);
        // The cache turned off: every step re-runs the host tokens.
        let off = LIBRARY_CACHE
            .replace("BUILDER", "VarBuilder::from_varmap(&varmap, DType::F32, dev)")
            .replace("ENABLED", "false");
        assert_eq!(crate::rules::testing::lines("sampling_loop_chains_graph", &off), vec![34]);
        // Reset on every step: nothing lasts.
        let reset = src.replace("for i in 0..256 {\n", "for i in 0..256 {\n            self.model.clear_kv_cache();\n");
        assert_eq!(crate::rules::testing::lines("sampling_loop_chains_graph", &reset), vec![16]);
    }

    /// A DDPM wrapper whose sampler indexes its noise schedule (`self.alpha[t]`, host numbers)
    /// while it denoises with the network being trained.
    const SCHEDULE: &str = r#"
use candle_core::{Device, Result, Tensor};
use candle_nn::{Module, Optimizer};
struct Ddpm { net: Denoiser, n_t: usize, alpha: Vec<f64>, beta: Vec<f64>, blocks: Vec<Block> }
impl Ddpm {
    fn sample(&self, n: usize, dev: &Device) -> Result<Tensor> {
        let mut x = Tensor::randn(0f32, 1., (n, 2), dev)?;
        for t in (0..self.n_t).rev() {
            let eps = self.net.forward(&x)?;
            x = ((x - (eps * self.beta[t])?)? / self.alpha[t].sqrt())?;
        }
        Ok(x)
    }
}
fn train(ddpm: &Ddpm, opt: &mut candle_nn::AdamW, data: &[Tensor], dev: &Device) -> Result<()> {
    for (i, x0) in data.iter().enumerate() {
        opt.backward_step(&ddpm.net.forward(x0)?.mean_all()?)?;
        if i % 100 == 0 {
            println!("{}", ddpm.sample(16, dev)?);
        }
    }
    Ok(())
}
"#;

    #[test]
    fn a_sampler_indexing_its_schedule_is_not_a_walk_over_the_models_parts() {
        assert_eq!(crate::rules::testing::lines("sampling_loop_chains_graph", SCHEDULE), vec![10]);
        // Indexing the model's blocks is a walk over its parts: one forward pass.
        let parts = SCHEDULE.replace("let eps = self.net.forward(&x)?;", "let eps = self.blocks[t].forward(&x)?;");
        assert_eq!(count("sampling_loop_chains_graph", None, &parts), 0);
    }

    /// A character model sampled during training: candle's LSTM cell stepped on its own state.
    const RNN_SAMPLE: &str = r#"
use candle_core::{DType, Device, Tensor};
use candle_nn::rnn::{lstm, LSTMConfig, RNN};
use candle_nn::{linear, AdamW, Module, Optimizer, VarBuilder, VarMap};
fn train(dev: &Device, data: &[(Tensor, Tensor)]) -> candle_core::Result<()> {
    let vm = VarMap::new();
    let vb = VarBuilder::from_varmap(&vm, DType::F32, dev);
    let cell = lstm(16, 64, LSTMConfig::default(), vb.pp("lstm"))?;
    let head = linear(64, 16, vb.pp("head"))?;
    let mut opt = AdamW::new_lr(vm.all_vars(), 1e-3)?;
    for (i, (x, y)) in data.iter().enumerate() {
        let states = cell.seq(x)?;
        let loss = candle_nn::loss::cross_entropy(&head.forward(states.last().unwrap().h())?, y)?;
        opt.backward_step(&loss)?;
        if i % 1000 == 0 {
            let mut state = cell.zero_state(1)?;
            let mut x = Tensor::zeros((1, 16), DType::F32, dev)?;
            for _ in 0..200 {
                state = cell.step(&x, &state)?;
                x = head.forward(state.h())?;
            }
        }
    }
    Ok(())
}
"#;

    #[test]
    fn reports_an_rnn_cell_stepped_on_its_own_state() {
        assert_eq!(crate::rules::testing::lines("sampling_loop_chains_graph", RNN_SAMPLE), vec![19]);
        let cut = RNN_SAMPLE.replace("state = cell.step(&x, &state)?;", "state = cell.step(&x.detach(), &state)?;\n                state = candle_nn::rnn::LSTMState::new(state.h().detach(), state.c().detach());");
        assert_ne!(cut, RNN_SAMPLE);
        assert_eq!(count("sampling_loop_chains_graph", None, &cut), 0);
        // The state's field cut after the step.
        let field = RNN_SAMPLE.replace(
            "state = cell.step(&x, &state)?;",
            "state = cell.step(&x, &state)?;\n                state.h = state.h.detach();\n                state.c = state.c.detach();",
        );
        assert_ne!(field, RNN_SAMPLE);
        assert_eq!(count("sampling_loop_chains_graph", None, &field), 0);
        // A cell stepped over the elements of an input sequence: one forward pass over it.
        let encoder = r#"
use candle_core::{DType, Device, Tensor};
use candle_nn::rnn::{lstm, LSTMConfig, LSTMState, RNN};
use candle_nn::{VarBuilder, VarMap};
fn encode(vm: &VarMap, xs: &Tensor, h: Tensor, c: Tensor, dev: &Device) -> candle_core::Result<Tensor> {
    let cell = lstm(16, 64, LSTMConfig::default(), VarBuilder::from_varmap(vm, DType::F32, dev))?;
    let mut state = LSTMState::new(h, c);
    for t in 0..xs.dim(0)? {
        let x = xs.get(t)?;
        state = cell.step(&x, &state)?;
    }
    Ok(state.h().clone())
}
"#;
        assert_eq!(count("sampling_loop_chains_graph", None, encoder), 0);
        // Also a slice of a batch-first sequence (`IndexOp`), with or without a range.
        for slice in ["let x = xs.i((.., t))?;", "let x = xs.i((.., t..t + 1))?.squeeze(1)?;"] {
            let sliced = encoder.replace("let x = xs.get(t)?;", slice);
            assert_ne!(sliced, encoder);
            assert_eq!(count("sampling_loop_chains_graph", None, &sliced), 0, "{slice}");
        }
        // Its own output fed back, for as many steps as the input is long: no more steps than
        // a pass over the input holds (greedy decoding of a target, to score it).
        let fed_back = encoder.replace("let x = xs.get(t)?;", "let x = state.h().clone();");
        assert_eq!(count("sampling_loop_chains_graph", None, &fed_back), 0);
        let (b, t) = ("let (b, t) = xs.dims2()?;\n    ", "for t in 0..xs.dim(0)? {");
        let dims = fed_back.replace(t, &format!("{b}for i in 0..t {{"));
        assert_ne!(dims, fed_back);
        assert_eq!(count("sampling_loop_chains_graph", None, &dims), 0);
        // For a number of steps of its own (a setting, a constant): reported.
        for steps in ["for t in 0..steps {", "for t in 0..64 {"] {
            let sampled = fed_back.replace(t, steps).replace("dev: &Device)", "dev: &Device, steps: usize)");
            assert_ne!(sampled, fed_back);
            assert_eq!(count("sampling_loop_chains_graph", None, &sampled), 1, "{steps}");
        }
    }

    #[test]
    fn reports_a_sampling_loop_nested_in_the_training_loop() {
        let nested = r#"
use candle_core::{Result, Tensor};
fn train(model: &Net, opt: &mut candle_nn::AdamW, data: &[Tensor], init: &Tensor) -> Result<()> {
    for x in data {
        opt.backward_step(&model.forward(x)?.mean_all()?)?;
        let mut tokens = init.clone();
        for _ in 0..32 {
            tokens = model.forward(&tokens)?;
        }
    }
    Ok(())
}
"#;
        assert_eq!(count("sampling_loop_chains_graph", None, nested), 1);
    }

    /// A decoder that a preview sampler calls: its loop over its own blocks feeds each block
    /// the previous one's output, within one forward pass.
    #[test]
    fn accepts_a_loop_over_the_models_own_layers() {
        let layers = PREVIEW.replace(
            "fn sample_preview(",
            r#"struct Decoder { blocks: Vec<Block> }
impl Decoder {
    fn decode(&self, z: &Tensor) -> Result<Tensor> {
        let mut h = z.clone();
        for block in &self.blocks {
            h = block.forward(&h)?;
        }
        Ok(h)
    }
}
fn sample_preview("#,
        );
        let layers = layers.replace("save(&preview)?;", "save(&decoder.decode(&preview)?)?;");
        assert_ne!(layers, PREVIEW);
        // The sampler's own loop only.
        assert_eq!(count("sampling_loop_chains_graph", None, &layers), 1);
    }

    /// Generation after training or after loading weights into a `VarMap`: the model is built
    /// from trainable variables, so every step records a graph; no backward anywhere.
    const LOADED: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{VarBuilder, VarMap};
pub struct Unet { inner: Inner }
impl Unet {
    pub fn new(vb: VarBuilder) -> Result<Self> { Ok(Self { inner: Inner::new(vb.pp("inner"))? }) }
}
fn denoise(model: &Unet, mut latents: Tensor, steps: usize) -> Result<Tensor> {
    for t in 0..steps {
        latents = (&latents - model.forward(&latents, t)?)?;
    }
    Ok(latents)
}
fn main() -> Result<()> {
    let mut varmap = VarMap::new();
    let vb = BUILDER;
    let model = Unet::new(vb)?;
    varmap.load("unet.safetensors")?;
    let image = denoise(&model, Tensor::zeros((1, 4), DType::F32, &Device::Cpu)?, 50)?;
    save(&image)
}
"#;

    #[test]
    fn reports_a_sampler_whose_model_is_built_from_trainable_variables() {
        let src = |builder: &str| LOADED.replace("BUILDER", builder);
        let varmap = src("VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu)");
        assert_eq!(count("sampling_loop_chains_graph", None, &varmap), 1);
        let notes = elsewhere("sampling_loop_chains_graph", &varmap);
        assert_eq!(notes, [(19, "`main` hands this function a model built from trainable variables".to_string())]);
        // Weights read as plain tensors: no graph, nothing chains.
        let mmaped =
            src("unsafe { VarBuilder::from_mmaped_safetensors(&[\"unet.safetensors\"], DType::F32, &Device::Cpu)? }");
        assert_eq!(count("sampling_loop_chains_graph", None, &mmaped), 0);
        // The builder comes from a function of the crate that makes it from a `VarMap`.
        let helper = src("trainable_weights()?")
            + "fn trainable_weights() -> Result<VarBuilder<'static>> {\n    let map = VarMap::new();\n    Ok(VarBuilder::from_varmap(&map, DType::F32, &Device::Cpu))\n}\n";
        assert_eq!(count("sampling_loop_chains_graph", None, &helper), 1);
        // Only a test builds it from a fresh `VarMap` (a shape check): nothing is handed on.
        let test_only = src(
            "unsafe { VarBuilder::from_mmaped_safetensors(&[\"unet.safetensors\"], DType::F32, &Device::Cpu)? }",
        ) + "#[test]\nfn shapes() {\n    let vm = VarMap::new();\n    let m = Unet::new(VarBuilder::from_varmap(&vm, DType::F32, &Device::Cpu)).unwrap();\n    denoise(&m, Tensor::zeros((1, 4), DType::F32, &Device::Cpu).unwrap(), 2).unwrap();\n}\n";
        assert_eq!(count("sampling_loop_chains_graph", None, &test_only), 0);
    }

    /// Token generation with a model that keeps a key/value cache: `self.kv = cat(prev, k)` in
    /// an attention layer, reached through the model's blocks.
    const CACHED: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Module, VarBuilder, VarMap};
pub struct Attention { qkv: Linear, kv: Option<Tensor> }
impl Attention {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        let k = self.qkv.forward(x)?;
        let k = match &self.kv { Some(prev) => Tensor::cat(&[prev, &k], 1)?, None => k };
        self.kv = Some(k.clone());
        Ok(k)
    }
}
pub struct Block { attn: Attention }
impl Block {
    fn forward(&mut self, x: &Tensor) -> Result<Tensor> { self.attn.forward(x) }
}
pub struct Lm { blocks: Vec<Block> }
impl Lm {
    pub fn new(vb: VarBuilder) -> Result<Self> { Ok(Self { blocks: load_blocks(vb)? }) }
    pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> {
        let mut h = x.clone();
        for block in self.blocks.iter_mut() {
            h = block.forward(&h)?;
        }
        Ok(h)
    }
}
fn main() -> Result<()> {
    let varmap = VarMap::new();
    let mut model = Lm::new(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?;
    let mut tokens = vec![1u32];
    for _ in 0..256 {
        RESET
        let x = Tensor::new(&tokens[tokens.len() - 1..], &Device::Cpu)?;
        let next = model.forward(&x)?.argmax(0)?.to_vec1::<u32>()?;
        tokens.push(next[0]);
    }
    Ok(())
}
"#;

    #[test]
    fn reports_generation_through_a_cache_of_the_model_being_trained() {
        // A preview generator called from the training loop with the model being trained.
        let during = CACHED.replace(
            "fn main() -> Result<()> {\n    let varmap = VarMap::new();\n    let mut model = Lm::new(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?;\n",
            "fn main() -> Result<()> {\n    let varmap = VarMap::new();\n    let mut model = Lm::new(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?;\n    let mut opt = candle_nn::AdamW::new_lr(varmap.all_vars(), 1e-3)?;\n    train(&mut model, &mut opt, &data()?)\n}\nfn train(model: &mut Lm, opt: &mut candle_nn::AdamW, data: &[Tensor]) -> Result<()> {\n    for (i, x) in data.iter().enumerate() {\n        opt.backward_step(&model.forward(x)?.mean_all()?)?;\n        if i % 100 == 0 { preview(model)?; }\n    }\n    Ok(())\n}\nfn preview(model: &mut Lm) -> Result<()> {\n",
        );
        assert_ne!(during, CACHED);
        let src = during.replace("RESET", "");
        assert_eq!(count("sampling_loop_chains_graph", None, &src), 1);
        // A copy the preview makes for itself may be of plain weights.
        let copy = src.replace(
            "fn preview(model: &mut Lm) -> Result<()> {\n",
            "fn preview(trained: &mut Lm) -> Result<()> {\n    let mut model = load_preview_copy()?;\n",
        );
        assert_ne!(copy, src);
        assert_eq!(count("sampling_loop_chains_graph", None, &copy), 0);
    }

    /// Generation up to the model's context length keeps at most a block's worth of steps, as
    /// one training pass over a block does.
    #[test]
    fn generation_up_to_the_context_length_is_bounded_by_a_block() {
        let src = CACHED.replace("RESET", "") + "pub struct Config { block_size: usize, max_new_tokens: usize }\n";
        let bounded = src.replace(
            "    for _ in 0..256 {\n",
            "    let cfg = Config { block_size: 16, max_new_tokens: 16 };\n    for _ in 0..cfg.block_size {\n",
        );
        assert_ne!(bounded, src);
        assert_eq!(count("sampling_loop_chains_graph", None, &bounded), 0);
        let local = src.replace("    for _ in 0..256 {\n", "    let n_ctx = 16;\n    for _ in 0..n_ctx {\n");
        assert_eq!(count("sampling_loop_chains_graph", None, &local), 0);
        // A number of tokens to generate is not the context length.
        let picked = bounded.replace("0..cfg.block_size", "0..cfg.max_new_tokens");
        assert_ne!(picked, bounded);
        assert_eq!(count("sampling_loop_chains_graph", None, &picked), 1);
    }

    #[test]
    fn reports_generation_through_a_cache_on_trainable_weights() {
        let src = CACHED.replace("RESET", "");
        let lines = super::super::testing::lines("sampling_loop_chains_graph", &src);
        assert_eq!(lines, [35]);
        // The write that keeps the state is shown.
        let labels = super::super::testing::labels("sampling_loop_chains_graph", &src);
        assert!(labels.contains(&(9, "`self.kv` is computed from its old value here".to_string())), "{labels:?}");
        // The cache starts afresh each iteration: nothing chains across them.
        let reset = CACHED.replace("RESET", "model.reset_cache();");
        assert_eq!(count("sampling_loop_chains_graph", None, &reset), 0);
        // The cache is detached when kept.
        let detached = src.replace("self.kv = Some(k.clone());", "self.kv = Some(k.detach());");
        assert_ne!(detached, src);
        assert_eq!(count("sampling_loop_chains_graph", None, &detached), 0);
        // Weights read as plain tensors.
        let plain = src.replace(
            "VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu)",
            "unsafe { VarBuilder::from_mmaped_safetensors(&[\"lm.safetensors\"], DType::F32, &Device::Cpu)? }",
        );
        assert_ne!(plain, src);
        assert_eq!(count("sampling_loop_chains_graph", None, &plain), 0);
        // The model's type comes from the tuple it is bound from (a `match` over model sizes).
        let tuple = src.replace(
            "let mut model = Lm::new(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?;",
            "let (mut model, _name) = match size() {\n        0 => (Lm::new(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?, \"small\"),\n        _ => (Lm::new(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?, \"large\"),\n    };",
        ) + "pub struct Other { kv: Option<Tensor> }\nimpl Other {\n    pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }\n}\n";
        assert_ne!(tuple, src);
        assert_eq!(count("sampling_loop_chains_graph", None, &tuple), 1);
        // The model's type comes from the return type of the crate function that builds it.
        let built = src.replace(
            "let mut model = Lm::new(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?;",
            "let mut model = build_model(&varmap)?;",
        ) + "fn build_model(varmap: &VarMap) -> Result<Lm> {\n    Lm::new(VarBuilder::from_varmap(varmap, DType::F32, &Device::Cpu))\n}\npub struct Other { kv: Option<Tensor> }\nimpl Other {\n    pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }\n}\n";
        assert_ne!(built, src);
        assert_eq!(count("sampling_loop_chains_graph", None, &built), 1);
        // A `&mut` argument made afresh each iteration does not reset what the model keeps in
        // itself.
        let per_prompt = src
            .replace("pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> {\n        let mut h", "pub fn forward(&mut self, x: &Tensor, cache: &mut Cache) -> Result<Tensor> {\n        cache.n += 1;\n        let mut h")
            .replace("        let next = model.forward(&x)?", "        let mut cache = Cache::default();\n        let next = model.forward(&x, &mut cache)?");
        assert_ne!(per_prompt, src);
        assert_eq!(count("sampling_loop_chains_graph", None, &per_prompt), 1);
        // The model is reached through a getter that lends a part of an outer model.
        let getter = src
            .replace(
                "let mut model = Lm::new(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))?;",
                "let mut model = Captioner { decoder: Lm::new(VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))? };",
            )
            .replace("let next = model.forward(&x)?", "let next = model.decoder().forward(&x)?")
            + "pub struct Captioner { decoder: Lm }\nimpl Captioner {\n    pub fn decoder(&mut self) -> &mut Lm { &mut self.decoder }\n}\npub struct Other { kv: Option<Tensor> }\nimpl Other {\n    pub fn forward(&mut self, x: &Tensor) -> Result<Tensor> { Ok(x.clone()) }\n}\n";
        assert_eq!(count("sampling_loop_chains_graph", None, &getter), 1);
    }

    #[test]
    fn a_cache_handed_in_chains_only_when_it_outlives_the_iteration() {
        let src = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Module, VarBuilder, VarMap};
pub struct Cache { k: Option<Tensor> }
pub struct Lm { qkv: Linear }
impl Lm {
    pub fn step(&self, x: &Tensor, cache: &mut Cache) -> Result<Tensor> {
        let k = self.qkv.forward(x)?;
        let k = match &cache.k { Some(prev) => Tensor::cat(&[prev, &k], 1)?, None => k };
        cache.k = Some(k.clone());
        Ok(k)
    }
}
fn main() -> Result<()> {
    let varmap = VarMap::new();
    let model = Lm { qkv: linear(4, 4, VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))? };
    OUTSIDE
    for prompt in prompts() {
        INSIDE
        let y = model.step(&prompt, &mut cache)?;
        save(&y)?;
    }
    Ok(())
}
"#;
        let cache = "let mut cache = Cache { k: None };";
        let once = src.replace("OUTSIDE", cache).replace("INSIDE", "");
        let lines = super::super::testing::lines("sampling_loop_chains_graph", &once);
        assert_eq!(lines, [20]);
        let per_prompt = src.replace("OUTSIDE", "").replace("INSIDE", cache);
        assert_eq!(count("sampling_loop_chains_graph", None, &per_prompt), 0);
    }

    /// A state handed in by `&mut` that the step keeps with its graph only when a `bool`
    /// parameter asks for it (meta-training), and detached otherwise.
    const GATED_STATE: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Module, VarBuilder, VarMap};
pub struct Block { w: Linear }
impl Block {
    pub fn step(&self, x: &Tensor, state: &mut Tensor, training: bool) -> Result<Tensor> {
        let updated = (&*state + self.w.forward(x)?)?;
        KEEP
        state.matmul(x)
    }
}
pub struct Net { block: Block }
impl Net {
    pub fn run(&self, x: &Tensor, state: &mut Tensor, training: bool) -> Result<Tensor> {
        self.block.step(x, state, training)
    }
}
fn main() -> Result<()> {
    let varmap = VarMap::new();
    let block = Block { w: linear(4, 4, VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))? };
    let net = Net { block: Block { w: linear(4, 4, VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu))? } };
    let x = Tensor::ones((4, 4), DType::F32, &Device::Cpu)?;
    let mut state = Tensor::eye(4, DType::F32, &Device::Cpu)?;
    for _ in 0..100 {
        CALL
    }
    Ok(())
}
"#;

    #[test]
    fn a_state_kept_only_when_a_flag_asks_is_judged_by_the_callers_value() {
        let statement = "if training { *state = updated; } else { *state = updated.detach(); }";
        let expression = "*state = if training { updated } else { updated.detach() };";
        for keep in [statement, expression] {
            for (call, found) in [
                ("let _ = block.step(&x, &mut state, false)?;", 0),
                ("let _ = block.step(&x, &mut state, true)?;", 1),
                // Handed on through a function's own `bool` parameter.
                ("let _ = net.run(&x, &mut state, false)?;", 0),
                ("let _ = net.run(&x, &mut state, true)?;", 1),
            ] {
                let src = GATED_STATE.replace("KEEP", keep).replace("CALL", call);
                assert_eq!(count("sampling_loop_chains_graph", None, &src), found, "{keep} / {call}");
            }
        }
    }

    /// A preview sampler run during training on a copy built from plain weights.
    const FROZEN_COPY: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Optimizer, VarBuilder, VarMap};
struct Flow { l: Linear }
impl Flow {
    fn new(vb: VarBuilder) -> Result<Self> { Ok(Self { l: linear(2, 2, vb.pp("l"))? }) }
    fn forward(&self, x: &Tensor) -> Result<Tensor> { self.l.forward(x) }
}
fn install_adapters(flow: &mut Flow, varmap: &VarMap) -> Result<()> {
    flow.l = lora(&flow.l, VarBuilder::from_varmap(varmap, DType::F32, &Device::Cpu))?;
    Ok(())
}
fn main() -> Result<()> {
    let dev = Device::Cpu;
    let varmap = VarMap::new();
    let model = Flow::new(VarBuilder::from_varmap(&varmap, DType::F32, &dev))?;
    let mut opt = candle_nn::SGD::new(varmap.all_vars(), 0.1)?;
    for step in 0..1000 {
        let loss = model.forward(&batch(step)?)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        if step % 100 == 0 {
            let mut copy = Flow::new(unsafe { VarBuilder::from_mmaped_safetensors(&["snap.safetensors"], DType::F32, &dev)? })?;
            LEND
            let mut x = Tensor::randn(0f32, 1.0, (8, 2), &dev)?;
            for _ in 0..20 {
                x = (&x + (copy.forward(&x)? * 0.05)?)?;
            }
            save(&x)?;
        }
    }
    Ok(())
}
"#;

    #[test]
    fn a_copy_built_from_plain_weights_records_no_graph_unless_lent_mutably() {
        assert_eq!(count("sampling_loop_chains_graph", None, &FROZEN_COPY.replace("LEND", "")), 0);
        // Adapters installed into the copy (`&mut copy`) may be trainable variables.
        let lent = FROZEN_COPY.replace("LEND", "install_adapters(&mut copy, &varmap)?;");
        assert_eq!(super::super::testing::lines("sampling_loop_chains_graph", &lent), vec![26]);
    }

    #[test]
    fn a_loader_that_maps_its_weights_itself_builds_a_frozen_model() {
        let loader = "fn load_copy(path: &str, dev: &Device) -> Result<Flow> {\n    let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[path], DType::F32, dev)? };\n    Flow::new(vb)\n}\n";
        let src = FROZEN_COPY
            .replace("fn main() -> Result<()> {", &format!("{loader}fn main() -> Result<()> {{"))
            .replace(
                "Flow::new(unsafe { VarBuilder::from_mmaped_safetensors(&[\"snap.safetensors\"], DType::F32, &dev)? })?",
                "load_copy(\"snap.safetensors\", &dev)?",
            )
            .replace("LEND", "");
        assert!(src.contains("load_copy(\"snap"));
        assert_eq!(count("sampling_loop_chains_graph", None, &src), 0);
    }

    #[test]
    fn a_library_loader_of_weights_files_builds_a_frozen_model() {
        let src = FROZEN_COPY
            .replace(
                "Flow::new(unsafe { VarBuilder::from_mmaped_safetensors(&[\"snap.safetensors\"], DType::F32, &dev)? })?",
                "sd_config.build_unet(\"unet.safetensors\", &dev, 4, false, DType::F32)?",
            )
            .replace("LEND", "");
        assert!(src.contains("build_unet"));
        assert_eq!(count("sampling_loop_chains_graph", None, &src), 0);
    }

    /// Textual inversion: a frozen UNet sampled during training, conditioned on the trainable
    /// token embedding.
    const FROZEN_CONDITIONED: &str = r#"
use candle_core::{DType, Device, Result, Tensor, Var};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
fn main() -> Result<()> {
    let dev = Device::Cpu;
    let unet = sd.build_unet("unet.safetensors", &dev, 4, false, DType::F32)?;
    let token = Var::randn(0f32, 0.02, 768, &dev)?;
    let mut opt = AdamW::new(vec![token.clone()], ParamsAdamW::default())?;
    for step in 0..3000usize {
        let loss = unet.forward(&noisy(step)?, 0.5, &token.as_tensor().unsqueeze(0)?)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        if step % 500 == 0 {
            let cond = COND;
            let mut x = Tensor::randn(0f32, 1., (1, 4, 64, 64), &dev)?;
            for t in 0..25 {
                let eps = unet.forward(&x, t as f64, &cond)?;
                x = (&x - (eps * 0.04)?)?;
            }
            save(&x)?;
        }
    }
    Ok(())
}
"#;

    #[test]
    fn a_frozen_model_handed_a_trainable_input_chains_its_graph() {
        let live = FROZEN_CONDITIONED.replace("COND", "token.as_tensor().unsqueeze(0)?");
        assert_eq!(super::super::testing::lines("sampling_loop_chains_graph", &live), vec![17]);
        let detached = FROZEN_CONDITIONED.replace("COND", "token.as_tensor().detach().unsqueeze(0)?");
        assert_eq!(count("sampling_loop_chains_graph", None, &detached), 0);
    }

    /// A sampler struct a caller builds around the model (`Sampler { net: &net }`) whose loop
    /// steps through a method of its own that runs the forward pass.
    const SAMPLER_STRUCT: &str = r#"
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{linear, Linear, VarBuilder, VarMap};
pub struct Denoiser { fc: Linear }
impl Denoiser {
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> { self.fc.forward(x) }
}
pub struct Sampler<'a> { net: &'a Denoiser, scale: f64 }
impl<'a> Sampler<'a> {
    fn step(&self, x: &Tensor) -> Result<Tensor> {
        let eps = self.net.forward(x)?;
        x - (eps * self.scale)?
    }
    pub fn sample(&self, steps: usize) -> Result<Tensor> {
        let mut x = Tensor::zeros((1, 4), DType::F32, &Device::Cpu)?;
        for _ in 0..steps {
            x = self.step(&x)?;
        }
        Ok(x)
    }
}
fn main() -> Result<()> {
    let vm = VarMap::new();
    let net = Denoiser { fc: linear(4, 4, BUILDER)? };
    let sampler = Sampler { net: &net, scale: 0.1 };
    let x = sampler.sample(100)?;
    println!("{x}");
    Ok(())
}
"#;

    #[test]
    fn reports_a_sampler_struct_holding_a_model_built_from_trainable_variables() {
        let varmap = SAMPLER_STRUCT.replace("BUILDER", "VarBuilder::from_varmap(&vm, DType::F32, &Device::Cpu)");
        assert_eq!(super::super::testing::lines("sampling_loop_chains_graph", &varmap), vec![17]);
        // Built from plain tensors: no `Var`, no graph.
        let plain = SAMPLER_STRUCT.replace(
            "BUILDER",
            "unsafe { VarBuilder::from_mmaped_safetensors(&[\"net.safetensors\"], DType::F32, &Device::Cpu)? }",
        );
        assert_eq!(count("sampling_loop_chains_graph", None, &plain), 0);
        // A step that detaches what it returns cuts the chain.
        let cut = varmap.replace("x = self.step(&x)?;", "x = self.step(&x)?.detach();");
        assert_eq!(count("sampling_loop_chains_graph", None, &cut), 0);
    }

    /// A sampler whose step is a helper handed the trainable model (`x = step(net, &x)?`).
    const STEP_HELPER_OF_MODEL: &str = r#"
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{linear, Linear, Module, VarBuilder, VarMap};
pub struct Net { fc: Linear }
impl Net { pub fn score(&self, x: &Tensor) -> Result<Tensor> { self.fc.forward(x) } }
fn step(net: &Net, x: &Tensor) -> Result<Tensor> {
    let g = net.score(x)?;
    x + (g * 0.01)?
}
pub fn sample(net: &Net, n: usize, dev: &Device) -> Result<Tensor> {
    let mut x = Tensor::zeros((8, 4), DType::F32, dev)?;
    for _ in 0..n {
        x = step(net, &x)?CUT;
    }
    Ok(x)
}
fn main() -> Result<()> {
    let dev = Device::Cpu;
    let vm = VarMap::new();
    let net = Net { fc: linear(4, 4, VarBuilder::from_varmap(&vm, DType::F32, &dev))? };
    let _ = sample(&net, 1000, &dev)?;
    Ok(())
}
"#;

    #[test]
    fn a_step_helper_handed_the_trainable_model_chains_the_state() {
        assert_eq!(
            crate::rules::testing::lines("sampling_loop_chains_graph", &STEP_HELPER_OF_MODEL.replace("CUT", "")),
            vec![13]
        );
        assert_eq!(count("sampling_loop_chains_graph", None, &STEP_HELPER_OF_MODEL.replace("CUT", ".detach()")), 0);
    }

    /// A chain kept by a struct of its own (not the model), stepped through the trainable model
    /// each call hands it: `walker.advance(&net)` writes `self.pos` from `net.score(&self.pos)`.
    const WALKER_HANDED_THE_MODEL: &str = r#"
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{linear, Linear, VarBuilder, VarMap};
pub struct Net { fc: Linear }
impl Net { pub fn score(&self, x: &Tensor) -> Result<Tensor> { self.fc.forward(x) } }
pub struct Walker { pos: Tensor, rate: f64 }
impl Walker {
    pub fn advance(&mut self, net: &Net) -> Result<f32> {
        let g = net.score(&self.pos)?;
        self.pos = (&self.pos + (g * self.rate)?)?CUT;
        self.pos.mean_all()?.to_scalar::<f32>()
    }
}
fn explore(net: &Net, dev: &Device, n: usize) -> Result<Vec<f32>> {
    let mut walker = Walker { pos: Tensor::zeros((16, 4), DType::F32, dev)?, rate: 0.05 };
    let mut trace = Vec::new();
    for _ in 0..n {
        trace.push(walker.advance(net)?);
    }
    Ok(trace)
}
fn main() -> Result<()> {
    let dev = Device::Cpu;
    let vm = VarMap::new();
    let net = Net { fc: linear(4, 4, VarBuilder::from_varmap(&vm, DType::F32, &dev))? };
    let _ = explore(FROM, &dev, 500)?;
    Ok(())
}
"#;

    #[test]
    fn a_state_kept_by_a_struct_handed_the_trainable_model_chains() {
        let leak = WALKER_HANDED_THE_MODEL.replace("CUT", "").replace("FROM", "&net");
        assert_eq!(crate::rules::testing::lines("sampling_loop_chains_graph", &leak), vec![18]);
        let text = crate::rules::testing::messages("sampling_loop_chains_graph", &leak);
        assert_eq!(text, ["`walker` keeps every step's graph in its state through trainable weights"]);
        // The state is cut where it is kept.
        let cut = WALKER_HANDED_THE_MODEL.replace("CUT", ".detach()").replace("FROM", "&net");
        assert_eq!(count("sampling_loop_chains_graph", None, &cut), 0);
        // The model handed in is built from plain weights: nothing records a graph.
        let plain = leak.replace(
            "linear(4, 4, VarBuilder::from_varmap(&vm, DType::F32, &dev))?",
            "Linear::new(Tensor::zeros((4, 4), DType::F32, &dev)?, None)",
        );
        assert_ne!(plain, leak);
        assert_eq!(count("sampling_loop_chains_graph", None, &plain), 0);
        // A walker made afresh on every iteration starts from a fresh state.
        let fresh = leak
            .replace(
                "    let mut walker = Walker { pos: Tensor::zeros((16, 4), DType::F32, dev)?, rate: 0.05 };\n",
                "",
            )
            .replace(
                "        trace.push(walker.advance(net)?);",
                "        let mut walker = Walker { pos: Tensor::zeros((16, 4), DType::F32, dev)?, rate: 0.05 };\n        trace.push(walker.advance(net)?);",
            );
        assert_ne!(fresh, leak);
        assert_eq!(count("sampling_loop_chains_graph", None, &fresh), 0);
    }

    /// A trainer that owns the model built from a `VarMap` and hands it back when training ends
    /// (`trainer.into_model()` returning `self.net`), then a streaming filter built around it.
    const HANDED_BACK: &str = r#"
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{linear, Linear, Optimizer, VarBuilder, VarMap};
pub struct Net { fc: Linear }
impl Net {
    pub fn fresh(dev: &Device) -> Result<(Self, VarMap)> {
        let vm = VarMap::new();
        let fc = linear(8, 4, VarBuilder::from_varmap(&vm, DType::F32, dev))?;
        Ok((Self { fc }, vm))
    }
    pub fn smooth(&self, x: &Tensor, prev: &Tensor) -> Result<Tensor> {
        self.fc.forward(&Tensor::cat(&[x, prev], 1)?)
    }
}
pub struct Trainer { net: Net, opt: candle_nn::SGD }
impl Trainer {
    pub fn new(net: Net, vm: VarMap) -> Result<Self> {
        Ok(Self { opt: candle_nn::SGD::new(vm.all_vars(), 0.01)?, net })
    }
    pub fn step(&mut self, x: &Tensor, prev: &Tensor) -> Result<()> {
        let loss = self.net.smooth(x, prev)?.sqr()?.mean_all()?;
        self.opt.backward_step(&loss)
    }
    pub fn into_model(self) -> Net { self.net }
}
pub struct Filter<'a> { net: &'a Net, last: Tensor }
impl<'a> Filter<'a> {
    pub fn feed(&mut self, x: &Tensor) -> Result<f32> {
        let y = self.net.smooth(x, &self.last)?;
        let level = y.mean_all()?.to_scalar::<f32>()?;
        self.last = yCUT;
        Ok(level)
    }
}
fn main() -> Result<()> {
    let dev = Device::Cpu;
    let (net, vm) = Net::fresh(&dev)?;
    let mut trainer = Trainer::new(net, vm)?;
    for _ in 0..100 {
        trainer.step(&Tensor::zeros((2, 4), DType::F32, &dev)?, &Tensor::zeros((2, 4), DType::F32, &dev)?)?;
    }
    let net = trainer.into_model();
    let mut filter = Filter { net: &net, last: Tensor::zeros((2, 4), DType::F32, &dev)? };
    for _ in 0..10_000 {
        println!("{}", filter.feed(&Tensor::zeros((2, 4), DType::F32, &dev)?)?);
    }
    Ok(())
}
"#;

    #[test]
    fn a_model_a_trainer_hands_back_keeps_its_trainable_weights() {
        let leak = HANDED_BACK.replace("CUT", "");
        assert_eq!(crate::rules::testing::lines("sampling_loop_chains_graph", &leak), vec![45]);
        assert_eq!(count("sampling_loop_chains_graph", None, &HANDED_BACK.replace("CUT", ".detach()")), 0);
    }

    /// A validation helper that lends its caller's cache to the model (`valid_loss(.., &mut
    /// cache)`), as candle's llama2-c training example does: the caller makes it
    /// `Cache::new(false, ..)`, which keeps nothing.
    const LENT_CACHE: &str = r#"
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{linear, Linear, Optimizer, VarBuilder, VarMap};
pub struct Cache { use_kv_cache: bool, kvs: Option<Tensor> }
impl Cache {
    pub fn new(use_kv_cache: bool) -> Result<Self> { Ok(Self { use_kv_cache, kvs: None }) }
}
pub struct Lm { fc: Linear }
impl Lm {
    pub fn forward(&self, x: &Tensor, cache: &mut Cache) -> Result<Tensor> {
        let mut k = self.fc.forward(x)?;
        if cache.use_kv_cache {
            if let Some(prev) = &cache.kvs {
                k = Tensor::cat(&[prev, &k], 0)?;
            }
            cache.kvs = Some(k.clone());
        }
        Ok(k)
    }
}
fn valid_loss(model: &Lm, xs: &[Tensor], cache: &mut Cache) -> Result<f32> {
    let mut total = 0f32;
    for x in xs {
        total += model.forward(x, cache)?.mean_all()?.to_scalar::<f32>()?;
    }
    Ok(total)
}
pub fn run(xs: &[Tensor], dev: &Device) -> Result<()> {
    let vm = VarMap::new();
    let model = Lm { fc: linear(4, 4, VarBuilder::from_varmap(&vm, DType::F32, dev))? };
    let mut opt = candle_nn::SGD::new(vm.all_vars(), 0.01)?;
    let mut cache = Cache::new(FLAG)?;
    for (i, x) in xs.iter().enumerate() {
        let loss = model.forward(x, &mut Cache::new(false)?)?.mean_all()?;
        opt.backward_step(&loss)?;
        if i % 100 == 0 {
            println!("{}", valid_loss(&model, xs, &mut cache)?);
        }
    }
    Ok(())
}
"#;

    #[test]
    fn a_cache_every_caller_makes_disabled_keeps_nothing() {
        assert_eq!(count("sampling_loop_chains_graph", None, &LENT_CACHE.replace("FLAG", "false")), 0);
        // Made to keep its keys and values, the lent cache chains every step's graph.
        assert_eq!(
            crate::rules::testing::lines("sampling_loop_chains_graph", &LENT_CACHE.replace("FLAG", "true")),
            vec![24]
        );
    }

    /// The same, with the cache built into the model (`Lm::load(vb, &cache)`, as a copy of the
    /// llama2-c example keeps it) and the validation helper handed the model.
    const HELD_CACHE: &str = r#"
use std::sync::{Arc, Mutex};
use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{linear, Linear, Optimizer, VarBuilder, VarMap};
#[derive(Clone)]
pub struct Cache { use_kv_cache: bool, kvs: Arc<Mutex<Option<Tensor>>> }
impl Cache {
    pub fn new(use_kv_cache: bool) -> Result<Self> { Ok(Self { use_kv_cache, kvs: Arc::new(Mutex::new(None)) }) }
}
pub struct Lm { fc: Linear, cache: Cache }
impl Lm {
    pub fn load(vb: VarBuilder, cache: &Cache) -> Result<Self> { Ok(Self { fc: linear(4, 4, vb)?, cache: cache.clone() }) }
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut k = self.fc.forward(x)?;
        if self.cache.use_kv_cache {
            let mut kvs = self.cache.kvs.lock().unwrap();
            if let Some(prev) = &*kvs {
                k = Tensor::cat(&[prev, &k], 0)?;
            }
            *kvs = Some(k.clone());
        }
        Ok(k)
    }
}
fn valid_loss(model: &Lm, xs: &[Tensor]) -> Result<f32> {
    let mut total = 0f32;
    for x in xs {
        total += model.forward(x)?.mean_all()?.to_scalar::<f32>()?;
    }
    Ok(total)
}
pub fn run(xs: &[Tensor], dev: &Device) -> Result<()> {
    let vm = VarMap::new();
    let cache = Cache::new(FLAG)?;
    let model = Lm::load(VarBuilder::from_varmap(&vm, DType::F32, dev), &cache)?;
    let mut opt = candle_nn::SGD::new(vm.all_vars(), 0.01)?;
    for (i, x) in xs.iter().enumerate() {
        let loss = model.forward(x)?.mean_all()?;
        opt.backward_step(&loss)?;
        if i % 100 == 0 {
            println!("{}", valid_loss(&model, xs)?);
        }
    }
    Ok(())
}
"#;

    #[test]
    fn a_model_every_caller_builds_around_a_disabled_cache_keeps_nothing() {
        assert_eq!(count("sampling_loop_chains_graph", None, &HELD_CACHE.replace("FLAG", "false")), 0);
        assert_eq!(
            crate::rules::testing::lines("sampling_loop_chains_graph", &HELD_CACHE.replace("FLAG", "true")),
            vec![28]
        );
    }
}
