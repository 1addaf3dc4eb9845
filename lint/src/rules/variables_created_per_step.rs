//! `variables_created_per_step`: trainable variables created in a long-lived store on every
//! forward pass or every iteration (tch).

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{FnModel, VarCreation, VarRoot};
use crate::rule::{Applies, Group, Rule, RuleMeta};

pub struct VariablesCreatedPerStep;

pub static META: RuleMeta = RuleMeta {
    id: "variables_created_per_step",
    summary: "trainable variables are created in a long-lived store every step",
    default_level: Level::Warn,
    group: Group::Stable,
    docs: r#"### What it does
Finds layers and variables created in a variable store that outlives the step
(`nn::linear(vs.root() / "fc", ..)`, `p.var("w", ..)`, `Net::new(&vs.root(), ..)`, tch):
- in a closure or function that also runs the forward pass, with the store coming from outside
  it (a parameter, a captured variable, a field): every forward creates the layers again;
- in a loop that runs a forward pass or backward, with the store made before the loop.

### Why is this bad?
A tch `VarStore` keeps every variable created in it: a second `nn::linear(vs.root() / "fc", ..)`
does not reuse `fc`, it adds `fc__1`, then `fc__2`, … So memory grows every step, the optimizer
built on the store tracks ever more tensors, and the layers that run are freshly initialised
each time (the model never learns).

### Example
```rust
let forward = move |vs: &nn::VarStore, xs: &Tensor| {
    let net = nn::seq().add(nn::linear(vs.root() / "fc", 64, 2, Default::default()));
    xs.apply(&net)
};
```

### Use instead
```rust
let net = nn::seq().add(nn::linear(vs.root() / "fc", 64, 2, Default::default()));
let forward = move |xs: &Tensor| xs.apply(&net);
```
Build the layers once, with the store, and keep them; create variables inside a loop only in a
store made in that loop.
"#,
};

impl Rule for VariablesCreatedPerStep {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn applies(&self) -> Applies {
        Applies::Known(|s| !s.var_builders.is_empty())
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        // One finding per closure, loop or body that repeats: its first creation, the others
        // as labels.
        let mut groups: Vec<(Scope, Repeats, Vec<&VarCreation>)> = Vec::new();
        for v in f.var_creations() {
            let Some(why) = repeats(f, v) else { continue };
            let scope = match why {
                Repeats::PerForward => (v.closure(), None),
                Repeats::PerIteration => (v.closure(), v.in_loop()),
            };
            match groups.iter_mut().find(|(s, w, _)| *s == scope && *w == why) {
                Some((_, _, vs)) => vs.push(v),
                None => groups.push((scope, why, vec![v])),
            }
        }
        for (_, why, vs) in groups {
            let mut report = Report::new(
                "trainable variables created in a long-lived store every step",
                vs[0].span().clone(),
                why.label(),
            );
            for v in vs.iter().skip(1).take(MAX_LABELS) {
                report = report.label(v.span().clone(), "and here");
            }
            cx.report(report.help(why.help()).note(
                "a variable store keeps every variable created in it: a second layer of the same name is added beside the first, never reused",
            ));
        }
    }
}

/// The closure and loop a group of creations repeats in.
type Scope = (Option<usize>, Option<usize>);

/// Further creations of one group shown as labels.
const MAX_LABELS: usize = 4;

/// Why a creation repeats with a store that outlives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repeats {
    /// In a closure or function that runs the forward pass.
    PerForward,
    /// In a loop that runs a forward pass or backward.
    PerIteration,
}

impl Repeats {
    fn label(self) -> &'static str {
        match self {
            Repeats::PerForward => "new variables in the store on every forward pass",
            Repeats::PerIteration => "new variables in the store every iteration",
        }
    }

    fn help(self) -> &'static str {
        match self {
            Repeats::PerForward => {
                "build the layers once, outside the forward pass, and keep them (a field, or a value the closure captures)"
            }
            Repeats::PerIteration => "build the layers once before the loop, or make the store inside the loop",
        }
    }
}

