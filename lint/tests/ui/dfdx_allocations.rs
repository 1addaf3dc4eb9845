// dfdx: gradient stores allocated or traced afresh in training loops.
use dfdx::prelude::*;

type Model = (Linear<4, 8>, ReLU, Linear<8, 2>);

fn leaky(model: &mut Model, opt: &mut Sgd<Model, f32, Cpu>, data: &[(Tensor<Rank1<4>, f32, Cpu>, Tensor<Rank1<2>, f32, Cpu>)]) {
    for (x, y) in data {
        let out = model.forward(x.leaky_trace()); //~ leaky_trace_in_loop
        let loss = mse_loss(out, y.clone());
        let grads = loss.backward();
        opt.update(model, &grads).unwrap();
    }
}

fn fresh_each_time(model: &mut Model, opt: &mut Sgd<Model, f32, Cpu>, data: &[(Tensor<Rank1<4>, f32, Cpu>, Tensor<Rank1<2>, f32, Cpu>)]) {
    let mut history = Vec::new();
    for (x, y) in data {
        let grads = model.alloc_grads(); //~ grads_allocated_in_loop
        let out = model.forward(x.trace(grads));
        let grads = mse_loss(out, y.clone()).backward();
        history.push(grads.clone()); //~ grads_allocated_in_loop, unbounded_copy_history
        opt.update(model, &grads).unwrap();
    }
}

// Not flagged: allocated once, reused and cleared.
fn reused(model: &mut Model, opt: &mut Sgd<Model, f32, Cpu>, data: &[(Tensor<Rank1<4>, f32, Cpu>, Tensor<Rank1<2>, f32, Cpu>)]) {
    let mut grads = model.alloc_grads();
    for (x, y) in data {
        let out = model.forward(x.trace(grads));
        grads = mse_loss(out, y.clone()).backward();
        opt.update(model, &grads).unwrap();
        model.zero_grads(&mut grads);
    }
}
