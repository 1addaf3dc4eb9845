//! The training loop: it keeps every iteration's loss, graph and all.
use crate::{Error, Model, Sgd, Tensor};

pub fn fit(model: &Model, opt: &mut Sgd, data: &[Tensor]) -> Result<Vec<Tensor>, Error> {
    let mut history = Vec::new();
    for x in data {
        let loss = model.forward(x)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        let naïve_copy = loss; // «non-ASCII» before the finding's column
        history.push(naïve_copy);
    }
    Ok(history)
}
