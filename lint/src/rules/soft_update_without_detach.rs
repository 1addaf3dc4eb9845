//! `soft_update_without_detach`: burn parameters rewritten from autodiff ops on their old value.

use crate::context::{Context, Report};
use crate::diagnostic::{Applicability, Level, Suggestion};
use crate::model::FnModel;
use crate::rule::{Applies, Group, Rule, RuleMeta};

pub struct SoftUpdateWithoutDetach;

pub static META: RuleMeta = RuleMeta {
    id: "soft_update_without_detach",
    summary: "a parameter is rewritten from autodiff ops on its old value without detach",
    default_level: Level::Warn,
    group: Group::Stable,
    docs: r#"### What it does
In burn code, finds parameters whose new value is computed with tensor operations from their
old value and kept without `detach()`: soft target-network updates written as
`param.map(|t| t * (1.0 - tau) + online.val() * tau)` or
`Param::initialized(id, this.val() * (1.0 - tau) + that.val() * tau)`, the same blend returned
by a `ModuleMapper`'s `map_float` (`tensor * (1.0 - tau) + online * tau`, or rebuilt with
`Param::from_mapped_value`), and other rewrites of a `weight`/`bias` through `map` (clipping,
rescaling). Blends that end in `.detach()`, and updates
that work on the inner backend (`.inner()`, `valid()`), are not reported; nor is code generic
over any `B: Backend` in a crate that keeps its target modules untracked (`.valid()`,
`.no_grad()`), since its callers then hand it untracked modules; nor is a mapper whose every application the
crate makes untracked at once (`self.target = self.target.clone().map(&mut polyak).no_grad()`).

### Why is this bad?
On an autodiff backend the blended tensor is a graph node whose parent is the old parameter
value, which is itself the previous update's node: every update chains one more node, and the
target network is never part of a backward that could consume them. Measured with burn 0.22.1
(three 256×256 layers, τ = 0.005, one update per step): memory grew by about 190 KB per update
without `detach()`, and by 1.3 MB per update when only the online side was detached; the time
per step grew too (×37 after 1,600 updates), because burn walks the growing graph store after
every backward. Detaching the blended value, or keeping the target on the inner backend, kept
memory and time flat.

### Known problems
On burn 0.20 and 0.21 the chain is freed with the online parameters when the target shares their
initial tensors: a
`target = online.clone()` taken after the online model's parameters were initialised (by a
forward or a training step), and on burn 0.20 also one taken right after construction. Such a
target does not grow, and is reported all the same. An independently built target grows on every
version measured, and on burn 0.21 so does a clone taken before lazy initialisation ran. On burn
0.15 every target grows, a clone of the initialised model too (`experiments/burn-soft-update`).

### Example
```rust
fn soft_update<B: Backend, const D: usize>(this: Param<Tensor<B, D>>, that: &Param<Tensor<B, D>>, tau: f32) -> Param<Tensor<B, D>> {
    this.map(|t| t * (1.0 - tau) + that.val().detach() * tau)   // `t` still chains
}
```

### Use instead
```rust
fn soft_update<B: Backend, const D: usize>(this: Param<Tensor<B, D>>, that: &Param<Tensor<B, D>>, tau: f32) -> Param<Tensor<B, D>> {
    this.map(|t| (t * (1.0 - tau) + that.val() * tau).detach())
}
```
"#,
};

impl Rule for SoftUpdateWithoutDetach {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn applies(&self) -> Applies {
        Applies::Known(|s| !s.param_map_methods.is_empty() || !s.param_rebuild.is_empty())
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        // One report per function: the first update is primary, the others are labelled.
        // A blend of the old value with another tensor (another parameter's value, a captured
        // online tensor) through a sum; `t.clamp(..)` alone is not one.
        // Code generic over the backend (`B: Backend`) chains only when a caller hands it an
        // autodiff module; a crate that keeps its target modules untracked (`.valid()`,
        // `.no_grad()`) hands it untracked ones, which this function cannot tell apart.
        if f.spec().autodiff_by_type && !f.autodiff() && f.crate_untracks_models() {
            return;
        }
        // A mapper whose every application is made untracked at once (`.map(&mut polyak).no_grad()`).
        if f.rewrites_untracked() {
            return;
        }
        let updates: Vec<_> = f.param_rewrites().iter().filter(|r| f.blend(r.reads(), r.old()).is_blend(1)).collect();
        let Some(first) = updates.first() else { return };
        let message = match updates.len() {
            1 => "parameter rewritten from autodiff ops on its old value".to_string(),
            n => format!("{n} parameters rewritten from autodiff ops on their old values"),
        };
        let mut report = Report::new(message, first.span().clone(), "the new value is a graph node chained to the old one")
            .help("detach the blended value (`(t * (1.0 - tau) + online.val() * tau).detach()`), or keep the target network on the inner backend (`model.valid()`)")
            .note("on an autodiff backend every update adds a node to a chain nothing consumes: memory and the time burn spends after each backward grow with every update");
        for e in updates.iter().skip(1).take(MAX_LABELS) {
            report = report.label(e.span().clone(), "another update chained the same way");
        }
        for e in &updates {
            let value = e.value();
            let text = cx.snippet(value).trim().to_string();
            let simple = text.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.');
            let replacement = if simple { format!("{text}.detach()") } else { format!("({text}).detach()") };
            // Right for a target network; a parameter that is also trained would lose its
            // gradient tracking, so it is not applied blindly.
            report = report.suggest(Suggestion {
                message: "detach the new value".to_string(),
                span: value.clone(),
                replacement,
                applicability: Applicability::MaybeIncorrect,
            });
        }
        cx.report(report);
    }
}

