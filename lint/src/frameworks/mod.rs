//! What each supported framework calls backward, step, clear, cut and no-grad.
//!
//! One file per framework holds a [`Spec`]; [`detect`] picks the framework of a file from its
//! `use` paths and qualified calls. The facts come from `shared/FRAMEWORKS.md` (checked against
//! candle 0.11, tch 0.26, burn 0.22 / 0.20–0.21 and dfdx 0.13).

mod burn;
mod candle;
pub mod common;
mod dfdx;
pub mod phase;
#[cfg(test)]
mod stub;
mod tch;

use std::fmt;

/// Every framework memlint knows, in detection tie-break order. Adding a framework is one file
/// with a [`Spec`] and one line here.
pub static REGISTRY: &[&Spec] = &[&candle::SPEC, &tch::SPEC, &burn::SPEC, &dfdx::SPEC];

/// A machine-learning framework whose training loops memlint understands: a handle on its
/// [`Spec`]. Two handles are equal when they name the same framework.
#[derive(Clone, Copy)]
pub struct Framework(&'static Spec);

/// Which burn a crate is on, as every release its manifest's requirement allows falls in one
/// era of burn's autodiff graph store (measured in `experiments/burn-orphan-forwards/versions`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BurnEra {
    /// Before 0.13: each tensor owns its graph, freed with it; there is no store to fill.
    BeforeGraphStore,
    /// 0.13 to 0.18: one store for every graph, cleared as a whole by any backward.
    OneGraph,
    /// 0.19 only: as [`BurnEra::TypedBackends`], and burn-train's `learner.fit(..)` returns a
    /// `TrainingResult` that holds the trained model as the inference module.
    FitReturnsInference,
    /// 0.19 to 0.21: graphs kept per connected component, as below; backends are types
    /// (`Autodiff<NdArray>`), and devices have no `autodiff()`.
    TypedBackends,
    /// 0.22 on (and any requirement that allows it): graphs kept per connected component; a
    /// backward sweeps only the components its loss reaches. The device says whether a tensor
    /// is tracked (`device.autodiff()`).
    #[default]
    Components,
}

/// The built-in frameworks by name, for this module and its tests (callers outside use
/// [`Framework::from_name`] and [`Framework::all`]).
#[cfg(test)]
#[allow(non_upper_case_globals)]
impl Framework {
    pub(crate) const Candle: Framework = Framework(&candle::SPEC);
    pub(crate) const Tch: Framework = Framework(&tch::SPEC);
    pub(crate) const Burn: Framework = Framework(&burn::SPEC);
    pub(crate) const Dfdx: Framework = Framework(&dfdx::SPEC);
}

impl Framework {
    /// A framework described by `spec` (the built-in ones are in [`REGISTRY`]).
    pub const fn new(spec: &'static Spec) -> Self {
        Self(spec)
    }

    /// The registered frameworks, in [`REGISTRY`] order.
    pub fn all() -> impl Iterator<Item = Framework> {
        REGISTRY.iter().map(|s| Framework(s))
    }

    /// The facts about this framework.
    /// This framework as a crate on burn of `era` uses it: burn before 0.13 (no process-wide
    /// graph store) and 0.13–0.18 (one graph, cleared whole by a backward) are specs of their
    /// own; every other framework and version is itself.
    pub fn at_version(self, era: BurnEra) -> Framework {
        if self.0.name != burn::SPEC.name {
            return self;
        }
        match era {
            BurnEra::BeforeGraphStore => Framework(&burn::SPEC_BEFORE_GRAPH_STORE),
            BurnEra::OneGraph => Framework(&burn::SPEC_ONE_GRAPH),
            BurnEra::FitReturnsInference => Framework(&burn::SPEC_FIT_RETURNS_INFERENCE),
            BurnEra::TypedBackends => Framework(&burn::SPEC_TYPED_BACKENDS),
            BurnEra::Components => self,
        }
    }

