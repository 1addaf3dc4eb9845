//! Unit tests of the per-function model on small real snippets: versions, taint, iterations,
//! what outlives what.

use super::build::function_graphs;
use super::graph::{BindingKind, FnModel, Iteration, NodeKind, Store, Taint};
use super::link::CrateNames;
use crate::frameworks::Framework;

fn graphs(framework: &str, src: &str) -> Vec<FnModel> {
    let file = syn::parse_file(src).expect("snippet parses");
    let spec = Framework::from_name(framework).expect("registered").spec();
    function_graphs(&file, spec, true, 0, &CrateNames::default())
}

/// The models of `src` built as part of a crate whose files are `defs` and `src`.
fn graphs_in_crate(framework: &str, defs: &str, src: &str) -> Vec<FnModel> {
    let names = super::link::crate_names([defs, src]);
    let file = syn::parse_file(src).expect("snippet parses");
    let spec = Framework::from_name(framework).expect("registered").spec();
    function_graphs(&file, spec, true, 0, &names)
}

fn binding(g: &FnModel, name: &str) -> usize {
    g.bindings.iter().position(|b| b.name == name).unwrap_or_else(|| panic!("no binding `{name}`"))
}

/// Whether some version of binding `name` carries a graph.
fn carries_graph(g: &FnModel, name: &str) -> bool {
    let b = binding(g, name);
    g.graph.node_indices().any(|n| g.binding_of(n) == Some(b) && g.graph[n].taint.has(Taint::GRAPH))
}

fn versions(g: &FnModel, b: usize) -> usize {
    g.graph.node_indices().filter(|&n| matches!(g.graph[n].kind, NodeKind::Version(v) if v == b)).count()
}

const TRAIN: &str = r#"
fn train(net: &Net, xs: &[Tensor], opt: &mut Opt) -> Vec<f32> {
    let mut log = Vec::new();
    let mut total = 0.0;
    for x in xs {
        let out = net.forward(x)?;
        let loss = out.mean_all()?;
        loss.backward()?;
        opt.step()?;
        let kept = out.detach();
        log.push(loss.to_scalar::<f32>()?);
        total += 1.0;
        let _ = kept;
    }
    log
}
"#;

#[test]
fn bindings_get_a_version_per_write_and_a_merge_at_the_loop() {
    let gs = graphs("candle", TRAIN);
    let g = &gs[0];
    assert_eq!(g.name(), "train");
    // `let`, the push inside the loop, and nothing else: the loop's end flows back to the start.
    assert_eq!(versions(g, binding(g, "log")), 2);
    assert_eq!(g.bindings[binding(g, "xs")].kind, BindingKind::Param);
    assert!(g.bindings[binding(g, "total")].host, "a number literal makes a host binding");
}

#[test]
fn taint_starts_at_forward_passes_and_stops_at_cuts() {
    let gs = graphs("candle", TRAIN);
    let g = &gs[0];
    let carries = |name: &str| carries_graph(g, name);
    assert!(carries("out") && carries("loss"));
    assert!(!carries("kept"), "detach cuts the graph");
    assert!(!carries("log"), "a host scalar is pushed");
}

#[test]
fn the_loop_that_runs_backward_is_the_iteration_and_outer_locals_outlive_it() {
    let gs = graphs("candle", TRAIN);
    let g = &gs[0];
    assert_eq!(g.loops.len(), 1);
    assert!(g.loops[0].runs_backward);
    let it = g.iteration_of(Some(0)).expect("a training iteration");
    assert_eq!(it, Iteration::Loop(0));
    assert!(g.outlives(binding(g, "log"), it));
    assert!(g.outlives(binding(g, "xs"), it), "parameters outlive every iteration");
    assert!(!g.outlives(binding(g, "kept"), it));
    assert_eq!(g.iteration_of(None), None, "the body outside the loop runs no backward");
}

