// burn: parameters rebuilt in a training loop lose their optimizer state id.
use burn::module::Param;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::Tensor;

fn train<B: burn::tensor::backend::AutodiffBackend>(mut w: Param<Tensor<B, 2>>, x: Tensor<B, 2>, optim: &mut impl Optimizer<Param<Tensor<B, 2>>, B>) {
    for _ in 0..100 {
        w = Param::from_tensor(w.val().clamp(-1.0, 1.0)); //~ param_rebuilt_in_loop
        let loss = w.val().matmul(x.clone()).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &w);
        w = optim.step(1e-3, w, grads);
    }
}

// Not flagged: `map` keeps the id; building parameters once is fine.
fn train_map<B: burn::tensor::backend::AutodiffBackend>(init: Tensor<B, 2>, x: Tensor<B, 2>, optim: &mut impl Optimizer<Param<Tensor<B, 2>>, B>) {
    let mut w = Param::from_tensor(init);
    for _ in 0..100 {
        w = w.map(|t| t.clamp(-1.0, 1.0));
        let loss = w.val().matmul(x.clone()).mean();
        let grads = GradientsParams::from_grads(loss.backward(), &w);
        w = optim.step(1e-3, w, grads);
    }
}
