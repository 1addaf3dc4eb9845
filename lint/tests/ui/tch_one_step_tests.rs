// tch: unit tests that run one backward and a step or two on a fresh optimizer, with no loop
// across steps: no gradient survives the test to accumulate. A per-step function whose
// optimizer is passed in is another matter: every call adds into the same gradients.
use tch::nn::{Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};

fn train_step(net: &dyn Module, opt: &mut tch::nn::Optimizer, x: &Tensor) -> f64 {
    let loss = net.forward(x).mean(Kind::Float);
    loss.backward();
    opt.step(); //~ missing_zero_grad
    f64::try_from(&loss).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_step_lowers_the_loss() {
        let vs = tch::nn::VarStore::new(Device::Cpu);
        let net = tch::nn::linear(vs.root(), 4, 1, Default::default());
        let mut opt = tch::nn::Sgd::default().build(&vs, 0.1).unwrap();
        let x = Tensor::ones([8, 4], (Kind::Float, Device::Cpu));
        let before = net.forward(&x).mean(Kind::Float);
        before.backward();
        opt.step();
        let after = net.forward(&x).mean(Kind::Float);
        assert!(f64::try_from(&after).unwrap() < f64::try_from(&before).unwrap());
    }

    #[test]
    fn two_steps_on_one_gradient() {
        let vs = tch::nn::VarStore::new(Device::Cpu);
        let net = tch::nn::linear(vs.root(), 4, 1, Default::default());
        let mut sgd = tch::nn::Sgd::default().build(&vs, 0.1).unwrap();
        let loss = net.forward(&Tensor::ones([2, 4], (Kind::Float, Device::Cpu))).mean(Kind::Float);
        loss.backward();
        sgd.step();
        sgd.step();
    }
}