    pub fn spec(self) -> &'static Spec {
        self.0
    }

    /// The framework a crate name (as written in `Cargo.toml` or a `use` path) belongs to.
    pub fn from_crate_name(name: &str) -> Option<Self> {
        from_crate_name_in(REGISTRY, name)
    }

    /// The registered framework called `name` (`candle`, `burn`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::all().find(|f| f.name() == name)
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Position in [`REGISTRY`] (unregistered frameworks sort last).
    fn rank(self) -> usize {
        REGISTRY.iter().position(|s| s.name == self.0.name).unwrap_or(usize::MAX)
    }
}

fn from_crate_name_in(registry: &[&'static Spec], name: &str) -> Option<Framework> {
    let name = name.replace('-', "_");
    registry.iter().find(|s| s.crate_names.contains(&name.as_str())).map(|s| Framework(s))
}

impl PartialEq for Framework {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Framework {}

impl std::hash::Hash for Framework {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.name.hash(state);
    }
}

impl PartialOrd for Framework {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Framework {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.rank(), self.0.name).cmp(&(other.rank(), other.0.name))
    }
}

impl fmt::Debug for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut chars = self.name().chars();
        let first = chars.next().map(|c| c.to_ascii_uppercase());
        write!(f, "{}{}", first.map(String::from).unwrap_or_default(), chars.as_str())
    }
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A method call recognised by name and, where names collide with other APIs
/// (`env.step(action)` vs `opt.step()`), by argument count.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub name: &'static str,
    /// Accepted argument counts (receiver excluded); `None` accepts any.
    pub arity: Option<&'static [usize]>,
}

impl Call {
    pub const fn any(name: &'static str) -> Self {
        Self { name, arity: None }
    }

    pub const fn with(name: &'static str, arity: &'static [usize]) -> Self {
        Self { name, arity: Some(arity) }
    }

    pub(crate) fn matches(&self, name: &str, argc: usize) -> bool {
        self.name == name && self.arity.is_none_or(|a| a.contains(&argc))
    }
}

