//! The batch-size planner on a CUDA GPU, checked against real out-of-memory errors.
//! Needs the `cuda-examples` feature; never built by CI.
//!
//!     gpu_plan plan   mlp|transformer [batches]   # memlint::Planner's prediction (one line of JSON + text)
//!     gpu_plan probe  mlp|transformer BATCH        # two complete steps; exit 0 ok, 3 out of memory
//!     gpu_plan search mlp|transformer GUESS        # the real largest batch, by probing in fresh processes
//!
//! Models: an MLP 1024 → 4096 → 4096 → 10 and a stack of 4 transformer blocks (sequence 256,
//! width 512, 8 heads, feed-forward 2048), both trained with AdamW on random data.

use std::process::{Command, ExitCode};
use std::time::Instant;

use candle_core::{D, DType, Device, Module, Result, Tensor};
use candle_nn::{AdamW, LayerNorm, Linear, Optimizer, ParamsAdamW, VarBuilder, VarMap, layer_norm, linear, loss, ops};

const SEQ: usize = 256;
const WIDTH: usize = 512;
const HEADS: usize = 8;
const FF: usize = 2048;
const BLOCKS: usize = 4;

struct Block {
    norm1: LayerNorm,
    qkv: Linear,
    proj: Linear,
    norm2: LayerNorm,
    up: Linear,
    down: Linear,
}

impl Block {
    fn new(vb: VarBuilder) -> Result<Self> {
        Ok(Self {
            norm1: layer_norm(WIDTH, 1e-5, vb.pp("norm1"))?,
            qkv: linear(WIDTH, 3 * WIDTH, vb.pp("qkv"))?,
            proj: linear(WIDTH, WIDTH, vb.pp("proj"))?,
            norm2: layer_norm(WIDTH, 1e-5, vb.pp("norm2"))?,
            up: linear(WIDTH, FF, vb.pp("up"))?,
            down: linear(FF, WIDTH, vb.pp("down"))?,
        })
    }

    fn forward(&self, xs: &Tensor) -> Result<Tensor> {
        let (b, s, _) = xs.dims3()?;
        let head = WIDTH / HEADS;
        let qkv = self.qkv.forward(&self.norm1.forward(xs)?)?.reshape((b, s, 3, HEADS, head))?;
        let part = |i: usize| qkv.narrow(2, i, 1)?.squeeze(2)?.transpose(1, 2)?.contiguous();
        let (q, k, v) = (part(0)?, part(1)?, part(2)?);
        let scores = (q.matmul(&k.t()?)? / (head as f64).sqrt())?;
        let attn = ops::softmax_last_dim(&scores)?.matmul(&v)?;
        let attn = attn.transpose(1, 2)?.reshape((b, s, WIDTH))?;
        let xs = (xs + self.proj.forward(&attn)?)?;
        let ff = self.down.forward(&self.up.forward(&self.norm2.forward(&xs)?)?.gelu()?)?;
        xs + ff
    }
}

enum Model {
    Mlp(Linear, Linear, Linear),
    Transformer(Vec<Block>, Linear),
}

struct Setup {
    model: Model,
    opt: AdamW,
    device: Device,
    parameter_bytes: u64,
}

fn setup(kind: &str) -> Result<Setup> {
    let device = Device::new_cuda(0)?;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &device);
    let model = match kind {
        "mlp" => Model::Mlp(
            linear(1024, 4096, vb.pp("l1"))?,
            linear(4096, 4096, vb.pp("l2"))?,
            linear(4096, 10, vb.pp("l3"))?,
        ),
        _ => Model::Transformer(
            (0..BLOCKS).map(|i| Block::new(vb.pp(format!("block{i}")))).collect::<Result<_>>()?,
            linear(WIDTH, 10, vb.pp("head"))?,
        ),
    };
    let parameter_bytes = varmap.all_vars().iter().map(|v| (v.elem_count() * v.dtype().size_in_bytes()) as u64).sum();
    let opt = AdamW::new(varmap.all_vars(), ParamsAdamW { lr: 1e-4, ..Default::default() })?;
    Ok(Setup { model, opt, device, parameter_bytes })
}

