// burn: copies of the model and of gradients kept every step or epoch, and kept correctly.
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;

pub struct Checkpoint<M> {
    pub epoch: usize,
    pub model: M,
}

/// Every snapshot ever taken.
pub struct History<M> {
    all: Vec<Checkpoint<M>>,
}

impl<M: Clone> History<M> {
    pub fn save(&mut self, epoch: usize, model: &M) {
        self.all.push(Checkpoint { epoch, model: model.clone() });
    }
}

/// The last three snapshots.
pub struct Recent<M> {
    last: Vec<Checkpoint<M>>,
}

impl<M: Clone> Recent<M> {
    pub fn save(&mut self, epoch: usize, model: &M) {
        if self.last.len() == 3 {
            self.last.remove(0);
        }
        self.last.push(Checkpoint { epoch, model: model.clone() });
    }
}

pub fn train<B: AutodiffBackend>(mut model: Net<B>, data: &[Tensor<B, 2>], history: &mut History<Net<B>>) {
    let mut optim = AdamConfig::new().init();
    let mut recent = Recent { last: Vec::new() };
    let mut all = History { all: Vec::new() };
    let mut norms = Vec::new();
    let mut grads_seen = Vec::new();
    for epoch in 0..40 {
        for x in data {
            let loss = model.forward(x.clone()).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            if let Some(g) = grads.get::<B::InnerBackend, 2>(model.hidden.weight.id) {
                norms.push(g.clone().powf_scalar(2.0).sum().sqrt().into_scalar());
                grads_seen.push(g); //~ unbounded_copy_history
            }
            model = optim.step(1e-3, model, grads);
        }
        all.save(epoch, &model); //~ unbounded_copy_history
        recent.save(epoch, &model);
        // The caller's: it may empty it.
        history.save(epoch, &model);
    }
    let _ = (norms, grads_seen);
}