/// Further updates of one function shown as labels.
const MAX_LABELS: usize = 4;

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
use burn::module::Param;
use burn::tensor::backend::Backend;
fn blend<B: Backend>(target: Param<Tensor<B, 2>>, online: &Param<Tensor<B, 2>>, tau: f32) -> Param<Tensor<B, 2>> {
    target.map(|t| t * (1.0 - tau) + online.val() * tau)
}
"#;

    const PASSES: &str = r#"
use burn::module::Param;
use burn::tensor::backend::Backend;
fn blend<B: Backend>(target: Param<Tensor<B, 2>>, online: &Param<Tensor<B, 2>>, tau: f32) -> Param<Tensor<B, 2>> {
    target.map(|t| (t * (1.0 - tau) + online.val() * tau).detach())
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("soft_update_without_detach", None, FAILS), 1);
    }

    /// The same generic helper in a crate that keeps its target network untracked.
    const UNTRACKED_TARGET: &str = r#"
use burn::module::{Module, Param};
use burn::tensor::backend::{AutodiffBackend, Backend};
fn blend<B: Backend>(target: Param<Tensor<B, 2>>, online: &Param<Tensor<B, 2>>, tau: f32) -> Param<Tensor<B, 2>> {
    target.map(|t| t * (1.0 - tau) + online.val() * tau)
}
fn sync<B: AutodiffBackend>(agent: &mut Agent<B>, tau: f32) {
    agent.target = agent.target.clone().update(&agent.online, tau).no_grad();
}
"#;

    #[test]
    fn accepts_generic_code_in_a_crate_that_keeps_targets_untracked() {
        assert_eq!(count("soft_update_without_detach", None, UNTRACKED_TARGET), 0);
        // Code that names the autodiff backend is reported whatever the crate does elsewhere.
        let autodiff = UNTRACKED_TARGET.replace("fn blend<B: Backend>", "fn blend<B: AutodiffBackend>");
        assert_eq!(count("soft_update_without_detach", None, &autodiff), 1);
    }

    /// A target on the inner backend blended with the online weights taken off the autodiff
    /// side first (`let w = online.weight.val().inner();`): burn adds tensors of one backend only.
    const INNER_LOCAL: &str = r#"
use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::backend::AutodiffBackend;
fn soft<B: AutodiffBackend>(t: Linear<B::InnerBackend>, o: &Linear<B>, tau: f32) -> Linear<B::InnerBackend> {
    let w = o.weight.val().TAKE;
    let weight = t.weight.map(|tw| tw * (1.0 - tau) + w * tau);
    Linear { weight, bias: t.bias }
}
"#;

    #[test]
    fn accepts_a_blend_with_a_local_taken_off_the_autodiff_side() {
        assert_eq!(count("soft_update_without_detach", None, &INNER_LOCAL.replace("TAKE", "inner()")), 0);
        // Still on the autodiff side: the target chains.
        assert_eq!(count("soft_update_without_detach", None, &INNER_LOCAL.replace("TAKE", "clone()")), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("soft_update_without_detach", None, PASSES), 0);
    }

    /// A soft update written as a module mapper: `map_float` returns each target parameter's
    /// new value, given the old one (burn ≤ 0.19: the tensor; 0.20 and later: the parameter,
    /// taken apart with `consume()` and rebuilt with `Param::from_mapped_value`).
    const MAPPER: &str = r#"
use burn::module::{ModuleMapper, Param, ParamId};
use burn::tensor::backend::Backend;
struct Blend { online: Vec<Box<dyn std::any::Any>>, tau: f64 }
impl<B: Backend> ModuleMapper<B> for Blend {
    fn map_float<const D: usize>(&mut self, _id: ParamId, tensor: Tensor<B, D>) -> Tensor<B, D> {
        let online = *self.online.pop().unwrap().downcast::<Tensor<B, D>>().unwrap();
        tensor * (1.0 - self.tau) + online * self.tau
    }
}
"#;

    const MAPPER_PARAM: &str = r#"
