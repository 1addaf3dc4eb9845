// burn 0.20/0.21 API (`Tensor<B, D>`, `AutodiffBackend`): no gradient clearing exists or is
// needed; summing loss tensors keeps graphs.
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

fn train<B: AutodiffBackend, M: AutodiffModule<B> + Forward<B>, O: Optimizer<M, B>>(
    mut model: M,
    mut optim: O,
    batches: Vec<(Tensor<B, 2>, Tensor<B, 2>)>,
    device: &B::Device,
) -> M {
    let mut running = Tensor::<B, 1>::zeros([1], device);
    let mut history = Vec::new();
    let mut scalar_sum = 0.0f32;
    for (x, y) in batches {
        let output = model.forward(x);
        let loss = (output - y).powf_scalar(2.0).mean();
        let grads = loss.backward();
        let grads = GradientsParams::from_grads(grads, &model);
        model = optim.step(1e-3, model, grads);
        // Summed after the backward and kept: the consumed graph stays (burn 0.19 on).
        running = running + loss.clone(); //~ autodiff_ops_after_backward, accumulated_loss_tensor
        history.push(loss.clone().inner());
        scalar_sum += loss.into_scalar().elem::<f32>();
    }
    model
}

// Validation with `model.valid()`: forward passes record no graph.
fn validate<B: AutodiffBackend, M: AutodiffModule<B>>(model: &M, batches: Vec<Tensor<B::InnerBackend, 2>>, optim: &mut impl Optimizer<M, B>) {
    let valid = model.valid();
    let mut outputs = Vec::new();
    for x in batches {
        let out = valid.forward(x);
        outputs.push(out);
        let loss = model.forward(x.clone()).mean();
        let _ = loss.backward();
    }
}

trait Forward<B: burn::tensor::backend::Backend> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2>;
}

// Not flagged: a host accumulator (`0.0f32`) can only receive host numbers, although another
// struct of the crate has a tensor field of the same name.
struct Losses<B: burn::tensor::backend::Backend> {
    policy_loss: Tensor<B, 1>,
}

fn host_totals<B: AutodiffBackend, M: AutodiffModule<B> + Forward<B>>(model: &M, algo: &impl Algorithm, xs: Vec<Tensor<B, 2>>) -> f32 {
    let mut total_policy_loss = 0.0f32;
    let mut steps = 0;
    for x in xs {
        let out = algo.compute_loss(model.forward(x));
        let _grads = out.total.backward();
        total_policy_loss += out.policy_loss;
        steps += 1;
    }
    total_policy_loss / steps as f32
}
