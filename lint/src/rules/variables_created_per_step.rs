//! `variables_created_per_step`: trainable variables created in a long-lived store on every
//! forward pass or every iteration (tch).

use crate::context::{Context, Report};
use crate::diagnostic::Level;
use crate::model::{FnModel, Iteration, VarCreation, VarRoot};
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
- in a loop that runs a forward pass or backward, with the store made before the loop;
- in a function a training loop reaches (an evaluation every few epochs), with the store kept in
  a field of `self`: every call adds a model's worth of variables;
- in a training-step helper that a training loop calls once per step (`fn d_step(vs:
  &nn::VarStore, ..) { let disc = Disc::new(&vs.root()); ..; opt.backward_step(&loss) }`), with
  the store it is handed: every step adds the layers again.

A layer made only when it is missing (`if self.head.is_none() { self.head = Some(nn::linear(..)) }`,
`if let None = self.head`) is made once and is not reported.

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
                Repeats::ForwardPass | Repeats::StepCall | Repeats::StepHelper => (v.closure(), None),
                Repeats::LoopIteration => (v.closure(), v.in_loop()),
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
            let mut report = report.help(why.help()).note(
                "a variable store keeps every variable created in it: a second layer of the same name is added beside the first, never reused",
            );
            if matches!(why, Repeats::StepCall | Repeats::StepHelper)
                && let Some((path, line, caller)) = f.per_step_from()
            {
                report.elsewhere.push((
                    path.clone(),
                    *line,
                    format!("a training loop reaches this function through `{caller}`"),
                ));
            }
            cx.report(report);
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
    ForwardPass,
    /// In a loop that runs a forward pass or backward.
    LoopIteration,
    /// In a function reached from a training loop, with the store in a field of `self`: every
    /// call (an evaluation every epoch) adds a model's worth of variables to it.
    StepCall,
    /// In a training-step helper (one call per step, its backward outside any loop) that builds
    /// its layers in the store it is handed.
    StepHelper,
}

impl Repeats {
    fn label(self) -> &'static str {
        match self {
            Repeats::ForwardPass => "new variables in the store on every forward pass",
            Repeats::LoopIteration => "new variables in the store every iteration",
            Repeats::StepCall => "new variables in a store kept in `self`, on every call",
            Repeats::StepHelper => "new variables in the store this step is handed, on every training step",
        }
    }

    fn help(self) -> &'static str {
        match self {
            Repeats::ForwardPass => {
                "build the layers once, outside the forward pass, and keep them (a field, or a value the closure captures)"
            }
            Repeats::LoopIteration => "build the layers once before the loop, or make the store inside the loop",
            Repeats::StepCall => {
                "build the model once and keep it, or build it in a fresh `VarStore` per call and copy the weights in (`vs.copy(&trained)`)"
            }
            Repeats::StepHelper => "build the model once, where the store is made, and hand the step the model",
        }
    }
}