/// Everything memlint needs to know about one framework.
#[derive(Debug)]
pub struct Spec {
    /// The framework's name (`--framework` value, messages).
    pub name: &'static str,
    /// Crate names that identify the framework (`use` roots and `Cargo.toml` dependencies).
    pub crate_names: &'static [&'static str],
    /// Method calls that run backward on their receiver (the loss).
    pub backward: &'static [Call],
    /// Method calls that run backward on their first argument and step (`opt.backward_step(&loss)`).
    pub backward_step: &'static [Call],
    /// Optimizer steps.
    pub step: &'static [Call],
    /// Calls that clear accumulated gradients (incl. combined calls that clear).
    pub clear: &'static [Call],
    /// Methods whose result no longer carries the autograd graph.
    pub cut_methods: &'static [&'static str],
    /// Function paths (last two segments, e.g. `f64::try_from`) whose result is a host value.
    pub cut_functions: &'static [&'static str],
    /// Free functions that open a no-grad region over their closure argument.
    pub no_grad_functions: &'static [&'static str],
    /// Functions returning a guard that disables gradients while it lives.
    pub no_grad_guards: &'static [&'static str],
    /// Methods returning a model whose forward passes record no graph (burn `valid()`).
    pub no_grad_models: &'static [&'static str],
    /// Methods that attach a gradient tape to their receiver (dfdx `traced`).
    pub tape_methods: &'static [&'static str],
    /// Methods of a tensor that run the module they are handed on it, forward passes
    /// (`xs.apply(&net)`, `xs.apply_t(&net, train)`: candle, tch). burn and dfdx have none; a
    /// crate method of that name there (`relation.apply(&sector)`) is the crate's own.
    pub module_apply_methods: &'static [&'static str],
    /// Tape methods that start from a fresh gradient store (dfdx `leaky_trace`): nothing piles up.
    pub fresh_tape_methods: &'static [&'static str],
    /// Whether gradients pile up across backward calls until cleared.
    pub grads_accumulate: bool,
    /// Whether a clear only covers the optimizer it is called on (tch `opt.zero_grad()`), rather
    /// than whatever the step updates (dfdx `model.zero_grads(&mut grads)`).
    pub clear_per_optimizer: bool,
    /// Gradient mode is global state (tch): outside a no-grad guard every forward records a graph.
    pub global_grad_mode: bool,
    /// Whether a tensor's type names its backend and the autodiff backend is a type
    /// (`Autodiff<B>`, `B: AutodiffBackend`, burn), or a device (`device.autodiff()`).
    pub autodiff_by_type: bool,
    /// Names of the inner (non-autodiff) backend of an autodiff one, as written in types
    /// (`B::InnerBackend`): explicit generic arguments with one instantiate no autodiff code.
    pub inner_backend_names: &'static [&'static str],
    /// Autodiff state lives in a store that only `backward()` sweeps (burn): tensor operations
    /// recorded after it on the consumed graph stay there.
    pub graph_swept_by_backward: bool,
    /// A backward sweeps only the graphs that hang on parameters it uses (burn 0.19 on): the
    /// forwards of a module no backward trains (a frozen teacher built apart) stay in the store.
    pub untrained_graphs_kept: bool,
    /// The graph travels in the input tensors, not in the model (dfdx: a tape is attached to an
    /// input with `trace`/`traced`): a forward pass records one only when handed a traced input.
    pub graph_from_input_tape: bool,
    /// Whether a tensor is tracked is a property of its device, made with a method of the
    /// device (burn 0.22: `device.autodiff()`; its types name no backend): the method's name.
    /// `None` where types say it (burn 0.21 and older, whose manifests exclude 0.22).
    pub autodiff_device_method: Option<&'static str>,
    /// Methods that give a parameter's tensor (burn `param.val()`).
    pub param_read_methods: &'static [&'static str],
    /// Methods that rewrite a parameter through a closure over its tensor (burn `param.map(|t| …)`).
    pub param_map_methods: &'static [&'static str],
    /// Associated functions of [`Spec::param_type`] that build a parameter from a tensor, and
    /// whether each gives it a fresh id (`Param::from_tensor`) or keeps one (`Param::initialized`).
    pub param_rebuild: &'static [(&'static str, bool)],
    /// The trait and method through which a visitor rewrites every parameter of a module
    /// (burn `ModuleMapper::map_float`): its return value is the parameter's new value.
    pub param_mapper: Option<(&'static str, &'static str)>,
    /// The parameter type of [`Spec::param_rebuild`] (`Param`).
    pub param_type: &'static str,
    /// Gradients are a value the user holds and passes around (dfdx `Gradients`).
    pub explicit_grads: bool,
    /// Methods that allocate a new gradient store (dfdx `model.alloc_grads()`).
    pub grads_alloc_methods: &'static [&'static str],
    /// The framework's gradient store types, the one `backward()` returns first (burn
    /// `Gradients`, then `GradientsParams`): a copy of one, or a gradient read from it, is as
    /// large as the model's parameters.
    pub grad_store_types: &'static [&'static str],
    /// A copy of a model keeps the weights it was copied with once the optimizer steps: burn's
    /// optimizer returns new parameter tensors, and dfdx copies a buffer a copy shares before
    /// writing it. candle and tch write variables in place, so there a copy shares them.
    pub copies_keep_weights: bool,
    /// Functions of the framework's `nn` module that create trainable variables in the store
    /// their first argument names (tch `nn::linear(vs.root() / "fc", ..)`); a store keeps every
    /// variable created in it (tch renames a clashing name rather than reusing it).
    pub var_builders: &'static [&'static str],
    /// Methods of a store path that create a variable named by their first argument
    /// (tch `p.var("w", ..)`, `p.zeros("b", ..)`).
    pub var_methods: &'static [&'static str],
    /// Function paths (last two segments) whose value is built from trainable variables where
    /// the framework has no no-grad mode (candle `VarBuilder::from_varmap`, `Var::new`): a model
    /// made with one records a graph in every forward pass, training or not.
    pub trainable_constructors: &'static [&'static str],
    /// Function paths (last two segments) whose value holds weights that are plain tensors, not
    /// trainable variables (candle `VarBuilder::from_mmaped_safetensors`, `from_tensors`): a model
    /// built with one records no graph (a frozen copy for sampling, a pretrained backbone).
    pub frozen_constructors: &'static [&'static str],
    /// A getter of a tensor's gradient and the in-place method that zeroes what it returns (tch
    /// `v.grad().zero_()`): clearing gradients by hand, one variable at a time.
    pub grad_zero_in_place: Option<(&'static str, &'static str)>,
    /// The type of a trainable variable, whose value is tracked wherever it is used (candle
    /// `Var`): a function's parameter declared with it (`w: &Var`) is one, and an operation on
    /// it records a graph.
    pub variable_type: Option<&'static str>,
    /// Methods of a module that give one of its weight tensors as the tensor the module computes
    /// with (candle `linear.weight()`, `conv.bias()`, `embedding.embeddings()`): read from a module
    /// built from trainable variables, the tensor is a variable, and an operation on it records a
    /// graph.
    pub module_weight_methods: &'static [&'static str],
    /// The type of a store of trainable variables (candle `VarMap`): a function's parameter
    /// declared with it (`vm: &VarMap`) hands out variables (`vm.data().lock()`, `all_vars()`),
    /// and an operation on them records a graph.
    pub variable_store_type: Option<&'static str>,
    /// Methods of [`Spec::variable_store_type`] that hand out its variables themselves
    /// (`vm.all_vars()`, `vm.data()`): leaves, kept or passed on without recording a graph.
    pub variable_store_reads: &'static [&'static str],
    /// The framework's own types that hold tensors without being a model (candle
    /// `rnn::LSTMState`, burn `LstmState<B, 2>`): a function declared to return one hands on
    /// the graph of what it is computed from, as one returning a tensor does.
    pub state_types: &'static [&'static str],
    /// Library methods that return a model that records no graph: one whose weights they load
    /// from files as plain tensors (candle transformers' `sd_config.build_unet(path, ..)`), or
    /// the inference module of a trained one (burn-train 0.19's `learner.fit(..)`, whose
    /// `TrainingResult` holds it). Frozen, as [`Spec::frozen_constructors`]; not a method of
    /// that name that the crate defines.
    pub frozen_methods: &'static [&'static str],
    /// Cutting the graph changes the value's type (dfdx's tape parameter): a detach fix is never
    /// machine-applicable.
    pub detach_changes_type: bool,
    /// In-place copies into the receiver (`buf.copy_(&src)`): the receiver's autograd history
    /// takes in the source's graph (libtorch `CopySlices`) and keeps it for as long as the
    /// receiver lives.
    pub copy_into_methods: &'static [&'static str],
    /// Methods that return a view sharing the receiver's storage (`buf.narrow(0, t, n)`): an
    /// in-place copy into the view writes the tensor it views.
    pub view_methods: &'static [&'static str],
    /// Element type names that are host numbers besides Rust's (burn `ElemType`, `FloatElem`).
    pub host_number_types: &'static [&'static str],
    /// How to turn a loss into a host scalar, with `{}` for the expression.
    pub scalar_fix: &'static str,
    /// How to cut the graph, with `{}` for the expression.
    pub detach_fix: &'static str,
    /// How to clear gradients, with `{}` for the optimizer (or model) expression.
    pub clear_fix: &'static str,
}

