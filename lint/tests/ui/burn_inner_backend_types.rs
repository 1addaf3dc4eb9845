// burn: what the types say about the backend. A model typed with the inner backend
// (`Lm<B::InnerBackend>`) is untracked wherever it is handed, `AutodiffModule::valid(&m)`
// untracks as `m.valid()` does, and a loss built from its config is a loss module, not a model.
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::backend::AutodiffBackend;

pub struct Trainer<B: AutodiffBackend> {
    model: Lm<B>,
}

impl<B: AutodiffBackend> Trainer<B> {
    pub fn train(&mut self, data: &mut Data, opt: &mut impl Optimizer<Lm<B>, B>) {
        for _ in 0..100 {
            let loss = self.model.forward(data.next());
            let grads = GradientsParams::from_grads(loss.backward(), &self.model);
            self.model = opt.step(1e-3, self.model.clone(), grads);
        }
    }

    // Not flagged: the helper returns the model in a tuple, typed with the inner backend, and
    // the per-batch function takes it with that type.
    pub fn validate(&self, data: &mut Data) -> f32 {
        let (_bar, model, total) = self.prepare(data);
        let mut step = 0;
        let mut sum = 0.0;
        while step < total {
            sum += self.process(data, &model, step);
            step += 1;
        }
        sum
    }

    fn prepare(&self, data: &mut Data) -> (u32, Lm<B::InnerBackend>, usize) {
        let model = AutodiffModule::valid(&self.model);
        data.reset();
        (0, model, 10)
    }

    fn process(&self, data: &mut Data, model: &Lm<B::InnerBackend>, _step: usize) -> f32 {
        let out = model.forward(data.next_inner());
        self.batch_loss(out, data.targets())
    }

    fn batch_loss(&self, logits: Tensor<B::InnerBackend, 2>, targets: Tensor<B::InnerBackend, 1, Int>) -> f32 {
        let loss_fn = CrossEntropyLossConfig::new().with_smoothing(Some(0.1)).init(&logits.device());
        loss_fn.forward(logits, targets).into_scalar()
    }

    // Not flagged: untracked through the trait's path.
    pub fn sample(&self, data: &mut Data, steps: usize) -> f32 {
        let model = AutodiffModule::valid(&self.model);
        let mut sum = 0.0;
        for _ in 0..steps {
            sum += model.forward(data.next_inner()).into_scalar();
        }
        sum
    }

    // Flagged: the same loop on the tracked model.
    pub fn sample_tracked(&self, data: &mut Data, steps: usize) -> f32 {
        let mut sum = 0.0;
        for _ in 0..steps {
            sum += self.model.forward(data.next()).into_scalar(); //~ autodiff_forward_without_backward
        }
        sum
    }
}