fn repeats(f: &FnModel, v: &VarCreation) -> Option<Repeats> {
    if let Some(c) = v.closure() {
        // A closure that runs the forward pass and builds its layers in a store it is handed.
        let outside = matches!(v.root(), VarRoot::Param | VarRoot::Captured | VarRoot::Field);
        return (f.closure_runs_forward(c) && outside).then_some(Repeats::ForwardPass);
    }
    if let Some(l) = v.in_loop() {
        let before_loop = match v.root() {
            VarRoot::Field | VarRoot::Param => true,
            VarRoot::Local { decl_loop } => !f.loop_within(decl_loop, l),
            VarRoot::Captured | VarRoot::Unknown => false,
        };
        return (f.loop_trains_or_infers(l) && before_loop).then_some(Repeats::LoopIteration);
    }
    // A forward method (`fn forward(&self, xs)`) that builds what it runs. Another function
    // that builds a model and then runs it (`fn train(vs: &VarStore) { let net = ..; for .. }`)
    // is called once, not per step.
    let handed = matches!(v.root(), VarRoot::Param | VarRoot::Field);
    if f.spec().is_forward_method(f.ident()) && f.runs_forward() && handed {
        return Some(Repeats::ForwardPass);
    }
    // A method a training loop calls (an evaluation every epoch) that builds a model in a store
    // of `self`: the store outlives the call and gains the model's variables again each time.
    if matches!(v.root(), VarRoot::Field) && f.per_step_from().is_some() {
        return Some(Repeats::StepCall);
    }
    // A training-step helper a loop calls once per step, which builds layers in the store it is
    // handed and backpropagates outside any loop of its own (not a function that builds a model
    // and then trains it in its own loop: a trial of a sweep). Whatever runs them, the store
    // keeps every copy.
    (matches!(v.root(), VarRoot::Param) && f.per_step_from().is_some() && f.iteration_of(None) == Some(Iteration::Call))
        .then_some(Repeats::StepHelper)
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

    /// A factory closure: it builds the layers in the path it is handed and returns the closure
    /// that runs them. The layers are built when the factory runs (once, when the network is
    /// made), not on every forward pass.
    #[test]
    fn accepts_a_factory_closure_that_returns_the_forward_closure() {
        let factory = r#"
use tch::{nn, nn::Module, Tensor};
pub fn template(hidden: i64) -> NetTemplate {
    NetTemplate::new(|path: &nn::Path| {
        let l1 = nn::linear(path / "l1", 4, hidden, Default::default());
        let l2 = nn::linear(path / "l2", hidden, 2, Default::default());
        move |xs: &Tensor| xs.apply(&l1).relu().apply(&l2)
    })
}
"#;
        assert_eq!(count("variables_created_per_step", None, factory), 0);
        // The layers built inside the returned closure: on every call of it.
        let inside = factory
            .replace("        let l1 = nn::linear(path / \"l1\", 4, hidden, Default::default());\n        let l2 = nn::linear(path / \"l2\", hidden, 2, Default::default());\n", "")
            .replace(
                "move |xs: &Tensor| xs.apply(&l1).relu().apply(&l2)",
                "move |xs: &Tensor| xs.apply(&nn::linear(path / \"l1\", 4, hidden, Default::default()))",
            );
        assert_ne!(inside, factory);
        assert_eq!(count("variables_created_per_step", None, &inside), 1);
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

    /// An evaluation, called from the training loop every few epochs, that builds the model to
    /// pit on a store the evaluator keeps.
    const EVALUATOR: &str = r#"
use tch::{nn, nn::OptimizerConfig, Tensor};
struct Evaluator { vs: nn::VarStore }
impl Evaluator {
    fn pit(&self) -> f64 {
        let net = Net::new(&self.vs.root(), 64);
        play(&net)
    }
}
fn train(vs: &nn::VarStore, net: &Net, evaluator: &Evaluator, data: &[Tensor]) {
    let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
    for epoch in 0..100 {
        for xs in data {
            opt.backward_step(&net.forward(xs).mean(tch::Kind::Float));
        }
        if epoch % 10 == 0 {
            println!("{}", evaluator.pit());
        }
    }
}
"#;

    #[test]
    fn reports_a_model_built_in_a_kept_store_by_a_function_the_training_loop_calls() {
        assert_eq!(count("variables_created_per_step", None, EVALUATOR), 1);
        // A fresh store per evaluation: nothing accumulates.
        let fresh = EVALUATOR.replace(
            "        let net = Net::new(&self.vs.root(), 64);",
            "        let vs = nn::VarStore::new(tch::Device::Cpu);\n        let net = Net::new(&vs.root(), 64);",
        );
        assert_ne!(fresh, EVALUATOR);
        assert_eq!(count("variables_created_per_step", None, &fresh), 0);
        // Called once, after training: not per step.
        let once = EVALUATOR
            .replace("        if epoch % 10 == 0 {\n            println!(\"{}\", evaluator.pit());\n        }\n", "")
            .replace("        }\n    }\n}\n", "        }\n    }\n    println!(\"{}\", evaluator.pit());\n}\n");
        assert!(once.contains("    }\n    println!(\"{}\", evaluator.pit());\n}"), "{once}");
        assert_eq!(count("variables_created_per_step", None, &once), 0);
    }

    /// A head created on the first forward, when its input width is known.
    const LAZY_HEAD: &str = r#"
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};
struct Lazy { root: nn::Path<'static>, head: Option<nn::Linear> }
impl Lazy {
    fn forward(&mut self, feats: &Tensor) -> Tensor {
        if TEST {
            self.head = Some(nn::linear(&self.root / "head", feats.size()[1], 5, Default::default()));
        }
        self.head.as_ref().unwrap().forward(feats)
    }
}
fn main() -> anyhow::Result<()> {
    let vs: &'static nn::VarStore = Box::leak(Box::new(nn::VarStore::new(Device::Cpu)));
    let mut clf = Lazy { root: vs.root(), head: None };
    let mut opt = nn::Adam::default().build(vs, 1e-3)?;
    for _ in 0..100_000 {
        let x = Tensor::randn([32, 300], (Kind::Float, Device::Cpu));
        let loss = clf.forward(&x).mean(Kind::Float);
        opt.backward_step(&loss);
    }
    Ok(())
}
"#;

    #[test]
    fn a_variable_made_only_when_missing_is_made_once() {
        assert_eq!(count("variables_created_per_step", None, &LAZY_HEAD.replace("TEST", "self.head.is_none()")), 0);
        assert_eq!(count("variables_created_per_step", None, &LAZY_HEAD.replace("TEST", "let None = self.head")), 0);
        // Made on every call that asks for a new head.
        assert_eq!(count("variables_created_per_step", None, &LAZY_HEAD.replace("TEST", "feats.size()[1] > 0")), 1);
    }

    /// A discriminator step that rebuilds its network in the store it is handed, called once per
    /// training step.
    const STEP_HELPER: &str = r#"
use tch::{nn, nn::OptimizerConfig, Device, Tensor};
fn critic_step(vs: &nn::VarStore, opt: &mut nn::Optimizer, real: &Tensor) -> f64 {
    let critic = Critic::new(&vs.root());
    let loss = critic.forward(real).mean(tch::Kind::Float);
    opt.backward_step(&loss);
    f64::try_from(&loss).unwrap()
}
fn fit(data: &[Tensor]) {
    let vs = nn::VarStore::new(Device::Cpu);
    let mut opt = nn::Adam::default().build(&vs, 1e-4).unwrap();
    for x in data {
        let l = critic_step(&vs, &mut opt, x);
        println!("{l}");
    }
}
"#;

    #[test]
    fn reports_a_step_helper_that_builds_its_layers_in_the_store_it_is_handed() {
        assert_eq!(crate::rules::testing::lines("variables_created_per_step", STEP_HELPER), vec![4]);
        // Built once, where the store is made, and handed over: nothing repeats.
        let once = STEP_HELPER
            .replace("fn critic_step(vs: &nn::VarStore,", "fn critic_step(critic: &Critic,")
            .replace("    let critic = Critic::new(&vs.root());\n", "")
            .replace("let l = critic_step(&vs,", "let l = critic_step(&critic,")
            .replace("    let mut opt =", "    let critic = Critic::new(&vs.root());\n    let mut opt =");
        assert_ne!(once, STEP_HELPER);
        assert_eq!(count("variables_created_per_step", None, &once), 0);
        // A trial of a sweep: its own store, built and trained in its own loop.
        let trial = r#"
use tch::{nn, nn::OptimizerConfig, Device, Tensor};
fn run_trial(vs: &nn::VarStore, data: &[Tensor]) -> f64 {
    let critic = Critic::new(&vs.root());
    let mut opt = nn::Adam::default().build(vs, 1e-4).unwrap();
    let mut last = 0.0;
    for x in data {
        let loss = critic.forward(x).mean(tch::Kind::Float);
        opt.backward_step(&loss);
        last = f64::try_from(&loss).unwrap();
    }
    last
}
fn sweep(data: &[Tensor]) {
    for _ in 0..8 {
        let vs = nn::VarStore::new(Device::Cpu);
        println!("{}", run_trial(&vs, data));
    }
}
"#;
        assert_eq!(count("variables_created_per_step", None, trial), 0);
    }
}
