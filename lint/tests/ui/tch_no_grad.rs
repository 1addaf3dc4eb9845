// tch: no-grad mistakes in evaluation code.
use tch::nn::Module;
use tch::Tensor;

fn dropped_guard(net: &impl Module, batches: &[Tensor]) -> Vec<Tensor> {
    let _ = tch::no_grad_guard(); //~ no_grad_guard_dropped
    tch::no_grad_guard(); //~ no_grad_guard_dropped
    let mut outputs = Vec::new();
    for x in batches {
        outputs.push(net.forward(x)); //~ eval_without_no_grad
    }
    outputs
}

fn named_guard(net: &impl Module, batches: &[Tensor]) -> Vec<Tensor> {
    let _guard = tch::no_grad_guard();
    let mut outputs = Vec::new();
    for x in batches {
        outputs.push(net.forward(x));
    }
    outputs
}

fn closure_no_grad(net: &impl Module, batches: &[Tensor]) -> f64 {
    let mut correct = Tensor::from(0f64);
    let mut total = 0f64;
    for x in batches {
        let logits = tch::no_grad(|| net.forward(x));
        correct += logits.argmax(-1, false).sum(tch::Kind::Float);
        total += f64::try_from(&net.forward(x).mean(tch::Kind::Float)).unwrap();
    }
    total
}

// Not reported yet: sums in evaluation loops look like layer chaining without types.
fn eval_sum(net: &impl Module, batches: &[Tensor]) {
    let mut acc = Tensor::from(0f64);
    for x in batches {
        acc += net.forward(x).mean(tch::Kind::Float);
    }
    acc.print();
}

// Not flagged: model code chains activations on purpose.
struct Stack {
    blocks: Vec<tch::nn::Linear>,
}
impl Stack {
    fn run(&self, xs: &Tensor) -> Vec<Tensor> {
        let mut outs = Vec::new();
        let mut xs = xs.shallow_clone();
        for block in &self.blocks {
            xs = block.forward(&xs);
            outs.push(xs.shallow_clone());
        }
        outs
    }
}

// Sampling: argmax/multinomial indices carry no graph.
fn sample(net: &impl Module, mut input: Tensor, steps: usize) -> Vec<i64> {
    let mut tokens = Vec::new();
    for _ in 0..steps {
        let next = net.forward(&input).argmax(-1, false);
        tokens.push(next.int64_value(&[0]));
        input = Tensor::cat(&[input, next], 0);
    }
    tokens
}
