// burn: tensor operations on the iteration's graph after its backward call.
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
use burn::train::{ClassificationOutput, TrainOutput, TrainStep};

fn train<B: AutodiffBackend, M: AutodiffModule<B> + Net<B>, O: Optimizer<M, B>>(
    mut model: M,
    mut optim: O,
    batches: Vec<(Tensor<B, 2>, Tensor<B, 2>)>,
) -> (M, Vec<f32>) {
    let mut log = Vec::new();
    let mut running = Tensor::<B, 1>::zeros([1], &Default::default());
    for (x, y) in batches {
        let output = model.forward(x);
        let loss = (output.clone() - y).powf_scalar(2.0).mean();
        let before = loss.clone().into_scalar().elem::<f32>();
        let stats = output.clone().inner();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
        let mean_output = output.clone().mean(); //~ autodiff_ops_after_backward
        let flat = loss.reshape([1]); // labelled in the report above: one report per backward
        // Not flagged: scalars, `inner()` values taken before, index ops, detached copies.
        let best = output.clone().argmax(1);
        let after = flat.clone().into_scalar();
        let spread = stats.var(1);
        let kept = output.detach().sum();
        // Not flagged: a fresh forward after backward is swept by the next backward.
        let probe = model.forward(Tensor::zeros([1, 4], &Default::default()));
        let probe_mean = probe.mean();
        // A running sum of it: one more op of the same finding (labelled, not reported again),
        // and a sum kept across iterations that no later loss reaches (burn 0.19 on).
        running = running.add(mean_output); //~ accumulated_loss_tensor
        log.push(before);
        let _ = (best, after, spread, kept, probe_mean);
    }
    (model, log)
}

// A train-step function: each call is one iteration.
fn train_step<B: AutodiffBackend, M: AutodiffModule<B> + Net<B>>(model: &M, x: Tensor<B, 2>) -> (B::Gradients, f32) {
    let logits = model.forward(x);
    let loss = logits.clone().sum();
    let grads = loss.backward();
    let probs = burn::tensor::activation::softmax(logits.clone(), 1); //~ autodiff_ops_after_backward
    let entropy = logits.log_softmax(1).mul(probs).sum(); // labelled above
    (grads, entropy.into_scalar().elem::<f32>())
}

// Metrics over a list of outputs after backward: the inner loop runs after it.
fn train_batches<B: AutodiffBackend, M: AutodiffModule<B> + Net<B>>(model: &M, xs: Vec<Tensor<B, 2>>) {
    for x in xs {
        let outs = vec![model.forward(x.clone()), model.forward(x)];
        let loss = outs[0].clone().sum();
        let _grads = loss.backward();
        let both = Tensor::cat(outs.clone(), 0); //~ autodiff_ops_after_backward
        for out in &outs {
            let m = out.clone().mean(); // labelled above
            let _ = (m, &both);
        }
    }
}

// burn's own `TrainStep`: the learner takes the outputs as they are.
struct Classifier<B: AutodiffBackend> {
    net: Box<dyn Net<B>>,
}

impl<B: AutodiffBackend> TrainStep<(Tensor<B, 2>, Tensor<B, 1>), ClassificationOutput<B>> for Classifier<B> {
    fn step(&self, batch: (Tensor<B, 2>, Tensor<B, 1>)) -> TrainOutput<ClassificationOutput<B>> {
        let item = self.forward_classification(batch.0, batch.1);
        TrainOutput::new(self, item.loss.backward(), item)
    }
}

// burn 0.22: `Tensor<D>` on an autodiff device.
fn train_022(device: burn::Device, model: Model, xs: Vec<Tensor<2>>) {
    let device = device.autodiff();
    let mut model = model.to_device(&device);
    for x in xs {
        let out = model.forward(x.to_device(&device));
        let loss = out.clone().mean();
        let value = loss.clone().into_scalar::<f32>();
        let grads = loss.backward();
        let norm = out.powf_scalar(2.0).sum().sqrt(); //~ autodiff_ops_after_backward
        let _ = (value, norm, grads);
    }
}

// Actor-critic: the critic's loss is built after the actor's backward and swept by its own.
fn actor_critic<B: AutodiffBackend, M: AutodiffModule<B> + Net<B>>(actor: &M, critic: &M, x: Tensor<B, 2>) {
    for _ in 0..10 {
        let value = critic.forward(x.clone());
        let advantage = value.clone().sum();
        let actor_loss = actor.forward(x.clone()).mean() * advantage.clone().detach();
        let _ = actor_loss.backward();
        let critic_loss = value.powf_scalar(2.0).mean();
        let _ = critic_loss.backward();
    }
}

// SARSA: the next state's values are carried into the next iteration and consumed by its
// backward; one graph at a time, not a growing chain.
fn sarsa<B: AutodiffBackend, M: AutodiffModule<B> + Net<B>>(model: &M, states: Vec<Tensor<B, 2>>) {
    let mut q = model.forward(states[0].clone());
    for s in states {
        let loss = (q.clone() - 1.0).powf_scalar(2.0).mean();
        let _ = loss.backward();
        q = model.forward(s);
    }
}

// The output is read after backward only in the branch that gives up on a non-finite loss:
// it runs at most once, so it is not reported; the same read on the normal path is.
fn guarded_step<B: AutodiffBackend, M: AutodiffModule<B> + Net<B>>(
    model: &M,
    xs: Vec<Tensor<B, 2>>,
) -> anyhow::Result<()> {
    for x in xs {
        let output = model.forward(x);
        let kept = output.clone();
        let loss = output.mean();
        let _grads = loss.backward();
        let value: f32 = loss.into_scalar().elem();
        if !value.is_finite() {
            let out = kept.clone().abs().into_data();
            anyhow::bail!("loss is {value} for outputs {out:?}");
        }
        let norm = kept.powf_scalar(2.0).sum(); //~ autodiff_ops_after_backward
        let _ = norm;
    }
    Ok(())
}

trait Net<B: burn::tensor::backend::Backend> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2>;
}
