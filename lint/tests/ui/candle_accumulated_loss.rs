// candle: loss tensors summed across iterations.
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{loss, AdamW, Linear, Module, Optimizer};

fn sum_with_add(model: &Linear, opt: &mut AdamW, data: &[(Tensor, Tensor)], dev: &Device) -> Result<()> {
    let mut total = Tensor::zeros((), DType::F32, dev)?;
    for (x, y) in data {
        let logits = model.forward(x)?;
        let loss = loss::mse(&logits, y)?;
        opt.backward_step(&loss)?;
        total = (total + &loss)?; //~ accumulated_loss_tensor
    }
    println!("{}", total.to_scalar::<f32>()?);
    Ok(())
}

fn sum_with_method(model: &Linear, opt: &mut AdamW, data: &[(Tensor, Tensor)], dev: &Device) -> Result<()> {
    let mut running = Tensor::zeros((), DType::F32, dev)?;
    for epoch in 0..10 {
        for (x, y) in data {
            let loss = loss::mse(&model.forward(x)?, y)?;
            let grads = loss.backward()?;
            opt.step(&grads)?;
            running = running.add(&loss)?; //~ accumulated_loss_tensor
        }
        println!("epoch {epoch}");
    }
    Ok(())
}

// Not flagged: host scalars and detached tensors.
fn sum_scalars(model: &Linear, opt: &mut AdamW, data: &[(Tensor, Tensor)], dev: &Device) -> Result<()> {
    let mut sum = 0f32;
    let mut detached = Tensor::zeros((), DType::F32, dev)?;
    for (x, y) in data {
        let loss = loss::mse(&model.forward(x)?, y)?;
        opt.backward_step(&loss)?;
        sum += loss.to_scalar::<f32>()?;
        detached = (detached + loss.detach())?;
        let value: f32 = loss.to_vec0()?;
        sum += value;
    }
    println!("{sum} {detached}");
    Ok(())
}

// Not flagged: a per-sample loss summed over decoder steps and backpropagated in the same
// outer iteration (seq2seq).
fn decoder_steps(model: &Linear, opt: &mut AdamW, data: &[(Tensor, Vec<Tensor>)], dev: &Device) -> Result<()> {
    for (src, targets) in data {
        let mut sample_loss = Tensor::zeros((), DType::F32, dev)?;
        let mut hidden = src.clone();
        for target in targets {
            hidden = model.forward(&hidden)?;
            sample_loss = (sample_loss + loss::mse(&hidden, target)?)?;
        }
        opt.backward_step(&sample_loss)?;
    }
    Ok(())
}

// Not flagged: an evaluation loop runs no backward (wave 2 rules cover evaluation).
fn evaluate(model: &Linear, data: &[(Tensor, Tensor)], dev: &Device) -> Result<f32> {
    let mut total = Tensor::zeros((), DType::F32, dev)?;
    for (x, y) in data {
        total = (total + loss::mse(&model.forward(x)?, y)?)?;
    }
    total.to_scalar::<f32>()
}

// Not flagged: fields declared with host types hold no graph.
struct LossOutput {
    total: Tensor,
    policy_loss: f32,
}

fn stats_from_fields(model: &Linear, opt: &mut AdamW, data: &[(Tensor, Tensor)], dev: &Device) -> Result<()> {
    let mut policy = Tensor::zeros((), DType::F32, dev)?;
    let mut policy_sum = 0f32;
    for (x, y) in data {
        let out = LossOutput { total: loss::mse(&model.forward(x)?, y)?, policy_loss: 0.0 };
        opt.backward_step(&out.total)?;
        policy_sum += out.policy_loss;
        policy = (policy + out.total)?; //~ accumulated_loss_tensor
    }
    println!("{policy_sum} {policy}");
    Ok(())
}
