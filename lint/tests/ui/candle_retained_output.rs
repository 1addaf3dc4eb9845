// candle: graph-carrying outputs kept past their iteration.
use candle_core::{Device, Result, Tensor};
use candle_nn::{loss, AdamW, Linear, Module, Optimizer};

fn keep_losses(model: &Linear, opt: &mut AdamW, data: &[(Tensor, Tensor)]) -> Result<Vec<Tensor>> {
    let mut losses = Vec::new();
    let mut outputs = Vec::new();
    for (x, y) in data {
        let logits = model.forward(x)?;
        let loss = loss::mse(&logits, y)?;
        opt.backward_step(&loss)?;
        losses.push(loss.clone()); //~ retained_graph_output
        outputs.push(logits); //~ retained_graph_output
    }
    Ok(losses)
}

struct Trainer {
    model: Linear,
    opt: AdamW,
    last_loss: Option<Tensor>,
    history: Vec<Tensor>,
    steps: usize,
}

impl Trainer {
    // One call is one iteration: fields outlive it.
    fn train_step(&mut self, x: &Tensor, y: &Tensor) -> Result<()> {
        let loss = loss::mse(&self.model.forward(x)?, y)?;
        self.opt.backward_step(&loss)?;
        self.history.push(loss.clone()); //~ accumulated_loss_tensor
        self.last_loss = Some(loss); // replaced every call: one graph at a time, not reported
        self.steps += 1;
        Ok(())
    }

    // Not flagged: detached and scalar values.
    fn train_step_clean(&mut self, x: &Tensor, y: &Tensor) -> Result<f32> {
        let loss = loss::mse(&self.model.forward(x)?, y)?;
        self.opt.backward_step(&loss)?;
        self.history.push(loss.detach());
        self.steps += 1;
        loss.to_scalar::<f32>()
    }
}

// Truncated backpropagation through time without detach: the hidden state carries every
// earlier step's graph into the next iteration.
fn rnn(cell: &Linear, opt: &mut AdamW, xs: &[Tensor], h0: Tensor) -> Result<()> {
    let mut hidden = h0;
    for x in xs {
        let out = cell.forward(&(x + &hidden)?)?;
        let loss = out.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        hidden = out; //~ accumulated_loss_tensor
    }
    Ok(())
}

// Not flagged: a replay buffer of observations (plain data tensors) and scalar statistics.
fn dqn(q_net: &Linear, opt: &mut AdamW, dev: &Device) -> Result<()> {
    let mut replay: Vec<(Tensor, u32, f32, Tensor)> = Vec::new();
    let mut rewards = Vec::new();
    let mut obs = vec![0f32; 4];
    for step in 0..1000 {
        let state = Tensor::from_vec(obs.clone(), (1, 4), dev)?;
        let q = q_net.forward(&state)?;
        let action = q.argmax(1)?.to_vec1::<u32>()?[0];
        let next_obs = vec![step as f32; 4];
        let next = Tensor::from_slice(&next_obs, (1, 4), dev)?;
        replay.push((state, action, 1.0, next));
        rewards.push(q.max(1)?.to_vec1::<f32>()?[0]);
        obs = next_obs;
        if replay.len() >= 32 {
            let batch = Tensor::cat(&replay.iter().map(|r| r.0.clone()).collect::<Vec<_>>(), 0)?;
            let loss = q_net.forward(&batch)?.sqr()?.mean_all()?;
            opt.backward_step(&loss)?;
        }
    }
    Ok(())
}

// Not flagged: an on-policy buffer emptied after each update (A2C).
fn a2c(policy: &Linear, opt: &mut AdamW, steps: usize, dev: &Device) -> Result<()> {
    let mut memory = Vec::new();
    for step in 0..steps {
        let obs = Tensor::zeros((1, 4), candle_core::DType::F32, dev)?;
        memory.push(policy.forward(&obs)?);
        if step % 5 == 4 {
            let loss = Tensor::stack(&memory, 0)?.mean_all()?;
            opt.backward_step(&loss)?;
            memory.clear();
        }
    }
    Ok(())
}

// A helper whose declared result holds no tensor: its result carries nothing.
fn update(loss: Tensor, opt: &mut AdamW) -> Result<f32> {
    opt.backward_step(&loss)?;
    loss.to_scalar::<f32>()
}

fn uses_update(model: &Linear, opt: &mut AdamW, data: &[(Tensor, Tensor)]) -> Result<()> {
    let mut values = Vec::new();
    for (x, y) in data {
        let loss = loss::mse(&model.forward(x)?, y)?;
        values.push(update(loss, opt)?);
    }
    Ok(())
}
