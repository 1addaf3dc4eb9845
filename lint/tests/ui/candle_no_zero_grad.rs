// candle: backward() returns a fresh GradStore each time, so no loop needs zero_grad.
use candle_core::{Result, Tensor};
use candle_nn::{loss, Linear, Module, Optimizer, SGD};

fn train(model: &Linear, opt: &mut SGD, data: &[(Tensor, Tensor)]) -> Result<()> {
    for (x, y) in data {
        let loss = loss::mse(&model.forward(x)?, y)?;
        let grads = loss.backward()?;
        opt.step(&grads)?;
    }
    Ok(())
}
