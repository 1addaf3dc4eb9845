// burn 0.22 API (`Tensor<D>`, `device.autodiff()`).
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::Tensor;

fn train(device: burn::Device, batches: Vec<(Tensor<2>, Tensor<2>)>) {
    let device = device.autodiff();
    let mut model = Model::new(&device);
    let mut optim = AdamConfig::new().init();
    let mut total = Tensor::<1>::zeros([1], &device);
    let mut losses = Vec::new();
    for (x, y) in batches {
        let pred = model.forward(x.to_device(&device));
        let loss = (pred - y).abs().mean();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
        total = total + loss.clone(); //~ autodiff_ops_after_backward, accumulated_loss_tensor
        losses.push(loss); //~ retained_graph_output
    }
}

struct Model;
impl Model {
    fn new(_d: &burn::Device) -> Self {
        Model
    }
    fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        x
    }
}
