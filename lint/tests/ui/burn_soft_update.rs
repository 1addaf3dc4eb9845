// burn: soft target-network updates that chain autodiff nodes onto the target's parameters.
use burn::module::{Param, ParamId};
use burn::nn::Linear;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;

// Neither side detached.
fn soft_update_tensor<B: Backend, const D: usize>(
    this: Param<Tensor<B, D>>,
    that: &Param<Tensor<B, D>>,
    tau: f32,
) -> Param<Tensor<B, D>> {
    this.map(|tensor| tensor * (1.0 - tau) + that.val() * tau) //~ soft_update_without_detach
}

// Only the online side detached: `t * (1 - tau)` still chains (the worst case measured).
fn soft_update_inplace<B: Backend, const D: usize>(this: &mut Param<Tensor<B, D>>, that: &Param<Tensor<B, D>>, tau: f32) {
    *this = this.clone().map(|t| t * (1.0 - tau) + that.val().detach() * tau); //~ soft_update_without_detach
}

// A new parameter built from both values.
fn soft_update_new_id<B: Backend, const D: usize>(this: &Param<Tensor<B, D>>, that: &Param<Tensor<B, D>>, tau: f32) -> Param<Tensor<B, D>> {
    let this_weight = this.val();
    let that_weight = that.val();
    let new_weight = this_weight * (1.0 - tau) + that_weight * tau;
    Param::initialized(ParamId::new(), new_weight) //~ soft_update_without_detach
}

// Fields of layers.
fn soft_update_linear<B: AutodiffBackend>(mut a: Linear<B>, b: &Linear<B>, tau: f32) -> Linear<B> {
    a.weight = a.weight.map(|w| w.mul_scalar(1.0 - tau) + b.weight.val().mul_scalar(tau)); //~ soft_update_without_detach
    a
}

// Not flagged: the blended value is detached.
fn soft_update_detached<B: Backend, const D: usize>(this: Param<Tensor<B, D>>, that: &Param<Tensor<B, D>>, tau: f32) -> Param<Tensor<B, D>> {
    this.map(|t| (t * (1.0 - tau) + that.val() * tau).detach())
}

// Not flagged: the target lives on the inner backend.
fn soft_update_inner<B: AutodiffBackend, const D: usize>(
    this: Param<Tensor<B::InnerBackend, D>>,
    that: &Param<Tensor<B, D>>,
    tau: f32,
) -> Param<Tensor<B::InnerBackend, D>> {
    this.map(|t| t * (1.0 - tau) + that.val().inner() * tau)
}

// Not flagged: hard copies, and a rescale from host data.
fn hard_copy<B: Backend>(mut a: Linear<B>, b: &Linear<B>, scale: Vec<f32>, device: &B::Device) -> Linear<B> {
    a.weight = a.weight.map(|_| b.weight.val());
    let fresh = Tensor::<B, 1>::from_floats(scale.as_slice(), device);
    a.bias = a.bias.map(|bias| bias.map(|_| fresh.clone()));
    a
}

// Not flagged: `map` on iterators and options.
fn totals(xs: Vec<f32>, tau: f32) -> Vec<f32> {
    xs.iter().map(|x| x * (1.0 - tau) + tau).collect()
}

// Several layers in one function: one report.
fn soft_update_layers<B: AutodiffBackend>(mut a: Linear<B>, b: &Linear<B>, tau: f32) -> Linear<B> {
    a.weight = a.weight.map(|w| w * (1.0 - tau) + b.weight.val() * tau); //~ soft_update_without_detach
    a.bias = a.bias.map(|p| p.map(|t| t * (1.0 - tau) + b.bias.as_ref().unwrap().val() * tau)); // labelled above
    a
}

// A module mapper blending with captured online tensors (the id is kept, the chain grows).
struct Blend<B: Backend> {
    online: Vec<Tensor<B, 1>>,
    tau: f32,
    index: usize,
}

impl<B: Backend> burn::module::ModuleMapper<B> for Blend<B> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let target = param.val();
        let shape = target.dims();
        let online = self.online[self.index].clone();
        self.index += 1;
        let mixed = online.mul_scalar(self.tau) + target.reshape([-1]).mul_scalar(1.0 - self.tau);
        Param::initialized(param.id.clone(), mixed.reshape(shape)) //~ soft_update_without_detach
    }
}

// Not flagged: clipping a parameter from its own value (the next optimizer step rebuilds it as
// a leaf).
fn clip<B: Backend>(mut a: Linear<B>, limit: f32) -> Linear<B> {
    a.weight = a.weight.map(|w| w.clamp(-limit, limit));
    let w = a.weight.val();
    a.weight = Param::initialized(a.weight.id, w.clamp(-limit, limit));
    a
}

// Not flagged: a parameter lifted to the autodiff backend with a host flag (burn's own
// `from_inner`).
struct Lifted<B: Backend, const D: usize> {
    param: Param<Tensor<B, D>>,
    require_grad: bool,
}

fn lift<B: AutodiffBackend, const D: usize>(module: Lifted<B::InnerBackend, D>) -> Param<Tensor<B, D>> {
    let tensor = Tensor::from_inner(module.param.val()).set_require_grad(module.require_grad);
    Param::initialized(module.param.id, tensor)
}

// Not flagged: a parameter transformed with configuration, not blended with another tensor
// (burn's own quantizer).
struct Quantizer {
    scheme: Scheme,
    calibration: Calibration,
}

impl Quantizer {
    fn map_float<B: Backend, const D: usize>(&self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        param.map(|tensor| {
            let range = compute_range(&self.scheme, &tensor, &self.calibration);
            let qparams = compute_q_params(&self.scheme, range);
            tensor.quantize(&self.scheme, qparams)
        })
    }
}
