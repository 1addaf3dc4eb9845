//! `sampling_loop_chains_graph`: a sampling loop inside training feeds a forward pass its own
//! output on trainable weights (candle).

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{FnModel, Store, Taint};
use crate::rule::{Applies, Group, Rule, RuleMeta};

pub struct SamplingLoopChainsGraph;

pub static META: RuleMeta = RuleMeta {
    id: "sampling_loop_chains_graph",
    summary: "a sampling loop run during training chains every step's graph through trainable weights",
    default_level: Level::Warn,
    group: Group::Stable,
    docs: r#"### What it does
Finds a loop that runs no backward and feeds a forward pass its own output
(`latents = step(&model.forward(&latents)?)?`, `tokens = model.forward(&tokens)?`), when the
loop runs inside training: nested in a loop that runs backward, or in a function that such a
loop calls (a preview sampler, an evaluation decoder), directly or through other functions.
Frameworks without a no-grad mode (candle).

### Why is this bad?
candle records a graph for every operation on a tensor computed from a `Var`, and there is no
no-grad mode: during training the model's weights are `Var`s, so each sampling step's output
holds the whole graph of the steps before it. Memory grows with the number of steps until the
loop ends, and a long denoising loop runs the device out of memory in the middle of training.

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
        for (_, value, target, how, span) in f.stores() {
            if how != Store::Fold || !f.taint(value).has(Taint::GRAPH) {
                continue;
            }
            let (Some(binding), Some(l)) = (f.binding_of(target), f.loop_of(value)) else { continue };
            // A loop over the model's own parts (`for block in &self.blocks { h = block.forward(&h)? }`)
            // is one forward pass through its layers, not a sampling loop.
            if f.loop_runs_backward(l) || f.loop_over_self(l) || reported.contains(&binding) {
                continue;
            }
            // The state lives across the loop's iterations and a forward pass reads it.
            let declared = f.binding(binding).decl_loop();
            if f.loop_within(declared, l) || !f.feeds_forward_through_locals(value, binding) {
                continue;
            }
            // Unrolled through time for a loss (truncated backpropagation): the chain trains.
            if f.loss_derives_from(binding) {
                continue;
            }
            let caller = if f.loop_or_outer_runs_backward(l) { None } else { f.per_step_from() };
            let why = match caller {
                None if f.loop_or_outer_runs_backward(l) => {
                    "the loop around it runs backward: the weights are trainable"
                }
                None => continue,
                Some(_) => "it runs during training: the weights are trainable",
            };
            reported.push(binding);
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
                report.elsewhere.push((
                    path.clone(),
                    *line,
                    format!("`{caller}` calls this function from a loop that runs backward"),
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
        assert_eq!(notes, [(17, "`train` calls this function from a loop that runs backward".to_string())]);
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

    #[test]
    fn accepts_a_detached_state_and_a_sampler_outside_training() {
        let detached =
            PREVIEW.replace("latents = (latents - noise * 0.1)?;", "latents = (latents - noise * 0.1)?.detach();");
        assert_ne!(detached, PREVIEW);
        assert_eq!(count("sampling_loop_chains_graph", None, &detached), 0);
        // Only called after training: the weights may well be plain tensors (a loaded model).
        let after = PREVIEW
            .replace("        if i % 100 == 0 {\n            let preview = sample_preview(model, 50, init.clone())?;\n            save(&preview)?;\n        }\n", "")
            .replace("    Ok(())\n}\n\"#", "    save(&sample_preview(model, 50, init.clone())?)?;\n    Ok(())\n}\n\"#");
        assert_ne!(after, PREVIEW);
        assert_eq!(count("sampling_loop_chains_graph", None, &after), 0);
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
}
