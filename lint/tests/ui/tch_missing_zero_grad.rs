// tch: gradients accumulate until zero_grad.
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Tensor};

fn no_clear(net: &impl Module, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) {
    for (x, y) in data {
        let loss = net.forward(x).cross_entropy_for_logits(y);
        loss.backward();
        opt.step(); //~ missing_zero_grad
    }
}

fn cleared(net: &impl Module, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) {
    for (x, y) in data {
        let loss = net.forward(x).cross_entropy_for_logits(y);
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
}

fn combined(net: &impl Module, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) {
    for (x, y) in data {
        let loss = net.forward(x).cross_entropy_for_logits(y);
        opt.backward_step(&loss);
    }
}

// Deliberate gradient accumulation: step and clear together every k iterations.
fn accumulate(net: &impl Module, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)], k: usize) {
    for (i, (x, y)) in data.iter().enumerate() {
        let loss = net.forward(x).cross_entropy_for_logits(y) / k as f64;
        loss.backward();
        if (i + 1) % k == 0 {
            opt.step();
            opt.zero_grad();
        }
    }
}

// Steps every iteration but clears only sometimes.
fn clears_sometimes(net: &impl Module, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) {
    for (i, (x, y)) in data.iter().enumerate() {
        let loss = net.forward(x).cross_entropy_for_logits(y);
        loss.backward();
        opt.step(); //~ missing_zero_grad
        if i % 100 == 0 {
            opt.zero_grad();
        }
    }
}

// `env.step(action)` is not an optimizer step.
fn rollout(env: &mut Env, net: &impl Module) {
    for _ in 0..100 {
        let obs = env.observe();
        let action = tch::no_grad(|| net.forward(&obs).argmax(-1, false));
        env.step(action);
    }
}

struct Env;
impl Env {
    fn observe(&self) -> Tensor {
        Tensor::zeros([4], (tch::Kind::Float, Device::Cpu))
    }
    fn step(&mut self, _a: Tensor) {}
}

fn main() {
    let vs = nn::VarStore::new(Device::Cpu);
    let _opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
}

// Two optimizers: clearing one does not clear the other.
struct Agent {
    critic_opt: nn::Optimizer,
    actor_opt: nn::Optimizer,
}
impl Agent {
    fn train(&mut self, critic_loss: Tensor, actor_loss: Tensor) {
        critic_loss.backward();
        self.critic_opt.step(); //~ missing_zero_grad
        self.actor_opt.zero_grad();
        actor_loss.backward();
        self.actor_opt.step();
    }
}
