//! The crate-level pass: calls resolved to the crate's functions and a summary per function,
//! applied back to the callers' reference graphs so that every rule follows calls.
//!
//! A summary says whether a function returns a graph-carrying value, runs backward, steps an
//! optimizer, clears gradients, and which of its parameters it stores where they outlive the call
//! (a `self` field, or another parameter such as `&mut Vec<Tensor>`). At each call site whose
//! callee resolves to one function of the crate:
//! - a graph-carrying return becomes a graph-carrying call result,
//! - a callee that runs backward makes the loops around the call run backward (and counts as a
//!   backward call of the caller), likewise for steps and clears,
//! - a stored parameter becomes a "stored into" edge from the argument into the receiver (or the
//!   other argument), labelled with the store inside the callee.
//!
//! Summaries are iterated to a fixpoint, so chains of calls (two or more deep) are followed.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

use petgraph::Direction;
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;

use super::graph::{
    BindingKind, Edge, FnModel, NodeKind, Span, StateAt, Store, Taint, Through, TrainingCall, TrainingCallKind,
};
use super::rust;
use crate::source::SourceFile;

/// Where a function is: file index and function index in that file.
type FnId = (usize, usize);

/// What a function does, as seen by its callers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    returns_graph: bool,
    /// The result certainly carries no graph (declared host type, or computed without one).
    result_plain: bool,
    /// Only host data leaves the call (see [`VocabCall::host_result`]).
    returns_host: bool,
    runs_backward: bool,
    /// It runs backward, or may (a call of it reaches a backward on some of its candidates).
    may_run_backward: bool,
    /// Every backward it runs waits for a collection to reach a size (a warm-up).
    backward_waits: bool,
    /// ... and every size it waits for is brief (one batch, or a handful of items).
    backward_waits_briefly: bool,
    steps: bool,
    clears: bool,
    /// The callee's framework: its steps and clears only mean something to a caller of the same
    /// framework (a burn helper's `optimizer.step` is not a tch `opt.step()`).
    framework: Option<crate::frameworks::Framework>,
    /// Runs a forward pass on an autodiff model (burn) and no backward: each call grows the
    /// autodiff graph store until some later backward sweeps it.
    forwards_autodiff: bool,
    /// Runs a forward pass and no backward, on whatever backend it is given (`impl<B: Backend>`):
    /// a forward on an autodiff model when an autodiff caller hands it one.
    forwards: bool,
    /// Generic (type parameters of its own or of its impl): what backend it runs on can come
    /// from the caller. A function with none runs on the backends its own types name.
    generic: bool,
    /// Every such forward runs only once the crate's warm-up is over (see `VocabCall::waits`).
    forwards_wait: bool,
    /// Every such forward runs only for some values of one parameter (`if explore { .. }`,
    /// `match mode { Mode::Explore => .. }`): a call that hands it another constant runs none.
    forward_gate: Option<super::graph::ValueGate>,
    /// Every such forward runs in a loop of the function (or of one it calls) that runs no
    /// backward: the function's own finding covers it (`fn play_game<B>(..) { loop { pick() } }`).
    forwards_in_own_loop: bool,
    /// Where its first such forward runs (file, line; through the functions it calls).
    forward_at: Option<super::graph::At>,
    /// The call through which this function reaches that forward, when it is not its own.
    forward_via: Option<super::graph::At>,
    /// A model's own method that returns what it computes and runs its forwards in a loop of
    /// its own, not over the model's parts (`fn sample(&self, n) -> Tensor<B, 4> { for t in
    /// (0..n).rev() { z = step(self.unet.forward(z, t)) } }`): left to its callers, for whom
    /// the call is the loop.
    samples: bool,
    /// Pushes a graph-carrying value into a field of `self` (a buffer of outputs).
    buffers_outputs: bool,
    /// The parameters, a bit each, it pushes a graph-carrying value into (`buf.log_probs.push(logp)`
    /// with `buf: &mut Episode<B>`).
    buffers_outputs_in: u64,
    /// The fields of `self` it pushes or folds graph-carrying values into (`self.history`).
    kept_fields: Vec<String>,
    /// Returns the output of a forward pass it runs (`fn predict_noise(&self, x) -> Result<Tensor>
    /// { self.up.forward(..) }`): a call of it is a forward pass of its receiver.
    returns_forward: bool,
    /// Parameters it calls in a loop that runs no backward (`fn evaluate_episode<P: FnMut(&O) ->
    /// A>(env: &mut E, policy: &mut P) { while !done { let a = policy(&obs); .. } }`).
    calls_params_in_loop: Vec<usize>,
    /// Parameters it records tensor operations on, a bit each (see [`FnModel::param_ops`]).
    param_ops: u64,
    /// Parameters the function stores where they outlive the call.
    stores: Vec<StoredParam>,
    /// Fields of `self` it empties on some path (`self.sum.take()`, `self.buf.clear()`,
    /// directly or through a method it calls on `self`), by name (`self.sum`).
    empties: Vec<String>,
    /// What each element of the tuple it returns carries, where every return is written as a
    /// tuple (see [`FnModel::return_elems`]).
    elems: Option<Vec<ElemSummary>>,
}

/// What one element of a returned tuple carries.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct ElemSummary {
    /// A graph of the callee's own (the output of a forward pass it runs), or what computes on
    /// trainable weights or parameter values.
    graph: bool,
    /// The parameters (a bit each) it is computed from along values that keep a graph: what a
    /// caller hands there, it hands back.
    params: u64,
    /// Computed from fields of the receiver likewise.
    receiver: bool,
}

/// A parameter a function stores where it outlives the call.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredParam {
    param: usize,
    /// The store (or the call that stores) in the function.
    span: Span,
    /// `None` for a `self` field, `Some(j)` for parameter j.
    target: Option<usize>,
    /// `self.history`, `store`.
    target_name: String,
    /// The chain of calls when the store itself happens in a further callee.
    inner: Option<Through>,
    /// How the value is stored (`self.total = self.total + x` folds, `self.history.push(x)`
    /// pushes), seen the same way at the call site.
    how: Store,
    /// The parameter itself is stored, moved, copied or wrapped (see `Through::whole`).
    whole: bool,
}

impl Summary {
    /// What two candidate callees both do (an ambiguous call does only what every candidate does).
    /// A backward that some candidates run is a backward the call may run (`agent.learn(..)`,
    /// one agent's `learn` backpropagating beside the trait's no-op default).
    fn meet(&self, other: &Summary) -> Summary {
        Summary {
            returns_graph: self.returns_graph && other.returns_graph,
            result_plain: self.result_plain && other.result_plain,
            returns_host: self.returns_host && other.returns_host,
            runs_backward: self.runs_backward && other.runs_backward,
            may_run_backward: self.may_run_backward || other.may_run_backward,
            backward_waits: self.backward_waits && other.backward_waits,
            backward_waits_briefly: self.backward_waits_briefly && other.backward_waits_briefly,
            steps: self.steps && other.steps,
            clears: self.clears && other.clears,
            framework: if self.framework == other.framework { self.framework } else { None },
            forwards_autodiff: self.forwards_autodiff && other.forwards_autodiff,
            forwards: self.forwards && other.forwards,
            generic: self.generic && other.generic,
            forwards_wait: self.forwards_wait && other.forwards_wait,
            forward_gate: if self.forward_gate == other.forward_gate { self.forward_gate.clone() } else { None },
            forwards_in_own_loop: self.forwards_in_own_loop && other.forwards_in_own_loop,
            forward_at: if self.forward_at == other.forward_at { self.forward_at.clone() } else { None },
            forward_via: if self.forward_at == other.forward_at && self.forward_via == other.forward_via {
                self.forward_via.clone()
            } else {
                None
            },
            samples: self.samples && other.samples,
            buffers_outputs: self.buffers_outputs && other.buffers_outputs,
            buffers_outputs_in: self.buffers_outputs_in & other.buffers_outputs_in,
            kept_fields: self.kept_fields.iter().filter(|f| other.kept_fields.contains(f)).cloned().collect(),
            returns_forward: self.returns_forward && other.returns_forward,
            calls_params_in_loop: self
                .calls_params_in_loop
                .iter()
                .filter(|p| other.calls_params_in_loop.contains(p))
                .copied()
                .collect(),
            param_ops: self.param_ops & other.param_ops,
            elems: match (&self.elems, &other.elems) {
                (Some(a), Some(b)) if a.len() == b.len() => Some(
                    a.iter()
                        .zip(b)
                        .map(|(a, b)| ElemSummary {
                            graph: a.graph && b.graph,
                            params: a.params | b.params,
                            receiver: a.receiver || b.receiver,
                        })
                        .collect(),
                ),
                _ => None,
            },
            stores: self
                .stores
                .iter()
                .filter(|a| other.stores.iter().any(|b| a.param == b.param && a.target == b.target))
                .cloned()
                .collect(),
            empties: self.empties.iter().filter(|f| other.empties.contains(f)).cloned().collect(),
        }
    }
}

/// At most this many candidates of one ambiguous call are combined.
const MAX_CANDIDATES: usize = 8;

/// Maximum rounds of the summary fixpoint (each round follows calls one level deeper).
const MAX_ROUNDS: usize = 6;

/// Runs the crate-level pass over the graphs of all files of a crate and re-propagates taint.
/// `autodiff_fields`: the crate's struct fields whose declared type names an autodiff backend
/// (type, field), from the type declarations.
pub fn link(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    autodiff_fields: &[(String, String)],
    module_types: &[String],
    field_types: &[(String, String, String)],
    generic_fields: &crate::type_graph::GenericFields,
    alias_names: &HashSet<String>,
) {
    let resolved = link_calls(files, autodiff_fields, module_types, field_types, generic_fields, alias_names);
    // Needs no call resolved: a copy may be pushed where it is made.
    mark_kept_copies(files, &resolved, module_types, field_types);
}

/// Resolves the calls of the crate and applies what they do (see [`link`]); the rows of the
/// calls resolved, the instances' included.
fn link_calls(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    autodiff_fields: &[(String, String)],
    module_types: &[String],
    field_types: &[(String, String, String)],
    generic_fields: &crate::type_graph::GenericFields,
    alias_names: &HashSet<String>,
) -> Vec<(FnId, usize, Vec<FnId>)> {
    mark_autodiff_fields(files, autodiff_fields);
    mark_untracked_mappers(files);
    follow_inert_fields(files);
    mark_apart_fields(files);
    // Needs no call resolved: a rollout and the update that drains its buffer may call nothing
    // of the crate.
    mark_owner_emptied(files);
    // A crate fact every function may ask: does any function make a module untracked?
    let untracks = files.iter().any(|(_, graphs)| graphs.iter().any(|g| g.untracks_models));
    for g in files.iter_mut().flat_map(|(_, graphs)| graphs.iter_mut()) {
        g.crate_untracks_models = untracks;
    }
    // Types of the crate with a forward-named method, or declared modules (`#[derive(Module)]`),
    // are models: their methods are model code.
    let models = model_types(files, module_types);
    for g in files.iter_mut().flat_map(|(_, graphs)| graphs.iter_mut()) {
        g.owner_is_model = g.owner.as_ref().is_some_and(|o| models.binary_search(o).is_ok());
    }
    let index = Index::new(files, alias_names, field_types);
    if index.by_name.is_empty() {
        return Vec::new();
    }
    mark_size_gates(files, &index);
    // Calls through a type parameter that reach no function of the crate (see
    // `FnModel::opaque_calls`).
    let mut opaque: Vec<(FnId, Option<super::graph::LoopId>)> = Vec::new();
    let resolved = resolve_sites(
        files,
        &index,
        |g| &g.call_sites,
        |id, site| {
            if index.receiver_generic(files, id, site) {
                opaque.push((id, site.in_loop));
            }
        },
    );
    for ((fi, gi), in_loop) in opaque {
        files[fi].1[gi].opaque_calls.push(in_loop);
    }
    mark_external_constructors(files, alias_names);
    if resolved.is_empty() {
        return Vec::new();
    }
    mark_plain_results(files, &resolved);
    // Losses handed to a callee first: a result handed to `trainer.update(&mut opt, loss)`,
    // which runs the backward, is backpropagated.
    mark_handed_losses(files, &resolved);
    mark_backpropagated_results(files, &resolved);
    note_bool_args(files, &resolved);
    follow_inert_models(files, &resolved);
    follow_inert_fields(files);
    mark_grad_off(files, &resolved);
    instantiate_autodiff(files, &resolved);
    // Methods of a generic type called on a field that names its type arguments (`self.session
    // .act(..)` with `session: Session<E, DqnAgent<B>>`): an instance of each, whose calls through
    // the type parameter reach the named type's impl. Summaries flow through the instance
    // (`for_summaries`); marks reach both (`for_marks`). The rules read instances too, and keep
    // what only an instance reports (see `Linter::check_functions`).
    let (for_summaries, for_marks) = specialize(files, &index, &resolved, generic_fields);
    let resolved_all = for_marks.as_deref().unwrap_or(&resolved);
    let sum_rows = for_summaries.as_deref().unwrap_or(&resolved);

    // Only callees need summaries; only callers of a changed summary need re-propagation.
    let mut callees: Vec<FnId> = sum_rows.iter().flat_map(|r| r.2.iter().copied()).collect();
    callees.sort_unstable();
    callees.dedup();
    // Summaries beside `callees` (sorted): looked up by binary search, no hashing.
    let mut summaries: Vec<Option<Summary>> = vec![None; callees.len()];
    // Calls handing a closure or a function to a function that calls a parameter (usually none).
    let callback_sites: Vec<usize> = sum_rows
        .iter()
        .enumerate()
        .filter(|(_, (caller, ci, candidates))| {
            let site = &files[caller.0].1[caller.1].call_sites[*ci];
            !site.closure_args.is_empty() && candidates.iter().any(|c| !files[c.0].1[c.1].param_calls.is_empty())
        })
        .map(|(k, _)| k)
        .collect();
    settle_summaries(files, sum_rows, &callees, &mut summaries, &callback_sites);
    mark_kept_for_good(files, sum_rows, |c| callees.binary_search(c).ok().and_then(|k| summaries[k].as_ref()));
    // After the summaries: a loop whose backward runs inside a call (`agent.update(..)`) is a
    // training loop too, and what it calls runs once per step.
    mark_per_step(files, resolved_all);
    mark_per_iteration(files, resolved_all);
    // Models made trainable through calls (`langevin_step(net, &x, ..)` handed the trainable
    // model `main` built) make what those functions return graph-carrying: summarize again.
    if follow_trainable_models(files, resolved_all) {
        settle_summaries(files, sum_rows, &callees, &mut summaries, &callback_sites);
    }
    // After the summaries: what a push keeps is graph-carrying once calls of the crate are known.
    mark_pushed_logs(files);
    // Only where a model is built from trainable variables can a cache chain graphs (candle),
    // or where every forward outside a no-grad region records one (tch), or (burn of every
    // release, and dfdx whose taped inputs carry the graph) where code other than a test
    // trains: a state kept there of what no backward consumes.
    // (Integration tests under `tests/` are not training code.)
    if files.iter().any(|(file, graphs)| {
        let tests = file.path.components().any(|c| c.as_os_str() == "tests");
        graphs.iter().any(|g| {
            !g.trainable_seeds.is_empty()
                || (g.spec.global_grad_mode && !g.grad_off)
                || (g.framework_known
                    && (g.spec.graph_swept_by_backward || g.spec.graph_from_input_tape || g.spec.autodiff_by_type)
                    && !g.calls.is_empty()
                    && !g.is_test()
                    && !tests)
        })
    }) {
        let forwards = resolve_sites(files, &index, |g| &g.forward_sites, |_, _| {});
        mark_field_resets(files, &resolved);
        mark_stateful_calls(files, &index, &resolved, &forwards);
        mark_disabled_lent_caches(files, &resolved);
    }
    for_marks.unwrap_or(resolved)
}

/// The crate's models: types with a forward-named method, and declared modules
/// (`#[derive(Module)]`); sorted.
fn model_types(files: &[(Arc<SourceFile>, Vec<FnModel>)], module_types: &[String]) -> Vec<String> {
    let mut models: Vec<String> = files
        .iter()
        .flat_map(|(_, graphs)| graphs.iter())
        .filter(|g| g.ident.starts_with("forward") || g.spec.is_forward_method(&g.ident))
        .filter_map(|g| g.owner.clone())
        .chain(module_types.iter().cloned())
        .collect();
    models.sort_unstable();
    models.dedup();
    models
}

/// What the rule on kept copies asks (see [`FnModel::copy_of`] and
/// [`FnModel::pushes_never_emptied`]): the bindings that hold a whole model or gradients, the
/// crate's calls that return a copy of one, and the pushes into collections that nothing in the
/// crate ever empties.
fn mark_kept_copies(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    rows: &[(FnId, usize, Vec<FnId>)],
    module_types: &[String],
    field_types: &[(String, String, String)],
) {
    let wanted = |g: &FnModel| {
        g.framework_known && !g.is_test && (g.spec.copies_keep_weights || !g.spec.grad_store_types.is_empty())
    };
    let pushes = |g: &FnModel| g.stores().any(|(_, _, _, how, _)| how == Store::Push);
    if !files.iter().flat_map(|(_, graphs)| graphs.iter()).any(|g| wanted(g) && pushes(g)) {
        return;
    }
    // Models: the crate's types with a forward-named method, and its declared modules.
    let models = model_types(files, module_types);
    let is_model = |t: &str| models.binary_search_by(|m| m.as_str().cmp(t)).is_ok();
    // Fields that hold a model, by owner: a method of the owner runs a forward pass on it, or it
    // is declared with a model type. Fields declared with a gradient store type.
    let mut model_fields: HashSet<(String, String)> = HashSet::default();
    let mut typed_fields: HashMap<(String, String), String> = HashMap::default();
    for g in files.iter().flat_map(|(_, graphs)| graphs.iter()) {
        let Some(owner) = g.owner.as_deref() else { continue };
        for n in g.graph.node_indices() {
            if let NodeKind::Value(super::graph::Producer::Forward { receiver: Some(r) }) = g.graph[n].kind
                && let Some(b) = root_binding(g, r)
                && g.bindings[b].kind == BindingKind::SelfField
            {
                model_fields.insert((owner.to_string(), g.bindings[b].name.clone()));
            }
        }
    }
    for (owner, field, ty) in field_types {
        let key = (owner.clone(), format!("self.{field}"));
        if is_model(ty) {
            model_fields.insert(key.clone());
        }
        typed_fields.insert(key, ty.clone());
    }
    for g in files.iter_mut().flat_map(|(_, graphs)| graphs.iter_mut()).filter(|g| wanted(g)) {
        // Bindings a forward pass runs on here.
        let receivers: Vec<usize> = g
            .graph
            .node_indices()
            .filter_map(|n| match g.graph[n].kind {
                NodeKind::Value(super::graph::Producer::Forward { receiver: Some(r) }) => root_binding(g, r),
                _ => None,
            })
            .collect();
        let owner = g.owner.clone().unwrap_or_default();
        let mut found = Vec::new();
        for (b, binding) in g.bindings.iter().enumerate() {
            let field = (binding.kind == BindingKind::SelfField).then(|| (owner.clone(), binding.name.clone()));
            let ty =
                binding.ty.as_deref().or_else(|| field.as_ref().and_then(|f| typed_fields.get(f)).map(String::as_str));
            let what = if ty.is_some_and(|t| g.spec.grad_store_types.contains(&t)) {
                Some(super::graph::Copied::Gradients)
            } else if g.spec.copies_keep_weights
                && (ty.is_some_and(is_model)
                    || field.as_ref().is_some_and(|f| model_fields.contains(f))
                    || receivers.contains(&b))
            {
                Some(super::graph::Copied::Model)
            } else {
                None
            };
            if let Some(what) = what {
                found.push((b, what));
            }
        }
        if !found.is_empty() {
            g.copies.get_or_insert_with(Default::default).copy_bindings = found;
        }
        if !g.grad_reads.is_empty() {
            let reads: Vec<_> = g.grad_reads.iter().map(|&n| (n, super::graph::Copied::Gradients)).collect();
            g.copies.get_or_insert_with(Default::default).copy_results.extend(reads);
        }
    }
    // The crate's calls that return a copy (`self.learner.snapshot()`), two calls deep.
    for _ in 0..2 {
        let mut results = Vec::new();
        for (caller, ci, candidates) in rows {
            let returned = |c: &FnId| {
                let g = &files[c.0].1[c.1];
                g.returns.iter().find_map(|&r| g.copy_of(r)).map(|(what, _)| what)
            };
            let Some(first) = candidates.first() else { continue };
            let Some(what) = returned(first) else { continue };
            if candidates[1..].iter().all(|c| returned(c).is_some()) {
                results.push((*caller, files[caller.0].1[caller.1].call_sites[*ci].result, what));
            }
        }
        for ((fi, gi), n, what) in results {
            let g = &mut files[fi].1[gi];
            let c = g.copies.get_or_insert_with(Default::default);
            if !c.copy_results.iter().any(|&(r, _)| r == n) {
                c.copy_results.push((n, what));
            }
        }
    }
    // Pushes into collections nothing empties.
    let keyed: HashSet<(std::path::PathBuf, super::graph::Span)> = files
        .iter()
        .flat_map(|(file, graphs)| {
            graphs.iter().flat_map(move |g| {
                g.copies.iter().flat_map(|c| c.keyed_pushes.iter()).map(|s| (file.path.clone(), s.clone()))
            })
        })
        .collect();
    // Handles of the crate's own naming (`type GradQueue = Rc<RefCell<VecDeque<..>>>`) that some
    // function empties through a binding of that type (`queue.borrow_mut().drain(..)`): a field
    // of that type is a handle on a collection that holder empties.
    let shared_emptied: HashSet<String> = files
        .iter()
        .flat_map(|(_, graphs)| graphs.iter())
        .flat_map(|g| {
            g.bindings.iter().enumerate().filter_map(move |(b, binding)| {
                let ty = binding.ty.as_deref().filter(|t| !binding.ty_guessed && !rust::is_std_collection(t))?;
                let emptied = g.shrunk.contains(&b) || g.cleared.iter().any(|c| g.binding_of(c.version) == Some(b));
                (binding.kind == BindingKind::Local && emptied).then(|| ty.to_string())
            })
        })
        .collect();
    let mut emptied: HashMap<String, Vec<String>> = HashMap::default();
    // Whether a method of `owner` empties its field `field`, or the field is a handle on a
    // collection another holder empties.
    let mut emptied_field = |files: &[(Arc<SourceFile>, Vec<FnModel>)], owner: &str, field: &str| {
        typed_fields.get(&(owner.to_string(), field.to_string())).is_some_and(|t| shared_emptied.contains(t))
            || emptied
                .entry(owner.to_string())
                .or_insert_with(|| emptied_by_type(files, owner))
                .iter()
                .any(|f| f == field)
    };
    // Lent collections, by callee: (parameter, what, the callee's store span and its chain).
    type Lends = Vec<(usize, super::graph::Copied, super::graph::Span, Option<Through>)>;
    let mut lent: HashMap<FnId, Lends> = HashMap::default();
    for fi in 0..files.len() {
        for gi in 0..files[fi].1.len() {
            let g = &files[fi].1[gi];
            if !wanted(g)
                || !pushes(g)
                || g.copies.as_ref().is_none_or(|c| c.copy_bindings.is_empty() && c.copy_results.is_empty())
            {
                continue;
            }
            let mut kept = Vec::new();
            let mut lends = Vec::new();
            for (edge, value, target, how, span) in g.stores() {
                if how != Store::Push {
                    continue;
                }
                let Some(b) = g.binding_of(target) else { continue };
                let through = g.through(edge);
                let innermost = through.and_then(|t| t.hops().last());
                let keyed_here = match innermost {
                    Some(hop) => keyed.contains(&(hop.file().to_path_buf(), hop.span().clone())),
                    None => g.copies.as_ref().is_some_and(|c| c.keyed_pushes.contains(span)),
                };
                if keyed_here {
                    continue;
                }
                // A field of the callee's type that some method of that type empties.
                if let Some(hop) = innermost
                    && hop.target().starts_with("self.")
                {
                    let Some((owner, _)) = hop.callee().rsplit_once("::") else { continue };
                    if emptied_field(files, owner, hop.target()) {
                        continue;
                    }
                }
                match g.bindings[b].kind {
                    BindingKind::SelfField | BindingKind::Local => {
                        if !empties(g, b, &mut |owner, field| emptied_field(files, owner, field)) {
                            kept.push(edge);
                        }
                    }
                    // What a caller lends: judged at the call (a copy of this function's own).
                    BindingKind::Param => {
                        if through.is_none_or(|t| t.whole)
                            && let Some((what, _)) = g.copy_of(value)
                            && let Some(j) = g.params.iter().position(|p| p.and_then(|p| g.binding_of(p)) == Some(b))
                        {
                            lends.push((j, what, span.clone(), through.cloned()));
                        }
                    }
                    BindingKind::Global => {}
                }
            }
            if let Some(c) = files[fi].1[gi].copies.as_deref_mut() {
                c.unemptied_pushes = kept;
            }
            if !lends.is_empty() {
                lent.insert((fi, gi), lends);
            }
        }
    }
    if lent.is_empty() {
        return;
    }
    let mut found = Vec::new();
    for (caller, ci, candidates) in rows {
        let [callee] = candidates.as_slice() else { continue };
        let Some(lends) = lent.get(callee) else { continue };
        let g = &files[caller.0].1[caller.1];
        let c = &files[callee.0].1[callee.1];
        let site = &g.call_sites[*ci];
        for (j, what, store_span, inner) in lends {
            let Some(&read) = site.args.get(*j).and_then(|a| a.reads.first()) else { continue };
            let Some(b) = root_binding(g, read) else { continue };
            if !matches!(g.bindings[b].kind, BindingKind::SelfField | BindingKind::Local)
                || empties(g, b, &mut |owner, field| emptied_field(files, owner, field))
            {
                continue;
            }
            let file = &files[callee.0].0;
            let target =
                c.params[*j].and_then(|p| c.binding_of(p)).map_or_else(String::new, |p| c.bindings[p].name.clone());
            let through = Through {
                callee: c.name(),
                file: file.path.clone(),
                line: file.line_col(store_span.start).0,
                span: store_span.clone(),
                target,
                inner: inner.clone().map(Box::new),
                whole: true,
            };
            found.push((
                *caller,
                super::graph::LentCopy {
                    what: *what,
                    binding: b,
                    span: site.span.clone(),
                    in_loop: site.in_loop,
                    through,
                },
            ));
        }
    }
    for ((fi, gi), l) in found {
        files[fi].1[gi].copies.get_or_insert_with(Default::default).lent_copies.push(l);
    }
}

/// Whether `g` empties, shrinks or replaces its binding `b` (a local), or a method of its
/// type does (a field of `self`, asked of `emptied_field(owner, field)`).
fn empties(g: &FnModel, b: usize, emptied_field: &mut impl FnMut(&str, &str) -> bool) -> bool {
    match g.bindings[b].kind {
        BindingKind::SelfField => g.owner.as_deref().is_none_or(|owner| emptied_field(owner, &g.bindings[b].name)),
        BindingKind::Local => {
            g.shrunk.contains(&b)
                || g.cleared.iter().any(|c| g.binding_of(c.version) == Some(b))
                || g.emptied_by_calls.iter().any(|c| c.binding == b)
                || g.stores().any(|(_, _, t, how, _)| how == Store::Assign && g.binding_of(t) == Some(b))
        }
        BindingKind::Param | BindingKind::Global => true,
    }
}

/// How deep instances of instances go (`self.session.act(..)` → `self.inner.act(..)` → ..).
const INSTANCE_DEPTH: usize = 3;

/// What an instance knows of its type parameters: the crate type behind a field of `self`
/// typed by one (`agent` of `Session<E, A>` is `DqnAgent`), or behind a parameter typed by one
/// (`agent: &mut A` of `fn run<A: Agent>` handed a `DqnAgent`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Named {
    fields: Vec<(String, String)>,
    params: Vec<(usize, String)>,
}