/// One complete step: forward, loss, backward, AdamW step, loss read back to the host.
fn step(s: &mut Setup, batch: usize) -> Result<f32> {
    let logits = match &s.model {
        Model::Mlp(l1, l2, l3) => {
            let xs = Tensor::randn(0f32, 1.0, (batch, 1024), &s.device)?;
            l3.forward(&l2.forward(&l1.forward(&xs)?.relu()?)?.relu()?)?
        }
        Model::Transformer(blocks, head) => {
            let mut xs = Tensor::randn(0f32, 1.0, (batch, SEQ, WIDTH), &s.device)?;
            for block in blocks {
                xs = block.forward(&xs)?;
            }
            head.forward(&xs.mean(1)?)?
        }
    };
    let ys = logits.argmax(D::Minus1)?;
    let loss = loss::cross_entropy(&logits, &ys)?;
    s.opt.backward_step(&loss)?;
    loss.to_scalar::<f32>()
}

fn plan(kind: &str, batches: &[usize]) -> Result<()> {
    let mut s = setup(kind)?;
    let params = s.parameter_bytes;
    let plan = memlint::Planner::new()
        .batches(batches)
        .device(memlint::DeviceChoice::Cuda(0))
        .parameter_bytes(params)
        .run(|b| step(&mut s, b).map(drop));
    match plan {
        Ok(plan) => {
            println!("PLAN {}", serde_json::to_string(&plan).expect("plan serialises"));
            println!("{plan}");
        }
        Err(e) => println!("PLAN-ERROR {e}"),
    }
    Ok(())
}

/// Exit 0 when two steps at `batch` run, 3 when the GPU runs out of memory, 1 on another error.
fn probe(kind: &str, batch: usize) -> ExitCode {
    let run = || -> Result<f32> {
        let mut s = setup(kind)?;
        step(&mut s, batch)?;
        step(&mut s, batch)
    };
    match run() {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) if format!("{e:?}").contains("OUT_OF_MEMORY") => ExitCode::from(3),
        Err(e) => {
            eprintln!("probe {kind} {batch}: {e}");
            ExitCode::from(1)
        }
    }
}

/// The real largest batch: fresh processes probe around `guess` until the boundary is found to
/// within 0.5 %.
fn search(kind: &str, guess: usize) -> ExitCode {
    let exe = std::env::current_exe().expect("own path");
    let started = Instant::now();
    let mut probes = 0;
    let mut fits = |b: usize| -> Option<bool> {
        probes += 1;
        let status = Command::new(&exe).args(["probe", kind, &b.to_string()]).status().ok()?;
        match status.code() {
            Some(0) => Some(true),
            Some(3) => Some(false),
            _ => None,
        }
    };
    let (mut lo, mut hi) = (0usize, usize::MAX);
    let mut b = guess.max(1);
    while hi == usize::MAX || lo == 0 {
        match fits(b) {
            Some(true) => {
                lo = b;
                if hi == usize::MAX {
                    b = b + b / 8 + 1;
                }
            }
            Some(false) => {
                hi = b;
                if lo == 0 {
                    b = (b - b / 8).max(1);
                }
            }
            None => {
                eprintln!("search: probe at {b} failed for another reason");
                return ExitCode::from(1);
            }
        }
        if hi != usize::MAX && lo != 0 {
            break;
        }
    }
    while hi - lo > 1 && (hi - lo) * 200 > lo {
        let mid = lo + (hi - lo) / 2;
        match fits(mid) {
            Some(true) => lo = mid,
            Some(false) => hi = mid,
            None => return ExitCode::from(1),
        }
    }
    println!(
        "SEARCH {kind} largest_ok={lo} smallest_oom={hi} probes={probes} seconds={:.1}",
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = args.get(1).map(String::as_str).unwrap_or("mlp");
    let number = |i: usize| args.get(i).and_then(|s| s.parse::<usize>().ok());
    match args.first().map(String::as_str) {
        Some("plan") => {
            let batches: Vec<usize> = match args.get(2) {
                Some(list) => list.split(',').filter_map(|p| p.parse().ok()).collect(),
                None if kind == "mlp" => vec![1024, 2048, 4096],
                None => vec![8, 16, 32],
            };
            match plan(kind, &batches) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("plan: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Some("probe") => probe(kind, number(2).unwrap_or(1)),
        Some("search") => search(kind, number(2).unwrap_or(1)),
        _ => {
            eprintln!("usage: gpu_plan plan|probe|search mlp|transformer [batches|BATCH|GUESS]");
            ExitCode::from(2)
        }
    }
}
