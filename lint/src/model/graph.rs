//! The reference graph of one function, built once by [`crate::walk`] and read by the rules.
//!
//! Nodes are *versions* of bindings (locals, parameters, `self` fields; a new version at each
//! `let`, assignment and control-flow merge) and *values* (the expressions written into a
//! binding). Edges say "derived from" (a value reads a binding version) and "stored into" (a
//! value is written into a binding: `let`, assignment, compound assignment, `push`/`insert`/
//! `extend`). Loops are recorded as scopes; each node knows the loop it was created in.
//!
//! After building, [`FnModel::propagate`] computes which nodes carry an autograd graph: seeded by
//! forward passes, tape attachments and backward receivers, flowing along "derived from" and
//! "stored into" edges, stopped by graph-cutting calls, no-grad regions and no-grad models.

use std::ops::Range;

use petgraph::Direction;
use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;

use crate::frameworks::Spec;

/// Index of a loop scope in [`FnModel::loops`].
pub type LoopId = usize;

/// A byte range in the function's file.
pub type Span = Range<usize>;

/// The most iterations a literally bounded loop (and every loop around it in its function) may
/// run and be left alone anywhere: a handful of forward passes, once per call of the function.
pub const ONCE_LOOP_MAX: u64 = 32;

/// Taint bits carried by nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Taint(u8);

impl Taint {
    pub const NONE: Taint = Taint(0);
    /// Carries an autograd graph.
    pub const GRAPH: Taint = Taint(1);
    /// A model whose forward passes record no graph (`model.valid()`).
    pub const INERT_MODEL: Taint = Taint(2);
    /// A trainable parameter (a leaf): keeping it is fine, computing with it makes a graph.
    pub const PARAM: Taint = Taint(4);
    /// Built from trainable variables (candle: `VarBuilder::from_varmap(..)`, `Var::new(..)`, and
    /// the models made with them): every forward pass through it records a graph.
    pub const TRAINABLE: Taint = Taint(8);

    pub fn has(self, other: Taint) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    pub fn union(self, other: Taint) -> Taint {
        Taint(self.0 | other.0)
    }
}

/// What a value node is, as far as graph-carrying goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Producer {
    /// Inherits from what it reads (tensor ops, unknown calls, plain moves).
    Derived,
    /// A forward pass, loss function or tape attachment: carries a graph unless its receiver
    /// is a no-grad model or it runs in a no-grad region.
    Forward { receiver: Option<NodeIndex> },
    /// Never carries a graph: detach, scalar extraction, metadata, literals, data constructors,
    /// gradient stores, optimizer steps, anything in a no-grad region.
    Plain,
    /// A no-grad model (`model.valid()`).
    InertModel,
}

/// The kind of a binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    Local,
    /// A function parameter (lives as long as the call, outlives every iteration inside it).
    Param,
    /// `self.<field>`: outlives the call.
    SelfField,
    /// A `static` or anything else reached by path: outlives the call.
    Global,
}

/// One binding (not a version of it).
#[derive(Debug, Clone)]
pub struct Binding {
    pub(super) name: String,
    pub(super) kind: BindingKind,
    /// Where it is declared (the pattern identifier or the first use of a field).
    pub(super) decl: Span,
    /// The innermost loop around the declaration.
    pub(super) decl_loop: Option<LoopId>,
    /// Declared as a host number (`let mut total = 0.0;`, `let x: f32`): whatever is written
    /// into it (`total += out.policy_loss`) is a host number too, or the code would not compile.
    pub(super) host: bool,
    /// The declared type's name, when the declaration says it (`trace: &mut Trace<2>`,
    /// `let m = Memory::new(..)`, `let t: Trace = ..`).
    pub(super) ty: Option<String>,
    /// `ty` is guessed from a convention, not stated (`let m = ModelConfig::new(..).init(&d)` →
    /// `Model`, as burn's own configs do; the crate's `init` may return something else).
    pub(super) ty_guessed: bool,
}

/// Index of a binding in [`FnModel::bindings`].
pub type BindingId = usize;

#[derive(Debug, Clone)]
pub enum NodeKind {
    /// A version of a binding.
    Version(BindingId),
    /// A value: an expression written into a binding.
    Value(Producer),
}

#[derive(Debug, Clone)]
pub struct Node {
    pub(super) kind: NodeKind,
    pub(super) span: Span,
    /// The innermost loop the node was created in.
    pub(super) in_loop: Option<LoopId>,
    /// Computed by [`FnModel::propagate`].
    pub(super) taint: Taint,
}

/// How a value reaches a binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// `let x = v`.
    Let,
    /// `x = v`, `self.f = v`, `v[i] = x`.
    Assign,
    /// `x = x + v`, `x += v`, `x = x.add(&v)?`: the new version reads the old one.
    Fold,
    /// `c.push(v)`, `c.insert(k, v)`, `c.extend(v)`, ….
    Push,
    /// Control-flow merge or loop back edge (version to version).
    Merge,
    /// `buf.narrow(0, t, n).copy_(&v)` (tch): an in-place copy into the tensor `buf` or a view of
    /// it; the tensor's autograd history takes in `v`'s graph.
    CopyInto,
    /// What an iterator method's closure returns, gathered into the method's result
    /// (`xs.iter().map(|x| model.forward(x))`): it leaves the per-element loop as that result,
    /// which is kept only as long as whatever the result is bound to.
    Yield,
}

/// Facts about copies of models and gradients kept in collections (see `FnModel::copies`).
#[derive(Debug, Clone, Default)]
pub struct CopyFacts {
    /// The spans of keyed stores (`map.insert(k, v)`, `entry(k).or_insert(v)`): a key written
    /// again replaces what it held, so such a collection need not grow.
    pub(super) keyed_pushes: Vec<Span>,
    /// Those of them whose value is computed from what the map held before (`let old =
    /// self.bank.remove(&id); self.bank.insert(id, (old * m + fresh)?)`): each entry keeps every
    /// earlier one it was blended from, so what a caller hands there is folded in, not pushed.
    pub(super) keyed_folds: Vec<Span>,
    /// Bindings that hold a whole model or a gradient store, by type or by use (see
    /// [`FnModel::copy_of`]). Set by the crate-level pass.
    pub(super) copy_bindings: Vec<(BindingId, Copied)>,
    /// Results of the crate's calls that return a copy of a model or of gradients
    /// (`self.learner.snapshot()` returning `self.net.clone()`). Set by the crate-level pass.
    pub(super) copy_results: Vec<(NodeIndex, Copied)>,
    /// Pushes (here or inside called functions of the crate) into a collection that nothing in
    /// the crate ever empties, shrinks or replaces. Set by the crate-level pass.
    pub(super) unemptied_pushes: Vec<EdgeIndex>,
    /// Copies a called function of the crate pushes into a collection this function lends it
    /// (`trainer.apply(&mut history)`, whose `apply` calls `history.record(&self.grads)`), that
    /// nothing in the crate empties. Set by the crate-level pass.
    pub(super) lent_copies: Vec<LentCopy>,
}

/// A copy a called function pushes into a collection the caller lends it (see
/// `FnModel::lent_copies`).
#[derive(Debug, Clone)]
pub struct LentCopy {
    pub(super) what: Copied,
    /// The caller's binding lent.
    pub(super) binding: BindingId,
    /// The call.
    pub(super) span: Span,
    pub(super) in_loop: Option<LoopId>,
    /// The chain of calls down to the push.
    pub(super) through: Through,
}

/// A copy of a model or of gradients pushed into a collection that nothing in the crate
/// empties (see [`FnModel::kept_copies`]).
#[derive(Debug, Clone)]
pub struct KeptCopy<'a> {
    pub what: Copied,
    /// The binding copied, when it is one of this function's.
    pub source: Option<BindingId>,
    /// The collection, or the value of this function that holds it.
    pub binding: BindingId,
    /// The push, or the call that pushes.
    pub span: &'a Span,
    pub in_loop: Option<LoopId>,
    /// The chain of calls down to the push, when it happens in a called function.
    pub through: Option<&'a Through>,
}

/// What a value copies: see [`FnModel::copy_of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copied {
    /// A whole model (its parameters as they are when copied).
    Model,
    /// A gradient store, or one gradient read from it.
    Gradients,
}

#[derive(Debug, Clone)]
pub enum Edge {
    /// The target value reads the source binding version.
    DerivedFrom,
    /// The source value is written into the target binding version.
    StoredInto { how: Store, span: Span, through: Option<Through> },
}

/// A store made inside a called function of the crate (`self.record(loss)` pushing into
/// `self.history`), seen at the call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Through {
    /// `Trainer::record`.
    pub(super) callee: String,
    pub(super) file: std::path::PathBuf,
    pub(super) line: usize,
    /// The store inside the callee, in `file`.
    pub(super) span: Span,
    /// What the callee stores into (`self.history`).
    pub(super) target: String,
    /// When the callee's store is itself a call that stores (`log_step` calls `record`, which
    /// pushes): the next hop of the chain.
    pub(super) inner: Option<Box<Through>>,
    /// What is stored is the value handed over itself, moved, copied or wrapped, at every hop
    /// (`self.history.push(Checkpoint { epoch, model: model.clone() })`), not something computed
    /// from it (`self.norms.push(grad.abs().sum())`).
    pub(super) whole: bool,
}

impl Through {
    /// Whether the value handed over is stored itself, not something computed from it.
    pub fn stores_whole(&self) -> bool {
        self.whole
    }

    /// The called function (`Trainer::record`).
    pub fn callee(&self) -> &str {
        &self.callee
    }

    /// The callee's file.
    pub fn file(&self) -> &std::path::Path {
        &self.file
    }

    /// The line of the store in [`Self::file`].
    pub fn line(&self) -> usize {
        self.line
    }

    /// The store inside the callee, in [`Self::file`].
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// What the callee stores into (`self.history`).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The next hop, when the callee's store is itself a call that stores.
    pub fn inner(&self) -> Option<&Through> {
        self.inner.as_deref()
    }

    /// The hops of the chain, outermost first.
    pub fn hops(&self) -> impl Iterator<Item = &Through> {
        std::iter::successors(Some(self), |t| t.inner.as_deref())
    }
}

/// A graph-carrying value stored into a field of a type (`self.states.push(logits)` in an
/// `impl Memory`), directly or through a called function.
#[derive(Debug, Clone)]
pub struct FieldStore {
    /// The type whose field receives the value (`Memory`); `None` when the receiver's type is
    /// not known (`rollout.values.push(v)` on a local): any type with that field.
    owner: Option<String>,
    /// The field (`states`).
    field: String,
    file: std::sync::Arc<crate::source::SourceFile>,
    /// The store, or the call that stores, in `file`.
    span: Span,
    /// The storing function works on an autodiff backend (burn 0.22: `device.autodiff()`).
    autodiff: bool,
}

impl FieldStore {
    /// The type whose field receives the value; `None` when the receiver's type is not known.
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// The field (`states`).
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The file of the store.
    pub fn file(&self) -> &std::sync::Arc<crate::source::SourceFile> {
        &self.file
    }

    /// The store, or the call that stores, in [`Self::file`].
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// The storing function works on an autodiff backend.
    pub fn autodiff(&self) -> bool {
        self.autodiff
    }
}

/// A loop scope.
#[derive(Debug, Clone)]
pub struct LoopScope {
    pub(super) parent: Option<LoopId>,
    /// The loop's header (`for pat in expr`, `while cond`, `loop`), for labels.
    pub(super) header: Span,
    /// Whether the body (including nested loops and closures) runs backward.
    pub(super) runs_backward: bool,
    /// Whether it may: it calls a method some of whose candidates run backward and others do
    /// not (`agent.learn(..)`, a trait's no-op default beside a learner's own).
    pub(super) may_run_backward: bool,
    /// It pushes graph-carrying values into a field of `self` that some method of the type
    /// empties or starts afresh (an on-policy buffer; see `FnModel::pushes_into_emptied_field`).
    pub(super) pushes_into_emptied: bool,
    /// Whether the body (including nested loops and closures) runs a forward pass.
    pub(super) runs_forward: bool,
    /// A `for` loop over something reached from `self` (`for block in &self.blocks`).
    pub(super) over_self: bool,
    /// A `for` loop over a literal range or array (`for i in 0..4`, `for x in &[0.1, 0.5]`):
    /// how many times it runs (at most `u32::MAX`: small scopes keep the loop tables cheap to
    /// copy).
    pub(super) literal_count: Option<u32>,
    /// A `for` loop over a store's variables (`for mut v in vs.trainable_variables()`): what it
    /// does to each, it does to all the parameters an optimizer steps.
    pub(super) over_variables: bool,
    /// A `for` loop up to a dimension of a tensor (`for i in 0..t` with `let (b, t) =
    /// tgt.dims2()?`): it walks the length of an input.
    pub(super) over_dim: bool,
    /// The bindings a `for` loop's pattern binds (`head` of `for (k, head) in heads.iter()`).
    pub(super) pattern: std::ops::Range<BindingId>,
    /// The branch its body is (the element of a call's [`TrainingCall::path`] that the body adds).
    pub(super) body_branch: u32,
}

/// A closure of the function body.
#[derive(Debug, Clone)]
pub struct ClosureScope {
    /// Whether its body runs a forward pass (`move |vs, xs| { ..; xs.apply(&seq) }`).
    pub(super) runs_forward: bool,
    /// Whether its body runs backward.
    pub(super) runs_backward: bool,
    /// Whether its body steps an optimizer, and whether it clears gradients (for the calls of
    /// a closure bound to a local: `let mut fit = |x, y| { ..; opt.step() }`).
    pub(super) steps: bool,
    pub(super) clears: bool,
    /// The crate function it is handed to that calls it in a loop without backward
    /// (`evaluate_episode(&mut env, &mut |o| agent.act(o))`), set by the crate-level pass.
    pub(super) looped_by: Option<String>,
    /// It is the value its enclosing closure returns (`|path| { let l = linear(path, ..); move
    /// |x| x.apply(&l) }`): what it runs happens when it is called later, not when the
    /// enclosing closure runs.
    pub(super) returned: bool,
    /// The nodes its body made (a contiguous range), and the loop it is written in: a closure
    /// bound to a local and called in a loop (`let mut record = |l| total = total + l;` then
    /// `record(&loss)` per batch) writes in that loop.
    pub(super) nodes: std::ops::Range<u32>,
    pub(super) def_loop: Option<LoopId>,
    /// The version each input binds, when the input is one name: a call hands its argument's
    /// value to it.
    pub(super) params: Vec<Option<NodeIndex>>,
}

/// Where the store a variable is created in comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarRoot {
    /// A field (`self.vs.root()`): it outlives the call.
    Field,
    /// A parameter of the function, or of the closure the creation is in.
    Param,
    /// A local declared in the closure's body (or the function's, outside closures), in the
    /// innermost loop `decl_loop`.
    Local { decl_loop: Option<LoopId> },
    /// A local declared outside the closure the creation is in (captured).
    Captured,
    /// Not known.
    Unknown,
}

/// Trainable variables created in a store (tch `nn::linear(vs.root() / "fc", ..)`, a crate
/// constructor handed a store path).
#[derive(Debug, Clone)]
pub struct VarCreation {
    pub(super) span: Span,
    pub(super) in_loop: Option<LoopId>,
    /// The innermost closure around it (index in [`FnModel::closures`]).
    pub(super) closure: Option<usize>,
    pub(super) root: VarRoot,
}

impl VarCreation {
    /// The creating call.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// The innermost loop around it.
    pub fn in_loop(&self) -> Option<LoopId> {
        self.in_loop
    }

    /// The innermost closure around it.
    pub fn closure(&self) -> Option<usize> {
        self.closure
    }

    /// Where its store comes from.
    pub fn root(&self) -> VarRoot {
        self.root
    }
}

/// A call that matters to training: backward, optimizer step, gradient clearing.
#[derive(Debug, Clone)]
pub struct TrainingCall {
    pub(super) kind: TrainingCallKind,
    pub(super) span: Span,
    /// The receiver expression as written (`opt`, `self.optimizer`).
    pub(super) receiver: String,
    /// The innermost loop around the call.
    pub(super) in_loop: Option<LoopId>,
    /// Branches (if/match arms, closures) between the innermost loop body and the call: a call
    /// runs on every iteration where another runs if its path is a prefix of the other's.
    pub(super) path: Vec<usize>,
    /// A backward that runs only once a collection has reached a size (`if memory.len() >
    /// batch_size { train() }`, here or inside the called function): a warm-up.
    pub(super) waits_for_size: bool,
    /// Of those, one whose every wait is brief: for a collection to hold one batch or a handful
    /// of items (see [`FnModel::waits_only_briefly`]).
    pub(super) waits_briefly: bool,
}

impl TrainingCall {
    /// A backward that waits for a collection to reach a size (a warm-up).
    pub fn waits_for_size(&self) -> bool {
        self.waits_for_size
    }

    /// A backward whose wait is brief: one batch of a buffer (`if memory.len() >= batch_size`),
    /// or a handful of items (`if buffer.len() == T_HORIZON` with `T_HORIZON = 20`).
    pub fn waits_briefly(&self) -> bool {
        self.waits_briefly
    }

    pub fn kind(&self) -> TrainingCallKind {
        self.kind
    }

    /// The call.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// The receiver expression as written (`opt`, `self.optimizer`).
    pub fn receiver(&self) -> &str {
        &self.receiver
    }

    /// The innermost loop around the call.
    pub fn in_loop(&self) -> Option<LoopId> {
        self.in_loop
    }