/// Instances of generic code for calls that name its type arguments: a copy of the callee,
/// appended to its file's functions, whose calls through a type parameter reach only the named
/// type's impls (the crate's other impls of the trait are not behind it).
/// - a method of a generic type called on a field whose declared type names the arguments
///   (`self.session.act(&obs)` with `session: Session<E, DqnAgent<B>>`, where `Session::act`
///   calls `self.agent.act(obs)` on `agent: A`);
/// - a generic function handed a value of a known type where a parameter is typed by its type
///   parameter (`run(&mut agent, ..)` with `let mut agent = DqnAgent::new(..)` and `fn
///   run<A: Agent>(agent: &mut A, ..)` calling `agent.act(..)`).
///
/// Returns the rows for summaries (the call resolved to the instance, and the instance's own
/// calls) and for marks (the original rows, the call's row to the instance, and the instance's
/// rows); `None` when nothing is instantiated.
#[allow(clippy::type_complexity)]
fn specialize(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    index: &Index,
    resolved: &[(FnId, usize, Vec<FnId>)],
    generic: &crate::type_graph::GenericFields,
) -> (Option<Vec<(FnId, usize, Vec<FnId>)>>, Option<Vec<(FnId, usize, Vec<FnId>)>>) {
    // The field of `owner` typed by its k-th type parameter, and the arguments a field names.
    let param_of = |owner: &str, field: &str| {
        let from = generic.params.partition_point(|(o, _, _)| o.as_str() < owner);
        generic.params[from..].iter().take_while(|(o, _, _)| o == owner).find(|(_, f, _)| f == field).map(|e| e.2)
    };
    let args_of = |owner: &str, field: &str| {
        let from = generic.args.partition_point(|(o, _, _, _)| o.as_str() < owner);
        generic.args[from..]
            .iter()
            .take_while(|(o, _, _, _)| o == owner)
            .find(|(_, f, _, _)| f == field)
            .map(|(_, _, ty, args)| (ty.as_str(), args.as_slice()))
    };
    // The parameter a call through a type parameter is made on (`agent.act(..)` with `agent:
    // &mut A`, `A: Agent` a trait of the crate; or `agent: &mut impl Agent`).
    let generic_param = |g: &FnModel, site: &super::graph::CallSite| {
        if !(site.method && (site.receiver_generic || site.receiver_dyn)) {
            return None;
        }
        let b = g.binding_of(site.receiver?)?;
        g.params.iter().position(|q| q.and_then(|q| g.binding_of(q)) == Some(b))
    };
    // The type named for `site`'s receiver in an instance of `ty` that knows `named`.
    let narrowed = |g: &FnModel, ty: Option<&str>, site: &super::graph::CallSite, named: &Named| -> Option<String> {
        if let (Some(ty), Some(f)) = (ty, site.receiver_field.as_deref())
            && site.method
            && site.receiver_field_owner.is_none()
            && !named.fields.is_empty()
            && param_of(ty, f).is_some()
        {
            return named.fields.iter().find(|(nf, _)| nf == f).map(|(_, t)| t.clone());
        }
        let p = generic_param(g, site)?;
        named.params.iter().find(|(np, _)| *np == p).map(|(_, t)| t.clone())
    };
    // What a call names of its single callee's type parameters.
    let named_by =
        |files: &[(Arc<SourceFile>, Vec<FnModel>)], caller: FnId, ci: usize, callee: FnId| -> Option<Named> {
            let g = &files[caller.0].1[caller.1];
            let site = &g.call_sites[ci];
            let c = &files[callee.0].1[callee.1];
            let mut named = Named { fields: Vec::new(), params: Vec::new() };
            // `self.session.act(..)` with `session: Session<E, DqnAgent<B>>`.
            if site.method
                && !site.receiver_self
                && let Some(owner) = site.receiver_field_owner.as_deref().or(g.owner.as_deref())
                && let Some(field) = site.receiver_field.as_deref()
                && let Some((ty, args)) = args_of(owner, field)
                && c.owner.as_deref() == Some(ty)
            {
                for s in &c.call_sites {
                    if let Some(f) =
                        s.receiver_field.as_deref().filter(|_| s.method && s.receiver_field_owner.is_none())
                        && let Some(k) = param_of(ty, f)
                        && let Some(Some(t)) = args.get(k)
                        && !named.fields.iter().any(|(nf, _)| nf == f)
                    {
                        named.fields.push((f.to_string(), t.clone()));
                    }
                }
            }
            // `session.act(..)` with `let mut session = Session::new(env, DqnAgent::new(..))` (or a
            // struct literal): the constructor's argument for a parameter named like a field typed
            // by the type parameter (`fn new(env: E, agent: A) -> Self { Self { env, agent } }`).
            if named.fields.is_empty()
                && site.method
                && !site.receiver_self
                && let Some(ty) = c.owner.as_deref()
                && let Some(b) = site.receiver.and_then(|r| g.binding_of(r))
                && g.bindings[b].ty.as_deref() == Some(ty)
                && let Some((_, types)) = g.ctor_types.iter().find(|(x, _)| *x == b)
            {
                let field_of = |key: &str| -> Option<String> {
                    let Some(rest) = key.strip_prefix('#') else { return Some(key.to_string()) };
                    let (i, f) = rest.split_once('@')?;
                    let i: usize = i.parse().ok()?;
                    let ctor = index.by_name.get(&name_key(f))?.iter().find(|id| {
                        let cg = &files[id.0].1[id.1];
                        cg.ident == f && cg.owner.as_deref() == Some(ty) && !cg.has_self
                    })?;
                    let cg = &files[ctor.0].1[ctor.1];
                    let p = cg.params.get(i).copied().flatten().and_then(|q| cg.binding_of(q))?;
                    Some(cg.bindings[p].name.clone())
                };
                for (key, t) in types {
                    if let Some(field) = field_of(key)
                        && param_of(ty, &field).is_some()
                        && !named.fields.iter().any(|(nf, _)| *nf == field)
                    {
                        named.fields.push((field, t.clone()));
                    }
                }
            }
            // `run(&mut agent, ..)` with `agent: DqnAgent<B>` and `fn run<A: Agent>(agent: &mut A)`.
            for s in &c.call_sites {
                let Some(p) = generic_param(c, s) else { continue };
                if named.params.iter().any(|(np, _)| *np == p) {
                    continue;
                }
                let Some(arg) = site.args.get(p) else { continue };
                let [read] = arg.reads.as_slice() else { continue };
                let Some(b) = g.binding_of(*read) else { continue };
                let binding = &g.bindings[b];
                let ty = match (&binding.ty, binding.kind) {
                    (Some(t), _) if !binding.ty_guessed => Some(t.clone()),
                    (_, super::graph::BindingKind::SelfField) => g
                        .owner
                        .as_deref()
                        .and_then(|o| index.declared_field_type(files, caller, o, &binding.name))
                        .filter(|t| *t != crate::type_graph::TYPE_PARAM)
                        .map(str::to_string),
                    _ => None,
                };
                if let Some(t) = ty {
                    named.params.push((p, t));
                }
            }
            if named.fields.is_empty() && named.params.is_empty() {
                return None;
            }
            named.fields.sort_unstable();
            named.params.sort_unstable();
            Some(named)
        };
    let mut instances: Vec<((FnId, Named), FnId)> = Vec::new();
    let mut redirect: Vec<((FnId, usize), FnId)> = Vec::new();
    let mut own_rows: Vec<(FnId, usize, Vec<FnId>)> = Vec::new();
    // (caller, call, callee, what it names, depth) still to instantiate.
    // Whether what `named` says changes where a call of `callee` (or of a method of its type it
    // calls on `self`) goes: several impls answer it, and not all of them are the named type's.
    // Nothing is copied for the rest.
    let narrows = |files: &[(Arc<SourceFile>, Vec<FnModel>)], callee: FnId, named: &Named| {
        let c = &files[callee.0].1[callee.1];
        let ty = c.owner.as_deref();
        let direct = |id: FnId| {
            let g = &files[id.0].1[id.1];
            g.call_sites.iter().any(|site| {
                let Some(t) = narrowed(g, ty, site, named) else { return false };
                let callees = index.resolve(files, id, site);
                let own = callees.iter().filter(|c| files[c.0].1[c.1].owner.as_deref() == Some(t.as_str())).count();
                own > 0 && own < callees.len()
            })
        };
        direct(callee)
            || (!named.fields.is_empty()
                && c.call_sites.iter().filter(|site| site.receiver_self).any(|site| {
                    match index.resolve(files, callee, site).as_slice() {
                        [one] => files[one.0].1[one.1].owner.as_deref() == ty && direct(*one),
                        _ => false,
                    }
                }))
    };
    let mut work: Vec<(FnId, usize, FnId, Named, usize)> = resolved
        .iter()
        .filter_map(|(caller, ci, callees)| match callees.as_slice() {
            [callee] => named_by(files, *caller, *ci, *callee)
                .filter(|n| narrows(files, *callee, n))
                .map(|n| (*caller, *ci, *callee, n, 0)),
            _ => None,
        })
        .collect();
    while let Some((caller, ci, callee, named, depth)) = work.pop() {
        if let Some((_, inst)) = instances.iter().find(|((c, n), _)| *c == callee && *n == named) {
            redirect.push(((caller, ci), *inst));
            continue;
        }
        let ty = files[callee.0].1[callee.1].owner.clone();
        let mut copy = files[callee.0].1[callee.1].clone();
        copy.instance = true;
        let inst = (callee.0, files[callee.0].1.len());
        files[callee.0].1.push(copy);
        instances.push(((callee, named.clone()), inst));
        redirect.push(((caller, ci), inst));
        let g = &files[inst.0].1[inst.1];
        for (k, site) in g.call_sites.iter().enumerate() {
            let mut callees = index.resolve(files, inst, site);
            // `self.agent.act(..)` on `agent: A`, `agent.act(..)` on `agent: &mut A`: the named
            // type's impls only.
            if let Some(t) = narrowed(g, ty.as_deref(), site, &named) {
                let own: Vec<FnId> = callees
                    .iter()
                    .copied()
                    .filter(|c| files[c.0].1[c.1].owner.as_deref() == Some(t.as_str()))
                    .collect();
                if !own.is_empty() {
                    callees = own;
                }
            }
            // `self.helper(..)` of the same type, which may call through the parameter in turn.
            if let [one] = callees.as_slice()
                && depth + 1 < INSTANCE_DEPTH
                && site.receiver_self
                && !named.fields.is_empty()
                && files[one.0].1[one.1].owner == ty
            {
                let fields = Named { fields: named.fields.clone(), params: Vec::new() };
                work.push((inst, k, *one, fields, depth + 1));
            } else if let [one] = callees.as_slice()
                && depth + 1 < INSTANCE_DEPTH
                && let Some(more) = named_by(files, inst, k, *one).filter(|n| narrows(files, *one, n))
            {
                work.push((inst, k, *one, more, depth + 1));
            }
            if !callees.is_empty() {
                own_rows.push((inst, k, callees));
            }
        }
    }
    if instances.is_empty() {
        return (None, None);
    }
    redirect.sort_unstable();
    let to =
        |caller: FnId, ci: usize| redirect.binary_search_by(|(k, _)| k.cmp(&(caller, ci))).ok().map(|i| redirect[i].1);
    let mut sums: Vec<(FnId, usize, Vec<FnId>)> = resolved
        .iter()
        .map(|(caller, ci, callees)| (*caller, *ci, to(*caller, *ci).map_or_else(|| callees.clone(), |i| vec![i])))
        .collect();
    let mut marks: Vec<(FnId, usize, Vec<FnId>)> = resolved.to_vec();
    for ((caller, ci), inst) in &redirect {
        marks.push((*caller, *ci, vec![*inst]));
    }
    // An instance's call to a further instance is redirected too.
    for (caller, ci, callees) in &own_rows {
        sums.push((*caller, *ci, to(*caller, *ci).map_or_else(|| callees.clone(), |i| vec![i])));
        marks.push((*caller, *ci, callees.clone()));
    }
    (Some(sums), Some(marks))
}

/// A library model's cache lent from a parameter (`fn valid_loss(.., cache: &mut Cache)` running
/// `model.forward(&x, 0, cache)`) that every call of the crate hands a cache made disabled
/// (`let mut cache = Cache::new(false, ..)?; valid_loss(.., &mut cache)`): it keeps nothing, so
/// the calls that lend it keep no state.
fn mark_disabled_lent_caches(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    let lends = |g: &FnModel| {
        g.state_calls.iter().any(|c| (c.lent_param.is_some() || c.receiver_param.is_some()) && !c.fresh_each_iteration)
    };
    if !files.iter().any(|(_, graphs)| graphs.iter().any(lends)) {
        return;
    }
    // Per callee and parameter: whether every call hands a disabled cache there, lent (`&mut
    // cache`, `lent` true) or built into the model it hands (`&model` with `Llama::load(vb,
    // &cache, cfg)`).
    let mut disabled: HashMap<(FnId, usize, bool), bool> = HashMap::default();
    for (caller, ci, callees) in resolved {
        let g = &files[caller.0].1[caller.1];
        let site = &g.call_sites[*ci];
        let off = |k: usize, lent: bool| {
            let Some(a) = site.args.get(k) else { return false };
            let b = if lent {
                a.mut_ref
            } else {
                a.reads.first().filter(|_| a.reads.len() == 1).and_then(|&n| g.binding_of(n))
            };
            b.is_some_and(|b| g.disabled_caches.contains(&b))
        };
        for c in callees {
            for s in &files[c.0].1[c.1].state_calls {
                for (k, lent) in s.lent_param.map(|k| (k, true)).into_iter().chain(s.receiver_param.map(|k| (k, false)))
                {
                    *disabled.entry((*c, k, lent)).or_insert(true) &= off(k, lent);
                }
            }
        }
    }
    for ((c, k, lent), off) in disabled {
        if off {
            let at = |s: &super::graph::StateCall| if lent { s.lent_param } else { s.receiver_param };
            for s in files[c.0].1[c.1].state_calls.iter_mut().filter(|s| at(s) == Some(k)) {
                s.fresh_each_iteration = true;
            }
        }
    }
}

/// Forwards made by a method of the crate that keeps their graph-carrying outputs in a field of
/// its receiver (`self.history.push(drift)`, `self.q_ema = Some(ema * 0.99 + q * 0.01)`) that no
/// method of its type ever empties or starts afresh: kept for as long as the receiver lives (see
/// `VocabCall::kept_for_good`). On-policy agents, whose update empties the buffer, are not.
fn mark_kept_for_good<'s>(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    resolved: &[(FnId, usize, Vec<FnId>)],
    summary: impl Fn(&FnId) -> Option<&'s Summary>,
) {
    let mut found: Vec<(FnId, Span, String)> = Vec::new();
    let mut emptied: HashMap<&str, Vec<String>> = HashMap::default();
    for (caller, ci, callees) in resolved {
        let [c] = callees.as_slice() else { continue };
        let Some(s) = summary(c) else { continue };
        if s.kept_fields.is_empty() || s.runs_backward || !s.forwards {
            continue;
        }
        let Some(owner) = files[c.0].1[c.1].owner.as_deref() else { continue };
        let emptied = emptied.entry(owner).or_insert_with(|| emptied_by_type(files, owner));
        if let Some(field) = s.kept_fields.iter().find(|f| !emptied.contains(f)) {
            let site = &files[caller.0].1[caller.1].call_sites[*ci];
            found.push((*caller, site.span.clone(), field.clone()));
        }
    }
    for (caller, span, field) in found {
        let g = &mut files[caller.0].1[caller.1];
        if let Some(e) = g.vocab_calls.iter_mut().find(|e| e.kind == super::graph::CallKind::Forward && e.span == span)
        {
            e.kept_for_good = Some(field);
        }
    }
}

/// The fields of `self` that some method of type `owner` empties or starts afresh
/// ([`FnModel::fields_emptied`]), by every method of the crate's impls of it.
fn emptied_by_type(files: &[(Arc<SourceFile>, Vec<FnModel>)], owner: &str) -> Vec<String> {
    files
        .iter()
        .flat_map(|(_, graphs)| graphs.iter())
        .filter(|g| g.owner.as_deref() == Some(owner))
        .flat_map(|g| g.fields_emptied())
        .collect()
}

/// The functions of the crate for which `keep` holds.
fn methods_where(files: &[(Arc<SourceFile>, Vec<FnModel>)], keep: impl Fn(&FnModel) -> bool) -> Vec<FnId> {
    files
        .iter()
        .enumerate()
        .flat_map(|(fi, (_, graphs))| graphs.iter().enumerate().map(move |(gi, g)| ((fi, gi), g)))
        .filter(|(_, g)| keep(g))
        .map(|(id, _)| id)
        .collect()
}

/// For methods of frameworks whose tensors own their graphs that push a graph-carrying value
/// into a field of `self` in their own training step: the fields some method of their type
/// empties (see `FnModel::pushed_into_unemptied_fields`).
fn mark_pushed_logs(files: &mut [(Arc<SourceFile>, Vec<FnModel>)]) {
    let wanted = methods_where(files, |g| {
        g.has_self
            && g.owner.is_some()
            && g.framework_known
            && !g.spec.graph_swept_by_backward
            && !g.is_test
            && g.stores().any(|(_, value, target, how, _)| {
                how == Store::Push
                    && g.pushed_per_step(value)
                    && g.graph[value].taint.has(Taint::GRAPH)
                    && g.binding_of(target).is_some_and(|b| g.bindings[b].kind == BindingKind::SelfField)
            })
    });
    let mut by_owner: HashMap<String, Arc<[String]>> = HashMap::default();
    for (fi, gi) in wanted {
        let owner = files[fi].1[gi].owner.clone().unwrap_or_default();
        let emptied = match by_owner.get(&owner) {
            Some(e) => e.clone(),
            None => {
                let e: Arc<[String]> = emptied_by_type(files, &owner).into();
                by_owner.insert(owner, e.clone());
                e
            }
        };
        files[fi].1[gi].fields_emptied_by_type = Some(emptied);
    }
}

/// For methods whose loops run no backward and push graph-carrying values into a field of
/// `self` (a rollout filling an on-policy buffer): the loops that push into a field some method
/// of their type empties or starts afresh (`LoopScope::pushes_into_emptied`).
fn mark_owner_emptied(files: &mut [(Arc<SourceFile>, Vec<FnModel>)]) {
    let wanted = methods_where(files, |g| {
        // Only what `autodiff_forward_without_backward` asks (burn); one pass over the stores.
        g.has_self
            && g.owner.is_some()
            && g.spec.graph_swept_by_backward
            && g.vocab_calls.iter().any(|e| {
                e.kind == super::graph::CallKind::Forward && e.in_loop.is_some_and(|l| !g.loops[l].runs_backward)
            })
            && g.stores().any(|(_, value, target, how, _)| {
                how == Store::Push
                    && g.loop_of(value).is_some_and(|l| !g.loops[l].runs_backward)
                    && g.graph[value].taint.has(Taint::GRAPH)
                    && g.binding_of(target).is_some_and(|b| g.bindings[b].kind == BindingKind::SelfField)
            })
    });
    let mut by_owner: HashMap<String, Vec<String>> = HashMap::default();
    for &(fi, gi) in &wanted {
        let owner = files[fi].1[gi].owner.clone().unwrap_or_default();
        if by_owner.contains_key(&owner) {
            continue;
        }
        let emptied = emptied_by_type(files, &owner);
        by_owner.insert(owner, emptied);
    }
    // A field and a part of it name one buffer (`self.storage` pushed into, its
    // `self.storage.log_probs` drained): the model keeps some paths whole.
    let nested = |a: &str, b: &str| a.strip_prefix(b).is_some_and(|r| r.starts_with('.'));
    for (fi, gi) in wanted {
        let g = &mut files[fi].1[gi];
        let Some(emptied) = g.owner.as_ref().and_then(|o| by_owner.get(o)) else { continue };
        let loops: Vec<usize> = (0..g.loops.len())
            .filter(|&l| {
                !g.loops[l].runs_backward
                    && g.loop_pushes_into_self(l, |name| {
                        emptied.iter().any(|e| name == e || nested(name, e) || nested(e, name))
                    })
            })
            .collect();
        for l in loops {
            g.loops[l].pushes_into_emptied = true;
        }
    }
}

/// The functions each of the sites `sites` gives a function may reach: (caller, site index,
/// callees), for the sites that reach one; `unresolved` sees the others.
/// A path call of a type the crate does not define (`Linear::new(w, b)`, `Tensor::cat(..)`) is the
/// framework's or a library's: its result is computed from its arguments, as its graph says, so a
/// state written from it reads back what they read (see `FnModel::computed_from_binding`).
fn mark_external_constructors(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], alias_names: &HashSet<String>) {
    let owners: HashSet<String> =
        files.iter().flat_map(|(_, graphs)| graphs.iter().filter_map(|g| g.owner.clone())).collect();
    for g in files.iter_mut().flat_map(|(_, graphs)| graphs.iter_mut()) {
        for site in &mut g.call_sites {
            let external = !site.method
                && site.qualifier.as_deref().is_some_and(|q| {
                    q != "Self" && q.starts_with(char::is_uppercase) && !owners.contains(q) && !alias_names.contains(q)
                });
            if external {
                site.args_returned = u64::MAX;
            }
        }
    }
}

fn resolve_sites(
    files: &[(Arc<SourceFile>, Vec<FnModel>)],
    index: &Index,
    sites: impl Fn(&FnModel) -> &[super::graph::CallSite],
    mut unresolved: impl FnMut(FnId, &super::graph::CallSite),
) -> Vec<(FnId, usize, Vec<FnId>)> {
    let mut out = Vec::new();
    for (fi, (_, graphs)) in files.iter().enumerate() {
        for (gi, g) in graphs.iter().enumerate() {
            for (ci, site) in sites(g).iter().enumerate() {
                let callees = index.resolve(files, (fi, gi), site);
                if callees.is_empty() {
                    unresolved((fi, gi), site);
                } else {
                    out.push(((fi, gi), ci, callees));
                }
            }
        }
    }
    out
}

/// Functions that keep a graph-carrying value in their state (a key/value cache): their own
/// store ([`FnModel::keeps_graph_state`]), or a call of such a function on their `self` (or a
/// field of it) or with a parameter (`self.layers[i].attn.forward(x, &mut cache)`), to a
/// fixpoint. Every call of one is then recorded in its caller (`FnModel::state_calls`).
/// `forwards` resolves the callers' `forward_sites`.
/// Calls of methods that start fields of their receiver afresh (`agent.start_episode()` with
/// `self.mem = self.core.zero_state(1)?`): cuts of those fields of the receiver, where the call
/// is (see `FnModel::fields_reset`).
fn mark_field_resets(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    narrow_named_resets(files, resolved);
    let mut resets: HashMap<FnId, Vec<String>> = HashMap::default();
    type FieldCut = (super::graph::BindingId, String, Option<super::graph::LoopId>);
    let mut found: Vec<(FnId, FieldCut)> = Vec::new();
    for (caller, ci, callees) in resolved {
        let g = &files[caller.0].1[caller.1];
        let site = &g.call_sites[*ci];
        if !site.method || site.receiver_self || callees.is_empty() {
            continue;
        }
        let Some(b) = site.receiver.and_then(|r| g.receiver_binding(r)) else { continue };
        for field in fields_of_every(files, callees, &mut resets, FnModel::fields_reset) {
            found.push((*caller, (b, field, site.in_loop)));
        }
    }
    for (caller, cut) in found {
        files[caller.0].1[caller.1].field_cuts.push(cut);
    }
    // `self.close_window()`: the fields of `self` every candidate (methods of the caller's own
    // type) cuts are cut where it is called.
    let mut self_cuts: Vec<(FnId, (super::graph::BindingId, Option<super::graph::LoopId>))> = Vec::new();
    let mut cuts: HashMap<FnId, Vec<String>> = HashMap::default();
    for (caller, ci, callees) in resolved {
        let g = &files[caller.0].1[caller.1];
        let site = &g.call_sites[*ci];
        if !site.method || !site.receiver_self || callees.is_empty() {
            continue;
        }
        if callees.iter().any(|c| files[c.0].1[c.1].owner != g.owner) {
            continue;
        }
        for field in fields_of_every(files, callees, &mut cuts, FnModel::fields_cut) {
            let name = format!("self.{field}");
            if let Some(b) = g.bindings.iter().position(|b| b.kind == BindingKind::SelfField && b.name == name) {
                self_cuts.push((*caller, (b, site.in_loop)));
            }
        }
    }
    for (caller, cut) in self_cuts {
        files[caller.0].1[caller.1].self_cuts.push(cut);
    }
    // `self.reset()?` at the top of `fn forward(&mut self, ..)`: what the method keeps in those
    // fields after it starts from nothing on every call.
    let mut entry: Vec<(FnId, (super::graph::BindingId, usize))> = Vec::new();
    for (caller, ci, callees) in resolved {
        let g = &files[caller.0].1[caller.1];
        let site = &g.call_sites[*ci];
        if !site.method
            || !site.receiver_self
            || callees.is_empty()
            || site.in_loop.is_some()
            || !site.path.is_empty()
            || site.closure.is_some()
            || callees.iter().any(|c| files[c.0].1[c.1].owner != g.owner)
        {
            continue;
        }
        for field in fields_of_every(files, callees, &mut resets, FnModel::fields_reset) {
            let name = format!("self.{field}");
            if let Some(b) = g.bindings.iter().position(|b| b.kind == BindingKind::SelfField && b.name == name) {
                entry.push((*caller, (b, site.span.start)));
            }
        }
    }
    for (caller, reset) in entry {
        files[caller.0].1[caller.1].entry_resets.push(reset);
    }
}

/// The fields `of` names for every one of `callees` (memoized per callee in `memo`).
fn fields_of_every(
    files: &[(Arc<SourceFile>, Vec<FnModel>)],
    callees: &[FnId],
    memo: &mut HashMap<FnId, Vec<String>>,
    of: fn(&FnModel) -> Vec<String>,
) -> Vec<String> {
    let mut common: Option<Vec<String>> = None;
    for c in callees {
        let fields = memo.entry(*c).or_insert_with(|| of(&files[c.0].1[c.1]));
        common = Some(match common {
            None => fields.clone(),
            Some(mut seen) => {
                seen.retain(|f| fields.contains(f));
                seen
            }
        });
    }
    common.unwrap_or_default()
}

/// A call of the crate's method of a reset's name (`net.clear_buffers()`) resets what that
/// method starts afresh, not all of the receiver: a reset that empties a window buffer leaves a
/// recurrent state beside it chaining. Such resets become cuts of those fields (see
/// `FnModel::field_cuts`) where every method the call may reach is known to start only named
/// fields afresh, through the reset calls it makes in turn.
fn narrow_named_resets(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    let callees_at: HashMap<(FnId, &Span), &[FnId]> = resolved
        .iter()
        .map(|(caller, ci, callees)| ((*caller, &files[caller.0].1[caller.1].call_sites[*ci].span), &callees[..]))
        .collect();
    /// The fields `f` starts afresh in its receiver, following its reset calls; `None`:
    /// unknown or all of it.
    fn afresh(
        files: &[(Arc<SourceFile>, Vec<FnModel>)],
        callees_at: &HashMap<(FnId, &Span), &[FnId]>,
        memo: &mut HashMap<FnId, Option<Vec<String>>>,
        f: FnId,
        depth: usize,
    ) -> Option<Vec<String>> {
        if let Some(known) = memo.get(&f) {
            return known.clone();
        }
        // A cycle or a deep chain: unknown (the whole receiver, as before).
        memo.insert(f, None);
        let g = &files[f.0].1[f.1];
        let mut out = None;
        // `*self = Self::default()` starts all of it afresh.
        if depth < 6
            && !g.resets_self
            && let Some(super::graph::StartedAfresh { mut fields, by_name, only_continues }) = g.fields_started_afresh()
        {
            let mut known = true;
            for (k, field) in by_name {
                let span = &g.named_resets[k].1;
                match callees_at.get(&(f, span)) {
                    // `self.state.reset(..)`: the fields it starts afresh, as parts of `state`.
                    Some(callees) => {
                        for &c in *callees {
                            match afresh(files, callees_at, memo, c, depth + 1) {
                                Some(more) => fields.extend(more.into_iter().map(|m| match &field {
                                    Some(field) => format!("{field}.{m}"),
                                    None => m,
                                })),
                                None => known = false,
                            }
                        }
                    }
                    None => match field {
                        Some(field) => fields.push(field),
                        None => known = false,
                    },
                }
            }
            fields.sort_unstable();
            fields.dedup();
            // A method of a reset's name that does nothing (`fn reset_filter(&mut self) { /* keep
            // the filter warm */ }`) starts no field afresh.
            // Not one that hands a function on (`self.layers.iter_mut().for_each(Layer::clear)`):
            // its body reads nothing at all.
            let does_nothing = g.call_sites.is_empty()
                && g.vocab_calls.is_empty()
                && g.cleared.is_empty()
                && g.graph.node_count() == 0;
            // Nor one that only carries its fields on (`fn reset_where(&mut self, done: &[bool])`
            // multiplying the state by a mask of finished episodes): it starts nothing afresh.
            let only_continues = only_continues && g.cleared.is_empty() && g.call_sites.is_empty();
            if known && (!fields.is_empty() || does_nothing || only_continues) {
                out = Some(fields);
            }
        }
        memo.insert(f, out.clone());
        out
    }
    let mut memo: HashMap<FnId, Option<Vec<String>>> = HashMap::default();
    type Narrowed = (FnId, usize, Vec<String>);
    let mut narrowed: Vec<Narrowed> = Vec::new();
    for (fi, (_, graphs)) in files.iter().enumerate() {
        for (gi, g) in graphs.iter().enumerate() {
            let caller = (fi, gi);
            for (i, span) in &g.named_resets {
                let Some(callees) = callees_at.get(&(caller, span)) else { continue };
                // Every method the call may reach must be known to start only named fields afresh.
                let fields: Option<Vec<Vec<String>>> =
                    callees.iter().map(|&c| afresh(files, &callees_at, &mut memo, c, 0)).collect();
                if let Some(fields) = fields {
                    narrowed.push((caller, *i, fields.concat()));
                }
            }
        }
    }
    // Latest first, so that the indices of the others stay.
    narrowed.sort_unstable_by_key(|&(caller, i, _)| std::cmp::Reverse((caller, i)));
    for ((fi, gi), i, fields) in narrowed {
        let g = &mut files[fi].1[gi];
        let (b, l) = g.resets.remove(i);
        g.field_cuts.extend(fields.into_iter().map(|f| (b, f, l)));
        g.named_resets.retain(|&(k, _)| k != i);
        for (k, _) in &mut g.named_resets {
            if *k > i {
                *k -= 1;
            }
        }
    }
}