impl Spec {
    /// Whether a method call runs a model forward in this framework: a forward-named method, or
    /// one that runs the module it is handed (`xs.apply(&net)`).
    pub fn is_forward_method(&self, name: &str) -> bool {
        is_forward_method(name) || self.module_apply_methods.contains(&name)
    }

    pub fn is_backward(&self, name: &str, argc: usize) -> bool {
        self.backward.iter().any(|c| c.matches(name, argc))
    }

    pub fn is_backward_step(&self, name: &str, argc: usize) -> bool {
        self.backward_step.iter().any(|c| c.matches(name, argc))
    }

    pub fn is_step(&self, name: &str, argc: usize) -> bool {
        self.step.iter().any(|c| c.matches(name, argc))
    }

    pub fn is_clear(&self, name: &str, argc: usize) -> bool {
        self.clear.iter().any(|c| c.matches(name, argc))
    }

    pub fn is_cut_method(&self, name: &str) -> bool {
        self.cut_methods.contains(&name) || name.starts_with("to_vec")
    }

    /// A cut that brings the value to the host (`into_scalar`, `to_vec1`, `into_data`,
    /// `array`), not one that keeps it on the device (`detach`, burn's `inner`, dfdx's tape
    /// splits, gradient reads).
    pub fn is_host_read(&self, name: &str) -> bool {
        self.is_cut_method(name) && !DEVICE_CUTS.contains(&name)
    }