    /// Branches (if/match arms, closures) between the innermost loop body and the call: a call
    /// runs on every iteration where another runs if its path is a prefix of the other's.
    pub fn path(&self) -> &[usize] {
        &self.path
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrainingCallKind {
    Backward,
    /// Backward and step in one call (`backward_step`).
    BackwardStep,
    Step,
    Clear,
}

/// The reference graph of one function.
#[derive(Debug, Clone)]
pub struct FnModel {
    /// The function's signature span (`fn name(...)`).
    pub(super) sig: Span,
    pub(super) spec: &'static Spec,
    /// Whether the framework is known (detected or configured) rather than guessed.
    pub(super) framework_known: bool,
    pub(super) graph: DiGraph<Node, Edge>,
    pub(super) bindings: Vec<Binding>,
    pub(super) loops: Vec<LoopScope>,
    pub(super) calls: Vec<TrainingCall>,
    /// Nodes whose expression is the receiver (or argument) of a backward call.
    pub(super) losses: Vec<NodeIndex>,
    /// Value nodes made by parameter constructors (`Var::new`, `set_requires_grad`).
    pub(super) param_values: Vec<NodeIndex>,
    /// Value nodes that read a module's weight tensor (candle `linear.weight()`): a variable when
    /// the module is trainable ([`Spec::module_weight_methods`]).
    pub(super) weight_reads: Vec<NodeIndex>,
    /// Value nodes that compute (tensor ops, calls) rather than move.
    pub(super) op_values: Vec<NodeIndex>,
    /// Nodes whose value is brought to the host (`loss.into_scalar()`, `out.to_vec1()`,
    /// `into_data`, also inside `println!`): a cut that leaves the device.
    pub(super) host_reads: Vec<NodeIndex>,
    /// Value nodes that read one parameter's gradient out of a gradient store (burn
    /// `w.grad(&grads)`, `w.grad_remove(&mut grads)`): a tensor as large as the parameter, with
    /// no graph. A copy of gradients where one is kept (`unbounded_copy_history`).
    pub(super) grad_reads: Vec<NodeIndex>,
    /// The value a `let` binds, for the forward passes in its initialiser (`let out =
    /// model.forward(x);`, `let acc = accuracy(model.forward(x), y);`): (start of the forward's
    /// span, value).
    pub(super) let_results: Vec<(usize, NodeIndex)>,

    /// The function's own name (`train_step`), and the type of `impl`/`trait` it is in.
    pub(super) ident: String,
    pub(super) owner: Option<String>,
    /// The owner is a struct of host values only (`struct RandomAgent { state: u64 }`): no model
    /// of any backend is behind its `self`.
    pub(super) owner_host: bool,
    /// Loop bindings that stand for an element of a collection of trait objects, with the
    /// collection's binding (`m` of `for m in self.metrics.iter_mut()`): see
    /// [`FnModel::receiver_binding`].
    pub(super) element_owners: Vec<(BindingId, BindingId)>,
    /// Fields of `self` a method of its own cuts where this function calls it (`self.close_window()`
    /// detaching `self.state` and taking `self.window_loss` once a window is full): the field's
    /// binding and the call's loop. Set by the crate-level pass.
    pub(super) self_cuts: Vec<(BindingId, Option<LoopId>)>,
    /// Fields of `self` a call of one of the type's own methods starts afresh on every path
    /// (`self.reset()?` with `self.state = self.lstm.zero_state(1)?`), made outside loops,
    /// branches and closures: (field, where the call starts). What the method writes into them
    /// after that does not continue an earlier call's value.
    pub(super) entry_resets: Vec<(BindingId, usize)>,
    /// Defined in `impl Trait for Type` (method calls prefer inherent methods).
    pub(super) trait_impl: bool,
    /// A default method body in a `trait` (reachable from any type implementing it).
    pub(super) trait_default: bool,
    /// A copy made for one instantiation of generic code (see `link::specialize`): its findings
    /// are the original's where both report, and its own where only it does.
    pub(super) instance: bool,
    /// Locals built by a constructor whose text or bindings say the types it is handed
    /// (`let s = Session::new(env, DqnAgent::new(..))`, `Session { agent, .. }`): per binding,
    /// (field name, or `#i@fn` for the constructor's i-th argument; type name).
    pub(super) ctor_types: Vec<(BindingId, Vec<(String, String)>)>,
    pub(super) has_self: bool,
    /// The first version of each typed parameter, in order (`self` excluded).
    pub(super) params: Vec<Option<NodeIndex>>,
    /// Value nodes the function returns (tail expression and `return`s).
    pub(super) returns: Vec<NodeIndex>,
    /// Where its declared result is a tuple and every value it returns is written as one
    /// (`Ok((next, onsets))`): the value nodes of each element, across the returns. Empty when
    /// unknown.
    pub(super) return_elems: Vec<Vec<NodeIndex>>,
    /// Value nodes that pass on what their inputs carry except a graph: an element of a call's
    /// tuple result that the callee computes without one (see [`CallSite::elems`]).
    pub(super) graph_cuts: Vec<NodeIndex>,
    /// Calls that may reach the crate's own functions, for the crate-level pass.
    pub(super) call_sites: Vec<CallSite>,
    /// Calls of the framework vocabulary, by kind.
    pub(super) vocab_calls: Vec<VocabCall>,
    /// Parameters whose value is replaced.
    pub(super) param_rewrites: Vec<ParamRewrite>,
    /// Operations on values made before a backward of the same iteration.
    pub(super) uses_after_backward: Vec<UseAfterBackward>,
    /// Parameters (a bit per position, receiver not counted, the first 64) the function records
    /// tensor operations on (`fn scalar(t: Tensor<B, 1>) -> f32 { t.mean().into_scalar() }`);
    /// burn only.
    pub(super) param_ops: u64,
    /// A test (`#[test]`, or inside a `#[cfg(test)]` module or item): it runs once.
    pub(super) is_test: bool,
    /// Carries an attribute that may make something outside the crate's code call it
    /// (`#[wasm_bindgen]`, `#[no_mangle]`, `#[tokio::main]`); not `doc`, `allow`, `inline`, `cfg`.
    pub(super) registered: bool,
    /// Calls made after a backward that hand on values made before it, by call-site index
    /// (kept apart from [`CallSite`]: few calls have one).
    pub(super) args_after_backward: Vec<(usize, ArgsAfterBackward)>,
    /// Collections emptied.
    pub(super) cleared: Vec<Cleared>,
    /// A method that puts a fresh value in place of its whole receiver (`*self =
    /// Self::default()`): every field of it starts afresh.
    pub(super) resets_self: bool,
    /// Bindings a call shrinks (`self.window.pop_front()`, `self.log.remove(0)`): a window kept
    /// to a size, not a log that only grows.
    pub(super) shrunk: Vec<BindingId>,
    /// Calls of the crate's methods that empty (a field of) their receiver (`acc.ready()` taking
    /// `self.sum`).
    pub(super) emptied_by_calls: Vec<EmptiedByCall>,
    /// Value nodes made by reading a parameter's tensor (burn `param.val()`).
    pub(super) param_reads: Vec<NodeIndex>,
    /// Value nodes of sums and differences (where parameters are tracked).
    pub(super) additive_nodes: Vec<NodeIndex>,
    /// Pushes into a field of a value that is not `self` (`rollout.values.push(v)`): the pushed
    /// value, the receiver's declared type when known, the field name and the call.
    pub(super) field_pushes: Vec<(NodeIndex, Option<String>, String, Span)>,
    /// What the rule on kept copies asks, where there is any (most functions have none: kept
    /// out of line, so that the model stays small to move).
    pub(super) copies: Option<Box<CopyFacts>>,
    /// The declared return type holds no tensor (`f32`, `Result<(f32, f64)>`, `()`, `Vec<f32>`).
    pub(super) returns_plain: bool,
    /// Its declared result holds no tensor, also through the crate's structs of host fields
    /// (`Vec<Example>`): what it returns is data, never a model.
    pub(super) returns_host_data: bool,
    /// The declared return type is one tensor (`Tensor`, `Result<Tensor>`, `Tensor<B, 2>`).
    pub(super) returns_tensor: bool,
    /// Its declared result is a sequence of tensors (`Vec<Tensor>`, `impl Iterator<Item =
    /// &Tensor>`), with no tuple in it.
    pub(super) returns_tensors: bool,
    /// Its declared result holds tensors, in tuples of tensors only (`Vec<(&Tensor, &Tensor)>`).
    pub(super) returns_tensor_parts: bool,
    /// The closures of the body, in order.
    pub(super) closures: Vec<ClosureScope>,
    /// The body runs a forward pass outside its closures.
    pub(super) runs_forward: bool,
    /// Variables created in a store.
    pub(super) var_creations: Vec<VarCreation>,
    /// The function works on an autodiff backend (burn: `AutodiffBackend`/`Autodiff<_>` in its or
    /// its `impl`'s generics, or `device.autodiff()` in its body).
    pub(super) autodiff: bool,
    /// burn 0.22: autodiff through a device made with `device.autodiff()` (here, or in a caller
    /// that hands this function its model): types name no backend, values do.
    pub(super) autodiff_device: bool,
    /// The function is a method of a model: a type of the crate with a forward-named method
    /// (`impl<B: Backend> Encoder<B> { fn forward(..) }`). Set by the crate-level pass.
    pub(super) owner_is_model: bool,
    /// The function (or its `impl`) has type parameters (`fn f<B: Backend>`, `impl<B> Net<B>`):
    /// a caller may instantiate it with an autodiff backend.
    pub(super) generic: bool,
    /// Why a generic function counts as autodiff: the call that instantiates it with an autodiff
    /// backend (file, line, calling function), set by the crate-level pass.
    /// The first is the one findings name; a few others follow (empty: not instantiated).
    pub(super) autodiff_from: Vec<(std::path::PathBuf, usize, String)>,
    /// Every function of the crate whose call instantiates this one with an autodiff backend,
    /// as (file, function) indices of the linked crate; empty when not known (not instantiated,
    /// or made autodiff by a call through several candidates).
    pub(super) autodiff_callers: Vec<(usize, usize)>,
    /// The function runs inside a training step: a call in a loop that runs backward reaches it
    /// (directly or through other functions). That call (file, line, caller's name), set by the
    /// crate-level pass.
    pub(super) per_step_from: Option<(std::path::PathBuf, usize, String)>,
    /// [`FnModel::per_step_from`] through calls made in the innermost training loop only: not
    /// from a loop that trains in a loop nested in it or in a function it calls (an epoch loop
    /// that checkpoints, a sweep that builds a trainer per setting).
    pub(super) per_iteration_from: Option<(std::path::PathBuf, usize, String)>,
    /// A caller backpropagates what this function returns (`let loss = batch_loss(..);
    /// loss.backward()`), set by the crate-level pass.
    pub(super) result_backpropagated: bool,
    /// This function makes a module untracked with the framework's no-grad method.
    pub(super) untracks_models: bool,
    /// Every call of this function in the crate is made with gradients off (tch: inside a
    /// caller's `no_grad` region, or from a function that is itself only so called): its forward
    /// passes record no graph. Set by the crate-level pass.
    pub(super) grad_off: bool,
    /// Branch ids (see `branch_paths`) that run only on a condition: `if`/`else` blocks, `match`
    /// arms, the rest of a block after an early exit. Loop bodies and closures are not.
    pub(super) conditional_branches: Vec<usize>,
    /// Somewhere in the crate a module is made untracked with the framework's no-grad method
    /// (burn: `model.valid()`, `module.no_grad()`).
    pub(super) crate_untracks_models: bool,
    /// Some call of the body may run backward (see [`LoopScope::may_run_backward`]).
    pub(super) may_run_backward: bool,
    /// Extra graph-carrying seeds found by the crate-level pass (calls of functions that
    /// return a graph-carrying value).
    pub(super) seeds: Vec<NodeIndex>,
    /// Values the crate-level pass found to be models made inert (`model.valid()`): results of
    /// functions that return one, parameters every caller hands one.
    pub(super) inert_seeds: Vec<NodeIndex>,
    /// Values written into fields of the crate's structs that may hold a model: a struct
    /// literal's fields (`Self { backbone, .. }`, `Probe { backbone: b.no_grad() }`) and
    /// assignments to `self.<field>`, as (struct, field, value). The crate-level pass makes a
    /// field every write of which is an inert model inert in the struct's methods.
    pub(super) field_writes: Vec<(String, String, NodeIndex)>,
    /// Names of the fields a write here may change, whatever the struct: the fields along an
    /// assigned place (`agent.target.l1.weight = ..`, `self.total += ..`), a place lent `&mut`
    /// (`polyak(&online, &mut self.target)`) and the receiver of a method call made as a
    /// statement (`self.target.sync(&self.online);`, for what it does to the field).
    /// Each as the span of its name in the function's file.
    pub(super) fields_written: Vec<Span>,
    /// Fields of this method's type (`self.teacher`) that the crate writes only where it builds
    /// the struct (struct literals), never afterwards: no optimizer step trains them (a burn step
    /// returns the updated module, which has to be stored back), and no update copies another
    /// module into them.
    pub(super) apart_fields: Option<std::sync::Arc<[String]>>,
    /// For a method that pushes graph-carrying values into a field of `self` in its own
    /// training step (frameworks whose tensors own their graphs): the fields some method of its
    /// type empties (`clear()`, `drain(..)`, `std::mem::take`), set by the crate-level pass.
    pub(super) fields_emptied_by_type: Option<std::sync::Arc<[String]>>,
    /// For calls `self.f(..)` (by their result node): the fields of `self` every candidate
    /// callee returns a value computed from (`fn take_state(&mut self) -> State {
    /// self.state.take().unwrap_or(..) }`), set by the crate-level pass: the result reads those
    /// fields back. Kept beside the call sites, few calls have any.
    pub(super) self_fields_returned: Vec<(NodeIndex, Vec<String>)>,
    /// Method chains on a field of `self` that end in a cut (`self.teacher.forward(x)
    /// .max_dim(1).detach()`, `self.target.forward(x).into_data()`; burn 0.19 on): a forward
    /// pass at the head of one leaves no graph behind.
    pub(super) cut_chains: Vec<Span>,
    /// burn 0.22: locals bound to what a call handed an autodiff device makes (`let model =
    /// model.fork(&ad);`): tracked, whatever inert value they were made from.
    pub(super) autodiff_bound: Vec<BindingId>,
    /// Values built from trainable variables (candle `VarBuilder::from_varmap(..)`), and, from
    /// the crate-level pass, results of functions that return one and parameters (or `self`
    /// fields) some call hands one.
    pub(super) trainable_seeds: Vec<NodeIndex>,
    /// The first version of each `self` field the body reads (empty without `self`).
    pub(super) self_fields: Vec<NodeIndex>,
    /// Forward passes on methods the crate defines (`llama.forward(&x, pos)`), recorded where
    /// models made from trainable variables matter (candle) for the crate-level pass to ask
    /// whether the method keeps state; they are forward passes, not calls, everywhere else.
    pub(super) forward_sites: Vec<CallSite>,
    /// Calls of functions that keep a graph-carrying value in their state (see
    /// [`FnModel::keeps_graph_state`]), set by the crate-level pass.
    pub(super) state_calls: Vec<StateCall>,
    /// Locals made as caches that keep nothing (`let mut cache = Cache::new(false, ..)?`).
    pub(super) disabled_caches: Vec<BindingId>,
    /// `model.reset_cache()`, `model.clear_kv_cache()`: the binding, and the loop it is in.
    pub(super) resets: Vec<(BindingId, Option<LoopId>)>,
    /// The resets made by a method call of a reset's name (`net.clear_buffers()`): (index into
    /// `resets`, the method name's span, as the call site has it). Where the method is the
    /// crate's, the crate-level pass narrows the reset to the fields the method starts afresh.
    pub(super) named_resets: Vec<(usize, Span)>,
    /// A field of a binding given a value that carries no graph (`model.h = model.h.detach()`,
    /// `self.cell.h = self.cell.h.zeros_like()?`): the binding, the field's name and the loop.
    /// A state that a method keeps in that field starts afresh there.
    pub(super) field_cuts: Vec<(BindingId, String, Option<LoopId>)>,
    /// Calls through a type parameter to a method no type of the crate implements (a trait's
    /// required method, implemented by the library's users): what they run is unknown, a
    /// backward included. Their loops, set by the crate-level pass.
    pub(super) opaque_calls: Vec<Option<LoopId>>,
    /// Locals that stand for part of `self` or of a parameter: a guard on a field (`let mut
    /// cache = self.cache.kvs.lock().unwrap();`), an element of a field iterated over (`for
    /// block in self.blocks.iter()`). What is stored into them is stored there: the local, and
    /// `None` for `self` or `Some(i)` for parameter `i`. Recorded where a model can keep a cache
    /// (candle).
    pub(super) guard_locals: Vec<(BindingId, Option<usize>)>,
    /// The place a local lends a part of (`let cell = &mut self.slow.cell;`: `self.slow.cell`),
    /// named in findings and matched against cuts of fields.
    pub(super) guard_places: Vec<(BindingId, String)>,
    /// For a function some call hands a model built from trainable variables: that call (file,
    /// line, calling function), set by the crate-level pass.
    pub(super) trainable_from: Option<(std::path::PathBuf, usize, String)>,
    /// Some call of the crate hands this method a receiver holding a model built from trainable
    /// variables (`Sampler { net: &net }.sample(..)`), whatever fields it reads.
    pub(super) self_trainable: bool,
    /// Branches taken only once a collection has reached a size (`if memory.len() > n`).
    pub(super) size_wait_branches: Vec<usize>,
    /// Those of them whose size is brief: one batch (`if memory.len() >= self.batch_size`: a
    /// replay buffer's warm-up lasts one batch of steps, once) or a handful of items (a literal or
    /// constant of at most 32: at most that many steps between backwards).
    pub(super) brief_wait_branches: Vec<usize>,
    /// Branches taken only when a call of the crate says so (`if agent.can_learn() { .. }`,
    /// the rest of a block after `if !self.ready() { return; }` or after `let Some(batch) =
    /// memory.sample() else { return };`): (branch, callee). The crate-level pass makes them
    /// size waits when every function of that name is a [`FnModel::size_gate`].
    pub(super) gated_branches: Vec<(usize, String)>,
    /// The function tells whether a collection has reached a size: it returns a `bool` that
    /// compares a length (`fn can_learn(&self) -> bool { self.buffer.len() >= self.batch }`),
    /// or an `Option` that is `None` until it has (`if self.memory.len() < n { return None; }`).
    pub(super) size_gate: bool,
    /// A size gate whose size is one batch (`self.batch_size <= self.memory.len()`).
    pub(super) batch_gate: bool,
    /// An `Option`-returning function that hands on the `None` of these crate calls
    /// (`let (batch, w) = self.sample(episode)?;`): a size gate when one of them is.
    pub(super) gate_via: Vec<String>,
    /// The function's value is a struct literal (`Ok(Self { policy, target: policy.valid() })`):
    /// a container, not a model, even when one of its fields is an inert model.
    pub(super) returns_struct: bool,
    /// For a size gate: the fields its comparisons read (`batch_size`, `step`,
    /// `learning_starts`), which name its warm-up threshold elsewhere too.
    pub(super) gate_fields: Vec<String>,
    /// Branches a `bool` parameter opens (`if is_train { loss.backward(); .. }`): (branch,
    /// parameter index, the value that opens it, the parameter's name).
    pub(super) param_gates: Vec<(usize, usize, bool, String)>,
    /// Branches a parameter's value decides, for calls that hand it a constant: (branch,
    /// parameter index, the values that take it). `if explore { a } else { b }` and the arms of
    /// `match mode { Mode::Explore => a, Mode::Exploit => b }`, `if mode == Mode::Train { a }`.
    pub(super) value_gates: Vec<(usize, usize, Opens)>,
    /// `if`s on a setting read from a parameter or `self` (`if !config.dry_run { .. } else { .. }`,
    /// `if self.cfg.eval_only`), which a loop does not change: (then-branch, else-branch, the
    /// setting's span, whether the then-branch is taken when the setting is true).
    pub(super) flag_ifs: Vec<(usize, usize, Span, bool)>,
    /// `if let Some(loss) = total { .. }` on a local binding: (then-branch, the binding). A call
    /// there runs whenever the binding holds a value.
    pub(super) presence_ifs: Vec<(usize, BindingId)>,
    /// Calls of a parameter (`policy(&obs)` with `policy: &mut impl FnMut(..)`): the parameter's
    /// index and the innermost loop around the call.
    pub(super) param_calls: Vec<ParamCall>,
    /// Writes made inside a branch of their loop body (`if step % 2000 == 0 { running = zeros }`):
    /// the version written, and the branches between the loop body and the write (see
    /// `TrainingCall::path`). A write not listed runs on every pass of its loop body.
    pub(super) branch_writes: Vec<(NodeIndex, usize)>,
    /// The paths `branch_writes` index.
    pub(super) branch_paths: Vec<Vec<usize>>,
    /// Parameters whose declared type holds no model (host values, a backend's device): bit `i`
    /// for parameter `i` (the first 64).
    pub(super) plain_params: u64,
    /// Branches taken on exactly the iterations an earlier branch is (`if boundary { .. }`
    /// twice on one local): (branch, the earlier branch).
    pub(super) branch_aliases: Vec<(usize, usize)>,
    /// Values handed to a function of the crate that backpropagates the parameter they become
    /// (`trainer.step(&chunk)` with `fn step(&mut self, loss: &Tensor) { self.opt.backward_step(loss) }`):
    /// losses of this function too, set by the crate-level pass.
    pub(super) handed_losses: Vec<NodeIndex>,
    /// Of those, the values the callee runs backward on themselves (`model.update(&loss)` with
    /// `fn update(&self, loss: &Tensor) { let grads = loss.backward()?; .. }`), not the data a
    /// loss is computed from: they carry a graph.
    pub(super) handed_backward: Vec<NodeIndex>,
    /// burn: applications of the crate's `ModuleMapper`s (`target.map(&mut polyak)`): the
    /// mapper's type, the `map` call, and whether the result is made untracked at once
    /// (`.no_grad()`, `.valid()`).
    pub(super) mapper_uses: Vec<(String, Span, bool)>,
    /// A `ModuleMapper` method whose every application the crate makes untracked at once:
    /// the parameters it rewrites chain nothing. Set by the crate-level pass.
    pub(super) rewrites_untracked: bool,
    /// Calls of the crate that pass a `bool` literal (`run_epoch(&model, valid, false)`): (parameter
    /// index, value, where the call is, the caller's name).
    pub(super) bool_args: Vec<(usize, bool, std::path::PathBuf, usize, String)>,
}

/// A line of a file, equal to another when it is the same file (by address) and line: cheap to
/// copy and compare in the summaries of the crate-level pass.
#[derive(Debug, Clone)]
pub struct At(pub(super) std::sync::Arc<crate::SourceFile>, pub(super) usize);

impl PartialEq for At {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) && self.1 == other.1
    }
}

/// An argument of a call site, kept unmaterialized until the call resolves.
/// A constant a call hands a parameter: `false`, `Mode::Eval`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConstArg {
    Bool(bool),
    /// An enum variant, by its name (`Mode::Eval` is `Eval`).
    Variant(String),
}

/// The values of a parameter that take a branch: `if explore { .. }` takes its first branch on
/// `true`; the arm `Mode::Explore | Mode::Greedy => ..` of `match mode` on those two variants,
/// and a later `_ => ..` on every other one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opens {
    pub(super) values: Vec<ConstArg>,
    /// Every value but `values` takes it.
    pub(super) negated: bool,
}

impl ArgValue {
    /// The argument is `true` or `false` as written.
    pub(super) fn bool_literal(&self) -> Option<bool> {
        match self.constant {
            Some(ConstArg::Bool(b)) => Some(b),
            _ => None,
        }
    }
}

impl Opens {
    pub(super) fn admits(&self, v: &ConstArg) -> bool {
        self.values.contains(v) != self.negated
    }

    pub(super) fn negate(&self) -> Opens {
        Opens { values: self.values.clone(), negated: !self.negated }
    }
}

/// The one value of a parameter that opens a branch (see [`StateAt::gate`]): `true` or `false`,
/// or an enum variant, by a hash of its name (the state is `Copy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    Bool(bool),
    Variant(u64),
}

impl Opening {
    pub(super) fn variant(name: &str) -> Opening {
        // FNV-1a: names are short and few; equal names give equal hashes.
        Opening::Variant(
            name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)),
        )
    }

    /// Whether a call passing `c` takes the branch: not when it is another value of its kind.
    fn closed_by(self, c: &ConstArg) -> bool {
        match (self, c) {
            (Opening::Bool(opens), ConstArg::Bool(v)) => opens != *v,
            (Opening::Variant(_), ConstArg::Variant(name)) => Opening::variant(name) != self,
            _ => false,
        }
    }
}