fn mark_stateful_calls(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    index: &Index<'_>,
    resolved: &[(FnId, usize, Vec<FnId>)],
    forwards: &[(FnId, usize, Vec<FnId>)],
) {
    fn site_of(g: &FnModel, ci: usize, forward: bool) -> &super::graph::CallSite {
        if forward { &g.forward_sites[ci] } else { &g.call_sites[ci] }
    }
    // Calls resolved by name only (`self.tokenizer.decode(..)` reaching a model's `decode`) are
    // followed when they are forward passes (`forward`, `forward_with_cache`) or methods of the
    // receiver's declared type (a binding's, or a field's: `self.cell.step(..)` with `cell: Cell`).
    let trusted = |files: &[(Arc<SourceFile>, Vec<FnModel>)],
                   caller: FnId,
                   site: &super::graph::CallSite,
                   callees: &[FnId],
                   forward: bool| {
        // An unqualified call of a function (`unroll(&cells, &mut st, &x)`): the crate's own.
        // So is `self.unroll(..)` reaching a method of the caller's own type.
        let own = files[caller.0].1[caller.1].owner.as_deref();
        forward
            || (!site.method && site.qualifier.is_none())
            // Through a trait object or a type parameter: the trait's impls the crate has.
            || ((site.receiver_dyn || site.receiver_generic)
                && callees.iter().all(|c| files[c.0].1[c.1].trait_impl || files[c.0].1[c.1].trait_default))
            || (site.receiver_self
                && own.is_some()
                && callees.iter().all(|c| files[c.0].1[c.1].owner.as_deref() == own))
            || {
                let declared =
                    site.receiver_type.as_deref().or_else(|| index.field_type(files, caller, site)).or_else(|| {
                        let owner = files[caller.0].1[caller.1].owner.as_deref()?;
                        index.declared_field_type(files, caller, owner, site.receiver_element_of.as_deref()?)
                    });
                callees.iter().all(|c| {
                    let c = &files[c.0].1[c.1];
                    c.ident.starts_with("forward") || declared.is_some_and(|t| c.owner.as_deref() == Some(t))
                })
            }
    };
    let calls = || resolved.iter().map(|r| (r, false)).chain(forwards.iter().map(|r| (r, true)));
    // Which arguments each call's result is computed from (`self.h = self.cell.step(x, &self.h)?`
    // reads the state back through `Cell::step`): what every candidate callee returns from.
    let mut returned: HashMap<FnId, u64> = HashMap::default();
    let mut fields_returned: HashMap<FnId, Vec<String>> = HashMap::default();
    for (caller, ci, callees) in resolved {
        let mut mask = u64::MAX;
        for c in callees {
            mask &= *returned.entry(*c).or_insert_with(|| {
                files[c.0].1[c.1]
                    .params_returned()
                    .iter()
                    .enumerate()
                    .fold(0, |m, (k, &r)| if r && k < 64 { m | 1 << k } else { m })
            });
        }
        if !callees.is_empty() {
            files[caller.0].1[caller.1].call_sites[*ci].args_returned = mask;
        }
        // `self.take_state()`: the fields of `self` every candidate returns from.
        if files[caller.0].1[caller.1].call_sites[*ci].receiver_self && !callees.is_empty() {
            let mut fields: Option<Vec<String>> = None;
            for c in callees {
                let of =
                    fields_returned.entry(*c).or_insert_with(|| files[c.0].1[c.1].fields_returned_from_self()).clone();
                fields = Some(match fields {
                    None => of,
                    Some(had) => had.into_iter().filter(|f| of.contains(f)).collect(),
                });
            }
            if let Some(fields) = fields.filter(|f| !f.is_empty()) {
                let g = &mut files[caller.0].1[caller.1];
                let result = g.call_sites[*ci].result;
                g.self_fields_returned.push((result, fields));
            }
        }
    }
    let mut state: HashMap<FnId, StateAt> = HashMap::default();
    type KeptAt = ((std::path::PathBuf, usize, Span, String), bool);
    let mut kept_at: HashMap<FnId, KeptAt> = HashMap::default();
    // Every field each function keeps its state in on every call (see `StateCall::kept_fields`).
    let mut kept_fields: HashMap<FnId, Vec<String>> = HashMap::default();
    // The fields each type's methods empty (a log that `take_log()` drains keeps nothing for
    // good), asked only of types whose methods keep a state.
    let mut emptied: HashMap<&str, Vec<String>> = HashMap::default();
    // Logs of what the caller hands in that another method of the type empties (`record(&loss)`
    // pushing into `self.epoch_losses`, which `end_epoch()` clears): what each keeps, asked only
    // of calls that hand a value whose graph a backward already consumed (see `emptied_log_at`).
    let mut emptied_logs: HashMap<FnId, StateAt> = HashMap::default();
    for (fi, (file, graphs)) in files.iter().enumerate() {
        for (gi, g) in graphs.iter().enumerate() {
            let (at, at_span, fields) = g.keeps_graph_state();
            if at.any()
                && g.framework_known
                && let Some(owner) = g.owner.as_deref()
            {
                // Only for what it pushes: a running sum some reset empties still chains until then.
                // And only when every field it keeps is such a log: a recurrent state beside a
                // window that `clear()` empties still chains.
                // (A map entry blended from the one it replaces is no log: see `keyed_folds`.)
                let pushed = |field: &String| {
                    g.stores().any(|(_, _, target, how, span)| {
                        how == Store::Push
                            && !g.copies.as_ref().is_some_and(|c| c.keyed_folds.contains(span))
                            && g.binding_of(target).is_some_and(|b| g.bindings[b].name == *field)
                    })
                };
                let gone = emptied.entry(owner).or_insert_with(|| emptied_by_type(files, owner));
                if !fields.is_empty() && fields.iter().all(|f| pushed(f) && gone.contains(f)) {
                    if at.self_via != 0 && !at.in_self && !g.spec.graph_swept_by_backward {
                        emptied_logs.insert(
                            (fi, gi),
                            StateAt {
                                self_via: at.self_via,
                                self_via_always: at.self_via_always,
                                ..StateAt::default()
                            },
                        );
                        if let Some((span, label, pushed)) = at_span {
                            let (line, _) = file.line_col(span.start);
                            kept_at.insert((fi, gi), ((file.path.clone(), line, span, label), pushed));
                        }
                        kept_fields.insert((fi, gi), fields);
                    }
                    continue;
                }
            }
            if !fields.is_empty() {
                kept_fields.insert((fi, gi), fields);
            }
            if at.any() {
                state.insert((fi, gi), at);
            }
            if let Some((span, label, pushed)) = at_span {
                let (line, _) = file.line_col(span.start);
                kept_at.insert((fi, gi), ((file.path.clone(), line, span, label), pushed));
            }
        }
    }
    if state.is_empty() && emptied_logs.is_empty() {
        return;
    }
    // What every candidate keeps (nothing when one keeps nothing).
    let kept = |state: &HashMap<FnId, StateAt>, callees: &[FnId]| -> StateAt {
        callees.iter().map(|c| state.get(c).copied().unwrap_or_default()).reduce(StateAt::meet).unwrap_or_default()
    };
    // ... or, for a loop over a collection of trait objects (`for m in self.metrics.iter_mut()
    // { m.update(..) }`), what any of them keeps: every impl it holds is called.
    let kept_at_site = |state: &HashMap<FnId, StateAt>, site: &super::graph::CallSite, callees: &[FnId]| -> StateAt {
        if site.receiver_dyn_all {
            callees.iter().map(|c| state.get(c).copied().unwrap_or_default()).fold(StateAt::default(), StateAt::join)
        } else {
            kept(state, callees)
        }
    };
    // The state of the caller a call's receiver or `k`-th argument is part of.
    let root_of = |g: &FnModel, site: &super::graph::CallSite, arg: Option<usize>| -> Option<Option<usize>> {
        match arg {
            None if site.receiver_self => Some(None),
            None => g.state_root(g.receiver_binding(site.receiver?)?),
            Some(k) => g.state_root(site.args.get(k)?.mut_ref?),
        }
    };
    let bits = |p: u64| (0..64).filter(move |k| p & (1 << k) != 0);
    // Every candidate keeps its state in fields its type declares as tensors (see
    // `StateAt::at_call`).
    let tensor_state =
        |files: &[(Arc<SourceFile>, Vec<FnModel>)], kept_fields: &HashMap<FnId, Vec<String>>, callees: &[FnId]| {
            !callees.is_empty()
                && callees.iter().all(|c| {
                    let callee = &files[c.0].1[c.1];
                    callee.owner.as_deref().is_some_and(|owner| {
                        kept_fields.get(c).is_some_and(|fields| {
                            !fields.is_empty()
                                && fields.iter().all(|f| {
                                    let name = f.strip_prefix("self.").unwrap_or(f);
                                    let name = name.split(['.', '[']).next().unwrap_or(name);
                                    index.declared_field_type(files, *c, owner, name) == Some("Tensor")
                                })
                        })
                    })
                })
        };
    // burn: the arguments of a call made after a backward that read what it consumed.
    let after_backward = |g: &FnModel, ci: usize, forward: bool| -> u64 {
        if forward {
            return 0;
        }
        g.args_after_backward
            .iter()
            .filter(|(i, a)| *i == ci && !a.no_grad)
            .flat_map(|(_, a)| a.args.iter().map(|&(k, _)| k))
            .filter(|&k| k < 64)
            .fold(0, |m, k| m | 1 << k)
    };
    // What a call keeps in an emptied log (see `emptied_logs`): the values it hands that a
    // backward of the caller already consumed (`backward_step(&loss); self.metrics.record(&loss)`)
    // are kept only for the log's bookkeeping, and every graph stays alive until the caller's
    // own call that empties it now and then (`if step % n == 0 { self.metrics.end_epoch() }`: a
    // log emptied once an epoch holds an epoch of graphs). A log the caller never empties is
    // trusted to be drained elsewhere (a window a report drains). Not when the caller
    // empties the log itself wherever it pushes (`record(&l); let m = self.metrics.flush();`; not
    // behind `if step % n == 0`), and
    // not for an on-policy buffer, whose values a later backward consumes.
    let emptied_log_at = |g: &FnModel, ci: usize, forward: bool, callees: &[FnId]| -> StateAt {
        if forward || callees.is_empty() || g.spec.graph_swept_by_backward {
            return StateAt::default();
        }
        let Some(Some(log)) = callees.iter().map(|c| emptied_logs.get(c).copied()).reduce(|a, b| Some(a?.meet(b?)))
        else {
            return StateAt::default();
        };
        // The arguments whose graph a backward of the caller runs on (the loss itself, or what
        // it was computed from).
        let site = &g.call_sites[ci];
        let consumed = site
            .args
            .iter()
            .enumerate()
            .take(64)
            .filter(|(_, a)| a.reads.iter().any(|&n| g.graph[n].taint.has(Taint::GRAPH) && g.graph_meets_backward(n)))
            .fold(0u64, |m, (k, _)| m | 1 << k);
        let via = log.self_via & consumed;
        let receiver = site.receiver.and_then(|r| g.receiver_binding(r));
        // Emptied by the caller: wherever it pushes, or only on some of its calls.
        let (mut every_call, mut now_and_then) = (false, false);
        for e in receiver.iter().flat_map(|&b| g.emptied_by_calls.iter().filter(move |e| e.binding == b)) {
            if e.in_loop == site.in_loop
                && g.call_sites.iter().any(|s| s.span == e.call && site.path.starts_with(&s.path))
            {
                every_call = true;
            } else {
                now_and_then = true;
            }
        }
        if via == 0 || every_call || !now_and_then {
            return StateAt::default();
        }
        StateAt { self_via: via, ..log }
    };
    // The gate a call's state is kept behind in the caller: the caller's own `bool` parameter
    // handed on as the callee's gate (`block.forward_native(x, state, training)` inside `fn
    // forward_lm(.., training: bool)`), or the caller's branch the call sits on.
    fn handed_gate(
        g: &FnModel,
        site: &super::graph::CallSite,
        gate: Option<(u8, super::graph::Opening)>,
    ) -> Option<(u8, super::graph::Opening)> {
        let handed = gate.and_then(|(p, opens_on)| {
            let [read] = site.args.get(usize::from(p))?.reads.as_slice() else { return None };
            let j = g.params.iter().position(|q| *q == Some(*read))?;
            u8::try_from(j).ok().map(|j| (j, opens_on))
        });
        handed.or_else(|| g.param_gate_of(&site.path))
    }
    // Whether `g` starts binding `b`'s kept state afresh in `in_loop`: a reset method
    // (`model.reset_cache()`), or a cut of the field the callees keep it in (`model.h =
    // model.h.detach()`).
    // `in_loop`: `Some(l)` for a restart in loop `l` only, `None` for one anywhere in `g`.
    fn restarts(
        g: &FnModel,
        b: super::graph::BindingId,
        in_loop: Option<Option<super::graph::LoopId>>,
        callees: &[FnId],
        kept_fields: &HashMap<FnId, Vec<String>>,
    ) -> bool {
        let here = |l: Option<super::graph::LoopId>| in_loop.is_none_or(|want| want == l);
        g.resets.iter().any(|&(r, l)| r == b && here(l))
            || callees.iter().filter_map(|c| kept_fields.get(c)).any(|names| {
                names.iter().all(|name| {
                    g.field_cuts.iter().any(|(r, f, l)| *r == b && super::graph::cut_covers(f, name) && here(*l))
                })
            })
    }
    for _ in 0..MAX_ROUNDS {
        let mut grown = Vec::new();
        for ((caller, ci, callees), forward) in calls() {
            let g = &files[caller.0].1[caller.1];
            let site = site_of(g, *ci, forward);
            let raw = kept_at_site(&state, site, callees);
            let raw = if raw.any() { raw } else { emptied_log_at(g, *ci, forward, callees) };
            let callee =
                raw.at_call(g, &site.args, after_backward(g, *ci, forward), tensor_state(files, &kept_fields, callees));
            // A running statistic a method of `self` keeps of what this function hands it from
            // its own parameters (`self.update_stats(&x.mean_keepdim(0)?)` in `fn
            // forward_train(&mut self, x)`): this function keeps it of those parameters.
            let via = if raw.self_via != 0 && root_of(g, site, None) == Some(None) {
                bits(raw.self_via)
                    .filter_map(|k| site.args.get(k))
                    .flat_map(|a| a.reads.iter())
                    .fold(0, |m, &n| m | g.params_feeding(n))
            } else {
                0
            };
            if !(callee.any() || via != 0)
                || callee.closed_by(&site.args)
                || !trusted(files, *caller, site, callees, forward)
            {
                continue;
            }
            let gate = handed_gate(g, site, callee.gate);
            let mut at = StateAt::default();
            // `self.cell.reset_state(); self.cell.step(x)`, `self.cell.h = self.cell.h.detach()`
            // before a loop of such calls: the caller starts the part's state afresh on each of
            // its calls, so nothing kept there outlives them.
            // Also through the field a loop walks (`for c in self.cells.iter_mut() { c.reset(); }`
            // before `for c in self.cells.iter_mut() { x = c.forward(&x)?; }`).
            let owner = site.receiver_field.as_deref().or(site.receiver_element_of.as_deref()).and_then(|f| {
                g.bindings.iter().position(|b| {
                    b.kind == super::graph::BindingKind::SelfField && b.name.strip_prefix("self.") == Some(f)
                })
            });
            let reset_here = site
                .receiver
                .and_then(|r| g.receiver_binding(r))
                .into_iter()
                .chain(owner)
                .any(|b| restarts(g, b, None, callees, &kept_fields));
            // A branch a `bool` parameter opens is judged by what each caller passes (see
            // `StateAt::gate`): `if training { self.norm.forward_train(&h)? }` keeps the state
            // on every call that passes `true`.
            let unconditional = !site.path.iter().any(|b| {
                g.conditional_branches.contains(b)
                    && !g.param_gates.iter().any(|(pb, ..)| pb == b)
                    && g.variant_gate(*b).is_none()
            });
            if callee.in_self
                && !reset_here
                && let Some(root) = root_of(g, site, None)
            {
                at.add_gated(root, gate);
                at.self_always = root.is_none() && callee.self_always && unconditional;
                // `log.record(logits)` with `log: &mut EvalLog` a parameter: kept in what the
                // caller of this function lends it, on every call.
                if let Some(j) = root
                    && j < 64
                    && callee.self_always
                    && unconditional
                {
                    at.params_always |= 1 << j;
                }
            }
            for k in bits(callee.params) {
                // `self.cache.reset()` before `lm.step(x, &mut self.cache)`: started afresh on
                // each call of this function, as a receiver reset above.
                if site.args.get(k).and_then(|a| a.mut_ref).is_some_and(|b| restarts(g, b, None, callees, &kept_fields))
                {
                    continue;
                }
                if let Some(root) = root_of(g, site, Some(k)) {
                    at.add_gated(root, gate);
                    if callee.params_always & (1 << k) != 0
                        && !site.path.iter().any(|b| g.conditional_branches.contains(b))
                    {
                        match root {
                            None => at.self_always = true,
                            Some(j) if j < 64 => at.params_always |= 1 << j,
                            Some(_) => {}
                        }
                    }
                }
            }
            // After the places above, which set the gate: a statistic kept of the parameters
            // rides along with it.
            if via != 0 {
                at.self_via = via;
                at.self_via_always =
                    raw.self_via_always && !site.path.iter().any(|b| g.conditional_branches.contains(b));
            }
            if !at.any() {
                continue;
            }
            let had = state.get(caller).copied().unwrap_or_default();
            let now = StateAt {
                in_self: had.in_self || at.in_self,
                params: had.params | at.params,
                self_always: had.self_always || at.self_always,
                gate: if !had.any() || had.gate == at.gate { at.gate } else { None },
                self_via: had.self_via | at.self_via,
                self_via_always: had.self_via_always || at.self_via_always,
                params_always: had.params_always | at.params_always,
            };
            if now != had {
                grown.push((*caller, now));
                if (at.self_always || at.self_via_always || at.params_always != 0)
                    && !kept_at.contains_key(caller)
                    && let Some(k) = callees.iter().find_map(|c| kept_at.get(c)).cloned()
                {
                    kept_at.insert(*caller, k);
                    if let Some(fields) = callees.iter().find_map(|c| kept_fields.get(c)).cloned() {
                        kept_fields.insert(*caller, fields);
                    }
                }
            }
        }
        if grown.is_empty() {
            break;
        }
        state.extend(grown);
    }
    let mut found: Vec<(FnId, super::graph::StateCall)> = Vec::new();
    for ((caller, ci, callees), forward) in calls() {
        let g = &files[caller.0].1[caller.1];
        let site = site_of(g, *ci, forward);
        let raw = kept_at_site(&state, site, callees);
        let kept_until_emptied = !raw.any();
        let raw = if raw.any() { raw } else { emptied_log_at(g, *ci, forward, callees) };
        let callee =
            raw.at_call(g, &site.args, after_backward(g, *ci, forward), tensor_state(files, &kept_fields, callees));
        if !callee.any() || callee.closed_by(&site.args) || !trusted(files, *caller, site, callees, forward) {
            continue;
        }
        // The state outlives an iteration of the call's loop: it lives in a binding made before
        // the loop, and is not reset in it (`model.reset_cache()`).
        let lasting = |b: super::graph::BindingId| {
            site.in_loop.is_none_or(|l| !g.loop_within(g.bindings[b].decl_loop, l))
                && !restarts(g, b, Some(site.in_loop), callees, &kept_fields)
        };
        // `model` of `model.decoder().forward(..)` too: a getter lends a part of it.
        let receiver = site.receiver.and_then(|r| g.receiver_binding(r));
        let in_receiver = callee.in_self && (site.receiver_self || receiver.is_some_and(lasting));
        let chains =
            in_receiver || bits(callee.params).any(|k| site.args.get(k).and_then(|a| a.mut_ref).is_some_and(lasting));
        // Kept only in what a parameter of this function lends (`model.forward(&x, 0, cache)`
        // with `cache: &mut Cache`): judged by what this function's callers hand it.
        let lent_param = if in_receiver {
            None
        } else {
            bits(callee.params).find_map(|k| {
                let b = site.args.get(k)?.mut_ref?;
                g.params
                    .iter()
                    .position(|p| p.is_some_and(|p| matches!(g.graph[p].kind, NodeKind::Version(v) if v == b)))
            })
        };
        // `model.forward(&inp, 0)` with `model` built around a disabled cache (`Llama::load(vb,
        // &Cache::new(false, ..)?, cfg)`): what its forward would keep, it keeps only when asked.
        let disabled_receiver =
            in_receiver && !callee.self_always && receiver.is_some_and(|b| g.disabled_caches.contains(&b));
        let receiver_param = receiver.filter(|&b| g.bindings[b].kind == BindingKind::Param).and_then(|b| {
            g.params.iter().position(|p| p.is_some_and(|p| matches!(g.graph[p].kind, NodeKind::Version(v) if v == b)))
        });
        // The name of a candidate that keeps it.
        let named = callees.iter().find(|c| state.get(c).is_some_and(|s| s.any())).unwrap_or(&callees[0]);
        let c = &files[named.0].1[named.1];
        found.push((
            *caller,
            super::graph::StateCall {
                span: site.span.clone(),
                in_loop: site.in_loop,
                receiver: site.receiver,
                callee: c.owner.as_ref().map_or(c.ident.clone(), |o| format!("{o}::{}", c.ident)),
                fresh_each_iteration: !chains || disabled_receiver,
                always: callee.self_always,
                always_in: bits(callee.params_always)
                    .filter_map(|k| site.args.get(k).and_then(|a| a.mut_ref))
                    .filter(|&b| lasting(b))
                    .collect(),
                kept_at: callees.iter().find_map(|c| kept_at.get(c)).map(|(k, _)| k.clone()),
                kept_by_push: callees.iter().find_map(|c| kept_at.get(c)).is_some_and(|(_, pushed)| *pushed),
                kept_fields: callees.iter().find_map(|c| kept_fields.get(c)).cloned().unwrap_or_default(),
                kept_until_emptied,
                receiver_self: site.receiver_self,
                lent_param,
                receiver_param: receiver_param.filter(|_| in_receiver && !callee.self_always),
            },
        ));
    }
    for (caller, call) in found {
        files[caller.0].1[caller.1].state_calls.push(call);
    }
}

/// Summarizes the callees and applies each changed summary at its call sites, to a fixpoint.
fn settle_summaries(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    resolved: &[(FnId, usize, Vec<FnId>)],
    callees: &[FnId],
    summaries: &mut [Option<Summary>],
    callback_sites: &[usize],
) {
    let slot = |id: &FnId| callees.binary_search(id).expect("a callee");
    for _ in 0..MAX_ROUNDS {
        for (fi, gi) in mark_callback_backwards(files, resolved, callback_sites) {
            files[fi].1[gi].propagate();
        }
        let mut changed: Vec<FnId> = Vec::new();
        for (k, &id) in callees.iter().enumerate() {
            let s = summarize(&files[id.0].1[id.1], &files[id.0].0);
            if summaries[k].as_ref() != Some(&s) {
                summaries[k] = Some(s);
                changed.push(id);
            }
        }
        if changed.is_empty() {
            break;
        }
        let mut dirty: Vec<FnId> = Vec::new();
        for (caller, ci, candidates) in resolved {
            if !candidates.iter().any(|c| changed.binary_search(c).is_ok()) {
                continue;
            }
            let summary_of = |c: &FnId| summaries[slot(c)].as_ref().expect("summarized");
            // Several candidates (trait impls of one method name): apply what they all do.
            // Through a type parameter or a trait object (`mover.act(..)` with `mover: &mut dyn
            // Agent`), an impl on a struct of host values (`RandomAgent { state: u64 }`) runs no
            // model: what the call does to a model is what the impls that can hold one do.
            let site = &files[caller.0].1[caller.1].call_sites[*ci];
            let model_impls: Vec<FnId>;
            let candidates = if candidates.len() > 1
                && (site.receiver_generic || site.receiver_dyn || site.type_param_dispatch)
                && candidates.iter().any(|c| files[c.0].1[c.1].owner_host)
                && candidates.iter().any(|c| !files[c.0].1[c.1].owner_host)
            {
                model_impls = candidates.iter().copied().filter(|c| !files[c.0].1[c.1].owner_host).collect();
                &model_impls
            } else {
                candidates
            };
            let met;
            let summary = match candidates.as_slice() {
                [one] => summary_of(one),
                [first, rest @ ..] => {
                    met = rest.iter().fold(summary_of(first).clone(), |a, c| a.meet(summary_of(c)));
                    &met
                }
                [] => continue,
            };
            let first = candidates[0];
            // The callee's name labels calls and stores it makes; most calls need none.
            let named = summary.runs_backward
                || summary.steps
                || summary.clears
                || summary.forwards
                || summary.forwards_autodiff
                || !summary.calls_params_in_loop.is_empty()
                || !summary.stores.is_empty()
                || (summary.param_ops != 0
                    && files[caller.0].1[caller.1].args_after_backward.iter().any(|(i, _)| i == ci));
            let callee_name = if named {
                let c = &files[first.0].1[first.1];
                c.owner.as_ref().map_or(c.ident.clone(), |o| format!("{o}::{}", c.ident))
            } else {
                String::new()
            };
            let callee_file = files[first.0].0.clone();
            let g = &mut files[caller.0].1[caller.1];
            apply(g, *ci, summary, &callee_name, &callee_file);
            dirty.push(*caller);
        }
        dirty.sort_unstable();
        dirty.dedup();
        for (fi, gi) in dirty {
            files[fi].1[gi].propagate();
        }
    }
}

/// Models built from trainable variables (candle `VarBuilder::from_varmap(..)`) across calls:
/// first the results of functions that build and return one (through chains of such functions),
/// then the parameters (for a method, the `self` fields) of functions some call hands one. A
/// function that returns what it was handed does not make every caller's result trainable, and
/// tests (small models made from a fresh `VarMap` to check shapes) hand nothing on.
fn follow_trainable_models(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    resolved: &[(FnId, usize, Vec<FnId>)],
) -> bool {
    type From = Option<(std::path::PathBuf, usize, String)>;
    let holds = |g: &FnModel| !g.is_test && !g.trainable_seeds.is_empty();
    // Most crates build nothing from trainable variables (every crate but candle's).
    if !files.iter().any(|(_, graphs)| graphs.iter().any(&holds)) {
        return false;
    }
    let trainable = |g: &FnModel, n: NodeIndex| g.graph[n].taint.has(Taint::TRAINABLE);
    let mut followed = false;
    let seed = |files: &mut [(Arc<SourceFile>, Vec<FnModel>)], seeds: Vec<(FnId, NodeIndex, From)>| -> bool {
        let mut dirty: Vec<FnId> = Vec::new();
        for (id, n, from) in seeds {
            let g = &mut files[id.0].1[id.1];
            if g.trainable_seeds.contains(&n) {
                continue;
            }
            g.trainable_seeds.push(n);
            if g.trainable_from.is_none() {
                g.trainable_from = from;
            }
            dirty.push(id);
        }
        dirty.sort_unstable();
        dirty.dedup();
        for &(fi, gi) in &dirty {
            files[fi].1[gi].propagate();
        }
        !dirty.is_empty()
    };
    // Which parameters each called function builds its result from (`Net::new(vb)`), asked
    // only of the callees of calls handed a trainable value.
    let mut returned: HashMap<FnId, Vec<bool>> = HashMap::default();
    for _ in 0..MAX_ROUNDS {
        let returns: Vec<FnId> = files
            .iter()
            .enumerate()
            .flat_map(|(fi, (_, graphs))| graphs.iter().enumerate().map(move |(gi, g)| ((fi, gi), g)))
            .filter(|(_, g)| holds(g) && g.returns.iter().any(|&n| trainable(g, n)))
            .map(|(id, _)| id)
            .collect();
        let mut seeds = Vec::new();
        for (caller, ci, callees) in resolved {
            let g = &files[caller.0].1[caller.1];
            if g.is_test {
                continue;
            }
            let site = &g.call_sites[*ci];
            let built_from =
                |c: &FnId, returned: &mut HashMap<FnId, Vec<bool>>| built_from_trainable(files, g, site, c, returned);
            let handed = holds(g) && site.args.iter().any(|a| a.reads.iter().any(|&n| trainable(g, n)));
            if callees.iter().any(|c| returns.contains(c))
                || (handed && callees.iter().all(|c| built_from(c, &mut returned)))
            {
                seeds.push((*caller, site.result, None));
            }
        }
        if !seed(files, seeds) {
            break;
        }
        followed = true;
    }
    for _ in 0..MAX_ROUNDS {
        let mut seeds: Vec<(FnId, NodeIndex, From)> = Vec::new();
        // Methods handed a receiver that holds a trainable model, read through whatever field.
        let mut selves: Vec<(FnId, From)> = Vec::new();
        for (caller, ci, callees) in resolved {
            let (file, g) = (&files[caller.0].0, &files[caller.0].1[caller.1]);
            if !(holds(g) || (g.self_trainable && !g.is_test)) {
                continue;
            }
            let site = &g.call_sites[*ci];
            let from = || {
                let (line, _) = file.line_col(site.span.start);
                Some((file.path().to_path_buf(), line, g.name()))
            };
            for (i, a) in site.args.iter().enumerate() {
                if a.reads.iter().any(|&n| trainable(g, n)) {
                    for c in callees {
                        if let Some(Some(p)) = files[c.0].1[c.1].params.get(i) {
                            seeds.push((*c, *p, from()));
                        }
                    }
                }
            }
            // `sampler.sample(..)` with `sampler` built around a trainable model, and
            // `self.step(..)` in a method whose `self` holds one.
            let on_trainable = site.method
                && (site.receiver.is_some_and(|r| trainable(g, r)) || (site.receiver_self && g.self_trainable));
            if on_trainable {
                for c in callees {
                    for &n in &files[c.0].1[c.1].self_fields {
                        seeds.push((*c, n, from()));
                    }
                    selves.push((*c, from()));
                }
            }
            // What such a method hands back from its receiver (`trainer.into_model()` returning
            // `self.net`), and a value built around a model handed back so (`Filter { net: &net
            // }`, `Enhancer::new(&net)`), as the first pass follows them.
            if !trainable(g, site.result) {
                let hands_back = |c: &FnId| {
                    let callee = &files[c.0].1[c.1];
                    callee.self_trainable && callee.returns.iter().any(|&n| trainable(callee, n))
                };
                let handed = holds(g) && site.args.iter().any(|a| a.reads.iter().any(|&n| trainable(g, n)));
                let built = handed && callees.iter().all(|c| built_from_trainable(files, g, site, c, &mut returned));
                if (on_trainable && callees.iter().any(hands_back)) || built {
                    seeds.push((*caller, site.result, None));
                }
            }
        }
        let mut grown = false;
        for (c, from) in selves {
            let g = &mut files[c.0].1[c.1];
            if !g.self_trainable {
                g.self_trainable = true;
                if g.trainable_from.is_none() {
                    g.trainable_from = from;
                }
                grown = true;
            }
        }
        let seeded = seed(files, seeds);
        if !seeded && !grown {
            break;
        }
        followed = true;
    }
    followed
}

