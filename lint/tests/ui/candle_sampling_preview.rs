// candle: a preview sampler run during training feeds its model its own output.
use candle_core::{Result, Tensor};
use candle_nn::Optimizer;

fn denoise(model: &Unet, init: Tensor, steps: usize) -> Result<Tensor> {
    let mut latents = init;
    for t in 0..steps {
        let eps = model.forward(&latents, t)?;
        latents = (latents - eps * 0.02)?; //~ sampling_loop_chains_graph
    }
    Ok(latents)
}

fn denoise_detached(model: &Unet, init: Tensor, steps: usize) -> Result<Tensor> {
    let mut latents = init;
    for t in 0..steps {
        let eps = model.forward(&latents, t)?;
        latents = (latents - eps * 0.02)?.detach();
    }
    Ok(latents)
}

pub fn train(model: &Unet, opt: &mut candle_nn::AdamW, data: &[Tensor], init: &Tensor) -> Result<()> {
    for (i, x) in data.iter().enumerate() {
        let loss = model.forward(x, 0)?.mean_all()?;
        opt.backward_step(&loss)?;
        if i % 500 == 0 {
            save(&denoise(model, init.clone(), 50)?)?;
            save(&denoise_detached(model, init.clone(), 50)?)?;
        }
    }
    Ok(())
}
