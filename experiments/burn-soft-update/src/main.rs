//! Soft target-network updates in burn: live heap (a counting allocator) and RSS every EVERY
//! iterations of: one Adam training step of an MLP (256 -> 512 -> 16), then a soft update of a
//! target copy, `target = target * (1 - tau) + online * tau` (tau = 0.005).
//!
//! Variants (first argument):
//! - `A`: no target update (baseline).
//! - how the target is made (prefix): none = `model.clone()` after the model's parameters were
//!   initialised (forced with `valid()`); `L` = `model.clone()` right after construction, before
//!   burn's lazy initialisation ran; `I` = a second, independently built model.
//! - how it is updated: `S` = `param.map(|t| t * (1 - tau) + online.val() * tau)`; `SD` = the same
//!   with `.detach()`; `SN` = `Param::initialized(ParamId::new(), ..)` with the blend;
//!   a trailing `F` adds a detached forward of the target every step.
//! Written for memlint by a helper in session 39 (variants A, S, SD, SN, *F) and extended with
//! the `L` and `I` prefixes.
use burn::backend::{Autodiff, NdArray};
use burn::module::{AutodiffModule, Module, Param};
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Distribution, Tensor};

type AB = Autodiff<NdArray>;

// Counting global allocator: live heap bytes (alloc - dealloc), independent of malloc caching.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};
struct Counting;
static LIVE: AtomicI64 = AtomicI64::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as i64, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as i64, Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as i64, Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as i64 - l.size() as i64, Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}
#[global_allocator]
static GA: Counting = Counting;
fn live() -> i64 { LIVE.load(Relaxed) }

#[derive(Module, Debug)]
struct Mlp<B: Backend> {
    l1: Linear<B>,
    l2: Linear<B>,
    act: Relu,
}

impl<B: Backend> Mlp<B> {
    fn new(dev: &B::Device) -> Self {
        Self {
            l1: LinearConfig::new(256, 512).init(dev),
            l2: LinearConfig::new(512, 16).init(dev),
            act: Relu::new(),
        }
    }
    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        self.l2.forward(self.act.forward(self.l1.forward(x)))
    }
}

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

fn batch<B: Backend>(dev: &B::Device) -> (Tensor<B, 2>, Tensor<B, 2>) {
    (
        Tensor::random([64, 256], Distribution::Normal(0.0, 1.0), dev),
        Tensor::random([64, 16], Distribution::Normal(0.0, 1.0), dev),
    )
}


fn train_step<O: Optimizer<Mlp<AB>, AB>>(model: Mlp<AB>, opt: &mut O, x: Tensor<AB, 2>, y: Tensor<AB, 2>) -> Mlp<AB> {
    let out = model.forward(x);
    let loss = (out - y).powf_scalar(2.0).mean();
    let grads = loss.backward();
    let grads = GradientsParams::from_grads::<AB, _>(grads, &model);
    opt.step(1e-3, model, grads)
}

fn blend<const D: usize>(this: Param<Tensor<AB, D>>, that: &Param<Tensor<AB, D>>, tau: f32, detach: bool) -> Param<Tensor<AB, D>> {
    // snake-rs style: this.map(|t| t * (1-tau) + that.val() * tau)
    this.map(|t| { let v = t * (1.0 - tau) + that.val() * tau; if detach { v.detach() } else { v } })
}
fn blend_new_id<const D: usize>(this: &Param<Tensor<AB, D>>, that: &Param<Tensor<AB, D>>, tau: f32) -> Param<Tensor<AB, D>> {
    // yunjhongwu style: Param::initialized(ParamId::new(), this.val()*(1-tau) + that.val()*tau)
    Param::initialized(burn::module::ParamId::new(), this.val() * (1.0 - tau) + that.val() * tau)
}
fn soft(mut t: Mlp<AB>, o: &Mlp<AB>, tau: f32, mode: &str) -> Mlp<AB> {
    match mode {
        "newid" => {
            t.l1.weight = blend_new_id(&t.l1.weight, &o.l1.weight, tau);
            t.l2.weight = blend_new_id(&t.l2.weight, &o.l2.weight, tau);
            t.l1.bias = Some(blend_new_id(t.l1.bias.as_ref().unwrap(), o.l1.bias.as_ref().unwrap(), tau));
            t.l2.bias = Some(blend_new_id(t.l2.bias.as_ref().unwrap(), o.l2.bias.as_ref().unwrap(), tau));
        }
        _ => {
            let d = mode == "detach";
            t.l1.weight = blend(t.l1.weight, &o.l1.weight, tau, d);
            t.l2.weight = blend(t.l2.weight, &o.l2.weight, tau, d);
            t.l1.bias = Some(blend(t.l1.bias.unwrap(), o.l1.bias.as_ref().unwrap(), tau, d));
            t.l2.bias = Some(blend(t.l2.bias.unwrap(), o.l2.bias.as_ref().unwrap(), tau, d));
        }
    }
    t
}

fn main() {
    // variants: S (map blend, no detach), SD (detached), SN (new-id blend), and *F = plus detached target forward each step
    let variant = std::env::args().nth(1).expect("variant");
    let iters: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(2000);
    let every: usize = std::env::args().nth(3).map(|s| s.parse().unwrap()).unwrap_or(250);
    let dev = Default::default();
    let mut model: Mlp<AB> = Mlp::new(&dev);
    let lazy = variant.starts_with('L');
    let early = if lazy { Some(model.clone()) } else { None };
    let _ = AutodiffModule::<AB>::valid(&model);
    let mut opt = AdamConfig::new().init::<AB, Mlp<AB>>();
    let indep = variant.starts_with('I');
    let mut target = if indep { let t: Mlp<AB> = Mlp::new(&dev); let _ = AutodiffModule::<AB>::valid(&t); t } else if let Some(e) = early { e } else { model.clone() };
    let mode = match variant.trim_start_matches('I').trim_start_matches('L').trim_end_matches('F') { "S" => "plain", "SD" => "detach", "SN" => "newid", "A" => "none", v => panic!("{v}") };
    let fwd = variant.ends_with('F');
    let mut sink = 0.0f32;
    println!("variant={variant} iter=0 rss={} live={}", rss_bytes(), live());
    for it in 1..=iters {
        let (x, y) = batch::<AB>(&dev);
        if fwd {
            let (xb, _) = batch::<AB>(&dev);
            let v = target.forward(xb).detach();
            sink += v.into_data().as_slice::<f32>().unwrap()[0];
        }
        model = train_step(model, &mut opt, x, y);
        if mode != "none" { target = soft(target, &model, 0.005, mode); }
        if it % every == 0 {
            println!("variant={variant} iter={it} rss={} live={}", rss_bytes(), live());
        }
    }
    println!("variant={variant} done sink={sink}");
}
