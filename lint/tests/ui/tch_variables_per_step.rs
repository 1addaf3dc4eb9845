// tch: layers created in a variable store that outlives the step.
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Tensor};

// An operator closure handed the store on every forward call builds its layers each time.
pub fn operator(hidden: i64) -> Box<dyn Fn(&nn::VarStore, &Tensor) -> Tensor> {
    Box::new(move |vs, xs| {
        let net = nn::seq()
            .add(nn::linear(vs.root() / "in", 4, hidden, Default::default())) //~ variables_created_per_step
            .add_fn(|x| x.relu())
            .add(nn::linear(vs.root() / "out", hidden, 2, Default::default()));
        xs.apply(&net)
    })
}

pub struct Policy {
    vs: nn::VarStore,
}

impl Policy {
    // A forward method that builds the layer it runs.
    pub fn forward(&self, xs: &Tensor) -> Tensor {
        let head = nn::linear(self.vs.root() / "head", 4, 2, Default::default()); //~ variables_created_per_step
        xs.apply(&head)
    }
}

// The model rebuilt on the long-lived store every epoch.
pub fn train(vs: &nn::VarStore, data: &[(Tensor, Tensor)], epochs: usize) {
    let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
    for _ in 0..epochs {
        let net = nn::seq().add(nn::linear(vs.root() / "fc", 4, 2, Default::default())); //~ variables_created_per_step
        for (x, y) in data {
            let loss = x.apply(&net).mse_loss(y, tch::Reduction::Mean);
            opt.backward_step(&loss);
        }
    }
}

// Fixed: built once from the store, then only run; a fresh store per trial keeps nothing.
pub fn train_fixed(data: &[(Tensor, Tensor)], trials: usize) {
    for _ in 0..trials {
        let vs = nn::VarStore::new(Device::Cpu);
        let net = nn::seq().add(nn::linear(vs.root() / "fc", 4, 2, Default::default()));
        let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
        for (x, y) in data {
            let loss = net.forward(x).mse_loss(y, tch::Reduction::Mean);
            opt.backward_step(&loss);
        }
    }
}