/// Code that runs only on calls handing parameter `.0` a value one of `.1` admits.
pub type ValueGate = (usize, Vec<Opens>);

/// Whether a call passing `args` closes `gate`: it hands the parameter a constant that none of
/// the gate's branches admits.
pub(super) fn closes(gate: &ValueGate, args: &[ArgValue]) -> bool {
    args.get(gate.0).and_then(|a| a.constant.as_ref()).is_some_and(|c| !gate.1.iter().any(|o| o.admits(c)))
}

#[derive(Debug, Clone)]
pub struct ArgValue {
    pub(super) reads: smallvec::SmallVec<[NodeIndex; 2]>,
    pub(super) producer: Producer,
    pub(super) op: bool,
    /// The argument as written (empty: exact spans of every argument cost more than they give).
    pub(super) span: Span,
    /// The argument is a constant as written (`true`, `Mode::Eval`).
    pub(super) constant: Option<ConstArg>,
    /// The argument is written `&mut place`: the binding the callee may change.
    pub(super) mut_ref: Option<BindingId>,
    /// The same for every framework (`mut_ref` is recorded where a model keeps state, candle):
    /// the binding a `&mut place` argument lends.
    pub(super) lent: Option<BindingId>,
}

/// A call of a parameter (`apply(model, loss)` with `apply: F`, `F: FnMut(..)`, or a `fn(..)`
/// pointer): what the caller hands in runs here.
#[derive(Debug, Clone)]
pub struct ParamCall {
    /// The parameter's index.
    pub(super) param: usize,
    /// The innermost loop around the call.
    pub(super) in_loop: Option<LoopId>,
    pub(super) span: Span,
    /// Branches between the innermost loop body and the call (see `TrainingCall::path`).
    pub(super) path: Vec<usize>,
    /// The value node of the call's result.
    pub(super) result: NodeIndex,
    /// The nodes each argument reads, in order.
    pub(super) arg_reads: Vec<smallvec::SmallVec<[NodeIndex; 2]>>,
}

/// A call that may reach one of the crate's own functions.
#[derive(Debug, Clone, Default)]
pub struct CallSite {
    /// The function or method name (`record`, `compute_loss`).
    pub(super) name: String,
    /// The path segment before the name (`Self`, `Trainer`, a module), for path calls.
    pub(super) qualifier: Option<String>,
    /// A method call (`x.name(..)`) rather than a path call.
    pub(super) method: bool,
    pub(super) receiver: Option<NodeIndex>,
    /// The receiver is `self`.
    pub(super) receiver_self: bool,
    /// The receiver's declared type, when it is a binding whose declaration names one
    /// (`memory: &mut Memory<B>` → `Memory`).
    pub(super) receiver_type: Option<String>,
    /// `receiver_type` is a guess (see `Binding::ty_guessed`): it orders candidates, it does not
    /// rule all of them out.
    pub(super) receiver_type_guessed: bool,
    /// The receiver is a field of `self` (`self.policy.act(..)`): its name, whose declared type
    /// the crate-level pass looks up.
    pub(super) receiver_field: Option<String>,
    /// The receiver is an element of a field of `self` that a loop walks (`c` of `for c in
    /// self.cells.iter_mut()`): that field's name. The kept-state pass trusts a call there to
    /// reach a method of the field's element type, and sees resets of the field.
    pub(super) receiver_element_of: Option<String>,
    /// The type whose field the receiver is, when that is not `self`'s type: the declared type
    /// of a local (`model.cell.step(..)` with `model` a `Forecaster`).
    pub(super) receiver_field_owner: Option<String>,
    /// A path call through a type parameter (`M::f(..)`, `<M as Trait>::f(..)`): it may reach
    /// the function of that name of any impl of the crate.
    pub(super) type_param_dispatch: bool,
    /// Arguments written as closures (`&mut |o| agent.act(o)`): (argument index, closure).
    pub(super) closure_args: Vec<(usize, usize)>,
    /// The innermost closure of the body the call is in.
    pub(super) closure: Option<usize>,
    /// Argument values, in order (receiver excluded): what each reads and how it was made.
    pub(super) args: Vec<ArgValue>,
    /// The value node of the call's result.
    pub(super) result: NodeIndex,
    /// The called name, for labels.
    pub(super) span: Span,
    pub(super) in_loop: Option<LoopId>,
    pub(super) path: Vec<usize>,
    /// The receiver's type is a type parameter (`agent: &mut A`, or a field `agent: A` of the
    /// caller's type, found by the crate-level pass): the call reaches the trait methods of
    /// whatever type a user instantiates it with.
    pub(super) receiver_generic: bool,
    /// The receiver is a parameter declared as a trait object or `impl Trait` of a trait the
    /// crate may implement (`mover: &mut dyn Agent`): like `receiver_generic`, it reaches the
    /// trait methods of whichever type the caller hands, but a method the crate does not
    /// implement is a library's (`out: &mut dyn Write`), not an unknown one.
    pub(super) receiver_dyn: bool,
    /// ... an element of a collection of trait objects a loop walks (`for m in
    /// self.metrics.iter_mut() { m.update(..) }`): the loop calls every impl, so the call does
    /// what any of them does.
    pub(super) receiver_dyn_all: bool,
    /// Explicit generic arguments, and whether they name an autodiff backend
    /// (`evaluate::<TrainingBackend>(..)`: `Some(true)`; `extract::<B::InnerBackend>(..)`:
    /// `Some(false)`; none written: `None`).
    pub(super) turbofish_autodiff: Option<bool>,
    /// burn 0.22: the call hands only the plain device and literals (`infer(device, "/tmp/m")`
    /// in a function that also makes `device.autodiff()`): no autodiff model or device.
    pub(super) plain_device_only: bool,
    /// The arguments (bit `k`: argument `k`) every function the call may reach computes its
    /// result from. Set by the crate-level pass where a cache can chain graphs (candle).
    pub(super) args_returned: u64,
    /// `let (next, onsets) = state.step(beta, gamma)` with a crate function that returns a
    /// tuple: for each element, a node reading the result that the crate-level pass may make
    /// drop its graph (in [`FnModel::graph_cuts`]), and the node the element's names bind, which
    /// the pass makes read the arguments that element is computed from.
    pub(super) elems: Vec<(NodeIndex, NodeIndex)>,
    /// The nodes through which an element reads an argument (`Some(j)`) or the receiver, made
    /// by the crate-level pass: (element, source, node).
    pub(super) elem_gates: Vec<(usize, Option<usize>, NodeIndex)>,
    /// Made inside a no-grad region of the caller (`tch::no_grad(|| self.bootstrap(obs))`, after
    /// `let _g = tch::no_grad_guard();`).
    pub(super) no_grad: bool,
    /// Only host data leaves the callee: its declared result is a host type (`fn act(&self,
    /// obs) -> usize`, `()`), it pushes nothing into its receiver and keeps no parameter past
    /// the call. Set by the crate-level pass.
    pub(super) host_result: bool,
}

/// What a method of a reset's name starts afresh in its receiver (see
/// [`FnModel::fields_started_afresh`]).
#[derive(Debug)]
pub(super) struct StartedAfresh {
    /// Fields it gives a fresh value or empties.
    pub(super) fields: Vec<String>,
    /// The resets it makes by a method's name: (index into `named_resets`, the field of `self`
    /// reset, `None` for `self` or another part of it).
    pub(super) by_name: Vec<(usize, Option<String>)>,
    /// Every write it makes to a field of `self` continues what the field held with what the
    /// caller hands in (`self.h = self.h.broadcast_mul(&mask)?`, zeroing the rows of finished
    /// episodes: the new state is computed from the old one), and it makes at least one.
    pub(super) only_continues: bool,
}

/// Whether a cut of field `cut` of a binding (`h`, `state.hs`) may start afresh the state a
/// method keeps in `kept` (`self.h`, `self.state`): the same field by its last name, a part that
/// holds it, or a part of it (which part of a struct holds the graph is not known).
pub(super) fn cut_covers(cut: &str, kept: &str) -> bool {
    let kept = kept.strip_prefix("self.").unwrap_or(kept);
    let within =
        |outer: &str, inner: &str| inner.strip_prefix(outer).is_some_and(|r| r.is_empty() || r.starts_with('.'));
    let ends = |long: &str, short: &str| long.strip_suffix(short).is_some_and(|r| r.is_empty() || r.ends_with('.'));
    if !cut.contains('.') || !kept.contains('.') {
        // A field by its name alone: any part of the same name.
        let last = cut.rsplit('.').next().unwrap_or(cut);
        return kept.split('.').any(|part| part == last) || within(cut, kept) || within(kept, cut);
    }
    // Two paths (`fast.cell.state` cut, `slow.cell` kept): one holds the other, or one is the
    // other seen from a part further in (a callee's own `cell.h` beside the caller's `enc.cell.h`).
    within(cut, kept) || within(kept, cut) || ends(cut, kept) || ends(kept, cut)
}

/// Where a function keeps graph-carrying state from call to call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StateAt {
    /// In `self`.
    pub(super) in_self: bool,
    /// In parameters, a bit each (the first 64).
    pub(super) params: u64,
    /// In `self`, by a write on every path through the function (not under an `if` or `match`:
    /// a cache kept only when a flag is on is not).
    pub(super) self_always: bool,
    /// Every write that keeps it lies on a branch a parameter's value opens (`if training {
    /// state.w = (&state.w - &dw)? } else { state.w = ...detach() }`, the arm `Mode::Train => ..`
    /// of `match mode`): (parameter, the value that opens it). A call that passes another value
    /// keeps nothing.
    pub(super) gate: Option<(u8, Opening)>,
    /// In `self`, computed from its old value and from these parameters (a bit each), which
    /// carry no graph of their own here (`self.running = (&self.running * m + z.mean(0)? * (1.0 -
    /// m))?`): kept with a graph where a call hands a graph-carrying argument there.
    pub(super) self_via: u64,
    /// Such a write is made on every path (see [`StateAt::self_always`]).
    pub(super) self_via_always: bool,
    /// In parameters (a bit each), by a write on every path (`fn unroll(.., st: &mut
    /// RecState, ..)` writing `st.per_layer[l] = nh` from the old state).
    pub(super) params_always: u64,
}

impl StateAt {
    pub(super) fn any(self) -> bool {
        self.in_self || self.params != 0 || self.self_via != 0
    }

    /// What a call keeps: a state in `self` computed from parameters counts where the call hands
    /// one of them a graph-carrying argument (`self.center.forward_train(&z)` with `z` a forward
    /// pass's output).
    /// `after_backward`: the arguments (a bit each) of a call made after the caller's backward
    /// that read values made before it (burn: see [`ArgsAfterBackward`]).
    /// `tensor_state`: the state lives in tensor fields, so a trainable model handed there counts
    /// too: the callee computes with its weights (candle `teacher.update(&student)` blending the
    /// student's weights into an average, `ema = (ema * d + w * (1 - d))`).
    pub(super) fn at_call(
        mut self,
        g: &FnModel,
        args: &[ArgValue],
        after_backward: u64,
        tensor_state: bool,
    ) -> StateAt {
        if self.self_via != 0
            && (0..64).filter(|k| self.self_via & (1 << k) != 0).any(|k| {
                args.get(k).is_some_and(|a| {
                    a.reads.iter().any(|&n| {
                        // burn: an argument a backward of the caller consumes keeps only
                        // bookkeeping in the state, when the callee's ops on it are recorded
                        // before that backward; recorded after it, on the consumed graph, they
                        // stay for as long as the state holds them.
                        (tensor_state && g.graph[n].taint.has(Taint::TRAINABLE))
                            || g.graph[n].taint.has(Taint::GRAPH)
                                && !(g.framework_known
                                    && g.spec.graph_swept_by_backward
                                    && after_backward & (1 << k) == 0
                                    && g.graph_meets_backward(n))
                    })
                })
            })
        {
            self.self_always |= self.self_via_always && !self.in_self;
            self.in_self = true;
        }
        self.self_via = 0;
        self
    }

    /// Adds a place kept by writes behind `gate` (see [`StateAt::gate`]): different gates, or
    /// one write with none, leave the state ungated.
    pub(super) fn add_gated(&mut self, root: Option<usize>, gate: Option<(u8, Opening)>) {
        let first = !self.any();
        self.add(root);
        self.gate = if first || self.gate == gate { gate } else { None };
    }

    /// Whether a call passing `args`'s constants keeps nothing: it closes the gate.
    pub(super) fn closed_by(&self, args: &[ArgValue]) -> bool {
        self.gate.is_some_and(|(p, opens_on)| {
            args.get(usize::from(p)).and_then(|a| a.constant.as_ref()).is_some_and(|c| opens_on.closed_by(c))
        })
    }

    /// Adds a place: `None` for `self`, `Some(i)` for parameter `i`.
    pub(super) fn add(&mut self, root: Option<usize>) {
        match root {
            None => self.in_self = true,
            Some(i) if i < 64 => self.params |= 1 << i,
            Some(_) => {}
        }
    }

    /// What either of two callees keeps (a loop over trait objects calls them all).
    pub(super) fn join(self, other: StateAt) -> StateAt {
        if !self.any() {
            return other;
        }
        if !other.any() {
            return self;
        }
        StateAt {
            in_self: self.in_self || other.in_self,
            params: self.params | other.params,
            self_always: self.self_always || other.self_always,
            gate: if self.gate == other.gate { self.gate } else { None },
            self_via: self.self_via | other.self_via,
            self_via_always: self.self_via_always || other.self_via_always,
            params_always: self.params_always | other.params_always,
        }
    }

    /// What two candidate callees both keep.
    pub(super) fn meet(self, other: StateAt) -> StateAt {
        StateAt {
            in_self: self.in_self && other.in_self,
            params: self.params & other.params,
            self_always: self.self_always && other.self_always,
            gate: if self.gate == other.gate { self.gate } else { None },
            self_via: self.self_via & other.self_via,
            self_via_always: self.self_via_always && other.self_via_always,
            params_always: self.params_always & other.params_always,
        }
    }
}

/// What a label says where a state is kept: a value pushed into `field`, or `field` written from
/// its old value.
fn kept_label(field: &str, pushed: bool) -> String {
    if pushed {
        format!("`{field}` keeps what is pushed into it here")
    } else {
        format!("`{field}` is computed from its old value here")
    }
}

/// A call of a function that keeps a graph-carrying value in its state (a key/value cache).
#[derive(Debug, Clone)]
pub struct StateCall {
    pub(super) span: Span,
    pub(super) in_loop: Option<LoopId>,
    pub(super) receiver: Option<NodeIndex>,
    /// `Llama::forward`.
    pub(super) callee: String,
    /// The callee keeps its state in the receiver on every path (see [`StateAt::self_always`]).
    pub(super) always: bool,
    /// The bindings the call lends the callee by `&mut` (or hands on) that it keeps a state in on
    /// every path (`unroll(&cells, &mut st, &x)`).
    pub(super) always_in: Vec<BindingId>,
    /// Where such a state is written (file, line, span, and what a label there says: "`self.h`
    /// is computed from its old value here"), in the callee or a function it calls.
    pub(super) kept_at: Option<(std::path::PathBuf, usize, Span, String)>,
    /// The write at `kept_at` pushes into a collection (`self.log.push(y)`) rather than computing
    /// the place from its old value.
    pub(super) kept_by_push: bool,
    /// The state is a log that another method of its type empties now and then (`end_epoch()`
    /// clearing what `record(&loss)` pushed), handed values a backward already runs on.
    pub(super) kept_until_emptied: bool,
    /// Every field the state is kept in on every call (`self.fast.cell`, `self.slow.cell`): a
    /// cut starts it afresh only when it covers them all.
    pub(super) kept_fields: Vec<String>,
    /// The state starts afresh on each iteration of the call's loop: it lives in a receiver or
    /// `&mut` argument made in that loop (`let mut cache = Cache::new(..)`), or the receiver is
    /// reset there (`model.reset_cache()`).
    pub(super) fresh_each_iteration: bool,
    /// A call on `self` (`self.unroll(..)` in `fn run(&mut self)`): the state is kept in the
    /// caller's own receiver.
    pub(super) receiver_self: bool,
    /// A library model's cache lent from a parameter of the function (`model.forward(&x, 0,
    /// cache)` with `cache: &mut Cache`): its index. A cache that every caller makes disabled
    /// (`Cache::new(false, ..)`) keeps nothing.
    pub(super) lent_param: Option<usize>,
    /// The receiver is a parameter of the function (`model.forward(&x, 0)` with `model: &Llama`):
    /// its index. A model that every caller built around a disabled cache keeps nothing.
    pub(super) receiver_param: Option<usize>,
}

impl StateCall {
    /// See the field.
    pub fn receiver_self(&self) -> bool {
        self.receiver_self
    }

    /// See the field.
    pub fn kept_until_emptied(&self) -> bool {
        self.kept_until_emptied
    }

    /// The call.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// The innermost loop around the call.
    pub fn in_loop(&self) -> Option<LoopId> {
        self.in_loop
    }

    /// The value the call runs on.
    pub fn receiver(&self) -> Option<NodeIndex> {
        self.receiver
    }

    /// The called function (`Rnn::forward_chunk`).
    pub fn callee(&self) -> &str {
        &self.callee
    }

    /// Where the kept state is written: (file, line, span, the label's text).
    pub fn kept_at(&self) -> Option<&(std::path::PathBuf, usize, Span, String)> {
        self.kept_at.as_ref()
    }

    /// See the field.
    pub fn kept_by_push(&self) -> bool {
        self.kept_by_push
    }

    /// See the field.
    pub fn kept_fields(&self) -> &[String] {
        &self.kept_fields
    }

    /// See [`StateCall::always`].
    pub fn always(&self) -> bool {
        self.always
    }

    /// See [`StateCall::always_in`].
    pub fn always_in(&self) -> &[BindingId] {
        &self.always_in
    }
}

/// A call made after a backward (burn): the arguments that read values made before it, for the
/// crate-level pass to turn into uses after backward when the callee runs tensor operations on
/// those parameters (see [`FnModel`]'s `args_after_backward`).
#[derive(Debug, Clone)]
pub struct ArgsAfterBackward {
    /// The backward call.
    pub(super) backward: Span,
    pub(super) no_grad: bool,
    /// (argument position, a node it reads that was made before the backward).
    pub(super) args: Vec<(usize, NodeIndex)>,
}

/// A call of the framework vocabulary (see [`crate::frameworks::Spec`]), kept by kind for the
/// rules that look at such calls.
#[derive(Debug, Clone)]
pub struct VocabCall {
    pub(super) kind: CallKind,
    /// The whole call (or `let` statement).
    pub(super) span: Span,
    /// The pattern that discards the call's value (the `_` of `let _ = …`), when there is one.
    pub(super) fix_span: Option<Span>,
    pub(super) in_loop: Option<LoopId>,
    /// The value the call runs on (the model of a forward pass).
    pub(super) receiver: Option<NodeIndex>,
    /// Inside a no-grad region.
    pub(super) no_grad: bool,
    /// Made inside this called function of the crate (`Agent::act`), seen at the call.
    pub(super) via: Option<String>,
    /// For a forward made inside a called function: where that function runs it (file, line).
    pub(super) forward_at: Option<At>,
    /// When that function reaches the forward through a further call: that call (file, line),
    /// the first step from the called function towards `forward_at`.
    pub(super) forward_via: Option<At>,
    /// The call's value is dropped at once (`let _ = …;`, or a statement of its own).
    pub(super) discarded: bool,
    /// Branches the call sits in (as for [`TrainingCall::path`]).
    pub(super) path: Vec<usize>,
    /// Fields compared by the early exits before the call (`if self.step < self.config.start {
    /// return random }`): `["step", "start"]`. Usually empty.
    pub(super) guard_fields: Vec<String>,
    /// A forward pass that runs only once a warm-up is over: after an early exit on a field a
    /// size gate of the crate also compares, or inside a called function whose forwards all do.
    pub(super) waits: bool,
    /// A forward through a called function whose own loop runs it without any backward: that
    /// function is reported, this call is not reported again.
    pub(super) reported_inside: bool,
    /// The declared types say the model records a graph, whatever the function's signature
    /// says: a forward on a field of `self` declared with an autodiff backend (`policy:
    /// Model<Autodiff<Wgpu>>`, through a crate alias, or a crate type holding such fields), or a
    /// call whose callee forwards on such a model.
    pub(super) autodiff_model: bool,
    /// A call of a model's own method that runs its forwards in a loop of its own and returns
    /// what it computes (`model.sample(n)`: a denoising or generation loop): see
    /// [`VocabCall::samples`].
    pub(super) samples: bool,
    /// A call of a function of the crate that pushes what it computes into its receiver's
    /// fields (`self.saved_log_probs.push(logp)` in `act`): its outputs stay in a buffer, for a
    /// later backward (on-policy agents) or another rule.
    pub(super) kept_by_receiver: bool,
    /// ... or into a buffer the caller lends it (`agent.act(&obs, &mut episode)` pushing into
    /// `buf.log_probs`): the caller's binding lent.
    pub(super) kept_in_arg: Option<BindingId>,
    /// ... in a field of the receiver that no method of its type empties or starts afresh
    /// (`self.history`, a monitor's log of outputs): kept for as long as the receiver lives.
    pub(super) kept_for_good: Option<String>,
    /// Made in the closure of a lazy initialiser (`unwrap_or_else(|| model.alloc_grads())`): only
    /// when nothing is there yet.
    pub(super) lazy: bool,
    /// The innermost closure of the body the call is in.
    pub(super) closure: Option<usize>,
    /// A forward through a called function that runs it only for some values of a parameter
    /// this function hands on from its own (`self.agent.act(obs, mode)`): this function's
    /// parameter, and the values that run it.
    pub(super) gate: Option<ValueGate>,
}