    pub fn is_trainable_constructor(&self, last_two: &str) -> bool {
        self.trainable_constructors.contains(&last_two)
    }

    pub fn is_cut_function(&self, last_two: &str) -> bool {
        self.cut_functions.contains(&last_two)
    }
}

/// Fills a fix template of a [`Spec`] (`"{}.detach()"`) with an expression.
pub fn fill(template: &str, expr: &str) -> String {
    template.replace("{}", expr)
}

/// A suggested edit that cuts the graph of the expression `text` at `span`, in this framework's
/// spelling. Machine-applicable where the framework's `detach` keeps the type (candle, tch,
/// burn); `None` for values a postfix call cannot wrap without changing their type (`Some(x)`,
/// tuples, struct literals) or that do not parse on their own.
pub fn detach_suggestion(spec: &Spec, span: std::ops::Range<usize>, text: &str) -> Option<crate::Suggestion> {
    use syn::Expr;
    let expr: Expr = syn::parse_str(text.trim()).ok()?;
    let postfix = |e: &Expr| {
        matches!(
            e,
            Expr::Path(_) | Expr::MethodCall(_) | Expr::Field(_) | Expr::Try(_) | Expr::Paren(_) | Expr::Index(_)
        )
    };
    let receiver = match &expr {
        // `x.clone()` is cut directly: `x.detach()`.
        Expr::MethodCall(m) if m.method == "clone" && m.args.is_empty() && postfix(&m.receiver) => {
            text.trim().strip_suffix(".clone()").unwrap_or(text.trim()).to_string()
        }
        e if postfix(e) => text.trim().to_string(),
        Expr::Binary(_) | Expr::Reference(_) | Expr::Unary(_) => format!("({})", text.trim()),
        Expr::Call(c) if matches!(&*c.func, Expr::Path(p) if !p.path.segments.last().is_some_and(|s| s.ident.to_string().starts_with(char::is_uppercase))) => {
            text.trim().to_string()
        }
        _ => return None,
    };
    // dfdx changes the tape type parameter: never safe to apply blindly.
    let applicability = if spec.detach_changes_type {
        crate::Applicability::MaybeIncorrect
    } else {
        crate::Applicability::MachineApplicable
    };
    Some(crate::Suggestion {
        message: "cut the autograd graph before keeping the value".to_string(),
        span,
        replacement: fill(spec.detach_fix, &receiver),
        applicability,
    })
}

/// Methods that run a model forward, in every framework (for `xs.apply(&net)`, see
/// [`Spec::module_apply_methods`]).
const FORWARD_METHODS: &[&str] = &[
    "forward",
    "forward_t",
    "forward_train",
    "forward_mut",
    "forward_step",
    "forward_classification",
    "forward_regression",
    "try_forward",
    "try_forward_mut",
];

/// Free functions (last path segment) that compute a loss, in every framework.
const LOSS_FUNCTIONS: &[&str] = &[
    "mse",
    "mse_loss",
    "cross_entropy",
    "cross_entropy_with_logits_loss",
    "nll",
    "nll_loss",
    "binary_cross_entropy_with_logit",
    "binary_cross_entropy_with_logits",
    "huber_loss",
    "smooth_l1_loss",
    "l1_loss",
    "kl_div_loss",
];

