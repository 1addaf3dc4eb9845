// tch: accumulating loss tensors vs host values.
use tch::nn::{self, Module};
use tch::Tensor;

fn leaky(net: &impl Module, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) {
    let mut total = Tensor::from(0f32);
    let mut kept = Vec::new();
    for (x, y) in data {
        let loss = net.forward(x).mse_loss(y, tch::Reduction::Mean);
        opt.backward_step(&loss);
        total += &loss; //~ accumulated_loss_tensor
        kept.push(loss); //~ retained_graph_output
    }
    total.print();
}

fn clean(net: &impl Module, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) -> anyhow::Result<f64> {
    let mut total = 0f64;
    let mut values = Vec::new();
    let mut detached = Tensor::from(0f32);
    for (x, y) in data {
        let loss = net.forward(x).mse_loss(y, tch::Reduction::Mean);
        opt.backward_step(&loss);
        total += f64::try_from(&loss)?;
        values.push(loss.double_value(&[]));
        detached += loss.detach();
    }
    Ok(total)
}

// Evaluation under a named no-grad guard keeps nothing.
fn eval(net: &impl Module, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) {
    let mut outputs = Vec::new();
    for (x, y) in data {
        let loss = net.forward(x).mse_loss(y, tch::Reduction::Mean);
        opt.backward_step(&loss);
        let _guard = tch::no_grad_guard();
        outputs.push(net.forward(x));
    }
}