impl VocabCall {
    /// The innermost closure the call is in.
    pub fn closure(&self) -> Option<usize> {
        self.closure
    }

    /// The call runs a model method that loops over forward passes and returns the result
    /// (`model.sample(n)`, `lm.generate(prompt, 100)`): outside any loop of the caller, its
    /// loop is the loop that counts.
    pub fn samples(&self) -> bool {
        self.samples
    }

    /// See [`VocabCall::lazy`].
    pub fn lazy(&self) -> bool {
        self.lazy
    }

    /// See [`VocabCall::kept_by_receiver`].
    pub fn kept_by_receiver(&self) -> bool {
        self.kept_by_receiver
    }

    /// See [`VocabCall::kept_in_arg`].
    pub fn kept_in_arg(&self) -> Option<BindingId> {
        self.kept_in_arg
    }

    /// See [`VocabCall::kept_for_good`].
    pub fn kept_for_good(&self) -> Option<&str> {
        self.kept_for_good.as_deref()
    }

    /// Branches the call sits in: a call runs on every iteration where another runs if the
    /// other's path is a prefix of this one's.
    pub fn path(&self) -> &[usize] {
        &self.path
    }

    pub fn kind(&self) -> CallKind {
        self.kind
    }

    /// The whole call (or `let` statement).
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// The pattern that discards the call's value (the `_` of `let _ = …`), when there is one.
    pub fn fix_span(&self) -> Option<&Span> {
        self.fix_span.as_ref()
    }

    /// The innermost loop around the call.
    pub fn in_loop(&self) -> Option<LoopId> {
        self.in_loop
    }

    /// The value the call runs on (the model of a forward pass).
    pub fn receiver(&self) -> Option<NodeIndex> {
        self.receiver
    }

    /// Inside a no-grad region.
    pub fn no_grad(&self) -> bool {
        self.no_grad
    }

    /// Made inside this called function of the crate (`Agent::act`), seen at the call.
    pub fn via(&self) -> Option<&str> {
        self.via.as_deref()
    }

    /// The declared types say this forward's model records a graph (see the field).
    pub fn autodiff_model(&self) -> bool {
        self.autodiff_model
    }

    /// The call's value is dropped at once (`let _ = …;`, or a statement of its own).
    pub fn discarded(&self) -> bool {
        self.discarded
    }

    /// A forward pass that runs only once the crate's warm-up is over (see the field).
    pub fn waits(&self) -> bool {
        self.waits
    }

    /// For a forward made inside a called function: where it runs (file, line).
    pub fn forward_at(&self) -> Option<(&std::path::Path, usize)> {
        self.forward_at.as_ref().map(|At(file, line)| (file.path(), *line))
    }

    /// For a forward that the called function reaches through a further call: that call.
    pub fn forward_via(&self) -> Option<(&std::path::Path, usize)> {
        self.forward_via.as_ref().map(|At(file, line)| (file.path(), *line))
    }

    /// A forward the called function's own loop already runs without backward (see the field).
    pub fn reported_inside(&self) -> bool {
        self.reported_inside
    }
}

/// The vocabulary kinds of [`VocabCall`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// A forward pass, in a framework whose graph store only backward sweeps.
    Forward,
    /// A no-grad guard (tch `no_grad_guard()`).
    NoGradGuard,
    /// A tape started with a fresh gradient store (dfdx `leaky_trace()`).
    FreshTape,
    /// A new gradient store (dfdx `alloc_grads()`).
    AllocGrads,
    /// A copy of a gradient store (`grads.clone()`, `grads.to_owned()`).
    GradsCopy,
    /// A parameter built with a new id (burn `Param::from_tensor(..)`).
    ParamNewId,
}

/// A parameter's value replaced by a new one (burn `p.map(|t| …)`,
/// `Param::initialized(id, value)`).
#[derive(Debug, Clone)]
pub struct ParamRewrite {
    /// The rewriting call.
    pub(super) span: Span,
    /// The new value's expression.
    pub(super) value: Span,
    /// What the new value reads.
    pub(super) reads: Vec<NodeIndex>,
    /// The nodes of the old value (the closure's input), or the parameter reads before the call.
    pub(super) old: Vec<NodeIndex>,
}

impl ParamRewrite {
    /// The rewriting call.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// The new value's expression.
    pub fn value(&self) -> &Span {
        &self.value
    }

    /// What the new value reads.
    pub fn reads(&self) -> &[NodeIndex] {
        &self.reads
    }

    /// The nodes of the old value (the closure's input), or the parameter reads before the call.
    pub fn old(&self) -> &[NodeIndex] {
        &self.old
    }
}

/// A tensor operation on a value that existed before the latest backward call of its
/// iteration (recorded where the framework's graph store is swept by backward).
#[derive(Debug, Clone)]
pub struct UseAfterBackward {
    /// The operation.
    pub(super) span: Span,
    /// The operand made before the backward.
    pub(super) operand: NodeIndex,
    /// The backward call.
    pub(super) backward: Span,
    pub(super) in_loop: Option<LoopId>,
    pub(super) no_grad: bool,
    /// Made inside this called function of the crate (`head::scalar(loss)`), seen at the call.
    pub(super) via: Option<String>,
}

impl UseAfterBackward {
    /// For an operation made inside a called function: its name.
    pub fn via(&self) -> Option<&str> {
        self.via.as_deref()
    }

    /// The operation.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// The operand made before the backward.
    pub fn operand(&self) -> NodeIndex {
        self.operand
    }

    /// The backward call.
    pub fn backward(&self) -> &Span {
        &self.backward
    }

    /// The innermost loop around the operation.
    pub fn in_loop(&self) -> Option<LoopId> {
        self.in_loop
    }

    /// Inside a no-grad region.
    pub fn no_grad(&self) -> bool {
        self.no_grad
    }
}

/// A collection emptied (`buf.clear()`, `buf.drain(..)`, `buf.truncate(..)`).
#[derive(Debug, Clone)]
pub struct Cleared {
    /// The version cleared.
    pub(super) version: NodeIndex,
    pub(super) in_loop: Option<LoopId>,
    /// Where (byte offset of the clearing call).
    pub(super) at: usize,
}

/// A call of one of the crate's methods that empties (a field of) its receiver (see
/// [`FnModel::emptied_into_backward`]).
#[derive(Debug, Clone)]
pub struct EmptiedByCall {
    /// The call.
    pub(super) call: Span,
    /// Its result.
    pub(super) result: NodeIndex,
    /// The binding it empties (the receiver, or a field of `self`).
    pub(super) binding: BindingId,
    /// The innermost loop around the call.
    pub(super) in_loop: Option<LoopId>,
}

/// What a value is computed from (see [`FnModel::blend`]).
#[derive(Debug, Clone, Copy)]
pub struct Blend {
    /// How many of the given stop nodes (the old value) it reaches.
    stops: usize,
    /// It also reaches another tensor (a binding that is not a host number, a parameter read).
    other: bool,
    /// A sum or difference lies on the way.
    additive: bool,
}

impl Blend {
    /// A blend of the old value with another tensor, `a * (1 - tau) + b * tau`.
    pub fn is_blend(&self, min_stops: usize) -> bool {
        self.additive && self.stops >= min_stops && (self.other || self.stops >= 2)
    }
}

/// Where a write happens relative to the training iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iteration {
    /// The innermost enclosing loop that runs backward.
    Loop(LoopId),
    /// The function body runs backward outside any loop (`fn train_step(&mut self)`): each call
    /// is one iteration.
    Call,
}

impl Binding {
    /// The name as written (`total`, `self.history`).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> BindingKind {
        self.kind
    }

    /// Where it is declared (the pattern identifier or the first use of a field).
    pub fn decl(&self) -> &Span {
        &self.decl
    }

    /// The innermost loop around the declaration.
    pub fn decl_loop(&self) -> Option<LoopId> {
        self.decl_loop
    }
}