use burn::module::{ModuleMapper, Param};
use burn::tensor::backend::Backend;
struct Mix { online: Vec<Box<dyn std::any::Any>>, tau: f64 }
impl<B: Backend> ModuleMapper<B> for Mix {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<B, D>>) -> Param<Tensor<B, D>> {
        let (id, target, mapper) = param.consume();
        let online = *self.online.pop().unwrap().downcast::<Tensor<B, D>>().unwrap();
        let mixed = target.mul_scalar((1.0 - self.tau) as f32) + online.mul_scalar(self.tau as f32);
        Param::from_mapped_value(id, mixed, mapper)
    }
}
"#;

    #[test]
    fn reports_a_soft_update_written_as_a_module_mapper() {
        assert_eq!(count("soft_update_without_detach", None, MAPPER), 1);
        assert_eq!(count("soft_update_without_detach", None, MAPPER_PARAM), 1);
        // Detached, or a rewrite of the old value alone (clipping), or another trait's method.
        let detached = MAPPER.replace(
            "        tensor * (1.0 - self.tau) + online * self.tau\n",
            "        (tensor * (1.0 - self.tau) + online * self.tau).detach()\n",
        );
        assert_ne!(detached, MAPPER);
        assert_eq!(count("soft_update_without_detach", None, &detached), 0);
        let mixed = MAPPER_PARAM.replace(
            "Param::from_mapped_value(id, mixed, mapper)",
            "Param::from_mapped_value(id, mixed.detach(), mapper)",
        );
        assert_ne!(mixed, MAPPER_PARAM);
        assert_eq!(count("soft_update_without_detach", None, &mixed), 0);
        let clip = MAPPER.replace("tensor * (1.0 - self.tau) + online * self.tau", "tensor.clamp(-1.0, 1.0)");
        assert_eq!(count("soft_update_without_detach", None, &clip), 0);
        let other = MAPPER.replace("ModuleMapper<B> for Blend", "Remap<B> for Blend");
        assert_eq!(count("soft_update_without_detach", None, &other), 0);
    }

    #[test]
    fn a_mapper_whose_every_result_is_made_untracked_at_once_chains_nothing() {
        let applied = |tail: &str| {
            format!(
                "{}\nimpl<B: AutodiffBackend> Agent<B> {{\n    fn sync(&mut self, tau: f64) {{\n        let mut blend = Blend {{ online: flat(&self.online), tau }};\n        self.target = self.target.clone().map(&mut blend){tail};\n    }}\n}}\n",
                MAPPER.replace("impl<B: Backend>", "impl<B: AutodiffBackend>")
            )
        };
        assert_eq!(count("soft_update_without_detach", None, &applied(".no_grad()")), 0);
        assert_eq!(count("soft_update_without_detach", None, &applied("")), 1);
    }

    /// A generic soft update reached through a type parameter (`<M as DqnModel<B>>::soft_update`
    /// in an autodiff agent) from a crate that also makes some model `valid()` elsewhere: the
    /// agent's backend reaches the impl, so the crate-wide `valid()` does not excuse it.
    const VIA_TYPE_PARAM: &str = r#"
use burn::module::{Param, ParamId};
use burn::tensor::backend::{AutodiffBackend, Backend};
fn blend<const N: usize, B: Backend>(this: &Param<Tensor<B, N>>, that: &Param<Tensor<B, N>>, tau: f32) -> Param<Tensor<B, N>> {
    Param::initialized(ParamId::new(), this.val() * (1.0 - tau) + that.val() * tau)
}
pub trait DqnModel<B: Backend> { fn soft_update(this: Self, that: &Self, tau: f32) -> Self; }
impl<B: Backend> DqnModel<B> for Net<B> {
    fn soft_update(this: Self, that: &Self, tau: f32) -> Self {
        Net { weight: blend(&this.weight, &that.weight, tau) }
    }
}
pub struct Dqn<B: AutodiffBackend, M: DqnModel<B>> { target: M, policy: M, b: PhantomData<B> }
impl<B: AutodiffBackend, M: DqnModel<B> + AutodiffModule<B>> Dqn<B, M> {
    pub fn sync(&mut self, tau: f32) {
        self.target = CALL(self.target.clone(), &self.policy, tau);
    }
    pub fn greedy(&self) -> M::InnerModule {
        self.policy.valid()
    }
}
"#;

    #[test]
    fn reports_a_generic_soft_update_reached_through_a_type_parameter() {
        for call in ["<M as DqnModel<B>>::soft_update", "M::soft_update"] {
            let src = VIA_TYPE_PARAM.replace("CALL", call);
            assert_eq!(count("soft_update_without_detach", None, &src), 1, "{call}");
        }
        // A type of that name that is not a type parameter reaches no impl of the crate.
        let other = VIA_TYPE_PARAM.replace("CALL", "Other::soft_update");
        assert_eq!(count("soft_update_without_detach", None, &other), 0);
    }
}