/// Methods that return facts about a tensor rather than a tensor (shape, device, …).
const METADATA_METHODS: &[&str] = &[
    "shape",
    "dims",
    "dim",
    "dims0",
    "dims1",
    "dims2",
    "dims3",
    "dims4",
    "dims5",
    "dtype",
    "device",
    "elem_count",
    "rank",
    "size",
    "size1",
    "size2",
    "size3",
    "size4",
    "kind",
    "numel",
    "len",
    "is_empty",
    "to_string",
    "is_contiguous",
    "layout",
    "stride",
    "requires_grad",
    "id",
];

/// Whether a method call runs a model forward in every framework (see also
/// [`Spec::is_forward_method`]).
pub fn is_forward_method(name: &str) -> bool {
    FORWARD_METHODS.contains(&name)
}

/// Whether a method call runs a model forward in some framework (see
/// [`Spec::is_forward_method`]).
pub fn is_forward_method_in_any(name: &str) -> bool {
    is_forward_method(name) || REGISTRY.iter().any(|s| s.module_apply_methods.contains(&name))
}

/// Whether a free function computes a loss.
pub fn is_loss_function(last_segment: &str) -> bool {
    LOSS_FUNCTIONS.contains(&last_segment)
}

/// Cut methods of any framework that leave the value on the device: see [`Spec::is_host_read`].
const DEVICE_CUTS: &[&str] =
    &["detach", "detach_", "inner", "into_primitive", "grad", "grad_remove", "split_tape", "retaped", "freeze", "data"];

/// Methods that return indices or samples (integer tensors with no gradient) in every framework.
const INDEX_METHODS: &[&str] = &[
    "argmax",
    "argmin",
    "argmax_keepdim",
    "argmin_keepdim",
    "argsort",
    "multinomial",
    "topk_indices",
    "arg_sort",
    "sort_indices",
];

/// Methods that make a fresh tensor of the receiver's shape (`loss.zeros_like()`): it records
/// nothing of the receiver's graph.
const FRESH_LIKE_METHODS: &[&str] = &["zeros_like", "ones_like"];

/// Whether a method makes a fresh tensor shaped like its receiver (see `FRESH_LIKE_METHODS`).
pub fn is_fresh_like_method(name: &str) -> bool {
    FRESH_LIKE_METHODS.contains(&name)
}

/// Whether a method returns indices or samples: no gradient flows through them.
pub fn is_index_method(name: &str) -> bool {
    INDEX_METHODS.contains(&name)
}

/// Whether a method returns metadata (never a graph).
pub fn is_metadata_method(name: &str) -> bool {
    METADATA_METHODS.contains(&name)
}

/// Methods that read a tensor's extent along its dimensions (candle `dims2()`, `dim(1)`, burn
/// `dims()`, tch `size()`): a subset of the metadata methods, without element counts or a
/// collection's `len`.
const SHAPE_METHODS: &[&str] =
    &["shape", "dims", "dim", "dims1", "dims2", "dims3", "dims4", "dims5", "size", "size1", "size2", "size3", "size4"];

/// Whether a method reads a tensor's extent along its dimensions (`for i in 0..x.dim(1)?` walks
/// an input's length).
pub fn is_shape_method(name: &str) -> bool {
    SHAPE_METHODS.contains(&name)
}

/// Names of a model's context length (`cfg.block_size`, `self.n_ctx`, `config.max_seq_len`): a
/// generation loop up to it steps no more tokens than one training pass over a block holds.
const CONTEXT_LENGTH_NAMES: &[&str] = &[
    "block_size",
    "context_length",
    "context_len",
    "context_size",
    "ctx_len",
    "n_ctx",
    "max_seq_len",
    "max_position_embeddings",
];

/// Whether a name is a model's context length (see `CONTEXT_LENGTH_NAMES`).
pub fn is_context_length_name(name: &str) -> bool {
    CONTEXT_LENGTH_NAMES.contains(&name)
}

/// True for calls that run backward or step an optimizer in any supported framework.
///
/// Used by `#[mem_guard]` to find the training loop.
pub fn is_training_call(method: &str) -> bool {
    REGISTRY
        .iter()
        .any(|s| [s.backward, s.backward_step, s.step].iter().any(|calls| calls.iter().any(|c| c.name == method)))
}