/// Whether callee `c` builds its result from a trainable value `site` of `g` hands it (`Net::new(vb)`,
/// `Filter { net: &net }`); `returned` memoizes which parameters each callee returns.
fn built_from_trainable(
    files: &[(Arc<SourceFile>, Vec<FnModel>)],
    g: &FnModel,
    site: &super::graph::CallSite,
    c: &FnId,
    returned: &mut HashMap<FnId, Vec<bool>>,
) -> bool {
    let mask = returned.entry(*c).or_insert_with(|| files[c.0].1[c.1].params_returned());
    site.args.iter().enumerate().any(|(i, a)| {
        mask.get(i).copied().unwrap_or(false) && a.reads.iter().any(|&n| g.graph[n].taint.has(Taint::TRAINABLE))
    })
}

/// Fields of the crate's structs written only where a struct literal builds them, and changed by
/// no write anywhere in the crate (see `FnModel::apart_fields`), given to their type's methods.
/// Writes are matched by field name, whatever the struct: a name written anywhere is written.
fn mark_apart_fields(files: &mut [(Arc<SourceFile>, Vec<FnModel>)]) {
    let graphs = || files.iter().flat_map(|(_, graphs)| graphs.iter());
    // Asked only of forwards on a field of `self` whose output is cut at once.
    if !graphs().any(|g| !g.cut_chains.is_empty()) {
        return;
    }
    let written: HashSet<&str> = files
        .iter()
        .flat_map(|(file, graphs)| {
            graphs.iter().flat_map(|g| g.fields_written.iter().filter_map(|s| file.text.get(s.clone())))
        })
        .collect();
    let mut apart: HashMap<String, Vec<String>> = HashMap::default();
    for (ty, field, _) in graphs().flat_map(|g| g.field_writes.iter()) {
        if !written.contains(field.as_str()) {
            let fields = apart.entry(ty.clone()).or_default();
            let field = format!("self.{field}");
            if !fields.contains(&field) {
                fields.push(field);
            }
        }
    }
    // A field whose forward some method of its type backpropagates is trained there (its step
    // may be out of sight: `self.apply(grads)`).
    for g in graphs() {
        if let Some(fields) = g.owner.as_deref().and_then(|o| apart.get_mut(o))
            && g.has_self
            && !g.losses.is_empty()
        {
            let trained = g.self_fields_backpropagated();
            fields.retain(|f| !trained.contains(&f.as_str()));
        }
    }
    apart.retain(|_, fields| !fields.is_empty());
    if apart.is_empty() {
        return;
    }
    let apart: HashMap<String, Arc<[String]>> = apart.into_iter().map(|(ty, fields)| (ty, fields.into())).collect();
    for g in files.iter_mut().flat_map(|(_, graphs)| graphs.iter_mut()) {
        if g.has_self
            && let Some(fields) = g.owner.as_deref().and_then(|o| apart.get(o))
        {
            g.apart_fields = Some(fields.clone());
        }
    }
}

/// Fields of the crate's structs that only ever receive inert models (`Self { backbone:
/// load(..).no_grad(), .. }`, `self.target = online.valid()`, in every write the crate has): inert
/// in the struct's methods.
fn follow_inert_fields(files: &mut [(Arc<SourceFile>, Vec<FnModel>)]) {
    let mut all_inert: HashMap<(&str, &str), bool> = HashMap::default();
    for g in files.iter().flat_map(|(_, graphs)| graphs.iter()) {
        for (ty, field, n) in &g.field_writes {
            let inert = g.graph[*n].taint.has(Taint::INERT_MODEL);
            all_inert.entry((ty.as_str(), field.as_str())).and_modify(|v| *v &= inert).or_insert(inert);
        }
    }
    let inert: Vec<(String, String)> =
        all_inert.into_iter().filter(|(_, v)| *v).map(|((t, f), _)| (t.to_string(), format!("self.{f}"))).collect();
    if inert.is_empty() {
        return;
    }
    for g in files.iter_mut().flat_map(|(_, graphs)| graphs.iter_mut()) {
        let Some(owner) = g.owner.as_deref() else { continue };
        let seeds: Vec<NodeIndex> = g
            .self_fields
            .iter()
            .copied()
            .filter(|&v| {
                !g.inert_seeds.contains(&v)
                    && g.binding_of(v)
                        .is_some_and(|b| inert.iter().any(|(t, f)| t == owner && *f == g.bindings[b].name))
            })
            .collect();
        if !seeds.is_empty() {
            g.inert_seeds.extend(seeds);
            g.propagate();
        }
    }
}

/// Functions every call of which the crate makes with gradients off, where gradients are a global
/// mode (tch): inside a no-grad region of the caller, or from a function that is itself only so
/// called. Their forward passes record no graph (`fn bootstrap(&mut self) { let v =
/// self.critic.forward(..); self.buffer.finish(&v) }` called only after `let _g =
/// tch::no_grad_guard();`).
fn mark_grad_off(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    let global = |g: &FnModel| g.spec.global_grad_mode;
    // Usually no call of the crate is made under no_grad: nothing to do.
    if !files.iter().any(|(_, graphs)| graphs.iter().any(global))
        || !resolved.iter().any(|(caller, ci, _)| {
            let g = &files[caller.0].1[caller.1];
            global(g) && g.call_sites[*ci].no_grad
        })
    {
        return;
    }
    let mut off: BTreeSet<FnId> = BTreeSet::new();
    for _ in 0..MAX_ROUNDS {
        // Per callee: whether every call that may reach it is made with gradients off.
        let mut all_off: BTreeMap<FnId, bool> = BTreeMap::new();
        for (caller, ci, callees) in resolved {
            let g = &files[caller.0].1[caller.1];
            let site_off = global(g) && (g.call_sites[*ci].no_grad || off.contains(caller));
            for c in callees {
                *all_off.entry(*c).or_insert(true) &= site_off;
            }
        }
        let next: BTreeSet<FnId> = all_off.into_iter().filter(|&(_, o)| o).map(|(c, _)| c).collect();
        if next == off {
            break;
        }
        off = next;
    }
    for (fi, gi) in off {
        let g = &mut files[fi].1[gi];
        if global(g) && !g.grad_off {
            g.grad_off = true;
            g.propagate();
        }
    }
}

/// Models made inert (`model.valid()`, `Module::no_grad`) across calls: a function whose every
/// return is an inert model makes its call results inert, and a parameter that every call of
/// the crate hands an inert model is inert in the function. Followed through chains of calls.
fn follow_inert_models(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    let is_inert = |g: &FnModel, n: NodeIndex| g.graph[n].taint.has(Taint::INERT_MODEL);
    // Only a function that untracks a model itself or was handed one holds inert values.
    let may_hold_inert = |g: &FnModel| g.untracks_models || !g.inert_seeds.is_empty();
    let arg_inert = |g: &FnModel, a: &super::graph::ArgValue| {
        matches!(a.producer, super::graph::Producer::InertModel)
            || (may_hold_inert(g) && a.reads.iter().any(|&n| is_inert(g, n)))
    };
    // Which parameters each called function builds its result from, asked only of the callees
    // of calls handed an inert model.
    let mut returned: HashMap<FnId, Vec<bool>> = HashMap::default();
    for _ in 0..MAX_ROUNDS {
        let mut dirty: Vec<FnId> = Vec::new();
        // Functions whose every return is an inert model (usually none).
        let mut returns_inert: Vec<FnId> = Vec::new();
        for (fi, (_, graphs)) in files.iter().enumerate() {
            for (gi, f) in graphs.iter().enumerate() {
                // A struct literal is inert when every field that may hold a model is
                // (`Ok(Self { enc: linear(.., vb.pp("enc"))? })` with a frozen `vb`), not when
                // one is beside a tracked one.
                let struct_inert =
                    || !f.field_writes.is_empty() && f.field_writes.iter().all(|&(_, _, n)| is_inert(f, n));
                if may_hold_inert(f)
                    && (!f.returns_struct || struct_inert())
                    && !f.returns.is_empty()
                    && f.returns.iter().all(|&n| is_inert(f, n))
                {
                    returns_inert.push((fi, gi));
                }
            }
        }
        // Parameters some call hands an inert model: candidates, confirmed against every call.
        let mut handed: BTreeMap<(FnId, usize), bool> = BTreeMap::new();
        for (caller, ci, callees) in resolved {
            let g = &files[caller.0].1[caller.1];
            for (i, a) in g.call_sites[*ci].args.iter().enumerate() {
                if arg_inert(g, a) {
                    for c in callees {
                        handed.insert((*c, i), true);
                    }
                }
            }
        }
        // A closure handed to a function of the crate that calls it with an inert model in some
        // place on every call (`on_epoch(epoch, loss, &self.model.valid())` for `|epoch, loss,
        // eval_model| ..`): that parameter of the closure holds an inert model.
        let mut closure_seeds: Vec<(FnId, NodeIndex)> = Vec::new();
        for (caller, ci, callees) in resolved {
            let g = &files[caller.0].1[caller.1];
            for &(k, closure) in &g.call_sites[*ci].closure_args {
                let Some(scope) = g.closures.get(closure) else { continue };
                for (j, param) in scope.params.iter().enumerate() {
                    let Some(param) = *param else { continue };
                    let inert = !callees.is_empty()
                        && callees.iter().all(|c| {
                            let callee = &files[c.0].1[c.1];
                            let mut calls = callee.param_calls.iter().filter(|p| p.param == k).peekable();
                            calls.peek().is_some()
                                && calls
                                    .all(|p| p.arg_reads.get(j).is_some_and(|r| r.iter().any(|&n| is_inert(callee, n))))
                        });
                    if inert && !g.inert_seeds.contains(&param) {
                        closure_seeds.push((*caller, param));
                    }
                }
            }
        }
        if returns_inert.is_empty() && handed.is_empty() && closure_seeds.is_empty() {
            return;
        }
        for (caller, param) in closure_seeds {
            files[caller.0].1[caller.1].inert_seeds.push(param);
            dirty.push(caller);
        }
        let candidates: BTreeSet<FnId> = handed.keys().map(|k| k.0).collect();
        for (caller, ci, callees) in resolved {
            let g = &files[caller.0].1[caller.1];
            let site = &g.call_sites[*ci];
            for c in callees.iter().filter(|c| candidates.contains(c)) {
                for (i, a) in site.args.iter().enumerate() {
                    if let Some(all) = handed.get_mut(&(*c, i)) {
                        *all &= arg_inert(g, a);
                    }
                }
            }
            // `Velocity::new(VarBuilder::from_mmaped_safetensors(..)?)`: a callee that builds
            // its result from the inert value it is handed (and from nothing it is handed that
            // is not inert) makes an inert model.
            let mut built_from_inert = || {
                let inert_args: Vec<bool> = site.args.iter().map(|a| arg_inert(g, a)).collect();
                inert_args.iter().any(|&i| i)
                    && callees.iter().all(|c| {
                        // Data read from the model (`self_play(&frozen, ..) -> Vec<Example>`) is
                        // no model.
                        if files[c.0].1[c.1].returns_host_data {
                            return false;
                        }
                        let mask = returned.entry(*c).or_insert_with(|| files[c.0].1[c.1].params_returned());
                        // A device or a host value beside the model holds no graph of its own
                        // (`GameSession::new(&frozen, &dev)`).
                        let plain = files[c.0].1[c.1].plain_params;
                        let holds_model = |k: usize| plain.checked_shr(k as u32).is_none_or(|p| p & 1 == 0);
                        mask.iter().zip(&inert_args).any(|(&m, &i)| m && i)
                            && mask.iter().zip(&inert_args).enumerate().all(|(k, (&m, &i))| !m || i || !holds_model(k))
                    })
            };
            let inert_result = (!returns_inert.is_empty()
                && callees.iter().all(|c| returns_inert.binary_search(c).is_ok()))
                || (!callees.is_empty() && built_from_inert());
            let g = &mut files[caller.0].1[caller.1];
            let result = g.call_sites[*ci].result;
            if inert_result && !g.inert_seeds.contains(&result) {
                g.inert_seeds.push(result);
                dirty.push(*caller);
            }
        }
        for ((callee, i), inert) in handed {
            let g = &mut files[callee.0].1[callee.1];
            if let (true, Some(Some(p))) = (inert, g.params.get(i).copied())
                && !g.inert_seeds.contains(&p)
            {
                g.inert_seeds.push(p);
                dirty.push(callee);
            }
        }
        if dirty.is_empty() {
            return;
        }
        dirty.sort_unstable();
        dirty.dedup();
        for (fi, gi) in dirty {
            files[fi].1[gi].propagate();
        }
    }
}

/// The `true`/`false` literals the crate's calls pass to a function with a branch on that
/// parameter (`run_epoch(&model, valid, false)` for `if is_train { backward }`), kept on the callee.
fn note_bool_args(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    let mut found = Vec::new();
    for (caller, ci, callees) in resolved {
        let [callee] = callees.as_slice() else { continue };
        let g = &files[caller.0].1[caller.1];
        let site = &g.call_sites[*ci];
        if !site.args.iter().any(|a| a.bool_literal().is_some()) {
            continue;
        }
        let gates = &files[callee.0].1[callee.1].param_gates;
        for (i, a) in site.args.iter().enumerate() {
            if let Some(value) = a.bool_literal()
                && gates.iter().any(|&(_, p, _, _)| p == i)
            {
                let file = &files[caller.0].0;
                let (line, _) = file.line_col(site.span.start);
                found.push((*callee, (i, value, file.path().to_path_buf(), line, g.name())));
            }
        }
    }
    for (callee, arg) in found {
        files[callee.0].1[callee.1].bool_args.push(arg);
    }
}

/// Branches a call of the crate opens (`if agent.can_learn() { .. }`) wait for a size when every
/// function of that name is a size gate; training calls on such branches then wait too.
fn mark_size_gates(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], index: &Index) {
    // A name is a gate when every function of that name is one: compares a length, or hands on
    // the `None` of a gate with `?` (to a fixpoint: gates wrapping gates).
    let mut gates: Vec<String> = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let before = gates.len();
        let is_gate = |id: &FnId| {
            let f = &files[id.0].1[id.1];
            f.size_gate || f.gate_via.iter().any(|n| gates.contains(n))
        };
        let found: Vec<String> = index
            .by_name
            .values()
            .map(|ids| (&files[ids[0].0].1[ids[0].1].ident, ids))
            .filter(|(name, ids)| !gates.contains(name) && ids.iter().all(is_gate))
            .map(|(name, _)| name.clone())
            .collect();
        gates.extend(found);
        if gates.len() == before {
            break;
        }
    }
    if gates.is_empty() {
        return;
    }
    // The gates whose size is one batch (`if self.batch_size <= self.memory.len() { Some(..) }`),
    // every function of that name, or handing on such a gate's `None`.
    let mut batch_gates: Vec<String> = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let before = batch_gates.len();
        let is_batch_gate = |id: &FnId| {
            let f = &files[id.0].1[id.1];
            (f.size_gate && f.batch_gate) || (!f.size_gate && f.gate_via.iter().any(|n| batch_gates.contains(n)))
        };
        let found: Vec<String> = index
            .by_name
            .values()
            .map(|ids| (&files[ids[0].0].1[ids[0].1].ident, ids))
            .filter(|(name, ids)| gates.contains(name) && !batch_gates.contains(name) && ids.iter().all(is_batch_gate))
            .map(|(name, _)| name.clone())
            .collect();
        batch_gates.extend(found);
        if batch_gates.len() == before {
            break;
        }
    }
    // The fields the gates compare: a forward after an early exit on one of them waits for the
    // same warm-up (`if self.step < self.config.learning_starts { return random }`).
    let mut gate_fields: Vec<String> = files
        .iter()
        .flat_map(|(_, graphs)| graphs.iter())
        .filter(|g| g.size_gate)
        .flat_map(|g| g.gate_fields.iter().cloned())
        .collect();
    gate_fields.sort_unstable();
    gate_fields.dedup();
    for g in files.iter_mut().flat_map(|(_, graphs)| graphs.iter_mut()) {
        for e in &mut g.vocab_calls {
            if e.kind == super::graph::CallKind::Forward
                && e.guard_fields.iter().any(|f| gate_fields.binary_search(f).is_ok())
            {
                e.waits = true;
            }
        }
        if g.gated_branches.is_empty() {
            continue;
        }
        let opened: Vec<usize> =
            g.gated_branches.iter().filter(|(_, callee)| gates.contains(callee)).map(|&(b, _)| b).collect();
        if opened.is_empty() {
            continue;
        }
        let by_batch: Vec<usize> =
            g.gated_branches.iter().filter(|(_, callee)| batch_gates.contains(callee)).map(|&(b, _)| b).collect();
        g.size_wait_branches.extend(opened);
        g.brief_wait_branches.extend(by_batch);
        for i in 0..g.calls.len() {
            if !g.calls[i].waits_for_size && g.waits_for_size(&g.calls[i].path) {
                g.calls[i].waits_for_size = true;
            }
            g.calls[i].waits_briefly = g.waits_only_briefly(&g.calls[i].path);
        }
    }
}

/// Forward passes on `self.<field>` where the owner's declaration types that field with an
/// autodiff backend (`target_model: Model<MyAutodiffBackend>` in a non-generic agent): the
/// type says the model records a graph, whatever the function's signature says.
fn mark_autodiff_fields(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], fields: &[(String, String)]) {
    if fields.is_empty() {
        return;
    }
    for g in files.iter_mut().flat_map(|(_, graphs)| graphs.iter_mut()) {
        let Some(owner) = g.owner.as_deref() else { continue };
        if !fields.iter().any(|(t, _)| t == owner) {
            continue;
        }
        let marked: Vec<usize> = g
            .vocab_calls
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == super::graph::CallKind::Forward)
            .filter_map(|(i, e)| {
                let b = g.binding_of(e.receiver?)?;
                let name = g.bindings[b].name.strip_prefix("self.")?;
                (g.bindings[b].kind == BindingKind::SelfField && fields.iter().any(|(t, f)| t == owner && f == name))
                    .then_some(i)
            })
            .collect();
        for i in marked {
            g.vocab_calls[i].autodiff_model = true;
        }
    }
}

/// Generic functions instantiated with an autodiff backend by a call of the crate: an autodiff
/// caller that does not hand it an inert model, or explicit generic arguments naming one; to a
/// fixpoint (chains of generic calls).
fn instantiate_autodiff(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    mark_callees(
        files,
        resolved,
        |_, g, site, c, candidates| {
            // Explicit generic arguments say which backend; otherwise the caller's own.
            let autodiff = site.turbofish_autodiff.unwrap_or_else(|| g.autodiff && !handed_inert(g, site));
            // A call through a type parameter (`M::soft_update(..)` with `M: Model<B>`) hands
            // its backend to whichever impl it reaches.
            // A test instantiates nothing outside tests: it runs once and ends (`generate(100)`
            // on a freshly trained autodiff model, to check the output's shape).
            // burn 0.22 writes no backend in types: a caller on an autodiff device hands its
            // autodiff model to a function that is not generic (`fn embed(encoder: &Encoder)`).
            (candidates == 1 || site.type_param_dispatch || site.receiver_generic || site.receiver_dyn)
                && autodiff
                && !c.autodiff
                && (c.generic || (g.autodiff_device && !site.plain_device_only))
                && c.framework_known
                && (c.is_test || !g.is_test)
        },
        |c, from| {
            c.autodiff = true;
            c.autodiff_device |= !c.generic;
            c.autodiff_from = vec![from];
        },
    );
    // The calls a finding names: first one made inside a loop that runs backward (the sample
    // generated every epoch), then the others (a last sample after training), a few at most.
    let mut calls: Vec<(FnId, bool, (std::path::PathBuf, usize, String))> = Vec::new();
    // Every caller that instantiates a function with an autodiff backend, as the marking above
    // decides (a call through several candidates too), for functions only callers made autodiff.
    let mut callers: Vec<(FnId, FnId)> = Vec::new();
    for (caller, ci, callees) in resolved {
        let [callee] = callees.as_slice() else { continue };
        if files[callee.0].1[callee.1].autodiff_from.is_empty() {
            continue;
        }
        let (file, g) = (&files[caller.0].0, &files[caller.0].1[caller.1]);
        let site = &g.call_sites[*ci];
        if g.is_test && !files[callee.0].1[callee.1].is_test {
            continue;
        }
        if site.turbofish_autodiff.unwrap_or_else(|| g.autodiff && !handed_inert(g, site)) {
            let training = site.in_loop.is_some_and(|l| g.loop_or_outer_runs_backward(l));
            let (line, _) = file.line_col(site.span.start);
            calls.push((*callee, training, (file.path().to_path_buf(), line, g.name())));
        }
    }
    // Stable: training calls first, then in the order found.
    let instantiated = files.iter().flat_map(|(_, graphs)| graphs.iter()).any(|g| !g.autodiff_from.is_empty());
    for (caller, ci, callees) in resolved.iter().filter(|_| instantiated) {
        let g = &files[caller.0].1[caller.1];
        let site = &g.call_sites[*ci];
        let dispatch = callees.len() == 1 || site.type_param_dispatch || site.receiver_generic || site.receiver_dyn;
        if !dispatch || !site.turbofish_autodiff.unwrap_or_else(|| g.autodiff && !handed_inert(g, site)) {
            continue;
        }
        for callee in callees {
            let c = &files[callee.0].1[callee.1];
            if callee != caller && !c.autodiff_from.is_empty() && (c.is_test || !g.is_test) {
                callers.push((*callee, *caller));
            }
        }
    }
    callers.sort_unstable();
    callers.dedup();
    for group in callers.chunk_by(|a, b| a.0 == b.0) {
        let id = group[0].0;
        files[id.0].1[id.1].autodiff_callers = group.iter().map(|&(_, caller)| caller).collect();
    }
    calls.sort_by_key(|(id, training, _)| (*id, !*training));
    for group in calls.chunk_by(|a, b| a.0 == b.0) {
        let id = group[0].0;
        let f = &mut files[id.0].1[id.1];
        let mut named = group.iter().map(|(_, _, from)| from.clone());
        let first = named.next().or_else(|| f.autodiff_from.pop());
        f.autodiff_from = first.into_iter().collect();
        let also: Vec<_> = named.filter(|n| Some(n) != f.autodiff_from.first()).take(MAX_ALSO_NAMED).collect();
        f.autodiff_from.extend(also);
    }
}

/// Further calls that instantiate a generic function with an autodiff backend, named in its
/// findings beside the first.
const MAX_ALSO_NAMED: usize = 3;

/// Calls of functions that declare a host result (`fn validate<B>(model: &Lm<B>, ..) -> f32`,
/// also through the crate's structs of host fields: `fn self_play(net: &Net<B>, ..) ->
/// Vec<Example>`): the call's value carries nothing of what it is handed, neither a graph nor an
/// untracked model. Set before models are followed across calls, so that `(model, Report { val:
/// validate(&model.valid(), ..) })` is not taken for an untracked model, nor a trainer that
/// stores the examples a frozen copy played.
fn mark_plain_results(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    let mut dirty: Vec<FnId> = Vec::new();
    for (caller, ci, callees) in resolved {
        if !callees.iter().all(|c| files[c.0].1[c.1].returns_host_data) {
            continue;
        }
        let g = &mut files[caller.0].1[caller.1];
        let result = g.call_sites[*ci].result;
        if !matches!(g.graph[result].kind, NodeKind::Value(super::graph::Producer::Plain)) {
            g.graph[result].kind = NodeKind::Value(super::graph::Producer::Plain);
            // Taint is recomputed from scratch: only a result that carries some now changes
            // what the passes below see before the next propagation.
            if g.graph[result].taint != Taint::NONE {
                dirty.push(*caller);
            }
        }
    }
    dirty.sort_unstable();
    dirty.dedup();
    for (fi, gi) in dirty {
        files[fi].1[gi].propagate();
    }
}

/// Marks the functions whose result some caller backpropagates: the call's value is among what
/// a backward's loss in the caller is computed from.
fn mark_backpropagated_results(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    // To a fixpoint: a function whose own result a caller backpropagates hands that backward
    // on to the calls its returned value is computed from (`sequence_loss` returning
    // `sequence_output(..).mean()`).
    let mut masks: Vec<(FnId, bool, Vec<bool>)> = Vec::new();
    loop {
        let mut marked: Vec<FnId> = Vec::new();
        for (caller, ci, callees) in resolved {
            let g = &files[caller.0].1[caller.1];
            let through_result = g.result_backpropagated;
            if g.losses.is_empty() && g.handed_backward.is_empty() && !through_result {
                continue;
            }
            let i = match masks.iter().position(|(id, r, _)| id == caller && *r == through_result) {
                Some(i) => i,
                None => {
                    masks.push((*caller, through_result, g.upstream_of_backwards(through_result)));
                    masks.len() - 1
                }
            };
            if masks[i].2.get(g.call_sites[*ci].result.index()).copied().unwrap_or(false) {
                marked.extend(callees.iter().copied().filter(|c| !files[c.0].1[c.1].result_backpropagated));
            }
        }
        if marked.is_empty() {
            break;
        }
        for id in marked {
            files[id.0].1[id.1].result_backpropagated = true;
        }
    }
}

/// burn: the methods of a `ModuleMapper` whose every application in the crate is made untracked
/// at once (`self.target = self.target.clone().map(&mut polyak).no_grad()`) rewrite parameters
/// that chain nothing.
fn mark_untracked_mappers(files: &mut [(Arc<SourceFile>, Vec<FnModel>)]) {
    let mut uses: HashMap<String, bool> = HashMap::default();
    for g in files.iter().flat_map(|(_, graphs)| graphs.iter()) {
        for (ty, _, untracked) in &g.mapper_uses {
            *uses.entry(ty.clone()).or_insert(true) &= *untracked;
        }
    }
    if !uses.values().any(|&u| u) {
        return;
    }
    for g in files.iter_mut().flat_map(|(_, graphs)| graphs.iter_mut()) {
        if !g.param_rewrites.is_empty() && g.owner.as_ref().is_some_and(|o| uses.get(o) == Some(&true)) {
            g.rewrites_untracked = true;
        }
    }
}

/// Values a call hands to a parameter that the callee backpropagates (its losses are computed
/// from it) are losses of the caller too (`trainer.step(&chunk)`): to a fixpoint through chains
/// of such calls.
fn mark_handed_losses(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    let has_losses = |g: &FnModel| !g.losses.is_empty() || !g.handed_losses.is_empty();
    if !files.iter().flat_map(|(_, graphs)| graphs.iter()).any(has_losses) {
        return;
    }
    for _ in 0..MAX_ROUNDS {
        // Each callee's backpropagated parameters (bit `i` for parameter `i`), and those it runs
        // backward on themselves.
        let mut loss_params: HashMap<FnId, (u64, u64)> = HashMap::default();
        let mut added: Vec<(FnId, NodeIndex, bool)> = Vec::new();
        for (caller, ci, callees) in resolved {
            let site = &files[caller.0].1[caller.1].call_sites[*ci];
            if site.args.is_empty() || !callees.iter().all(|c| has_losses(&files[c.0].1[c.1])) {
                continue;
            }
            let (mut params, mut direct) = (u64::MAX, u64::MAX);
            for c in callees {
                let (mask, own) = *loss_params.entry(*c).or_insert_with(|| {
                    let g = &files[c.0].1[c.1];
                    if g.losses.is_empty() && g.handed_losses.is_empty() {
                        return (0, 0);
                    }
                    let upstream = g.upstream_of_losses(false);
                    let bits = |keep: &dyn Fn(NodeIndex) -> bool| {
                        g.params
                            .iter()
                            .take(64)
                            .enumerate()
                            .filter(|(_, p)| p.is_some_and(keep))
                            .fold(0, |m, (i, _)| m | (1 << i))
                    };
                    (bits(&|p| upstream[p.index()]), bits(&|p| g.losses.contains(&p) || g.handed_backward.contains(&p)))
                });
                params &= mask;
                direct &= own;
            }
            if callees.is_empty() || params == 0 {
                continue;
            }
            let g = &files[caller.0].1[caller.1];
            for (i, a) in site.args.iter().enumerate().take(64) {
                if params & (1 << i) != 0 {
                    let own = direct & (1 << i) != 0;
                    added.extend(
                        a.reads
                            .iter()
                            .filter(|n| !g.handed_losses.contains(n) || (own && !g.handed_backward.contains(n)))
                            .map(|&n| (*caller, n, own)),
                    );
                }
            }
        }
        if added.is_empty() {
            return;
        }
        for (caller, n, own) in added {
            let g = &mut files[caller.0].1[caller.1];
            if !g.handed_losses.contains(&n) {
                g.handed_losses.push(n);
            }
            if own && !g.handed_backward.contains(&n) {
                g.handed_backward.push(n);
            }
        }
    }
}

