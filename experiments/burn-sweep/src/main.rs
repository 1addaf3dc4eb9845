// Does burn sweep the graph state of forwards whose outputs never reach a backward, when a
// backward on another forward runs every step? RSS every 100 steps, per mode:
//   nobackward  5 forwards per step on the autodiff model, no backward ever
//   rollout     the same 5 forwards (outputs read to the host), then a training step on another
//               forward (backward + optimizer step)
//   detach      the rollout's outputs detached first
//   valid       no model forward in the rollout, the data read on the inner backend (baseline)
// Measured on the development machine (session 7, 600 steps, 512×512 linear, batch 64):
//   nobackward 8.0 → 1,727 MB; rollout 8.9 → 14.8 MB (9–15 throughout); detach 9.0 → 12.1 MB;
//   valid 8.1 → 8.8 MB.
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

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
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