/// How much one `use` of a framework counts against one qualified path.
const USE_WEIGHT: usize = 10;

/// Finds the framework a file uses from its `use` declarations and qualified paths.
///
/// Returns the framework named most often; ties go to the first in [`REGISTRY`].
pub fn detect(file: &syn::File) -> Option<Framework> {
    detect_in(REGISTRY, file)
}

/// Whether a `use` tree imports a `Tensor` from an external crate that is none of the registered
/// frameworks (`use flame_core::{Tensor, Result};`). Paths from `crate`, `self`, `super` and the
/// standard library do not count (a crate may re-export a framework's `Tensor`).
pub fn imports_foreign_tensor(tree: &syn::UseTree) -> bool {
    fn names_tensor(tree: &syn::UseTree) -> bool {
        match tree {
            syn::UseTree::Path(p) => names_tensor(&p.tree),
            syn::UseTree::Name(n) => n.ident == "Tensor",
            syn::UseTree::Rename(r) => r.ident == "Tensor",
            syn::UseTree::Group(g) => g.items.iter().any(names_tensor),
            syn::UseTree::Glob(_) => false,
        }
    }
    let syn::UseTree::Path(p) = tree else { return false };
    let root = p.ident.to_string().replace('-', "_");
    let local = ["crate", "self", "super", "std", "core", "alloc"].contains(&root.as_str());
    let framework = REGISTRY.iter().any(|s| s.crate_names.contains(&root.as_str()));
    !local && !framework && names_tensor(&p.tree)
}

/// [`detect`] among the frameworks of `registry`.
pub fn detect_in(registry: &[&'static Spec], file: &syn::File) -> Option<Framework> {
    use syn::visit::Visit;

    struct Roots<'r> {
        registry: &'r [&'static Spec],
        counts: Vec<usize>,
    }
    impl Roots<'_> {
        fn count(&mut self, ident: &syn::Ident) {
            self.count_n(ident, 1);
        }
        /// Framework names below the root of a `use` path.
        fn nested(&mut self, tree: &syn::UseTree) {
            match tree {
                syn::UseTree::Path(p) => {
                    self.count_n(&p.ident, USE_WEIGHT);
                    self.nested(&p.tree);
                }
                syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.nested(t)),
                _ => {}
            }
        }
        fn count_n(&mut self, ident: &syn::Ident, n: usize) {
            // An identifier never holds `-` (crate names are written with `_` in code).
            let name = ident.to_string();
            if let Some(i) = self.registry.iter().position(|s| s.crate_names.contains(&name.as_str())) {
                self.counts[i] += n;
            }
        }
    }
    impl<'ast> Visit<'ast> for Roots<'_> {
        fn visit_use_tree(&mut self, tree: &'ast syn::UseTree) {
            // An import says more about the file's framework than a stray qualified call
            // (`tch::utils::has_cuda()` in a burn program choosing its backend).
            match tree {
                syn::UseTree::Path(p) => {
                    self.count_n(&p.ident, USE_WEIGHT);
                    // A framework re-exported by another crate (`use amfiteatr_rl::tch::{nn,
                    // Tensor};`): its name inside the path counts as an import of it.
                    self.nested(&p.tree);
                }
                syn::UseTree::Name(n) => self.count_n(&n.ident, USE_WEIGHT),
                syn::UseTree::Rename(r) => self.count_n(&r.ident, USE_WEIGHT),
                syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.visit_use_tree(t)),
                syn::UseTree::Glob(_) => {}
            }
        }
        fn visit_path(&mut self, path: &'ast syn::Path) {
            if path.segments.len() > 1 {
                self.count(&path.segments[0].ident);
            }
            syn::visit::visit_path(self, path);
        }
        fn visit_item_extern_crate(&mut self, item: &'ast syn::ItemExternCrate) {
            self.count(&item.ident);
        }
    }

    let mut roots = Roots { registry, counts: vec![0; registry.len()] };
    roots.visit_file(file);
    let best = (0..registry.len()).max_by_key(|&i| (roots.counts[i], std::cmp::Reverse(i)))?;
    (roots.counts[best] > 0).then(|| Framework(registry[best]))
}

