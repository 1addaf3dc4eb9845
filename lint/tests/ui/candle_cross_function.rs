// Calls across functions of the crate: returned graphs, stores inside callees, loops that run
// backward through a helper — followed two calls deep.
use candle_core::{Result, Tensor};
use candle_nn::{loss, AdamW, Linear, Module, Optimizer};

struct Trainer {
    model: Linear,
    opt: AdamW,
    history: Vec<Tensor>,
    scalars: Vec<f32>,
}

impl Trainer {
    fn predict(&self, x: &Tensor) -> Result<Tensor> {
        self.model.forward(x)
    }

    fn record(&mut self, loss: Tensor) {
        self.history.push(loss);
    }

    fn log_step(&mut self, loss: Tensor) {
        self.record(loss);
    }

    fn record_pair(&mut self, loss: Tensor, logits: Tensor) {
        self.history.push(loss);
        self.history.push(logits);
    }

    fn record_scalar(&mut self, value: f32) {
        self.scalars.push(value);
    }

    fn train_step(&mut self, x: &Tensor, y: &Tensor) -> Result<Tensor> {
        let loss = loss::mse(&self.predict(x)?, y)?;
        self.opt.backward_step(&loss)?;
        Ok(loss)
    }

    fn fit(&mut self, data: &[(Tensor, Tensor)]) -> Result<()> {
        let mut outputs = Vec::new();
        let mut losses = Vec::new();
        for (x, y) in data {
            // The loop runs backward through `train_step`, which returns the loss with its graph.
            let loss = self.train_step(x, y)?;
            losses.push(loss.clone()); //~ retained_graph_output
            let logits = self.predict(x)?;
            outputs.push(logits); //~ retained_graph_output
            self.record(loss.clone()); //~ retained_graph_output
            self.log_step(loss.clone()); //~ retained_graph_output
            // Two arguments stored by one call: one report.
            self.record_pair(loss.clone(), self.predict(x)?); //~ retained_graph_output
            self.record_scalar(loss.to_scalar::<f32>()?);
        }
        Ok(())
    }
}

// A free helper that keeps what it is given.
fn remember(store: &mut Vec<Tensor>, value: Tensor) {
    store.push(value);
}

fn compute_loss(model: &Linear, x: &Tensor, y: &Tensor) -> Result<Tensor> {
    loss::mse(&model.forward(x)?, y)
}

fn train(model: &Linear, opt: &mut AdamW, data: &[(Tensor, Tensor)]) -> Result<()> {
    let mut kept = Vec::new();
    for (x, y) in data {
        let loss = compute_loss(model, x, y)?;
        opt.backward_step(&loss)?;
        remember(&mut kept, loss); //~ retained_graph_output
    }
    Ok(())
}

// Two types with a method of the same name: the receiver's declared type picks the callee.
struct History {
    kept: Vec<Tensor>,
}

impl History {
    fn note(&mut self, value: Tensor) {
        self.kept.push(value);
    }
}

struct Printer {
    lines: usize,
}

impl Printer {
    fn note(&mut self, value: Tensor) {
        self.lines += value.dims().len();
    }
}

fn fit_logged(model: &Linear, opt: &mut AdamW, data: &[(Tensor, Tensor)], history: &mut History) -> Result<()> {
    let mut printer = Printer { lines: 0 };
    for (x, y) in data {
        let loss = compute_loss(model, x, y)?;
        opt.backward_step(&loss)?;
        history.note(loss.clone()); //~ retained_graph_output
        printer.note(loss);
    }
    Ok(())
}
