// tch: graph-carrying values copied in place into buffers that live across updates.
use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

struct Rollout {
    advantages: Tensor,
    values: Tensor,
    steps: i64,
}

impl Rollout {
    // The copy happens here; it is reported where a graph-carrying value is handed in.
    fn finish(&mut self, last_value: &Tensor) {
        let mut gae = Tensor::zeros([8], (Kind::Float, Device::Cpu));
        for t in (0..self.steps).rev() {
            let next = if t == self.steps - 1 { last_value.shallow_clone() } else { self.values.get(t + 1) };
            gae = &next - &self.values.get(t) + 0.95 * &gae;
            self.advantages.narrow(0, t, 1).copy_(&gae);
        }
    }
}

struct Trainer {
    critic: nn::Sequential,
    rollout: Rollout,
    opt: nn::Optimizer,
}

impl Trainer {
    fn update(&mut self, obs: &Tensor) {
        let last_value = self.critic.forward(obs);
        self.rollout.finish(&last_value); //~ graph_copied_into_buffer
        let batch = self.rollout.advantages.detach();
        let loss = (self.critic.forward(obs) - batch).square().mean(Kind::Float);
        self.opt.backward_step(&loss);
    }

    fn update_fixed(&mut self, obs: &Tensor) {
        let last_value = tch::no_grad(|| self.critic.forward(obs));
        self.rollout.finish(&last_value);
        let loss = self.critic.forward(obs).square().mean(Kind::Float);
        self.opt.backward_step(&loss);
    }
}

fn fit(net: &nn::Sequential, opt: &mut nn::Optimizer, xs: &[Tensor]) {
    let seen = Tensor::zeros([64], (Kind::Float, Device::Cpu));
    for (i, x) in xs.iter().enumerate() {
        let out = net.forward(x);
        seen.get(i as i64).copy_(&out.mean(Kind::Float)); //~ graph_copied_into_buffer
        seen.get(i as i64).copy_(&out.mean(Kind::Float).detach());
        let loss = out.square().mean(Kind::Float);
        opt.backward_step(&loss);
    }
}

// Running statistics written through a new handle on the field: `shallow_clone()` shares the
// tensor, history included.
struct RunningNorm {
    lin: nn::Linear,
    mean: Tensor,
}

impl RunningNorm {
    fn forward_train(&self, x: &Tensor) -> Tensor {
        let y = self.lin.forward(x);
        let m = y.mean_dim(Some([0i64].as_slice()), false, Kind::Float);
        self.mean.shallow_clone().copy_(&(&self.mean * 0.9 + m * 0.1)); //~ graph_copied_into_buffer
        tch::no_grad(|| self.mean.shallow_clone().copy_(&(&self.mean * 0.9 + y.mean(Kind::Float) * 0.1)));
        (y - &self.mean).relu()
    }
}

fn fit_norm(norm: &RunningNorm, opt: &mut nn::Optimizer, xs: &[Tensor]) {
    for x in xs {
        let loss = norm.forward_train(x).mean(Kind::Float);
        opt.backward_step(&loss);
    }
}