/// Methods that never record an autodiff node (burn): comparisons and integer/bool conversions
/// leave the graph, and iterator, `Option` and formatting helpers are not tensor operations.
pub fn is_untracked_method(name: &str) -> bool {
    const UNTRACKED: &[&str] = &[
        "equal",
        "equal_elem",
        "not_equal",
        "not_equal_elem",
        "greater",
        "greater_elem",
        "greater_equal",
        "greater_equal_elem",
        "lower",
        "lower_elem",
        "lower_equal",
        "lower_equal_elem",
        "is_nan",
        "is_inf",
        "eq",
        "ne",
        "ge",
        "gt",
        "le",
        "lt",
        "int",
        "bool",
        "len",
        "is_empty",
        "iter",
        "into_iter",
        "enumerate",
        "zip",
        "filter",
        "collect",
        "map",
        "ok",
        "ok_or",
        "unwrap_or",
        "and_then",
        "to_string",
        "fmt",
    ];
    UNTRACKED.contains(&name) || is_metadata_method(name) || is_index_method(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_reads_are_metadata() {
        assert!(SHAPE_METHODS.iter().all(|m| is_metadata_method(m)), "every shape read records no graph");
        assert!(!is_shape_method("len"), "a collection's length is not a tensor dimension");
    }

    #[test]
    fn crate_names_map_to_frameworks() {
        assert_eq!(Framework::from_crate_name("candle-core"), Framework::from_name("candle"));
        assert_eq!(Framework::from_crate_name("candle_nn"), Some(Framework::Candle));
        assert_eq!(Framework::from_crate_name("tch"), Some(Framework::Tch));
        assert_eq!(Framework::from_crate_name("burn"), Some(Framework::Burn));
        assert_eq!(Framework::from_crate_name("dfdx"), Some(Framework::Dfdx));
        assert_eq!(Framework::from_crate_name("serde"), None);
    }

    #[test]
    fn detects_from_use_paths_and_qualified_calls() {
        let f = syn::parse_file("use candle_core::{Tensor, Device}; fn f() {}").unwrap();
        assert_eq!(detect(&f), Some(Framework::Candle));
        let f = syn::parse_file("fn f() { let _g = tch::no_grad_guard(); }").unwrap();
        assert_eq!(detect(&f), Some(Framework::Tch));
        let f = syn::parse_file("use std::rc::Rc; fn f() {}").unwrap();
        assert_eq!(detect(&f), None);
        let f = syn::parse_file(
            "use burn::tensor::Tensor; fn d() -> bool { tch::utils::has_cuda() || tch::utils::has_mps() }",
        )
        .unwrap();
        assert_eq!(detect(&f), Some(Framework::Burn), "imports outweigh stray qualified calls");
        // A framework re-exported by a library crate.
        let f = syn::parse_file("use amfiteatr_rl::tch::{nn, Tensor}; use amfiteatr_rl::tch::nn::VarStore;").unwrap();
        assert_eq!(detect(&f), Some(Framework::Tch));
    }

    #[test]
    fn tells_foreign_tensor_imports() {
        let tree = |t: &str| match syn::parse_str::<syn::Item>(t).unwrap() {
            syn::Item::Use(u) => u.tree,
            _ => unreachable!(),
        };
        assert!(imports_foreign_tensor(&tree("use flame_core::{Result, Tensor};")));
        assert!(imports_foreign_tensor(&tree("use ndarray_ext::tensor::Tensor as T;")));
        assert!(!imports_foreign_tensor(&tree("use candle_core::{Tensor, Device};")));
        assert!(!imports_foreign_tensor(&tree("use crate::Tensor;")));
        assert!(!imports_foreign_tensor(&tree("use flame_core::Parameter;")));
    }

    #[test]
    fn step_is_told_apart_by_arity() {
        let tch = Framework::Tch.spec();
        assert!(tch.is_step("step", 0));
        assert!(!tch.is_step("step", 1), "env.step(action) is not an optimizer step");
    }
}
