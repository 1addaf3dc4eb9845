// candle: recurrent states across training iterations, and a concatenation kept across them.
use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{Linear, Module, Optimizer, SGD};

// Truncated backpropagation through time, written the standard way: the state is cut once per
// chunk and carries gradients to `wx` and `wh` within the chunk. Nothing to report.
fn train_tbptt(wx: &Linear, wh: &Linear, opt: &mut SGD, chunks: &[Vec<Tensor>], dev: &Device) -> Result<()> {
    let mut h = Tensor::zeros((1, 16), DType::F32, dev)?;
    for chunk in chunks {
        h = h.detach();
        let mut loss = Tensor::zeros((), DType::F32, dev)?;
        for x in chunk {
            h = (wx.forward(x)? + wh.forward(&h)?)?.tanh()?;
            loss = (loss + h.sqr()?.mean_all()?)?;
        }
        opt.backward_step(&loss)?;
    }
    Ok(())
}

// The state is reset to zeros at the start of every sequence: nothing to report either.
fn train_reset(wx: &Linear, wh: &Linear, opt: &mut SGD, seqs: &[Vec<Tensor>], dev: &Device) -> Result<()> {
    let mut h = Tensor::zeros((1, 16), DType::F32, dev)?;
    for seq in seqs {
        h = Tensor::zeros((1, 16), DType::F32, dev)?;
        let mut loss = Tensor::zeros((), DType::F32, dev)?;
        for x in seq {
            h = (wx.forward(x)? + wh.forward(&h)?)?.tanh()?;
            loss = (loss + h.sqr()?.mean_all()?)?;
        }
        opt.backward_step(&loss)?;
    }
    Ok(())
}

// The state is never cut: every chunk's graph links to every earlier chunk's. Reported, with no
// machine fix (appending `.detach()` to the new state would stop the gradients to `wx`, `wh`).
fn train_uncut(wx: &Linear, wh: &Linear, opt: &mut SGD, chunks: &[Vec<Tensor>], dev: &Device) -> Result<()> {
    let mut h = Tensor::zeros((1, 16), DType::F32, dev)?;
    for chunk in chunks {
        let mut loss = Tensor::zeros((), DType::F32, dev)?;
        for x in chunk {
            h = (wx.forward(x)? + wh.forward(&h)?)?.tanh()?; //~ accumulated_loss_tensor
            loss = (loss + h.sqr()?.mean_all()?)?;
        }
        opt.backward_step(&loss)?;
    }
    Ok(())
}

// Features of every step concatenated into one tensor kept across steps.
fn collect_features(enc: &Linear, opt: &mut SGD, batches: &[Tensor], dev: &Device) -> Result<Tensor> {
    let mut feats = Tensor::zeros((0, 16), DType::F32, dev)?;
    for x in batches {
        let y = enc.forward(x)?;
        opt.backward_step(&y.sqr()?.mean_all()?)?;
        feats = Tensor::cat(&[&feats, &y], 0)?; //~ accumulated_loss_tensor
    }
    Ok(feats)
}

// A recurrent state kept in `self` by a method called once per training iteration: every
// iteration's graph links to every earlier one through `self.h`.
struct Rnn {
    wx: Linear,
    wh: Linear,
    h: Tensor,
}

impl Rnn {
    fn forward_chunk(&mut self, xs: &[Tensor]) -> Result<Tensor> {
        let mut outs = Vec::new();
        for x in xs {
            self.h = (self.wx.forward(x)? + self.wh.forward(&self.h)?)?.tanh()?;
            outs.push(self.h.clone());
        }
        Tensor::stack(&outs, 0)
    }

    fn forward_chunk_cut(&mut self, xs: &[Tensor]) -> Result<Tensor> {
        self.h = self.h.detach();
        self.forward_chunk(xs)
    }
}

fn train_stateful(chunks: &[Vec<Tensor>], dev: &Device) -> Result<()> {
    let vm = candle_nn::VarMap::new();
    let vb = candle_nn::VarBuilder::from_varmap(&vm, DType::F32, dev);
    let mut opt = SGD::new(vm.all_vars(), 0.01)?;
    let wx = candle_nn::linear(16, 16, vb.pp("wx"))?;
    let wh = candle_nn::linear(16, 16, vb.pp("wh"))?;
    let mut rnn = Rnn { wx, wh, h: Tensor::zeros((1, 16), DType::F32, dev)? };
    for chunk in chunks {
        let ys = rnn.forward_chunk(chunk)?; //~ accumulated_loss_tensor
        opt.backward_step(&ys.sqr()?.mean_all()?)?;
    }
    Ok(())
}