/// Marks the functions a training step runs: those called in a loop that runs backward (or
/// nested in one), then, to a fixpoint, every function such a function calls.
fn mark_per_step(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    mark_callees(
        files,
        resolved,
        |_, g, site, c, _| {
            let in_step = g.per_step_from.is_some() || site.in_loop.is_some_and(|l| g.loop_or_outer_runs_backward(l));
            in_step && c.per_step_from.is_none()
        },
        |c, from| c.per_step_from = Some(from),
    );
}

/// The most literal passes a function's own training loop may make over one batch and still be
/// one update of its caller's loop (not an epoch).
const UPDATE_PASSES_MAX: u64 = 64;

/// Marks the functions an innermost training iteration runs (see `FnModel::per_iteration_from`):
/// calls in a loop that runs backward and trains in no loop nested in it, inline or in a function
/// it calls; then, to a fixpoint, what those call.
fn mark_per_iteration(files: &mut [(Arc<SourceFile>, Vec<FnModel>)], resolved: &[(FnId, usize, Vec<FnId>)]) {
    use super::graph::LoopId;
    // Functions with a loop of their own that runs backward over data (an epoch): not one of a
    // few literal passes (`for _ in 0..20 { ..backward.. }` on one batch is one update).
    let trains_in_loop: HashSet<FnId> = files
        .iter()
        .enumerate()
        .flat_map(|(fi, (_, graphs))| graphs.iter().enumerate().map(move |(gi, g)| ((fi, gi), g)))
        .filter(|(_, g)| {
            g.loops.iter().enumerate().any(|(l, s)| s.runs_backward && !g.literally_bounded(Some(l), UPDATE_PASSES_MAX))
        })
        .map(|(id, _)| id)
        .collect();
    // The loops around a call that reaches one: they train in a nested loop (epochs, sweeps).
    let mut outer: HashSet<(FnId, LoopId)> = HashSet::default();
    for (caller, ci, callees) in resolved {
        if callees.iter().any(|c| trains_in_loop.contains(c)) {
            let g = &files[caller.0].1[caller.1];
            let mut at = g.call_sites[*ci].in_loop;
            while let Some(l) = at {
                outer.insert((*caller, l));
                at = g.loops[l].parent;
            }
        }
    }
    // The innermost loop around `l` (itself included) that runs backward.
    let training_loop = |g: &FnModel, l: LoopId| {
        let mut at = Some(l);
        while let Some(i) = at {
            if g.loops[i].runs_backward {
                return Some(i);
            }
            at = g.loops[i].parent;
        }
        None
    };
    mark_callees(
        files,
        resolved,
        |caller, g, site, c, _| {
            let innermost = site
                .in_loop
                .and_then(|l| training_loop(g, l))
                .is_some_and(|t| !g.has_inner_training_loop(t) && !outer.contains(&(caller, t)));
            let in_step = innermost || (site.in_loop.is_none() && g.per_iteration_from.is_some());
            in_step && c.per_iteration_from.is_none()
        },
        |c, from| c.per_iteration_from = Some(from),
    );
}

/// Marks callees to a fixpoint: `reaches(caller, site, callee, candidates)` says whether a call
/// marks a callee given the marks so far (`candidates`: how many functions the call may
/// reach); `mark` records the mark with the call (file, line, caller's name).
fn mark_callees(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    resolved: &[(FnId, usize, Vec<FnId>)],
    reaches: impl Fn(FnId, &FnModel, &super::graph::CallSite, &FnModel, usize) -> bool,
    mark: impl Fn(&mut FnModel, (std::path::PathBuf, usize, String)),
) {
    loop {
        let mut made: Vec<(FnId, (std::path::PathBuf, usize, String))> = Vec::new();
        let mut marked: HashSet<FnId> = HashSet::default();
        for (caller, ci, callees) in resolved {
            let (file, g) = (&files[caller.0].0, &files[caller.0].1[caller.1]);
            let site = &g.call_sites[*ci];
            for callee in callees {
                let c = &files[callee.0].1[callee.1];
                if callee == caller || !reaches(*caller, g, site, c, callees.len()) || !marked.insert(*callee) {
                    continue;
                }
                let (line, _) = file.line_col(site.span.start);
                made.push((*callee, (file.path().to_path_buf(), line, g.name())));
            }
        }
        if made.is_empty() {
            return;
        }
        for ((fi, gi), from) in made {
            mark(&mut files[fi].1[gi], from);
        }
    }
}

/// The receiver or an argument of a call is a model made inert (`model.valid()`).
fn handed_inert(g: &FnModel, site: &super::graph::CallSite) -> bool {
    let inert = |n: NodeIndex| g.graph[n].taint.has(Taint::INERT_MODEL);
    site.receiver.is_some_and(inert)
        || site
            .args
            .iter()
            .any(|a| matches!(a.producer, super::graph::Producer::InertModel) || a.reads.iter().any(|&n| inert(n)))
}

/// Names found in a crate's text before parsing, by a byte scan far cheaper than parsing.
#[derive(Debug, Default)]
pub struct CrateNames {
    /// Names after `fn`: only calls to these are recorded as call sites. Names in comments or
    /// strings only cost a few extra call sites.
    pub(super) fns: HashSet<String>,
    /// burn: the crate's `ModuleMapper`s that freeze what they map (`impl<B: Backend>
    /// ModuleMapper<B> for Freeze { .. t.set_require_grad(false) }`): `model.map(&mut Freeze)`
    /// records no graph.
    pub(super) freezing_mappers: HashSet<String>,
    /// burn: every `ModuleMapper` of the crate (the self types of its impls).
    pub(super) module_mappers: HashSet<String>,
    /// Names declared only as arrays of host numbers (`alphas: Vec<f64>`, `betas: [f32; 1000]`):
    /// indexing one (`self.alphas[t]`) picks a number, not a part of a model.
    pub(super) host_array_fields: HashSet<String>,
    /// candle: struct fields and parameters declared as a recurrent cell of `candle_nn::rnn`
    /// (`lstm: LSTM`, `cell: candle_nn::GRU`): its `step(&x, &state)` is a forward pass.
    pub(super) rnn_fields: HashSet<String>,
    /// Names declared (as fields or parameters) only with host types (`policy_loss: f32`,
    /// `mean_reward: f64`) and never with any other type: reading such a field gives no graph.
    pub(super) plain_fields: HashSet<String>,
    /// Struct fields, by struct, whose type names burn's inner backend in every
    /// definition of the struct (`model: Seg<B::InnerBackend>`): a model read from one records no
    /// graph.
    pub(super) inner_fields: HashMap<String, HashSet<String>>,
    /// Of those, the tensor fields (`hidden: Tensor<B::InnerBackend, 2>`): whatever is written
    /// to one holds no graph (Rust would not let an autodiff tensor in).
    pub(super) inner_tensor_fields: HashMap<String, HashSet<String>>,
    /// Struct fields, by struct, declared as a framework's variable or a sequence of them (candle
    /// `w: Var`, `sources: Vec<Var>`), with the variable type's name and whether it is a
    /// sequence: reading one reads trainable values, as a `vars: &[Var]` parameter does.
    pub(super) variable_fields: HashMap<String, Vec<(String, String, bool)>>,
    /// Struct fields, by struct, declared as a collection of trait objects (`metrics:
    /// Vec<Box<dyn Metric<B>>>`): a loop over one calls the method of every impl it holds.
    pub(super) dyn_collection_fields: HashMap<String, HashSet<String>>,
    /// burn: structs whose fields hold only plain tensors, host values and other such structs,
    /// never a `Param` or a module of the framework (`struct Gpt2LinearLayer<B: Backend> { weights:
    /// Tensor<B, 2>, bias: Tensor<B, 1> }`), in every definition: their tensors are constants, so a
    /// forward pass through one records no graph state of its own. Empty when the crate asks a
    /// tensor to require gradients anywhere (`require_grad()`).
    pub(super) paramless_structs: HashSet<String>,
    /// burn 0.22: some text of the crate calls `.autodiff()` (makes an autodiff device).
    pub(super) makes_autodiff_device: bool,
    /// The crate's integer constants and constant arrays, by name: the value of `const STEPS:
    /// usize = 8;`, the length of `const PROMPTS: [&str; 3] = [..];` (`None`: declared more than
    /// once with different values).
    pub(super) consts: HashMap<String, Option<u64>>,
    /// Names declared (as fields or parameters) with a gradient store's type
    /// (`zeroed: Gradients<f32, Cpu>`).
    pub(super) grads_fields: HashSet<String>,
    /// Forward-pass names (`apply`, `forward`) whose every definition in the crate declares a
    /// host return type (`fn apply(&self, mean: &[f32]) -> Vec<f32>`): a call to one of them is
    /// the crate's own and returns no graph.
    pub(super) plain_fns: HashSet<String>,
    /// Type aliases that name an autodiff backend (`type TrainingBackend = Autodiff<Wgpu>;`,
    /// and aliases of those): a type written with one is autodiff as if it said `Autodiff<_>`.
    pub(super) autodiff_aliases: HashSet<String>,
    /// Whether the crate's top-level `type Backend = ..;` aliases (a name the crate-wide lists
    /// leave out: it is also burn's trait) name an autodiff backend, when every one of them
    /// agrees: a module that imports it from the crate (`use backend::{Backend, Device};`) means
    /// that alias, not the trait.
    pub(super) backend_alias: Option<bool>,
    /// Type aliases that name one of burn's backends without autodiff (`type MyBackend =
    /// Wgpu<f32>;`, and aliases of those), in every declaration of that name in the crate.
    pub(super) plain_aliases: HashSet<String>,
    /// Names of the crate's own `macro_rules!` macros that take expressions or blocks: their
    /// arguments are walked as code.
    pub(super) macros: HashSet<String>,
    /// Functions whose every definition in the crate returns a tuple (`-> Result<(Vec<Ctx>,
    /// usize)>`), with which of its elements have host types: `let (ctx, step) = f()?` binds
    /// `step` to a host number whatever `ctx` holds.
    pub(super) tuple_fns: HashMap<String, Vec<bool>>,
    /// Functions whose every definition in the crate returns a tuple of one size (`-> (Self,
    /// Tensor<B, 2>)`): its size. A `let` that destructures a call of one follows each element
    /// (see `CallSite::elems`).
    pub(super) tuple_arity: HashMap<String, usize>,
    /// Functions whose every definition in the crate returns one named type (through
    /// `Result<..>`/`Option<..>` and paths: `fn build(&self) -> Result<t5::T5Model>` gives
    /// `T5Model`): what a call of one makes.
    pub(super) return_types: HashMap<String, String>,
    /// Functions whose every definition declares a result holding trainable variables (`fn
    /// student_vars(vm: &VarMap) -> Vec<(Var, Var)>`): what a call of one binds is variables.
    pub(super) variable_returns: HashSet<String>,
    /// Methods whose every definition in the crate hands out a mutable reference (`fn
    /// get_or_create(&mut self, user: u64) -> Result<&mut Session>`): a local bound to a call
    /// of one is a place inside the receiver, and a write through it writes the receiver.
    pub(super) mut_ref_returns: HashSet<String>,
    /// burn: functions whose every definition in the crate declares a result on the inner
    /// backend and no other backend (`fn fit<B: AutodiffBackend>(..) -> Option<(f32,
    /// Net<B::InnerBackend>)>`): what a call of one hands back records no graph.
    pub(super) inner_returns: HashSet<String>,
    /// Functions whose declared result names an autodiff backend (`fn train(..) ->
    /// WindowMlp<Ad>` with `type Ad = Autodiff<Wgpu>;`), in every definition that names generic
    /// arguments: a local bound to a call of one holds an autodiff model.
    pub(super) autodiff_fns: HashSet<String>,
    /// Structs whose every definition in the crate has only fields of host types (numbers,
    /// `bool`, strings, and `Vec`s, `Option`s, arrays and tuples of them, or of other such
    /// structs): a value of one holds no tensor (`struct TrainStats { loss: f32, samples: usize }`).
    pub(super) host_structs: HashSet<String>,
    /// Structs of the crate that hold tensors as data, not as a model: a field names a tensor, a
    /// framework's state type (`Spec::state_types`) or another such struct (`struct Carry { h:
    /// Tensor, c: Tensor }`, `struct Hidden<B: Backend> { state: LstmState<B, 2> }`). Not burn
    /// modules (`#[derive(Module)]`). A function declared to return one hands on what it is
    /// computed from, as one declared to return a tensor does.
    pub(super) tensor_structs: HashSet<String>,
    /// Names of every `type Name<..> = ..;` alias of the crate, generic ones included: a call
    /// qualified by one (`MyAgent::act(..)`) may be a call of the aliased type's function.
    pub alias_names: HashSet<String>,
    /// For the framework's training-call names (`step`, `backward`, ..): the crate's types that
    /// define a method of that name (`impl<B> Trainer<B> { fn step(&self, ..) }`). A call of it on
    /// a value of such a type is the crate's own method, not the framework's.
    pub(super) vocab_owners: HashMap<&'static str, HashSet<String>>,
    /// Fields declared with one of those types (owner, field → type: `cell: Cell` in `struct
    /// Layer`), or with a type that leads to one through its fields (`enc: Encoder` holding
    /// `cell: Cell`): `self.cell.step(x)` and `self.enc.cell.step(x)` are the crate's own
    /// methods too.
    pub(super) vocab_fields: HashMap<(String, String), String>,
    /// Likewise for the collections' store names (`push`, `insert`, ..): the crate's types that
    /// define such a method (`impl RunningLoss { fn push(&mut self, loss: &Tensor) }`). A call of
    /// it on a value of such a type is the crate's own method, not `Vec::push`.
    pub(super) store_owners: HashMap<&'static str, HashSet<String>>,
    /// For tensor-method names (`add`, `sub`, `lerp`, `select`): the crate's types that define a
    /// method of that name (`impl EpochStats { fn add(&mut self, l: Tensor<B, 1>) }`, `impl
    /// PseudoLabeler { fn select(&mut self, model: &Net, u: Tensor<2>) }`), or like a tensor's
    /// method that runs a module (`impl Rotation { fn apply(&self, x: &Tensor) }`). A call of it
    /// on a value of such a type is the crate's method, not a tensor operation or forward pass.
    pub(super) tensor_name_owners: HashMap<String, HashSet<String>>,
    /// Structs with a field typed by one of their own type parameters (`struct Session<E, A> {
    /// agent: A, .. }`): a local built by one of their constructors records the types it is
    /// handed (see `FnModel::ctor_types`).
    pub(super) param_field_structs: HashSet<String>,
}

impl CrateNames {
    /// Whether a type's path segment names an autodiff backend: burn's names, or one of the
    /// crate's aliases of them.
    pub(super) fn is_autodiff_name(&self, name: &str) -> bool {
        crate::frameworks::common::is_autodiff_name(name)
            || (!self.autodiff_aliases.is_empty() && self.autodiff_aliases.contains(name))
    }
}

/// The `const NAME: T = value;` at byte `at` of `text` as (name, value), for an integer value
/// (`8`, `1_000usize`) or an array type's literal length (`[&str; 3]`); `None` for others.
fn const_at(text: &str, at: usize) -> Option<(&str, u64)> {
    let bytes = text.as_bytes();
    if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
        return None;
    }
    let rest = text[at + "const ".len()..].trim_start();
    let len = rust::ident_len(rest);
    let name = &rest[..len];
    if len == 0 || name == "fn" || !name.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    let rest = rest[len..].trim_start().strip_prefix(':')?;
    let (ty, rest) = rest.split_once('=')?;
    let value = &rest[..rest.find(';')?];
    const INTS: &[&str] = &["usize", "u64", "u32", "u16", "u8", "i64", "i32"];
    let int = |s: &str| -> Option<u64> {
        let s = s.trim();
        let end = s.find(|c: char| !(c.is_ascii_digit() || c == '_')).unwrap_or(s.len());
        let (number, suffix) = s.split_at(end);
        if number.is_empty() || !(suffix.is_empty() || INTS.contains(&suffix)) {
            return None;
        }
        number.replace('_', "").parse().ok()
    };
    let ty = ty.trim();
    if let Some(array) = ty.strip_prefix('[') {
        return Some((name, int(array.strip_suffix(']')?.rsplit_once(';')?.1)?));
    }
    INTS.contains(&ty).then_some(())?;
    Some((name, int(value)?))
}

/// The first of `stops` in `s` outside angle brackets (`<..>`), with its byte position.
fn first_outside_angles(s: &str, stops: &[char]) -> Option<(usize, char)> {
    let mut depth = 0usize;
    // Bytes: every character looked for is ASCII, and no byte of a multi-byte character is.
    s.bytes().enumerate().map(|(i, b)| (i, char::from(b))).find(|&(_, c)| match c {
        '<' => {
            depth += 1;
            false
        }
        '>' => {
            depth = depth.saturating_sub(1);
            false
        }
        c => depth == 0 && c.is_ascii() && stops.contains(&c),
    })
}

/// Whether the type that `ty` starts with (up to a `,`, `)`, `;`, `{` or `=` outside angle
/// brackets, or the end of the line) names burn's inner backend (`Seg<B::InnerBackend>`,
/// `Tensor<B::InnerBackend, 2>`, `<B as AutodiffBackend>::InnerModule`).
fn names_inner_backend(ty: &str) -> bool {
    if memchr::memmem::find(ty.as_bytes(), b"Inner").is_none() {
        return false;
    }
    let end = first_outside_angles(ty, &[',', ')', ';', '{', '=', '\n']).map_or(ty.len(), |(i, _)| i);
    let ty = &ty[..end];
    ["InnerBackend", "InnerModule"].iter().any(|n| {
        memchr::memmem::find_iter(ty.as_bytes(), n.as_bytes())
            .any(|at| !ty[at + n.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
    })
}

/// `type Name = …;` declarations in `text` into `out`, as (name, right-hand side); generic
/// aliases, trait associated types without `=` and names too generic to trust (`Backend`, one
/// letter or two capitals, which also name generic parameters) are left out. The names of all
/// aliases, generic ones included, go into `names`.
fn type_aliases_and_names<'a>(
    text: &'a str,
    out: &mut Vec<(&'a str, &'a str)>,
    names: &mut HashSet<String>,
    shorthands: &mut Vec<(&'a str, &'a str)>,
    backends: &mut Vec<&'a str>,
) {
    shorthands.clear();
    let mut twice: Vec<&str> = Vec::new();
    for at in memchr::memmem::find_iter(text.as_bytes(), b"type ") {
        // `type Backend = Autodiff<NdArray>;` at the top level of its file (see
        // `CrateNames::backend_alias`).
        if text[at + 5..].starts_with("Backend")
            && at_line_start(text, at)
            && let Some(rhs) = text[at + 5 + "Backend".len()..].trim_start().strip_prefix('=')
            && let Some(end) = rhs.find(';')
        {
            backends.push(&rhs[..end]);
        }
        if let Some(shorthand) = top_level_shorthand(text, at) {
            if shorthands.iter().any(|(n, _)| *n == shorthand.0) {
                twice.push(shorthand.0);
            }
            shorthands.push(shorthand);
            continue;
        }
        if let Some((name, rhs)) = alias_at(text, at, true) {
            // A generic alias is not taken for a backend alias.
            if !text[at + 5 + name.len()..].trim_start().starts_with('<') {
                out.push((name, rhs));
            }
            if !names.contains(name) {
                names.insert(name.to_string());
            }
        }
    }
    shorthands.retain(|(n, _)| !twice.contains(n));
}

/// A top-level alias with a name as short as a type parameter's (`type B = Autodiff<Wgpu>;` in
/// `main.rs`) declared by the `type ` at byte `at`, which the crate-wide list leaves out, as
/// (name, right-hand side).
fn top_level_shorthand(text: &str, at: usize) -> Option<(&str, &str)> {
    let rest = &text[at + 5..];
    let name = &rest[..rust::ident_len(rest)];
    let generic_like = name.len() == 1 || (name.len() == 2 && name.bytes().all(|b| b.is_ascii_uppercase()));
    if !generic_like || !at_line_start(text, at) {
        return None;
    }
    let rhs = rest[name.len()..].trim_start().strip_prefix('=')?;
    Some((name, &rhs[..rhs.find(';')?]))
}

/// Whether the item keyword at byte `at` starts its line, after nothing but a visibility (`pub`,
/// `pub(crate)`): an item at the top level of its file, as rustfmt lays it out.
fn at_line_start(text: &str, at: usize) -> bool {
    let line = &text[text[..at].rfind('\n').map_or(0, |i| i + 1)..at];
    let line = line.strip_prefix("pub").map_or(line, |rest| {
        let rest = rest.trim_start();
        rest.strip_prefix('(').and_then(|r| r.split_once(')')).map_or(rest, |(_, after)| after.trim_start())
    });
    line.is_empty()
}

/// The alias declared by the `type ` at byte `at` of `text`, as (name, right-hand side).
fn alias_at(text: &str, at: usize, generics: bool) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
        return None;
    }
    let rest = &text[at + 5..];
    let len = rust::ident_len(rest);
    let name = &rest[..len];
    let mut after = rest[len..].trim_start();
    if generics && after.starts_with('<') {
        // Skip the parameter list, nested brackets included (`<T: Into<f32>>`).
        let mut depth = 0usize;
        let close = after.bytes().enumerate().find_map(|(i, c)| {
            match c {
                b'<' => depth += 1,
                b'>' => depth = depth.saturating_sub(1),
                _ => {}
            }
            (depth == 0).then_some(i)
        })?;
        after = after[close + 1..].trim_start();
    }
    let rhs = after.strip_prefix('=')?;
    let rhs = &rhs[..rhs.find(';')?];
    // A module's shorthand that shadows the type it aliases (`type Model =
    // crate::model::Model<NdArrayAutodiff>;`, `type Tensor<const D: usize> =
    // burn::tensor::Tensor<..>;` in tests) names that type only in its own module.
    let head = alias_head_of(rhs);
    // One letter, or two capitals, reads as a generic parameter (`B`, `AD`) elsewhere.
    let generic_like = name.len() <= 1 || (name.len() == 2 && name.bytes().all(|b| b.is_ascii_uppercase()));
    (!(generic_like || name == "Backend" || name == head)).then_some((name, rhs))
}

/// The type an alias's right-hand side names (`crate::agent::Ppo<E, B>` → `Ppo`).
fn alias_head_of(rhs: &str) -> &str {
    let head = rhs.split('<').next().unwrap_or(rhs).trim();
    head.rsplit("::").next().unwrap_or(head).trim()
}

/// The type that `name` aliases in `text` (`type MyAgent<E, B> = Ppo<E, B, Net<B>>;` makes
/// `MyAgent::act(..)` a call of `Ppo::act`), generic aliases included.
fn alias_head<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    memchr::memmem::find_iter(text.as_bytes(), name.as_bytes())
        .filter(|&at| at >= 5 && text.as_bytes()[..at].ends_with(b"type "))
        .find_map(|at| alias_at(text, at - 5, true).filter(|(n, _)| *n == name))
        .map(|(_, rhs)| alias_head_of(rhs))
}

/// The aliases among `aliases` that name an autodiff backend, directly or through another.
fn autodiff_aliases(aliases: &[(&str, &str)]) -> HashSet<String> {
    let mut found: HashSet<String> = HashSet::default();
    loop {
        let before = found.len();
        for (name, rhs) in aliases {
            if found.contains(*name) {
                continue;
            }
            let names_autodiff = rhs
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| crate::frameworks::common::is_autodiff_name(w) || (!found.is_empty() && found.contains(w)));
            if names_autodiff {
                found.insert(name.to_string());
            }
        }
        if found.len() == before {
            break;
        }
    }
    // A name aliased differently in different modules (`type TestBackend = NdArray;` in one test
    // module, `= Autodiff<NdArray>` in another) is not known to be autodiff where it is used.
    let names_autodiff = |rhs: &str| {
        rhs.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| crate::frameworks::common::is_autodiff_name(w) || found.contains(w))
    };
    let ambiguous: Vec<&str> =
        aliases.iter().filter(|(name, rhs)| found.contains(*name) && !names_autodiff(rhs)).map(|(n, _)| *n).collect();
    for name in ambiguous {
        found.remove(name);
    }
    found
}

/// The aliases of burn's backends without autodiff: every declaration of the name names one (or
/// an alias of one) and none names autodiff (`type MyBackend = Wgpu<f32>;` next to `type
/// MyAutodiffBackend = Autodiff<MyBackend>;`: only the first).
fn plain_aliases(aliases: &[(&str, &str)], autodiff: &HashSet<String>) -> HashSet<String> {
    fn words(rhs: &str) -> Vec<&str> {
        rhs.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect()
    }
    let mut found: HashSet<String> = HashSet::default();
    loop {
        let before = found.len();
        for (name, rhs) in aliases {
            if found.contains(*name) || autodiff.contains(*name) {
                continue;
            }
            let w = words(rhs);
            let plain =
                w.iter().any(|w| crate::frameworks::common::PLAIN_BACKEND_NAMES.contains(w) || found.contains(*w))
                    && !w.iter().any(|w| crate::frameworks::common::is_autodiff_name(w) || autodiff.contains(*w));
            if plain {
                found.insert(name.to_string());
            }
        }
        if found.len() == before {
            break;
        }
    }
    // Every declaration of the name must say so (`cfg`-chosen backends are all plain here).
    let ambiguous: Vec<String> = found
        .iter()
        .filter(|name| {
            aliases.iter().filter(|(n, _)| n == name).any(|(_, rhs)| {
                let w = words(rhs);
                !w.iter().any(|w| crate::frameworks::common::PLAIN_BACKEND_NAMES.contains(w) || found.contains(*w))
                    || w.iter().any(|w| crate::frameworks::common::is_autodiff_name(w) || autodiff.contains(*w))
            })
        })
        .cloned()
        .collect();
    for name in ambiguous {
        found.remove(&name);
    }
    found
}

/// Whether the function whose name ends at `from` in `text` declares a host return type
/// (`-> Vec<f32>`, `-> (f32, usize)`), or none (`fn apply(&mut self, log: &mut Log)` returns
/// `()`); `None` when it cannot be told.
fn declares_plain_return(text: &str, from: usize) -> Option<bool> {
    let Some(ret) = return_type(text, from) else {
        // A signature with no `->` before its body (or its `;`): unit.
        return memchr::memchr2(b'{', b';', &text.as_bytes()[from..]).map(|_| true);
    };
    // Words only, not a parse (this runs for every function of the crate): plain when every
    // type named is a host type or a container of them (`Vec<f32>`, `Option<(f32, usize)>`),
    // and for `Result<T, E>` only `T` counts.
    let value = match ret.strip_prefix("Result<") {
        Some(inner) => top_level_first_arg(inner),
        None => ret,
    };
    let mut words = value.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty());
    let mut any = false;
    let plain = words.all(|w| {
        any = true;
        super::rust::is_host_type(w) || CONTAINERS.contains(&w) || w.chars().all(|c| c.is_ascii_digit())
    });
    Some(plain && any)
}

/// The return type written in the signature that starts after a function's name at `from`
/// (`None` without one): after the `->` outside the parameters' parentheses and generics.
fn return_type(text: &str, from: usize) -> Option<&str> {
    // The signature runs to the body or the `;` of a trait declaration.
    let end = memchr::memchr2(b'{', b';', &text.as_bytes()[from..]).map_or(text.len(), |p| from + p);
    let sig = &text[from..end];
    let bytes = sig.as_bytes();
    let (mut depth, mut arrow) = (0i32, None);
    let mut k = 0;
    while k < bytes.len() {
        match bytes[k] {
            b'-' if bytes.get(k + 1) == Some(&b'>') => {
                if depth == 0 {
                    arrow = Some(k + 2);
                    break;
                }
                k += 1;
            }
            b'(' | b'<' | b'[' => depth += 1,
            b')' | b'>' | b']' => depth -= 1,
            _ => {}
        }
        k += 1;
    }
    let ret = &sig[arrow?..];
    Some(ret.split(" where").next().unwrap_or(ret).trim())
}

