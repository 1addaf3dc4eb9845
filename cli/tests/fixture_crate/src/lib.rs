//! No `use candle…` here: the framework comes from Cargo.toml.
use std::cell::RefCell;
use std::rc::Rc;

pub struct Cache {
    pub owner: Option<Rc<RefCell<Cache>>>,
}

pub fn fit(model: &Model, opt: &mut Opt, data: &[(Input, Input)]) -> Result<(), ()> {
    let mut history = Vec::new();
    for (x, y) in data {
        let loss = model.forward(x)?.sub(y)?.sqr()?.mean_all()?;
        opt.backward_step(&loss)?;
        history.push(loss); // «ü» non-ASCII on this line
    }
    Ok(())
}

pub struct Model;
pub struct Opt;
pub struct Input;
