// Does burn sweep the graph state of forwards whose outputs never reach a backward, when a
// backward on another forward runs every step? RSS every 100 steps, per mode:
//   nobackward  5 forwards per step on the autodiff model, no backward ever
//   rollout     the same 5 forwards (outputs read to the host), then a training step on another
//               forward (backward + optimizer step)
//   detach      the rollout's outputs detached first
//   valid       no model forward in the rollout, the data read on the inner backend (baseline)
//   validate        a validation pass in the training loop: every 10 steps, one forward of a
//                   4,096-row validation set through the trained model (autodiff), loss read
//                   to the host; peak RSS (VmHWM) is what it costs
//   validate-valid  the same pass on `net.valid()` (the inner backend)
// Measured on the development machine (session 7, 600 steps, 512×512 linear, batch 64):
//   nobackward 8.0 → 1,727 MB; rollout 8.9 → 14.8 MB (9–15 throughout); detach 9.0 → 12.1 MB;
//   valid 8.1 → 8.8 MB.
// Session 18 (60 steps, 4 × 512×512 linear + relu, validation set 4,096 × 512 = 8 MB, run twice
// each, interleaved): validate peak RSS 102.4 / 102.1 MB; validate-valid 45.7 / 46.0 MB. The
// autodiff pass holds every layer's activations of the whole validation set until the next
// step's backward: +56 MB of peak for an 8 MB input, 2.2× the peak of the run.
use burn::backend::{Autodiff, NdArray};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::tensor::{Distribution, Tensor};

type B = Autodiff<NdArray>;

#[derive(Module, Debug, Clone)]
struct Net<Bk: burn::tensor::backend::Backend> {
    l: Linear<Bk>,
}

fn rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: f64 = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096.0 / 1e6
}

fn peak_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: f64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1e3
}

// burn's derive names the backend parameter `B` in what it generates (`valid`'s inner module).
#[derive(Module, Debug)]
struct Mlp<B: burn::tensor::backend::Backend> {
    layers: Vec<Linear<B>>,
}

impl<B: burn::tensor::backend::Backend> Mlp<B> {
    fn forward(&self, mut x: Tensor<B, 2>) -> Tensor<B, 2> {
        for l in &self.layers {
            x = burn::tensor::activation::relu(l.forward(x));
        }
        x
    }
}

/// A training loop with a validation pass every 10 steps, on the autodiff model or on
/// `valid()`: the peak memory each costs.
fn validate(on_valid: bool) {
    use burn::module::AutodiffModule;
    let device = Default::default();
    let mut net: Mlp<B> = Mlp { layers: (0..4).map(|_| LinearConfig::new(512, 512).init(&device)).collect() };
    let mut opt = SgdConfig::new().init::<B, Mlp<B>>();
    let val_x = Tensor::<B, 2>::random([4096, 512], Distribution::Default, &device);
    let steps = 60;
    for step in 0..steps {
        let x = Tensor::<B, 2>::random([64, 512], Distribution::Default, &device);
        let loss = net.forward(x).powf_scalar(2.0).mean();
        let grads = GradientsParams::from_grads::<B, Mlp<B>>(loss.backward(), &net);
        net = opt.step(1e-4, net, grads);
        if step % 10 == 0 {
            let v: f32 = if on_valid {
                net.valid().forward(val_x.clone().inner()).mean().into_scalar()
            } else {
                net.forward(val_x.clone()).mean().into_scalar()
            };
            std::hint::black_box(v);
        }
    }
    let mode = if on_valid { "validate-valid" } else { "validate" };
    println!("{mode} after {steps} steps: rss {:.1} MB, peak rss {:.1} MB", rss_mb(), peak_mb());
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    if mode.starts_with("validate") {
        return validate(mode == "validate-valid");
    }
    let device = Default::default();
    let mut net: Net<B> = Net { l: LinearConfig::new(512, 512).init(&device) };
    let mut opt = SgdConfig::new().init::<B, Net<B>>();
    let steps = 600;
    for step in 0..steps {
        // The rollout: 5 forwards per step whose outputs leave as host data (or detached).
        for _ in 0..5 {
            let x = Tensor::<B, 2>::random([64, 512], Distribution::Default, &device);
            match mode.as_str() {
                "valid" => {
                    let _: f32 = x.inner().mean().into_scalar();
                }
                "detach" => {
                    let y = net.l.forward(x).detach();
                    let _: f32 = y.mean().into_scalar();
                }
                _ => {
                    let y = net.l.forward(x);
                    let _: f32 = y.mean().into_scalar();
                }
            }
        }
        // The training step: a different forward, backward, optimizer step.
        if mode != "nobackward" {
            let x = Tensor::<B, 2>::random([64, 512], Distribution::Default, &device);
            let loss = net.l.forward(x).powf_scalar(2.0).mean();
            let grads = GradientsParams::from_grads::<B, Net<B>>(loss.backward(), &net);
            net = opt.step(1e-4, net, grads);
        }
        if step % 100 == 0 || step == steps - 1 {
            println!("{mode} step {step}: rss {:.1} MB", rss_mb());
        }
    }
}