/// Whether a declared result names burn's inner backend and no other backend (words only, not a
/// parse): `Net<B::InnerBackend>`, `Option<(f32, Net<<B as AutodiffBackend>::InnerBackend>)>`,
/// `Result<M::InnerModule>`; not `(Net<B>, Net<B::InnerBackend>)`, whose bare `B` may be
/// autodiff. For `Result<T, E>` only `T` counts.
fn inner_return(ret: &str) -> bool {
    let ret = unwrapped(ret);
    if !(ret.contains("InnerBackend") || ret.contains("InnerModule")) {
        return false;
    }
    // Every generic argument that is a bare name (`B`, `Ad`, `MyBackend`, not `B::InnerBackend`,
    // `f32`, `2`) may be a backend: then not only the inner one.
    let bytes = ret.as_bytes();
    let mut open: Vec<u8> = Vec::new();
    let mut start = None;
    for (k, &c) in bytes.iter().enumerate() {
        if matches!(c, b'<' | b'(' | b'[' | b',' | b'>' | b')' | b']') {
            if let Some(s) = start.take()
                && open.last() == Some(&b'<')
                && c != b'<'
            {
                let piece = ret[s..k].trim();
                let bare = !piece.is_empty()
                    && piece.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && !piece.bytes().all(|b| b.is_ascii_digit())
                    && !super::rust::is_host_type(piece);
                if bare {
                    return false;
                }
            }
            match c {
                b'<' | b'(' | b'[' => open.push(c),
                b'>' | b')' | b']' => {
                    open.pop();
                }
                _ => {}
            }
            if matches!(c, b'<' | b'(' | b'[' | b',') {
                start = Some(k + 1);
            }
        }
    }
    true
}

/// A return type without its `Result<..>`/`Option<..>` wrappers (for `Result<T, E>` only
/// `T`), also written with a path (`anyhow::Result<`, `std::io::Result<`).
fn unwrapped(mut ret: &str) -> &str {
    loop {
        let inner = ["Result<", "Option<"].iter().find_map(|w| {
            let at = ret.find(w)?;
            ret[..at].chars().all(|c| c.is_alphanumeric() || c == '_' || c == ':').then(|| &ret[at + w.len()..])
        });
        match inner {
            Some(inner) => ret = top_level_first_arg(inner).trim(),
            None => return ret,
        }
    }
}

/// The type a function's return type `ret` names, by its last path segment, through
/// `Result<..>` and `Option<..>`: `Result<t5::T5Model>` gives `T5Model`. `None` for tuples,
/// `Self`, generic parameters, containers, tensors and host types.
fn return_head(ret: &str) -> Option<&str> {
    // A getter's `&mut blip_text::TextDecoder` or `&'a Model` names the type it lends.
    let mut ret = unwrapped(ret);
    while let Some(rest) = ret.strip_prefix('&') {
        let rest = rest.trim_start();
        let rest = match rest.strip_prefix('\'') {
            Some(lifetime) => &lifetime[rust::ident_len(lifetime)..],
            None => rest,
        };
        ret = rest.trim_start().strip_prefix("mut ").unwrap_or(rest).trim_start();
    }
    let path = ret.split('<').next()?.trim();
    let head = path.rsplit("::").next()?.trim();
    let named = head.len() > 1
        && head.starts_with(char::is_uppercase)
        && head.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !matches!(head, "Self" | "Vec" | "Box" | "String" | "Tensor" | "HashMap" | "Arc" | "Rc" | "VecDeque")
        && !super::rust::is_host_type(head);
    named.then_some(head)
}

/// The field types of every non-generic `struct Name { .. }` and `struct Name(..);` in `text`,
/// as written, into `out` (a generic struct is `None`: its parameters may be tensors).
/// Every `struct Name` of `text`: (byte of the keyword, the name, the text after the name).
fn structs_of(text: &str) -> impl Iterator<Item = (usize, &str, &str)> {
    let bytes = text.as_bytes();
    memchr::memmem::find_iter(bytes, b"struct ").filter_map(move |at| {
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            return None;
        }
        let rest = &text[at + 7..];
        let len = rust::ident_len(rest);
        (len > 0).then(|| (at, &rest[..len], &rest[len..]))
    })
}

fn struct_fields<'a>(text: &'a str, out: &mut HashMap<&'a str, Option<Vec<&'a str>>>) {
    for (_, name, after) in structs_of(text) {
        let after = after.trim_start();
        let fields = match after.as_bytes().first() {
            Some(&open @ (b'{' | b'(')) => {
                let close = if open == b'{' { b'}' } else { b')' };
                let mut depth = 0usize;
                let end = after.bytes().position(|b| {
                    if b == open {
                        depth += 1;
                    } else if b == close {
                        depth -= 1;
                    }
                    depth == 0
                });
                end.map(|end| field_types_of(&after[1..end], open == b'{'))
            }
            // Generic, `where` clauses, unit structs: not read.
            _ => None,
        };
        match out.get_mut(name) {
            Some(Some(known)) => match fields {
                Some(f) => known.extend(f),
                None => *out.get_mut(name).expect("present") = None,
            },
            Some(None) => {}
            None => {
                out.insert(name, fields);
            }
        }
    }
}

/// The named fields of every struct of `text`, generic ones included: into `typed` as
/// (struct, field, type text), and into `shapes` as the struct's header (its generics) and its
/// fields' types, every definition's together.
fn struct_shapes<'a>(
    text: &'a str,
    shapes: &mut HashMap<&'a str, (Vec<&'a str>, Vec<&'a str>)>,
    typed: &mut Vec<(&'a str, &'a str, &'a str)>,
    modules: &mut HashSet<&'a str>,
) {
    for (at, name, after) in structs_of(text) {
        // `#[derive(Module, Debug)]` in the attributes before it (since the previous item).
        let before =
            &text[text.as_bytes()[..at].iter().rposition(|&b| b == b'}' || b == b';').map_or(0, |i| i + 1)..at];
        if before.contains("derive(") && before.contains("Module") {
            modules.insert(name);
        }
        // Past the generics and `where` clause: the body's `{`, unless `;` or `(` comes first.
        let Some(open) = first_outside_angles(after, &['{', ';', '(']) else {
            continue;
        };
        if open.1 != '{' {
            continue;
        }
        let header = &after[..open.0];
        let body = &after[open.0 + 1..];
        let mut depth = 0usize;
        let Some(end) = body.bytes().enumerate().find_map(|(i, c)| match c {
            b'{' => {
                depth += 1;
                None
            }
            b'}' if depth == 0 => Some(i),
            b'}' => {
                depth -= 1;
                None
            }
            _ => None,
        }) else {
            continue;
        };
        for field in split_fields(&body[..end]) {
            let field = without_attributes(field);
            let b = field.as_bytes();
            let Some(colon) =
                (0..b.len()).find(|&i| b[i] == b':' && b.get(i + 1) != Some(&b':') && (i == 0 || b[i - 1] != b':'))
            else {
                continue;
            };
            let before = field[..colon].trim_end();
            let ident = &before[rust::ident_start(before)..];
            if ident.is_empty() {
                continue;
            }
            let ty = field[colon + 1..].trim_start();
            typed.push((name, ident, ty));
            let shape = shapes.entry(name).or_default();
            shape.1.push(ty);
            if shape.0.is_empty() {
                shape.0.push(header);
            }
        }
    }
}

/// A struct body split at its top-level commas.
fn split_fields(body: &str) -> Vec<&str> {
    let mut fields = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in body.bytes().enumerate() {
        match c {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' | b')' | b']' | b'}' => depth -= 1,
            b',' if depth == 0 => {
                fields.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    fields.push(&body[start..]);
    fields
}

/// The types of a struct body's fields (`pub loss: f32, #[serde(skip)] n: usize`).
fn field_types_of(body: &str, named: bool) -> Vec<&str> {
    split_fields(body)
        .into_iter()
        .map(|f| {
            let f = without_attributes(f);
            if named {
                // `name: Type`: what follows the first `:` that is not part of a `::`.
                let b = f.as_bytes();
                let colon =
                    (0..b.len()).find(|&i| b[i] == b':' && b.get(i + 1) != Some(&b':') && (i == 0 || b[i - 1] != b':'));
                colon.map_or("", |i| &f[i + 1..])
            } else {
                f
            }
        })
        .filter(|t| !t.trim().is_empty())
        .collect()
}

/// A field without the comments and `#[..]` attributes before it.
fn without_attributes(mut f: &str) -> &str {
    loop {
        f = f.trim_start();
        if f.starts_with("//") {
            f = f.find('\n').map_or("", |i| &f[i + 1..]);
        } else if f.starts_with("#[") {
            let mut depth = 0usize;
            let end = f.bytes().position(|b| {
                match b {
                    b'[' => depth += 1,
                    b']' => depth -= 1,
                    _ => {}
                }
                depth == 0
            });
            f = end.map_or("", |i| &f[i + 1..]);
        } else {
            return f;
        }
    }
}

/// Standard types that hold no tensor whatever they are used for.
const HOST_STD_TYPES: &[&str] = &["Duration", "Instant", "SystemTime", "PathBuf", "HashMap", "BTreeMap", "HashSet"];

/// The structs among `structs` whose fields hold host values only, directly or through other
/// such structs: the greatest set closed under that test.
fn host_structs(structs: &HashMap<&str, Option<Vec<&str>>>, consts: &HashMap<String, Option<u64>>) -> HashSet<String> {
    let word_ok = |w: &str, set: &HashSet<&str>| {
        rust::is_host_type(w)
            || CONTAINERS.contains(&w)
            || HOST_STD_TYPES.contains(&w)
            // Module paths (`std::time::Duration`), `pub`, lifetimes, array lengths, also named
            // by the crate's constants (`[i8; CELLS]`).
            || w.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            || set.contains(w)
            || (w.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') && consts.contains_key(w))
    };
    let set: HashSet<&str> =
        structs.iter().filter(|(_, f)| f.as_ref().is_some_and(|f| !f.is_empty())).map(|(n, _)| *n).collect();
    let set = shrink_to_fixpoint(set, |n, set| {
        structs[n].as_ref().is_some_and(|fields| fields.iter().all(|t| type_words(t).all(|w| word_ok(w, set))))
    });
    set.into_iter().map(str::to_string).collect()
}

/// See `CrateNames::tensor_structs`: the structs whose fields name a tensor, a framework state
/// type or another such struct, and nothing but those, host types (numbers, strings, host
/// structs), containers and the struct's own generics. Whatever else a field holds (a model, a
/// variable store, an optimizer, a device) makes it a context of the training code, not data.
fn tensor_structs(
    shapes: &HashMap<&str, (Vec<&str>, Vec<&str>)>,
    modules: &HashSet<&str>,
    host_structs: &HashSet<String>,
) -> HashSet<String> {
    let tensor = |w: &str| {
        w == "Tensor"
            || (w.ends_with("State") && crate::frameworks::REGISTRY.iter().any(|s| s.state_types.contains(&w)))
    };
    /// Whether every field of `name` is data (see above), its crate structs included; a cycle
    /// counts as data (the greatest such set).
    fn is_data<'a>(
        name: &'a str,
        shapes: &HashMap<&'a str, (Vec<&'a str>, Vec<&'a str>)>,
        modules: &HashSet<&str>,
        host_structs: &HashSet<String>,
        tensor: &dyn Fn(&str) -> bool,
        memo: &mut HashMap<&'a str, bool>,
    ) -> bool {
        if let Some(&known) = memo.get(name) {
            return known;
        }
        let Some((headers, fields)) = shapes.get(name) else { return false };
        if modules.contains(name) || fields.is_empty() {
            memo.insert(name, false);
            return false;
        }
        memo.insert(name, true);
        let ok = fields.iter().all(|t| {
            type_words(t).all(|w| {
                tensor(w)
                    || rust::is_host_type(w)
                    || CONTAINERS.contains(&w)
                    || w.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    || headers.iter().any(|h| type_words(h).any(|g| g == w))
                    || (shapes.contains_key(w) && is_data(w, shapes, modules, host_structs, tensor, memo))
                    || (!shapes.contains_key(w) && host_structs.contains(w))
            })
        });
        memo.insert(name, ok);
        ok
    }
    let mut memo: HashMap<&str, bool> = HashMap::default();
    let mut set: HashSet<&str> = HashSet::default();
    // The least set: a field names a tensor (a byte search rules most structs out first) or a
    // member, through data structs only.
    let (tensor_finder, state_finder) = (memchr::memmem::Finder::new(b"Tensor"), memchr::memmem::Finder::new(b"State"));
    let direct: Vec<&str> = shapes
        .iter()
        .filter(|(name, (_, fields))| {
            !modules.contains(*name)
                && fields.iter().any(|t| {
                    let b = t.as_bytes();
                    (tensor_finder.find(b).is_some() || state_finder.find(b).is_some()) && type_words(t).any(tensor)
                })
        })
        .map(|(name, _)| *name)
        .collect();
    for name in direct {
        if is_data(name, shapes, modules, host_structs, &tensor, &mut memo) {
            set.insert(name);
        }
    }
    // One level of nesting (`struct Window { carry: Option<Carry> }`): deeper ones are rare, and
    // each level is a pass over every struct that may hold data.
    if !set.is_empty() {
        let grown: Vec<&str> = shapes
            .iter()
            .filter(|(name, (_, fields))| {
                !modules.contains(*name)
                    && !host_structs.contains(**name)
                    && !set.contains(*name)
                    && fields.iter().any(|t| type_words(t).any(|w| set.contains(w)))
            })
            .map(|(name, _)| *name)
            .collect();
        for name in grown {
            if is_data(name, shapes, modules, host_structs, &tensor, &mut memo) {
                set.insert(name);
            }
        }
    }
    set.into_iter().map(str::to_string).collect()
}

/// The identifiers of a type's text (`Vec<Tensor<B, 2>>` → `Vec`, `Tensor`, `B`, `2`).
fn type_words(t: &str) -> impl Iterator<Item = &str> {
    t.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty())
}

/// Removes from `set` the names that fail `keep` (asked with the set as it stands), until none
/// does: the greatest subset whose every member passes given the others.
fn shrink_to_fixpoint<'a>(
    mut set: HashSet<&'a str>,
    keep: impl Fn(&str, &HashSet<&'a str>) -> bool,
) -> HashSet<&'a str> {
    loop {
        let before = set.len();
        let kept: Vec<&str> = set.iter().copied().filter(|n| keep(n, &set)).collect();
        set = kept.into_iter().collect();
        if set.len() == before {
            return set;
        }
    }
}

/// The structs of `shapes` ((header, field types) by name, every definition's fields together)
/// whose fields name only plain tensors, host types, containers, the struct's own type
/// parameters and other such structs: see `CrateNames::paramless_structs`.
fn paramless_structs(
    shapes: &HashMap<&str, (Vec<&str>, Vec<&str>)>,
    host_structs: &HashSet<String>,
) -> HashSet<String> {
    const PLAIN_TENSOR_WORDS: &[&str] = &["Tensor", "Int", "Bool", "Float", "PhantomData", "Device"];
    let set = shrink_to_fixpoint(shapes.keys().copied().collect(), |n, set| {
        let (header, fields) = &shapes[n];
        let own = |w: &str| header.iter().any(|h| type_words(h).any(|p| p == w));
        fields.iter().all(|t| {
            type_words(t).all(|w| {
                rust::is_host_type(w)
                    || CONTAINERS.contains(&w)
                    || HOST_STD_TYPES.contains(&w)
                    || PLAIN_TENSOR_WORDS.contains(&w)
                    || crate::frameworks::common::PARAMETER_FREE_MODULES.contains(&w)
                    || w.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    || own(w)
                    || set.contains(w)
                    || host_structs.contains(w)
            })
        })
    });
    // Only those that hold a tensor, directly or through another: a trainer of host settings
    // is not a model.
    let mut models: HashSet<&str> = HashSet::default();
    loop {
        let before = models.len();
        for n in &set {
            if !models.contains(n)
                && shapes[n].1.iter().any(|t| type_words(t).any(|w| w == "Tensor" || models.contains(w)))
            {
                models.insert(n);
            }
        }
        if models.len() == before {
            break;
        }
    }
    models.into_iter().map(str::to_string).collect()
}

/// Generic containers whose contents decide what they hold.
const CONTAINERS: &[&str] = &["Vec", "Option", "Box", "VecDeque", "std", "vec", "collections", "boxed", "option"];

/// Which elements of a function's tuple return type `ret` are host types, stripped of
/// `Result<`/`Option<` (for `Result<T, E>` only `T`). `None` when it is no tuple.
fn tuple_host_mask(ret: &str, host_structs: &HashSet<String>) -> Option<Vec<bool>> {
    // Most functions return no tuple: a byte search rules them out before the type is read.
    memchr::memchr(b'(', ret.as_bytes())?;
    let body = unwrapped(ret).strip_prefix('(')?.strip_suffix(')')?;
    let mut elems = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in body.bytes().enumerate() {
        match c {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' | b')' | b']' => depth -= 1,
            b',' if depth == 0 => {
                elems.push(&body[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    elems.push(&body[start..]);
    elems.retain(|e| !e.trim().is_empty());
    if elems.len() < 2 {
        return None;
    }
    let host = |e: &str| {
        let mut words = e.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).peekable();
        words.peek().is_some()
            && words.all(|w| {
                super::rust::is_host_type(w)
                    || CONTAINERS.contains(&w)
                    || w.chars().all(|c| c.is_ascii_digit())
                    || host_structs.contains(w)
            })
    };
    Some(elems.into_iter().map(host).collect())
}

/// `T` of `T, E>` (the text after `Result<`), at the top level of brackets.
fn top_level_first_arg(inner: &str) -> &str {
    let mut depth = 0i32;
    for (i, c) in inner.bytes().enumerate() {
        match c {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' | b')' | b']' if depth == 0 => return &inner[..i],
            b'>' | b')' | b']' => depth -= 1,
            b',' if depth == 0 => return &inner[..i],
            _ => {}
        }
    }
    inner
}

/// How much of a `macro_rules!` definition is read for its fragment kinds.
const MACRO_HEAD: usize = 400;

/// Scans the crate's texts for [`CrateNames`].
pub fn crate_names<'a>(texts: impl IntoIterator<Item = &'a str>) -> CrateNames {
    let mut fns = HashSet::default();
    let mut plain = HashSet::default();
    let mut other = HashSet::default();
    let mut grads_fields = HashSet::default();
    let mut shapes: HashMap<&str, (Vec<&str>, Vec<&str>)> = HashMap::default();
    let mut requires_grad = false;
    let mut makes_autodiff_device = false;
    let mut tensor_name_owners: HashMap<String, HashSet<String>> = HashMap::default();
    // Structs that derive the framework's `Module`, and owners of a `forward` method: models.
    let mut modules: HashSet<&str> = HashSet::default();
    let mut optimized: HashSet<&str> = HashSet::default();
    // Every struct field with its type's text, for the fields of plain-tensor structs.
    let mut typed: Vec<(&str, &str, &str)> = Vec::new();
    let (mut plain_fns, mut other_fns) = (HashSet::default(), HashSet::default());
    // The tuple return types of each name's definitions, as written (`None`: one returns no
    // tuple). Their host masks are computed once the host structs are known.
    let mut tuple_rets: HashMap<&'a str, Option<Vec<&'a str>>> = HashMap::default();
    // Each struct name's field types, per definition (`None`: generic, or not read).
    let mut structs: HashMap<&'a str, Option<Vec<&'a str>>> = HashMap::default();
    // `None`: definitions that return different types, or none the text names. Borrowed from
    // the texts: most names are never asked about.
    let mut return_types: HashMap<&'a str, Option<&'a str>> = HashMap::default();
    // Whether every definition of a name declares an inner-backend result (see `inner_return`).
    let mut inner_rets: HashMap<&'a str, bool> = HashMap::default();
    // Whether every definition of a name declares a result that holds trainable variables.
    let mut var_rets: HashMap<&'a str, bool> = HashMap::default();
    let mut mut_ref_rets: HashSet<&'a str> = HashSet::default();
    let mut_finder = memchr::memmem::Finder::new(b"mut");
    // Declared results with generic arguments (`WindowMlp<Ad>`), read once the aliases are known.
    // With the right-hand sides of the file's top-level shorthand aliases the result names
    // (`type B = Autodiff<Wgpu>;` and `fn train(..) -> Cnn<B>` beside it).
    let mut generic_rets: Vec<(&'a str, &'a str, Vec<&'a str>)> = Vec::new();
    let mut aliases = Vec::new();
    let mut backends: Vec<&str> = Vec::new();
    let mut alias_names = HashSet::default();
    // The current text's top-level one-letter aliases (see `top_level_shorthand`).
    let mut shorthands: Vec<(&'a str, &'a str)> = Vec::new();
    let mut macros = HashSet::default();
    let mut vocab_owners: HashMap<&'static str, HashSet<String>> = HashMap::default();
    let mut store_owners: HashMap<&'static str, HashSet<String>> = HashMap::default();
    let mut consts: HashMap<String, Option<u64>> = HashMap::default();
    let mut freezing_mappers = HashSet::default();
    let mut module_mappers = HashSet::default();
    let mut rnn_fields = HashSet::default();
    let (mut host_arrays, mut not_host_arrays) = (HashSet::default(), HashSet::default());
    for text in texts {
        let bytes = text.as_bytes();
        type_aliases_and_names(text, &mut aliases, &mut alias_names, &mut shorthands, &mut backends);
        for at in memchr::memmem::find_iter(bytes, b"const ") {
            if let Some((name, value)) = const_at(text, at) {
                consts.entry(name.to_string()).and_modify(|v| *v = v.filter(|&v| v == value)).or_insert(Some(value));
            }
        }
        for at in memchr::memmem::find_iter(bytes, b"macro_rules!") {
            let rest = text[at + "macro_rules!".len()..].trim_start();
            let len = rust::ident_len(rest);
            // Only macros handed code to run (`$callback:expr`, `$body:block` in their first
            // rules) have arguments worth walking; names, types and token trees are not code.
            let head = &rest[..rest.len().min(MACRO_HEAD)];
            if len > 0 && (head.contains(":expr") || head.contains(":block")) {
                macros.insert(rest[..len].to_string());
            }
        }
        for at in memchr::memmem::find_iter(bytes, b"fn ") {
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            let rest = text[at + 3..].trim_start();
            let len = rust::ident_len(rest);
            if len > 0 {
                // Names repeat (`new`, `forward`): allocate one only for a set that lacks it.
                let name = &rest[..len];
                let name_end = text.len() - rest.len() + len;
                // Only forward-named functions are asked about (see `plain_fns`).
                let set = if crate::frameworks::is_forward_method_in_any(name)
                    && declares_plain_return(text, name_end) == Some(true)
                {
                    &mut plain_fns
                } else {
                    &mut other_fns
                };
                if !set.contains(name) {
                    set.insert(name.to_string());
                }
                let ret = return_type(text, name_end);
                if let Some(r) = ret.filter(|r| memchr::memchr(b'<', r.as_bytes()).is_some()) {
                    // A one-letter alias is the file's own only in its free functions that
                    // declare no type parameter of their own (an impl's `B` is its parameter).
                    let aliased = if !shorthands.is_empty()
                        && at_line_start(text, at)
                        && !text[name_end..].trim_start().starts_with('<')
                    {
                        let words = r.split(|c: char| !(c.is_alphanumeric() || c == '_'));
                        words.filter_map(|w| shorthands.iter().find(|(n, _)| *n == w).map(|(_, rhs)| *rhs)).collect()
                    } else {
                        Vec::new()
                    };
                    generic_rets.push((name, r, aliased));
                }
                let inner = ret.is_some_and(inner_return);
                inner_rets.entry(name).and_modify(|all| *all &= inner).or_insert(inner);
                let vars =
                    ret.is_some_and(|r| type_words(r).any(|w| crate::frameworks::common::PARAM_TYPES.contains(&w)));
                var_rets.entry(name).and_modify(|all| *all &= vars).or_insert(vars);
                let mut_ref = ret.is_some_and(|r| {
                    if mut_finder.find(r.as_bytes()).is_none() {
                        return false;
                    }
                    let r = unwrapped(r);
                    r.starts_with("&mut ") || (r.starts_with("&'") && r.split_whitespace().nth(1) == Some("mut"))
                });
                let head = ret.and_then(return_head);
                match return_types.get_mut(name) {
                    Some(known) if *known != head => *known = None,
                    Some(_) => {}
                    None => {
                        return_types.insert(name, head);
                    }
                }
                let tuple = ret.filter(|r| memchr::memchr(b'(', r.as_bytes()).is_some());
                match (tuple_rets.get_mut(name), tuple) {
                    (Some(Some(known)), Some(r)) => {
                        if !known.contains(&r) {
                            known.push(r);
                        }
                    }
                    (Some(known), None) => *known = None,
                    (Some(None), Some(_)) => {}
                    (None, r) => {
                        tuple_rets.insert(name, r.map(|r| vec![r]));
                    }
                }
                // Every definition: the first one adds the name, any other that does not remove it.
                if !fns.contains(name) {
                    fns.insert(name.to_string());
                    if mut_ref {
                        mut_ref_rets.insert(name);
                    }
                } else if !mut_ref && !mut_ref_rets.is_empty() {
                    mut_ref_rets.remove(name);
                }
                if name == "forward"
                    && let Some(owner) = impl_self_type(text, at)
                {
                    modules.insert(owner);
                }
                // burn: `impl ModuleMapper<B> for Polyak { fn map_float(..) { .. } }`: a mapper,
                // freezing when its body sets `require_grad(false)` (and never `true`).
                if name == "map_float"
                    && let Some(owner) = impl_self_type(text, at)
                {
                    let body = fn_body(text, name_end);
                    if body.contains("require_grad(false)") && !body.contains("require_grad(true)") {
                        freezing_mappers.insert(owner.to_string());
                    }
                    module_mappers.insert(owner.to_string());
                }
                // A method (with a receiver): finding the `impl` around it scans back through the
                // file, which free functions named like tensor operations (`fn softmax(..)`)
                // need not pay for.
                if (crate::frameworks::common::ADDITIVE_METHODS.contains(&name)
                    || ((crate::frameworks::common::is_tensor_method(name)
                        || crate::frameworks::REGISTRY.iter().any(|s| s.module_apply_methods.contains(&name)))
                        && takes_self(text, name_end)))
                    && let Some(owner) = impl_self_type(text, at)
                {
                    tensor_name_owners.entry(name.to_string()).or_default().insert(owner.to_string());
                }
                if let Some(&vocab) = TRAINING_CALL_NAMES.iter().find(|&&v| v == name)
                    && let Some(owner) = impl_self_type(text, at)
                {
                    vocab_owners.entry(vocab).or_default().insert(owner.to_string());
                }
                if let Some(&store) = super::rust::STORE_METHODS.iter().find(|&&v| v == name)
                    && let Some(owner) = impl_self_type(text, at)
                {
                    store_owners.entry(store).or_default().insert(owner.to_string());
                }
            }
        }
        struct_fields(text, &mut structs);
        struct_shapes(text, &mut shapes, &mut typed, &mut modules);
        requires_grad |= memchr::memmem::find(bytes, b"require_grad").is_some();

        makes_autodiff_device |= crate::frameworks::Framework::all()
            .filter_map(|f| f.spec().autodiff_device_method)
            .any(|m| crate::spans::calls_method(bytes, m));
        // `Optimizer<MpoDuals<B>, B>`, `OptimizerAdaptor<Adam, Duals<B>, B>`: a type an optimizer
        // steps has parameters, whatever its fields look like.
        for at in memchr::memmem::find_iter(bytes, b"Optimizer") {
            let rest = &text[at..];
            let line = &rest[..rest.find('\n').unwrap_or(rest.len()).min(160)];
            optimized.extend(
                line.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| w.starts_with(char::is_uppercase)),
            );
        }
        // `name: Type` declarations: `ident` `:` (not `::`) then a type's first identifier.
        for at in memchr::memchr_iter(b':', bytes) {
            if bytes.get(at + 1) == Some(&b':') || (at > 0 && bytes[at - 1] == b':') {
                continue;
            }
            let before = text[..at].trim_end();
            let start = rust::ident_start(before);
            let name = &before[start..];
            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            // `trait TrainingBackend: AutodiffBackend + Extra {}`: a crate trait whose bounds
            // name an autodiff backend is an autodiff bound itself (followed through chains
            // like the aliases).
            if before[..start].ends_with("trait ") {
                let bounds = &text[at + 1..];
                let end = bounds.find(['{', ';']).unwrap_or(bounds.len());
                let bounds = &bounds[..end];
                aliases.push((name, bounds.split(" where").next().unwrap_or(bounds)));
                continue;
            }
            let after = text[at + 1..].trim_start();
            let ty_len = rust::ident_len(after);
            if ty_len == 0 {
                continue;
            }
            let ty = &after[..ty_len];
            let next = after[ty_len..].trim_start();
            // Names repeat: allocate one only for a set that lacks it.
            let add = |set: &mut HashSet<String>| {
                if !set.contains(name) {
                    set.insert(name.to_string());
                }
            };
            if ty == crate::frameworks::common::GRADS_TYPE {
                add(&mut grads_fields);
            }
            // `alphas: Vec<f64>`: an array of host numbers. Only a `Vec` of something else
            // speaks against it (a scalar `alpha: f64` parameter of the same name does not).
            if ty == "Vec"
                && let Some(inner) = next.strip_prefix('<')
            {
                let inner = inner.trim_start();
                let len = rust::ident_len(inner);
                if len > 0 && inner[len..].trim_start().starts_with('>') && super::rust::is_host_type(&inner[..len]) {
                    add(&mut host_arrays);
                } else {
                    add(&mut not_host_arrays);
                }
            }
            // `cell: LSTM`, `cell: candle_nn::rnn::GRU`: the last segment of the type's path.
            if next.starts_with("::") || crate::frameworks::common::RNN_CELL_TYPES.contains(&ty) {
                let mut last = ty;
                let mut tail = next;
                while let Some(r) = tail.strip_prefix("::") {
                    let r = r.trim_start();
                    let len = rust::ident_len(r);
                    if len == 0 {
                        break;
                    }
                    last = &r[..len];
                    tail = r[len..].trim_start();
                }
                if crate::frameworks::common::RNN_CELL_TYPES.contains(&last) {
                    add(&mut rnn_fields);
                }
            }
            // A bare host type (`x: f32,`), not `f32` as the start of a path or generic.
            if super::rust::is_host_type(ty) && !next.starts_with("::") && !next.starts_with('<') {
                add(&mut plain);
            } else if ty.starts_with(|c: char| c.is_ascii_uppercase()) {
                // A type (`Tensor<B, 1>`, `B::FloatTensor`); lowercase words after `:` are
                // struct-literal values, not types.
                add(&mut other);
            }
        }
    }
    let plain_fields = plain.difference(&other).cloned().collect();
    let host_structs = host_structs(&structs, &consts);
    let tensor_structs = tensor_structs(&shapes, &modules, &host_structs);
    // Models only: a buffer of plain tensors (a rollout buffer) is data, not an inert model.
    let param_field_structs: HashSet<String> = shapes
        .iter()
        .filter(|(_, (headers, fields))| {
            fields.iter().any(|t| {
                let t = t.trim().trim_end_matches(',').trim_end();
                !t.is_empty()
                    && rust::ident_len(t) == t.len()
                    && headers.iter().any(|h| {
                        h.split(['<', ',']).any(|piece| {
                            let piece = piece.trim_start();
                            piece.starts_with(t) && piece[t.len()..].trim_start().starts_with([':', ',', '>', '='])
                        })
                    })
            })
        })
        .map(|(name, _)| name.to_string())
        .collect();
    let paramless_structs = if requires_grad {
        HashSet::default()
    } else {
        let mut set = paramless_structs(&shapes, &host_structs);
        set.retain(|s| modules.contains(s.as_str()));
        set.retain(|s| !optimized.contains(s.as_str()));
        set
    };
    // A field typed with the inner backend or by a plain-tensor struct (`block: Block<B>`), in
    // every definition of its struct.
    let mut untracked: HashMap<(&str, &str), bool> = HashMap::default();
    for &(owner, field, ty) in &typed {
        let u = names_inner_backend(ty) || paramless_structs.contains(&ty[..rust::ident_len(ty)]);
        untracked.entry((owner, field)).and_modify(|v| *v &= u).or_insert(u);
    }
    let mut inner_fields: HashMap<String, HashSet<String>> = HashMap::default();
    for ((owner, field), _) in untracked.into_iter().filter(|&(_, u)| u) {
        inner_fields.entry(owner.to_string()).or_default().insert(field.to_string());
    }
    let mut inner_tensors: HashMap<(&str, &str), bool> = HashMap::default();
    for &(owner, field, ty) in &typed {
        let t = ty.starts_with("Tensor") && ty[6..].trim_start().starts_with('<') && names_inner_backend(ty);
        inner_tensors.entry((owner, field)).and_modify(|v| *v &= t).or_insert(t);
    }
    let mut inner_tensor_fields: HashMap<String, HashSet<String>> = HashMap::default();
    for ((owner, field), _) in inner_tensors.into_iter().filter(|&(_, t)| t) {
        inner_tensor_fields.entry(owner.to_string()).or_default().insert(field.to_string());
    }
    let mut variable_fields: HashMap<String, Vec<(String, String, bool)>> = HashMap::default();
    for &(owner, field, ty) in &typed {
        // Cheap first: a word of the type names a variable type (burn's `Param<..>` fields are
        // many, and no burn spec has a variable type), or candle's store of them (`VarMap`).
        if type_words(ty).any(|w| w == "Var" || w == "VarMap")
            && let Ok(parsed) = syn::parse_str::<syn::Type>(ty)
        {
            let (elem, list) = match super::build::element_type_name(&parsed) {
                Some(elem) => (elem, true),
                None => match &parsed {
                    syn::Type::Path(p) if p.qself.is_none() => {
                        (p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(), false)
                    }
                    _ => continue,
                },
            };
            if crate::frameworks::common::PARAM_TYPES.contains(&elem.as_str()) || (elem == "VarMap" && !list) {
                variable_fields.entry(owner.to_string()).or_default().push((field.to_string(), elem, list));
            }
        }
    }
    let mut dyn_collection_fields: HashMap<String, HashSet<String>> = HashMap::default();
    for &(owner, field, ty) in &typed {
        if ty.contains("dyn ") && super::build::is_trait_object_collection_text(ty) {
            dyn_collection_fields.entry(owner.to_string()).or_default().insert(field.to_string());
        }
    }
    // Also the types that define a method named like a collection's store (`impl PerBuffer {
    // fn insert(&mut self, item: T, p: f32) }`): `self.replay.insert(..)` is the crate's method.
    let vocab_types: HashSet<&str> =
        vocab_owners.values().chain(store_owners.values()).flatten().map(String::as_str).collect();
    let mut vocab_fields: HashMap<(String, String), String> = HashMap::default();
    if !vocab_types.is_empty() {
        // Also the fields on the way to one (`enc: Encoder` holding `cell: Cell`), a few levels.
        let mut reach: HashSet<&str> = vocab_types.clone();
        for _ in 0..4 {
            let before = reach.len();
            for &(owner, field, ty) in &typed {
                // Also of each element (`layers: Vec<Layer>`, walked by `for l in
                // self.layers.iter_mut() { l.step(x) }`).
                let head = rust::element_head(ty);
                if reach.contains(head) && !vocab_fields.contains_key(&(owner.to_string(), field.to_string())) {
                    vocab_fields.insert((owner.to_string(), field.to_string()), head.to_string());
                    reach.insert(owner);
                }
            }
            if reach.len() == before {
                break;
            }
        }
    }
    let plain_fns = plain_fns.difference(&other_fns).cloned().collect();
    let autodiff_aliases = autodiff_aliases(&aliases);
    let mut autodiff_rets: HashMap<&str, bool> = HashMap::default();
    let names_autodiff = |text: &str| {
        text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| crate::frameworks::common::is_autodiff_name(w) || autodiff_aliases.contains(w))
    };
    for (name, ret, shorthands) in generic_rets {
        let named = names_autodiff(ret) || shorthands.into_iter().any(names_autodiff);
        *autodiff_rets.entry(name).or_insert(true) &= named;
    }
    let autodiff_fns = autodiff_rets.into_iter().filter(|&(_, ad)| ad).map(|(name, _)| name.to_string()).collect();
    let plain_aliases = plain_aliases(&aliases, &autodiff_aliases);
    let backend_alias = backends
        .first()
        .map(|rhs| names_autodiff(rhs))
        .filter(|&first| backends.iter().all(|rhs| names_autodiff(rhs) == first));
    let tuple_arity = tuple_rets
        .iter()
        .filter_map(|(&name, rets)| {
            let mut sizes = rets.as_ref()?.iter().map(|r| tuple_host_mask(r, &host_structs).map(|m| m.len()));
            let first = sizes.next()??;
            sizes.all(|n| n == Some(first)).then(|| (name.to_string(), first))
        })
        .collect();
    let tuple_fns = tuple_rets
        .into_iter()
        .filter_map(|(name, rets)| {
            let mut masks = rets?.into_iter().map(|r| tuple_host_mask(r, &host_structs));
            let first = masks.next()??;
            (masks.all(|m| m.as_ref() == Some(&first)) && first.iter().any(|&h| h)).then(|| (name.to_string(), first))
        })
        .collect();
    let return_types =
        return_types.into_iter().filter_map(|(name, ty)| Some((name.to_string(), ty?.to_string()))).collect();
    let inner_returns = inner_rets.into_iter().filter(|&(_, all)| all).map(|(name, _)| name.to_string()).collect();
    let variable_returns = var_rets.into_iter().filter(|&(_, all)| all).map(|(name, _)| name.to_string()).collect();
    let mut_ref_returns = mut_ref_rets.into_iter().map(str::to_string).collect();
    let host_array_fields = host_arrays.difference(&not_host_arrays).cloned().collect();
    CrateNames {
        host_array_fields,
        freezing_mappers,
        module_mappers,
        rnn_fields,
        host_structs,
        tensor_structs,
        return_types,
        inner_returns,
        variable_returns,
        mut_ref_returns,
        autodiff_fns,
        fns,
        plain_fields,
        inner_fields,
        inner_tensor_fields,
        variable_fields,
        dyn_collection_fields,
        paramless_structs,
        makes_autodiff_device,
        consts,
        grads_fields,
        plain_fns,
        autodiff_aliases,
        backend_alias,
        plain_aliases,
        macros,
        tuple_fns,
        tuple_arity,
        alias_names,
        vocab_owners,
        vocab_fields,
        store_owners,
        tensor_name_owners,
        param_field_structs,
    }
}

