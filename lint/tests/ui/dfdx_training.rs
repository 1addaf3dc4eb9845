// dfdx 0.13: gradients accumulate until zero_grads.
use dfdx::prelude::*;

fn no_clear(dev: &Cpu, model: &mut Model, opt: &mut Adam<Model, f32, Cpu>, data: &[(Tensor<Rank2<8, 4>, f32, Cpu>, Tensor<Rank2<8, 2>, f32, Cpu>)]) {
    let mut grads = model.alloc_grads();
    for (x, y) in data {
        let logits = model.forward_mut(x.trace(grads));
        let loss = mse_loss(logits, y.clone());
        grads = loss.backward();
        opt.update(model, &grads).unwrap(); //~ missing_zero_grad
    }
}

fn cleared(dev: &Cpu, model: &mut Model, opt: &mut Adam<Model, f32, Cpu>, data: &[(Tensor<Rank2<8, 4>, f32, Cpu>, Tensor<Rank2<8, 2>, f32, Cpu>)]) {
    let mut grads = model.alloc_grads();
    let mut losses = Vec::new();
    for (x, y) in data {
        let logits = model.forward_mut(x.trace(grads));
        let loss = mse_loss(logits, y.clone());
        losses.push(loss.array());
        grads = loss.backward();
        opt.update(model, &grads).unwrap();
        model.zero_grads(&mut grads);
    }
}

type Model = (Linear<4, 8>, ReLU, Linear<8, 2>);