fn repeats(f: &FnModel, v: &VarCreation) -> Option<Repeats> {
    if let Some(c) = v.closure() {
        // A closure that runs the forward pass and builds its layers in a store it is handed.
        let outside = matches!(v.root(), VarRoot::Param | VarRoot::Captured | VarRoot::Field);
        return (f.closure_runs_forward(c) && outside).then_some(Repeats::PerForward);
    }
    if let Some(l) = v.in_loop() {
        let before_loop = match v.root() {
            VarRoot::Field | VarRoot::Param => true,
            VarRoot::Local { decl_loop } => !f.loop_within(decl_loop, l),
            VarRoot::Captured | VarRoot::Unknown => false,
        };
        return (f.loop_trains_or_infers(l) && before_loop).then_some(Repeats::PerIteration);
    }
    // A forward method (`fn forward(&self, xs)`) that builds what it runs. Another function
    // that builds a model and then runs it (`fn train(vs: &VarStore) { let net = ..; for .. }`)
    // is called once, not per step.
    let handed = matches!(v.root(), VarRoot::Param | VarRoot::Field);
    (crate::frameworks::is_forward_method(f.ident()) && f.runs_forward() && handed).then_some(Repeats::PerForward)
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    /// The operator closure builds its layers in the store it is handed on every call.
    const CLOSURE: &str = r#"
use tch::{nn, nn::Module, Tensor};
pub fn build_operator(hidden: i64) -> Box<dyn Fn(&nn::VarStore, &Tensor) -> Tensor> {
    Box::new(move |vs, xs| {
        let net = nn::seq()
            .add(nn::linear(vs.root() / "l1", 4, hidden, Default::default()))
            .add_fn(|x| x.relu())
            .add(nn::linear(vs.root() / "l2", hidden, 2, Default::default()));
        xs.apply(&net)
    })
}
"#;

    #[test]
    fn reports_layers_built_in_a_forward_closure() {
        // One finding for the closure, its two layers labelled.
        assert_eq!(count("variables_created_per_step", None, CLOSURE), 1);
        // Built in the closure's own store: nothing outlives the call.
        let own = CLOSURE.replace(
            "Box::new(move |vs, xs| {",
            "Box::new(move |_vs, xs| {\n        let vs = nn::VarStore::new(tch::Device::Cpu);",
        );
        assert_ne!(own, CLOSURE);
        assert_eq!(count("variables_created_per_step", None, &own), 0);
    }

    /// A model built once and a forward that only runs it.
    const BUILT_ONCE: &str = r#"
use tch::{nn, nn::Module, nn::OptimizerConfig, Tensor};
struct Net { fc: nn::Linear }
impl Net {
    fn new(p: &nn::Path) -> Net {
        let mut layers = Vec::new();
        for i in 0..3 {
            layers.push(nn::linear(p / format!("l{i}"), 8, 8, Default::default()));
        }
        Net { fc: nn::linear(p / "fc", 8, 2, Default::default()) }
    }
    fn forward(&self, xs: &Tensor) -> Tensor {
        xs.apply(&self.fc)
    }
}
fn train(data: &[(Tensor, Tensor)]) {
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let net = Net::new(&vs.root());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    for (x, y) in data {
        let loss = net.forward(x).mse_loss(y, tch::Reduction::Mean);
        opt.backward_step(&loss);
    }
}
"#;

    #[test]
    fn accepts_a_model_built_once() {
        assert_eq!(count("variables_created_per_step", None, BUILT_ONCE), 0);
    }

    #[test]
    fn reports_a_model_rebuilt_in_the_training_loop() {
        let rebuilt = BUILT_ONCE.replace(
            "        let loss = net.forward(x)",
            "        let net = Net::new(&vs.root());\n        let loss = net.forward(x)",
        );
        assert_ne!(rebuilt, BUILT_ONCE);
        assert_eq!(count("variables_created_per_step", None, &rebuilt), 1);
        // A new store per iteration (a fresh model per trial) keeps nothing.
        let fresh = rebuilt.replace(
            "        let net = Net::new(&vs.root());\n        let loss",
            "        let vs = nn::VarStore::new(tch::Device::Cpu);\n        let net = Net::new(&vs.root());\n        let loss",
        );
        assert_ne!(fresh, rebuilt);
        assert_eq!(count("variables_created_per_step", None, &fresh), 0);
    }

    #[test]
    fn accepts_a_training_function_handed_the_store() {
        let handed = BUILT_ONCE.replace(
            "fn train(data: &[(Tensor, Tensor)]) {\n    let vs = nn::VarStore::new(tch::Device::Cpu);",
            "fn train(vs: &nn::VarStore, data: &[(Tensor, Tensor)]) {",
        );
        assert_ne!(handed, BUILT_ONCE);
        assert_eq!(count("variables_created_per_step", None, &handed), 0);
    }

    #[test]
    fn reports_a_forward_method_that_builds_its_layer() {
        let per_call = BUILT_ONCE.replace(
            "        xs.apply(&self.fc)",
            "        let fc = nn::linear(self.vs.root() / \"fc\", 8, 2, Default::default());\n        xs.apply(&fc)",
        );
        assert_ne!(per_call, BUILT_ONCE);
        assert_eq!(count("variables_created_per_step", None, &per_call), 1);
    }
}