/// The body of the function whose name ends at byte `from` of `text`: from its first `{` to the
/// matching `}` (empty for a declaration without one).
fn fn_body(text: &str, from: usize) -> &str {
    let rest = &text[from..];
    let Some(open) = rest.find(['{', ';']).filter(|&o| rest.as_bytes()[o] == b'{') else { return "" };
    let mut depth = 0usize;
    for (i, c) in rest[open..].bytes().enumerate() {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return &rest[open..open + i];
                }
            }
            _ => {}
        }
    }
    &rest[open..]
}

/// The names of the frameworks' training calls that crates also give their own trainers and
/// agents (`trainer.step(&model, x, y)`, `agent.update(..)`): see [`CrateNames::vocab_owners`].
/// Not `backward`, `backward_step` or `zero_grad`: a crate type with one of those is a wrapper
/// of the framework's (or a stand-in for it), not a different operation. (`Builder::training_method`
/// tests the same names before its lookup.)
const TRAINING_CALL_NAMES: &[&str] = &["step", "update", "train_step"];

/// The self type of the `impl` block whose body holds the `fn` at byte `at` of `text`
/// (`impl<B: Backend> Trainer<B> {` → `Trainer`, `impl Step for Trainer {` → `Trainer`); None
/// when the function is not in an `impl` block (a free function, a trait's declaration).
/// Whether the function whose name ends at byte `name_end` of `text` takes `self` first
/// (`fn select(&mut self, ..)`, `fn mean<B>(self)`).
fn takes_self(text: &str, name_end: usize) -> bool {
    let rest = &text[name_end..];
    let Some(open) = memchr::memchr(b'(', rest.as_bytes()) else { return false };
    let params = &rest[open + 1..];
    let first = &params[..params.find([',', ')']).unwrap_or(params.len())];
    first.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == "self")
}

fn impl_self_type(text: &str, at: usize) -> Option<&str> {
    let before = &text[..at];
    let bytes = before.as_bytes();
    // The nearest `impl` keyword before the function whose block is still open at it.
    let mut end = before.len();
    while let Some(found) = memchr::memmem::rfind(&bytes[..end], b"impl") {
        end = found;
        let word_start = found == 0 || !(bytes[found - 1].is_ascii_alphanumeric() || bytes[found - 1] == b'_');
        let next = bytes.get(found + 4).copied().unwrap_or(b' ');
        if !word_start || !(next == b'<' || next.is_ascii_whitespace()) {
            continue;
        }
        let open = found + before[found..].find('{')?;
        let header = &before[found + 4..open];
        if header.contains(['(', ';', '}']) {
            // Not an impl header (`impl Trait` in a signature, or a finished item).
            continue;
        }
        // Still open at the function: its depth never returns to zero before it.
        let mut depth = 0i32;
        for b in before[open..].bytes() {
            depth += match b {
                b'{' => 1,
                b'}' => -1,
                _ => 0,
            };
            if depth == 0 {
                return None;
            }
        }
        // Skip the impl's own generics, then take the type after ` for ` if a trait is named.
        let mut rest = header.trim_start();
        if rest.starts_with('<') {
            let mut angle = 0i32;
            let close = rest.bytes().enumerate().find(|&(_, c)| {
                angle += match c {
                    b'<' => 1,
                    b'>' => -1,
                    _ => 0,
                };
                angle == 0
            })?;
            rest = &rest[close.0 + 1..];
        }
        let rest = rest.rsplit_once(" for ").map_or(rest, |(_, ty)| ty).trim_start();
        let rest = rest.trim_start_matches('&').trim_start_matches("mut ").trim_start();
        let path_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
        let ty = rest[..path_end].rsplit("::").next()?;
        return (!ty.is_empty()).then_some(ty);
    }
    None
}

/// The key of a function name in [`Index::by_name`].
fn name_key(name: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    name.hash(&mut h);
    h.finish()
}

/// Function lookup by name.
struct Index<'a> {
    /// Hash of a plain name → functions with that name (keys are hashes, so that building the
    /// index allocates no name; a bucket may hold another name's functions too, which every use
    /// tells apart by the function's own name).
    by_name: HashMap<u64, Vec<FnId>>,
    /// [`CrateNames::alias_names`].
    alias_names: &'a HashSet<String>,
    /// Declared field types (owner, field, type), sorted by owner: the type of a `self.field`
    /// receiver.
    field_types: &'a [(String, String, String)],
}

impl<'a> Index<'a> {
    fn new(
        files: &[(Arc<SourceFile>, Vec<FnModel>)],
        alias_names: &'a HashSet<String>,
        field_types: &'a [(String, String, String)],
    ) -> Self {
        let mut by_name: HashMap<u64, Vec<FnId>> = HashMap::default();
        for (fi, (_, graphs)) in files.iter().enumerate() {
            for (gi, g) in graphs.iter().enumerate() {
                by_name.entry(name_key(&g.ident)).or_default().push((fi, gi));
            }
        }
        Self { by_name, alias_names, field_types }
    }

    /// Whether a method call's receiver is typed by a type parameter (`agent: &mut A`, or a
    /// field `agent: A` of the caller's type).
    fn receiver_generic(
        &self,
        files: &[(Arc<SourceFile>, Vec<FnModel>)],
        caller: FnId,
        site: &super::graph::CallSite,
    ) -> bool {
        if site.receiver_generic {
            return true;
        }
        site.method && self.field_type(files, caller, site) == Some(crate::type_graph::TYPE_PARAM)
    }

    /// The declared type of a `self.field` receiver (`self.policy.act(..)` with `policy:
    /// Greedy<B>` declared in the caller's type).
    fn field_type(
        &self,
        files: &[(Arc<SourceFile>, Vec<FnModel>)],
        caller: FnId,
        site: &super::graph::CallSite,
    ) -> Option<&'a str> {
        let owner = site.receiver_field_owner.as_deref().or(files[caller.0].1[caller.1].owner.as_deref())?;
        self.declared_field_type(files, caller, owner, site.receiver_field.as_deref()?)
    }

    /// The declared (element) type of field `field` of type `owner`, as the caller's file sees it.
    fn declared_field_type(
        &self,
        files: &[(Arc<SourceFile>, Vec<FnModel>)],
        caller: FnId,
        owner: &str,
        field: &str,
    ) -> Option<&'a str> {
        // The entries of `owner` and of `owner@<file>` (a type declared in several files) sort
        // together, right from `owner` on.
        let from = self.field_types.partition_point(|(o, _, _)| o.as_str() < owner);
        let mut file_entry = None;
        for (o, f, t) in &self.field_types[from..] {
            let Some(rest) = o.strip_prefix(owner) else { break };
            if f != field {
                continue;
            }
            if rest.is_empty() {
                return Some(t.as_str());
            }
            // The one of the method's file.
            if file_entry.is_none()
                && let Some(path) = rest.strip_prefix('@')
                && std::path::Path::new(path) == files[caller.0].0.path()
            {
                file_entry = Some(t.as_str());
            }
        }
        file_entry
    }

    /// The functions a call site may reach (one when the name and shape make it unambiguous):
    /// method calls go to methods (`self` receiver: preferably of the caller's own type), path
    /// calls to free or associated functions (`Self::f`, `Type::f`: of that type).
    fn resolve(
        &self,
        files: &[(Arc<SourceFile>, Vec<FnModel>)],
        caller: FnId,
        site: &super::graph::CallSite,
    ) -> Vec<FnId> {
        let Some(candidates) = self.by_name.get(&name_key(&site.name)) else { return Vec::new() };
        let g = |id: &FnId| &files[id.0].1[id.1];
        let caller_owner = g(&caller).owner.as_deref();
        let caller_test = g(&caller).is_test;
        let fitting = |qualifier: Option<&str>| -> Vec<FnId> {
            candidates
                .iter()
                .copied()
                .filter(|id| {
                    let f = g(id);
                    if f.ident != site.name {
                        return false;
                    }
                    // Code under `#[cfg(test)]` is not built with the code that is not: a
                    // test impl (`impl Model for TestNet`) is no candidate for a call outside tests.
                    if f.is_test && !caller_test {
                        return false;
                    }
                    let arity = f.params.len() == site.args.len();
                    if site.method {
                        f.has_self && arity
                    } else if site.type_param_dispatch {
                        // `M::f(..)`: a function of some impl; `M::forward(&model, x)` calls a
                        // method with its receiver as the first argument.
                        f.owner.is_some() && (arity || (f.has_self && f.params.len() + 1 == site.args.len()))
                    } else {
                        let owner_ok = match qualifier {
                            Some("Self") => f.owner.as_deref() == caller_owner,
                            Some(q) if q.starts_with(char::is_uppercase) => f.owner.as_deref() == Some(q),
                            _ => f.owner.is_none() || !f.has_self,
                        };
                        owner_ok && arity && !f.has_self
                    }
                })
                .collect()
        };
        let text = &files[caller.0].0.text;
        let mut fits = fitting(site.qualifier.as_deref());
        // `MyAgent::new(..)` with `type MyAgent<B> = Ppo<B, Net<B>>;` in the caller's file: the
        // aliased type's (looked up only when the name itself has no such function).
        if fits.is_empty()
            && !site.method
            && let Some(q) = site.qualifier.as_deref()
            && q != "Self"
            && self.alias_names.contains(q)
            && let Some(head) = alias_head(text, q)
        {
            fits = fitting(Some(head));
        }
        // `self.policy.action(x)` inside `Selector::action`: a field of `self` is not a value of
        // `self`'s own type (a struct cannot hold itself), so the caller's type is not a candidate.
        let on_own_field = site.method
            && !site.receiver_self
            && caller_owner.is_some()
            && site
                .receiver
                .and_then(|r| g(&caller).binding_of(r))
                .is_some_and(|b| g(&caller).bindings[b].kind == super::graph::BindingKind::SelfField);
        let fits: Vec<FnId> = if on_own_field && fits.len() > 1 {
            fits.into_iter().filter(|id| g(id).owner.as_deref() != caller_owner).collect()
        } else {
            fits
        };
        // `env.step(action)` with `env: &mut Env<B>`: when no candidate is a method of `Env`,
        // only a trait's default body can be reached (other types' methods cannot).
        // A receiver typed by an alias (`let agent = MyAgent::new(..)`) is of the aliased type
        // (looked up only when no candidate is a method of the named type).
        // `self.policy.act(..)` with `policy: Greedy<B>` declared in the caller's type.
        // An element of a field of `self` a loop walks (`for layer in self.layers.iter() {
        // layer.decode(&x)? }` with `layers: Vec<Coupling>`): the field's element type.
        let declared = site.receiver_type.as_deref().or_else(|| {
            if !site.method {
                return None;
            }
            self.field_type(files, caller, site).or_else(|| {
                let owner = g(&caller).owner.as_deref()?;
                self.declared_field_type(files, caller, owner, site.receiver_element_of.as_deref()?)
            })
        });
        // Through a type parameter (`self.agent.update(..)` with `agent: A`): trait methods only,
        // of whichever types implement them.
        if site.receiver_generic || site.receiver_dyn || declared == Some(crate::type_graph::TYPE_PARAM) {
            let traits: Vec<FnId> = fits.into_iter().filter(|id| g(id).trait_impl || g(id).trait_default).collect();
            return if traits.len() > MAX_CANDIDATES { Vec::new() } else { traits };
        }
        let receiver_type: Option<&str> = declared.map(|t| {
            if site.method
                && !site.receiver_type_guessed
                && self.alias_names.contains(t)
                && !fits.iter().any(|id| g(id).owner.as_deref() == Some(t))
            {
                alias_head(text, t).unwrap_or(t)
            } else {
                t
            }
        });
        let fits = match receiver_type {
            Some(ty)
                if site.method
                    && !site.receiver_type_guessed
                    && !fits.iter().any(|id| g(id).owner.as_deref() == Some(ty)) =>
            {
                fits.into_iter().filter(|id| g(id).trait_default).collect()
            }
            _ => fits,
        };
        match fits.as_slice() {
            [] | [_] => fits,
            many => {
                // Ambiguous by name: prefer the caller's own type for `self.f(..)`, then the
                // caller's file; give up if that still leaves several.
                let narrow = |keep: &dyn Fn(&FnId) -> bool, from: &[FnId]| -> Vec<FnId> {
                    from.iter().copied().filter(|id| keep(id)).collect()
                };
                let mut left = many.to_vec();
                // `memory.push(..)` with `memory: &mut Memory<B>`: methods of `Memory`.
                if let Some(ty) = receiver_type {
                    let of_type = narrow(&|id| g(id).owner.as_deref() == Some(ty), &left);
                    if !of_type.is_empty() {
                        left = of_type;
                    }
                }
                if site.receiver_self {
                    let same_type = narrow(&|id| g(id).owner.as_deref() == caller_owner, &left);
                    if !same_type.is_empty() {
                        left = same_type;
                    }
                }
                // Rust prefers an inherent method to a trait method of the same name.
                if left.len() > 1 && site.method {
                    let inherent = narrow(&|id| !g(id).trait_impl, &left);
                    if !inherent.is_empty() && left.iter().all(|id| g(id).owner == g(&left[0]).owner) {
                        left = inherent;
                    }
                }
                if left.len() > 1 {
                    let same_file = narrow(&|id| id.0 == caller.0, &left);
                    if !same_file.is_empty() {
                        left = same_file;
                    }
                }
                // Still several (e.g. trait impls): the caller applies what they all do.
                if left.len() > MAX_CANDIDATES { Vec::new() } else { left }
            }
        }
    }
}

/// The summary of one function from its (propagated) graph.
fn summarize(g: &FnModel, file: &Arc<SourceFile>) -> Summary {
    let returns_graph = g.returns_graph();
    let kinds = |k: TrainingCallKind| g.calls.iter().any(|c| c.kind == k);
    let runs_backward = kinds(TrainingCallKind::Backward) || kinds(TrainingCallKind::BackwardStep);
    let backward_waits = runs_backward
        && g.calls
            .iter()
            .filter(|c| matches!(c.kind, TrainingCallKind::Backward | TrainingCallKind::BackwardStep))
            .all(|c| c.waits_for_size);
    let backward_waits_briefly = backward_waits
        && g.calls
            .iter()
            .filter(|c| matches!(c.kind, TrainingCallKind::Backward | TrainingCallKind::BackwardStep))
            .all(|c| c.waits_briefly);
    let steps = kinds(TrainingCallKind::Step) || kinds(TrainingCallKind::BackwardStep);
    let clears = kinds(TrainingCallKind::Clear);
    let mut stores = Vec::new();
    // Most functions store nothing into `self` or a parameter: skip the searches then.
    let stores_outside = g.graph.edge_references().any(|e| {
        matches!(e.weight(), Edge::StoredInto { how: Store::Push | Store::Assign | Store::Fold | Store::CopyInto, .. })
            && g.binding_of(e.target())
                .is_some_and(|b| matches!(g.bindings[b].kind, BindingKind::SelfField | BindingKind::Param))
    });
    for (i, p) in g.params.iter().enumerate().filter(|_| stores_outside) {
        let Some(start) = *p else { continue };
        if let Some(stored) = stored_outside(g, start, i) {
            stores.push(stored);
        }
    }
    let counted = |e: &&super::graph::VocabCall| {
        !e.no_grad && !e.receiver.is_some_and(|r| g.graph[r].taint.has(Taint::INERT_MODEL))
    };
    // A function that runs backward sweeps its own forwards, unless every backward waits for a
    // warm-up the forward does not (`fn step_once(&mut self) { self.agent.act(..);
    // self.agent.observe(..) }` with the learning behind `if buffer.len() >= n`): until then
    // its callers' loops keep every forward.
    // A call through a type parameter that no impl of the crate answers may run backward.
    // A warm-up of one batch (`if buffer.len() >= batch_size`) ends after a batch of calls.
    let forwards = (!runs_backward || (backward_waits && !backward_waits_briefly))
        && g.opaque_calls.is_empty()
        && g.calls_of(super::graph::CallKind::Forward)
            .any(|e| counted(&e) && !(runs_backward && (e.waits || g.waits_for_size(&e.path))));
    let forward_gate = if forwards {
        g.calls_of(super::graph::CallKind::Forward)
            .filter(|e| counted(e) && !(runs_backward && (e.waits || g.waits_for_size(&e.path))))
            .map(|e| e.gate.clone().or_else(|| g.value_gate_of(&e.path)))
            .try_fold(None::<super::graph::ValueGate>, |all, gate| match (all, gate?) {
                (None, gate) => Some(Some(gate)),
                (Some((p, mut opens)), (q, more)) if p == q => {
                    opens.extend(more);
                    Some(Some((p, opens)))
                }
                _ => None,
            })
            .flatten()
    } else {
        None
    };
    // burn: a model's method that computes a tensor from the parameters' tensors it reads
    // (`layer.weight.val()` in a hand-written masked linear layer, `fn logits(&self, x)` with no
    // `forward` call) is a forward pass of that model all the same.
    let param_forward = !forwards
        && !runs_backward
        && g.opaque_calls.is_empty()
        && g.owner_is_model
        && g.returns_tensor
        && !g.param_reads.is_empty()
        && g.spec.graph_swept_by_backward;
    let forwards = forwards || param_forward;
    // Reported where they run: in a loop here (no backward anywhere in the function), or
    // inside a called function that reports them; model methods that return tensors are left
    // to their callers and report nothing.
    let field_forwards =
        forwards && g.calls_of(super::graph::CallKind::Forward).any(|e| counted(&e) && e.autodiff_model);
    // A loop summing its forwards into what a backpropagating caller gets back is reported
    // (where there is no backward) at the callers.
    let left_to_callers = |l| g.result_backpropagated && g.loop_accumulates_returned_graph(l);
    let forwards_in_own_loop = forwards
        && (g.autodiff || field_forwards)
        && (!g.owner_is_model || g.returns_plain)
        && g.calls_of(super::graph::CallKind::Forward)
            .filter(counted)
            .all(|e| e.in_loop.is_some_and(|l| !left_to_callers(l) && !g.runs_a_handful_once(l)) || e.reported_inside);
    let first_forward = if forwards { g.calls_of(super::graph::CallKind::Forward).find(counted) } else { None };
    let forward_at = first_forward.and_then(|e| match &e.forward_at {
        Some(at) => Some(at.clone()),
        None if e.via.is_none() => Some(super::graph::At(file.clone(), file.line(e.span.start))),
        None => None,
    });
    // Where a forward of parameter reads runs: the first read.
    let forward_at = forward_at.or_else(|| {
        param_forward
            .then(|| g.param_reads.iter().map(|&n| g.graph[n].span.start).min())
            .flatten()
            .map(|start| super::graph::At(file.clone(), file.line(start)))
    });
    let forward_via = first_forward
        .filter(|e| e.forward_at.is_some())
        .map(|e| super::graph::At(file.clone(), file.line(e.span.start)));
    // The sampler's loop: its first forward there is where a finding at a call points.
    let sample_at = (forwards && g.owner_is_model && !g.returns_plain)
        .then(|| {
            g.calls_of(super::graph::CallKind::Forward)
                .filter(counted)
                .find(|e| e.in_loop.is_some_and(|l| !g.loop_over_self(l) && !g.loops[l].runs_backward))
        })
        .flatten()
        .map(|e| super::graph::At(file.clone(), file.line(e.span.start)));
    let samples = sample_at.is_some();
    let mut calls_params_in_loop: Vec<usize> = g
        .param_calls
        .iter()
        .filter(|c| c.in_loop.is_some_and(|l| !g.loops[l].runs_backward))
        .map(|c| c.param)
        .collect();
    calls_params_in_loop.dedup();
    let forward_via = if sample_at.is_some() { None } else { forward_via };
    let forward_at = sample_at.or(forward_at);
    let forwards_wait = forwards
        && g.calls_of(super::graph::CallKind::Forward).filter(counted).all(|e| e.waits || g.waits_for_size(&e.path));
    // A generic function made autodiff by one caller may be called with other backends too:
    // its forwards count at each caller that hands it an autodiff model (see `apply`).
    let forwards_autodiff = (g.autodiff && g.autodiff_from.is_empty() || field_forwards) && forwards;
    let framework = g.framework_known.then_some(crate::frameworks::Framework::new(g.spec));
    // A tensor helper that computes its result from what it is handed (`fn heads(&self, xs:
    // &Tensor) -> Result<Tensor> { xs.reshape(..)?.transpose(1, 2) }`, `fn euler(x, v) ->
    // Result<Tensor> { x - (v * dt)? }`) passes its arguments' graph on; one that runs backward
    // or steps returns what training made of them.
    let buffers_outputs = g.stores().any(|(_, value, target, how, _)| {
        how == Store::Push
            && g.graph[value].taint.has(Taint::GRAPH)
            && g.binding_of(target).is_some_and(|b| g.bindings[b].kind == BindingKind::SelfField)
    });
    let mut buffers_outputs_in = 0u64;
    for (_, value, target, how, _) in g.stores() {
        if how == Store::Push
            && g.graph[value].taint.has(Taint::GRAPH)
            && let Some(b) = g.binding_of(target)
            && g.bindings[b].kind == BindingKind::Param
            && let Some(i) = g.params.iter().position(|p| p.and_then(|n| g.binding_of(n)) == Some(b))
        {
            buffers_outputs_in |= 1u64.checked_shl(i as u32).unwrap_or(0);
        }
    }
    // Asked only of a method that runs a forward and no backward (see `mark_kept_for_good`).
    let mut kept_fields: Vec<String> = if g.has_self && forwards && !runs_backward {
        g.stores()
            .filter(|&(_, value, _, how, _)| {
                matches!(how, Store::Push | Store::Fold) && g.graph[value].taint.has(Taint::GRAPH)
            })
            .filter_map(|(_, _, target, _, _)| g.binding_of(target))
            .filter(|&b| g.bindings[b].kind == BindingKind::SelfField)
            .map(|b| g.bindings[b].name.clone())
            .collect()
    } else {
        Vec::new()
    };
    kept_fields.sort_unstable();
    kept_fields.dedup();
    let passes_args = !returns_graph && g.returns_tensors && !runs_backward && !steps && g.graph_flows_from_params();
    // candle: a getter of a module's weights hands on what its receiver is: trainable weights
    // of a trainable model, with which every op makes a graph.
    let passes_self = !returns_graph
        && g.returns_tensor_parts
        && !g.spec.trainable_constructors.is_empty()
        && !runs_backward
        && !steps
        && g.returns_from_self_fields();
    // Only host data leaves it: a declared host result (`-> usize`, `-> f32`, `()`), nothing
    // pushed into its receiver, no parameter kept past the call.
    let returns_host = g.returns_plain && !buffers_outputs && stores.is_empty();
    // Left empty: nothing but a plain value (`None`, a fresh zero) is written into the field
    // after it is emptied, or by the write it is emptied in (`let h = self.state.take(); ..
    // self.state = Some(h)`, `self.sum = Some(match self.sum.take() { .. })` put it back).
    let empties = g.fields_left_empty();
    Summary {
        returns_host,
        returns_graph,
        result_plain: !returns_graph && !passes_args && !passes_self,
        runs_backward,
        may_run_backward: runs_backward || g.may_run_backward,
        backward_waits,
        backward_waits_briefly,
        steps,
        clears,
        framework,
        forwards_autodiff,
        forwards,
        generic: g.generic,
        forwards_wait,
        forward_gate,
        forwards_in_own_loop,
        forward_at,
        forward_via,
        samples,
        buffers_outputs,
        buffers_outputs_in,
        kept_fields,
        // dfdx: not a function that attaches a fresh tape of its own (`fn predict(&self, x) {
        // self.net.forward(self.dev.tensor(x).leaky_trace()) }`): its result carries a tape
        // whatever its caller hands it, so the call is no forward on an untraced input.
        returns_forward: returns_graph
            && g.returns_forward_output()
            && !(g.spec.graph_from_input_tape && g.calls_of(super::graph::CallKind::FreshTape).next().is_some()),
        calls_params_in_loop,
        param_ops: g.param_ops,
        stores,
        empties,
        elems: (!g.return_elems.is_empty() && !g.returns_plain).then(|| {
            // A function that trains returns what training made of its arguments, not them.
            let passes = !runs_backward && !steps;
            g.return_elems
                .iter()
                .map(|nodes| {
                    let (params, receiver) = if passes {
                        nodes.iter().fold((0, false), |(m, r), &n| {
                            let (m2, r2) = g.sources_feeding(n);
                            (m | m2, r || r2)
                        })
                    } else {
                        (0, false)
                    };
                    // What computes on trainable weights or parameter values (candle's
                    // `self.rnn.step(&x, &st)` on a trainable model) makes a graph in callers
                    // that hand it trainable ones: not cut.
                    let graph_like = |n: NodeIndex| {
                        let t = g.graph[n].taint;
                        t.has(Taint::GRAPH) || t.has(Taint::TRAINABLE) || t.has(Taint::PARAM)
                    };
                    ElemSummary { graph: nodes.iter().any(|&n| graph_like(n)), params, receiver }
                })
                .collect()
        }),
    }
}

