use burn::backend::{Autodiff, NdArray};
use burn::module::{AutodiffModule, Module};
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

fn main() {
    let variant = std::env::args().nth(1).expect("variant A..F");
    let iters: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(3000);
    let every: usize = std::env::args().nth(3).map(|s| s.parse().unwrap()).unwrap_or(250);
    let dev = Default::default();
    AB::seed(&dev, 0);
    let mut model: Mlp<AB> = Mlp::new(&dev);
    let mut opt = AdamConfig::new().init::<AB, Mlp<AB>>();
    // Separate "target network" (extra variants I/J): never gets a backward of its own.
    let fresh_target: Mlp<AB> = Mlp::new(&dev);
    let mut target: Mlp<AB> = match variant.as_str() {
        // J: clone of the still-lazy model => burn 0.21 Param::clone re-runs the lazy init,
        // so until the first refresh the target has its OWN param tensors.
        "J" => model.clone(),
        // K: separate target network with require_grad off on all params
        "K" => fresh_target.no_grad(),
        // L: force lazy init first, then clone => target shares model's param tensors; never refreshed
        "L" => {
            let _ = AutodiffModule::<AB>::valid(&model);
            model.clone()
        }
        _ => fresh_target,
    };
    let mut sink = 0.0f32; // keep extra forwards observable
    println!("variant={variant} iter=0 rss={} live={}", rss_bytes(), live());
    for it in 1..=iters {
        let (x, y) = batch::<AB>(&dev);
        match variant.as_str() {
            "A" => {
                model = train_step(model, &mut opt, x.clone(), y.clone());
            }
            "B" => {
                let (xb, _) = batch::<AB>(&dev);
                let v = model.forward(xb).detach();
                let d = v.into_data();
                sink += d.as_slice::<f32>().unwrap()[0];
                model = train_step(model, &mut opt, x.clone(), y.clone());
            }
            "C" => {
                let (xb, _) = batch::<AB>(&dev);
                let s: f32 = model.forward(xb).mean().into_scalar();
                sink += s;
                model = train_step(model, &mut opt, x.clone(), y.clone());
            }
            "D" => {
                model = train_step(model, &mut opt, x.clone(), y.clone());
                let (xb, _) = batch::<AB>(&dev);
                let v = model.forward(xb).detach();
                let d = v.into_data();
                sink += d.as_slice::<f32>().unwrap()[0];
            }
            "E" => {
                let (xb, _) = batch::<AB>(&dev);
                let s: f32 = model.forward(xb).mean().into_scalar();
                sink += s;
            }
            "F" => {
                let (xb, _) = batch::<<AB as AutodiffBackend>::InnerBackend>(&dev);
                let inner: Mlp<NdArray> = AutodiffModule::<AB>::valid(&model);
                let v = inner.forward(xb);
                let d = v.into_data();
                sink += d.as_slice::<f32>().unwrap()[0];
                model = train_step(model, &mut opt, x.clone(), y.clone());
            }
            "G" => {
                // orphan forward, NOT detached, kept alive across the backward, dropped at end
                let (xb, _) = batch::<AB>(&dev);
                let v = model.forward(xb);
                model = train_step(model, &mut opt, x.clone(), y.clone());
                sink += v.into_data().as_slice::<f32>().unwrap()[0];
            }
            "H" => {
                // orphan forward, output simply dropped (no detach, no readback)
                let (xb, _) = batch::<AB>(&dev);
                let v = model.forward(xb);
                drop(v);
                model = train_step(model, &mut opt, x.clone(), y.clone());
            }
            "I" | "J" | "K" | "L" => {
                // target-network forward (separate autodiff module), detached + read back
                // J: target = model.clone(), refreshed every 100 iterations (DQN style)
                if variant == "J" && it % 100 == 0 {
                    target = model.clone();
                }
                let (xb, _) = batch::<AB>(&dev);
                let v = target.forward(xb).detach();
                sink += v.into_data().as_slice::<f32>().unwrap()[0];
                model = train_step(model, &mut opt, x.clone(), y.clone());
            }
            _ => panic!("unknown variant"),
        }
        if it % every == 0 {
            println!("variant={variant} iter={it} rss={} live={}", rss_bytes(), live());
        }
    }
    println!("variant={variant} done sink={sink}");
}