/// Read access for rules: the model's facts, one question each.
impl FnModel {
    /// The framework whose names were used to build the model.
    pub fn spec(&self) -> &'static Spec {
        self.spec
    }

    /// Whether the framework is known (detected or configured) rather than guessed.
    pub fn framework_known(&self) -> bool {
        self.framework_known
    }

    /// `fn name` or `Type::method` (made when asked: most functions are never named).
    pub fn name(&self) -> String {
        match &self.owner {
            Some(o) => format!("{o}::{}", self.ident),
            None => self.ident.clone(),
        }
    }

    /// The function's own name (`train_step`).
    pub fn ident(&self) -> &str {
        &self.ident
    }

    /// The function works on an autodiff backend (see [`Spec::autodiff_by_type`]).
    pub fn autodiff(&self) -> bool {
        self.autodiff
    }

    /// Whether a call with this branch path runs only once a collection has reached a size.
    pub fn waits_for_size(&self, path: &[usize]) -> bool {
        path.iter().any(|b| self.size_wait_branches.contains(b))
    }

    /// Whether a call with this branch path waits for a size, and every size it waits for is
    /// brief (see `brief_wait_branches`: `if memory.len() >= self.batch_size { learn() }`).
    pub fn waits_only_briefly(&self, path: &[usize]) -> bool {
        let mut waits = false;
        for b in path.iter().filter(|b| self.size_wait_branches.contains(b)) {
            if !self.brief_wait_branches.contains(b) {
                return false;
            }
            waits = true;
        }
        waits
    }

    /// The declared return type holds no tensor (`()`, `f32`, `Result<Vec<f32>>`).
    pub fn returns_plain(&self) -> bool {
        self.returns_plain
    }

    /// The function is a method of a model (its type has a forward-named method): model code,
    /// part of a forward pass whose callers decide what becomes of the graph.
    pub fn owner_is_model(&self) -> bool {
        self.owner_is_model
    }

    /// For a function reached from a loop that runs backward: that call (file, line, caller).
    pub fn per_step_from(&self) -> Option<&(std::path::PathBuf, usize, String)> {
        self.per_step_from.as_ref()
    }

    /// Whether loop `l` or a loop around it (in this function) runs backward.
    pub fn loop_or_outer_runs_backward(&self, l: LoopId) -> bool {
        let mut at = Some(l);
        while let Some(i) = at {
            let Some(scope) = self.loops.get(i) else { return false };
            if scope.runs_backward {
                return true;
            }
            at = scope.parent;
        }
        false
    }

    /// A test function (see the field).
    pub fn is_test(&self) -> bool {
        self.is_test
    }

    /// Whether something other than the crate's code may call it: a trait's method (through
    /// the trait), `main`, a test, or a function with an attribute that registers it.
    pub fn entry_point(&self) -> bool {
        self.trait_default || self.is_test || self.registered || (self.owner.is_none() && self.ident == "main")
    }

    /// The type of the `impl` or `trait` the function is in.
    pub fn owner_type(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// Defined in `impl Trait for Type`.
    pub fn in_trait_impl(&self) -> bool {
        self.trait_impl
    }

    /// For a function called once per iteration of an innermost training loop (see the field):
    /// that call (file, line, caller's name).
    pub fn per_iteration_from(&self) -> Option<&(std::path::PathBuf, usize, String)> {
        self.per_iteration_from.as_ref()
    }

    /// Whether loop `l` and every loop around it run a few times only, by their literal bounds
    /// (`for i in 0..4`, `for x in &[0.1, 0.5]`; at most `max` each): what they do stays
    /// small. `None` (no loop) counts as bounded.
    pub fn literally_bounded(&self, l: Option<LoopId>, max: u64) -> bool {
        self.literal_loops_up_to(l, None, max)
    }

    /// Whether loop `l` runs a handful of iterations, once per call of the function: every loop
    /// from it outwards has a literal bound of at most [`ONCE_LOOP_MAX`], and it does not replace
    /// or fold a value that outlives its iterations with a graph-carrying one it computes (`x =
    /// model.forward(x, t)`, where each iteration builds on the last). A caller that runs the
    /// function in a loop of its own is judged at its call.
    pub fn runs_a_handful_once(&self, l: LoopId) -> bool {
        self.literally_bounded(Some(l), ONCE_LOOP_MAX)
            && !self.stores().any(|(_, value, target, how, _)| {
                matches!(how, Store::Assign | Store::Fold)
                    && self.taint(value).has(Taint::GRAPH)
                    && self.loop_within(self.loop_of(value), l)
                    && self.binding_of(target).is_some_and(|b| self.outlives(b, Iteration::Loop(l)))
            })
    }

    /// Whether loop `l` or a loop around it has a literal bound above `max` (`for _ in
    /// 0..10_000`, a timing loop); loops whose bound the text does not fix do not count.
    pub fn literally_longer_than(&self, l: LoopId, max: u64) -> bool {
        let mut at = Some(l);
        while let Some(i) = at {
            let Some(scope) = self.loops.get(i) else { return false };
            if scope.literal_count.is_some_and(|n| u64::from(n) > max) {
                return true;
            }
            at = scope.parent;
        }
        false
    }

    /// Whether loop `l` and every loop between it and loop `outer` (which encloses it, and is not
    /// counted) run a literal number of iterations (`0..3`, `for x in [a, b]`), at most `max`.
    pub fn literally_bounded_within(&self, l: LoopId, outer: LoopId, max: u64) -> bool {
        self.literal_loops_up_to(Some(l), Some(outer), max)
    }

    /// Whether every loop from `at` outwards, up to `stop` (not counted; `None`: the function
    /// body), has a literal bound of at most `max`; false when `stop` is not around `at`.
    fn literal_loops_up_to(&self, mut at: Option<LoopId>, stop: Option<LoopId>, max: u64) -> bool {
        while let Some(i) = at {
            if Some(i) == stop {
                return true;
            }
            let Some(scope) = self.loops.get(i) else { return false };
            if scope.literal_count.is_none_or(|n| u64::from(n) > max) {
                return false;
            }
            at = scope.parent;
        }
        stop.is_none()
    }

    /// Whether a call with branch path `call` runs on every iteration where one with path `at`
    /// runs, counting a branch taken whenever a binding that loop `l` fills holds a value
    /// (`if let Some(loss) = total`, `total` folded in `l`) as taken: `l` fills it on the way.
    pub fn runs_once_filled(&self, call: &[usize], at: &[usize], l: LoopId) -> bool {
        let filled = |b: BindingId| {
            self.stores().any(|(_, _, target, how, _)| {
                matches!(how, Store::Assign | Store::Push | Store::Fold)
                    && self.binding_of(target) == Some(b)
                    && self.loop_within(self.loop_of(target), l)
            })
        };
        let mut rest = call.iter().filter(|br| !self.presence_ifs.iter().any(|(t, b)| t == *br && filled(*b)));
        let mut at = at.iter();
        rest.all(|br| at.next() == Some(br))
    }

    /// Whether loop `l` sums or collects its graph-carrying values into a binding the function
    /// returns (`for x in xs { total = total + model.forward(x) } total`), without feeding that
    /// binding back into its forward passes (a sampler's `x = model.forward(x)` does).
    pub fn loop_accumulates_returned_graph(&self, l: LoopId) -> bool {
        if !self.returns.iter().any(|&n| self.taint(n).has(Taint::GRAPH)) {
            return false;
        }
        // `total`, `Ok(total)`, `total / n as f32`: the bindings the returned value reads, also
        // through the locals it is computed from (`let rewards = states.iter().map(..)`; a sum
        // of them over a second loop).
        let mut returned: Vec<BindingId> = self
            .returns
            .iter()
            .flat_map(|&n| self.upstream_via(n, usize::MAX, true, true))
            .filter_map(|n| self.binding_of(n))
            .collect();
        // Also through what is pushed into a collection it reads, or what an iterator's closure
        // yields (`for s in states.iter() { rewards.push(model.reward(s.clone())) }`,
        // `states.iter().map(|s| model.reward(s.clone())).collect()`, the return a sum of them).
        for _ in 0..4 {
            let more: Vec<BindingId> = self
                .stores()
                .filter(|&(_, _, target, how, _)| {
                    matches!(how, Store::Push | Store::Yield)
                        && self.binding_of(target).is_some_and(|b| returned.contains(&b))
                })
                .flat_map(|(_, value, ..)| self.upstream_via(value, usize::MAX, true, true))
                .filter_map(|n| self.binding_of(n))
                .filter(|b| !returned.contains(b))
                .collect();
            if more.is_empty() {
                break;
            }
            returned.extend(more);
        }
        let mut found = false;
        for (_, value, target, how, _) in self.stores() {
            let Some(b) = self.binding_of(target) else { continue };
            // Also what an iterator's closure yields into the collection returned
            // (`(0..k).map(|i| loss_of(model.forward(batch(i)))).collect()`).
            if !matches!(how, Store::Fold | Store::Push | Store::Yield)
                || !self.taint(value).has(Taint::GRAPH)
                || !self.loop_within(self.loop_of(value), l)
                || !returned.contains(&b)
            {
                continue;
            }
            // A trajectory pushed step by step and returned whole (`states.push(model.forward(s,
            // a))` with `s` its last state, the return computed from all of them) is what the
            // caller's backward runs through; a state fed back and folded is a sampler's.
            if how == Store::Fold && self.feeds_forward_through_locals(value, b) {
                return false;
            }
            found = true;
        }
        found
    }

    /// A caller backpropagates what this function returns (see the field).
    pub fn result_backpropagated(&self) -> bool {
        self.result_backpropagated
    }

    /// Nodes a backward's loss is computed from, through every edge: `mask[n]`; with
    /// `and_returns`, also the nodes the function's returned values are computed from.
    pub(super) fn upstream_of_losses(&self, and_returns: bool) -> Vec<bool> {
        self.upstream_of(self.losses.iter().chain(&self.handed_losses), and_returns)
    }

    /// [`FnModel::upstream_of_losses`], from the values a backward runs on here or in a function
    /// handed them as they are (`trainer.update(&mut opt, loss)` running `loss.backward()`), not
    /// from what a callee's loss is merely computed from (a replay store it samples targets from).
    pub(super) fn upstream_of_backwards(&self, and_returns: bool) -> Vec<bool> {
        self.upstream_of(self.losses.iter().chain(&self.handed_backward), and_returns)
    }

    fn upstream_of<'a>(&self, roots: impl Iterator<Item = &'a NodeIndex>, and_returns: bool) -> Vec<bool> {
        let mut seen = vec![false; self.graph.node_count()];
        let mut stack: Vec<NodeIndex> = roots.copied().collect();
        if and_returns {
            stack.extend(self.returns.iter().copied());
        }
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n.index()], true) {
                continue;
            }
            stack.extend(self.graph.edges_directed(n, Direction::Incoming).map(|e| e.source()));
        }
        seen
    }

    /// Whether only host data leaves forward pass `e` in iteration `it`: whatever of its output
    /// carries a graph is neither a loss (nor handed to a crate function that backpropagates
    /// it), nor returned, nor kept in a binding that outlives the iteration, nor handed to a
    /// method of the crate (which may keep it: `agent.remember(q)`); it ends in scalars and host
    /// data (`val.into_scalar()`, `to_f64(&val)`) or is dropped. A validation loss read every
    /// few steps, `act()` returning `argmax().into_scalar()`.
    ///
    /// Starts from the value that holds the call's result: the call site's, for a call of the
    /// crate, else the smallest value whose expression contains the call.
    pub fn forward_orphaned(&self, e: &VocabCall, it: Iteration) -> bool {
        if e.closure.is_some() {
            // A closure's value goes where the function it is handed to takes it.
            return false;
        }
        let start = match e.via {
            // Through a call of the crate: only when the callee says what leaves it (a host
            // result); a tuple or struct it returns may carry the loss.
            Some(_) => match self.call_sites.iter().find(|c| c.span == e.span) {
                Some(c) if c.host_result => return true,
                Some(c) if self.graph[c.result].taint.has(Taint::GRAPH) => c.result,
                _ => return false,
            },
            // The value a `let` binds, else the smallest value whose expression holds the call.
            None => match self.let_results.iter().find(|(at, _)| *at == e.span.start).map(|&(_, n)| n).or_else(|| {
                self.graph
                    .node_indices()
                    .filter(|&n| {
                        let s = &self.graph[n].span;
                        matches!(self.graph[n].kind, NodeKind::Value(_))
                            && s.start <= e.span.start
                            && e.span.end <= s.end
                    })
                    .min_by_key(|&n| self.graph[n].span.len())
            }) {
                Some(n) => n,
                None => return e.discarded,
            },
        };
        // What it brings to the host must be seen (`.into_scalar()`, a call of the crate that
        // returns a host value); a graph that merely goes nowhere the model can see (a block's
        // tail, a macro) is not evidence.
        let mut host = false;
        let mut seen = vec![false; self.graph.node_count()];
        let mut stack = vec![start];
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n.index()], true) {
                continue;
            }
            if !self.graph[n].taint.has(Taint::GRAPH) {
                // A cut: nothing of the graph goes on. Any other value that lost the graph is a
                // value the model lost track of.
                if !matches!(self.graph[n].kind, NodeKind::Value(Producer::Plain)) {
                    return false;
                }
                // A call of the crate whose result is known to be plain: a host value it
                // declares (`fn to_f64(t: &Tensor<B, 1>) -> f64`) is one; a tuple or struct
                // computed from its arguments may carry their graph all the same.
                match self.call_sites.iter().find(|c| c.result == n) {
                    Some(c) if c.host_result => host = true,
                    Some(_) => return false,
                    None => host |= self.host_reads.contains(&n),
                }
                continue;
            }
            host |= self.host_reads.contains(&n);
            if self.losses.contains(&n) || self.handed_losses.contains(&n) || self.returns.contains(&n) {
                return false;
            }
            if let NodeKind::Version(b) = self.graph[n].kind
                && (self.outlives(b, it)
                    // Read where the model does not follow (a block's tail, a closure's capture):
                    // where it goes is not known.
                    || !self.host_reads.contains(&n)
                        && self.graph.neighbors_directed(n, Direction::Outgoing).next().is_none())
            {
                return false;
            }
            stack.extend(self.graph.neighbors_directed(n, Direction::Outgoing));
        }
        host
    }

    /// The field of `self` forward `e` runs on when the crate writes it only where it builds
    /// the struct (`self.teacher.forward(x)`; see `apart_fields`): a module no step trains.
    pub fn apart_receiver(&self, e: &VocabCall) -> Option<&str> {
        let b = self.receiver_binding(e.receiver?)?;
        let name = self.bindings[b].name.as_str();
        let apart = self.apart_fields.as_ref()?;
        (self.bindings[b].kind == BindingKind::SelfField && apart.iter().any(|f| f == name)).then_some(name)
    }

    /// The field in which forward `e` (a call of a method of the crate) keeps its graph-carrying
    /// outputs for good (see [`VocabCall::kept_for_good`]), when that matters here: the model is
    /// autodiff, this is not a test, and the call runs in a training iteration on a receiver that
    /// outlives it (a monitor's `self.history.push(drift)`, called once per step). The one
    /// answer both `autodiff_forward_without_backward`, which reports it, and
    /// `accumulated_loss_tensor`, which leaves such a call to it, ask.
    pub fn forward_kept_for_good<'e>(&self, e: &'e VocabCall) -> Option<&'e str> {
        let field = e.kept_for_good()?;
        let it = self.iteration_of(e.in_loop())?;
        ((self.autodiff() || e.autodiff_model())
            && !self.is_test()
            && e.receiver().and_then(|r| self.receiver_binding(r)).is_some_and(|b| self.outlives(b, it)))
        .then_some(field)
    }

    /// The fields of `self` (`self.network`) a forward runs on whose output a backward of this
    /// function runs through.
    pub(super) fn self_fields_backpropagated(&self) -> Vec<&str> {
        let upstream = self.upstream_of_losses(false);
        self.graph
            .node_indices()
            .filter(|n| upstream[n.index()])
            .filter_map(|n| match self.graph[n].kind {
                NodeKind::Value(Producer::Forward { receiver: Some(r) }) => self.receiver_binding(r),
                _ => None,
            })
            .filter(|&b| self.bindings[b].kind == BindingKind::SelfField)
            .map(|b| self.bindings[b].name.as_str())
            .collect()
    }

    /// Whether forward `e` is the head of a chain of calls that ends in a cut
    /// (`self.teacher.forward(x).max_dim(1).detach()`): nothing of its graph goes on.
    pub fn cut_at_once(&self, e: &VocabCall) -> bool {
        self.cut_chains.iter().any(|c| c.start == e.span.start && e.span.end < c.end)
    }

    /// A model built from trainable variables that the call at `span` is handed as an argument
    /// and that is bound outside loop `l` (`chain.advance(&net)` with `net` from a `VarMap`):
    /// the model's span.
    pub fn trainable_arg_of(&self, span: &Span, l: LoopId) -> Option<&Span> {
        self.trainable_arg(self.call_sites.iter().find(|c| c.span == *span)?, l)
    }

    /// The trainable model call `site` is handed, bound outside loop `l`: its span.
    fn trainable_arg(&self, site: &CallSite, l: LoopId) -> Option<&Span> {
        site.args.iter().flat_map(|a| a.reads.iter()).find_map(|&r| {
            let v = self.receiver_root(r)?;
            (self.taint(v).has(Taint::TRAINABLE)
                && self.binding_of(v).is_some_and(|b| !self.loop_within(self.bindings[b].decl_loop, l)))
            .then(|| &self.graph[v].span)
        })
    }

    /// A forward pass in loop `l` (nested loops included) on a model built from trainable
    /// variables (candle `VarBuilder::from_varmap`) that outlives the loop's iterations: the
    /// receiver's span. A loop over models (`for layer in layers { x = layer.forward(x)? }`) is
    /// one forward pass through them.
    /// A method of `self`'s type that runs a forward pass (`x = self.step(&x, t)?` in a sampler
    /// a caller builds around a trainable model) counts when some call hands this function a
    /// `self` holding trainable weights: then the span is the method's name, and the flag is set.
    pub fn trainable_forward_in(&self, l: LoopId) -> Option<(&Span, bool)> {
        self.graph.node_indices().find_map(|n| match self.graph[n].kind {
            NodeKind::Value(Producer::Forward { receiver: Some(r) })
                if self.loop_within(self.graph[n].in_loop, l)
                    && self.receiver_root(r).is_some_and(|v| {
                        (self.taint(r).has(Taint::TRAINABLE) || self.taint(v).has(Taint::TRAINABLE))
                            && self.binding_of(v).is_some_and(|b| !self.loop_within(self.bindings[b].decl_loop, l))
                    }) =>
            {
                Some((&self.graph[r].span, false))
            }
            NodeKind::Value(Producer::Forward { receiver: None })
                if self.loop_within(self.graph[n].in_loop, l)
                    && self.self_trainable
                    && self.call_sites.iter().any(|c| c.result == n && c.receiver_self) =>
            {
                Some((&self.graph[n].span, true))
            }
            // A function of the crate that runs the forward pass of a trainable model it is
            // handed (`x = langevin_step(net, &x, ..)?` with `net` the model): that model.
            NodeKind::Value(Producer::Forward { receiver: None }) if self.loop_within(self.graph[n].in_loop, l) => {
                let site = self.call_sites.iter().find(|c| c.result == n && !c.method)?;
                self.trainable_arg(site, l).map(|span| (span, false))
            }
            _ => None,
        })
    }

    /// Whether loop `l` runs forward passes and every one is on a model made inert (built from
    /// plain weights, `valid()`) and reads no graph-carrying input: none of them records a graph.
    pub fn only_inert_forwards_in(&self, l: LoopId) -> bool {
        let mut any = false;
        for n in self.graph.node_indices() {
            if let NodeKind::Value(Producer::Forward { receiver }) = self.graph[n].kind
                && self.loop_within(self.graph[n].in_loop, l)
            {
                let inert = |v: NodeIndex| self.taint(v).has(Taint::INERT_MODEL);
                if !receiver.is_some_and(|r| inert(r) || self.receiver_root(r).is_some_and(inert)) {
                    return false;
                }
                // A frozen model handed graph-carrying inputs (a trainable embedding as the
                // conditioning) records a graph all the same.
                if self
                    .graph
                    .neighbors_directed(n, Direction::Incoming)
                    .any(|m| self.taint(m).has(Taint::GRAPH) || self.taint(m).has(Taint::TRAINABLE))
                {
                    return false;
                }
                any = true;
            }
        }
        any
    }

    /// The binding version a receiver is, or is reached from through the values of its
    /// expression (`model` of `model.text_decoder().forward(..)`).
    pub fn receiver_root(&self, r: NodeIndex) -> Option<NodeIndex> {
        let mut at = r;
        for _ in 0..8 {
            if self.binding_of(at).is_some() {
                return Some(at);
            }
            at = self.graph.neighbors_directed(at, Direction::Incoming).find(|&m| {
                matches!(self.graph[m].kind, NodeKind::Version(_))
                    || self.graph.neighbors_directed(m, Direction::Incoming).next().is_some()
            })?;
        }
        None
    }

    /// The binding of [`FnModel::receiver_root`].
    /// An element of a collection of trait objects a loop walks stands for the collection: a
    /// state its method keeps lives as long as the collection does.
    pub fn receiver_binding(&self, r: NodeIndex) -> Option<BindingId> {
        let b = self.binding_of(self.receiver_root(r)?)?;
        Some(self.element_owners.iter().find(|(e, _)| *e == b).map_or(b, |&(_, owner)| owner))
    }

    /// Pushes of a graph-carrying value into a field of `self` made outside any loop by a
    /// function that runs backward itself (a training step, or an update whose loop does), or in
    /// a loop whose iterations run backward (`for step in .. { ..; self.progress.push(fake) }`),
    /// into a field no method of its type empties: (the store's span, the field). Each step
    /// keeps one more graph.
    /// Also the value pushed.
    pub fn pushed_into_unemptied_fields(&self) -> Vec<(&Span, &str, NodeIndex)> {
        let Some(emptied) = self.fields_emptied_by_type.as_deref() else { return Vec::new() };
        self.stores()
            .filter(|&(edge, value, _, how, _)| {
                how == Store::Push
                    && self.through(edge).is_none()
                    && self.pushed_per_step(value)
                    && self.taint(value).has(Taint::GRAPH)
            })
            .filter_map(|(_, value, target, _, span)| {
                let b = self.binding_of(target)?;
                let name = self.bindings[b].name.as_str();
                (self.bindings[b].kind == BindingKind::SelfField && !emptied.iter().any(|f| f == name))
                    .then_some((span, name, value))
            })
            .collect()
    }

    /// Whether a value pushed here is pushed once per training step or more: in a loop whose
    /// iterations run backward (also through calls: `self.generator_step()`), or outside any
    /// loop of a function that runs backward itself.
    pub(super) fn pushed_per_step(&self, value: NodeIndex) -> bool {
        match self.graph[value].in_loop {
            None => {
                self.calls.iter().any(|c| matches!(c.kind, TrainingCallKind::Backward | TrainingCallKind::BackwardStep))
            }
            at => matches!(self.iteration_of(at), Some(Iteration::Loop(_))),
        }
    }

    /// What `value` is a copy of, when it is a whole model or gradients: a binding that holds
    /// one (by type or use, see `FnModel::copy_bindings`) or a call of the crate that returns
    /// one, reached through moves, clones, unwraps and the literals it is wrapped in
    /// (`Checkpoint { epoch, model: model.clone() }`), never through a computation
    /// (`grad.abs().sum()`, `model.num_params()`). Also the binding, when one is reached.
    pub fn copy_of(&self, value: NodeIndex) -> Option<(Copied, Option<BindingId>)> {
        let c = self.copies.as_deref()?;
        if c.copy_bindings.is_empty() && c.copy_results.is_empty() {
            return None;
        }
        self.moved_from(value, |n| {
            if let Some(&(_, what)) = c.copy_results.iter().find(|(r, _)| *r == n) {
                return Some((what, None));
            }
            match self.graph[n].kind {
                NodeKind::Version(b) => c.copy_bindings.iter().find(|(k, _)| *k == b).map(|&(_, what)| (what, Some(b))),
                NodeKind::Value(_) => None,
            }
        })
    }

    /// The first node `found` accepts among those `value` is made from by moves alone: back
    /// through the versions of bindings it was written into (`let`, assignments, merges), and
    /// values that move, clone, unwrap or wrap what they read (or give a model's parameters
    /// without autodiff, `model.valid()`), never through a computation.
    pub(super) fn moved_from<T>(&self, value: NodeIndex, mut found: impl FnMut(NodeIndex) -> Option<T>) -> Option<T> {
        let mut seen = vec![value];
        let mut todo = vec![(value, 0usize)];
        while let Some((n, depth)) = todo.pop() {
            if let Some(t) = found(n) {
                return Some(t);
            }
            let follow = match self.graph[n].kind {
                NodeKind::Version(_) => true,
                NodeKind::Value(Producer::Derived) => !self.op_values.contains(&n),
                // `model.valid()` (burn): the same parameters, without autodiff.
                NodeKind::Value(Producer::InertModel) => true,
                NodeKind::Value(_) => false,
            };
            if !follow || depth >= 8 {
                continue;
            }
            for e in self.graph.edges_directed(n, Direction::Incoming) {
                let through_move = match e.weight() {
                    Edge::DerivedFrom => true,
                    Edge::StoredInto { how, .. } => matches!(how, Store::Let | Store::Assign | Store::Merge),
                };
                if through_move && !seen.contains(&e.source()) {
                    seen.push(e.source());
                    todo.push((e.source(), depth + 1));
                }
            }
        }
        None
    }

    /// Copies of a model or of gradients pushed, here or by called functions of the crate, into
    /// collections nothing in the crate ever empties, prunes or replaces: the push of the copy
    /// itself, not of something computed from it. How often and for how long is the rule's to
    /// judge.
    pub fn kept_copies(&self) -> Vec<KeptCopy<'_>> {
        let mut out = Vec::new();
        let Some(c) = self.copies.as_deref() else { return out };
        for &e in &c.unemptied_pushes {
            let Some((value, target)) = self.graph.edge_endpoints(e) else { continue };
            let Edge::StoredInto { span, through, .. } = &self.graph[e] else { continue };
            if through.as_ref().is_some_and(|t| !t.whole) {
                continue;
            }
            let (Some((what, source)), Some(binding)) = (self.copy_of(value), self.binding_of(target)) else {
                continue;
            };
            out.push(KeptCopy {
                what,
                source,
                binding,
                span,
                in_loop: self.graph[target].in_loop,
                through: through.as_ref(),
            });
        }
        for l in &c.lent_copies {
            out.push(KeptCopy {
                what: l.what,
                source: None,
                binding: l.binding,
                span: &l.span,
                in_loop: l.in_loop,
                through: Some(&l.through),
            });
        }
        out
    }

    /// Whether this is a copy made for one instantiation of generic code (see `link::specialize`).
    pub fn is_instance(&self) -> bool {
        self.instance
    }

    pub fn debug_nodes(&self, text: &str) {
        let Ok(want) = std::env::var("MEMLINT_NODES") else { return };
        if self.name() != want {
            return;
        }
        eprintln!(
            "== nodes of {} seeds={:?} autodiff={} self_trainable={}",
            self.name(),
            self.trainable_seeds,
            self.autodiff,
            self.self_trainable
        );
        for n in self.graph.node_indices() {
            let nd = &self.graph[n];
            let t: String = text.get(nd.span.clone()).unwrap_or("?").chars().take(60).collect();
            eprintln!("  {:?} {:?} loop={:?} taint={:?} `{}`", n, nd.kind, nd.in_loop, nd.taint, t.replace('\n', " "));
        }
        for (i, b) in self.bindings.iter().enumerate() {
            eprintln!("  binding {i} {} {:?} ty={:?} guessed={}", b.name, b.kind, b.ty, b.ty_guessed);
        }
        for e in self.graph.edge_indices() {
            let (a, b) = self.graph.edge_endpoints(e).unwrap();
            eprintln!("  edge {:?}->{:?} {:?}", a, b, self.graph[e]);
        }
        for c in &self.call_sites {
            eprintln!(
                "  call {} result={:?} recv={:?} self={} args_returned={:b} loop={:?}",
                c.name, c.result, c.receiver, c.receiver_self, c.args_returned, c.in_loop
            );
        }
        for s in &self.state_calls {
            eprintln!(
                "  state_call {} fresh={} always={} always_in={:?}",
                s.callee, s.fresh_each_iteration, s.always, s.always_in
            );
        }
        eprintln!("  keeps={:?}", self.keeps_graph_state());
        eprintln!("  returns={:?} result_backpropagated={}", self.returns, self.result_backpropagated);
    }

    /// Where the function keeps a graph-carrying value built from what that place held before
    /// (a key/value cache, `self.k = Some(Tensor::cat(&[prev, &k], 2)?)`; a recurrent state,
    /// `self.h = self.cell.forward(x, &self.h)?`): in `self`, in parameters. Each call chains
    /// its graph onto the previous call's.
    /// Also the first write that keeps it on every path, with the text of a label there, and every field so
    /// kept (a state in two fields is cut only when both are).
    pub(super) fn keeps_graph_state(&self) -> (StateAt, Option<(Span, String, bool)>, Vec<String>) {
        let mut at = StateAt::default();
        // The first write that keeps the state in `self` on every path, and the field.
        let mut kept_at = None;
        let mut fields: Vec<String> = Vec::new();
        // burn: a state chains graphs only where no backward sweeps them (see
        // `FnModel::swept_kept_value`).
        let swept = self.framework_known && self.spec.graph_swept_by_backward;
        for (edge, value, target, how, span) in self.stores() {
            // Its own stores: one made inside a called function is that function's.
            // burn: a push into a field of `self` keeps what it pushes (a metrics log); whether
            // some method empties that field is asked at the calls (`mark_stateful_calls`).
            // A map entry blended from the one it replaces is computed from its old value.
            let keyed_fold = how == Store::Push && self.copies.as_ref().is_some_and(|c| c.keyed_folds.contains(span));
            let pushed = how == Store::Push && !keyed_fold;
            if self.through(edge).is_some() || !(matches!(how, Store::Assign | Store::Fold) || pushed || keyed_fold) {
                continue;
            }
            let Some(b) = self.binding_of(target) else { continue };
            if self.entry_resets.iter().any(|&(r, at)| r == b && at < span.start) {
                continue;
            }
            if !self.taint(value).has(Taint::GRAPH) {
                // A running statistic of what the caller hands in (`self.running = ..z..`).
                if self.bindings[b].kind == BindingKind::SelfField
                    && !self.params.is_empty()
                    && (pushed || self.computed_from_binding(value, b, target))
                {
                    let via = self.params_feeding(value);
                    if via != 0 {
                        // Behind a gate as a state with a graph of its own is (see `add_gated`).
                        let gate = self.param_gate_of(self.write_path(target));
                        at.gate = if !at.any() || at.gate == gate { gate } else { None };
                        at.self_via |= via;
                        let always = !self.write_path(target).iter().any(|&b| self.ungated_condition(b));
                        at.self_via_always |= always;
                        if always {
                            fields.push(self.bindings[b].name.clone());
                            if kept_at.is_none() {
                                kept_at = Some((span.clone(), kept_label(&self.bindings[b].name, pushed), pushed));
                            }
                        }
                    }
                }
                continue;
            }
            if let Some(root) = self.state_root(b)
                && (pushed || self.computed_from_binding(value, b, target))
                && !(swept && self.swept_kept_value(value))
            {
                at.add_gated(root, self.param_gate_of(self.write_path(target)));
                let unconditional = !self.write_path(target).iter().any(|&b| self.ungated_condition(b));
                let always = root.is_none() && unconditional;
                at.self_always |= always;
                if let (Some(i), true) = (root, unconditional)
                    && i < 64
                {
                    at.params_always |= 1 << i;
                }
                if unconditional {
                    let place = self.guard_places.iter().find(|(g, _)| *g == b).map(|(_, p)| p);
                    // A push into a field of what a parameter lends (`buf.log_probs.push(lp)`):
                    // that field, which a caller may empty on its own (`buf.clear()` emptying
                    // `log_probs` among others).
                    let lent_field = (pushed && self.bindings[b].kind == BindingKind::Param)
                        .then(|| self.field_pushes.iter().find(|(.., at)| at == span))
                        .flatten()
                        .map(|(_, _, field, _)| format!("{}.{field}", self.bindings[b].name));
                    let field = lent_field.unwrap_or_else(|| place.unwrap_or(&self.bindings[b].name).clone());
                    if kept_at.is_none() {
                        kept_at = Some((span.clone(), kept_label(&field, pushed), pushed));
                    }
                    fields.push(field);
                }
            }
        }
        fields.sort_unstable();
        fields.dedup();
        (at, kept_at, fields)
    }

    /// burn, whose backward sweeps the graph it runs through: whether a state kept of `value`
    /// holds only bookkeeping, because a backward here consumes its graph, or may (the function
    /// hands a graph-carrying value back to its caller, a recurrent cell's output the caller's
    /// loss is computed from).
    /// Not when the kept value is computed after that backward, on the graph it consumed
    /// (`self.q_ema = self.q_ema.clone() * 0.99 + q_all.mean() * 0.01` after `loss.backward()`):
    /// those operations are recorded anew and stay for as long as the state holds them.
    /// Measured (burn 0.16.1 flat; 0.20.1 about 0.2 MB a step for a DQN's loss summed after its
    /// backward; 0.21.0 about 5 KB; 0.22.1 grows): from 0.19 on, where a backward sweeps only
    /// the graphs its loss reaches.
    fn swept_kept_value(&self, value: NodeIndex) -> bool {
        (self.returns_graph() || self.graph_meets_backward(value))
            && !(self.spec.untrained_graphs_kept && self.computed_after_backward(value))
    }

    /// Whether `value` is computed by an operation made after a backward on a value made before
    /// it (see [`FnModel::uses_after_backward`]), with gradients on.
    pub fn computed_after_backward(&self, value: NodeIndex) -> bool {
        let ops: Vec<&Span> =
            self.uses_after_backward.iter().filter(|u| !u.no_grad && u.via.is_none()).map(|u| &u.span).collect();
        !ops.is_empty()
            && self.graph_upstream(value).any(|n| {
                let at = &self.graph[n].span;
                // The value of an expression that holds the operation, or a part of one.
                !at.is_empty()
                    && ops.iter().any(|op| {
                        (op.start <= at.start && at.end <= op.end) || (at.start <= op.start && op.end <= at.end)
                    })
            })
    }

    /// Whether the function hands a graph-carrying value back to its caller.
    pub(super) fn returns_graph(&self) -> bool {
        !self.returns_plain && self.returns.iter().any(|&n| self.graph[n].taint.has(Taint::GRAPH))
    }

    /// The parameters (a bit each) `value` is computed from along values that keep a graph (not
    /// through a cut).
    pub(super) fn params_feeding(&self, value: NodeIndex) -> u64 {
        self.sources_feeding(value).0
    }

    /// [`FnModel::params_feeding`], and whether `value` is also computed from fields of `self`
    /// (`(next, self.e.clone().mul_scalar(SIGMA))` in `fn step(self, ..)`).
    pub(super) fn sources_feeding(&self, value: NodeIndex) -> (u64, bool) {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![value];
        let mut mask = 0u64;
        let mut of_self = false;
        while let Some(n) = stack.pop() {
            if seen.len() > 256 || !seen.insert(n) {
                continue;
            }
            of_self |= self.binding_of(n).is_some_and(|b| self.bindings[b].kind == BindingKind::SelfField);
            if let Some(k) = self.params.iter().position(|p| *p == Some(n))
                && k < 64
            {
                // A parameter whose type names the inner backend (`keys: Tensor<B::InnerBackend,
                // 2>`) carries no graph, whatever a caller hands it.
                if !self.inert_seeds.contains(&n) {
                    mask |= 1 << k;
                }
                continue;
            }
            if matches!(self.graph[n].kind, NodeKind::Value(Producer::Plain | Producer::InertModel)) {
                continue;
            }
            stack.extend(self.graph.edges_directed(n, Direction::Incoming).map(|e| e.source()));
        }
        (mask, of_self)
    }

    /// The fields of `self` this method leaves empty on some path: emptied (`self.sum.take()`,
    /// `self.buf.clear()`) and given nothing but a plain value after (`let h = self.state.take();
    /// .. self.state = Some(h)` and `self.sum = Some(match self.sum.take() { .. })` put it back).
    /// Names as written (`self.sum`).
    pub(super) fn fields_left_empty(&self) -> Vec<String> {
        if !self.has_self || self.cleared.is_empty() {
            return Vec::new();
        }
        let mut empties: Vec<String> = self
            .cleared
            .iter()
            .filter_map(|c| Some((self.binding_of(c.version)?, c.at)))
            .filter(|&(b, at)| {
                self.bindings[b].kind == BindingKind::SelfField
                    && !self.stores().any(|(_, value, target, how, span)| {
                        how != Store::Merge
                            && span.end > at
                            && self.binding_of(target) == Some(b)
                            && (self.graph[value].taint.has(Taint::GRAPH)
                                || !matches!(self.graph[value].kind, NodeKind::Value(Producer::Plain)))
                    })
            })
            .map(|(b, _)| self.bindings[b].name.clone())
            .collect();
        empties.sort_unstable();
        empties.dedup();
        empties
    }

    /// [`FnModel::fields_left_empty`], and the fields it gives a plain value on some path
    /// (`self.history = Vec::new()`): what it starts afresh, as far as a buffer goes.
    pub(super) fn fields_emptied(&self) -> Vec<String> {
        let mut fields = self.fields_left_empty();
        fields.extend(
            self.shrunk
                .iter()
                .filter(|&&b| self.bindings[b].kind == BindingKind::SelfField)
                .map(|&b| self.bindings[b].name.clone()),
        );
        for (_, value, target, how, _) in self.stores() {
            let Some(b) = self.binding_of(target) else { continue };
            if self.bindings[b].kind == BindingKind::SelfField
                && matches!(how, Store::Assign)
                && !self.taint(value).has(Taint::GRAPH)
                && !self.continues(value, b, target)
            {
                fields.push(self.bindings[b].name.clone());
            }
        }
        fields
    }

    /// The fields of `self` this method starts afresh on every call: given a value without a
    /// graph (`self.mem = self.core.zero_state(1)?`, `self.h = self.h.iter().map(|t|
    /// t.detach()).collect()`) on every path, and never a graph-carrying one. A call of it cuts
    /// what the receiver kept there (see `FnModel::field_cuts`).
    pub(super) fn fields_reset(&self) -> Vec<String> {
        self.self_fields_without_graph(true)
    }

    /// The fields of `self` this method gives a value that carries no graph on some path, and
    /// never one that does (`self.state = GRUState { h: self.state.h.detach() }`): a caller's own
    /// state in such a field is cut where it calls the method (see [`FnModel::self_cuts`]).
    /// Not a field only emptied (`self.state.take()`): what it held is handed on (`let s =
    /// self.take_state()?; .. self.state = Some(last)`), not cut.
    pub(super) fn fields_cut(&self) -> Vec<String> {
        self.self_fields_without_graph(false)
    }

    /// The fields of `self` whole-written (assigned or folded) with a value that carries no
    /// graph and never with one that does. `afresh`: on every path, and not continuing the old
    /// value (see [`FnModel::fields_reset`]); otherwise on some path, a cut of the old value
    /// included (see [`FnModel::fields_cut`]).
    fn self_fields_without_graph(&self, afresh: bool) -> Vec<String> {
        let mut given: Vec<BindingId> = Vec::new();
        let mut kept: Vec<BindingId> = Vec::new();
        for (edge, value, target, how, _) in self.stores() {
            let Some(b) = self.binding_of(target) else { continue };
            if self.bindings[b].kind != BindingKind::SelfField {
                continue;
            }
            // A method of `self` this one calls folds what it is handed into the field
            // (`self.next_token(lm, ..)` running `self.usage = (&self.usage * 0.98 + p)?`): the
            // old value goes on, whatever the argument carries here; neither a cut nor a reset.
            let folded_by_a_call = how == Store::Fold && self.through(edge).is_some();
            // Nor a value computed from the old one by operations (`self.h =
            // self.h.broadcast_mul(&mask)?`, zeroing the rows of finished episodes): it links to
            // what the field held, whatever that carries.
            if self.taint(value).has(Taint::GRAPH)
                || folded_by_a_call
                || (afresh && self.continues(value, b, target))
                || self.blends(value, b, target)
            {
                kept.push(b);
            } else if matches!(how, Store::Assign | Store::Fold)
                && self.whole_write(target)
                && !(afresh && self.write_path(target).iter().any(|br| self.conditional_branches.contains(br)))
            {
                given.push(b);
            }
        }
        given.retain(|b| !kept.contains(b));
        given.sort_unstable();
        given.dedup();
        given.iter().filter_map(|&b| self.bindings[b].name.strip_prefix("self.").map(str::to_string)).collect()
    }

    /// What this method, called by a reset's name (`clear_buffers`, `reset_state`), starts
    /// afresh in its receiver, before following the calls it makes: the fields it gives a value
    /// without a graph that does not continue the old one, or empties (`self.window.clear()`),
    /// on any path, and the resets it makes by a method's name, as `(index into named_resets,
    /// field)` with `None` for one of `self` itself or of another part of it (`c.reset()` with
    /// `c = &mut self.cell`). `None` when it replaces all of `self` (`*self = Self::new(..)`).
    pub(super) fn fields_started_afresh(&self) -> Option<StartedAfresh> {
        let field = |b: BindingId| {
            let b = &self.bindings[b];
            if b.kind == BindingKind::SelfField { b.name.strip_prefix("self.").map(str::to_string) } else { None }
        };
        let mut fields = Vec::new();
        let (mut writes, mut continued) = (0usize, 0usize);
        for (_, value, target, how, _) in self.stores() {
            let Some(b) = self.binding_of(target) else { continue };
            if self.bindings[b].name == "self" {
                return None;
            }
            if !matches!(how, Store::Assign | Store::Fold) || self.bindings[b].kind != BindingKind::SelfField {
                continue;
            }
            writes += 1;
            if self.continues(value, b, target) || self.blends(value, b, target) {
                continued += 1;
            } else if !self.taint(value).has(Taint::GRAPH)
                && let Some(f) = field(b)
            {
                fields.push(f);
            }
        }
        fields.extend(self.cleared.iter().filter_map(|c| field(self.binding_of(c.version)?)));
        let mut named = Vec::new();
        for (k, &(i, _)) in self.named_resets.iter().enumerate() {
            let b = self.resets[i].0;
            if self.bindings[b].name == "self" {
                named.push((k, None));
            } else if let Some(f) = field(b) {
                named.push((k, Some(f)));
            } else if self.state_root(b).is_some() {
                named.push((k, None));
            }
        }
        let only_continues = writes > 0 && continued == writes;
        Some(StartedAfresh { fields, by_name: named, only_continues })
    }

    /// Whether `value`, stored into `b`, is computed from what `b` held and another binding's
    /// value (`self.h = self.h.broadcast_mul(&mask)?`, a mask of finished episodes made in the
    /// method): an operation on the old state, which its graph links to, not a fresh one.
    fn blends(&self, value: NodeIndex, b: BindingId, target: NodeIndex) -> bool {
        // Within the expression and through no cut: it reads `b` and another binding (a walk
        // without hashing; most writes, `self.x = Linear::new(..)`, read no `b` at all).
        let mut stack: smallvec::SmallVec<[NodeIndex; 16]> = smallvec::smallvec![value];
        let mut seen: smallvec::SmallVec<[NodeIndex; 32]> = smallvec::SmallVec::new();
        let (mut own, mut other) = (false, false);
        while let Some(n) = stack.pop() {
            if seen.len() > 256 || seen.contains(&n) {
                continue;
            }
            seen.push(n);
            match self.graph[n].kind {
                NodeKind::Version(v) => {
                    if v == b {
                        own = true;
                    } else {
                        other = true;
                    }
                }
                NodeKind::Value(Producer::Plain) => {}
                NodeKind::Value(_) => stack.extend(self.reads(n)),
            }
        }
        own && other && self.computed_from_binding(value, b, target)
    }

    /// Whether `value`, stored into `b`, continues what `b` held with what the caller hands in
    /// (a running statistic, `self.mean = (&self.mean * m + x)?`), rather than starting it
    /// afresh (`self.h = self.h.zeros_like()?`, `self.h = self.h.detach()`).
    fn continues(&self, value: NodeIndex, b: BindingId, target: NodeIndex) -> bool {
        self.computed_from_binding(value, b, target) && self.params_feeding(value) != 0
    }

    /// The `bool` parameter whose branch a path lies on, with the value that opens it (see
    /// [`StateAt::gate`]).
    /// Whether branch `b` is taken on some calls only, for a reason a caller's argument does
    /// not decide: a branch a `bool` parameter opens (`if train { self.running = .. }`) or the
    /// arm of one variant is judged at each call instead (see [`StateAt::gate`]).
    pub(super) fn ungated_condition(&self, b: usize) -> bool {
        self.conditional_branches.contains(&b)
            && !self.param_gates.iter().any(|(pb, ..)| *pb == b)
            && self.variant_gate(b).is_none()
    }

    pub(super) fn param_gate_of(&self, path: &[usize]) -> Option<(u8, Opening)> {
        if let Some(&(_, param, opens_on, _)) = self.param_gates.iter().find(|(b, ..)| path.contains(b)) {
            return u8::try_from(param).ok().map(|p| (p, Opening::Bool(opens_on)));
        }
        // The arm of one variant (`Mode::Train => ..` of `match mode`).
        let (param, name) = path.iter().rev().find_map(|b| self.variant_gate(*b))?;
        u8::try_from(param).ok().map(|p| (p, Opening::variant(name)))
    }

    /// A branch that only the calls handing a parameter one enum variant take: (parameter, the
    /// variant's name).
    pub(super) fn variant_gate(&self, branch: usize) -> Option<(usize, &str)> {
        self.value_gates.iter().find(|(b, ..)| *b == branch).and_then(|(_, p, opens)| match opens.values.as_slice() {
            [ConstArg::Variant(name)] if !opens.negated => Some((*p, name.as_str())),
            _ => None,
        })
    }

    /// The state binding `b` is part of: `Some(None)` for `self` (a field, an element or guard
    /// of one), `Some(Some(i))` for parameter `i`, `None` for a local of its own.
    pub(super) fn state_root(&self, b: BindingId) -> Option<Option<usize>> {
        match self.bindings[b].kind {
            BindingKind::SelfField => Some(None),
            BindingKind::Param => {
                self.params.iter().position(|p| p.and_then(|p| self.binding_of(p)) == Some(b)).map(Some)
            }
            _ => self.guard_locals.iter().find(|(g, _)| *g == b).map(|&(_, root)| root),
        }
    }

    /// Whether `value` is computed from a version of binding `b` other than `target`, through
    /// values and every store into other bindings (`k = cat(prev, k)` in one branch, merged).
    fn computed_from_binding(&self, value: NodeIndex, b: BindingId, target: NodeIndex) -> bool {
        // What a call of the crate returns is taken as computed from its receiver and arguments
        // until the crate-level pass knows more: only the arguments its callees return from
        // (`CallSite::args_returned`) are evidence of a state read back.
        let results: std::collections::HashMap<NodeIndex, &CallSite> =
            self.call_sites.iter().map(|c| (c.result, c)).collect();
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![value];
        while let Some(n) = stack.pop() {
            if seen.len() > 512 || !seen.insert(n) {
                continue;
            }
            if let Some(site) = results.get(&n) {
                // `let s = self.take_state()?` handing back what `self.state` held.
                if site.receiver_self
                    && self.bindings[b].kind == BindingKind::SelfField
                    && self.returns_field(site.result, &self.bindings[b].name)
                {
                    return true;
                }
                for (k, arg) in site.args.iter().enumerate().take(64) {
                    if site.args_returned & (1 << k) != 0 {
                        stack.extend(arg.reads.iter().copied());
                    }
                }
                continue;
            }
            match self.graph[n].kind {
                // What the place held when the call began (a field's or parameter's first
                // version; any earlier version of a lock guard's local): the new value reads the
                // state back across calls.
                NodeKind::Version(v)
                    if v == b
                        && n != target
                        && (self.bindings[b].kind == BindingKind::Local
                            || self.self_fields.contains(&n)
                            || self.params.contains(&Some(n))) =>
                {
                    return true;
                }
                // A host value or a cut (`self.h = self.h.detach()` first): nothing carried over.
                NodeKind::Value(Producer::Plain) => {}
                _ => stack.extend(self.graph.edges_directed(n, Direction::Incoming).map(|e| e.source())),
            }
        }
        false
    }

    /// For each parameter, whether a value the function returns is computed from it (through
    /// every edge: `Net::new(vb)` returning `Self { fc: linear(.., vb.pp("fc"))? }`).
    pub(super) fn params_returned(&self) -> Vec<bool> {
        let seen = self.upstream_of_returns();
        self.params.iter().map(|p| p.is_some_and(|p| seen[p.index()])).collect()
    }

    /// Every node a returned value is computed from, through every edge: `mask[n]`.
    fn upstream_of_returns(&self) -> Vec<bool> {
        let mut seen = vec![false; self.graph.node_count()];
        let mut stack: Vec<NodeIndex> = self.returns.clone();
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n.index()], true) {
                continue;
            }
            stack.extend(self.graph.edges_directed(n, Direction::Incoming).map(|e| e.source()));
        }
        seen
    }

    /// Whether `value`, written into field `b` of `self`, is computed from what a method of
    /// `self` hands back of that field's old value (`let s = self.take_state()?; let (y, last) =
    /// self.model.forward_chunk(&x, s)?; .. self.state = Some(last);`): a state carried from call
    /// to call.
    pub fn reads_field_back_through_own_method(&self, value: NodeIndex, b: BindingId, target: NodeIndex) -> bool {
        self.bindings[b].kind == BindingKind::SelfField
            && self.self_fields_returned.iter().any(|(_, fields)| fields.contains(&self.bindings[b].name))
            && self.computed_from_binding(value, b, target)
    }

    /// Whether the call of `self` whose result is `result` returns a value computed from
    /// `field` (see [`FnModel::self_fields_returned`]).
    fn returns_field(&self, result: NodeIndex, field: &str) -> bool {
        self.self_fields_returned.iter().any(|(r, fields)| *r == result && fields.iter().any(|f| f == field))
    }

    /// The fields of `self` whose values at the start of the call a returned value is computed
    /// from (see [`FnModel::self_fields_returned`]).
    /// None for a method whose declared result is host data (`fn close_window(&mut self) ->
    /// Result<f32>` returning the window's loss as a number): it hands no state back.
    pub(super) fn fields_returned_from_self(&self) -> Vec<String> {
        if !self.has_self || self.self_fields.is_empty() || self.returns_plain {
            return Vec::new();
        }
        let seen = self.upstream_of_returns();
        let mut fields: Vec<String> = self
            .self_fields
            .iter()
            .filter(|n| seen[n.index()])
            .filter_map(|&n| self.binding_of(n))
            .map(|b| self.bindings[b].name.clone())
            .collect();
        fields.sort_unstable();
        fields.dedup();
        fields
    }

    /// Whether a value the function returns is the output of a forward pass it runs (through
    /// graph-carrying values).
    pub(super) fn returns_forward_output(&self) -> bool {
        self.returns.iter().any(|&r| {
            self.graph_upstream(r).any(|n| matches!(self.graph[n].kind, NodeKind::Value(Producer::Forward { .. })))
        })
    }

    /// Whether a value the function returns is computed from one of its parameters along values
    /// that keep a graph (not through a cut: `detach`, scalar extraction, a no-grad region).
    pub(super) fn graph_flows_from_params(&self) -> bool {
        let seen = self.upstream_of_results();
        self.params.iter().any(|p| p.is_some_and(|p| seen[p.index()]))
    }

    /// Whether what it returns is read from fields of `self` (a getter of a module's weights:
    /// `fn weights(&self) -> Vec<&Tensor> { self.layers.iter().map(|l| l.weight()).collect() }`).
    pub(super) fn returns_from_self_fields(&self) -> bool {
        let seen = self.upstream_of_results();
        self.graph.node_indices().any(|n| {
            seen[n.index()]
                && matches!(self.graph[n].kind, NodeKind::Version(_))
                && self.binding_of(n).is_some_and(|b| self.bindings[b].kind == BindingKind::SelfField)
        })
    }

    /// The nodes the returned values are computed from, up to values that carry nothing.
    fn upstream_of_results(&self) -> Vec<bool> {
        let mut seen = vec![false; self.graph.node_count()];
        let mut stack: Vec<NodeIndex> = self.returns.clone();
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n.index()], true) {
                continue;
            }
            if matches!(self.graph[n].kind, NodeKind::Value(Producer::Plain | Producer::InertModel)) {
                continue;
            }
            stack.extend(self.graph.edges_directed(n, Direction::Incoming).map(|e| e.source()));
        }
        seen
    }

    /// Calls of the crate's functions that keep a graph-carrying value in their receiver on
    /// every path through them (a recurrent state, not a cache behind a flag): (call, loop,
    /// receiver value, callee).
    pub fn stateful_calls_always(&self) -> impl Iterator<Item = &StateCall> + '_ {
        self.state_calls.iter().filter(|c| !c.fresh_each_iteration && (c.always || !c.always_in.is_empty()))
    }

    /// Calls of the crate's functions that keep a graph-carrying value in their state (a cache).
    pub fn stateful_calls(&self) -> impl Iterator<Item = &StateCall> + '_ {
        self.state_calls.iter().filter(|c| !c.fresh_each_iteration)
    }

    /// Whether a call through a type parameter to a method the crate does not implement runs
    /// in the iteration of loop `l` (see `opaque_calls`).
    pub fn opaque_call_in(&self, l: LoopId) -> bool {
        self.opaque_calls.iter().any(|&c| self.loop_within(c, l) || c.is_some_and(|c| self.loop_within(Some(l), c)))
    }

    /// For a function some call of the crate hands a model built from trainable variables:
    /// that call (file, line, calling function).
    pub fn trainable_from(&self) -> Option<&(std::path::PathBuf, usize, String)> {
        self.trainable_from.as_ref()
    }

    /// Whether the version `target` replaces its binding's whole value (`state = ..`), not a part
    /// of it (`levels[i] = ..`, `self.cache.k = ..`), which keeps the rest of the old value.
    pub fn whole_write(&self, target: NodeIndex) -> bool {
        !self
            .graph
            .edges_directed(target, Direction::Incoming)
            .any(|e| matches!(e.weight(), Edge::StoredInto { how: Store::Merge, .. }))
    }

    /// Whether a loop inside loop `l` (not `l` itself) runs backward: `l` is an outer loop
    /// (epochs) around the training iterations.
    pub fn has_inner_training_loop(&self, l: LoopId) -> bool {
        self.loops.iter().enumerate().any(|(m, s)| m != l && s.runs_backward && self.loop_within(Some(m), l))
    }

    /// Whether some loop of the function runs backward: each call trains several steps.
    pub fn has_training_loop(&self) -> bool {
        self.loops.iter().any(|s| s.runs_backward)
    }

    /// Whether loop `l` itself (nested loops and closures included) runs backward.
    /// Whether loop `l` pushes graph-carrying values into a field of `self` that some method of
    /// the type empties (`self.storage.log_probs.push(logp)` in a rollout, drained by `update()`
    /// into its backward): an on-policy buffer, held until that update.
    pub fn pushes_into_emptied_field(&self, l: LoopId) -> bool {
        self.loops[l].pushes_into_emptied
    }

    /// Whether loop `l` pushes a graph-carrying value into a field of `self` that `field` accepts.
    pub(super) fn loop_pushes_into_self(&self, l: LoopId, field: impl Fn(&str) -> bool) -> bool {
        self.stores().any(|(_, value, target, how, _)| {
            how == Store::Push
                && self.graph[value].taint.has(Taint::GRAPH)
                && self.loop_within(self.loop_of(value), l)
                && self
                    .binding_of(target)
                    .is_some_and(|b| self.bindings[b].kind == BindingKind::SelfField && field(&self.bindings[b].name))
        })
    }

    /// Whether loop `l` (nested loops included) runs backward, or may: a call in it reaches a
    /// backward on some of its candidates.
    pub fn loop_may_run_backward(&self, l: LoopId) -> bool {
        self.loops[l].runs_backward || self.loops[l].may_run_backward
    }

    pub fn loop_runs_backward(&self, l: LoopId) -> bool {
        self.loops.get(l).is_some_and(|s| s.runs_backward)
    }

    /// For a generic function made autodiff by a caller: that call (file, line, caller's name).
    pub fn autodiff_from(&self) -> Option<&(std::path::PathBuf, usize, String)> {
        self.autodiff_from.first()
    }

    /// The other calls that instantiate this function with an autodiff backend (a few).
    pub fn autodiff_also(&self) -> &[(std::path::PathBuf, usize, String)] {
        self.autodiff_from.get(1..).unwrap_or_default()
    }

    /// For a generic function made autodiff by callers and nothing else: every such caller, as
    /// (file, function) indices of the linked crate; empty when not so (see the field).
    pub fn autodiff_callers(&self) -> &[(usize, usize)] {
        &self.autodiff_callers
    }

    /// When every call in `calls` sits on a branch a `bool` parameter opens (`if is_train {
    /// loss.backward() }`) and a call of the crate passes the value that closes it: the
    /// parameter's name, the value that opens the branch, and that call (file, line, caller).
    pub fn closed_by_a_caller<'a>(
        &'a self,
        paths: impl IntoIterator<Item = &'a [usize]>,
    ) -> Option<(&'a str, bool, (&'a std::path::Path, usize, &'a str))> {
        let mut gate: Option<&(usize, usize, bool, String)> = None;
        for path in paths {
            let g = self.param_gates.iter().find(|(b, ..)| path.contains(b))?;
            match gate {
                Some(seen) if (seen.1, seen.2) != (g.1, g.2) => return None,
                _ => gate = Some(g),
            }
        }
        let (_, param, opens_on, name) = gate?;
        let (_, _, file, line, caller) =
            self.bool_args.iter().find(|(p, value, ..)| p == param && value != opens_on)?;
        Some((name.as_str(), *opens_on, (file.as_path(), *line, caller.as_str())))
    }

    /// Whether the branch path lies on a branch a `bool` parameter opens.
    /// The setting (where it is written, and the value that takes the path) of an `if` that sends the
    /// iterations at `path` one way and every path of `others` the other way: on runs where the
    /// setting has that value, the code at `path` runs and none of `others` does.
    pub fn split_by_a_setting<'a>(
        &self,
        path: &[usize],
        mut others: impl Iterator<Item = &'a [usize]>,
    ) -> Option<(&Span, bool)> {
        let (then, els, name, then_on_true) =
            self.flag_ifs.iter().find(|(t, e, ..)| path.contains(t) || path.contains(e))?;
        let in_then = path.contains(then);
        let other_side = if in_then { *els } else { *then };
        others.all(|o| o.contains(&other_side)).then_some((name, in_then == *then_on_true))
    }

    /// The parameter whose value decides whether code at `path` runs, and the values that run it
    /// (the innermost such branch on the path).
    pub(super) fn value_gate_of(&self, path: &[usize]) -> Option<ValueGate> {
        path.iter()
            .rev()
            .find_map(|b| self.value_gates.iter().find(|(vb, ..)| vb == b).map(|(_, p, o)| (*p, vec![o.clone()])))
    }

    pub fn on_param_branch(&self, path: &[usize]) -> bool {
        self.param_gates.iter().any(|(b, ..)| path.contains(b))
    }

    /// Whether the crate makes a module untracked anywhere (`target.valid()`,
    /// `module.no_grad()`): code generic over the backend may then be handed untracked modules.
    pub fn crate_untracks_models(&self) -> bool {
        self.crate_untracks_models
    }

    /// Value nodes the function returns.
    pub fn returns(&self) -> &[NodeIndex] {
        &self.returns
    }

    /// Backward, step and clear calls, including those made inside called crate functions.
    pub fn training_calls(&self) -> &[TrainingCall] {
        &self.calls
    }

    pub fn binding(&self, b: BindingId) -> &Binding {
        &self.bindings[b]
    }

    /// The header of loop `l` (`for x in xs`), for labels.
    pub fn loop_header(&self, l: LoopId) -> &Span {
        &self.loops[l].header
    }

    /// The crate function that calls closure `c` in a loop without backward, when `c` itself
    /// runs none.
    pub fn closure_looped_by(&self, c: usize) -> Option<&str> {
        self.closures.get(c).filter(|s| !s.runs_backward).and_then(|s| s.looped_by.as_deref())
    }

    /// Loop `l` is a `for` over something reached from `self` (`for block in &self.blocks`).
    /// Whether binding `b` is bound by the pattern of `for` loop `l`: one element per iteration.
    pub fn bound_by_loop_pattern(&self, l: LoopId, b: BindingId) -> bool {
        self.loops.get(l).is_some_and(|s| s.pattern.contains(&b))
    }

    /// The loop directly around loop `l`.
    pub fn loop_parent(&self, l: LoopId) -> Option<LoopId> {
        self.loops.get(l).and_then(|s| s.parent)
    }

    pub fn loop_over_self(&self, l: LoopId) -> bool {
        self.loops[l].over_self
    }

    /// A `for` loop over a store's variables (see the field).
    /// For a loop whose pattern binds `name` (`opt` of `for opt in &mut self.optimizers`): its
    /// header (`for pat in expr` for a `for` loop) and the branch its body is.
    pub fn loop_element(&self, l: LoopId, name: &str) -> Option<(&Span, usize)> {
        let s = self.loops.get(l)?;
        let bound = s.pattern.clone().any(|b| self.bindings[b].name == name);
        bound.then_some((&s.header, s.body_branch as usize))
    }

    pub fn loop_over_variables(&self, l: LoopId) -> bool {
        self.loops.get(l).is_some_and(|s| s.over_variables)
    }

    /// What node `n` carries (see [`Taint`]).
    pub fn taint(&self, n: NodeIndex) -> Taint {
        self.graph[n].taint
    }

    /// The span of node `n` (empty for values no label shows).
    pub fn span_of(&self, n: NodeIndex) -> &Span {
        &self.graph[n].span
    }

    /// The innermost loop node `n` was made in.
    pub fn loop_of(&self, n: NodeIndex) -> Option<LoopId> {
        self.graph[n].in_loop
    }

    /// Parameters whose value is replaced, in program order.
    /// Whether every application of this `ModuleMapper` method's type is made untracked at once
    /// (`target.map(&mut polyak).no_grad()`).
    pub fn rewrites_untracked(&self) -> bool {
        self.rewrites_untracked
    }

    pub fn param_rewrites(&self) -> &[ParamRewrite] {
        &self.param_rewrites
    }

    /// Operations on values made before a backward of the same iteration, in program order.
    pub fn uses_after_backward(&self) -> &[UseAfterBackward] {
        &self.uses_after_backward
    }

    /// Whether loop `l` runs up to a dimension of a tensor (`for i in 0..t` with `let (b, t) =
    /// tgt.dims2()?`): it walks the length of an input.
    pub fn loop_over_dim(&self, l: LoopId) -> bool {
        self.loops[l].over_dim
    }

    /// Whether loop `inner` is `outer` or nested inside it.
    pub fn loop_within(&self, inner: Option<LoopId>, outer: LoopId) -> bool {
        let mut cur = inner;
        while let Some(l) = cur {
            if l == outer {
                return true;
            }
            cur = self.loops[l].parent;
        }
        false
    }

    /// The training iteration a node created in loop `at` belongs to, if any.
    pub fn iteration_of(&self, at: Option<LoopId>) -> Option<Iteration> {
        let mut cur = at;
        while let Some(l) = cur {
            if self.loops[l].runs_backward {
                return Some(Iteration::Loop(l));
            }
            cur = self.loops[l].parent;
        }
        let body_runs_backward = self.calls.iter().any(|c| {
            matches!(c.kind, TrainingCallKind::Backward | TrainingCallKind::BackwardStep)
                && c.in_loop.is_none_or(|l| !self.loops[l].runs_backward)
        });
        body_runs_backward.then_some(Iteration::Call)
    }

    /// Whether a binding lives past the end of `iteration`.
    pub fn outlives(&self, binding: BindingId, iteration: Iteration) -> bool {
        let b = &self.bindings[binding];
        match iteration {
            Iteration::Loop(l) => match b.kind {
                BindingKind::Local => !self.loop_within(b.decl_loop, l),
                BindingKind::Param | BindingKind::SelfField | BindingKind::Global => true,
            },
            Iteration::Call => b.kind != BindingKind::Local,
        }
    }

    /// Whether `name` (as written: `opt`, `self.opt`) is, where last declared, a local of this
    /// function: made inside each call, so nothing in it survives to the next call.
    pub fn is_local(&self, name: &str) -> bool {
        self.bindings.iter().rev().find(|b| b.name == name).is_some_and(|b| b.kind == BindingKind::Local)
    }

    /// The binding a node is a version of.
    pub fn binding_of(&self, node: NodeIndex) -> Option<BindingId> {
        match self.graph[node].kind {
            NodeKind::Version(b) => Some(b),
            NodeKind::Value(_) => None,
        }
    }

    /// Computes [`Node::taint`] for every node: a monotone fixpoint over the graph.
    pub fn propagate(&mut self) {
        // From scratch: the crate-level pass may have turned call results plain.
        for n in self.graph.node_indices() {
            self.graph[n].taint = Taint::NONE;
        }
        for &loss in self.losses.iter().chain(&self.handed_backward).chain(&self.seeds) {
            // A crate method's forward pass (`backbone.embed(&x)?`) carries a graph unless its
            // model is inert: decided below, with the receiver's taint.
            if self.seeds.contains(&loss)
                && !self.losses.contains(&loss)
                && matches!(self.graph[loss].kind, NodeKind::Value(Producer::Forward { receiver: Some(_) }))
            {
                continue;
            }
            self.graph[loss].taint = self.graph[loss].taint.union(Taint::GRAPH);
        }
        for &p in &self.param_values {
            self.graph[p].taint = self.graph[p].taint.union(Taint::PARAM);
        }
        for &n in &self.inert_seeds {
            self.graph[n].taint = self.graph[n].taint.union(Taint::INERT_MODEL);
        }
        for &n in &self.trainable_seeds {
            self.graph[n].taint = self.graph[n].taint.union(Taint::TRAINABLE);
        }
        let mut is_weight_read = vec![false; if self.weight_reads.is_empty() { 0 } else { self.graph.node_count() }];
        for &n in &self.weight_reads {
            is_weight_read[n.index()] = true;
        }
        let mut is_op = vec![false; self.graph.node_count()];
        for &n in &self.op_values {
            is_op[n.index()] = true;
        }
        let mut is_cut = vec![false; if self.graph_cuts.is_empty() { 0 } else { self.graph.node_count() }];
        for &n in &self.graph_cuts {
            is_cut[n.index()] = true;
        }
        // A model lent mutably (`install_lora(&mut unet, ..)`) may have trainable variables put
        // into it: what was inert about it before is no longer known. Nor is a model moved to an
        // autodiff device (`model.fork(&ad)`, burn 0.22).
        let lent_mut: Vec<BindingId> = self
            .call_sites
            .iter()
            .flat_map(|s| s.args.iter().filter_map(|a| a.mut_ref))
            .chain(self.autodiff_bound.iter().copied())
            .collect();
        let order: Vec<NodeIndex> = self.graph.node_indices().collect();
        loop {
            let mut changed = false;
            for &n in &order {
                let incoming = self
                    .graph
                    .edges_directed(n, Direction::Incoming)
                    .fold(Taint::NONE, |acc, e| acc.union(self.graph[e.source()].taint));
                let node = &self.graph[n];
                let new = match node.kind {
                    NodeKind::Version(b) if !lent_mut.is_empty() && lent_mut.contains(&b) => {
                        let t = node.taint.union(incoming);
                        Taint(t.0 & !Taint::INERT_MODEL.0)
                    }
                    NodeKind::Version(_) => node.taint.union(incoming),
                    NodeKind::Value(Producer::Derived)
                        if is_op[n.index()] && incoming.has(Taint::PARAM) && !self.grad_off =>
                    {
                        node.taint.union(Taint(incoming.0 & !Taint::PARAM.0)).union(Taint::GRAPH)
                    }
                    // A weight of a trainable module is one of its variables.
                    NodeKind::Value(Producer::Derived)
                        if incoming.has(Taint::TRAINABLE)
                            && is_weight_read.get(n.index()).copied().unwrap_or(false) =>
                    {
                        node.taint.union(Taint(incoming.0 & !Taint::TRAINABLE.0)).union(Taint::PARAM)
                    }
                    NodeKind::Value(Producer::Derived) if is_cut.get(n.index()).copied().unwrap_or(false) => {
                        node.taint.union(Taint(incoming.0 & !Taint::GRAPH.0))
                    }
                    NodeKind::Value(Producer::Derived) => node.taint.union(incoming),
                    NodeKind::Value(Producer::Plain) => node.taint,
                    NodeKind::Value(Producer::InertModel) => node.taint.union(Taint::INERT_MODEL),
                    NodeKind::Value(Producer::Forward { .. }) if self.grad_off => node.taint,
                    // dfdx: a module's forward records a graph only on a traced input.
                    NodeKind::Value(Producer::Forward { receiver: Some(r) }) if self.spec.graph_from_input_tape => {
                        let taped = self
                            .graph
                            .edges_directed(n, Direction::Incoming)
                            .any(|e| e.source() != r && self.graph[e.source()].taint.has(Taint::GRAPH));
                        if taped { node.taint.union(Taint::GRAPH) } else { node.taint }
                    }
                    NodeKind::Value(Producer::Forward { receiver }) => {
                        let inert = receiver.is_some_and(|r| self.graph[r].taint.has(Taint::INERT_MODEL));
                        // A model that records nothing of its own still carries the graph of
                        // what it is handed (candle: a frozen UNet conditioned on a trainable
                        // embedding).
                        let handed_graph = inert
                            && self.graph.edges_directed(n, Direction::Incoming).any(|e| {
                                Some(e.source()) != receiver && {
                                    let t = self.graph[e.source()].taint;
                                    t.has(Taint::GRAPH) || t.has(Taint::TRAINABLE)
                                }
                            });
                        if inert && !handed_graph { node.taint } else { node.taint.union(Taint::GRAPH) }
                    }
                };
                if new != self.graph[n].taint {
                    self.graph[n].taint = new;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// All "stored into" edges: (edge, value node, target version node).
    pub fn stores(&self) -> impl Iterator<Item = (EdgeIndex, NodeIndex, NodeIndex, Store, &Span)> + '_ {
        self.graph.edge_references().filter_map(|e| match e.weight() {
            Edge::StoredInto { how, span, .. } => Some((e.id(), e.source(), e.target(), *how, span)),
            Edge::DerivedFrom => None,
        })
    }

    /// The call a store was made through, if it happened inside a called function.
    pub fn through(&self, edge: EdgeIndex) -> Option<&Through> {
        match &self.graph[edge] {
            Edge::StoredInto { through, .. } => through.as_ref(),
            Edge::DerivedFrom => None,
        }
    }

    /// The binding versions a value reads (its "derived from" sources).
    pub fn reads(&self, value: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.graph
            .edges_directed(value, Direction::Incoming)
            .filter(|e| matches!(e.weight(), Edge::DerivedFrom))
            .map(|e| e.source())
    }

    /// Whether a backward of this function consumes the graph `value` carries: `value`, or a
    /// graph-carrying value it is computed from, is something a loss is computed from (a sum of
    /// the losses backpropagated, of their parts, of metrics on the outputs they came from).
    /// burn sweeps such a graph at that backward; a forward no backward reaches stays in its
    /// store for as long as a value holds it.
    pub fn graph_meets_backward(&self, value: NodeIndex) -> bool {
        let upstream = self.upstream_of_losses(false);
        self.graph_upstream(value).any(|n| upstream[n.index()])
    }

    /// The graph-carrying binding a stored value was computed from (other than `exclude`),
    /// with its declaration: "where the value came from".
    pub fn graph_source(&self, value: NodeIndex, exclude: Option<BindingId>) -> Option<(BindingId, Span)> {
        let source = |fresh: bool| {
            self.graph_upstream(value).find_map(move |n| match self.graph[n].kind {
                NodeKind::Version(b)
                    if Some(b) != exclude
                        && self.graph[n].taint.has(Taint::GRAPH)
                        && !(fresh && exclude.is_some_and(|e| self.derives_from(n, e))) =>
                {
                    Some((b, self.bindings[b].decl.clone()))
                }
                _ => None,
            })
        };
        // Rather a binding not made from the excluded one (`loss`, not `prev` in `Some(prev) =>
        // Some(prev + loss)`).
        source(true).or_else(|| source(false))
    }

    /// A node `value` is computed from that makes a graph of its own (a forward pass, or a call
    /// of the crate that returns a graph-carrying value, like a training step returning its
    /// loss), not made from `binding`.
    /// Its span: the call's.
    pub fn fresh_graph_source(&self, value: NodeIndex, binding: BindingId) -> Option<Span> {
        let n = self.graph_upstream(value).find(|&n| {
            n != value
                && (matches!(self.graph[n].kind, NodeKind::Value(Producer::Forward { .. }))
                    || self.seeds.contains(&n)
                    || self.op_on_params(n))
                && !self.derives_from(n, binding)
        })?;
        let site = self.call_sites.iter().chain(&self.forward_sites).find(|c| c.result == n);
        Some(site.map_or_else(|| self.graph[n].span.clone(), |c| c.span.clone()))
    }

    /// Whether `value` is one operation on trainable parameters and nothing else (`self.image.
    /// as_tensor().copy()?` with `image: Var`): the graph it holds is those parameters, which
    /// live anyway; keeping it keeps no activation.
    pub fn holds_only_params(&self, value: NodeIndex) -> bool {
        self.op_on_params(value)
            && self.graph.neighbors_directed(value, Direction::Incoming).all(|m| self.graph[m].taint.has(Taint::PARAM))
    }

    /// Whether `n` is an operation on trainable parameters that starts a graph (`(self.prompt.
    /// as_tensor() * (1.0 - d))?` with `prompt: Var`): it carries one, and none of what it reads
    /// does, but a parameter is among them.
    fn op_on_params(&self, n: NodeIndex) -> bool {
        matches!(self.graph[n].kind, NodeKind::Value(_)) && self.graph[n].taint.has(Taint::GRAPH) && {
            let mut reads = self.graph.neighbors_directed(n, Direction::Incoming);
            let mut param = false;
            reads.all(|m| {
                param |= self.graph[m].taint.has(Taint::PARAM);
                !self.graph[m].taint.has(Taint::GRAPH)
            }) && param
        }
    }

    /// Whether `value` was computed, along graph-carrying nodes, from a version of `binding`:
    /// assigning it back makes a chain that grows every iteration (`hidden = cell(x, hidden)`).
    /// Whether a backward call's loss is computed from `binding` (an unrolled computation that
    /// trains, not a side chain).
    pub fn loss_derives_from(&self, binding: BindingId) -> bool {
        self.losses.iter().chain(&self.handed_losses).any(|&n| self.derives_from(n, binding))
    }

    /// Whether `value` brings in a graph of its own beside what it reads of `binding`'s old
    /// versions: upstream of it, without going through those versions, some graph-carrying node
    /// starts one (a forward pass, a call returning a graph-carrying value, an op on parameters,
    /// a parameter). `*metrics.entry("tokens").or_default()
    /// += n as f64` brings none in, even when another entry of the map holds a loss.
    pub fn adds_graph(&self, value: NodeIndex, binding: BindingId) -> bool {
        let mut seen = vec![false; self.graph.node_count()];
        let mut stack = vec![value];
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n.index()], true) || !self.graph[n].taint.has(Taint::GRAPH) {
                continue;
            }
            match self.graph[n].kind {
                NodeKind::Version(b) if b == binding => continue,
                NodeKind::Value(Producer::Forward { .. }) => return true,
                _ if self.seeds.contains(&n) => return true,
                _ => {}
            }
            // Where the graph starts: none of what it reads carries one (an op on parameters,
            // a parameter of the function).
            let incoming = self.graph.neighbors_directed(n, Direction::Incoming);
            if !incoming.clone().any(|m| self.graph[m].taint.has(Taint::GRAPH)) {
                return true;
            }
            stack.extend(incoming);
        }
        false
    }

    /// Whether `value` is computed, within its expression or through the locals it reads, from
    /// what `binding` held before: an element taken out of the collection it is stored back into
    /// (`let old = self.bank.remove(&id); self.bank.insert(id, (old * m + fresh * (1.0 - m))?)`).
    /// Such a store folds: each entry links to the entries it replaces.
    /// Not through a forward pass: a generation step computed from what the collection holds
    /// (`tokens.push(sample(&model.forward(&input_of(&tokens))?)?)`) adds a new value, not a
    /// blend of the old one.
    pub(super) fn computed_from_own_content(&self, value: NodeIndex, binding: BindingId) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![value];
        while let Some(n) = stack.pop() {
            if seen.len() > 256 || !seen.insert(n) {
                continue;
            }
            match self.graph[n].kind {
                NodeKind::Version(b) if b == binding => {
                    if n != value {
                        return true;
                    }
                }
                NodeKind::Value(Producer::Forward { .. }) => {}
                NodeKind::Value(_) => stack.extend(self.reads(n)),
                NodeKind::Version(_) => stack.extend(
                    self.graph
                        .edges_directed(n, Direction::Incoming)
                        .filter(|e| matches!(e.weight(), Edge::StoredInto { how: Store::Let | Store::Assign, .. }))
                        .map(|e| e.source()),
                ),
            }
        }
        false
    }

    pub fn derives_from(&self, value: NodeIndex, binding: BindingId) -> bool {
        self.graph_upstream(value).any(|n| n != value && self.binding_of(n) == Some(binding))
    }

    /// Whether `value` feeds an earlier version of `binding` into a forward pass within its own
    /// expression (`h = (wx.forward(&x)? + wh.forward(&h)?)?.tanh()?`): `binding` is a recurrent
    /// state, and the graph through it is what trains the parameters of that forward pass.
    /// [`FnModel::feeds_forward`], also through locals the value is computed from (`let noise =
    /// model.forward(&x)?; x = (x - noise)?`): versions of other bindings lead to the values
    /// stored into them.
    pub fn feeds_forward_through_locals(&self, value: NodeIndex, binding: BindingId) -> bool {
        self.upstream(value, binding, true).into_iter().any(|n| {
            matches!(self.graph[n].kind, NodeKind::Value(Producer::Forward { .. }))
                && self.upstream(n, binding, true).into_iter().any(|m| m != n && self.binding_of(m) == Some(binding))
        })
    }

    /// [`FnModel::feeds_forward_through_locals`], also through locals a loop folds the old value
    /// into (`let mut h = self.carry.clone(); for x in xs { h = cell.forward(x, &h)?; }
    /// self.carry = h;`).
    pub fn feeds_forward_through_folds(&self, value: NodeIndex, binding: BindingId) -> bool {
        self.upstream_via(value, binding, true, true).into_iter().any(|n| {
            matches!(self.graph[n].kind, NodeKind::Value(Producer::Forward { .. }))
                && self
                    .upstream_via(n, binding, true, true)
                    .into_iter()
                    .any(|m| m != n && self.binding_of(m) == Some(binding))
        })
    }

    pub fn feeds_forward(&self, value: NodeIndex, binding: BindingId) -> bool {
        self.upstream(value, binding, false).into_iter().any(|n| {
            matches!(self.graph[n].kind, NodeKind::Value(Producer::Forward { .. }))
                && self.upstream(n, binding, false).into_iter().any(|m| m != n && self.binding_of(m) == Some(binding))
        })
    }

    /// `from` and the nodes its value is computed from within its expression; with
    /// `through_locals`, also through versions of bindings other than `binding` to the values
    /// stored into them (`let model_in = scale(latents.clone())?; model.forward(&model_in)?`);
    /// with `through_folds` (`upstream_via`), also folded into them and merged at loops and
    /// branches (`let mut h = self.h.clone(); for x in xs { h = cell.forward(x, &h)?; } self.h
    /// = h;`).
    fn upstream(&self, from: NodeIndex, binding: BindingId, through_locals: bool) -> Vec<NodeIndex> {
        self.upstream_via(from, binding, through_locals, false)
    }

    fn upstream_via(
        &self,
        from: NodeIndex,
        binding: BindingId,
        through_locals: bool,
        through_folds: bool,
    ) -> Vec<NodeIndex> {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![from];
        let mut out = Vec::new();
        while let Some(n) = stack.pop() {
            if seen.len() > 256 || !seen.insert(n) {
                continue;
            }
            out.push(n);
            match self.graph[n].kind {
                // Down folds, a cut (`let mut h = self.h.detach();`) carries nothing over.
                NodeKind::Value(Producer::Plain) if through_folds => {}
                NodeKind::Value(_) => stack.extend(self.reads(n)),
                NodeKind::Version(b) if through_locals && b != binding => stack.extend(
                    self.graph
                        .edges_directed(n, Direction::Incoming)
                        .filter(|e| match e.weight() {
                            Edge::StoredInto { how: Store::Let | Store::Assign, .. } => true,
                            Edge::StoredInto { how: Store::Fold | Store::Merge, .. } => through_folds,
                            _ => false,
                        })
                        .map(|e| e.source()),
                ),
                NodeKind::Version(_) => {}
            }
        }
        out
    }

    /// Whether `binding` is given a value that carries no graph within `iteration`: cut
    /// (`h = h.detach()` at the top of each chunk) or replaced (`h = Tensor::zeros(..)`), so
    /// what it holds is never carried past one training iteration.
    pub fn cut_within(&self, binding: BindingId, iteration: Iteration) -> bool {
        self.stores().any(|(_, value, target, how, _)| {
            matches!(how, Store::Assign | Store::Fold | Store::Let)
                && self.binding_of(target) == Some(binding)
                && !self.graph[value].taint.has(Taint::GRAPH)
                && self.iteration_of(self.graph[value].in_loop) == Some(iteration)
        }) || self.self_cuts.iter().any(|&(b, l)| b == binding && self.iteration_of(l) == Some(iteration))
    }

    /// Whether code on branch path `path` runs on every iteration where code on `at` does: `path`
    /// is a prefix of `at`, once branches that repeat an earlier `if` on the same local `bool`
    /// count as that earlier one.
    pub fn runs_whenever(&self, path: &[usize], at: &[usize]) -> bool {
        if at.starts_with(path) {
            return true;
        }
        if self.branch_aliases.is_empty() {
            return false;
        }
        let canonical = |p: &[usize]| -> Vec<usize> {
            p.iter().map(|b| self.branch_aliases.iter().find(|(a, _)| a == b).map_or(*b, |&(_, first)| first)).collect()
        };
        canonical(at).starts_with(&canonical(path))
    }

    /// The branches between its loop body and the write that made version `v` (empty: the write
    /// runs on every pass of its loop body).
    fn write_path(&self, v: NodeIndex) -> &[usize] {
        self.branch_writes.iter().find(|(n, _)| *n == v).map_or(&[][..], |&(_, p)| self.branch_paths[p].as_slice())
    }

    /// Whether `binding` is cut or replaced with a value without a graph within `iteration` on
    /// every pass that writes version `written` (its write's branches include the cut's): not
    /// only now and then (`if step % 2000 == 0 { running = zeros }`).
    pub fn cut_whenever(&self, binding: BindingId, iteration: Iteration, written: NodeIndex) -> bool {
        let at = self.write_path(written);
        // A write of one part (`pol.hidden = pol.hidden.detach()`) leaves the others (a sum
        // kept in `pol.baseline`) as they were.
        self.stores().any(|(_, value, target, how, _)| {
            matches!(how, Store::Assign | Store::Fold | Store::Let)
                && self.binding_of(target) == Some(binding)
                && self.whole_write(target)
                && !self.graph[value].taint.has(Taint::GRAPH)
                && self.iteration_of(self.graph[value].in_loop) == Some(iteration)
                && at.starts_with(self.write_path(target))
        })
    }

    /// Whether `binding` is replaced with a value without a graph in the body of loop `l` itself,
    /// on every pass that writes version `written` (`latents = step(..)?; latents =
    /// latents.detach();`, also a part of it: `state.h = state.h.detach();`, taken to be the
    /// state's cut): what one iteration stores does not reach the next.
    pub fn cut_in_loop(&self, binding: BindingId, l: LoopId, written: NodeIndex) -> bool {
        let at = self.write_path(written);
        self.stores().any(|(_, value, target, how, _)| {
            matches!(how, Store::Assign | Store::Fold | Store::Let)
                && self.binding_of(target) == Some(binding)
                && !self.graph[value].taint.has(Taint::GRAPH)
                && self.graph[target].in_loop == Some(l)
                && at.starts_with(self.write_path(target))
        })
    }

    /// `value` and the graph-carrying nodes it was computed from, nearest first.
    fn graph_upstream(&self, value: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        let mut seen = vec![false; self.graph.node_count()];
        let mut queue = std::collections::VecDeque::from([value]);
        std::iter::from_fn(move || {
            while let Some(n) = queue.pop_front() {
                if std::mem::replace(&mut seen[n.index()], true) {
                    continue;
                }
                queue.extend(
                    self.graph
                        .edges_directed(n, Direction::Incoming)
                        .map(|e| e.source())
                        .filter(|s| self.graph[*s].taint.has(Taint::GRAPH)),
                );
                return Some(n);
            }
            None
        })
    }

    /// Whether a value of `binding` is passed to a call of one of the crate's own functions
    /// (`opt.tell(solutions, losses)`): that function decides what becomes of it.
    pub fn handed_to_crate_call(&self, binding: BindingId) -> bool {
        self.call_sites
            .iter()
            .any(|site| site.args.iter().any(|a| a.reads.iter().any(|&n| self.binding_of(n) == Some(binding))))
    }

    /// Whether this function replaces what `binding` holds on every path it writes it: it
    /// assigns it a new value (`self.adv = Tensor::zeros(..)`) or cuts it in place
    /// (`self.adv.detach_()`).
    pub fn replaces(&self, binding: BindingId) -> bool {
        self.cleared.iter().any(|c| self.binding_of(c.version) == Some(binding))
            || self
                .stores()
                .any(|(_, _, target, how, _)| how == Store::Assign && self.binding_of(target) == Some(binding))
    }

    /// Whether `binding` is reset within `iteration` (`model.reset_cache()`, `dec.clear_state()`
    /// in the training loop or a loop inside it): what it keeps starts afresh every iteration.
    pub fn reset_within(&self, binding: BindingId, iteration: Iteration) -> bool {
        self.resets.iter().any(|&(b, l)| b == binding && self.iteration_of(l) == Some(iteration))
    }

    /// Whether field `field` of `binding` is cut within `iteration` (`model.h =
    /// model.h.detach()`, `agent.start_episode()` with `self.mem = zero_state()`; see
    /// `FnModel::field_cuts`). `field` may be written `self.h`.
    pub fn field_cut_within(&self, binding: BindingId, field: &str, iteration: Iteration) -> bool {
        self.field_cuts
            .iter()
            .any(|(b, f, l)| *b == binding && cut_covers(f, field) && self.iteration_of(*l) == Some(iteration))
    }

    /// Whether every field of `fields` of `binding` is cut within `iteration` (see
    /// [`FnModel::field_cut_within`]); no field: no cut.
    pub fn fields_cut_within(&self, binding: BindingId, fields: &[String], iteration: Iteration) -> bool {
        !fields.is_empty() && fields.iter().all(|f| self.field_cut_within(binding, f, iteration))
    }

    /// Whether the field `field` of `self` (`self.h`, as a callee writes it) is given a value
    /// without a graph, or reset (`self.h.clear()`, `self.reset_state()`), within `iteration`.
    pub fn self_field_cut_within(&self, field: &str, iteration: Iteration) -> bool {
        let whole_self = |b: BindingId| self.bindings[b].name == "self";
        self.resets.iter().any(|&(b, l)| whole_self(b) && self.iteration_of(l) == Some(iteration))
            || self.stores().any(|(edge, value, target, how, _)| {
                // Its own write (not one a called function makes there), without a graph.
                self.through(edge).is_none()
                    && matches!(how, Store::Assign | Store::Fold | Store::Let)
                    && !self.graph[value].taint.has(Taint::GRAPH)
                    && self.iteration_of(self.graph[value].in_loop) == Some(iteration)
                    && self.binding_of(target).is_some_and(|b| {
                        let binding = &self.bindings[b];
                        binding.kind == BindingKind::SelfField
                            && cut_covers(binding.name.strip_prefix("self.").unwrap_or(&binding.name), field)
                    })
            })
            || self.bindings.iter().enumerate().any(|(b, binding)| {
                binding.kind == BindingKind::SelfField
                    && cut_covers(binding.name.strip_prefix("self.").unwrap_or(&binding.name), field)
                    && self.reset_within(b, iteration)
            })
    }

    /// Whether `binding` is emptied within `iteration` (`memory.clear()` after the backward of an
    /// on-policy update, or reassigned with a fresh value): what it holds does not outlive it.
    pub fn cleared_within(&self, binding: BindingId, iteration: Iteration) -> bool {
        let cleared = self
            .cleared
            .iter()
            .any(|c| self.binding_of(c.version) == Some(binding) && self.iteration_of(c.in_loop) == Some(iteration));
        cleared
            || self.stores().any(|(_, value, target, how, _)| {
                how == Store::Assign
                    && self.binding_of(target) == Some(binding)
                    && !self.graph[value].taint.has(Taint::GRAPH)
                    && self.iteration_of(self.graph[value].in_loop) == Some(iteration)
            })
    }

    /// Whether what a call of the crate empties out of `binding` in `iteration` is consumed by
    /// a backward there: the call's result is (or leads to) a loss (`let total = acc.ready();
    /// opt.backward_step(&total)`), or the call runs the backward itself (`acc.add(loss)` whose
    /// `flush` takes the sum and backpropagates it). Deliberate gradient accumulation, behind
    /// methods.
    pub fn emptied_into_backward(&self, binding: BindingId, iteration: Iteration) -> bool {
        // Downstream through any value, plain ones too: what the call hands back may be read to
        // a host-typed result before the loss is made from it.
        let reaches = |from, to| petgraph::algo::has_path_connecting(&self.graph, from, to, None);
        self.emptied_by_calls.iter().any(|e| {
            e.binding == binding
                && self.iteration_of(e.in_loop) == Some(iteration)
                && (self.calls.iter().any(|c| {
                    matches!(c.kind, TrainingCallKind::Backward | TrainingCallKind::BackwardStep) && c.span == e.call
                }) || self.losses.iter().chain(&self.handed_losses).any(|&l| reaches(e.result, l)))
        })
    }

    /// Vocabulary calls of `kind` made inside a loop that runs backward, with that loop.
    pub fn calls_in_training_loops(&self, kind: CallKind) -> impl Iterator<Item = (&VocabCall, LoopId)> + '_ {
        self.calls_of(kind).filter_map(|c| match self.iteration_of(c.in_loop) {
            Some(Iteration::Loop(l)) => Some((c, l)),
            _ => None,
        })
    }

    /// Variables created in a store, in program order.
    pub fn var_creations(&self) -> &[VarCreation] {
        &self.var_creations
    }

    /// Whether closure `c` (see [`VarCreation::closure`]) runs a forward pass in its body.
    pub fn closure_runs_forward(&self, c: usize) -> bool {
        self.closures.get(c).is_some_and(|c| c.runs_forward)
    }

    /// Whether the function body runs a forward pass outside its closures.
    pub fn runs_forward(&self) -> bool {
        self.runs_forward
    }

    /// Whether loop `l`'s body runs a forward pass or backward.
    pub fn loop_trains_or_infers(&self, l: LoopId) -> bool {
        self.loops.get(l).is_some_and(|s| s.runs_forward || s.runs_backward)
    }

    /// Vocabulary calls of `kind`, in program order.
    pub fn calls_of(&self, kind: CallKind) -> impl Iterator<Item = &VocabCall> + '_ {
        self.vocab_calls.iter().filter(move |c| c.kind == kind)
    }

    /// What a value is computed from, back through values and `let`s: how many of `stops` it
    /// reaches (not looking past them), and whether it reaches, besides them, a binding that may
    /// hold a tensor (not a host number) or a parameter read.
    pub fn blend(&self, reads: &[NodeIndex], stops: &[NodeIndex]) -> Blend {
        let host = |t: &str| crate::model::rust::is_host_type(t) || self.spec.host_number_types.contains(&t);
        let mut stack: Vec<NodeIndex> = reads.to_vec();
        let mut seen = std::collections::HashSet::new();
        let (mut hit, mut other, mut additive) = (0, false, false);
        while let Some(n) = stack.pop() {
            if seen.len() > 256 || !seen.insert(n) {
                continue;
            }
            additive |= self.additive_nodes.contains(&n);
            if stops.contains(&n) {
                hit += 1;
                continue;
            }
            if self.param_reads.contains(&n) {
                other = true;
                continue;
            }
            let mut incoming = self
                .graph
                .edges_directed(n, Direction::Incoming)
                .filter(|e| match e.weight() {
                    Edge::DerivedFrom => true,
                    Edge::StoredInto { how, .. } => *how == Store::Let,
                })
                .peekable();
            if incoming.peek().is_none() {
                if let NodeKind::Version(b) = self.graph[n].kind {
                    let b = &self.bindings[b];
                    other |= !b.host && !b.ty.as_deref().is_some_and(host);
                }
                continue;
            }
            // A plain value: a detached parameter (`online.val().detach()`) is still a tensor
            // to blend with; host reads (`module.require_grad`, scalars) are not.
            if matches!(self.graph[n].kind, NodeKind::Value(Producer::Plain)) {
                for src in incoming.map(|e| e.source()) {
                    if stops.contains(&src) {
                        hit += 1;
                    } else if self.param_reads.contains(&src) {
                        other = true;
                    }
                }
                continue;
            }
            stack.extend(incoming.map(|e| e.source()));
        }
        Blend { stops: hit, other, additive }
    }

    /// The fields of `self` (of this function's type, or of a called method's type) that
    /// receive graph-carrying values here.
    pub fn graph_field_stores(&self, file: &std::sync::Arc<crate::source::SourceFile>) -> Vec<FieldStore> {
        let mut out = Vec::new();
        for (edge, value, target, how, span) in self.stores() {
            if how == Store::Merge || !self.graph[value].taint.has(Taint::GRAPH) {
                continue;
            }
            let Some(b) = self.binding_of(target) else { continue };
            let store = |owner: &str, field: &str| FieldStore {
                owner: Some(owner.to_string()),
                field: field.trim_start_matches("self.").to_string(),
                file: file.clone(),
                span: span.clone(),
                autodiff: self.autodiff,
            };
            if self.bindings[b].kind == BindingKind::SelfField
                && let Some(owner) = &self.owner
            {
                out.push(store(owner, &self.bindings[b].name));
            }
            for t in self.through(edge).into_iter().flat_map(Through::hops) {
                if let Some((owner, _)) = t.callee.rsplit_once("::")
                    && t.target.starts_with("self.")
                {
                    out.push(store(owner, &t.target));
                }
            }
        }
        for (value, owner, field, span) in &self.field_pushes {
            if self.graph[*value].taint.has(Taint::GRAPH) {
                out.push(FieldStore {
                    owner: owner.clone(),
                    field: field.clone(),
                    file: file.clone(),
                    span: span.clone(),
                    autodiff: self.autodiff,
                });
            }
        }
        out
    }

    /// A secondary label for the iteration: the loop header that runs backward.
    pub fn iteration_label(&self, iteration: Iteration) -> Option<(Span, String)> {
        match iteration {
            Iteration::Loop(l) => {
                Some((self.loops[l].header.clone(), "this loop runs backward every iteration".to_string()))
            }
            Iteration::Call => Some((self.sig.clone(), "each call of this function runs backward".to_string())),
        }
    }
}
