use candle_core::{DType, Device, Tensor};

fn main() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let w = candle_core::Var::zeros((4, 1), DType::F32, &dev)?;
    let mut opt = candle_nn::SGD::new(vec![w.clone()], 0.1)?;
    let mut total = Tensor::zeros((), DType::F32, &dev)?;
    for _ in 0..10 {
        let x = Tensor::ones((8, 4), DType::F32, &dev)?;
        let loss = x.matmul(w.as_tensor())?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        total = (total + loss)?;
    }
    println!("{total}");
    Ok(())
}
