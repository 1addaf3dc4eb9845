// burn: an RL agent acting with its autodiff model in rollouts that never run backward.
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;

struct Agent<B: AutodiffBackend, M> {
    model: M,
    device: B::Device,
}

impl<B: AutodiffBackend, M: AutodiffModule<B> + Policy<B>> Agent<B, M> {
    fn act(&self, obs: Tensor<B, 2>) -> u32 {
        let q = self.model.forward(obs);
        q.argmax(1).into_scalar().elem::<u32>()
    }

    // Not flagged: acts with the inner backend.
    fn act_valid(&self, obs: Tensor<B::InnerBackend, 2>) -> u32 {
        let policy = self.model.valid();
        policy.forward(obs).argmax(1).into_scalar().elem::<u32>()
    }

    fn rollout(&self, env: &mut Env<B>, steps: usize) -> f32 {
        let mut reward = 0.0;
        for _ in 0..steps {
            let obs = env.observe();
            let q = self.model.forward(obs.clone()); //~ autodiff_forward_without_backward
            // The same loop's second forward pass: a further label of the finding above.
            let action = self.act(obs);
            reward += env.step(action);
            let _ = q;
        }
        reward
    }

    fn rollout_valid(&self, env: &mut Env<B>, steps: usize) -> f32 {
        let mut reward = 0.0;
        for _ in 0..steps {
            let action = self.act_valid(env.observe().inner());
            reward += env.step(action);
        }
        reward
    }

    // Not flagged: the loop runs backward, which sweeps the graph store.
    fn train(mut self, env: &mut Env<B>, optim: &mut impl Optimizer<M, B>) -> Self {
        for _ in 0..100 {
            let obs = env.observe();
            let loss = self.model.forward(obs).mean();
            let grads = GradientsParams::from_grads(loss.backward(), &self.model);
            self.model = optim.step(1e-3, self.model, grads);
        }
        self
    }
}

// burn 0.22: an autodiff device made in the function.
fn evaluate(device: burn::Device, batches: Vec<Tensor<2>>) {
    let device = device.autodiff();
    let model = Model::new(&device);
    for x in batches {
        let y = model.forward(x.to_device(&device)); //~ autodiff_forward_without_backward
        println!("{}", y.mean().into_scalar::<f32>());
    }
}

// Not flagged: a plain backend (no autodiff anywhere in sight).
fn infer<B: burn::tensor::backend::Backend>(model: &Model, batches: Vec<Tensor<B, 2>>) {
    for x in batches {
        let _ = model.forward(x);
    }
}

// Not flagged: `step` acts and, when its buffer is full, trains through `train` -> `learn`
// (three calls deep). The inherent `learn` that runs backward wins over the trait method of
// the same name, as in Rust; bounds in `where` clauses count.
struct Ppo<B, M> {
    model: M,
    steps: usize,
    _backend: std::marker::PhantomData<B>,
}

impl<B, M> Ppo<B, M>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Policy<B>,
{
    fn go(&mut self, env: &mut Env<B>) {
        while self.steps < 10_000 {
            self.step(env);
        }
    }

    fn train(&mut self, obs: Tensor<B, 2>) {
        self.learn(obs);
    }

    fn learn(&mut self, obs: Tensor<B, 2>) {
        let loss = self.model.forward(obs).mean();
        let _grads = loss.backward();
    }

    fn pick(&self, obs: Tensor<B, 2>) -> u32 {
        self.model.forward(obs).argmax(1).into_scalar().elem::<u32>()
    }
}

impl<B, M> Learner<B> for Ppo<B, M>
where
    B: AutodiffBackend,
    M: AutodiffModule<B> + Policy<B>,
{
    fn step(&mut self, env: &mut Env<B>) {
        let obs = env.observe();
        let _action = self.pick(obs.clone());
        self.steps += 1;
        if self.steps % 64 == 0 {
            self.train(obs);
        }
    }

    fn learn(&mut self, obs: Tensor<B, 2>) {
        self.learn(obs)
    }
}

trait Learner<B: AutodiffBackend> {
    fn step(&mut self, env: &mut Env<B>);
    fn learn(&mut self, obs: Tensor<B, 2>);
}

trait Policy<B: AutodiffBackend> {
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2>;
}
struct Env<B: AutodiffBackend>(std::marker::PhantomData<B>);
struct Model;