/// A function that calls a parameter in a loop (`fn run_epoch<F: FnMut(Reg<B>, Tensor<B, 1>) ->
/// Reg<B>>(.., apply: F) { for x in data { ..forward..; model = apply(model, loss) } }`) runs
/// backward there when a caller hands it a closure that runs backward (`|m, loss| {
/// loss.backward(); .. }`, also bound to a local first): the call counts as a backward of the
/// callee's loop. (A function of the crate handed by name, `sgd_step`, is not followed: finding
/// one means comparing every argument of every call with the function's locals.)
/// Returns the functions changed.
fn mark_callback_backwards(
    files: &mut [(Arc<SourceFile>, Vec<FnModel>)],
    resolved: &[(FnId, usize, Vec<FnId>)],
    sites: &[usize],
) -> Vec<FnId> {
    if sites.is_empty() {
        return Vec::new();
    }
    let mut marks: Vec<(FnId, usize, String)> = Vec::new();
    for (caller, ci, candidates) in sites.iter().map(|&k| &resolved[k]) {
        let g = &files[caller.0].1[caller.1];
        let site = &g.call_sites[ci.to_owned()];
        let backward_args = site
            .closure_args
            .iter()
            .filter(|&&(_, c)| g.closures.get(c).is_some_and(|s| s.runs_backward))
            .map(|&(arg, _)| arg);
        for arg in backward_args {
            for &callee in candidates {
                marks.push((callee, arg, "closure".to_string()));
            }
        }
    }
    let mut changed = Vec::new();
    for (callee, arg, name) in marks {
        let g = &mut files[callee.0].1[callee.1];
        let calls: Vec<super::graph::ParamCall> = g.param_calls.iter().filter(|c| c.param == arg).cloned().collect();
        for c in calls {
            if g.calls.iter().any(|t| t.kind == TrainingCallKind::Backward && t.span == c.span) {
                continue;
            }
            g.graph[c.result].kind = NodeKind::Value(super::graph::Producer::Plain);
            g.seeds.retain(|&n| n != c.result);
            changed.push(callee);
            let waits_for_size = g.waits_for_size(&c.path);
            let waits_briefly = g.waits_only_briefly(&c.path);
            g.calls.push(TrainingCall {
                kind: TrainingCallKind::Backward,
                span: c.span.clone(),
                receiver: format!("{name}()"),
                in_loop: c.in_loop,
                path: c.path.clone(),
                waits_for_size,
                waits_briefly,
            });
            let mut l = c.in_loop;
            while let Some(id) = l {
                g.loops[id].runs_backward = true;
                l = g.loops[id].parent;
            }
        }
    }
    changed.sort_unstable();
    changed.dedup();
    changed
}

/// Whether the value of parameter `param` flows into a `self` field or another parameter: that
/// store (where, into what, how, and the further call it goes through, if any).
fn stored_outside(g: &FnModel, start: NodeIndex, param: usize) -> Option<StoredParam> {
    let start_binding = g.binding_of(start);
    let mut seen = vec![false; g.graph.node_count()];
    let mut stack = vec![start];
    while let Some(n) = stack.pop() {
        if std::mem::replace(&mut seen[n.index()], true) {
            continue;
        }
        for e in g.graph.edges_directed(n, Direction::Outgoing) {
            let t = e.target();
            // Scalars, metadata and detached values do not carry the parameter's graph.
            if matches!(g.graph[t].kind, NodeKind::Value(super::graph::Producer::Plain)) {
                continue;
            }
            if let Edge::StoredInto {
                how: how @ (Store::Push | Store::Assign | Store::Fold | Store::CopyInto),
                span,
                ..
            } = e.weight()
                && let NodeKind::Version(b) = g.graph[t].kind
                && Some(b) != start_binding
                && !g.bindings[b].host
                // A buffer the function allocates anew or cuts each call holds one call's copies.
                && !(*how == Store::CopyInto && g.bindings[b].kind == BindingKind::SelfField && g.replaces(b))
            {
                let binding = &g.bindings[b];
                let inner = g.through(e.id()).cloned();
                let whole = inner.as_ref().is_none_or(|i| i.whole)
                    && g.moved_from(e.source(), |m| (m == start).then_some(())).is_some();
                let stored = |target| StoredParam {
                    param,
                    span: span.clone(),
                    target,
                    target_name: binding.name.clone(),
                    inner: inner.clone(),
                    how: *how,
                    whole,
                };
                match binding.kind {
                    BindingKind::SelfField => return Some(stored(None)),
                    BindingKind::Param => {
                        let j = g.params.iter().position(|p| p.and_then(|p| g.binding_of(p)) == Some(b))?;
                        return Some(stored(Some(j)));
                    }
                    _ => {}
                }
            }
            // Follow values, not merges into other versions of unrelated bindings.
            if !matches!(e.weight(), Edge::StoredInto { how: Store::Merge, .. }) || g.binding_of(t) == g.binding_of(n) {
                stack.push(t);
            }
        }
    }
    None
}

/// Applies a callee's summary at call site `ci` of `g`.
fn apply(g: &mut FnModel, ci: usize, s: &Summary, callee: &str, callee_file: &Arc<SourceFile>) {
    // Taken out while it is applied (no copy of its arguments), and put back at the end.
    let mut site = std::mem::take(&mut g.call_sites[ci]);
    if s.returns_graph && !g.seeds.contains(&site.result) {
        g.seeds.push(site.result);
    }
    // Summaries of later rounds may undo what earlier ones said (a callee found to run backward
    // one call deeper no longer just runs forward passes): set, do not only add.
    g.graph[site.result].kind = NodeKind::Value(if s.returns_forward && !g.spec.graph_swept_by_backward {
        // `unet.predict_noise(&latents, t)` is a forward pass of `unet`.
        super::graph::Producer::Forward { receiver: site.receiver }
    } else if s.result_plain {
        // The callee's result is known: it does not carry what its arguments carried
        // (`net = update_parameters(loss, net, optim)` returns the stepped module).
        super::graph::Producer::Plain
    } else {
        super::graph::Producer::Derived
    });
    if !s.returns_graph {
        g.seeds.retain(|&n| n != site.result);
    }
    if !site.elems.is_empty() {
        let elems = s.elems.as_deref().filter(|e| e.len() == site.elems.len());
        apply_elems(g, &mut site, elems);
    }
    // A generic callee's forward runs on an autodiff model when this (autodiff) caller hands it
    // one: not when the receiver or an argument is a model made inert (`model.valid()`).
    let handed_inert = handed_inert(g, &site);
    // `agent.act(&obs, false)` with `if explore { self.net.forward(..) } else { .. }`: the call
    // takes none of the branches its forwards are on.
    let closed = s.forward_gate.as_ref().is_some_and(|gate| super::graph::closes(gate, &site.args));
    let forwards = !closed && (s.forwards_autodiff || (s.forwards && s.generic && g.autodiff && !handed_inert));
    // `self.agent.act(obs, mode)` handing on a parameter of this function: the forwards run for
    // the values of that parameter that take them.
    let gate = s.forward_gate.as_ref().and_then(|(p, opens)| {
        let arg = site.args.get(*p)?;
        let [read] = arg.reads.as_slice() else { return None };
        let b = g.binding_of(*read)?;
        if g.bindings[b].kind != BindingKind::Param {
            return None;
        }
        let own = g.params.iter().position(|q| q.and_then(|q| g.binding_of(q)) == Some(b))?;
        Some((own, opens.clone()))
    });
    if !forwards {
        g.vocab_calls
            .retain(|e| !(e.kind == super::graph::CallKind::Forward && e.via.is_some() && e.span == site.span));
    }
    let add_call = |g: &mut FnModel, kind: TrainingCallKind| {
        if !g.calls.iter().any(|c| c.kind == kind && c.span == site.span) {
            g.calls.push(TrainingCall {
                kind,
                span: site.span.clone(),
                receiver: format!("{callee}()"),
                in_loop: site.in_loop,
                path: site.path.clone(),
                waits_for_size: kind == TrainingCallKind::Backward && s.backward_waits || g.waits_for_size(&site.path),
                // Every wait, the callee's and the call's own, is for one batch.
                waits_briefly: (kind == TrainingCallKind::Backward && s.backward_waits || g.waits_for_size(&site.path))
                    && (!(kind == TrainingCallKind::Backward && s.backward_waits) || s.backward_waits_briefly)
                    && (!g.waits_for_size(&site.path) || g.waits_only_briefly(&site.path)),
            });
        }
    };
    if !s.runs_backward && s.may_run_backward {
        // Only some candidates run it: what needs a backward to report sees none, what needs
        // its absence sees one.
        g.may_run_backward = true;
        let mut l = site.in_loop;
        while let Some(id) = l {
            g.loops[id].may_run_backward = true;
            l = g.loops[id].parent;
        }
    }
    if s.runs_backward {
        add_call(g, TrainingCallKind::Backward);
        if let Some(c) = site.closure {
            g.closures[c].runs_backward = true;
        }
        let mut l = site.in_loop;
        while let Some(id) = l {
            g.loops[id].runs_backward = true;
            l = g.loops[id].parent;
        }
    }
    let same_framework =
        s.framework.is_some() && s.framework == g.framework_known.then_some(crate::frameworks::Framework::new(g.spec));
    if s.steps && same_framework {
        add_call(g, TrainingCallKind::Step);
    }
    if s.clears && same_framework {
        add_call(g, TrainingCallKind::Clear);
    }
    let kept_in_arg = (s.buffers_outputs_in != 0)
        .then(|| {
            site.args
                .iter()
                .enumerate()
                .find(|&(k, a)| s.buffers_outputs_in & 1u64.checked_shl(k as u32).unwrap_or(0) != 0 && a.lent.is_some())
                .and_then(|(_, a)| a.lent)
        })
        .flatten();
    if forwards
        && let Some(e) =
            g.vocab_calls.iter_mut().find(|e| e.kind == super::graph::CallKind::Forward && e.span == site.span)
    {
        e.waits = s.forwards_wait;
        e.reported_inside = s.forwards_in_own_loop;
        e.forward_at.clone_from(&s.forward_at);
        e.forward_via.clone_from(&s.forward_via);
        e.autodiff_model |= s.forwards_autodiff;
        e.samples = s.samples;
        e.kept_by_receiver = s.buffers_outputs;
        e.kept_in_arg = kept_in_arg;
        e.gate = gate;
    } else if forwards {
        g.vocab_calls.push(super::graph::VocabCall {
            kind: super::graph::CallKind::Forward,
            span: site.span.clone(),
            fix_span: None,
            in_loop: site.in_loop,
            receiver: site.receiver,
            no_grad: false,
            via: Some(callee.to_string()),
            forward_at: s.forward_at.clone(),
            forward_via: s.forward_via.clone(),
            discarded: false,
            path: site.path.clone(),
            guard_fields: Vec::new(),
            waits: s.forwards_wait,
            reported_inside: s.forwards_in_own_loop,
            autodiff_model: s.forwards_autodiff,
            samples: s.samples,
            kept_by_receiver: s.buffers_outputs,
            kept_in_arg,
            kept_for_good: None,
            lazy: false,
            gate,
            closure: site.closure,
        });
    }
    // A closure handed to a function that calls it in a loop without backward.
    for &(arg, c) in &site.closure_args {
        if let Some(scope) = g.closures.get_mut(c) {
            scope.looped_by = s.calls_params_in_loop.contains(&arg).then(|| callee.to_string());
        }
    }
    // A call after backward that hands the consumed graph's values to a function recording
    // ops on them (`head::scalar(loss)` with `fn scalar(t) -> f32 { t.mean().into_scalar() }`).
    if s.param_ops != 0
        && let Some(at) = g.args_after_backward.iter().position(|(i, _)| *i == ci)
    {
        let after = g.args_after_backward[at].1.clone();
        for &(_, operand) in after.args.iter().filter(|&&(arg, _)| arg < 64 && s.param_ops & (1 << arg) != 0) {
            if !g.uses_after_backward.iter().any(|u| u.span == site.span && u.operand == operand) {
                g.uses_after_backward.push(super::graph::UseAfterBackward {
                    span: site.span.clone(),
                    operand,
                    backward: after.backward.clone(),
                    in_loop: site.in_loop,
                    no_grad: after.no_grad,
                    via: Some(callee.to_string()),
                });
            }
        }
    }
    apply_stores(g, &site, s, callee, callee_file);
    apply_empties(g, &site, s);
    site.host_result = s.returns_host;
    g.call_sites[ci] = site;
}

/// The fields of its receiver the callee empties, seen at the call site: `self.flush()` empties
/// those fields of `self`; `acc.ready()` empties (a part of) `acc`.
fn apply_empties(g: &mut FnModel, site: &super::graph::CallSite, s: &Summary) {
    if s.empties.is_empty() {
        return;
    }
    let versions: Vec<NodeIndex> = if site.receiver_self {
        s.empties
            .iter()
            .filter_map(|name| {
                let b = g.bindings.iter().position(|b| b.kind == BindingKind::SelfField && b.name == *name)?;
                g.graph.node_indices().find(|&n| matches!(g.graph[n].kind, NodeKind::Version(v) if v == b))
            })
            .collect()
    } else {
        site.receiver.and_then(|r| g.receiver_root(r)).filter(|&v| g.binding_of(v).is_some()).into_iter().collect()
    };
    for version in versions {
        let cleared = super::graph::Cleared { version, in_loop: site.in_loop, at: site.span.start };
        if !g.cleared.iter().any(|c| c.version == version && c.in_loop == site.in_loop && c.at == cleared.at) {
            g.cleared.push(cleared);
        }
        if let Some(b) = g.binding_of(version)
            && !g.emptied_by_calls.iter().any(|e| e.call == site.span && e.binding == b)
        {
            g.emptied_by_calls.push(super::graph::EmptiedByCall {
                call: site.span.clone(),
                result: site.result,
                binding: b,
                in_loop: site.in_loop,
            });
        }
    }
}

/// Each element a `let` binds of a call's tuple result carries what the callee's element does:
/// a graph only where the callee's has one of its own, and what the arguments (or receiver) it
/// is computed from carry. Unknown elements carry what the whole result does.
/// Summaries change from round to round: each (element, source) pair gets a node once, which
/// passes its source on only while the summary says so.
fn apply_elems(g: &mut FnModel, site: &mut super::graph::CallSite, elems: Option<&[ElemSummary]>) {
    for (i, &(cut, elem)) in site.elems.iter().enumerate() {
        let e = elems.map(|e| e[i]);
        let cut_graph = e.is_some_and(|e| !e.graph);
        match g.graph_cuts.iter().position(|&n| n == cut) {
            Some(k) if !cut_graph => {
                g.graph_cuts.swap_remove(k);
            }
            None if cut_graph => g.graph_cuts.push(cut),
            _ => {}
        }
        let e = e.unwrap_or_default();
        // Argument `j`, or the receiver (`None`).
        let wanted = (0..site.args.len().min(64))
            .map(|j| (Some(j), e.params & (1 << j) != 0))
            .chain(std::iter::once((None, e.receiver && site.receiver.is_some())));
        for (source, wanted) in wanted {
            let gate = site.elem_gates.iter().find(|&&(k, s, _)| k == i && s == source).map(|&(_, _, n)| n);
            let gate = match gate {
                Some(n) => n,
                None if wanted => {
                    let from = match source {
                        Some(j) => arg_node(g, site, j),
                        None => site.receiver,
                    };
                    let Some(from) = from else { continue };
                    let n = g.graph.add_node(super::graph::Node {
                        kind: NodeKind::Value(super::graph::Producer::Derived),
                        span: site.span.clone(),
                        in_loop: site.in_loop,
                        taint: Taint::NONE,
                    });
                    g.graph.add_edge(from, n, Edge::DerivedFrom);
                    g.graph.add_edge(n, elem, Edge::DerivedFrom);
                    site.elem_gates.push((i, source, n));
                    n
                }
                None => continue,
            };
            g.graph[gate].kind =
                NodeKind::Value(if wanted { super::graph::Producer::Derived } else { super::graph::Producer::Plain });
        }
    }
}

/// The callee's stores of its parameters, seen at the call site: "stored into" edges from the
/// arguments into what the caller passed as receiver or other argument.
fn apply_stores(
    g: &mut FnModel,
    site: &super::graph::CallSite,
    s: &Summary,
    callee: &str,
    callee_file: &Arc<SourceFile>,
) {
    for StoredParam { param, span: store_span, target, target_name, inner, how, whole } in &s.stores {
        let Some(arg) = arg_node(g, site, *param) else { continue };
        // The place the callee stores into, seen from the caller.
        let target_node = match target {
            None if site.receiver_self => Some(self_field(g, target_name, &site.span)),
            None => site.receiver,
            Some(j) => arg_node(g, site, *j),
        };
        let Some(target_node) = target_node else { continue };
        let Some(binding) = root_binding(g, target_node) else { continue };
        let exists = g
            .graph
            .edges_directed(arg, Direction::Outgoing)
            .any(|e| matches!(e.weight(), Edge::StoredInto { span, .. } if *span == site.span));
        if exists {
            continue;
        }
        let new = g.graph.add_node(super::graph::Node {
            kind: NodeKind::Version(binding),
            span: site.span.clone(),
            in_loop: site.in_loop,
            taint: Taint::NONE,
        });
        let (line, _) = callee_file.line_col(store_span.start);
        g.graph.add_edge(
            arg,
            new,
            Edge::StoredInto {
                how: *how,
                span: site.span.clone(),
                through: Some(Through {
                    callee: callee.to_string(),
                    file: callee_file.path.clone(),
                    line,
                    span: store_span.clone(),
                    target: target_name.clone(),
                    inner: inner.clone().map(Box::new),
                    whole: *whole,
                }),
            },
        );
    }
}

/// A node for argument `i` of a call site: the version it reads when it is a plain read of one
/// binding, else a value node built now from what it reads (built lazily: most call sites
/// reach no function of the crate).
fn arg_node(g: &mut FnModel, site: &super::graph::CallSite, i: usize) -> Option<NodeIndex> {
    let arg = site.args.get(i)?;
    if arg.producer == super::graph::Producer::Derived
        && !arg.op
        && arg.reads.len() == 1
        && g.binding_of(arg.reads[0]).is_some()
    {
        return Some(arg.reads[0]);
    }
    if arg.reads.is_empty() && arg.producer == super::graph::Producer::Plain {
        return None;
    }
    let n = g.graph.add_node(super::graph::Node {
        kind: NodeKind::Value(arg.producer),
        span: arg.span.clone(),
        in_loop: site.in_loop,
        taint: Taint::NONE,
    });
    if arg.op {
        g.op_values.push(n);
    }
    for &r in &arg.reads {
        g.graph.add_edge(r, n, Edge::DerivedFrom);
    }
    Some(n)
}

/// The binding a node is a version of, following "derived from"/moves back to a version.
fn root_binding(g: &FnModel, n: NodeIndex) -> Option<usize> {
    let mut cur = n;
    for _ in 0..16 {
        if let Some(b) = g.binding_of(cur) {
            return Some(b);
        }
        cur = g.graph.neighbors_directed(cur, Direction::Incoming).next()?;
    }
    None
}

/// The caller's binding for `self.<field>` named like the callee's, created if missing.
fn self_field(g: &mut FnModel, name: &str, span: &Span) -> NodeIndex {
    let b = match g.bindings.iter().position(|b| b.kind == BindingKind::SelfField && b.name == name) {
        Some(b) => b,
        None => {
            g.bindings.push(super::graph::Binding {
                name: name.to_string(),
                kind: BindingKind::SelfField,
                decl: span.clone(),
                decl_loop: None,
                host: false,
                ty: None,
                ty_guessed: false,
            });
            g.bindings.len() - 1
        }
    };
    g.graph.add_node(super::graph::Node {
        kind: NodeKind::Version(b),
        span: span.clone(),
        in_loop: None,
        taint: Taint::NONE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_call_names_defined_by_crate_types_are_found_with_their_type() {
        let text = "impl<B: AutodiffBackend> Trainer<B> {\n    fn new() -> Self { Self::default() }\n    pub fn step(&self, m: &M<B>) {}\n}\n\
                    impl Step for Runner {\n    fn step(&mut self) { if x { y() } }\n}\n\
                    fn step(a: f64) {}\n\
                    trait Agent { fn update(&mut self); }\n\
                    impl crate::rl::Agent for &mut policy::Dqn<B> { fn update(&mut self) {} }\n";
        let names = crate_names([text]);
        let owners = |n: &str| {
            let mut v: Vec<&str> =
                names.vocab_owners.get(n).map(|s| s.iter().map(String::as_str).collect()).unwrap_or_default();
            v.sort_unstable();
            v
        };
        assert_eq!(owners("step"), ["Runner", "Trainer"]);
        assert_eq!(owners("update"), ["Dqn"]);
        assert!(owners("fit").is_empty());
    }

    #[test]
    fn autodiff_aliases_follow_chains_and_skip_shadowing_shorthands() {
        let names = crate_names([
            "pub type TrainingBackend = Autodiff<Wgpu>;\ntype Policy = PolicyNet<TrainingBackend>;",
            "pub type Model = crate::model::Model<TrainingBackend>;\ntype B = Autodiff<NdArray>;\ntype Plain = NdArray;",
        ]);
        let mut found: Vec<&str> = names.autodiff_aliases.iter().map(String::as_str).collect();
        found.sort_unstable();
        assert_eq!(found, ["Policy", "TrainingBackend"]);
    }

    #[test]
    fn name_scan_handles_non_ascii_and_tells_types_from_values() {
        let names = crate_names([
            "fn train_step() {}\nstruct S { policy_loss: f32, total: Tensor<B, 1>, ∞x: f64 }\n",
            "// café: f32 ∞: u8\nfn f(total: f64) { let s = S { policy_loss: value }; }",
        ]);
        assert!(names.fns.contains("train_step") && names.fns.contains("f"));
        assert!(names.plain_fields.contains("policy_loss"), "a struct-literal value is not a type");
        assert!(!names.plain_fields.contains("total"), "declared as a tensor elsewhere");
        assert!(names.plain_fields.contains("∞x") || names.plain_fields.contains("x"));
    }

    #[test]
    fn host_structs_hold_numbers_and_other_host_structs_only() {
        let names = crate_names([
            "#[derive(Debug, Default)]\npub struct TrainStats {\n    /// Mean loss.\n    pub loss: f32,\n    #[serde(skip)]\n    pub phases: [Moments; 3],\n    hist: Vec<Option<u64>>,\n    took: std::time::Duration,\n}\n\
             struct Moments { sum: f64, n: usize }\n\
             struct Pair(f32, u8);\n\
             struct Step { loss: Tensor<B, 1>, n: usize }\n\
             struct Wrapper { stats: TrainStats, step: Step }\n\
             struct Holder<B: Backend> { n: usize, b: PhantomData<B> }\n\
             struct Arr { xs: [Tensor; 2] }\n\
             struct Twice { a: f32 }\n",
            "struct Twice { t: Tensor }\nfn pair() -> (TrainStats, Step) { todo!() }\nfn single() -> (Moments, f32) { todo!() }",
        ]);
        let mut host: Vec<&str> = names.host_structs.iter().map(String::as_str).collect();
        host.sort_unstable();
        // A tensor field, a generic parameter, a struct holding a non-host struct, or a second
        // definition with a tensor rules a struct out.
        assert_eq!(host, ["Moments", "Pair", "TrainStats"]);
        assert_eq!(names.tuple_fns.get("pair"), Some(&vec![true, false]));
        assert_eq!(names.tuple_fns.get("single"), Some(&vec![true, true]));
    }

    #[test]
    fn tensor_structs_hold_tensors_as_data_and_no_model() {
        let names = crate_names(["pub struct Carry { pub h: Tensor, c: candle_core::Tensor, steps: usize }\n\
             struct Hidden<B: Backend> { state: LstmState<B, 2>, n: usize }\n\
             struct Window { carry: Option<Carry>, stats: Stats }\n\
             struct Stats { loss: f32 }\n\
             struct Worker { model: Net, step: Tensor }\n\
             struct Net { w: Tensor }\n\
             impl Net { fn forward(&self, x: &Tensor) -> Tensor { x.matmul(&self.w) } }\n\
             #[derive(Module, Debug)]\nstruct Head<B: Backend> { bias: Tensor<B, 1> }\n\
             struct Opts { dev: Device, t: Tensor }\n"]);
        let mut found: Vec<&str> = names.tensor_structs.iter().map(String::as_str).collect();
        found.sort_unstable();
        // A model (a `forward` method, `#[derive(Module)]`), or a field that is neither data nor
        // a tensor (`model: Net`, `dev: Device`), rules a struct out.
        assert_eq!(found, ["Carry", "Hidden", "Window"]);
    }
}
