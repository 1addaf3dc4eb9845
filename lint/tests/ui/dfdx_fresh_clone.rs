// dfdx: gradient stores recognised by what they are, whatever their names.
use dfdx::prelude::*;

type Model = (Linear<4, 8>, ReLU, Linear<8, 2>);
type Data = [(Tensor<Rank1<4>, f32, Cpu>, Tensor<Rank1<2>, f32, Cpu>)];

// Each iteration traces with a fresh clone of a zeroed store that nothing writes into: gradients
// cannot accumulate (no `missing_zero_grad`), but every iteration copies every gradient buffer.
fn fresh_clone(model: &mut Model, opt: &mut Sgd<Model, f32, Cpu>, data: &Data) {
    let zeroed = model.alloc_grads();
    for (x, y) in data {
        let out = model.forward(x.trace(zeroed.clone())); //~ grads_allocated_in_loop
        let g = mse_loss(out, y.clone()).backward();
        opt.update(model, &g).unwrap();
    }
}

// The same with the store annotated by its type and passed in.
fn annotated(model: &mut Model, opt: &mut Sgd<Model, f32, Cpu>, data: &Data, empty: &Gradients<f32, Cpu>) {
    for (x, y) in data {
        let out = model.forward(x.traced(empty.clone())); //~ grads_allocated_in_loop
        let g = mse_loss(out, y.clone()).backward();
        opt.update(model, &g).unwrap();
    }
}

struct Trainer {
    model: Model,
    opt: Sgd<Model, f32, Cpu>,
    blank: Gradients<f32, Cpu>,
}

impl Trainer {
    // A field declared with the store's type.
    fn fit(&mut self, data: &Data) {
        for (x, y) in data {
            let out = self.model.forward(x.trace(self.blank.clone())); //~ grads_allocated_in_loop
            let g = mse_loss(out, y.clone()).backward();
            self.opt.update(&mut self.model, &g).unwrap();
            self.model.zero_grads(&mut self.blank);
        }
    }
}

// A store that backward writes into, traced by clone and never cleared: gradients pile up.
fn accumulates(model: &mut Model, opt: &mut Sgd<Model, f32, Cpu>, data: &Data) {
    let mut acc = model.alloc_grads();
    for (x, y) in data {
        let out = model.forward(x.trace(acc.clone())); //~ grads_allocated_in_loop
        acc = mse_loss(out, y.clone()).backward();
        opt.update(model, &acc).unwrap(); //~ missing_zero_grad
    }
}

// Not flagged: one store, moved into the tape and cleared every iteration.
fn reused(model: &mut Model, opt: &mut Sgd<Model, f32, Cpu>, data: &Data) {
    let mut store = model.alloc_grads();
    for (x, y) in data {
        let out = model.forward(x.trace(store));
        store = mse_loss(out, y.clone()).backward();
        opt.update(model, &store).unwrap();
        model.zero_grads(&mut store);
    }
}