#[test]
fn a_step_function_is_one_iteration_per_call_and_self_outlives_it() {
    let src = r#"
impl Trainer {
    fn step(&mut self, x: &Tensor) {
        let loss = self.net.forward(x).mean(Kind::Float);
        loss.backward();
        self.last = loss;
    }
}
"#;
    let gs = graphs("tch", src);
    let g = &gs[0];
    assert_eq!(g.name(), "Trainer::step");
    let it = g.iteration_of(None).expect("the body runs backward");
    assert_eq!(it, Iteration::Call);
    let last = binding(g, "self.last");
    assert!(g.outlives(last, it));
    let stored = g.stores().find(|&(_, _, t, how, _)| g.binding_of(t) == Some(last) && how == Store::Assign);
    let (_, value, ..) = stored.expect("the assignment is a store");
    assert!(g.graph[value].taint.has(Taint::GRAPH));
    let (src_binding, _) = g.graph_source(value, Some(last)).expect("the value comes from `loss`");
    assert_eq!(g.bindings[src_binding].name, "loss");
}

#[test]
fn folding_into_an_outer_binding_is_a_fold_store() {
    let src = r#"
fn f(xs: &[Tensor], net: &Net) {
    let mut acc = Tensor::zeros(1);
    for x in xs {
        let l = net.forward(x);
        l.backward();
        acc = acc + l;
    }
}
"#;
    let gs = graphs("tch", src);
    let g = &gs[0];
    let acc = binding(g, "acc");
    assert!(g.stores().any(|(_, _, t, how, _)| how == Store::Fold && g.binding_of(t) == Some(acc)));
    let value = g.stores().find(|s| s.3 == Store::Fold).map(|s| s.1).expect("a fold");
    assert!(g.derives_from(value, acc), "the new sum reads the old one");
}

#[test]
fn crate_names_know_functions_that_return_host_values() {
    let names = super::link::crate_names([r#"
impl Noise {
    pub fn apply<R: Rng + ?Sized>(&self, mean: &[f32], rng: &mut R) -> Vec<f32> { mean.to_vec() }
    fn apply_t(&self, f: impl Fn(&[f32]) -> Tensor) -> (f32, usize) where Self: Sized { (0.0, 0) }
}
impl Net {
    fn forward(&self, x: &Tensor) -> Tensor { x.relu() }
    fn forward_t(&self, x: &Tensor) -> A { A::from(x) }
}
impl Other { fn forward(&self) -> f32 { 0.0 } }
"#]);
    assert!(names.plain_fns.contains("apply"), "Vec<f32> is host data");
    assert!(names.plain_fns.contains("apply_t"), "the `->` inside a parameter's type is not the return");
    assert!(!names.plain_fns.contains("forward_t"), "a generic type may be a tensor");
    assert!(!names.plain_fns.contains("forward"), "one definition returns a tensor");
    assert!(names.fns.contains("forward") && names.fns.contains("forward_t"));
}

#[test]
fn crate_names_know_which_tuple_elements_are_host_values() {
    let names = super::link::crate_names([r#"
async fn init(config: Config) -> anyhow::Result<(Vec<WorkerContext>, usize)> { make() }
fn step<B: Backend>(x: Tensor<B, 2>) -> Result<(Tensor<B, 1>, f32, Vec<u64>), Error> { make() }
fn pair(f: impl Fn(i32) -> (f32, f32)) -> Tensor { make() }
fn both() -> (Tensor, Tensor) { make() }
fn twice() -> (Tensor, f32) { make() }
impl A { fn twice(&self) -> (f32, Tensor) { make() } }
"#]);
    assert_eq!(names.tuple_fns.get("init"), Some(&vec![false, true]));
    assert_eq!(names.tuple_fns.get("step"), Some(&vec![false, true, true]));
    assert!(!names.tuple_fns.contains_key("pair"), "the tuple in a parameter's type is not the return");
    assert!(!names.tuple_fns.contains_key("both"), "no host element");
    assert!(!names.tuple_fns.contains_key("twice"), "definitions that disagree");
}

/// A value typed by a struct of host numbers holds no tensor, whatever it was computed from.
#[test]
fn bindings_typed_by_a_host_struct_are_host() {
    let defs = "pub struct Stats { loss: f32, n: usize }\nfn step() -> Result<(Stats, Tensor)> { todo!() }\nstruct Out { t: Tensor }";
    let src = r#"
fn train(net: &Net, x: &Tensor) {
    let out = net.forward(x)?;
    let stats = Stats::default();
    let typed: Stats = summarize(&out);
    let (batch, graph) = step(&out)?;
    let other = Out::default();
}
"#;
    let gs = graphs_in_crate("candle", defs, src);
    let g = &gs[0];
    let host = |name: &str| g.bindings[binding(g, name)].host;
    assert!(host("stats") && host("typed"), "a host struct's value");
    assert!(!host("other") && !host("out"), "a struct with a tensor field, a tensor");
    let carries = |name: &str| carries_graph(g, name);
    assert!(!carries("typed") && !carries("batch"), "computed from a graph, typed plain");
    assert!(carries("graph"), "the tensor element of the same tuple");
}

#[test]
fn dfdx_forwards_record_a_graph_only_on_a_traced_input() {
    const SRC: &str = r#"
fn step(model: &mut Net, opt: &mut Adam<Net, f32, Cpu>, dev: &Cpu, xs: &[Tensor<Rank2<4, 8>, f32, Cpu>]) {
    let mut grads = model.alloc_grads();
    for x in xs {
        let plain = model.forward(x.clone());
        let traced = model.forward(x.clone().traced(grads));
        let loss = traced.mean();
        grads = loss.backward();
        opt.update(model, &grads).unwrap();
        model.zero_grads(&mut grads);
        let _ = plain;
    }
}
"#;
    let gs = graphs("dfdx", SRC);
    let g = &gs[0];
    let carries = |name: &str| carries_graph(g, name);
    assert!(carries("traced") && carries("loss"));
    assert!(!carries("plain"), "the tape travels in the input: an untraced forward records nothing");
}

#[test]
fn burn_022_a_value_made_with_default_is_not_built_on_the_plain_device() {
    let src = r#"
use burn::prelude::*;
fn main() {
    let device = Device::default().autodiff();
    let model = Net::new(&device);
    let reference = Net::new(&Device::default());
    let mut stats = Stats::default();
    stats.check(&model);
    stats.check(&reference);
}
"#;
    let names = super::link::crate_names([src]);
    let file = syn::parse_file(src).expect("snippet parses");
    let spec = Framework::from_name("burn").expect("registered").spec();
    let gs = function_graphs(&file, spec, true, 0, &names);
    let g = &gs[0];
    let inert = |name: &str| {
        let b = binding(g, name);
        g.graph.node_indices().any(|n| {
            g.binding_of(n) == Some(b)
                && g.graph
                    .neighbors_directed(n, petgraph::Direction::Incoming)
                    .any(|m| matches!(g.graph[m].kind, NodeKind::Value(super::graph::Producer::InertModel)))
        })
    };
    assert!(inert("reference"), "built on `Device::default()`: the plain device");
    assert!(!inert("model"), "built on the autodiff device");
    // `Stats::default()` is handed no device: it is not a model made on the plain one.
    assert!(!inert("stats"));
}

#[test]
fn a_crate_method_named_like_a_module_application_is_the_crates_own() {
    // candle's `xs.apply(&net)` runs `net`; `rot.apply(&x)` on the crate's `Rotation` is its
    // method, a computation on its input that records only what that input records.
    let defs = r#"
pub struct Rotation { angle: f64 }
impl Rotation {
    pub fn apply(&self, x: &Tensor) -> Result<Tensor> { x.affine(self.angle, 0.0) }
}
"#;
    let src = r#"
fn sample(net: &Net, rot: &Rotation, x: &Tensor) -> Result<()> {
    let turned = rot.apply(x)?;
    let ran = x.apply(net)?;
    Ok(())
}
"#;
    let gs = graphs_in_crate("candle", defs, src);
    let g = &gs[0];
    assert!(!carries_graph(g, "turned"), "the crate's method on its own type");
    assert!(carries_graph(g, "ran"), "a module run on a tensor");
    // In burn, which has no `xs.apply(&net)`, neither is a forward pass.
    let gs = graphs("burn", src);
    assert!(!carries_graph(&gs[0], "ran"));
}
