//! The one traversal: turns each function body of a parsed file into a [`FnModel`].
//!
//! It walks statements in program order, keeping an environment of binding versions (SSA-like:
//! a `let` or assignment makes a new version; `if`/`match` arms merge; a loop's end flows back
//! into the versions live at its start). Rules never walk the AST; they read the graphs.

use petgraph::graph::{DiGraph, NodeIndex};
use proc_macro2::Span as PmSpan;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Block, Expr, Pat, Stmt};

use super::graph::{
    Binding, BindingId, BindingKind, CallKind, CallSite, Cleared, Edge, FnModel, LoopId, LoopScope, Node, NodeKind,
    Producer, Span, Store, Taint, TrainingCall, TrainingCallKind,
};
use super::link::CrateNames;
use super::rust;
use crate::frameworks::{self, Spec, common};

/// Deeper expressions than this are not followed (generated code can nest thousands deep).
/// Whether a macro's tokens hold a call or a method call (a parenthesised group after an
/// identifier, or after the `>` of a turbofish): only then are its arguments worth parsing.
fn runs_code(tokens: &proc_macro2::TokenStream) -> bool {
    let mut callee = false;
    for t in tokens.clone() {
        match t {
            proc_macro2::TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Parenthesis && callee => {
                return true;
            }
            proc_macro2::TokenTree::Group(g) if runs_code(&g.stream()) => return true,
            proc_macro2::TokenTree::Ident(_) => callee = true,
            proc_macro2::TokenTree::Punct(p) => callee = p.as_char() == '>',
            _ => callee = false,
        }
    }
    false
}

/// A path segment's name: a string literal (`"fc"`), `format!(..)`, or a reference to either.
fn names_a_path_segment(e: &Expr) -> bool {
    match e {
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(_), .. }) => true,
        Expr::Macro(m) => m.mac.path.is_ident("format"),
        Expr::Reference(r) => names_a_path_segment(&r.expr),
        Expr::Paren(p) => names_a_path_segment(&p.expr),
        _ => false,
    }
}

/// Macros whose arguments after the format string are expressions that run (std and the
/// `log`/`tracing` macros): their calls are calls of the function.
const FORMAT_MACROS: &[&str] = &[
    "println", "print", "eprintln", "eprint", "format", "write", "writeln", "panic", "info", "debug", "warn", "error",
    "trace",
];

const MAX_DEPTH: usize = 256;

/// The functions and methods with a body among `items` (inline modules included; functions
/// nested in bodies are not counted).
fn fn_count(items: &[syn::Item]) -> usize {
    items
        .iter()
        .map(|item| match item {
            syn::Item::Fn(_) => 1,
            syn::Item::Impl(i) => i.items.iter().filter(|i| matches!(i, syn::ImplItem::Fn(_))).count(),
            syn::Item::Trait(t) => {
                t.items.iter().filter(|i| matches!(i, syn::TraitItem::Fn(f) if f.default.is_some())).count()
            }
            syn::Item::Mod(m) => m.content.as_ref().map_or(0, |(_, items)| fn_count(items)),
            _ => 0,
        })
        .sum()
}

/// Builds the graphs of every function, method and nested function in `file`.
///
/// `offset` is added to every byte position (the file text may have had a prefix removed).
/// `crate_fns` holds names found in the crate's text (see [`super::graph::crate_names`]): only
/// calls to its functions are recorded as call sites, and fields declared only with host types
/// never carry a graph.
pub fn function_graphs(
    file: &syn::File,
    spec: &'static Spec,
    known: bool,
    offset: usize,
    crate_fns: &CrateNames,
) -> Vec<FnModel> {
    // A model is large: room for every function up front, so the vector never moves them.
    let mut out = Vec::with_capacity(fn_count(&file.items));
    let mut items = Items {
        impl_autodiff: false,
        impl_generic: false,
        trait_impl: false,
        impl_mapper: false,
        iterator_next: false,
        spec,
        known,
        offset,
        crate_fns,
        aliases: Vec::new(),
        impl_params: Vec::new(),
        in_test: false,
        out: &mut out,
    };
    items.scan_aliases(&file.items);
    for item in &file.items {
        items.item(item, None);
    }
    out
}

struct Items<'o> {
    /// The `impl` being walked has an autodiff backend in its generics (burn).
    impl_autodiff: bool,
    /// The `impl` being walked has type parameters.
    impl_generic: bool,
    /// The function being walked is in `impl Trait for Type`.
    trait_impl: bool,
    /// That trait is the framework's module mapper ([`Spec::param_mapper`]).
    impl_mapper: bool,
    /// The function being walked is `Iterator::next`: its body is one iteration of whatever
    /// loop drives the iterator (`for step in runner.steps().take(n)`), walked as a loop.
    iterator_next: bool,
    spec: &'static Spec,
    known: bool,
    offset: usize,
    crate_fns: &'o CrateNames,
    /// `type X = ..;` aliases of the modules being walked (innermost last), with whether each
    /// names an autodiff backend: a module's own alias wins over a crate-wide one of that name.
    aliases: Vec<(String, bool)>,
    /// The type parameters of the `impl` being walked, when there are module aliases to shadow.
    impl_params: Vec<String>,
    /// Walking test code (a `#[cfg(test)]` module or item).
    in_test: bool,
    out: &'o mut Vec<FnModel>,
}

impl Items<'_> {
    /// The backend named in types says whether code is autodiff (burn).
    fn autodiff_by_type(&self) -> bool {
        self.known && self.spec.autodiff_by_type
    }

    /// burn: whether `ty` is a struct of the crate that holds plain tensors only (see
    /// `CrateNames::paramless_structs`).
    fn paramless(&self, ty: Option<&str>) -> bool {
        self.autodiff_by_type() && ty.is_some_and(|t| self.crate_fns.paramless_structs.contains(t))
    }

    /// Records a module's non-generic type aliases before its items are walked (an alias is
    /// visible in its whole module).
    fn scan_aliases(&mut self, items: &[syn::Item]) {
        for item in items {
            // `use backend::{Backend, Device};` importing the crate's own `type Backend = ..;`
            // (see `CrateNames::backend_alias`), not burn's trait.
            if let syn::Item::Use(u) = item
                && let Some(autodiff) = self.crate_fns.backend_alias
                && imports_own_backend(&u.tree, self.spec)
            {
                self.aliases.push(("Backend".to_string(), autodiff));
            }
            if let syn::Item::Type(alias) = item
                && alias.generics.params.is_empty()
            {
                use syn::visit::Visit;
                let mut v = AutodiffNames::new(self.crate_fns).with(&self.aliases);
                v.visit_type(&alias.ty);
                self.aliases.push((alias.ident.to_string(), v.found));
            }
        }
    }

    fn item(&mut self, item: &syn::Item, owner: Option<&str>) {
        let outer_test = self.in_test;
        self.in_test |= item_attrs(item).iter().any(is_cfg_test);
        self.item_inner(item, owner);
        self.in_test = outer_test;
    }

    fn item_inner(&mut self, item: &syn::Item, owner: Option<&str>) {
        match item {
            syn::Item::Fn(f) => {
                let at = self.out.len();
                self.function(&f.sig, &f.block, owner, None);
                let test = self.in_test || f.attrs.iter().any(is_test_attr);
                if let Some(g) = self.out.get_mut(at) {
                    g.is_test = test;
                    g.registered = f.attrs.iter().any(registers);
                }
            }
            syn::Item::Impl(imp) => {
                let owner = type_name(&imp.self_ty);
                let outer = (self.impl_autodiff, self.impl_generic);
                self.impl_autodiff =
                    self.autodiff_by_type() && mentions_autodiff(&imp.generics, self.crate_fns, &self.aliases);
                self.impl_generic = imp.generics.type_params().next().is_some();
                let outer_params = std::mem::take(&mut self.impl_params);
                if !self.aliases.is_empty() {
                    self.impl_params = imp.generics.type_params().map(|p| p.ident.to_string()).collect();
                }
                let mapper = self.known
                    && imp
                        .trait_
                        .as_ref()
                        .and_then(|t| t.0.segments.last())
                        .is_some_and(|s| self.spec.param_mapper.is_some_and(|(name, _)| s.ident == name));
                let iterator =
                    imp.trait_.as_ref().and_then(|t| t.0.segments.last()).is_some_and(|s| s.ident == "Iterator");
                for it in &imp.items {
                    if let syn::ImplItem::Fn(f) = it {
                        self.trait_impl = imp.trait_.is_some();
                        self.impl_mapper = mapper;
                        self.iterator_next = iterator && f.sig.ident == "next";
                        let at = self.out.len();
                        self.function(&f.sig, &f.block, owner.as_deref(), Some(&imp.generics));
                        let test = self.in_test || f.attrs.iter().any(|a| is_test_attr(a) || is_cfg_test(a));
                        if let Some(g) = self.out.get_mut(at) {
                            g.is_test = test;
                            g.registered = f.attrs.iter().any(registers);
                        }
                        self.trait_impl = false;
                        self.impl_mapper = false;
                        self.iterator_next = false;
                    }
                }
                (self.impl_autodiff, self.impl_generic) = outer;
                self.impl_params = outer_params;
            }
            syn::Item::Trait(tr) => {
                let owner = tr.ident.to_string();
                for it in &tr.items {
                    if let syn::TraitItem::Fn(f) = it
                        && let Some(block) = &f.default
                    {
                        // `function` pushes this function's graph first, then nested items'.
                        let at = self.out.len();
                        self.function(&f.sig, block, Some(&owner), Some(&tr.generics));
                        if let Some(g) = self.out.get_mut(at) {
                            g.trait_default = true;
                        }
                    }
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    let mark = self.aliases.len();
                    self.scan_aliases(items);
                    for it in items {
                        self.item(it, None);
                    }
                    self.aliases.truncate(mark);
                }
            }
            _ => {}
        }
    }

    /// `outer_generics`: those of the `impl` or `trait` the function is in.
    fn function(
        &mut self,
        sig: &syn::Signature,
        block: &Block,
        owner: Option<&str>,
        outer_generics: Option<&syn::Generics>,
    ) {
        let sig_span = {
            let start = byte_range(sig.fn_token.span, self.offset).start;
            start..byte_range(sig.paren_token.span.close(), self.offset).end
        };
        // The module's aliases, with the impl's and the function's type parameters over them
        // (`fn f<B: Backend>` inside a module with `type B = Autodiff<..>;` means its own `B`).
        let shadowed: Vec<(String, bool)>;
        let aliased = |name: &str| self.aliases.iter().any(|(a, _)| a == name);
        let shadows = !self.aliases.is_empty()
            && (self.impl_params.iter().any(|p| aliased(p))
                || sig.generics.type_params().any(|p| aliased(&p.ident.to_string())));
        let aliases: &[(String, bool)] = if shadows {
            let params =
                self.impl_params.iter().cloned().chain(sig.generics.type_params().map(|p| p.ident.to_string()));
            shadowed = self.aliases.iter().cloned().chain(params.map(|p| (p, false))).collect();
            &shadowed
        } else {
            &self.aliases
        };
        let mut b = Builder::new(sig_span, self.spec, self.known, self.offset);
        b.crate_fns = self.crate_fns;
        b.generics = [Some(&sig.generics), outer_generics];
        b.module_aliases = aliases;
        b.g.ident = sig.ident.to_string();
        b.g.returns_plain = match &sig.output {
            syn::ReturnType::Default => true,
            syn::ReturnType::Type(_, ty) => type_is_plain(ty),
        };
        b.g.returns_tensor = matches!(&sig.output, syn::ReturnType::Type(_, ty) if type_is_tensor(ty));
        // Also through the crate's structs of host fields (`Vec<Example>` with `struct Example {
        // board: Board, pi: [f32; 9], z: f32 }`).
        b.g.returns_host_data = b.g.returns_plain
            || (!b.g.returns_tensor
                && !self.crate_fns.host_structs.is_empty()
                && matches!(&sig.output, syn::ReturnType::Type(_, ty)
                    if type_is_plain_with(ty, &|n: &str| self.crate_fns.host_structs.contains(n))));
        b.g.returns_tensors = b.g.returns_tensor;
        b.g.returns_tensor_parts = b.g.returns_tensor;
        if !b.g.returns_tensor
            && !b.g.returns_host_data
            && let syn::ReturnType::Type(_, ty) = &sig.output
        {
            // A struct that holds tensors as data (`-> LSTMState`, `-> Carry` with `struct
            // Carry { h: Tensor, c: Tensor }`) hands them on as a tensor does.
            let (tensor, data, tuple, other_tuple) = tensor_parts(ty, &|id| {
                // Compared without allocating: most crates have no such struct, every
                // framework a couple of state types.
                let structs = &self.crate_fns.tensor_structs;
                self.spec.state_types.iter().any(|t| id == t)
                    || (!structs.is_empty() && structs.iter().any(|s| id == s))
            });
            b.g.returns_tensors = data && !tuple;
            b.g.returns_tensor_parts = tensor && !other_tuple;
        }
        if let Some((fields, batch)) = size_gate_fields(sig, block) {
            b.g.size_gate = true;
            b.g.batch_gate = batch;
            b.g.gate_fields = fields;
        } else {
            b.g.gate_via = option_passed_on(sig, block);
        }
        b.g.returns_struct = returns_struct_literal(block);
        b.g.autodiff = self.impl_autodiff
            || (self.autodiff_by_type() && signature_mentions_autodiff(sig, self.crate_fns, aliases));
        b.g.generic = self.impl_generic || sig.generics.type_params().next().is_some();
        b.g.owner = owner.map(str::to_string);
        b.g.owner_host = owner.is_some_and(|o| self.crate_fns.host_structs.contains(o));
        // burn: a method of a struct of plain tensors runs forwards that record no graph of their
        // own (`Gpt2LinearLayer::forward` over constant weights).
        if self.paramless(owner) {
            b.g.autodiff = false;
        }
        b.g.trait_impl = std::mem::take(&mut self.trait_impl);
        if let Some(method) = self.spec.autodiff_device_method
            && self.autodiff_by_type()
            && self.crate_fns.makes_autodiff_device
            && crate::spans::text_calls_method(
                crate::spans::byte_range(block.brace_token.span.open()).start
                    ..crate::spans::byte_range(block.brace_token.span.close()).end,
                method,
            )
        {
            b.devices = device_names(block, method);
        }
        let has_receiver = matches!(sig.inputs.first(), Some(syn::FnArg::Receiver(_)));
        let typed_params = sig.inputs.iter().filter(|i| matches!(i, syn::FnArg::Typed(_))).count();
        for input in &sig.inputs {
            match input {
                syn::FnArg::Receiver(_) => b.has_self = true,
                syn::FnArg::Typed(pt) => {
                    let mut names = Vec::new();
                    pat_idents(&pt.pat, &mut names);
                    // `#[cfg(feature = "a")] model: &A, #[cfg(feature = "b")] model: &B`: one
                    // parameter in any build, so calls pass one argument for both.
                    let alternative = pt.attrs.iter().any(|a| a.path().is_ident("cfg"))
                        && names
                            .iter()
                            .all(|n| b.g.bindings.iter().any(|p| p.kind == BindingKind::Param && **n == p.name));
                    if alternative && !names.is_empty() {
                        continue;
                    }
                    let mut first = None;
                    // `agent: &mut A` with `A: Agent<B>`: a type parameter names no type of the
                    // crate, so its methods are those of every impl of its traits.
                    let ty = type_name(&pt.ty).filter(|t| {
                        !sig.generics
                            .type_params()
                            .chain(outer_generics.into_iter().flat_map(|g| g.type_params()))
                            .any(|p| p.ident == t)
                    });
                    // `model: &Lm<B::InnerBackend>`: the type says the model is untracked (only
                    // where the backend is autodiff: `InnerBackend` is the autodiff trait's).
                    let inner = b.g.autodiff
                        && self.autodiff_by_type()
                        && (mentions_inner_backend(&pt.ty, self.spec) || self.paramless(type_name(&pt.ty).as_deref()));
                    // `dev: &B::Device`, `steps: usize`: a parameter that holds no model. Asked
                    // only of constructors (no `self`) with a parameter beside the model.
                    if !has_receiver && typed_params > 1 && holds_no_model(&pt.ty) {
                        b.g.plain_params |= 1u64.checked_shl(b.g.params.len() as u32).unwrap_or(0);
                    }
                    // `mover: &mut dyn Agent`, `agent: &mut impl Agent`: whichever type the
                    // caller hands, its backend included.
                    // `agent: &mut A` with `A` a type parameter of the function or its impl: the
                    // same.
                    let type_param = ty.is_none()
                        && type_name(&pt.ty).is_some_and(|t| {
                            sig.generics
                                .type_params()
                                .chain(outer_generics.into_iter().flat_map(|g| g.type_params()))
                                .any(|p| p.ident == t)
                        });
                    let dyn_trait = type_param || trait_object_of(&pt.ty);
                    b.g.generic |= dyn_trait;
                    for ident in names {
                        let span = b.span(ident.span());
                        let v = b.declare(ident.to_string(), BindingKind::Param, span, None);
                        if let Some(binding) = b.g.bindings.last_mut() {
                            binding.ty.clone_from(&ty);
                        }
                        if dyn_trait {
                            b.dyn_params.push(b.g.bindings.len() - 1);
                        }
                        if inner {
                            b.g.inert_seeds.push(v);
                        }
                        // `w: &Var` (candle): a trainable variable, tracked in every operation;
                        // `vm: &VarMap`, a store of them.
                        // `named: &[(String, Var)]`, `vars: &HashMap<String, Var>`: variables too.
                        if self.known
                            && ([self.spec.variable_type, self.spec.variable_store_type]
                                .into_iter()
                                .flatten()
                                .any(|t| ty.as_deref() == Some(t))
                                || self.spec.variable_type.is_some_and(|t| mentions_type(&pt.ty, &[t])))
                        {
                            b.params.push(v);
                        }
                        if self.known
                            && self.spec.variable_type.is_some_and(|t| element_type_name(&pt.ty).as_deref() == Some(t))
                        {
                            b.variable_lists.push(ident.to_string());
                        }
                        first.get_or_insert(v);
                    }
                    b.g.params.push(first);
                }
            }
        }
        b.g.has_self = b.has_self;
        if b.has_self {
            b.declare_self_fields(block);
        }
        if b.g.framework_known && b.g.spec.explicit_grads {
            b.grad_stores = GradStores::scan(block, b.g.spec);
        }
        // The framework's module mapper (burn `impl ModuleMapper<B> for SoftUpdater { fn
        // map_float(..) }`): the returned value replaces each parameter's value.
        let mapper = std::mem::take(&mut self.impl_mapper)
            && b.g.framework_known
            && b.g.spec.param_mapper.is_some_and(|(_, method)| sig.ident == method);
        let mapper_params: Vec<NodeIndex> =
            if mapper { b.g.params.iter().flatten().copied().collect() } else { Vec::new() };
        let tail = if std::mem::take(&mut self.iterator_next) {
            let mut tail = None;
            let header = b.g.sig.clone();
            b.looped(header, |s| tail = Some(s.block(block)));
            tail.unwrap_or_else(Val::plain)
        } else {
            // Only a function whose calls a `let` may destructure (see `CrateNames::tuple_arity`).
            if self.crate_fns.tuple_arity.contains_key(&b.g.ident) {
                b.ret_tuples = returned_tuples(sig, block);
            }
            if !b.ret_tuples.is_empty() {
                b.g.return_elems = vec![Vec::new(); declared_tuple_arity(&sig.output).unwrap_or(0)];
            }
            b.block(block)
        };
        if !mapper_params.is_empty() {
            b.mapped_value(block, &tail, mapper_params);
        }
        b.returned(tail);
        let nested = std::mem::take(&mut b.nested_items);
        self.out.push(b.finish());
        for item in nested {
            self.item(&item, owner);
        }
    }
}

/// The abstract value of an expression: what it reads and how it was produced.
#[derive(Debug, Clone)]
struct Val {
    reads: Reads,
    producer: Producer,
    /// The op-ness of a derived value: tensor operations on parameters produce a graph, moves do not.
    op: bool,
}

/// What a value reads: one or two nodes mostly, kept inline.
type Reads = smallvec::SmallVec<[NodeIndex; 2]>;

impl Val {
    fn plain() -> Self {
        Self { reads: Reads::new(), producer: Producer::Plain, op: false }
    }
}

struct Builder<'c> {
    g: FnModel,
    /// Names of the crate's functions: calls to other names are not call sites.
    crate_fns: &'c CrateNames,
    /// Counters of the enclosing loops (`step += 1` in the body, `for episode in 0..n`), by
    /// their last name segment: a test of one against a threshold is a warm-up.
    counters: Vec<String>,
    /// The generics of the function and of its `impl` or `trait`: their type parameters name
    /// no type of the crate (`M::soft_update(..)` with `M: DqnModel<B>` reaches every impl).
    generics: [Option<&'c syn::Generics>; 2],
    offset: usize,
    /// Visible bindings, innermost last: (binding, current version).
    env: Vec<(BindingId, NodeIndex)>,
    loop_stack: Vec<LoopId>,
    /// The closures around here, innermost last: index in `g.closures`, and the length of `env`
    /// before its parameters and after them.
    closure_stack: Vec<(usize, usize, usize)>,
    /// For each closure being walked, the closure its body ends with (null: none), compared by
    /// address to tell a returned closure from one that is run.
    closure_tails: Vec<*const syn::ExprClosure>,
    /// The tuple literals the function returns, compared by address (see
    /// `FnModel::return_elems`); empty when some return is not written as one.
    ret_tuples: Vec<*const syn::ExprTuple>,
    /// The value the next closure walked gets as its first parameter (`map_with(model, |m, i|
    /// ..)`), taken by that closure.
    closure_state: Option<Val>,
    /// The next closure walked is handed each trait object of a collection (`self.callbacks
    /// .iter_mut().try_for_each(|c| c.on_step(&ctx))`), and the collection when it is walked
    /// mutably: its input is such an element, as a `for` loop's pattern is (`dyn_elements`).
    closure_dyn_walk: Option<Option<BindingId>>,
    /// Locals collected from a closure that builds each element (`let mut seats: Vec<_> =
    /// seeds.iter().map(|&s| { let agent = Dqn::new(..); (s, agent, env) }).collect();`): the type
    /// of each element, or of each part of a tuple element, where the text says it. A `for` loop
    /// over such a local gives its pattern those types (`for (s, agent, env) in seats.iter_mut()`).
    collected_types: Vec<(BindingId, Vec<Option<String>>)>,
    /// burn 0.22, where a device carries autodiff: the function's locals bound to an autodiff
    /// device (`let ad = device.autodiff();`) and to a plain one (`device` of that call,
    /// `let device = Device::default();`). A model built with only plain ones records no graph.
    devices: Option<(Vec<String>, Vec<String>)>,
    /// tch: locals bound to a tensor's gradient (`let mut g = v.grad();`), whose `zero_()`
    /// clears it.
    grad_locals: Vec<String>,
    /// Local bindings of a closure (`let update = |..| { ..backward.. };`): (binding, closure).
    closure_bindings: Vec<(BindingId, usize)>,
    /// Loop bindings that are elements of a `self` field (`block` in `for block in
    /// self.blocks.iter_mut()`), with the field's name: a call on one is a call on that field.
    element_of: Vec<(BindingId, String)>,
    /// First versions of bindings declared by a `Some(..)` pattern: what it took out of an
    /// `Option`.
    unwrapped: std::collections::HashSet<NodeIndex>,
    /// Depth of arguments of lazy initialisers (`unwrap_or_else`, `get_or_insert_with`).
    lazy_init: usize,
    /// Fields of `self` declared as tensors of the inner backend (see
    /// `CrateNames::inner_tensor_fields`).
    inner_tensor_bindings: Vec<BindingId>,
    /// Branch ids from the function body to here (if/match arms, loop bodies, closures).
    path: Vec<usize>,
    next_branch: usize,
    /// `if flag { .. }` blocks on a local `bool`: the binding, its version, the block's branch id
    /// and the path around the `if` (see `FnModel::branch_aliases`).
    bool_ifs: Vec<(BindingId, NodeIndex, usize, Vec<usize>)>,
    /// candle: forward passes of models the crate does not define: (call, loop, receiver node,
    /// the model's binding, a cache lent to it as `&mut`). See `finish`.
    library_forwards: Vec<LibraryForward>,
    /// Bindings of a `for` over a local's elements by `&mut` (`for s in states.iter_mut()`):
    /// (element, the local). A write through the element (`*s = ..`) writes into the local.
    mut_elements: Vec<(BindingId, BindingId)>,
    /// Writes through such an element (`*s = s.detach()`): the local, the value written and the
    /// branch path of the write. One made on every path of the loop's body replaces every
    /// element: after the loop the local holds only what was written.
    element_writes: Vec<(BindingId, NodeIndex, Vec<usize>)>,
    /// Resets through such an element (`for c in self.cells.iter_mut() { c.reset(); }`): the
    /// local or field, and the branch path of the reset.
    element_resets: Vec<(BindingId, Vec<usize>)>,
    /// Index bindings of a `for` over every index of a local or field (`for i in 0..hs.len()`):
    /// (index, the local). A write of `hs[i]` is a write through an element.
    index_walks: Vec<(BindingId, BindingId)>,
    /// Locals bound to the current element of a sequence a loop walks (see
    /// `element_of_sequence`).
    sequence_elements: Vec<BindingId>,
    /// Locals made as a disabled cache (`Cache::new(false, ..)`).
    disabled_caches: Vec<BindingId>,
    no_grad: usize,
    has_self: bool,
    depth: usize,
    /// Items (nested `fn`s, `impl`s) found in the body, linted as functions of their own.
    nested_items: Vec<syn::Item>,
    /// Value nodes produced by parameter constructors (`Var::new`): ops on them carry a graph.
    params: Vec<NodeIndex>,
    /// Parameters that hold trainable variables (`vars: &[Var]`, candle): an element a loop draws
    /// from one is a variable (`for (s, v) in shadows.iter_mut().zip(vars)`).
    variable_lists: Vec<String>,
    /// Parameters declared as a trait object or `impl Trait` (`mover: &mut dyn Agent`): see
    /// `CallSite::receiver_dyn`.
    dyn_params: Vec<BindingId>,
    /// Loop bindings over a collection of trait objects (`for m in self.metrics.iter_mut()` with
    /// `metrics: Vec<Box<dyn Metric>>`): the loop calls every impl the collection holds.
    dyn_elements: Vec<BindingId>,
    /// Locals declared as such a collection (`let mut meters: Vec<Box<dyn Metric>> = ..`).
    dyn_collections: Vec<BindingId>,
    /// Per loop level (the function body first): the node count and span of the last backward
    /// call made at that level so far. Nodes with lower indices existed before that backward.
    backward_marks: Vec<Option<(usize, Span)>>,
    /// Type aliases in scope: the module's, then `type Backend = Autodiff<Wgpu>;` declared in
    /// this function's body (the crate-wide alias list leaves names as generic as `Backend` out),
    /// with whether each names an autodiff backend.
    aliases: Vec<(String, bool)>,
    /// The aliases of the modules around the function (see `Items::aliases`), looked up after
    /// `aliases`.
    module_aliases: &'c [(String, bool)],
    /// Fields compared by the early exits passed so far in the enclosing blocks
    /// (`if self.step < self.config.learning_starts { return random }`).
    guard_fields: Vec<String>,
    /// Locals bound so far, with the count an immutable one fixes (`let gen_tokens = 15;` gives
    /// 15, `let sentences = [a, b, c];` gives 3; `None` for any other binding of the name): the
    /// last of a name is the one in scope, near enough for loop bounds.
    local_counts: Vec<(String, Option<u64>)>,
    /// Locals bound to a tensor's shape (`let (b, t) = tgt.dims2()?;`, candle): a loop up to
    /// one walks a dimension of its input.
    dim_locals: Vec<String>,
    /// Locals bound to a value taken off the autodiff side (`let w = online.weight.val().inner();`,
    /// burn): a parameter blended with one lives on the inner backend.
    inner_locals: Vec<String>,
    /// Inside a branch that leaves the function (`if !loss.is_finite() { ..; bail!(..) }`): it
    /// runs at most once per call, so what it does after a backward is not done every step.
    leaving: usize,
    /// The frameworks whose names count here: the file's, or every registered one when it is
    /// not known.
    specs: std::sync::Arc<[&'static Spec]>,
    /// Gradient stores by use (explicit-gradient frameworks): names handed to a tape method,
    /// as such or cloned (`x.trace(zeroed.clone())`), and names assigned anywhere in the body.
    grad_stores: GradStores,
}

/// What a pre-scan of a function body says about its gradient stores (see
/// [`Builder::grad_stores`]).
#[derive(Default)]
struct GradStores {
    /// Names passed to a tape method (`trace(grads)`, `traced(zeroed.clone())`).
    traced: std::collections::HashSet<String>,
    /// Names written after their declaration (`grads = loss.backward()`, `g += ..`).
    assigned: std::collections::HashSet<String>,
}

impl GradStores {
    fn scan(block: &Block, spec: &Spec) -> GradStores {
        use syn::visit::Visit;
        struct Scan<'s>(&'s Spec, GradStores);
        impl<'a> Visit<'a> for Scan<'_> {
            fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
                if self.0.tape_methods.contains(&m.method.to_string().as_str()) {
                    for a in &m.args {
                        let mut a = strip_place(a);
                        if let Expr::MethodCall(c) = a
                            && c.args.is_empty()
                            && rust::COPY_METHODS.contains(&c.method.to_string().as_str())
                        {
                            a = strip_place(&c.receiver);
                        }
                        if let Some(key) = place_key(a) {
                            self.1.traced.insert(key);
                        }
                    }
                }
                syn::visit::visit_expr_method_call(self, m);
            }
            fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
                if let Some(key) = place_key(&a.left) {
                    self.1.assigned.insert(key);
                }
                syn::visit::visit_expr_assign(self, a);
            }
            fn visit_expr_binary(&mut self, b: &'a syn::ExprBinary) {
                if let Some(key) = place_key(&b.left)
                    && matches!(b.op, syn::BinOp::AddAssign(_) | syn::BinOp::SubAssign(_))
                {
                    self.1.assigned.insert(key);
                }
                syn::visit::visit_expr_binary(self, b);
            }
        }
        let mut scan = Scan(spec, GradStores::default());
        scan.visit_block(block);
        scan.1
    }
}

fn byte_range(span: PmSpan, offset: usize) -> Span {
    let r = crate::spans::byte_range(span);
    r.start + offset..r.end + offset
}

static NO_FNS: std::sync::LazyLock<CrateNames> = std::sync::LazyLock::new(CrateNames::default);

impl Builder<'_> {
    fn new(sig: Span, spec: &'static Spec, known: bool, offset: usize) -> Self {
        Self {
            g: FnModel {
                sig,
                spec,
                framework_known: known,
                graph: DiGraph::new(),
                bindings: Vec::new(),
                loops: Vec::new(),
                calls: Vec::new(),
                losses: Vec::new(),
                param_values: Vec::new(),
                weight_reads: Vec::new(),
                op_values: Vec::new(),
                host_reads: Vec::new(),
                grad_reads: Vec::new(),
                let_results: Vec::new(),
                ident: String::new(),
                owner: None,
                owner_host: false,
                element_owners: Vec::new(),
                self_cuts: Vec::new(),
                entry_resets: Vec::new(),
                trait_impl: false,
                trait_default: false,
                instance: false,
                ctor_types: Vec::new(),
                has_self: false,
                params: Vec::new(),
                returns: Vec::new(),
                return_elems: Vec::new(),
                graph_cuts: Vec::new(),
                call_sites: Vec::new(),
                seeds: Vec::new(),
                inert_seeds: Vec::new(),
                field_writes: Vec::new(),
                fields_written: Vec::new(),
                apart_fields: None,
                fields_emptied_by_type: None,
                self_fields_returned: Vec::new(),
                cut_chains: Vec::new(),
                autodiff_bound: Vec::new(),
                trainable_seeds: Vec::new(),
                self_fields: Vec::new(),
                forward_sites: Vec::new(),
                state_calls: Vec::new(),
                disabled_caches: Vec::new(),
                resets: Vec::new(),
                named_resets: Vec::new(),
                field_cuts: Vec::new(),
                opaque_calls: Vec::new(),
                guard_locals: Vec::new(),
                guard_places: Vec::new(),
                trainable_from: None,
                self_trainable: false,
                size_wait_branches: Vec::new(),
                brief_wait_branches: Vec::new(),
                gated_branches: Vec::new(),
                size_gate: false,
                batch_gate: false,
                result_backpropagated: false,
                gate_via: Vec::new(),
                returns_struct: false,
                gate_fields: Vec::new(),
                param_gates: Vec::new(),
                value_gates: Vec::new(),
                flag_ifs: Vec::new(),
                presence_ifs: Vec::new(),
                param_calls: Vec::new(),
                branch_writes: Vec::new(),
                branch_paths: Vec::new(),
                plain_params: 0,
                branch_aliases: Vec::new(),
                handed_losses: Vec::new(),
                handed_backward: Vec::new(),
                mapper_uses: Vec::new(),
                rewrites_untracked: false,
                bool_args: Vec::new(),
                vocab_calls: Vec::new(),
                param_rewrites: Vec::new(),
                uses_after_backward: Vec::new(),
                param_ops: 0,
                is_test: false,
                registered: false,
                args_after_backward: Vec::new(),
                cleared: Vec::new(),
                shrunk: Vec::new(),
                resets_self: false,
                emptied_by_calls: Vec::new(),
                param_reads: Vec::new(),
                additive_nodes: Vec::new(),
                field_pushes: Vec::new(),
                copies: None,
                autodiff: false,
                autodiff_device: false,
                owner_is_model: false,
                generic: false,
                autodiff_from: Vec::new(),
                autodiff_callers: Vec::new(),
                per_step_from: None,
                per_iteration_from: None,
                untracks_models: false,
                grad_off: false,
                conditional_branches: Vec::new(),
                crate_untracks_models: false,
                may_run_backward: false,
                returns_plain: false,
                returns_host_data: false,
                returns_tensor: false,
                returns_tensors: false,
                returns_tensor_parts: false,
                closures: Vec::new(),
                runs_forward: false,
                var_creations: Vec::new(),
            },
            offset,
            crate_fns: &NO_FNS,
            generics: [None, None],
            counters: Vec::new(),
            env: Vec::new(),
            loop_stack: Vec::new(),
            closure_stack: Vec::new(),
            closure_tails: Vec::new(),
            ret_tuples: Vec::new(),
            closure_state: None,
            closure_dyn_walk: None,
            collected_types: Vec::new(),
            devices: None,
            grad_locals: Vec::new(),
            closure_bindings: Vec::new(),
            element_of: Vec::new(),
            unwrapped: Default::default(),
            lazy_init: 0,
            inner_tensor_bindings: Vec::new(),
            path: Vec::new(),
            next_branch: 0,
            bool_ifs: Vec::new(),
            library_forwards: Vec::new(),
            mut_elements: Vec::new(),
            element_writes: Vec::new(),
            element_resets: Vec::new(),
            index_walks: Vec::new(),
            sequence_elements: Vec::new(),
            disabled_caches: Vec::new(),
            no_grad: 0,
            has_self: false,
            depth: 0,
            nested_items: Vec::new(),
            params: Vec::new(),
            variable_lists: Vec::new(),
            dyn_params: Vec::new(),
            dyn_elements: Vec::new(),
            dyn_collections: Vec::new(),
            backward_marks: vec![None],
            leaving: 0,
            aliases: Vec::new(),
            module_aliases: &[],
            guard_fields: Vec::new(),
            local_counts: Vec::new(),
            dim_locals: Vec::new(),
            inner_locals: Vec::new(),
            specs: if known { std::sync::Arc::from([spec]) } else { frameworks::REGISTRY.into() },
            grad_stores: GradStores::default(),
        }
    }

    fn finish(mut self) -> FnModel {
        self.g.param_values = std::mem::take(&mut self.params);
        // Forward passes of library models that keep a cache: one lent as `&mut cache`, or one the
        // function resets (`model.clear_kv_cache()`). The cache starts afresh on every iteration
        // when it is made or reset in the call's loop.
        for LibraryForward { span, in_loop, receiver, model, lent_cache: lent } in
            std::mem::take(&mut self.library_forwards)
        {
            let state = match lent {
                Some(cache) if self.disabled_caches.contains(&cache) => continue,
                Some(cache) => cache,
                None if self.g.resets.iter().any(|&(b, _)| b == model) => model,
                None => continue,
            };
            let fresh = in_loop.is_some_and(|l| self.g.loop_within(self.g.bindings[state].decl_loop, l))
                || self.g.resets.iter().any(|&(b, l)| b == state && l == in_loop);
            // A cache the caller lends (`cache: &mut Cache`): judged by what the callers hand.
            let lent_param = lent.filter(|&b| self.g.bindings[b].kind == BindingKind::Param).and_then(|b| {
                self.g
                    .params
                    .iter()
                    .position(|p| p.is_some_and(|p| matches!(self.g.graph[p].kind, NodeKind::Version(v) if v == b)))
            });
            self.g.state_calls.push(super::graph::StateCall {
                span,
                in_loop,
                receiver: Some(receiver),
                callee: "forward".to_string(),
                // A library model's cache: kept only while the caller asks for it.
                always: false,
                always_in: Vec::new(),
                kept_at: None,
                kept_by_push: false,
                kept_fields: Vec::new(),
                kept_until_emptied: false,
                fresh_each_iteration: fresh,
                receiver_self: false,
                lent_param,
                receiver_param: None,
            });
        }
        self.g.disabled_caches = std::mem::take(&mut self.disabled_caches);
        self.g.propagate();
        self.g
    }

    fn span(&self, span: PmSpan) -> Span {
        byte_range(span, self.offset)
    }

    /// The span of a node no label shows (intermediate values): none, which costs nothing.
    fn cheap(&self, _e: &Expr) -> Span {
        0..0
    }

    /// The exact span of an expression, from its first to its last token, without printing it
    /// to tokens (`Spanned::span` does, which costs more than parsing the file).
    fn full(&self, e: &Expr) -> Span {
        self.between(first_token(e), last_token(e))
    }

    fn between(&self, first: PmSpan, last: PmSpan) -> Span {
        let (first, last) = (self.span(first), self.span(last));
        first.start..last.end.max(first.start)
    }

    fn cheap_pat(&self, _p: &Pat) -> Span {
        0..0
    }

    fn cur_loop(&self) -> Option<LoopId> {
        self.loop_stack.last().copied()
    }

    fn add_node(&mut self, kind: NodeKind, span: Span) -> NodeIndex {
        let in_loop = self.cur_loop();
        self.g.graph.add_node(Node { kind, span, in_loop, taint: Taint::NONE })
    }

    fn declare(
        &mut self,
        name: String,
        kind: BindingKind,
        decl: Span,
        init: Option<(NodeIndex, Store, Span)>,
    ) -> NodeIndex {
        let id = self.g.bindings.len();
        self.g.bindings.push(Binding {
            name,
            kind,
            decl: decl.clone(),
            decl_loop: self.cur_loop(),
            host: false,
            ty: None,
            ty_guessed: false,
        });
        let v = self.add_node(NodeKind::Version(id), decl);
        if let Some((value, how, span)) = init {
            self.g.graph.add_edge(value, v, Edge::StoredInto { how, span, through: None });
        }
        self.env.push((id, v));
        v
    }

    /// The types a constructor is handed, where their text or bindings say (see
    /// `FnModel::ctor_types`): by field of a struct literal (`Session { agent, env }`), or by
    /// argument of a path call (`Session::new(env, DqnAgent::new(..))`, keyed `#1@new`).
    fn ctor_types(&self, init: &Expr) -> Vec<(String, String)> {
        let e = through_pass_on(init);
        let ty_of = |a: &Expr| -> Option<String> {
            constructed_type(a).or_else(|| match strip_place(a) {
                Expr::Path(p) => {
                    let slot = self.lookup(&p.path.get_ident()?.to_string())?;
                    let b = &self.g.bindings[self.env[slot].0];
                    b.ty.clone().filter(|_| !b.ty_guessed)
                }
                _ => None,
            })
        };
        match e {
            Expr::Struct(s) => s
                .fields
                .iter()
                .filter_map(|f| match &f.member {
                    syn::Member::Named(n) => Some((n.to_string(), ty_of(&f.expr)?)),
                    syn::Member::Unnamed(_) => None,
                })
                .collect(),
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else { return Vec::new() };
                let Some(f) = p.path.segments.last() else { return Vec::new() };
                c.args.iter().enumerate().filter_map(|(i, a)| Some((format!("#{i}@{}", f.ident), ty_of(a)?))).collect()
            }
            _ => Vec::new(),
        }
    }

    fn lookup(&self, name: &str) -> Option<usize> {
        self.env.iter().rposition(|(b, _)| self.g.bindings[*b].name == name)
    }

    /// Declares every `self.<field>` the body mentions, at the bottom of the environment.
    fn declare_self_fields(&mut self, block: &Block) {
        use syn::visit::Visit;
        struct Fields<'a>(Vec<&'a syn::Ident>);
        impl<'a> Visit<'a> for Fields<'a> {
            fn visit_expr_field(&mut self, f: &'a syn::ExprField) {
                if is_self(&f.base)
                    && let syn::Member::Named(name) = &f.member
                    && !self.0.contains(&name)
                {
                    self.0.push(name);
                }
                syn::visit::visit_expr_field(self, f);
            }
        }
        let mut fields = Fields(Vec::new());
        fields.visit_block(block);
        for name in fields.0 {
            let span = self.span(name.span());
            let id = self.g.bindings.len();
            self.g.bindings.push(Binding {
                name: format!("self.{name}"),
                kind: BindingKind::SelfField,
                decl: span.clone(),
                decl_loop: None,
                host: self.crate_fns.plain_fields.contains(&name.to_string()),
                ty: None,
                ty_guessed: false,
            });
            let v = self.add_node(NodeKind::Version(id), span);
            // `hidden: Tensor<B::InnerBackend, 2>`: nothing written to it holds a graph.
            if !self.g.spec.inner_backend_names.is_empty()
                && let Some(owner) = &self.g.owner
                && self.crate_fns.inner_tensor_fields.get(owner).is_some_and(|f| f.contains(&name.to_string()))
            {
                self.inner_tensor_bindings.push(id);
            }
            // `model: Seg<B::InnerBackend>` in every declaration of the name: untracked.
            if !self.g.spec.inner_backend_names.is_empty()
                && let Some(owner) = &self.g.owner
                && self.crate_fns.inner_fields.get(owner).is_some_and(|f| f.contains(&name.to_string()))
            {
                self.g.inert_seeds.push(v);
            }
            // `weights: Vec<Var>`, `w: Var` (candle): the struct holds trainable variables of its
            // own, read as a `w: &Var` parameter is; so does `varmap: VarMap`, a store of them.
            if self.g.framework_known
                && let (Some(owner), Some(var)) = (&self.g.owner, self.g.spec.variable_type)
                && self.crate_fns.variable_fields.get(owner).is_some_and(|fs| {
                    fs.iter().any(|(f, elem, _)| {
                        name == f && (elem == var || self.g.spec.variable_store_type == Some(elem.as_str()))
                    })
                })
            {
                self.params.push(v);
            }
            self.g.self_fields.push(v);
            self.env.push((id, v));
        }
    }

    /// Whether a loop's iterable walks a collection of trait objects: a field declared so
    /// (`self.metrics.iter_mut()` with `metrics: Vec<Box<dyn Metric<B>>>`) or a local annotated
    /// so.
    fn walks_trait_objects(&self, iter: &Expr) -> bool {
        let mut e = strip_parens(iter);
        loop {
            e = match e {
                Expr::MethodCall(m)
                    if m.args.is_empty()
                        && matches!(m.method.to_string().as_str(), "iter" | "iter_mut" | "values" | "values_mut") =>
                {
                    strip_parens(&m.receiver)
                }
                Expr::Reference(r) => strip_parens(&r.expr),
                _ => break,
            };
        }
        match e {
            Expr::Field(f) if is_self(&f.base) => {
                let syn::Member::Named(name) = &f.member else { return false };
                self.g.owner.as_ref().is_some_and(|o| {
                    self.crate_fns.dyn_collection_fields.get(o).is_some_and(|fs| fs.contains(&name.to_string()))
                })
            }
            Expr::Path(p) => {
                !self.dyn_collections.is_empty()
                    && p.path
                        .get_ident()
                        .and_then(|i| self.lookup(&i.to_string()))
                        .is_some_and(|slot| self.dyn_collections.contains(&self.env[slot].0))
            }
            _ => false,
        }
    }

    /// The env slot of `self.<field>` (declared up front).
    fn self_field(&self, field: &str) -> Option<usize> {
        self.lookup(&format!("self.{field}"))
    }

    /// Writes `value` into the binding at env slot `slot`, making a new version.
    fn write(&mut self, slot: usize, value: NodeIndex, how: Store, span: Span, keep_old: bool) {
        let (id, old) = self.env[slot];
        if self.g.bindings[id].host && matches!(self.g.graph[value].kind, NodeKind::Value(_)) {
            self.g.graph[value].kind = NodeKind::Value(Producer::Plain);
        }
        // A tensor field of the inner backend: what it holds carries no graph, whatever the
        // model thinks of the value written.
        let value = if self.inner_tensor_bindings.contains(&id) {
            let plain = self.add_node(NodeKind::Value(Producer::Plain), span.clone());
            self.g.graph.add_edge(value, plain, Edge::DerivedFrom);
            plain
        } else {
            value
        };
        let new = self.add_node(NodeKind::Version(id), span.clone());
        if !self.path.is_empty() {
            // Consecutive writes in one branch share its path.
            if self.g.branch_paths.last() != Some(&self.path) {
                self.g.branch_paths.push(self.path.clone());
            }
            let at = self.g.branch_paths.len() - 1;
            self.g.branch_writes.push((new, at));
        }
        self.g.graph.add_edge(value, new, Edge::StoredInto { how, span: span.clone(), through: None });
        if keep_old {
            self.g.graph.add_edge(old, new, Edge::StoredInto { how: Store::Merge, span, through: None });
        }
        self.env[slot].1 = new;
    }

    /// A node standing for `val`: the version itself for a plain read of one binding,
    /// else a new value node.
    fn materialize(&mut self, val: Val, span: Span) -> Option<NodeIndex> {
        if val.producer == Producer::Derived && !val.op && val.reads.len() == 1 {
            return Some(val.reads[0]);
        }
        if val.producer == Producer::Plain && val.reads.is_empty() {
            return None;
        }
        Some(self.value_node(val, span))
    }

    /// Gives the bindings of a `for` pattern from `first` on the types of a collected local's
    /// elements (see `Builder::collected_types`); `enumerated`: the pattern is `(i, element)`.
    fn type_collected_pattern(&mut self, pat: &Pat, types: &[Option<String>], enumerated: bool, first: usize) {
        let mut pat = strip_pat_type(pat);
        let mut at = first;
        if enumerated {
            let Pat::Tuple(t) = pat else { return };
            let [index, element] = t.elems.iter().collect::<Vec<_>>()[..] else { return };
            if matches!(index, Pat::Ident(_)) {
                at += 1;
            } else if !matches!(index, Pat::Wild(_)) {
                return;
            }
            pat = strip_pat_type(element);
        }
        let parts: Vec<&Pat> = match (pat, types.len()) {
            (Pat::Tuple(t), n) if n > 1 && t.elems.len() == n => t.elems.iter().collect(),
            (Pat::Ident(_), 1) => vec![pat],
            _ => return,
        };
        for (part, ty) in parts.into_iter().zip(types) {
            match part {
                Pat::Ident(_) => {
                    if let (Some(b), Some(ty)) = (self.g.bindings.get_mut(at), ty)
                        && b.ty.is_none()
                    {
                        b.ty = Some(ty.clone());
                    }
                    at += 1;
                }
                Pat::Wild(_) => {}
                _ => return,
            }
        }
    }

    /// Whether `val` is read from a field of `self` (`t` of `for (t, s) in
    /// self.layers.iter_mut().zip(..)`), a few steps back through values and stores.
    fn reads_self_field(&self, val: &Val) -> bool {
        if self.g.self_fields.is_empty() {
            return false;
        }
        let mut stack: Vec<NodeIndex> = val.reads.to_vec();
        let mut seen = 0;
        while let Some(n) = stack.pop() {
            if self.g.self_fields.contains(&n) {
                return true;
            }
            seen += 1;
            if seen > 32 {
                return false;
            }
            stack.extend(self.g.graph.neighbors_directed(n, petgraph::Direction::Incoming));
        }
        false
    }

    fn value_node(&mut self, val: Val, span: Span) -> NodeIndex {
        let producer = if self.no_grad > 0 && matches!(val.producer, Producer::Forward { .. } | Producer::Derived) {
            Producer::Plain
        } else {
            val.producer
        };
        let n = self.add_node(NodeKind::Value(producer), span);
        if val.op {
            self.g.op_values.push(n);
        }
        for r in val.reads {
            self.g.graph.add_edge(r, n, Edge::DerivedFrom);
        }
        n
    }

    /// Combines sub-values into a derived value (`op`: a tensor operation rather than a move).
    fn combine(&mut self, parts: Vec<(Val, Span)>, op: bool) -> Val {
        let mut reads = Vec::new();
        for (v, span) in parts {
            if v.producer == Producer::Derived && !v.op {
                reads.extend(v.reads);
            } else if let Some(n) = self.materialize(v, span) {
                reads.push(n);
            }
        }
        reads.sort_unstable();
        reads.dedup();
        Val { reads: reads.into(), producer: Producer::Derived, op }
    }

    fn vocab(&mut self, kind: CallKind, span: Span, fix_span: Option<Span>, discarded: bool) {
        let in_loop = self.cur_loop();
        self.g.vocab_calls.push(super::graph::VocabCall {
            kind,
            span,
            fix_span,
            in_loop,
            receiver: None,
            no_grad: self.no_grad > 0,
            via: None,
            forward_at: None,
            forward_via: None,
            lazy: self.lazy_init > 0,
            discarded,
            path: self.path.clone(),
            guard_fields: self.guard_fields.clone(),
            waits: false,
            reported_inside: false,
            autodiff_model: false,
            samples: false,
            kept_by_receiver: false,
            kept_in_arg: None,
            kept_for_good: None,
            closure: self.closure_stack.last().map(|&(c, _, _)| c),
            gate: None,
        });
    }

    fn record_call(&mut self, kind: TrainingCallKind, span: Span, receiver: String) {
        if matches!(kind, TrainingCallKind::Backward | TrainingCallKind::BackwardStep) {
            for &l in &self.loop_stack {
                self.g.loops[l].runs_backward = true;
            }
            for &(c, _, _) in &self.closure_stack {
                self.g.closures[c].runs_backward = true;
            }
            let mark = (self.g.graph.node_count(), span.clone());
            if let Some(top) = self.backward_marks.last_mut() {
                *top = Some(mark);
            }
        }
        if let Some(&(c, _, _)) = self.closure_stack.last() {
            match kind {
                TrainingCallKind::Step | TrainingCallKind::BackwardStep => self.g.closures[c].steps = true,
                TrainingCallKind::Clear => self.g.closures[c].clears = true,
                _ => {}
            }
        }
        let in_loop = self.cur_loop();
        let path = self.path.clone();
        let waits_for_size = self.g.waits_for_size(&path);
        let waits_briefly = self.g.waits_only_briefly(&path);
        self.g.calls.push(TrainingCall { kind, span, receiver, in_loop, path, waits_for_size, waits_briefly });
    }

    /// Whether `e` names a gradient store: by name (`grads`, `self.grads`), by declared type
    /// (`Gradients`, or made by `alloc_grads()`), or by use (handed to a tape method).
    fn is_grad_store(&self, e: &Expr) -> bool {
        // `episode_grads: GradStats` (a struct of counters): not a store, whatever its name.
        if self.declared_type_of(e).is_some_and(|t| self.crate_fns.host_structs.contains(&t) || rust::is_host_type(&t))
        {
            return false;
        }
        if expr_text(e).ends_with(common::GRADS_NAME) {
            return true;
        }
        if self.declared_type_of(e).as_deref() == Some(common::GRADS_TYPE) {
            return true;
        }
        if let Expr::Field(f) = strip_place(e)
            && let syn::Member::Named(name) = &f.member
            && self.crate_fns.grads_fields.contains(&name.to_string())
        {
            return true;
        }
        place_key(e).is_some_and(|key| self.grad_stores.traced.contains(&key))
    }

    /// The declared type of the binding an expression names (`memory` in `&mut memory`).
    /// `opt.unwrap_or(default)`, `x.clone()`, `&x`: the declared type of the value unwrapped or
    /// copied (see [`type_name`] for what `Option<&T>` declares).
    fn type_through_unwrap(&self, e: &Expr) -> Option<String> {
        match e {
            Expr::MethodCall(m) if rust::hands_on_receiver(&m.method.to_string()) => {
                self.type_through_unwrap(&m.receiver)
            }
            Expr::Reference(r) => self.type_through_unwrap(&r.expr),
            Expr::Try(t) => self.type_through_unwrap(&t.expr),
            Expr::Paren(p) => self.type_through_unwrap(&p.expr),
            Expr::Path(_) => self.declared_type_of(e),
            _ => None,
        }
    }

    /// candle: a recurrent cell of `candle_nn::rnn` (a binding declared `LSTM` or `GRU`, or made
    /// by `lstm(..)`/`gru(..)`; a field declared so): its `step(&x, &state)`, `seq(&xs)` and
    /// `seq_init(&xs, &state)` are forward passes.
    fn is_rnn_cell(&self, receiver: &Expr) -> bool {
        if self.g.spec.trainable_constructors.is_empty() {
            return false;
        }
        match strip_place(receiver) {
            Expr::Field(f) => match &f.member {
                syn::Member::Named(n) => self.crate_fns.rnn_fields.contains(&n.to_string()),
                syn::Member::Unnamed(_) => false,
            },
            e => self.declared_type_ref(e).is_some_and(|t| common::RNN_CELL_TYPES.contains(&t)),
        }
    }

    /// Whether `x` is the current element of a sequence the innermost loop walks: the loop's
    /// pattern binding (`for x in xs.iter()`), or an index by a counter of the loop (`xs.get(t)?`,
    /// `xs.i(t)?`, `xs[t]`). A cell stepped over one is one forward pass over the sequence, not
    /// a sampler feeding itself.
    fn element_of_sequence(&self, x: &Expr) -> bool {
        // The loop's counter, also as one index of several (`xs.i((.., t))?`) or a range's start
        // (`xs.i((.., t..t + 1))?`).
        fn is_counter(e: &Expr, counter: Option<&String>) -> bool {
            match strip_parens(e) {
                Expr::Path(p) => p.path.get_ident().is_some_and(|i| counter.is_some_and(|c| i == c)),
                Expr::Tuple(t) => t.elems.iter().any(|e| is_counter(e, counter)),
                Expr::Range(r) => r.start.as_deref().is_some_and(|e| is_counter(e, counter)),
                _ => false,
            }
        }
        let is_counter = |e: &Expr| is_counter(e, self.counters.last());
        match strip_place(strip_try(x)) {
            Expr::Reference(r) => self.element_of_sequence(&r.expr),
            Expr::Path(p) => p.path.get_ident().is_some_and(|i| {
                let Some(l) = self.cur_loop() else { return false };
                self.env.iter().rposition(|(b, _)| *i == self.g.bindings[*b].name).is_some_and(|slot| {
                    let b = self.env[slot].0;
                    self.g.loops[l].pattern.contains(&b) || self.sequence_elements.contains(&b)
                })
            }),
            Expr::Index(ix) => is_counter(&ix.index),
            Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "get" | "i" | "narrow" | "index_select" | "select" => m.args.iter().any(is_counter),
                // Reshaped, the same element (`xs.i((.., t..t + 1))?.squeeze(1)?`).
                "squeeze" | "unsqueeze" | "reshape" | "contiguous" | "to_dtype" | "flatten_all" => {
                    self.element_of_sequence(&m.receiver)
                }
                _ => false,
            },
            _ => false,
        }
    }

    fn declared_type_ref(&self, e: &Expr) -> Option<&str> {
        let Expr::Path(p) = strip_place(e) else { return None };
        let slot = self.lookup(&p.path.get_ident()?.to_string())?;
        self.g.bindings[self.env[slot].0].ty.as_deref()
    }

    /// Whether `ident` is a type parameter of the function or of its `impl`/`trait`.
    fn is_type_param(&self, ident: &syn::Ident) -> bool {
        self.generics.iter().flatten().flat_map(|g| g.type_params()).any(|p| p.ident == *ident)
    }

    fn binding_ref(&self, e: &Expr) -> Option<&super::graph::Binding> {
        let Expr::Path(p) = strip_place(e) else { return None };
        let slot = self.lookup(&p.path.get_ident()?.to_string())?;
        Some(&self.g.bindings[self.env[slot].0])
    }

    /// `if let Some(g) = grads.get(var)` with `grads` a gradient store (candle `GradStore`): after
    /// a backward the store holds a gradient for every variable the loss reaches, so the branch
    /// is taken on every call, as a loop over the variables would be.
    fn is_gradient_lookup(&self, cond: &Expr) -> bool {
        let Expr::Let(l) = strip_parens(cond) else { return false };
        let Expr::MethodCall(m) = strip_parens(&l.expr) else { return false };
        is_some_pat(&l.pat)
            && m.method == "get"
            && m.args.len() == 1
            && self.binding_ref(&m.receiver).is_some_and(|b| {
                !b.ty_guessed && b.ty.as_deref().is_some_and(|t| self.g.spec.grad_store_types.contains(&t))
            })
    }

    fn declared_type_of(&self, e: &Expr) -> Option<String> {
        let Expr::Path(p) = strip_place(e) else { return None };
        let slot = self.lookup(&p.path.get_ident()?.to_string())?;
        self.g.bindings[self.env[slot].0].ty.clone()
    }

    /// burn `param.map(|t| …)`: the closure's result replaces the parameter's value. Blending
    /// it with autodiff ops on `t` (a soft target update) chains the new value onto the old one.
    fn param_map(&mut self, m: &syn::ExprMethodCall, c: &syn::ExprClosure, input: &Pat) -> Val {
        let recv = self.expr(&m.receiver);
        let (param, body) = self.branch(|s| {
            let mark = s.env.len();
            s.bind_pat(input, Val::plain(), 0..0);
            let param = (s.env.len() > mark).then(|| s.env[s.env.len() - 1].1);
            // `bias.map(|p| p.map(|t| …))`: an optional parameter hands a parameter on.
            if param.is_some()
                && let Some(b) = s.g.bindings.last_mut()
            {
                b.ty = Some(s.g.spec.param_type.to_string());
            }
            let body = s.expr(&c.body);
            s.env.truncate(mark);
            (param, body)
        });
        // `.inner()` inside means the target lives on the inner backend (no autodiff).
        let inner = mentions_method(&c.body, common::LEAVE_AUTODIFF_METHODS)
            // `bias.map(|p| p.map(|t| …))`: the inner `map` is the update.
            || matches!(&*c.body, Expr::MethodCall(m) if self.g.spec.param_map_methods.iter().any(|n| m.method == n))
            // Blended with a local taken off the autodiff side (`let w = o.weight.val().inner();
            // t.weight.map(|tw| tw * (1.0 - tau) + w * tau)`): burn adds tensors of one backend
            // only, so the target is an inner one.
            || (!self.inner_locals.is_empty() && self.reads_inner_local(&body.reads));
        // A blend: the old value and another parameter's (`online.val()`); `t.clamp(..)` alone
        // is not one (a trained parameter is rebuilt as a leaf by the next optimizer step).
        if let Some(p) = param
            && body.producer == Producer::Derived
            && !inner
        {
            let span = self.between(first_token(&m.receiver), m.paren_token.span.close());
            let value = self.full(&c.body);
            self.g.param_rewrites.push(super::graph::ParamRewrite {
                span,
                value,
                reads: body.reads.to_vec(),
                old: vec![p],
            });
        }
        // `map` hands the parameter on: a move, as for any other `map`.
        self.combine(vec![(recv, 0..0), (body, 0..0)], false)
    }

    /// Whether `reads` are computed from a version of one of [`Builder::inner_locals`].
    fn reads_inner_local(&self, reads: &[NodeIndex]) -> bool {
        let mut stack = reads.to_vec();
        let mut seen = 0;
        while let Some(n) = stack.pop() {
            seen += 1;
            if seen > 64 {
                return false;
            }
            if let NodeKind::Version(b) = self.g.graph[n].kind {
                if self.inner_locals.iter().any(|l| *l == self.g.bindings[b].name) {
                    return true;
                }
                continue;
            }
            stack.extend(self.g.graph.neighbors_directed(n, petgraph::Direction::Incoming));
        }
        false
    }

    /// The value a module mapper's method returns for a parameter (`tensor * (1.0 - tau) +
    /// online * tau`): a rewrite of that parameter, as `param.map(|t| …)` is, when it is derived
    /// with tensor ops from the parameter it was handed (`old`) and stays on the autodiff side.
    fn mapped_value(&mut self, block: &Block, tail: &Val, old: Vec<NodeIndex>) {
        let Some(Stmt::Expr(last, None)) = block.stmts.last() else { return };
        if tail.producer != Producer::Derived || mentions_method(last, common::LEAVE_AUTODIFF_METHODS) {
            return;
        }
        // `Param::from_mapped_value(id, mixed, mapper)`: the rebuild already recorded the rewrite
        // (`param_rebuild`), whose old value is the parameter handed to the mapper.
        if let Expr::Call(c) = strip_parens(last) {
            let span = self.between(first_token(&c.func), c.paren_token.span.close());
            if let Some(r) = self.g.param_rewrites.iter_mut().rev().find(|r| r.span == span) {
                r.old.extend(old);
                return;
            }
        }
        let span = self.full(last);
        self.g.param_rewrites.push(super::graph::ParamRewrite {
            span: span.clone(),
            value: span,
            reads: tail.reads.to_vec(),
            old,
        });
    }

    /// Code after a backward call of this iteration, in a framework where that matters (cheap:
    /// checked before any span work).
    fn after_backward(&self) -> bool {
        self.leaving == 0 && self.swept_by_backward() && self.backward_marks.iter().any(Option::is_some)
    }

    /// The framework sweeps graph state only inside `backward()` (burn).
    fn swept_by_backward(&self) -> bool {
        self.g.framework_known && self.g.spec.graph_swept_by_backward
    }

    /// The framework has parameters read and rewritten through methods (burn `val`, `map`).
    fn tracks_params(&self) -> bool {
        self.g.framework_known && !self.g.spec.param_read_methods.is_empty()
    }

    /// burn: a tensor operation on values that existed before this iteration's backward call
    /// hangs a new node on the graph that backward consumed.
    fn note_op_after_backward(&mut self, recv: &Val, span: Span) {
        if !self.swept_by_backward() {
            return;
        }
        // The latest backward at any level around here (an inner loop entered after the
        // backward of its enclosing iteration runs after it too).
        let Some((mark, backward)) = self.backward_marks.iter().rev().flatten().next().cloned() else { return };
        if recv.producer != Producer::Derived || recv.op {
            return;
        }
        let in_loop = self.cur_loop();
        let reads: Vec<NodeIndex> = recv.reads.iter().copied().filter(|&r| self.made_before(r, mark)).collect();
        for operand in reads {
            self.g.uses_after_backward.push(super::graph::UseAfterBackward {
                span: span.clone(),
                operand,
                backward: backward.clone(),
                in_loop,
                no_grad: self.no_grad > 0,
                via: None,
            });
        }
    }

    /// The arguments of a call made after the latest backward that read values made before it
    /// (see [`super::graph::CallSite::after_backward`]).
    fn args_after_backward(&self, args: &[super::graph::ArgValue]) -> Option<super::graph::ArgsAfterBackward> {
        if !self.after_backward() {
            return None;
        }
        let (mark, backward) = self.backward_marks.iter().rev().flatten().next().cloned()?;
        let args: Vec<(usize, NodeIndex)> = args
            .iter()
            .enumerate()
            .flat_map(|(i, a)| a.reads.iter().map(move |&r| (i, r)))
            .filter(|&(_, r)| self.made_before(r, mark))
            .collect();
        (!args.is_empty()).then_some(super::graph::ArgsAfterBackward { backward, no_grad: self.no_grad > 0, args })
    }

    /// Whether `recv` reads one of the function's parameters as given: a tensor operation on it
    /// is seen by callers that hand it a consumed graph's value (burn).
    fn param_op_mask(&self, recv: &Val) -> u64 {
        if recv.op || self.g.params.is_empty() || !self.swept_by_backward() {
            return 0;
        }
        let mut mask = 0;
        for &r in &recv.reads {
            if let Some(i) = self.g.params.iter().position(|&p| p == Some(r))
                && i < 64
            {
                mask |= 1 << i;
            }
        }
        mask
    }

    /// Whether `n` existed before node count `mark`, or is a binding made after it by `let`,
    /// `for` or a pattern from one that did (`for out in &outputs`, `let o = output.clone()`).
    fn made_before(&self, n: NodeIndex, mark: usize) -> bool {
        self.made_before_within(n, mark, 8)
    }

    fn made_before_within(&self, n: NodeIndex, mark: usize, budget: usize) -> bool {
        use petgraph::visit::EdgeRef;
        if n.index() < mark {
            return true;
        }
        if budget == 0 {
            return false;
        }
        match self.g.graph[n].kind {
            // A binding bound by `let`/`for`/a pattern, from one value.
            NodeKind::Version(_) => {
                let mut incoming = self.g.graph.edges_directed(n, petgraph::Direction::Incoming);
                match (incoming.next(), incoming.next()) {
                    (Some(e), None) if matches!(e.weight(), Edge::StoredInto { how: Store::Let, .. }) => {
                        self.made_before_within(e.source(), mark, budget - 1)
                    }
                    _ => false,
                }
            }
            // A tuple or a move of values (`let (loss, out) = { …; (loss, out) };`).
            NodeKind::Value(Producer::Derived) if !self.g.op_values.contains(&n) => {
                self.g.graph.edges_directed(n, petgraph::Direction::Incoming).any(|e| {
                    matches!(e.weight(), Edge::DerivedFrom) && self.made_before_within(e.source(), mark, budget - 1)
                })
            }
            NodeKind::Value(_) => false,
        }
    }

    fn mark_loss(&mut self, val: Val, span: Span) {
        if let Some(n) = self.materialize(val, span) {
            self.g.losses.push(n);
        }
    }

    // ----- statements -------------------------------------------------------------------

    fn block(&mut self, block: &Block) -> Val {
        let mark = self.env.len();
        let no_grad = self.no_grad;
        let guards = self.guard_fields.len();
        let last = self.stmts(&block.stmts);
        self.guard_fields.truncate(guards);
        self.no_grad = no_grad;
        self.env.truncate(mark.min(self.env.len()));
        last
    }

    /// A block's statements. After an early exit on a length (`if memory.len() < batch { return; }`,
    /// or `continue` in a loop) the rest runs only once a collection has reached a size: it is a
    /// branch that waits for size, like the then-block of `if memory.len() >= batch { .. }`.
    fn stmts(&mut self, stmts: &[Stmt]) -> Val {
        let mut last = Val::plain();
        for (i, stmt) in stmts.iter().enumerate() {
            last = self.stmt(stmt);
            let rest = &stmts[i + 1..];
            if rest.is_empty() {
                continue;
            }
            match self.early_exit(stmt) {
                Some(EarlyExit::Length(batch)) => {
                    // `if self.pending.len() < self.k { return None; }` before a backward that
                    // takes `self.pending`: a wait of k calls, again and again (gradient
                    // accumulation), each ended by the backward; not a warm-up once.
                    let batch = batch || emptied_after_wait(stmt, rest);
                    self.g.size_wait_branches.push(self.next_branch + 1);
                    if batch {
                        self.g.brief_wait_branches.push(self.next_branch + 1);
                    }
                    self.g.conditional_branches.push(self.next_branch + 1);
                    return self.branch(|s| s.stmts(rest));
                }
                Some(EarlyExit::Gate(callee)) => {
                    self.g.gated_branches.push((self.next_branch + 1, callee));
                    self.g.conditional_branches.push(self.next_branch + 1);
                    return self.branch(|s| s.stmts(rest));
                }
                Some(EarlyExit::Threshold(cond)) => compared_fields(cond, &mut self.guard_fields),
                Some(EarlyExit::Value(param, opens)) => {
                    // Not a conditional branch for other questions: only calls that hand the
                    // parameter a constant decide it.
                    self.g.value_gates.push((self.next_branch + 1, param, opens));
                    return self.branch(|s| s.stmts(rest));
                }
                None => {}
            }
        }
        last
    }

    /// What an early exit (`if .. { return }`, `let .. else { return }`, or `continue` inside a
    /// loop) says about the statements after it.
    fn early_exit<'s>(&self, stmt: &'s Stmt) -> Option<EarlyExit<'s>> {
        match stmt {
            Stmt::Expr(Expr::If(i), _) if i.else_branch.is_none() && self.exits(&i.then_branch) => {
                if compares_a_length(&i.cond) || self.compares_a_counter(&i.cond) {
                    return Some(EarlyExit::Length(waits_briefly(&i.cond, &self.crate_fns.consts)));
                }
                if let Expr::Unary(u) = strip_parens(&i.cond)
                    && matches!(u.op, syn::UnOp::Not(_))
                    && let Some(callee) = self.crate_call_name(&u.expr)
                {
                    return Some(EarlyExit::Gate(callee));
                }
                if let Some((param, opens)) = self.param_value_test(&i.cond) {
                    return Some(EarlyExit::Value(param, opens.negate()));
                }
                Some(EarlyExit::Threshold(&i.cond))
            }
            Stmt::Local(syn::Local { init: Some(syn::LocalInit { expr, diverge: Some((_, d)), .. }), .. }) => {
                match &**d {
                    Expr::Block(b) if self.exits(&b.block) => self.crate_call_name(expr).map(EarlyExit::Gate),
                    _ => None,
                }
            }
            Stmt::Local(syn::Local { init: Some(syn::LocalInit { expr, diverge: None, .. }), .. }) => {
                self.exits_unless_some(expr).map(EarlyExit::Gate)
            }
            _ => None,
        }
    }

    /// `let Some(..) = total` (or `total.take()`) with `total` a local binding: that binding.
    fn presence_test(&self, cond: &Expr) -> Option<BindingId> {
        let Expr::Let(l) = strip_parens(cond) else { return None };
        let Pat::TupleStruct(p) = &*l.pat else { return None };
        if !p.path.is_ident("Some") {
            return None;
        }
        let e = match &*l.expr {
            Expr::MethodCall(m) if m.method == "take" && m.args.is_empty() => &*m.receiver,
            e => e,
        };
        let Expr::Path(path) = e else { return None };
        let name = path.path.get_ident()?.to_string();
        self.lookup(&name).map(|slot| self.env[slot].0)
    }

    /// `is_train` or `!is_train` with `is_train` a parameter: (its index, the value that makes the
    /// condition true, its name).
    /// The index of the parameter `e` names (`mode`, `&mode`, `*mode`).
    fn param_index(&self, e: &Expr) -> Option<usize> {
        let e = match strip_parens(e) {
            Expr::Reference(r) => strip_parens(&r.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => strip_parens(&u.expr),
            e => e,
        };
        let Expr::Path(p) = e else { return None };
        let b = self.env[self.lookup(&p.path.get_ident()?.to_string())?].0;
        if self.g.bindings[b].kind != BindingKind::Param {
            return None;
        }
        self.g.params.iter().position(|p| p.and_then(|p| self.g.binding_of(p)) == Some(b))
    }

    /// A test of a parameter's value (`explore`, `!greedy`, `mode == Mode::Train`, `mode !=
    /// Mode::Eval`, `matches!(mode, Mode::A | Mode::B)`, `let Mode::Train = mode`): the
    /// parameter, and the values that pass it.
    fn param_value_test(&self, cond: &Expr) -> Option<(usize, super::graph::Opens)> {
        use super::graph::{ConstArg, Opens};
        if let Some((param, opens_on, _)) = self.bool_param_test(cond) {
            return Some((param, Opens { values: vec![ConstArg::Bool(opens_on)], negated: false }));
        }
        // Only a function with parameters has a parameter to test.
        if self.g.params.is_empty() {
            return None;
        }
        match strip_parens(cond) {
            Expr::Binary(b) if matches!(b.op, syn::BinOp::Eq(_) | syn::BinOp::Ne(_)) => {
                let negated = matches!(b.op, syn::BinOp::Ne(_));
                let (param, value) = match (self.param_index(&b.left), self.param_index(&b.right)) {
                    (Some(p), None) => (p, &*b.right),
                    (None, Some(p)) => (p, &*b.left),
                    _ => return None,
                };
                let v @ ConstArg::Variant(_) = const_arg(value)? else { return None };
                Some((param, Opens { values: vec![v], negated }))
            }
            Expr::Let(l) => Some((self.param_index(&l.expr)?, Opens { values: pat_variants(&l.pat)?, negated: false })),
            Expr::Macro(m) if m.mac.path.is_ident("matches") => {
                let parsed = m.mac.parse_body_with(|input: syn::parse::ParseStream| {
                    let e: Expr = input.parse()?;
                    let _: syn::Token![,] = input.parse()?;
                    let pat = Pat::parse_multi_with_leading_vert(input)?;
                    // A guard (`if ..`) after the pattern: not a plain test.
                    if !input.is_empty() {
                        return Err(input.error("guard"));
                    }
                    Ok((e, pat))
                });
                let (e, pat) = parsed.ok()?;
                Some((self.param_index(&e)?, Opens { values: pat_variants(&pat)?, negated: false }))
            }
            _ => None,
        }
    }

    fn bool_param_test(&self, cond: &Expr) -> Option<(usize, bool, String)> {
        let (e, opens_on) = match strip_parens(cond) {
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => (strip_parens(&u.expr), false),
            e => (e, true),
        };
        let Expr::Path(p) = e else { return None };
        let name = p.path.get_ident()?.to_string();
        let b = self.env[self.lookup(&name)?].0;
        if self.g.bindings[b].kind != BindingKind::Param {
            return None;
        }
        let index = self.g.params.iter().position(|p| p.and_then(|p| self.g.binding_of(p)) == Some(b))?;
        Some((index, opens_on, name))
    }

    /// `step > learning_starts`, `episode == 0`, `self.total_steps >= self.warmup`: an ordered
    /// comparison (or `==`) of a counter of an enclosing loop with something else.
    fn compares_a_counter(&self, cond: &Expr) -> bool {
        if self.counters.is_empty() {
            return false;
        }
        let counter = |e: &Expr| self.is_counter(e);
        match strip_parens(cond) {
            Expr::Binary(b) => match b.op {
                syn::BinOp::Lt(_) | syn::BinOp::Le(_) | syn::BinOp::Gt(_) | syn::BinOp::Ge(_) | syn::BinOp::Eq(_) => {
                    counter(&b.left) != counter(&b.right)
                }
                syn::BinOp::And(_) => self.compares_a_counter(&b.left) || self.compares_a_counter(&b.right),
                _ => false,
            },
            _ => false,
        }
    }

    /// A loop counter the loop never resets (`step`, `self.steps`).
    fn is_counter(&self, e: &Expr) -> bool {
        let name = match strip_parens(e) {
            Expr::Path(p) => p.path.get_ident(),
            Expr::Field(f) => match &f.member {
                syn::Member::Named(n) => Some(n),
                syn::Member::Unnamed(_) => None,
            },
            _ => None,
        };
        name.is_some_and(|n| self.counters.iter().any(|c| n == c))
    }

    /// `config.dry_run`, `!self.cfg.eval_only`: a field read from a parameter or `self` (a
    /// setting no iteration changes), where it is written (without `!`), and whether the
    /// condition holds when it is true.
    fn setting_test(&self, cond: &Expr) -> Option<(Span, bool)> {
        let (e, on_true) = match strip_parens(cond) {
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => (strip_parens(&u.expr), false),
            e => (e, true),
        };
        let Expr::Field(f) = e else { return None };
        let mut base = &*f.base;
        while let Expr::Field(inner) = base {
            base = &inner.base;
        }
        let Expr::Path(p) = base else { return None };
        let root = p.path.get_ident()?;
        let from_outside = root == "self"
            || self
                .lookup(&root.to_string())
                .is_some_and(|slot| self.g.bindings[self.env[slot].0].kind == BindingKind::Param);
        if !from_outside {
            return None;
        }
        Some((self.between(first_token(e), last_token(e)), on_true))
    }

    /// A block that ends by leaving the function, or by `continue` inside a loop.
    fn exits(&self, block: &Block) -> bool {
        let continues = matches!(block.stmts.last(), Some(Stmt::Expr(Expr::Continue(c), _)) if c.label.is_none());
        leaves_function(block) || continues && self.cur_loop().is_some()
    }

    /// `let Some(..) = <call of the crate>`: that function's name.
    fn some_of_crate_call(&self, cond: &Expr) -> Option<String> {
        match strip_parens(cond) {
            Expr::Let(l) if is_some_pat(&l.pat) => self.crate_call_name(&l.expr),
            _ => None,
        }
    }

    /// `match memory.sample(n) { Some(b) => b, None => continue }`: a `match` on a call of the
    /// crate whose arms other than `Some` leave (`continue`, `return`): that function's name.
    fn exits_unless_some(&self, e: &Expr) -> Option<String> {
        let Expr::Match(m) = strip_parens(e) else { return None };
        let exits = |body: &Expr| match body {
            Expr::Block(b) => self.exits(&b.block),
            Expr::Return(_) => true,
            Expr::Continue(c) => c.label.is_none() && self.cur_loop().is_some(),
            _ => false,
        };
        let shape =
            m.arms.iter().any(|a| is_some_pat(&a.pat)) && m.arms.iter().all(|a| is_some_pat(&a.pat) || exits(&a.body));
        if shape { self.crate_call_name(&m.expr) } else { None }
    }

    /// The name of the crate function a condition calls (`self.can_learn()`, `ready(&b)`,
    /// through `?` and `.ok()`), when the crate has a function of that name.
    fn crate_call_name(&self, e: &Expr) -> Option<String> {
        let name = match strip_parens(e) {
            Expr::Try(t) => return self.crate_call_name(&t.expr),
            Expr::MethodCall(m) if m.method == "ok" && m.args.is_empty() => return self.crate_call_name(&m.receiver),
            Expr::MethodCall(m) => m.method.to_string(),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => p.path.segments.last()?.ident.to_string(),
                _ => return None,
            },
            _ => return None,
        };
        self.crate_fns.fns.contains(&name).then_some(name)
    }

    fn stmt(&mut self, stmt: &Stmt) -> Val {
        match stmt {
            Stmt::Local(local) => {
                self.local(local);
                Val::plain()
            }
            Stmt::Item(item) => {
                if let syn::Item::Type(alias) = item
                    && alias.generics.params.is_empty()
                    && self.g.spec.autodiff_by_type
                {
                    use syn::visit::Visit;
                    let mut v = AutodiffNames::new(self.crate_fns).with(&self.aliases).around(self.module_aliases);
                    v.visit_type(&alias.ty);
                    let found = v.found;
                    self.aliases.push((alias.ident.to_string(), found));
                }
                if matches!(item, syn::Item::Fn(_) | syn::Item::Impl(_) | syn::Item::Mod(_) | syn::Item::Trait(_)) {
                    self.nested_items.push(item.clone());
                }
                Val::plain()
            }
            Stmt::Expr(e, semi) => {
                if semi.is_some() && self.is_no_grad_guard(e) {
                    let span = self.full(e);
                    self.vocab(CallKind::NoGradGuard, span, None, true);
                }
                let v = self.expr(e);
                if semi.is_some() {
                    self.detach_in_place(e);
                    // `self.target.sync(&online);`: a call on a field made for what it does to
                    // the field (a `&mut self` method, a soft update in place).
                    if let Expr::MethodCall(m) = strip_try(e)
                        && matches!(strip_parens(&m.receiver), Expr::Field(_))
                    {
                        self.note_written(&m.receiver);
                    }
                }
                if semi.is_some() { Val::plain() } else { v }
            }
            Stmt::Macro(m) => self.mac(&m.mac),
        }
    }

    /// `data.detach();` with `detach(&mut self)` a method of the crate (a batch of rollouts
    /// detaching each of its tensors), or tch's `t.detach_();`: from here on the local holds no
    /// graph.
    fn detach_in_place(&mut self, e: &Expr) {
        let Expr::MethodCall(m) = strip_parens(e) else { return };
        let name = m.method.to_string();
        let in_place = match name.as_str() {
            "detach_" => true,
            "detach" => self.crate_fns.fns.contains(&name),
            _ => false,
        };
        if !in_place || !m.args.is_empty() {
            return;
        }
        let Expr::Path(p) = strip_parens(&m.receiver) else { return };
        let Some(id) = p.path.get_ident() else { return };
        let Some(slot) = self.lookup(&id.to_string()) else { return };
        let span = self.full(e);
        let plain = self.value_node(Val::plain(), span.clone());
        self.write(slot, plain, Store::Assign, span, false);
    }

    /// The count a name fixes for a loop bound: the local in scope when one is (see
    /// `local_counts`), else the crate's integer constant.
    fn named_count(&self, name: &str) -> Option<u64> {
        match self.local_counts.iter().rev().find(|(n, _)| n == name) {
            Some((_, count)) => *count,
            None => self.crate_fns.consts.get(name).copied().flatten(),
        }
    }

    fn local(&mut self, local: &syn::Local) {
        let init = local.init.as_ref();
        // `let (b, t) = tgt.dims2()?;`: `t` is a dimension of a tensor.
        if !self.g.spec.trainable_constructors.is_empty()
            && let Some(i) = init
            && is_shape_read(&i.expr)
        {
            let mut names = Vec::new();
            pat_idents(&local.pat, &mut names);
            self.dim_locals.extend(names.into_iter().map(ToString::to_string));
        }
        // (`.inner()` exists only where the function works on an autodiff backend.)
        if self.g.autodiff
            && !self.g.spec.param_map_methods.is_empty()
            && let Some(i) = init
            && let Expr::MethodCall(m) = strip_try(&i.expr)
            && common::LEAVE_AUTODIFF_METHODS.iter().any(|n| m.method == n)
            && let Pat::Ident(p) = strip_pat_type(&local.pat)
        {
            self.inner_locals.push(p.ident.to_string());
        }
        if let Pat::Ident(p) = strip_pat_type(&local.pat) {
            let count = (p.mutability.is_none() && p.by_ref.is_none())
                .then(|| init.filter(|i| i.diverge.is_none()))
                .flatten()
                .and_then(|i| match strip_parens(&i.expr) {
                    Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. }) => n.base10_parse::<u64>().ok(),
                    Expr::Array(a) => Some(a.elems.len() as u64),
                    _ => None,
                });
            // Only names that fix a count, and later bindings that shadow one (most locals do
            // neither, and are not recorded).
            if count.is_some() || self.local_counts.iter().any(|(n, _)| p.ident == n) {
                self.local_counts.push((p.ident.to_string(), count));
            }
        }
        // `let model: QNet<Autodiff<NdArray>> = …`: the function works on an autodiff backend,
        // as when a parameter has that type.
        if self.g.spec.autodiff_by_type
            && self.g.framework_known
            && !self.g.autodiff
            && let Pat::Type(t) = &local.pat
        {
            use syn::visit::Visit;
            let mut v = AutodiffNames::new(self.crate_fns).with(&self.aliases).around(self.module_aliases);
            v.visit_type(&t.ty);
            self.g.autodiff = v.found;
        }
        // `let model = train(&series, &d);` with `fn train(..) -> WindowMlp<Ad>` and `Ad` an
        // autodiff backend: the callee's declared result states the type, as an annotation would.
        if self.g.spec.autodiff_by_type
            && self.g.framework_known
            && !self.g.autodiff
            && !self.crate_fns.autodiff_fns.is_empty()
            && let Some(init) = init
            && let Some(name) = match strip_try(&init.expr) {
                Expr::Call(c) => match &*c.func {
                    Expr::Path(p) => p.path.segments.last().map(|s| &s.ident),
                    _ => None,
                },
                Expr::MethodCall(m) => Some(&m.method),
                _ => None,
            }
        {
            self.g.autodiff = self.crate_fns.autodiff_fns.contains(name.to_string().as_str());
        }
        // `let model = config.init::<Backend>(&device);` with `Backend` an autodiff backend: the
        // generic arguments state the type of the value bound, as an annotation would.
        if self.g.spec.autodiff_by_type
            && self.g.framework_known
            && !self.g.autodiff
            && let Some(init) = init
        {
            let mut autodiff = |a: &syn::AngleBracketedGenericArguments| self.generic_args_autodiff(a) == Some(true);
            // `let model = train(TwoTower::<Train>::new(d), 300, &dev);`: a model built on that
            // backend and handed to a function (which returns what it trained).
            self.g.autodiff = made_with_generic_args(&init.expr, &mut autodiff)
                || matches!(strip_try(&init.expr), Expr::Call(c) if c.args.iter().any(|a| {
                    let a = if let Expr::Reference(r) = a { &*r.expr } else { a };
                    made_with_generic_args(a, &mut autodiff)
                }));
        }
        // `let _g = tch::no_grad_guard();` disables gradients until the end of the block.
        if let Some(init) = init
            && self.is_no_grad_guard(&init.expr)
        {
            if let Pat::Wild(w) = strip_pat_type(&local.pat) {
                // `let _ = …` drops the guard at once: gradients stay on.
                let span = self.between(local.let_token.span, local.semi_token.span);
                let fix = self.span(w.underscore_token.span);
                self.vocab(CallKind::NoGradGuard, span, Some(fix), true);
            } else {
                self.no_grad += 1;
            }
        }
        // `let generator = cfg.init::<MyBackend>(&device);` with `MyBackend` a plain backend: a
        // model that records no graph, whatever else the function works on.
        // Not a data pipeline made for the inner backend (`Batcher::<B::InnerBackend>::new(..)`
        // feeds a learner's validation): what a call it is handed returns is not a model made
        // untracked (`learner.fit(train, valid)` returns the trained autodiff model).
        if let Some((getter, _)) = self.g.spec.grad_zero_in_place
            && let (Pat::Ident(p), Some(i)) = (strip_pat_type(&local.pat), init)
            && let Expr::MethodCall(g) = strip_try(&i.expr)
            && g.method == getter
            && g.args.is_empty()
        {
            self.grad_locals.push(p.ident.to_string());
        }
        // burn 0.22: `let teacher = Mlp::new(.., &device)` beside `let ad = device.autodiff();`.
        // `let model = model.fork(&ad);`: whatever it was built from, it is on the autodiff device.
        // `train::run(&cfg, &ad).valid()`: made untracked after it was built on the device.
        let untracked_last = self.devices.is_some()
            && init.is_some_and(|i| {
                matches!(strip_try(&i.expr), Expr::MethodCall(m)
                if m.args.is_empty() && self.g.spec.no_grad_models.iter().any(|n| m.method == n))
            });
        let on_autodiff_device =
            !untracked_last && init.and_then(|i| self.device_mentions(&i.expr)).is_some_and(|(_, ad)| ad);
        let on_plain_device = init.is_some_and(|i| self.built_on_plain_device(&i.expr))
            && !matches!(strip_pat_type(&local.pat), Pat::Ident(p) if self.devices.as_ref().is_some_and(|(ad, plain)| {
                let name = p.ident.to_string();
                ad.contains(&name) || plain.contains(&name)
            }));
        // `let evaluator: Seg<B::InnerBackend> = model.valid();`: the annotation says so too, and
        // so does a struct of plain tensors (`let model: Gpt<Wgpu> = cfg.init(..)`).
        let made_plain = self.g.spec.autodiff_by_type
            && self.g.framework_known
            && (init.is_some_and(|i| {
                !constructed_type(&i.expr).is_some_and(|t| rust::is_data_pipeline_type(&t))
                    && made_with_generic_args(&i.expr, &mut |a| self.generic_args_autodiff(a) == Some(false))
            }) || matches!(&local.pat, Pat::Type(t) if mentions_inner_backend(&t.ty, self.g.spec))
                || (!self.crate_fns.paramless_structs.is_empty()
                    && declared_type(&local.pat, init.map(|i| &*i.expr))
                        .is_some_and(|t| self.crate_fns.paramless_structs.contains(&t)))
                || on_plain_device);
        let closure = match init.map(|i| strip_parens(&i.expr)) {
            Some(Expr::Closure(_)) => Some(self.g.closures.len()),
            _ => None,
        };
        let calls_before = self.g.vocab_calls.len();
        let val = match init {
            Some(init) => {
                let v = self.expr(&init.expr);
                if let Some((_, diverge)) = &init.diverge {
                    self.expr(diverge);
                }
                if pat_is_host_scalar(&local.pat) {
                    Val::plain()
                } else if made_plain {
                    self.g.untracks_models = true;
                    Val { producer: Producer::InertModel, ..v }
                } else {
                    v
                }
            }
            None => Val::plain(),
        };
        // `let mut cache = self.cache.kvs.lock().unwrap();`: a guard on state of `self` or of a
        // parameter (where a model can keep a cache, candle).
        let guard = if self.g.spec.trainable_constructors.is_empty() {
            None
        } else {
            init.and_then(|i| {
                let e = strip_try(&i.expr);
                // `let c = self.cache.lock()`, `let cell = &mut self.slow.cell`: a part of a
                // parameter or of `self`, written through the local.
                let lent_part = matches!(e, Expr::Reference(r) if r.mutability.is_some() && matches!(strip_parens(&r.expr), Expr::Field(_)));
                if !(lent_part || matches!(e, Expr::MethodCall(_))) || std::ptr::eq(strip_place(e), e) {
                    return None;
                }
                let root = place_root(strip_place(e));
                if is_self(root) {
                    return Some(None);
                }
                let Expr::Path(p) = root else { return None };
                let slot = self.lookup(&p.path.get_ident()?.to_string())?;
                let b = self.env[slot].0;
                if self.g.bindings[b].kind != BindingKind::Param {
                    return None;
                }
                let i = self.g.params.iter().position(|p| p.and_then(|p| self.g.binding_of(p)) == Some(b))?;
                Some(Some(i))
            })
        };
        // No label shows a `let`'s value: skip computing its span.
        let span = 0..0;
        let single = (val.producer == Producer::Derived && !val.op && val.reads.len() == 1).then(|| val.reads[0]);
        let value = self.materialize(val, span.clone());
        // `let (next, onsets) = state.step(beta, gamma);` with `fn step(..) -> (Self, Tensor<B,
        // 2>)`: each name binds its element of the result.
        let elems = match (single, init) {
            (Some(result), Some(init)) => self.tuple_elems(&local.pat, &init.expr, result),
            _ => Vec::new(),
        };
        // The forward passes of the initialiser: their result is (part of) what is bound.
        if let Some(value) = value {
            for i in calls_before..self.g.vocab_calls.len() {
                if self.g.vocab_calls[i].kind == CallKind::Forward {
                    let at = self.g.vocab_calls[i].span.start;
                    self.g.let_results.push((at, value));
                }
            }
        }
        let mut names = Vec::new();
        pat_idents(&local.pat, &mut names);
        let host = pat_is_host_scalar(&local.pat)
            || (matches!(strip_pat_type(&local.pat), Pat::Ident(_)) && init.is_some_and(|i| is_number(&i.expr)));
        // `let cell = lstm(12, 64, cfg, vb.pp("lstm"))?;`: candle's recurrent cell.
        let stated = declared_type(&local.pat, init.map(|i| &*i.expr)).or_else(|| {
            if self.g.spec.trainable_constructors.is_empty() {
                return None;
            }
            let Expr::Call(c) = strip_try(&init?.expr) else { return None };
            let Expr::Path(p) = &*c.func else { return None };
            let last = &p.path.segments.last()?.ident;
            let at = common::RNN_CELL_CONSTRUCTORS.iter().position(|&k| last == k)?;
            (!self.crate_fns.fns.contains(common::RNN_CELL_CONSTRUCTORS[at]))
                .then(|| common::RNN_CELL_TYPES[at].to_string())
        });
        // `let x = xs.get(t)?;` in a loop over `t` (candle, where a cell may step over it).
        let sequence_element = !self.g.spec.trainable_constructors.is_empty()
            && self.cur_loop().is_some()
            && init.is_some_and(|i| self.element_of_sequence(&i.expr));
        // `Cache::new(false, ..)` (candle-transformers llama): a cache that keeps nothing.
        let disabled_cache = init.is_some_and(|i| {
            matches!(strip_try(&i.expr), Expr::Call(c)
                if matches!(c.args.first(), Some(Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. })) if !b.value)
                && matches!(&*c.func, Expr::Path(p) if p.path.segments.len() >= 2
                    && p.path.segments.iter().nth_back(1).is_some_and(|s| s.ident.to_string().ends_with("Cache"))))
        });
        // `let model = Llama::load(vb, &cache, config)?` with that cache disabled: the model's
        // forward keeps nothing in it either.
        let disabled_cache = disabled_cache
            || (!self.disabled_caches.is_empty()
                && init.is_some_and(|i| {
                    let args = match strip_try(&i.expr) {
                        Expr::Call(c) => &c.args,
                        Expr::MethodCall(m) => &m.args,
                        _ => return false,
                    };
                    args.iter().any(|a| {
                        let Expr::Path(p) = strip_place(a) else { return false };
                        p.path
                            .get_ident()
                            .and_then(|id| self.lookup(&id.to_string()))
                            .is_some_and(|slot| self.disabled_caches.contains(&self.env[slot].0))
                    })
                }));
        let guessed = stated.is_none().then(|| init.and_then(|i| config_init_type(&i.expr))).flatten();
        let ty_guessed = guessed.is_some();
        let ty = stated
            .or(guessed)
            .or_else(|| {
                init.is_some_and(|i| allocates_grads(&i.expr, self.g.spec)).then(|| common::GRADS_TYPE.to_string())
            })
            // `let grads = loss.backward()?`: the framework's gradient store.
            .or_else(|| {
                let spec = self.g.spec;
                let store = spec.grad_store_types.first()?;
                init.is_some_and(|i| {
                    matches!(strip_try(&i.expr), Expr::MethodCall(m)
                        if spec.backward.iter().any(|c| c.matches(&m.method.to_string(), m.args.len())))
                })
                .then(|| store.to_string())
            })
            .or_else(|| init.and_then(|i| self.type_through_unwrap(&i.expr)));
        // `let model = builder.build_model()?;` with `fn build_model(&self) -> Result<T5Model>`:
        // a guess too (the name may be another type's method).
        let returned = if ty.is_none() && !self.crate_fns.return_types.is_empty() {
            init.and_then(|i| self.returned_type(strip_try(&i.expr)))
        } else {
            None
        };
        let ty_guessed = ty_guessed || returned.is_some();
        let ty = ty.or(returned);
        // `let (ctx, step) = f()?` with `fn f() -> Result<(Ctx, usize)>`: `step` is a host number.
        let host_elems = init.and_then(|i| self.tuple_host_elems(&local.pat, &i.expr));
        // `let (model, tokenizer) = match which { .. => (Llama::load(vb)?, tok), .. }`: each
        // name's type, from the tuple the value is written as.
        let elem_types = if ty.is_none() { init.map(|i| tuple_element_types(&local.pat, &i.expr)) } else { None };
        // `let stats = TrainStats::default();` with `struct TrainStats { loss: f32, .. }`.
        let host_struct = |t: Option<&String>| t.is_some_and(|t| self.crate_fns.host_structs.contains(t.as_str()));
        let whole_host_struct = names.len() == 1 && host_struct(ty.as_ref());
        let host = host || whole_host_struct;
        // `let mut session = Session::new(env, DqnAgent::new(..));`: the types it is handed.
        let ctor_types = match (init, &ty) {
            (Some(i), Some(t)) if !ty_guessed && names.len() == 1 && self.crate_fns.param_field_structs.contains(t) => {
                self.ctor_types(&i.expr)
            }
            _ => Vec::new(),
        };
        let names_len = names.len();
        for ident in names {
            let decl = self.span(ident.span());
            let host_elem = host_elems.as_ref().is_some_and(|h| h.contains(&ident))
                || (ty.is_none()
                    && host_struct(
                        elem_types
                            .as_ref()
                            .and_then(|types| types.iter().find(|(name, _)| *name == ident))
                            .map(|(_, t)| t),
                    ));
            let value = if host_elem || whole_host_struct {
                None
            } else {
                elems.iter().find(|(i, _)| *i == ident).map(|&(_, n)| n).or(value)
            };
            let v =
                self.declare(ident.to_string(), BindingKind::Local, decl, value.map(|v| (v, Store::Let, span.clone())));
            // `let vm = VarMap::new();`, `let w: Vec<Var> = ..` (candle): trainable variables, or a
            // store of them, as a parameter of that type is.
            if self.g.framework_known
                && names_len == 1
                && let Some(var) = self.g.spec.variable_type
            {
                // A result type is a guess only where a method name may be another type's: a
                // crate function declared `-> Var` (`online_param(vm, "fc1.weight")`) states it.
                let guessed_by_method =
                    ty_guessed && !init.is_some_and(|i| matches!(strip_try(&i.expr), Expr::Call(_)));
                let ty = ty.as_deref().filter(|_| !guessed_by_method);
                let store = self.g.spec.variable_store_type;
                let (elem, holds) = match &local.pat {
                    Pat::Type(t) => (element_type_name(&t.ty), mentions_type(&t.ty, &[var])),
                    _ => (None, false),
                };
                // `let vars = student_vars(vm, n);` with `fn student_vars(..) -> Vec<(Var, Var)>`.
                let returns_vars = init
                    .and_then(|i| called_name(&i.expr))
                    .is_some_and(|n| self.crate_fns.variable_returns.contains(n.as_str()));
                if ty.is_some_and(|t| t == var || store == Some(t)) || holds || returns_vars {
                    self.params.push(v);
                }
                if elem.as_deref() == Some(var) {
                    self.variable_lists.push(ident.to_string());
                }
            }
            if disabled_cache {
                self.disabled_caches.push(self.g.bindings.len() - 1);
            }
            if sequence_element {
                self.sequence_elements.push(self.g.bindings.len() - 1);
            }
            if on_autodiff_device {
                self.g.autodiff_bound.push(self.g.bindings.len() - 1);
            }
            if !ctor_types.is_empty() {
                self.g.ctor_types.push((self.g.bindings.len() - 1, ctor_types.clone()));
            }
            if let Some(b) = self.g.bindings.last_mut() {
                b.host = host || host_elem;
                b.ty = ty.clone();
                b.ty_guessed = ty_guessed;
                if b.ty.is_none()
                    && let Some(Some((_, t))) =
                        elem_types.as_ref().map(|types| types.iter().find(|(name, _)| *name == ident))
                {
                    b.ty = Some(t.clone());
                }
            }
            if let Some(c) = closure {
                self.closure_bindings.push((self.g.bindings.len() - 1, c));
            }
            if let Some(root) = guard {
                self.g.guard_locals.push((self.g.bindings.len() - 1, root));
                if let Some(Expr::Reference(r)) = init.map(|i| strip_try(&i.expr)) {
                    self.g.guard_places.push((self.g.bindings.len() - 1, expr_text(&r.expr)));
                }
            }
        }
        if let (Pat::Ident(p), Some(i)) = (strip_pat_type(&local.pat), init)
            && let Some(types) = collected_element_types(&i.expr)
            && let Some(slot) = self.lookup(&p.ident.to_string())
        {
            self.collected_types.push((self.env[slot].0, types));
        }
        // `let target = self.targets.get_mut(name).expect(..)`: a place of the field, as in `if
        // let Some(target) = self.targets.get_mut(name)`; a write through it (`*target = ..`)
        // writes into the field.
        if let Some(i) = init
            && let Pat::Ident(p) = strip_pat_type(&local.pat)
            && let Some(m) = element_lookup(&i.expr)
            && let Some(slot) = self.place_slot(&m.receiver)
            && let Some(b) = self.lookup(&p.ident.to_string())
        {
            let owner = self.env[slot].0;
            self.mut_elements.push((self.env[b].0, owner));
        }
        // `let session = store.get_or_create(user)?`: a method of the crate that hands out a
        // mutable reference into its receiver; a write through the local writes the receiver.
        if let Some(i) = init
            && !self.crate_fns.mut_ref_returns.is_empty()
            && let Pat::Ident(p) = strip_pat_type(&local.pat)
            && let Expr::MethodCall(m) = strip_unwraps(&i.expr)
            && self.crate_fns.mut_ref_returns.contains(&m.method.to_string())
            && let Some(slot) = self.place_slot(&m.receiver)
            && let Some(b) = self.lookup(&p.ident.to_string())
        {
            let owner = self.env[slot].0;
            self.mut_elements.push((self.env[b].0, owner));
        }
        if let Pat::Type(t) = &local.pat
            && let Pat::Ident(p) = &*t.pat
            && is_trait_object_collection(&t.ty)
            && let Some(slot) = self.lookup(&p.ident.to_string())
        {
            self.dyn_collections.push(self.env[slot].0);
        }
        // `let (mover, sign): (&mut dyn Agent, f32) = ..`: a trait object, as a parameter of
        // that type is.
        if let Pat::Type(t) = &local.pat {
            let mut objects = Vec::new();
            trait_object_idents(&t.pat, &t.ty, &mut objects);
            for ident in objects {
                if let Some(slot) = self.lookup(&ident.to_string()) {
                    self.dyn_params.push(self.env[slot].0);
                }
            }
        }
    }

    /// The names a tuple pattern binds to the elements of a call of a crate function that
    /// returns a tuple of its size, each with the node of its element (see `CallSite::elems`).
    fn tuple_elems<'p>(&mut self, pat: &'p Pat, init: &Expr, result: NodeIndex) -> Vec<(&'p syn::Ident, NodeIndex)> {
        let Pat::Tuple(t) = strip_pat_type(pat) else { return Vec::new() };
        if self.crate_fns.tuple_arity.is_empty() || t.elems.iter().any(|p| matches!(p, Pat::Rest(_))) {
            return Vec::new();
        }
        if called_name(init).and_then(|n| self.crate_fns.tuple_arity.get(&n).copied()) != Some(t.elems.len()) {
            return Vec::new();
        }
        let Some(ci) = self.g.call_sites.iter().rposition(|c| c.result == result) else { return Vec::new() };
        let mut out = Vec::new();
        for p in &t.elems {
            let span = self.g.graph[result].span.clone();
            let read = |n| Val { reads: smallvec::smallvec![n], producer: Producer::Derived, op: false };
            let cut = self.value_node(read(result), span.clone());
            let elem = self.value_node(read(cut), span);
            self.g.call_sites[ci].elems.push((cut, elem));
            let mut names = Vec::new();
            pat_idents(p, &mut names);
            out.extend(names.into_iter().map(|i| (i, elem)));
        }
        out
    }

    /// The identifiers a tuple pattern binds to host-typed elements of a call to a crate
    /// function that returns a tuple (see `CrateNames::tuple_fns`).
    fn tuple_host_elems<'p>(&self, pat: &'p Pat, init: &Expr) -> Option<Vec<&'p syn::Ident>> {
        let Pat::Tuple(t) = strip_pat_type(pat) else { return None };
        let mask = self.crate_fns.tuple_fns.get(&called_name(init)?)?;
        if mask.len() != t.elems.len() {
            return None;
        }
        let mut out = Vec::new();
        for (p, &host) in t.elems.iter().zip(mask) {
            if host {
                pat_idents(p, &mut out);
            }
        }
        Some(out)
    }

    /// Binds the identifiers of `pat` to `val` (match arms, `for` patterns, `if let`, closures).
    /// A `for` pattern: a pair over `a.zip(b)` binds each side's element from that side.
    fn bind_for_pat(&mut self, pat: &Pat, val: Val, pair: Option<(Val, Val)>, span: Span) {
        match (strip_pat_type(pat), pair) {
            (Pat::Tuple(t), Some((left, right))) if t.elems.len() == 2 => {
                self.bind_pat(&t.elems[0], left, span.clone());
                self.bind_pat(&t.elems[1], right, span);
            }
            _ => self.bind_pat(pat, val, span),
        }
    }

    fn bind_pat(&mut self, pat: &Pat, val: Val, span: Span) {
        let mut names = Vec::new();
        pat_idents(pat, &mut names);
        if names.is_empty() {
            return;
        }
        let value = self.materialize(val, span.clone());
        let unwrapped = is_some_pat(pat);
        for ident in names {
            let decl = self.span(ident.span());
            let v =
                self.declare(ident.to_string(), BindingKind::Local, decl, value.map(|v| (v, Store::Let, span.clone())));
            if unwrapped {
                self.unwrapped.insert(v);
            }
        }
    }

    // ----- expressions ------------------------------------------------------------------

    fn expr(&mut self, e: &Expr) -> Val {
        if self.depth >= MAX_DEPTH {
            return Val::plain();
        }
        self.depth += 1;
        let v = self.expr_inner(e);
        self.depth -= 1;
        v
    }

    /// The fields along a place that a write may change, by name (`agent.target.l1.weight`,
    /// `*self.total.lock()`; see `FnModel::fields_written`). Only where a module kept apart can
    /// matter (burn 0.19 on).
    fn note_written(&mut self, place: &Expr) {
        if !self.g.spec.untrained_graphs_kept {
            return;
        }
        let mut p = place;
        loop {
            p = match strip_parens(p) {
                Expr::Field(f) => {
                    if let syn::Member::Named(name) = &f.member {
                        let span = self.span(name.span());
                        self.g.fields_written.push(span);
                    }
                    &f.base
                }
                Expr::Index(i) => &i.expr,
                Expr::MethodCall(m) => &m.receiver,
                Expr::Unary(u) => &u.expr,
                Expr::Try(t) => &t.expr,
                Expr::Tuple(t) => {
                    for e in &t.elems {
                        self.note_written(e);
                    }
                    return;
                }
                _ => return,
            };
        }
    }

    fn exprs<'a>(&mut self, es: impl IntoIterator<Item = &'a Expr>, op: bool) -> Val {
        let parts: Vec<(Val, Span)> = es.into_iter().map(|e| (self.expr(e), self.cheap(e))).collect();
        self.combine(parts, op)
    }

    fn expr_inner(&mut self, e: &Expr) -> Val {
        match e {
            Expr::Path(p) => self.path_read(p),
            Expr::Lit(_) => Val::plain(),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Reference(r) => {
                if r.mutability.is_some() {
                    self.note_written(&r.expr);
                }
                self.expr(&r.expr)
            }
            Expr::Try(t) => self.expr(&t.expr),
            Expr::Await(a) => self.expr(&a.base),
            Expr::Unary(u) => self.unary(e, u),
            Expr::Cast(c) => {
                self.expr(&c.expr);
                Val::plain()
            }
            Expr::Field(f) => self.field_read(f),
            Expr::Index(i) => {
                let base = self.expr(&i.expr);
                self.expr(&i.index);
                base
            }
            Expr::Binary(b) => {
                if is_compound_assign(&b.op) {
                    self.note_written(&b.left);
                }
                self.binary(b)
            }
            Expr::Assign(a) => {
                // `x = if c { a } else { b }` is `if c { x = a } else { x = b }`: each branch's write
                // is on that branch (a state kept only when a flag is on).
                if let Expr::If(i) = strip_parens(&a.right)
                    && let Some(branches) = assign_in_branches(&a.left, i)
                {
                    return self.expr(&Expr::If(branches));
                }
                self.note_written(&a.left);
                self.assign(&a.left, &a.right, self.between(first_token(&a.left), last_token(&a.right)));
                Val::plain()
            }
            Expr::MethodCall(m) => self.method_call(m),
            Expr::Call(c) => self.call(c),
            Expr::Macro(m) => self.mac(&m.mac),
            Expr::Block(b) => self.block(&b.block),
            Expr::Unsafe(u) => self.block(&u.block),
            Expr::Const(c) => self.block(&c.block),
            Expr::Async(a) => self.branch(|s| s.block(&a.block)),
            Expr::If(i) => self.if_expr(i),
            Expr::Match(m) => self.match_expr(m),
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                self.loop_expr(e);
                Val::plain()
            }
            Expr::Let(l) => {
                // `if let` / `while let`: the pattern's bindings live in the enclosing scope
                // pushed by the caller.
                // An element looked up to change in place is part of the collection, whatever
                // the key it was found by (a parameter's name, read from a `VarMap`).
                let v = match strip_parens(&l.expr) {
                    Expr::MethodCall(m) if let_looks_up_element(l) => {
                        let element = self.expr(&m.receiver);
                        self.exprs(m.args.iter(), false);
                        element
                    }
                    _ => self.expr(&l.expr),
                };
                let span = self.cheap(&l.expr);
                let first = self.g.bindings.len();
                self.bind_pat(&l.pat, v, span);
                // `if let Some(avg) = self.shadow.get_mut(name)`: a place of the field; a write
                // through it (`*avg = ..`) writes into the field.
                if let Expr::MethodCall(m) = strip_parens(&l.expr)
                    && matches!(m.method.to_string().as_str(), "get_mut" | "last_mut" | "first_mut")
                    && let Some(slot) = self.place_slot(&m.receiver)
                {
                    let owner = self.env[slot].0;
                    self.mut_elements.extend((first..self.g.bindings.len()).map(|b| (b, owner)));
                }
                Val::plain()
            }
            Expr::Closure(c) => self.closure(c),
            Expr::Tuple(t) if self.ret_tuples.contains(&(t as *const _)) => self.returned_tuple(t),
            Expr::Tuple(t) => self.exprs(t.elems.iter(), false),
            Expr::Array(a) => self.exprs(a.elems.iter(), false),
            Expr::Repeat(r) => self.expr(&r.expr),
            Expr::Struct(s) => self.struct_literal(s),
            Expr::Range(r) => {
                self.exprs(r.start.iter().chain(r.end.iter()).map(|b| &**b), false);
                Val::plain()
            }
            Expr::Return(r) => {
                if let Some(e) = &r.expr {
                    let v = self.expr(e);
                    self.returned(v);
                }
                Val::plain()
            }
            Expr::Break(syn::ExprBreak { expr: Some(e), .. }) | Expr::Yield(syn::ExprYield { expr: Some(e), .. }) => {
                self.expr(e);
                Val::plain()
            }
            Expr::TryBlock(t) => self.block(&t.block),
            _ => Val::plain(),
        }
    }

    /// `Probe { backbone: b.no_grad(), head }`: its value reads every field's; the fields that
    /// may hold a model are noted as written (see `FnModel::field_writes`).
    fn struct_literal(&mut self, s: &syn::ExprStruct) -> Val {
        let ty = s.path.segments.last().map(|seg| seg.ident.to_string());
        let ty = match ty.as_deref() {
            Some("Self") => self.g.owner.clone(),
            _ => ty,
        };
        let mut parts = Vec::with_capacity(s.fields.len() + 1);
        for f in &s.fields {
            let v = self.expr(&f.expr);
            if let (Some(ty), syn::Member::Named(field)) = (&ty, &f.member)
                && (v.producer != Producer::Plain || !v.reads.is_empty())
            {
                let n = self.value_node(v.clone(), 0..0);
                self.g.field_writes.push((ty.clone(), field.to_string(), n));
            }
            parts.push((v, self.cheap(&f.expr)));
        }
        if let Some(rest) = &s.rest {
            parts.push((self.expr(rest), self.cheap(rest)));
        }
        self.combine(parts, false)
    }

    /// `-x`, `!x`, `*x`: negation is a tensor op; a dereference reads its operand.
    fn unary(&mut self, e: &Expr, u: &syn::ExprUnary) -> Val {
        let v = self.expr(&u.expr);
        match u.op {
            syn::UnOp::Deref(_) => v,
            _ => {
                if matches!(u.op, syn::UnOp::Neg(_)) && self.after_backward() {
                    let span = self.full(e);
                    self.note_op_after_backward(&v, span);
                }
                self.combine(vec![(v, self.cheap(&u.expr))], true)
            }
        }
    }

    /// `for`, `while` and `loop`: a loop scope around the body (see [`Builder::looped`]).
    fn loop_expr(&mut self, e: &Expr) {
        match e {
            Expr::ForLoop(f) => {
                // `for (avg, w) in avgs.iter_mut().zip(weights)`: each side binds its own
                // element, not one made of both.
                let pair = match (strip_parens(&f.expr), strip_pat_type(&f.pat)) {
                    (Expr::MethodCall(m), Pat::Tuple(t))
                        if m.method == "zip" && m.args.len() == 1 && t.elems.len() == 2 =>
                    {
                        Some((self.expr(&m.receiver), self.expr(&m.args[0])))
                    }
                    _ => None,
                };
                let iter = match &pair {
                    Some((left, right)) => {
                        let span = self.cheap(&f.expr);
                        self.combine(vec![(left.clone(), span.clone()), (right.clone(), span)], false)
                    }
                    None => self.expr(&f.expr),
                };
                // `for i in 0..self.n_layers { self.layers[i].. }` walks the model's parts;
                // `for t in (0..self.steps).rev() { z = self.denoise(z, t) }` repeats one.
                let over_self = root_is_self(&f.expr)
                    && (!is_range(&f.expr) || indexes_self(&f.body, &self.crate_fns.host_array_fields));
                let header = self.span(f.for_token.span).start..self.span(last_token(&f.expr)).end;
                let pat_span = self.cheap_pat(&f.pat);
                let id = self.g.loops.len();
                let mark = self.counters.len();
                // `for episode in 0..n`: the loop variable counts the iterations.
                if is_range(&f.expr)
                    && let Pat::Ident(p) = strip_pat_type(&f.pat)
                {
                    self.counters.push(p.ident.to_string());
                }
                counters_in(&f.body, &mut self.counters);
                let literal_count = literal_count(&f.expr, &|name| self.named_count(name));
                let over_variables = iterates_variables(&f.expr);
                // `for i in 0..t` with `let (b, t) = tgt.dims2()?`: the length of an input.
                // So is the model's context length (`for pos in 0..cfg.block_size`): what one
                // training pass over a block holds.
                let over_dim = match strip_parens(&f.expr) {
                    Expr::Range(r) => r.end.as_deref().is_some_and(|end| match strip_parens(end) {
                        Expr::Path(p) => p.path.get_ident().is_some_and(|i| {
                            self.dim_locals.iter().any(|d| i == d) || frameworks::is_context_length_name(&i.to_string())
                        }),
                        Expr::Field(fe) => {
                            matches!(&fe.member, syn::Member::Named(n) if frameworks::is_context_length_name(&n.to_string()))
                        }
                        e => is_shape_read(e),
                    }),
                    _ => false,
                };
                // `for block in self.blocks.iter()`: each binding is a part of `self` (candle: a
                // part may keep a cache).
                let alias =
                    !self.g.spec.trainable_constructors.is_empty() && root_is_self(&f.expr) && !is_range(&f.expr);
                let alias_field = if alias { self_field_of(&f.expr) } else { None };
                // `for s in states.iter_mut()`, `for s in &mut states`: each element is a place
                // of the local `states`.
                // So is the first of each pair of `shadows.iter_mut().zip(weights)` and the
                // element of `states.iter_mut().enumerate()`.
                let walked = match strip_parens(&f.expr) {
                    Expr::MethodCall(m) if m.method == "iter_mut" && m.args.is_empty() => Some(&*m.receiver),
                    Expr::MethodCall(m) if m.method == "zip" || m.method == "enumerate" => {
                        match strip_parens(&m.receiver) {
                            Expr::MethodCall(r) if r.method == "iter_mut" && r.args.is_empty() => Some(&*r.receiver),
                            _ => None,
                        }
                    }
                    Expr::Reference(r) if r.mutability.is_some() => Some(&*r.expr),
                    _ => None,
                };
                // `st.per_layer`: a part of a local, not a field of `self`.
                let part_of_local =
                    walked.is_some_and(|e| matches!(strip_parens(e), Expr::Field(fl) if !is_self(&fl.base)));
                let mut_owner = walked
                    .and_then(|e| match strip_parens(e) {
                        Expr::Path(p) => p.path.get_ident().and_then(|i| self.lookup(&i.to_string())),
                        // `for h in self.hs.iter_mut()`: each element is a place of the field;
                        // `for h in st.per_layer.iter_mut()`: of the local's part.
                        Expr::Field(_) => self.place_slot(e),
                        _ => None,
                    })
                    .map(|slot| self.env[slot].0);
                // `for i in 0..self.hs.len()`: each index names an element of the field.
                let index_owner = match strip_parens(&f.expr) {
                    Expr::Range(r)
                        if r.start.as_deref().is_none_or(is_zero_literal)
                            && matches!(r.limits, syn::RangeLimits::HalfOpen(_)) =>
                    {
                        match r.end.as_deref().map(strip_parens) {
                            Some(Expr::MethodCall(m)) if m.method == "len" && m.args.is_empty() => {
                                self.place_slot(&m.receiver.clone())
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                }
                .map(|slot| self.env[slot].0);
                // `for (s, agent, env) in seats.iter_mut()` over a local collected from built
                // elements: the types of the parts.
                let collected = (!self.collected_types.is_empty()).then(|| iterated_local(&f.expr)).flatten().and_then(
                    |(id, enumerated)| {
                        let b = self.env[self.lookup(&id.to_string())?].0;
                        let types = self.collected_types.iter().rev().find(|(c, _)| *c == b)?.1.clone();
                        Some((types, enumerated))
                    },
                );
                // `for x in loader.iter() { ..; break; }`, `for _ in 0..1`: a block that runs at
                // most once, not a loop.
                if literal_count == Some(1) || runs_once(&f.body) {
                    self.counters.truncate(mark);
                    self.at_most_once(|s| {
                        s.bind_for_pat(&f.pat, iter, pair, pat_span);
                        s.block(&f.body);
                    });
                    return;
                }
                let mut body_path = Vec::new();
                self.looped(header.clone(), |s| {
                    s.g.loops[id].over_self = over_self;
                    s.g.loops[id].literal_count = literal_count.map(saturate);
                    s.g.loops[id].over_variables = over_variables;
                    s.g.loops[id].over_dim = over_dim;
                    body_path = s.path.clone();
                    let first = s.g.bindings.len();
                    s.bind_for_pat(&f.pat, iter, pair, pat_span);
                    s.g.loops[id].pattern = first..s.g.bindings.len();
                    if let Some((types, enumerated)) = &collected {
                        s.type_collected_pattern(&f.pat, types, *enumerated, first);
                        // Walked mutably, each built element lives in the local: what a call keeps
                        // in it, the local keeps (as for trait objects, below).
                        if let Some(owner) = mut_owner {
                            s.g.element_owners.extend((first..s.g.bindings.len()).map(|b| (b, owner)));
                        }
                    }
                    if let Some(name) = s.variable_element(&f.expr, &f.pat)
                        && let Some(slot) = s.lookup(&name)
                        && s.env[slot].0 >= first
                    {
                        let node = s.env[slot].1;
                        s.params.push(node);
                    }
                    if s.g.bindings.len() == first + 1 && s.walks_trait_objects(&f.expr) {
                        s.dyn_params.push(first);
                        s.dyn_elements.push(first);
                        // What a call keeps in the element, it keeps in the collection.
                        if let Some(owner) = mut_owner {
                            s.g.element_owners.push((first, owner));
                        }
                    }
                    if let Some(owner) = mut_owner {
                        s.mut_elements.extend((first..s.g.bindings.len()).map(|b| (b, owner)));
                    }
                    if let Some(owner) = index_owner
                        && s.g.bindings.len() == first + 1
                    {
                        s.index_walks.push((first, owner));
                    }
                    if alias {
                        s.g.guard_locals.extend((first..s.g.bindings.len()).map(|b| (b, None)));
                        if let Some(field) = &alias_field {
                            s.element_of.extend((first..s.g.bindings.len()).map(|b| (b, field.clone())));
                        }
                    }
                    s.block(&f.body);
                });
                // `for h in self.hs.iter_mut() { *h = h.detach(); }`: every element was replaced.
                if let Some(owner) = mut_owner.or(index_owner)
                    && let Some(&(_, value, _)) =
                        self.element_writes.iter().rev().find(|(o, _, path)| *o == owner && *path == body_path)
                    && let Some(slot) = self.env.iter().rposition(|(b, _)| *b == owner)
                {
                    if part_of_local && mut_owner == Some(owner) {
                        // A part of a local (`st.per_layer`): what the local keeps there starts
                        // afresh, its other parts stay as they were.
                        let reset = (owner, self.cur_loop());
                        self.g.resets.push(reset);
                    } else {
                        self.write(slot, value, Store::Assign, header, false);
                    }
                }
                // `for c in self.cells.iter_mut() { c.reset(); }`: every element starts afresh.
                if let Some(owner) = mut_owner
                    && self.element_resets.iter().any(|(o, path)| *o == owner && *path == body_path)
                {
                    let reset = (owner, self.cur_loop());
                    self.g.resets.push(reset);
                }
                self.counters.truncate(mark);
            }
            Expr::While(w) if runs_once(&w.body) => self.at_most_once(|s| {
                s.expr(&w.cond);
                s.block(&w.body);
            }),
            Expr::Loop(l) if runs_once(&l.body) => self.at_most_once(|s| {
                s.block(&l.body);
            }),
            Expr::While(w) => {
                let header = self.span(w.while_token.span).start..self.span(last_token(&w.cond)).end;
                let mark = self.counters.len();
                counters_in(&w.body, &mut self.counters);
                self.looped(header, |s| {
                    s.expr(&w.cond);
                    s.block(&w.body);
                });
                self.counters.truncate(mark);
            }
            Expr::Loop(l) => {
                let header = self.span(l.loop_token.span);
                let mark = self.counters.len();
                counters_in(&l.body, &mut self.counters);
                self.looped(header, |s| {
                    s.block(&l.body);
                });
                self.counters.truncate(mark);
            }
            _ => {}
        }
    }

    /// burn 0.22: whether `e` builds something with a plain device of the function and with no
    /// autodiff one (`Mlp::new(784, 1024, &device).load_file(.., &device)`,
    /// `Net::new(&Device::default())`), in a function that makes an autodiff device.
    fn built_on_plain_device(&self, e: &Expr) -> bool {
        self.device_mentions(e).is_some_and(|(plain, autodiff)| plain && !autodiff)
    }

    /// burn 0.22: whether call `e` is handed a plain device and whether an autodiff one (`None`:
    /// the function makes no autodiff device, or `e` is no call).
    fn device_mentions(&self, e: &Expr) -> Option<(bool, bool)> {
        use syn::visit::Visit;
        struct Mentions<'a> {
            devices: &'a (Vec<String>, Vec<String>),
            method: &'a str,
            plain: bool,
            autodiff: bool,
        }
        impl<'a> Visit<'a> for Mentions<'_> {
            fn visit_expr_path(&mut self, p: &'a syn::ExprPath) {
                if let Some(i) = p.path.get_ident() {
                    let name = i.to_string();
                    self.autodiff |= self.devices.0.contains(&name);
                    self.plain |= self.devices.1.contains(&name);
                }
            }
            fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
                // `Device::default()`, `Default::default()` handed as a device.
                if let Expr::Path(p) = &*c.func
                    && p.path.segments.last().is_some_and(|s| s.ident == "default")
                    && c.args.is_empty()
                {
                    self.plain = true;
                }
                syn::visit::visit_expr_call(self, c);
            }
            fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
                self.autodiff |= m.method == self.method && m.args.is_empty();
                syn::visit::visit_expr_method_call(self, m);
            }
            fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        }
        let devices = self.devices.as_ref()?;
        // Only a call that is handed a device builds on one.
        if !matches!(strip_try(e), Expr::Call(_) | Expr::MethodCall(_)) {
            return None;
        }
        let method = self.g.spec.autodiff_device_method?;
        let mut m = Mentions { devices, method, plain: false, autodiff: false };
        // What the call is handed, not the call itself: `AlertLog::default()` makes no device.
        match strip_try(e) {
            Expr::Call(c) => c.args.iter().for_each(|a| m.visit_expr(a)),
            Expr::MethodCall(c) => {
                m.autodiff |= c.method == method && c.args.is_empty();
                m.visit_expr(&c.receiver);
                c.args.iter().for_each(|a| m.visit_expr(a));
            }
            _ => {}
        }
        Some((m.plain, m.autodiff))
    }

    /// burn 0.22: whether `args` hand the plain device (a binding named so, `Device::default()`,
    /// their clones) and otherwise only literals: nothing a model or the autodiff device is in.
    fn hands_only_plain_device<'e>(&self, args: impl Iterator<Item = &'e Expr>) -> bool {
        let Some((_, plain)) = self.devices.as_ref() else { return false };
        let mut seen = false;
        for a in args {
            let mut e = strip_parens(a);
            while let Expr::Reference(r) = e {
                e = strip_parens(&r.expr);
            }
            if let Expr::MethodCall(m) = e
                && m.method == "clone"
                && m.args.is_empty()
            {
                e = strip_parens(&m.receiver);
            }
            match e {
                Expr::Lit(_) => {}
                Expr::Path(p) if p.path.get_ident().is_some_and(|i| plain.iter().any(|n| i == n)) => seen = true,
                Expr::Call(c)
                    if c.args.is_empty()
                        && matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "default")) =>
                {
                    seen = true;
                }
                _ => return false,
            }
        }
        seen
    }

    /// The body of a loop that runs at most once ([`runs_once`]): a branch, whose bindings end
    /// with it.
    fn at_most_once(&mut self, body: impl FnOnce(&mut Self)) {
        let mark = self.env.len();
        self.branch(body);
        self.env.truncate(mark);
    }

    /// A closure body is a branch: it may run any number of times, or never.
    fn closure(&mut self, c: &syn::ExprClosure) -> Val {
        let index = self.g.closures.len();
        // The closure an enclosing closure's body ends with: that closure's value.
        let returned = self.closure_tails.last().is_some_and(|&tail| std::ptr::eq(tail, c));
        self.g.closures.push(super::graph::ClosureScope {
            runs_forward: false,
            runs_backward: false,
            steps: false,
            clears: false,
            looped_by: None,
            returned,
            nodes: 0..0,
            def_loop: self.cur_loop(),
            params: Vec::new(),
        });
        let first_node = self.g.graph.node_count() as u32;
        self.closure_tails.push(tail_closure(&c.body).map_or(std::ptr::null(), |t| t as *const _));
        let mut state = self.closure_state.take();
        let dyn_walk = self.closure_dyn_walk.take();
        let v = self.branch(|s| {
            let mark = s.env.len();
            for (k, input) in c.inputs.iter().enumerate() {
                let span = s.cheap_pat(input);
                let before = s.env.len();
                s.bind_pat(input, state.take().unwrap_or_else(Val::plain), span);
                let param = (s.env.len() == before + 1).then(|| s.env[before].1);
                if k == 0
                    && param.is_some()
                    && let Some(owner) = dyn_walk
                {
                    let b = s.env[before].0;
                    s.dyn_params.push(b);
                    s.dyn_elements.push(b);
                    if let Some(owner) = owner {
                        s.g.element_owners.push((b, owner));
                    }
                }
                // `|b: &Batch, teacher: &mut EmaTeacher|`: the type its annotation states.
                if let (Some(_), Pat::Type(t)) = (param, input) {
                    let b = s.env[before].0;
                    if s.g.bindings[b].ty.is_none() {
                        s.g.bindings[b].ty = type_name(&t.ty);
                    }
                }
                s.g.closures[index].params.push(param);
            }
            s.closure_stack.push((index, mark, s.env.len()));
            let v = s.expr(&c.body);
            s.closure_stack.pop();
            s.env.truncate(mark);
            v
        });
        self.g.closures[index].nodes = first_node..self.g.graph.node_count() as u32;
        self.closure_tails.pop();
        v
    }

    /// `act(obs)` with `let act = |obs| { .. }` bound earlier: the closure's backward and forward
    /// passes run here, in the loops and branches around this call (its body is walked where it
    /// is written, maybe outside them).
    fn run_bound_closure(&mut self, closure: usize, name: &syn::Ident, call: &syn::ExprCall) {
        // Its body's values and writes happen in the loop of its first call in a loop nested in
        // the one it is written in (its own loops keep theirs). (What the call hands in flows
        // into the inputs: see the caller.)
        let Some(scope) = self.g.closures.get(closure) else { return };
        let here = self.cur_loop();
        if here.is_some() && here != scope.def_loop {
            let (def, nodes) = (scope.def_loop, scope.nodes.clone());
            for n in nodes {
                let node = &mut self.g.graph[NodeIndex::new(n as usize)];
                if node.in_loop == def {
                    node.in_loop = here;
                }
            }
            // So do the calls of the crate its body makes (`teacher.update(&varmap)?` in a
            // training step written as a closure).
            for site in self.g.call_sites.iter_mut().filter(|s| s.closure == Some(closure) && s.in_loop == def) {
                site.in_loop = here;
            }
        }
        let Some(scope) = self.g.closures.get(closure) else { return };
        if !(scope.runs_backward || scope.runs_forward) {
            return;
        }
        let span = self.between(first_token(&call.func), call.paren_token.span.close());
        if self.g.closures[closure].runs_backward {
            self.record_call(TrainingCallKind::Backward, span.clone(), name.to_string());
            // Its steps and clears run here too (`fit_batch(&x, &y)` once per batch); the
            // receiver `fit_batch()` names no optimizer of its own.
            let (steps, clears) = (self.g.closures[closure].steps, self.g.closures[closure].clears);
            if clears {
                self.record_call(TrainingCallKind::Clear, span.clone(), format!("{name}()"));
            }
            if steps {
                self.record_call(TrainingCallKind::Step, span.clone(), format!("{name}()"));
            }
        }
        let here = self.cur_loop();
        let forward = self
            .g
            .vocab_calls
            .iter()
            .find(|v| v.kind == CallKind::Forward && v.closure == Some(closure) && v.in_loop != here)
            .cloned();
        // dfdx: a store the closure allocates or copies is made on every call, here.
        let stores: Vec<super::graph::VocabCall> = self
            .g
            .vocab_calls
            .iter()
            .filter(|v| {
                matches!(v.kind, CallKind::AllocGrads | CallKind::GradsCopy)
                    && v.closure == Some(closure)
                    && v.in_loop != here
                    && !v.lazy
            })
            .cloned()
            .collect();
        for mut v in stores {
            v.span = span.clone();
            v.in_loop = here;
            v.path = self.path.clone();
            v.closure = self.closure_stack.last().map(|&(c, _, _)| c);
            self.g.vocab_calls.push(v);
        }
        if let Some(mut v) = forward {
            self.mark_forward();
            v.span = span.clone();
            v.fix_span = None;
            v.in_loop = here;
            v.no_grad |= self.no_grad > 0;
            v.path = self.path.clone();
            v.guard_fields = self.guard_fields.clone();
            v.closure = self.closure_stack.last().map(|&(c, _, _)| c);
            self.g.vocab_calls.push(v);
        }
    }

    /// candle: the binding of `pat` that takes the elements of a parameter holding trainable
    /// variables, walked beside places written in turn (the second of
    /// `shadows.iter_mut().zip(vars)`).
    fn variable_element(&self, iter: &Expr, pat: &Pat) -> Option<String> {
        // `sources: Vec<Var>` among the fields of `self`'s type.
        let fields = match (&self.g.owner, self.g.spec.variable_type) {
            (Some(owner), Some(var)) if self.has_self && self.g.framework_known => {
                self.crate_fns.variable_fields.get(owner).map(|fs| {
                    fs.iter()
                        .filter(|(_, elem, list)| *list && elem == var)
                        .map(|(f, ..)| f.as_str())
                        .collect::<Vec<_>>()
                })
            }
            _ => None,
        }
        .unwrap_or_default();
        if self.variable_lists.is_empty() && fields.is_empty() {
            return None;
        }
        let is_list = |e: &Expr| {
            let e = match strip_parens(e) {
                Expr::MethodCall(m) if m.method == "iter" && m.args.is_empty() => &*m.receiver,
                Expr::Reference(r) => &*r.expr,
                e => e,
            };
            match strip_parens(e) {
                Expr::Path(p) => p.path.get_ident().is_some_and(|i| self.variable_lists.iter().any(|v| i == v)),
                Expr::Field(f) => {
                    is_self(&f.base)
                        && matches!(&f.member, syn::Member::Named(n) if fields.iter().any(|&field| n == field))
                }
                _ => false,
            }
        };
        let ident = |p: &Pat| match strip_pat_type(p) {
            Pat::Ident(i) => Some(i.ident.to_string()),
            _ => None,
        };
        // Only beside places written in turn (`shadows.iter_mut()`): a blend of each element with
        // its variable. A plain walk over the variables (`for v in vars { grads.remove(v) }`)
        // is bookkeeping more often than arithmetic.
        match strip_parens(iter) {
            Expr::MethodCall(m)
                if m.method == "zip" && m.args.len() == 1 && is_list(&m.args[0]) && places_in_turn(&m.receiver) =>
            {
                match strip_pat_type(pat) {
                    Pat::Tuple(t) if t.elems.len() == 2 => ident(&t.elems[1]),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// A forward pass runs here: in every enclosing loop and closure, or in the body.
    fn mark_forward(&mut self) {
        for &l in &self.loop_stack {
            self.g.loops[l].runs_forward = true;
        }
        // Innermost first, up to a closure that is returned rather than run.
        for &(c, _, _) in self.closure_stack.iter().rev() {
            self.g.closures[c].runs_forward = true;
            if self.g.closures[c].returned {
                return;
            }
        }
        self.g.runs_forward = true;
    }

    /// Where the store that `e` names a path of comes from: `vs.root()`, `&vs.root() / "fc"`,
    /// `self.vs.root()`, `p / "w"`, `p.sub("w")`. `None` when `e` names no store path (a bare
    /// name is not enough: `std::path::Path` is a `Path` too).
    fn var_root(&self, e: &Expr) -> Option<super::graph::VarRoot> {
        match e {
            Expr::Reference(r) => self.var_root(&r.expr),
            Expr::Paren(p) => self.var_root(&p.expr),
            Expr::Binary(b) if matches!(b.op, syn::BinOp::Div(_)) && names_a_path_segment(&b.right) => {
                self.var_root(&b.left).or_else(|| self.store_root(&b.left))
            }
            Expr::MethodCall(m) if m.method == "root" && m.args.is_empty() => self.store_root(&m.receiver),
            Expr::MethodCall(m) if m.method == "sub" && m.args.len() == 1 && names_a_path_segment(&m.args[0]) => {
                self.var_root(&m.receiver).or_else(|| self.store_root(&m.receiver))
            }
            _ => None,
        }
    }

    /// The origin of the store named by `e` (the receiver of `.root()`, or a path's base).
    fn store_root(&self, e: &Expr) -> Option<super::graph::VarRoot> {
        use super::graph::VarRoot;
        match strip_place(e) {
            Expr::Field(f) if matches!(&*f.base, Expr::Path(p) if p.path.is_ident("self")) => Some(VarRoot::Field),
            Expr::Field(_) => Some(VarRoot::Unknown),
            Expr::Path(p) => {
                let ident = p.path.get_ident()?.to_string();
                Some(self.lookup(&ident).map_or(VarRoot::Unknown, |slot| self.root_of_slot(slot)))
            }
            _ => Some(VarRoot::Unknown),
        }
    }

    /// Where the binding in env slot `slot` comes from, seen from here.
    fn root_of_slot(&self, slot: usize) -> super::graph::VarRoot {
        use super::graph::VarRoot;
        let binding = &self.g.bindings[self.env[slot].0];
        if binding.kind == BindingKind::Param {
            return VarRoot::Param;
        }
        match self.closure_stack.last() {
            Some(&(_, params, body)) if slot >= params && slot < body => VarRoot::Param,
            Some(&(_, params, _)) if slot < params => VarRoot::Captured,
            _ => VarRoot::Local { decl_loop: binding.decl_loop },
        }
    }

    /// Records variables created in a store, when `first` (the first argument) or `receiver`
    /// names a store path.
    fn note_var_creation(&mut self, span: Span, root: super::graph::VarRoot) {
        // Made only when missing (`if self.head.is_none() { .. }`): once, not per call.
        if self.lazy_init > 0 {
            return;
        }
        let closure = self.closure_stack.last().map(|&(c, _, _)| c);
        let in_loop = self.cur_loop();
        self.g.var_creations.push(super::graph::VarCreation { span, in_loop, closure, root });
    }

    fn path_read(&mut self, p: &syn::ExprPath) -> Val {
        if p.qself.is_none()
            && let Some(ident) = p.path.get_ident()
            && let Some(slot) = self.lookup(&ident.to_string())
        {
            return Val { reads: smallvec::smallvec![self.env[slot].1], producer: Producer::Derived, op: false };
        }
        Val::plain()
    }

    fn field_read(&mut self, f: &syn::ExprField) -> Val {
        // A field declared with a host type (`policy_loss: f32`) never holds a graph.
        if let syn::Member::Named(name) = &f.member
            && self.crate_fns.plain_fields.contains(&name.to_string())
        {
            let base = self.expr(&f.base);
            return Val { producer: Producer::Plain, ..base };
        }
        if is_self(&f.base)
            && self.has_self
            && let syn::Member::Named(name) = &f.member
            && let Some(slot) = self.self_field(&name.to_string())
        {
            return Val { reads: smallvec::smallvec![self.env[slot].1], producer: Producer::Derived, op: false };
        }
        self.expr(&f.base)
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Val {
        use syn::BinOp::*;
        match b.op {
            AddAssign(_) | SubAssign(_) | MulAssign(_) | DivAssign(_) => {
                let rhs = self.expr(&b.right);
                let lhs = self.expr(&b.left);
                let span = self.between(first_token(&b.left), last_token(&b.right));
                if let Some(slot) = self.place_slot(&b.left) {
                    // `*totals.entry(name.clone()).or_default() += x`: the new value is the
                    // place's old one and `x`; the key only picks the place.
                    let lhs =
                        Val { reads: smallvec::smallvec![self.env[slot].1], producer: Producer::Derived, op: lhs.op };
                    let parts = vec![(lhs, self.cheap(&b.left)), (rhs, self.cheap(&b.right))];
                    let val = self.combine(parts, true);
                    let value = self.value_node(val, self.full(&b.right));
                    self.write(slot, value, Store::Fold, span, false);
                }
                Val::plain()
            }
            Eq(_) | Lt(_) | Le(_) | Ne(_) | Ge(_) | Gt(_) | And(_) | Or(_) => {
                self.expr(&b.left);
                self.expr(&b.right);
                Val::plain()
            }
            _ => {
                let l = self.expr(&b.left);
                let r = self.expr(&b.right);
                if self.after_backward() {
                    let span = self.between(first_token(&b.left), last_token(&b.right));
                    self.note_op_after_backward(&l, span.clone());
                    self.note_op_after_backward(&r, span);
                }
                let parts = vec![(l, self.cheap(&b.left)), (r, self.cheap(&b.right))];
                let val = self.combine(parts, true);
                if matches!(b.op, Add(_) | Sub(_)) { self.additive(val) } else { val }
            }
        }
    }

    /// burn: remembers a sum or difference (the shape of a blend `a * (1 - tau) + b * tau`).
    fn additive(&mut self, val: Val) -> Val {
        if !self.tracks_params() {
            return val;
        }
        let n = self.value_node(val, 0..0);
        self.g.additive_nodes.push(n);
        Val { reads: smallvec::smallvec![n], producer: Producer::Derived, op: false }
    }

    fn assign(&mut self, left: &Expr, right: &Expr, span: Span) {
        // `(best, best_record) = (err, model.clone().into_record())`: each place is given its own
        // element (all evaluated before any is written: `(a, b) = (b, a)` swaps).
        if let (Expr::Tuple(t), Expr::Tuple(r)) = (strip_parens(left), strip_parens(right))
            && t.elems.len() == r.elems.len()
        {
            let values: Vec<(Val, Span)> = r.elems.iter().map(|e| (self.expr(e), self.full(e))).collect();
            for (place, (rhs, at)) in t.elems.iter().zip(values) {
                let Some(slot) = self.place_slot(place) else { continue };
                let how = self.store_kind(&rhs, self.env[slot].1);
                let value = self.value_node(rhs, at);
                self.write(slot, value, how, span.clone(), false);
            }
            return;
        }
        // `(h, c) = cell.forward(&x, &h, &c)?`: each place is given (a part of) the value.
        if let Expr::Tuple(t) = strip_parens(left) {
            let rhs = self.expr(right);
            let places: Vec<(usize, Store)> = t
                .elems
                .iter()
                .filter_map(|e| {
                    let slot = self.place_slot(e)?;
                    Some((slot, self.store_kind(&rhs, self.env[slot].1)))
                })
                .collect();
            let value = self.value_node(rhs, self.full(right));
            for (slot, how) in places {
                self.write(slot, value, how, span.clone(), false);
            }
            return;
        }
        let rhs = self.expr(right);
        // `*self = Self::default();`: a method that starts its whole receiver afresh.
        if self.has_self
            && let Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) = strip_parens(left)
            && is_self(expr)
        {
            self.g.resets_self |= rhs.reads.is_empty() || rhs.producer == Producer::Plain;
            return;
        }
        let Some(slot) = self.place_slot(left) else {
            self.expr(left);
            return;
        };
        let old = self.env[slot].1;
        let whole = is_whole_binding(left);
        let how = self.store_kind(&rhs, old);
        let value = self.value_node(rhs, self.full(right));
        // `self.target = online.valid()`: a write of the field, for the crate-level pass.
        if let Expr::Field(f) = strip_parens(left)
            && is_self(&f.base)
            && let (Some(owner), syn::Member::Named(field)) = (&self.g.owner, &f.member)
        {
            self.g.field_writes.push((owner.clone(), field.to_string(), value));
        }
        // `for s in states.iter_mut() { *s = cut(s) }`: the element written is part of `states`;
        // `*e = (&*e * d + p)?` blends the element with its old value, a fold of `states`.
        if !self.mut_elements.is_empty()
            && let Expr::Unary(syn::ExprUnary { op: syn::UnOp::Deref(_), expr, .. }) = strip_parens(left)
            && let Expr::Path(p) = strip_parens(expr)
            && p.path.get_ident().is_some()
        {
            let elem = self.env[slot].0;
            if let Some(&(_, owner)) = self.mut_elements.iter().find(|(e, _)| *e == elem)
                && let Some(owner_slot) = self.env.iter().rposition(|(b, _)| *b == owner)
            {
                self.write(owner_slot, value, how, span.clone(), true);
                self.element_writes.push((owner, value, self.path.clone()));
            }
        }
        // `session.state = h_next`, with `session` handed out by `store.get_or_create(..)`: a
        // part of `store` written.
        if !self.mut_elements.is_empty()
            && let Expr::Field(fl) = strip_parens(left)
            && let Expr::Path(p) = strip_parens(&fl.base)
            && p.path.get_ident().is_some()
        {
            let elem = self.env[slot].0;
            if let Some(&(_, owner)) = self.mut_elements.iter().find(|(e, _)| *e == elem)
                && let Some(owner_slot) = self.env.iter().rposition(|(b, _)| *b == owner)
            {
                self.write(owner_slot, value, how, span.clone(), true);
            }
        }
        // `model.h = model.h.detach()`: a field of `model` cut (see `FnModel::field_cuts`).
        if let Expr::Field(fl) = strip_parens(left)
            && let syn::Member::Named(field) = &fl.member
            && !(is_self(&fl.base) && self.has_self)
            && matches!(self.g.graph[value].kind, NodeKind::Value(Producer::Plain))
        {
            // The path below the binding (`fast.cell.state` of `net.fast.cell.state`) when the
            // binding is the root local, else the field's name.
            let path = field_path(left)
                .filter(|(root, _)| *root == self.g.bindings[self.env[slot].0].name)
                .map_or_else(|| field.to_string(), |(_, path)| path);
            let cut = (self.env[slot].0, path, self.cur_loop());
            self.g.field_cuts.push(cut);
        }
        // `for i in 0..hs.len() { hs[i] = hs[i].detach(); }`: likewise, by index.
        if !self.index_walks.is_empty()
            && let Expr::Index(ix) = strip_parens(left)
            && let Expr::Path(p) = strip_parens(&ix.index)
            && let Some(index) = p.path.get_ident().and_then(|i| self.lookup(&i.to_string())).map(|s| self.env[s].0)
            && let Some(&(_, owner)) = self.index_walks.iter().find(|(i, _)| *i == index)
            && self.env[slot].0 == owner
        {
            self.element_writes.push((owner, value, self.path.clone()));
        }
        self.write(slot, value, how, span, !whole);
    }

    /// How `val` is written over `old`: a fold when it reads the old value back
    /// ([`Self::reads_transitively`]), else an assignment.
    fn store_kind(&self, val: &Val, old: NodeIndex) -> Store {
        if val.reads.contains(&old) || self.reads_transitively(val, old) { Store::Fold } else { Store::Assign }
    }

    /// Whether `val` reads `version` directly, through value nodes built in this expression, or
    /// through what a `Some(..)` pattern of the current loop iteration took out of it (`match
    /// total { Some(t) => Some(t + loss), .. }`, `if let Some(t) = &total { total = Some(t + &loss) }`).
    fn reads_transitively(&self, val: &Val, version: NodeIndex) -> bool {
        let here = self.cur_loop();
        let mut stack: Vec<NodeIndex> = val.reads.to_vec();
        let mut seen = std::collections::HashSet::new();
        let mut budget = 256;
        while let Some(n) = stack.pop() {
            if n == version {
                return true;
            }
            if !seen.insert(n) {
                continue;
            }
            budget -= 1;
            if budget == 0 {
                return false;
            }
            let node = &self.g.graph[n];
            let through = match node.kind {
                NodeKind::Value(_) => true,
                // A binding of this iteration other than the stored one: a pattern or a
                // temporary that holds (part of) the old value.
                // What `Some(prev)` took out of an `Option` in this iteration: the old value.
                NodeKind::Version(_) => node.in_loop == here && self.unwrapped.contains(&n),
            };
            if through {
                stack.extend(self.g.graph.neighbors_directed(n, petgraph::Direction::Incoming));
            }
        }
        false
    }

    /// The env slot of the binding an assignment target or store receiver lives in.
    fn place_slot(&mut self, e: &Expr) -> Option<usize> {
        match e {
            Expr::Path(p) => p.path.get_ident().and_then(|i| self.lookup(&i.to_string())),
            Expr::Field(f) if is_self(&f.base) && self.has_self => match &f.member {
                syn::Member::Named(name) => self.self_field(&name.to_string()),
                syn::Member::Unnamed(_) => None,
            },
            Expr::Field(f) => self.place_slot(&f.base),
            Expr::Index(i) => self.place_slot(&i.expr),
            Expr::Paren(p) => self.place_slot(&p.expr),
            Expr::Group(g) => self.place_slot(&g.expr),
            Expr::Reference(r) => self.place_slot(&r.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.place_slot(&u.expr),
            Expr::Try(t) => self.place_slot(&t.expr),
            Expr::MethodCall(m) if rust::PLACE_METHODS.contains(&m.method.to_string().as_str()) => {
                self.place_slot(&m.receiver)
            }
            _ => None,
        }
    }

    /// A method call: stores into collections, parameter reads and rewrites, the framework's
    /// vocabulary (backward, step, clear, cut, forward, …), tensor ops, and calls that may reach
    /// the crate's own methods. The first kind that matches wins.
    fn method_call(&mut self, m: &syn::ExprMethodCall) -> Val {
        // `self.grads.take().unwrap_or_else(|| model.alloc_grads())`: what the closure makes is
        // made only when nothing is there yet.
        let lazy = rust::LAZY_INIT_METHODS.contains(&m.method.to_string().as_str());
        self.lazy_init += usize::from(lazy);
        let v = self.method_call_inner(m);
        self.lazy_init -= usize::from(lazy);
        v
    }

    fn method_call_inner(&mut self, m: &syn::ExprMethodCall) -> Val {
        let name = m.method.to_string();
        let argc = m.args.len();
        // `p.var("w", &[n], init)`: a variable named by a string, on a store path.
        if argc >= 1
            && self.specs().iter().any(|s| s.var_methods.contains(&name.as_str()))
            && names_a_path_segment(&m.args[0])
            && let Some(root) = self.var_root(&m.receiver)
        {
            let span = self.between(first_token(&m.receiver), m.paren_token.span.close());
            self.note_var_creation(span, root);
        }
        // `self.advantages.narrow(0, t, n).copy_(&gae)`: an in-place copy into the tensor the
        // receiver views.
        if argc == 1 && name.ends_with('_') && self.specs().iter().any(|s| s.copy_into_methods.contains(&name.as_str()))
        {
            self.copy_into(m);
            return Val::plain();
        }
        // `trajectory.push(s, a, r, v)`: more arguments than any collection method takes, so
        // the crate's own method (a call site), not `Vec::push`.
        // `stats.push(&loss)` with `stats: RunningLoss` and `impl RunningLoss { fn push(..) }`:
        // the crate's method too.
        let crate_method = argc > 2 && self.crate_fns.fns.contains(&name)
            || self.crate_fns.store_owners.get(name.as_str()).is_some_and(|owners| {
                self.binding_ref(&m.receiver)
                    .is_some_and(|b| !b.ty_guessed && b.ty.as_deref().is_some_and(|ty| owners.contains(ty)))
                    // `self.replay.insert(item, p)` with `replay: PerBuffer<T>`.
                    || self.self_field_type(&m.receiver).is_some_and(|ty| owners.contains(ty))
            });
        if rust::STORE_METHODS.contains(&name.as_str()) && argc >= 1 && !crate_method {
            self.store_call(m);
            return Val::plain();
        }
        if let Some(v) = self.param_method(m, &name, argc) {
            return v;
        }
        self.note_vocab_method(m, &name, argc);
        let recv = self.expr(&m.receiver);
        let recv_span = self.cheap(&m.receiver);
        if self.training_method(m, &name, argc, &recv, &recv_span) {
            return Val::plain();
        }
        self.value_method(m, name, recv, recv_span)
    }

    /// `c.push(v)`, `c.insert(k, v)`, …: the last argument is stored into the receiver's binding.
    fn store_call(&mut self, m: &syn::ExprMethodCall) {
        let args: Vec<Val> = m.args.iter().map(|a| self.expr(a)).collect();
        let recv_val = self.expr(&m.receiver);
        if let Some(slot) = self.place_slot(&m.receiver) {
            let span = self.between(first_token(&m.receiver), m.paren_token.span.close());
            // The stored value is the last argument (`insert(k, v)`, `push(v)`).
            let stored = args.into_iter().last().unwrap_or_else(Val::plain);
            let last = m.args.last().map_or(span.clone(), |a| self.full(a));
            let value = self.value_node(stored, last);
            // `rollout.values.push(v)` on a local of some type: remember the field's name.
            if let Expr::Field(f) = strip_place(&m.receiver)
                && !is_self(&f.base)
                && let syn::Member::Named(field) = &f.member
            {
                let owner = self.declared_type_of(&f.base);
                self.g.field_pushes.push((value, owner, field.to_string(), span.clone()));
            }
            if matches!(m.method.to_string().as_str(), "insert" | "or_insert") {
                // An entry blended from the one it replaces (`let old = self.bank.remove(&id);
                // self.bank.insert(id, (old * m + fresh)?)`). (A `Vec` pushed a value computed
                // from what it holds is most often a sequence being generated: `tokens.push(next)`.)
                let folds = m.args.len() == 2 && self.g.computed_from_own_content(value, self.env[slot].0);
                let copies = self.g.copies.get_or_insert_with(Default::default);
                copies.keyed_pushes.push(span.clone());
                if folds {
                    copies.keyed_folds.push(span.clone());
                }
            }
            self.write(slot, value, Store::Push, span, true);
        }
        drop(recv_val);
    }

    /// `dst.copy_(&src)`, `dst.narrow(0, t, n).copy_(&src)`: `src` is stored into the binding
    /// `dst` names, through any views of it.
    fn copy_into(&mut self, m: &syn::ExprMethodCall) {
        let stored = self.expr(&m.args[0]);
        let recv_val = self.expr(&m.receiver);
        drop(recv_val);
        let mut dst = strip_place(strip_try(&m.receiver));
        while let Expr::MethodCall(v) = dst
            && self.specs().iter().any(|s| s.view_methods.contains(&v.method.to_string().as_str()))
        {
            dst = strip_place(strip_try(&v.receiver));
        }
        if let Some(slot) = self.place_slot(dst) {
            let span = self.between(first_token(&m.receiver), m.paren_token.span.close());
            let arg = self.full(&m.args[0]);
            let value = self.value_node(stored, arg);
            self.write(slot, value, Store::CopyInto, span, true);
        }
    }

    /// A parameter's tensor read (`param.val()`) or a rewrite through a closure
    /// (`param.map(|t| …)`), where the framework has them.
    fn param_method(&mut self, m: &syn::ExprMethodCall, name: &str, argc: usize) -> Option<Val> {
        if !self.tracks_params() {
            return None;
        }
        let spec = self.g.spec;
        if spec.param_read_methods.contains(&name) && argc == 0 {
            let recv = self.expr(&m.receiver);
            // Where a model's method that returns a tensor reads it: the forward pass a finding
            // points at (see `summarize`); no other read needs a place.
            let span = if self.g.returns_tensor {
                self.between(first_token(&m.receiver), m.paren_token.span.close())
            } else {
                0..0
            };
            let n = self.value_node(Val { producer: Producer::Derived, op: false, ..recv }, span);
            self.g.param_reads.push(n);
            return Some(Val { reads: smallvec::smallvec![n], producer: Producer::Derived, op: false });
        }
        if spec.param_map_methods.contains(&name)
            && let [Expr::Closure(c)] = m.args.iter().collect::<Vec<_>>().as_slice()
            && let [input] = c.inputs.iter().collect::<Vec<_>>().as_slice()
            && is_param_place(&m.receiver, self)
        {
            return Some(self.param_map(m, c, input));
        }
        None
    }

    /// Records gradient-store calls of the vocabulary (fresh tapes, new or copied stores) and
    /// collections emptied; the call is then walked as any other.
    fn note_vocab_method(&mut self, m: &syn::ExprMethodCall, name: &str, argc: usize) {
        let spec = self.g.spec;
        if self.g.framework_known && spec.explicit_grads {
            let kind = match name {
                n if spec.fresh_tape_methods.contains(&n) => Some(CallKind::FreshTape),
                n if argc == 0 && spec.grads_alloc_methods.contains(&n) => Some(CallKind::AllocGrads),
                n if argc == 0 && rust::COPY_METHODS.contains(&n) && self.is_grad_store(&m.receiver) => {
                    Some(CallKind::GradsCopy)
                }
                _ => None,
            };
            if let Some(kind) = kind {
                let span = self.between(first_token(&m.receiver), m.paren_token.span.close());
                // A fresh copy of a store nothing writes into (`zeroed.clone()` of a zeroed
                // store): each use starts from zero gradients, as after clearing.
                // The store may be a field (`dqn.gradients.clone()`, `self.zeroed.clone()`): then
                // nothing here may assign the field, and its root binding must come from outside
                // the loop (`self` does).
                if kind == CallKind::GradsCopy
                    && let Some(key) = place_key(&m.receiver)
                    && self.grad_stores.traced.contains(&key)
                    && !self.grad_stores.assigned.contains(&key)
                    && (key.starts_with("self.")
                        || self
                            .lookup(key.split('.').next().unwrap_or(&key))
                            .is_some_and(|slot| self.g.bindings[self.env[slot].0].decl_loop != self.cur_loop()))
                {
                    self.record_call(TrainingCallKind::Clear, span.clone(), key);
                }
                self.vocab(kind, span, None, false);
                if let Some(last) = self.g.vocab_calls.last_mut() {
                    last.no_grad = false;
                }
            }
        }
        // `model.reset_cache()`: whatever state the model keeps starts afresh.
        if (name.starts_with("reset") || name.starts_with("clear"))
            && !self.g.spec.trainable_constructors.is_empty()
            && let Some(slot) = self.place_slot(&m.receiver)
        {
            let b = self.env[slot].0;
            let reset = (b, self.cur_loop());
            let method = self.span(m.method.span());
            self.g.named_resets.push((self.g.resets.len(), method));
            self.g.resets.push(reset);
            if let Some(&(_, owner)) = self.mut_elements.iter().find(|(e, _)| *e == b) {
                self.element_resets.push((owner, self.path.clone()));
            }
        }
        // `acc.take()` empties an `Option` (or a cell): like `clear()` for what it held.
        let takes = name == "take" && m.args.is_empty();
        // `buf.detach_()` (tch): the tensor drops the autograd history it held.
        let cuts_in_place = name.ends_with('_') && m.args.is_empty() && self.g.spec.cut_methods.contains(&name);
        if (rust::CLEAR_METHODS.contains(&name) || takes || cuts_in_place)
            && let Some(slot) = self.place_slot(&m.receiver)
        {
            let version = self.env[slot].1;
            let in_loop = self.cur_loop();
            let at = self.span(m.method.span()).start;
            self.g.cleared.push(Cleared { version, in_loop, at });
        }
        // (The first letter first: this runs for every method call.)
        if matches!(name.as_bytes().first(), Some(b'p' | b'r' | b's'))
            && rust::SHRINK_METHODS.contains(&name)
            && let Some(slot) = self.place_slot(&m.receiver)
        {
            let b = self.env[slot].0;
            if !self.g.shrunk.contains(&b) {
                self.g.shrunk.push(b);
            }
        }
    }

    /// Backward, backward-and-step, clear and step calls: recorded as training calls. Returns
    /// whether the call was one (its value is then plain).
    fn training_method(
        &mut self,
        m: &syn::ExprMethodCall,
        name: &str,
        argc: usize,
        recv: &Val,
        recv_span: &Span,
    ) -> bool {
        let (spec, specs) = (self.g.spec, self.specs());
        let span = |s: &Self| s.between(first_token(&m.receiver), m.paren_token.span.close());
        let receiver_text = || expr_text(&m.receiver);
        // `trainer.step(&model, x, y)` on a value of a crate type that defines `step`: the
        // crate's own method (a call site), not the framework's optimizer step.
        // So is `self.cell.step(x)` with `cell: Cell` declared in the caller's type.
        if matches!(name, "step" | "update" | "train_step")
            && let Some(owners) = self.crate_fns.vocab_owners.get(name)
            && (self
                .binding_ref(&m.receiver)
                .is_some_and(|b| !b.ty_guessed && b.ty.as_deref().is_some_and(|ty| owners.contains(ty)))
                || self.self_field_type(&m.receiver).is_some_and(|ty| owners.contains(ty))
                || self.element_type(&m.receiver).is_some_and(|ty| owners.contains(ty))
                // `self.step(&mut corpus)` in a method of a type that defines `step`.
                || (is_self(strip_parens(&m.receiver))
                    && self.has_self
                    && self.g.owner.as_deref().is_some_and(|o| owners.contains(o))))
        {
            return false;
        }
        if specs.iter().any(|s| s.is_backward(name, argc)) {
            self.exprs(m.args.iter(), false);
            self.mark_loss(recv.clone(), recv_span.clone());
            self.record_call(TrainingCallKind::Backward, span(self), receiver_text());
            return true;
        }
        if specs.iter().any(|s| s.is_backward_step(name, argc)) {
            let loss = m.args.first().map(|a| (self.expr(a), self.cheap(a)));
            for a in m.args.iter().skip(1) {
                self.expr(a);
            }
            if let Some((v, s)) = loss {
                self.mark_loss(v, s);
            }
            if spec.is_clear(name, argc) {
                self.record_call(TrainingCallKind::Clear, span(self), receiver_text());
            }
            self.record_call(TrainingCallKind::BackwardStep, span(self), receiver_text());
            return true;
        }
        if spec.is_clear(name, argc) {
            self.exprs(m.args.iter(), false);
            self.record_call(TrainingCallKind::Clear, span(self), receiver_text());
            return true;
        }
        // tch `v.grad().zero_()`, `let mut g = v.grad(); g.zero_()`: one variable's gradient
        // cleared by hand.
        if let Some((getter, zero)) = spec.grad_zero_in_place
            && name == zero
            && argc == 0
        {
            let by_hand = match strip_parens(&m.receiver) {
                Expr::MethodCall(g) => g.method == getter && g.args.is_empty(),
                Expr::Path(p) => p.path.get_ident().is_some_and(|i| self.grad_locals.contains(&i.to_string())),
                _ => false,
            };
            if by_hand {
                self.expr(&m.receiver);
                self.record_call(TrainingCallKind::Clear, span(self), receiver_text());
                return true;
            }
        }
        // A tape with a fresh gradient store: this iteration's gradients start from zero. So does
        // dfdx 0.10's `x.traced()` with no store handed in (0.11 on takes one: `traced(grads)`).
        if spec.fresh_tape_methods.contains(&name) || (argc == 0 && spec.tape_methods.contains(&name)) {
            self.record_call(TrainingCallKind::Clear, span(self), receiver_text());
        }
        if specs.iter().any(|s| s.is_step(name, argc)) {
            self.exprs(m.args.iter(), false);
            if spec.is_step(name, argc) {
                self.record_call(TrainingCallKind::Step, span(self), receiver_text());
            }
            return true;
        }
        false
    }

    /// Calls that make a value: cuts, no-grad models, forward passes, parameter constructors,
    /// tensor ops and moves, and calls that may reach the crate's own methods.
    fn value_method(&mut self, m: &syn::ExprMethodCall, name: String, recv: Val, recv_span: Span) -> Val {
        let specs = self.specs();
        let argc = m.args.len();
        let cut = specs.iter().any(|s| s.is_cut_method(&name));
        if cut
            || frameworks::is_metadata_method(&name)
            || frameworks::is_index_method(&name)
            || (argc == 0 && frameworks::is_fresh_like_method(&name))
        {
            if cut && !recv.reads.is_empty() && specs.iter().any(|s| s.is_host_read(&name)) {
                self.g.host_reads.extend(recv.reads.iter().copied());
            }
            // `self.teacher.forward(x).max_dim(1).detach()`: the chain's head leaves no graph.
            if cut && self.g.spec.untrained_graphs_kept && chain_on_self_field(&m.receiver) {
                let whole = self.between(first_token(&m.receiver), m.paren_token.span.close());
                self.g.cut_chains.push(whole);
            }
            self.exprs(m.args.iter(), false);
            // `w.grad(&grads)` (burn): one parameter's gradient, read out of the store.
            if cut
                && argc == 1
                && matches!(name.as_str(), "grad" | "grad_remove")
                && !self.g.spec.grad_store_types.is_empty()
            {
                let whole = self.between(first_token(&m.receiver), m.paren_token.span.close());
                let n = self.value_node(Val { producer: Producer::Plain, ..recv }, whole);
                self.g.grad_reads.push(n);
                return Val { reads: smallvec::smallvec![n], producer: Producer::Derived, op: false };
            }
            return Val { producer: Producer::Plain, ..recv };
        }
        // `target.map(&mut polyak)`: an application of one of the crate's mappers; `base.map(&mut
        // Freeze)` with one that sets `require_grad(false)` freezes the model.
        if name == "map"
            && !self.crate_fns.module_mappers.is_empty()
            && m.args.len() == 1
            && let Some(ty) = self.mapper_type(&m.args[0])
        {
            let span = self.span(m.method.span());
            let freezes = self.crate_fns.freezing_mappers.contains(&ty);
            self.g.mapper_uses.push((ty, span, false));
            if freezes {
                self.g.untracks_models = true;
                return Val { producer: Producer::InertModel, ..recv };
            }
        }
        if specs.iter().any(|s| s.no_grad_models.contains(&name.as_str())) {
            // `target.map(&mut polyak).no_grad()`: what that mapper made is untracked at once.
            if let Expr::MethodCall(r) = strip_parens(&m.receiver)
                && r.method == "map"
                && !self.g.mapper_uses.is_empty()
            {
                let span = self.span(r.method.span());
                if let Some(used) = self.g.mapper_uses.iter_mut().rev().find(|u| u.1 == span) {
                    used.2 = true;
                }
            }
            self.g.untracks_models = true;
            return Val { producer: Producer::InertModel, ..recv };
        }
        // `load(..).map(Module::no_grad)`: the wrapped model, made untracked.
        if rust::UNWRAP_MAP_METHODS.contains(&name.as_str())
            && let [Expr::Path(p)] = m.args.iter().collect::<Vec<_>>().as_slice()
            && p.path
                .segments
                .last()
                .is_some_and(|s| specs.iter().any(|sp| sp.no_grad_models.contains(&s.ident.to_string().as_str())))
        {
            self.g.untracks_models = true;
            return Val { producer: Producer::InertModel, ..recv };
        }
        // `sd_config.build_unet(path, ..)`: a library loader of plain weights (not the crate's own).
        if self.g.spec.frozen_methods.contains(&name.as_str()) && !self.crate_fns.fns.contains(&name) {
            let args = self.exprs(m.args.iter(), false);
            self.g.untracks_models = true;
            return Val { producer: Producer::InertModel, ..args };
        }
        if argc == 0 && self.g.spec.autodiff_device_method == Some(name.as_str()) {
            // burn 0.22: `device.autodiff()` makes an autodiff device (not a method of that
            // name in a crate on burn 0.21 or older, whose devices have none).
            self.g.autodiff = true;
            self.g.autodiff_device = true;
        }
        // A forward-named method the crate defines with a host return type is the crate's own.
        // A loss module's `forward` (`loss_fn: MseLoss`, `CrossEntropyLoss::new()`) is a tensor
        // operation on its inputs, not a model's forward pass.
        // A loss module, bound (`let loss_fn = CrossEntropyLoss::new(..)`) or made in place
        // (`CrossEntropyLossConfig::new().init(&d).forward(..)`): its forward records only what
        // its inputs record.
        let loss_module = || match self.declared_type_ref(&m.receiver) {
            Some(t) => t.ends_with("Loss"),
            None => {
                matches!(strip_parens(&m.receiver), Expr::Call(_) | Expr::MethodCall(_) | Expr::Try(_))
                    && constructed_type(&m.receiver)
                        .or_else(|| config_init_type(&m.receiver))
                        .is_some_and(|t| t.ends_with("Loss"))
            }
        };
        // `stats.add(loss.clone())` with `stats: EpochStats` and `impl EpochStats { fn add(..) }`,
        // `relation.apply(&sector)` with `relation: Relation`: the crate's method, though tensors
        // have one of that name.
        let crate_method_of_receiver = !self.crate_fns.tensor_name_owners.is_empty()
            && self.crate_fns.tensor_name_owners.get(&name).is_some_and(|owners| {
                self.binding_ref(&m.receiver)
                    .is_some_and(|b| !b.ty_guessed && b.ty.as_ref().is_some_and(|t| owners.contains(t)))
            });
        if ((frameworks::is_forward_method(&name)
            || self.specs().iter().any(|s| s.module_apply_methods.contains(&name.as_str())))
            && !self.crate_fns.plain_fns.contains(&name)
            && !crate_method_of_receiver
            && !loss_module())
            || specs.iter().any(|s| s.tape_methods.contains(&name.as_str()))
            || (name == "step" && m.args.len() == 2 && self.is_rnn_cell(&m.receiver))
            // `lstm.seq_init(&chunk, &state)`, `gru.seq(&xs)`: the cell run over a sequence.
            || (matches!((name.as_str(), m.args.len()), ("seq", 1) | ("seq_init", 2)) && self.is_rnn_cell(&m.receiver))
        {
            // A cell stepped over the elements of the sequence its loop walks: the loop is one
            // forward pass over that sequence (records a graph, samples nothing).
            if name == "step"
                && m.args.len() == 2
                && m.args.first().is_some_and(|x| self.element_of_sequence(x))
                && self.is_rnn_cell(&m.receiver)
                && let Some(l) = self.cur_loop()
            {
                self.g.loops[l].over_dim = true;
            }
            return self.forward_call(m, recv, recv_span);
        }
        if common::PARAM_METHODS.contains(&name.as_str()) {
            self.exprs(m.args.iter(), false);
            let n = self.value_node(Val { producer: Producer::Plain, ..recv }, recv_span);
            self.params.push(n);
            return Val { reads: smallvec::smallvec![n], producer: Producer::Derived, op: false };
        }
        // `layer.weight()` of a candle module handed in (`student.layers`): a variable of it when
        // the module is trainable. Not one of the receiver's own fields (`self.layers`), which
        // are taken for trainable whenever their owner holds a trainable model anywhere (a
        // teacher rebuilt from plain copies beside its student).
        if m.args.is_empty()
            && !crate_method_of_receiver
            && !self.crate_fns.fns.contains(&name)
            && self.specs().iter().any(|s| s.module_weight_methods.contains(&name.as_str()))
            && !root_is_self(&m.receiver)
            && !self.reads_self_field(&recv)
        {
            let n = self.value_node(Val { producer: Producer::Derived, op: false, ..recv }, recv_span);
            self.g.weight_reads.push(n);
            return Val { reads: smallvec::smallvec![n], producer: Producer::Derived, op: false };
        }
        let moves = common::MOVE_METHODS.contains(&name.as_str())
            || (m.args.is_empty() && self.specs().iter().any(|s| s.variable_store_reads.contains(&name.as_str())));
        if !crate_method_of_receiver
            && (moves || common::is_tensor_method(&name) || !self.crate_fns.fns.contains(&name))
        {
            if !moves {
                let param_ops = self.param_op_mask(&recv);
                if (param_ops != 0 || self.after_backward()) && !frameworks::is_untracked_method(&name) {
                    self.g.param_ops |= param_ops;
                    // A tensor operation, not any method the framework does not name (burn's
                    // `grad_accumulator.accumulate(&model, grads)` records nothing).
                    if self.after_backward() && common::is_tensor_method(&name) {
                        let span = self.between(first_token(&m.receiver), m.paren_token.span.close());
                        self.note_op_after_backward(&recv, span);
                    }
                }
            }
            // `batches.iter().map(|b| model.forward(b))`: the closure runs once per element.
            let per_element = rust::PER_ELEMENT_METHODS.contains(&name.as_str())
                && rust::is_iterator_chain(&m.receiver)
                && m.args.iter().any(|a| matches!(strip_parens(a), Expr::Closure(_)));
            // `state.as_ref().map(|s| s.detach())` on an `Option`: the result is what the closure
            // returns, from the receiver's value handed to its parameter.
            let option_map = !per_element
                && m.args.len() == 1
                && matches!(m.args.first(), Some(Expr::Closure(_)))
                && rust::UNWRAP_MAP_METHODS.contains(&name.as_str());
            let element = (per_element || option_map).then(|| recv.clone());
            let dyn_walk =
                (per_element && self.walks_trait_objects(&m.receiver)).then(|| match strip_parens(&m.receiver) {
                    Expr::MethodCall(r) if r.method == "iter_mut" && r.args.is_empty() => {
                        match strip_parens(&r.receiver) {
                            Expr::Path(p) => p.path.get_ident().and_then(|i| self.lookup(&i.to_string())),
                            e @ Expr::Field(_) => self.place_slot(e),
                            _ => None,
                        }
                        .map(|slot| self.env[slot].0)
                    }
                    _ => None,
                });
            // `hs.iter().map(|h| h.detach())`: the result's elements are what the closure
            // yields; the receiver's elements reach them only through the closure's parameter.
            let mut parts = if option_map || (per_element && rust::YIELDING_METHODS.contains(&name.as_str())) {
                Vec::new()
            } else {
                vec![(recv, recv_span)]
            };
            let walk_args = |s: &mut Self, parts: &mut Vec<(Val, Span)>| {
                // `map_with(model, |model, i| ..)`, `fold(init, |acc, x| ..)`: the closure's first
                // parameter is a copy of the first argument; `map(|x| ..)` on an iterator: an
                // element of the receiver.
                if (rust::WITH_STATE_METHODS.contains(&name.as_str())
                    || rust::SEEDED_FOLD_METHODS.contains(&name.as_str()))
                    && let [state, closure @ Expr::Closure(_)] = m.args.iter().collect::<Vec<_>>().as_slice()
                {
                    let v = s.expr(state);
                    s.closure_state = Some(v.clone());
                    parts.push((v, s.cheap(state)));
                    parts.push((s.expr(closure), s.cheap(closure)));
                    s.closure_state = None;
                } else {
                    for a in &m.args {
                        if matches!(a, Expr::Closure(_)) {
                            s.closure_state = element.clone();
                            s.closure_dyn_walk = dyn_walk;
                        }
                        parts.push((s.expr(a), s.cheap(a)));
                        s.closure_state = None;
                        s.closure_dyn_walk = None;
                    }
                }
            };
            if per_element {
                // What the closure returns is an element of the result (`.map(..).collect()`).
                let last_is_closure = m.args.last().is_some_and(|a| matches!(strip_parens(a), Expr::Closure(_)));
                let yielded = self.per_element(m, |s| {
                    walk_args(s, &mut parts);
                    if last_is_closure { parts.pop().map(|(v, _)| v) } else { None }
                });
                parts.push((yielded, 0..0));
            } else if argc == 1 && rust::KEY_LOOKUP_METHODS.contains(&name.as_str()) {
                // `grads.get(var)`, `cache.remove(&i)`: what the receiver holds under that key;
                // the key is not part of it.
                let mut keys = Vec::new();
                walk_args(self, &mut keys);
            } else {
                walk_args(self, &mut parts);
            }
            let val = self.combine(parts, !moves);
            return if common::ADDITIVE_METHODS.contains(&name.as_str()) { self.additive(val) } else { val };
        }
        self.crate_method_call(m, name, recv, recv_span)
    }

    /// The closure of an iterator method (`xs.iter().map(|x| ..)`, `(0..n).for_each(..)`), walked
    /// by `walk` in a loop scope of its own, as the body of `for x in xs` would be.
    /// What the closure returns is pushed, once per element, into a binding declared before the
    /// loop (the result's elements), whose value this returns.
    fn per_element(&mut self, m: &syn::ExprMethodCall, walk: impl FnOnce(&mut Self) -> Option<Val>) -> Val {
        let header = self.between(first_token(&m.receiver), m.method.span());
        self.declare(format!("{}(..)", m.method), BindingKind::Local, header.clone(), None);
        let slot = self.env.len() - 1;
        let over_self = root_is_self(&m.receiver)
            && (!is_range(&m.receiver)
                || m.args.iter().any(
                    |a| matches!(a, Expr::Closure(c) if indexes_self_expr(&c.body, &self.crate_fns.host_array_fields)),
                ));
        let literal_count = literal_count(&m.receiver, &|name| self.named_count(name));
        let over_variables = iterates_variables(&m.receiver);
        let id = self.g.loops.len();
        self.looped(header.clone(), |s| {
            s.g.loops[id].over_self = over_self;
            s.g.loops[id].literal_count = literal_count.map(saturate);
            s.g.loops[id].over_variables = over_variables;
            if let Some(v) = walk(s) {
                let node = s.value_node(v, header.clone());
                s.write(slot, node, Store::Yield, header.clone(), true);
            }
        });
        Val { reads: smallvec::smallvec![self.env[slot].1], producer: Producer::Derived, op: false }
    }

    /// A forward pass or tape attachment: its value carries a graph unless the model is inert.
    fn forward_call(&mut self, m: &syn::ExprMethodCall, recv: Val, recv_span: Span) -> Val {
        let span = self.between(first_token(&m.receiver), m.paren_token.span.close());
        // candle: a forward the crate defines may keep a cache; the crate-level pass asks.
        let candle = !self.g.spec.trainable_constructors.is_empty();
        let own = candle && self.crate_fns.fns.contains(&m.method.to_string());
        // The crate's forward: its arguments are walked first, so that one written in place
        // (`self.bn.forward_t(&self.fc.forward(x)?, train)`) reaches the site as a value.
        let walked = own.then(|| {
            let named: Vec<Option<NodeIndex>> =
                m.args.iter().map(|a| self.place_slot(strip_place(a)).map(|slot| self.env[slot].1)).collect();
            let parts: Vec<(Val, Span)> = m
                .args
                .iter()
                .map(|a| {
                    let (v, span) = (self.expr(a), self.cheap(a));
                    let v = match self.materialize(v, span.clone()) {
                        Some(n) => Val { reads: smallvec::smallvec![n], producer: Producer::Derived, op: false },
                        None => Val::plain(),
                    };
                    (v, span)
                })
                .collect();
            self.forward_site(m, &recv, &recv_span, &named, &parts);
            self.combine(parts, false)
        });
        // A library model's cache (candle-transformers): lent as `&mut cache`, or kept inside the
        // model when the function resets it (`model.clear_kv_cache()`); see `finish`.
        let lent_cache = if candle && !own {
            m.args.iter().find_map(|a| {
                let b = self.mut_ref(a)?;
                let binding = &self.g.bindings[b];
                let named = binding.ty.as_deref().is_some_and(|t| t.ends_with("Cache"))
                    || binding.name.to_ascii_lowercase().contains("cache");
                named.then_some(b)
            })
        } else {
            None
        };
        let receiver_binding = if candle && !own { self.place_slot(&m.receiver).map(|s| self.env[s].0) } else { None };
        let mut v = match walked {
            Some(args) => self.forward_of(span.clone(), recv, recv_span, args),
            None => self.forward_parts(span.clone(), recv, recv_span, m.args.iter()),
        };
        // dfdx: `x.trace(grads)` attaches a tape to `x` itself; it starts a graph.
        if self.g.spec.graph_from_input_tape && self.g.spec.tape_methods.contains(&m.method.to_string().as_str()) {
            v.producer = Producer::Forward { receiver: None };
        }
        if let Producer::Forward { receiver: Some(receiver) } = v.producer
            && let Some(model) = receiver_binding
        {
            let in_loop = self.cur_loop();
            self.library_forwards.push(LibraryForward { span, in_loop, receiver, model, lent_cache });
        }
        v
    }

    /// Records `model.forward(..)` of a method the crate defines (see `FnModel::forward_sites`),
    /// with its arguments' values `parts` (walked once, by the caller). A named argument (`&mut
    /// cache`) reads the version its binding had before the call (`named`).
    fn forward_site(
        &mut self,
        m: &syn::ExprMethodCall,
        recv: &Val,
        recv_span: &Span,
        named: &[Option<NodeIndex>],
        parts: &[(Val, Span)],
    ) {
        let receiver = self.materialize(recv.clone(), recv_span.clone());
        let args = m
            .args
            .iter()
            .zip(named.iter().zip(parts))
            .map(|(a, (named, (v, _)))| super::graph::ArgValue {
                reads: match named {
                    Some(n) => smallvec::smallvec![*n],
                    None => v.reads.clone(),
                },
                producer: Producer::Derived,
                op: false,
                span: self.cheap(a),
                // `model.forward(&x, false)`: a flag that may close a gated state.
                constant: const_arg(a),
                mut_ref: self.mut_ref(a),
                lent: None,
            })
            .collect();
        let (receiver_type, receiver_type_guessed) = self.receiver_type(&m.receiver);
        let receiver_field = if receiver_type.is_none() { self.receiver_field(&m.receiver, true) } else { None };
        let receiver_field_owner = receiver_field.as_ref().and_then(|_| self.field_owner(&m.receiver));
        let span = self.between(first_token(&m.receiver), m.paren_token.span.close());
        self.g.forward_sites.push(CallSite {
            receiver_field_owner,
            name: m.method.to_string(),
            method: true,
            receiver,
            receiver_self: is_self(&m.receiver),
            receiver_type,
            receiver_type_guessed,
            receiver_field,
            args,
            span,
            in_loop: self.cur_loop(),
            path: self.path.clone(),
            no_grad: self.no_grad > 0,
            ..CallSite::default()
        });
    }

    /// A forward pass at `span` on the model `recv`, with arguments `args`.
    fn forward_parts<'e>(
        &mut self,
        span: Span,
        recv: Val,
        recv_span: Span,
        args: impl Iterator<Item = &'e Expr>,
    ) -> Val {
        let receiver = self.forward_start(span, recv, recv_span);
        let args = self.exprs(args, false);
        Self::forward_value(receiver, args)
    }

    /// A forward pass at `span` on the model `recv`, with arguments already walked (`args`).
    fn forward_of(&mut self, span: Span, recv: Val, recv_span: Span, args: Val) -> Val {
        let receiver = self.forward_start(span, recv, recv_span);
        Self::forward_value(receiver, args)
    }

    /// Marks a forward at `span` and gives its receiver's node.
    fn forward_start(&mut self, span: Span, recv: Val, recv_span: Span) -> Option<NodeIndex> {
        self.mark_forward();
        let receiver = self.materialize(recv, recv_span);
        if self.swept_by_backward() {
            self.vocab(CallKind::Forward, span, None, false);
            if let Some(last) = self.g.vocab_calls.last_mut() {
                last.receiver = receiver;
            }
        }
        receiver
    }

    fn forward_value(receiver: Option<NodeIndex>, args: Val) -> Val {
        let mut reads = args.reads;
        reads.extend(receiver);
        Val { reads, producer: Producer::Forward { receiver }, op: true }
    }

    /// An argument of a call of the crate: its value, and the closure it is written as, if any
    /// (`&mut |o| agent.act(o)`), into `closures` as (argument index, closure).
    /// A local bound to a closure (`let step = |m, loss| ..; run_epoch(m, data, &mut step)`)
    /// counts as that closure.
    fn arg(&mut self, i: usize, a: &Expr, closures: &mut Vec<(usize, usize)>) -> (Val, Span) {
        let mut e = strip_parens(a);
        while let Expr::Reference(r) = e {
            e = strip_parens(&r.expr);
        }
        match e {
            Expr::Closure(_) => closures.push((i, self.g.closures.len())),
            // Looked up only in a function that binds a closure (comparing each argument with
            // every local's name costs more than the rest of the call).
            Expr::Path(p) if p.qself.is_none() && !self.closure_bindings.is_empty() => {
                if let Some(id) = p.path.get_ident()
                    && let Some(slot) = self.env.iter().rposition(|(b, _)| *id == self.g.bindings[*b].name)
                {
                    let b = self.env[slot].0;
                    if let Some(&(_, c)) = self.closure_bindings.iter().find(|(cb, _)| *cb == b) {
                        closures.push((i, c));
                    }
                }
            }
            _ => {}
        }
        (self.expr(a), self.cheap(a))
    }

    /// Possibly a method of this crate: records the call site for the crate-level pass.
    fn crate_method_call(&mut self, m: &syn::ExprMethodCall, name: String, recv: Val, recv_span: Span) -> Val {
        let receiver_self = is_self(&m.receiver);
        let receiver = self.materialize(recv.clone(), recv_span);
        let mut closure_args = Vec::new();
        let args: Vec<(Val, Span)> =
            m.args.iter().enumerate().map(|(i, a)| self.arg(i, a, &mut closure_args)).collect();
        let span = self.span(m.method.span());
        let (mut receiver_type, receiver_type_guessed) = self.receiver_type(&m.receiver);
        // `self.enc.cell.step(x)`: the declared type down the fields (when it is one the crate
        // names a training-call method on, or leads to one).
        if receiver_type.is_none()
            && !self.crate_fns.vocab_fields.is_empty()
            && let Expr::Field(f) = strip_parens(&m.receiver)
            && !is_self(&f.base)
        {
            receiver_type = self.self_field_type(&m.receiver).map(str::to_string);
        }
        // `agent.update(batch)` with `agent: &mut A`, `A` a type parameter: any impl of the
        // trait `A` is bounded by, including ones the crate does not have.
        let (receiver_type, receiver_generic) = match receiver_type {
            Some(t) if self.generics.iter().flatten().flat_map(|g| g.type_params()).any(|p| p.ident == t) => {
                (None, true)
            }
            t => (t, false),
        };
        let receiver_binding = || match strip_place(&m.receiver) {
            Expr::Path(p) => p.path.get_ident().and_then(|i| self.lookup(&i.to_string())).map(|slot| self.env[slot].0),
            _ => None,
        };
        let receiver_dyn =
            !self.dyn_params.is_empty() && receiver_binding().is_some_and(|b| self.dyn_params.contains(&b));
        let receiver_dyn_all = receiver_dyn
            && !self.dyn_elements.is_empty()
            && receiver_binding().is_some_and(|b| self.dyn_elements.contains(&b));
        let inner_result = self.crate_fns.inner_returns.contains(&name);
        let result = self.call_site(name, None, true, receiver, receiver_self, Some(recv), args, span);
        if inner_result {
            self.inner_result();
        }
        self.note_bool_literals(m.args.iter());
        self.note_mut_refs(m.args.iter());
        let turbofish_autodiff = m.turbofish.as_ref().and_then(|t| self.generic_args_autodiff(t));
        let receiver_field = if receiver_type.is_none() { self.receiver_field(&m.receiver, false) } else { None };
        let receiver_field_owner = receiver_field.as_ref().and_then(|_| self.field_owner(&m.receiver));
        let receiver_element_of = if receiver_type.is_none() && receiver_field.is_none() && !self.element_of.is_empty()
        {
            self.receiver_field(&m.receiver, true)
        } else {
            None
        };
        if let Some(site) = self.g.call_sites.last_mut() {
            site.receiver_element_of = receiver_element_of;
            site.closure_args = closure_args;
            site.receiver_type = receiver_type;
            site.receiver_type_guessed = receiver_type_guessed;
            site.receiver_field = receiver_field;
            site.receiver_field_owner = receiver_field_owner;
            site.turbofish_autodiff = turbofish_autodiff;
            site.receiver_generic = receiver_generic;
            site.receiver_dyn = receiver_dyn;
            site.receiver_dyn_all = receiver_dyn_all;
        }
        result
    }

    /// The result of the call site just recorded is declared on the inner backend (see
    /// `CrateNames::inner_returns`): an untracked model, or data of one.
    fn inner_result(&mut self) {
        if self.g.spec.autodiff_by_type
            && let Some(site) = self.g.call_sites.last()
        {
            let result = site.result;
            self.g.inert_seeds.push(result);
            self.g.untracks_models = true;
        }
    }

    /// `&mut Freeze`, `&mut Freeze::new()`, `&mut freeze` (a local of that type): one of the
    /// crate's `ModuleMapper`s (see `CrateNames::module_mappers`), by its type's name.
    fn mapper_type(&self, arg: &Expr) -> Option<String> {
        let mut e = strip_parens(arg);
        while let Expr::Reference(r) = e {
            e = strip_parens(&r.expr);
        }
        let ty = match e {
            Expr::Path(p) => match p.path.get_ident().and_then(|i| self.lookup(&i.to_string())) {
                Some(slot) => self.g.bindings[self.env[slot].0].ty.clone(),
                None => p.path.segments.last().map(|s| s.ident.to_string()),
            },
            Expr::Struct(st) => st.path.segments.last().map(|s| s.ident.to_string()),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) if p.path.segments.len() >= 2 => {
                    p.path.segments.iter().nth_back(1).map(|s| s.ident.to_string())
                }
                _ => None,
            },
            _ => None,
        };
        ty.filter(|t| self.crate_fns.module_mappers.contains(t))
    }

    /// A method call's receiver's type, and whether it is a guess: its binding's, or what the
    /// getter it is made by returns (`model.text_decoder().forward(..)` with `fn
    /// text_decoder(&mut self) -> &mut TextDecoder`; a guess: the name may be another type's).
    fn receiver_type(&self, receiver: &Expr) -> (Option<String>, bool) {
        match self.binding_ref(receiver) {
            Some(b) => (b.ty.clone(), b.ty_guessed),
            None => {
                let ty = self.returned_type(receiver);
                let guessed = ty.is_some();
                (ty, guessed)
            }
        }
    }

    /// The type a call of one of the crate's functions returns, by its name (see
    /// `CrateNames::return_types`).
    fn returned_type(&self, e: &Expr) -> Option<String> {
        let name = match strip_place(strip_try(e)) {
            Expr::MethodCall(m) => &m.method,
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => &p.path.segments.last()?.ident,
                _ => return None,
            },
            _ => return None,
        };
        self.crate_fns.return_types.get(name.to_string().as_str()).cloned()
    }

    /// The field of `self` a method call's receiver is (`self.policy`), for the crate-level pass
    /// to look its declared type up; with `elements`, also the field a loop binding is an
    /// element of (`block` in `for block in self.blocks.iter_mut()`).
    fn receiver_field(&self, receiver: &Expr, elements: bool) -> Option<String> {
        match strip_place(receiver) {
            Expr::Field(f) if is_self(&f.base) || self.field_owner(receiver).is_some() => match &f.member {
                syn::Member::Named(name) => Some(name.to_string()),
                syn::Member::Unnamed(_) => None,
            },
            Expr::Path(p) if elements => {
                let slot = self.lookup(&p.path.get_ident()?.to_string())?;
                let b = self.env[slot].0;
                self.element_of.iter().find(|(e, _)| *e == b).map(|(_, field)| field.clone())
            }
            _ => None,
        }
    }

    /// The declared type of `self.field` (or `self.enc.cell`) in a method of `self`'s struct,
    /// when it is a crate type that defines a training-call name or leads to one (see
    /// `CrateNames::vocab_fields`).
    fn self_field_type(&self, receiver: &Expr) -> Option<&str> {
        let Expr::Field(f) = strip_parens(receiver) else { return None };
        let syn::Member::Named(field) = &f.member else { return None };
        let owner = if is_self(&f.base) { self.g.owner.as_deref()? } else { self.self_field_type(&f.base)? };
        self.crate_fns.vocab_fields.get(&(owner.to_string(), field.to_string())).map(String::as_str)
    }

    /// The declared element type of the field of `self` a loop walks, for a receiver that is
    /// such an element (`layer` of `for layer in self.layers.iter_mut()` with `layers:
    /// Vec<Layer>`; see `CrateNames::vocab_fields`).
    fn element_type(&self, receiver: &Expr) -> Option<&str> {
        if self.element_of.is_empty() || !matches!(strip_place(receiver), Expr::Path(_)) {
            return None;
        }
        let field = self.receiver_field(receiver, true)?;
        let owner = self.g.owner.as_deref()?;
        self.crate_fns.vocab_fields.get(&(owner.to_string(), field)).map(String::as_str)
    }

    /// For a receiver that is a field of a local with a stated type (`model.cell` with `let
    /// model = Forecaster { .. }` or `model: &Forecaster`), that type.
    fn field_owner(&self, receiver: &Expr) -> Option<String> {
        let Expr::Field(f) = strip_place(receiver) else { return None };
        let b = self.binding_ref(&f.base)?;
        if b.ty_guessed || b.kind == BindingKind::SelfField {
            return None;
        }
        b.ty.clone()
    }

    /// The binding an argument lends the callee to change: `&mut place`, or a parameter handed
    /// on as it is (`state` of `state: &mut State`).
    fn mut_ref(&mut self, a: &Expr) -> Option<BindingId> {
        match strip_parens(a) {
            Expr::Reference(r) if r.mutability.is_some() => {
                let slot = self.place_slot(strip_place(&r.expr))?;
                Some(self.env[slot].0)
            }
            Expr::Path(p) => {
                let slot = self.lookup(&p.path.get_ident()?.to_string())?;
                let b = self.env[slot].0;
                (self.g.bindings[b].kind == BindingKind::Param).then_some(b)
            }
            _ => None,
        }
    }

    /// Marks the arguments of the call site just recorded that lend a binding (see `mut_ref`).
    fn note_mut_refs<'e>(&mut self, args: impl Iterator<Item = &'e Expr>) {
        let stateful = !self.g.spec.trainable_constructors.is_empty();
        for (i, value) in args.enumerate() {
            if !stateful && !matches!(strip_parens(value), Expr::Reference(r) if r.mutability.is_some()) {
                continue;
            }
            let b = self.mut_ref(value);
            if b.is_some()
                && let Some(a) = self.g.call_sites.last_mut().and_then(|s| s.args.get_mut(i))
            {
                a.lent = b;
                if stateful {
                    a.mut_ref = b;
                }
            }
        }
    }

    /// Marks the constants (`true`, `Mode::Eval`) among the arguments of the call site just
    /// recorded.
    fn note_bool_literals<'e>(&mut self, args: impl Iterator<Item = &'e Expr>) {
        for (i, value) in args.enumerate() {
            if let Some(c) = const_arg(value)
                && let Some(a) = self.g.call_sites.last_mut().and_then(|s| s.args.get_mut(i))
            {
                a.constant = Some(c);
            }
        }
    }

    /// Records a call to a function that may be the crate's own; the result is derived from the
    /// receiver and arguments until the crate-level pass knows more.
    #[allow(clippy::too_many_arguments)]
    fn call_site(
        &mut self,
        name: String,
        qualifier: Option<String>,
        method: bool,
        receiver: Option<NodeIndex>,
        receiver_self: bool,
        recv: Option<Val>,
        args: Vec<(Val, Span)>,
        span: Span,
    ) -> Val {
        // Arguments stay unmaterialized: the crate-level pass builds nodes for the few call
        // sites that reach the crate's own functions.
        let mut parts: Vec<(Val, Span)> = recv.map(|r| (r, 0..0)).into_iter().collect();
        let mut arg_values = Vec::with_capacity(args.len());
        for (v, span) in args {
            let (v, span) = if v.producer == Producer::Derived || (v.producer == Producer::Plain && v.reads.is_empty())
            {
                (v, span)
            } else {
                // Forward passes and the like need their own node now (their producer matters).
                let n = self.materialize(v, span.clone());
                (Val { reads: n.into_iter().collect(), producer: Producer::Derived, op: false }, span)
            };
            arg_values.push(super::graph::ArgValue {
                reads: v.reads.clone(),
                producer: v.producer,
                op: v.op,
                span: span.clone(),
                constant: None,
                mut_ref: None,
                lent: None,
            });
            parts.push((v, span));
        }
        let val = self.combine(parts, true);
        let result = self.value_node(val, span.clone());
        if let Some(after) = self.args_after_backward(&arg_values) {
            self.g.args_after_backward.push((self.g.call_sites.len(), after));
        }
        self.g.call_sites.push(CallSite {
            name,
            qualifier,
            method,
            receiver,
            receiver_self,
            receiver_type: None,
            receiver_type_guessed: false,
            receiver_field: None,
            receiver_element_of: None,
            receiver_field_owner: None,
            type_param_dispatch: false,
            closure_args: Vec::new(),
            closure: self.closure_stack.last().map(|&(c, _, _)| c),
            args: arg_values,
            result,
            span,
            in_loop: self.cur_loop(),
            path: self.path.clone(),
            turbofish_autodiff: None,
            receiver_generic: false,
            receiver_dyn: false,
            receiver_dyn_all: false,
            plain_device_only: false,
            no_grad: self.no_grad > 0,
            host_result: false,
            args_returned: 0,
            elems: Vec::new(),
            elem_gates: Vec::new(),
        });
        Val { reads: smallvec::smallvec![result], producer: Producer::Derived, op: false }
    }

    /// A tuple the function returns (see `returned_tuples`): each element gets a node of its
    /// own, kept in `FnModel::return_elems`.
    fn returned_tuple(&mut self, t: &syn::ExprTuple) -> Val {
        let mut reads = smallvec::SmallVec::new();
        for (i, e) in t.elems.iter().enumerate() {
            let v = self.expr(e);
            let span = self.cheap(e);
            if let Some(n) = self.materialize(v, span) {
                if let Some(elem) = self.g.return_elems.get_mut(i) {
                    elem.push(n);
                }
                reads.push(n);
            }
        }
        reads.sort_unstable();
        reads.dedup();
        Val { reads, producer: Producer::Derived, op: false }
    }

    /// A value the function returns.
    fn returned(&mut self, v: Val) {
        if let Some(n) = self.materialize(v, 0..0) {
            self.g.returns.push(n);
        }
    }

    /// A parameter built from a tensor (burn `Param::initialized(id, value)`,
    /// `Param::from_tensor(value)`): a new id when the framework says so, and a rewrite of a
    /// parameter's value that a rule may find blended.
    fn param_rebuild(&mut self, c: &syn::ExprCall, last: &str, ty: &str) -> Option<Val> {
        let rebuild =
            self.g.spec.param_rebuild.iter().find(|(f, _)| *f == last).filter(|_| ty == self.g.spec.param_type);
        let &(_, fresh_id) = rebuild.filter(|_| self.tracks_params())?;
        {
            let call_span = |s: &Self| s.between(first_token(&c.func), c.paren_token.span.close());
            if fresh_id {
                let span = call_span(self);
                self.vocab(CallKind::ParamNewId, span, None, false);
            }
            // `Param::initialized(id, this.val() * (1.0 - tau) + that.val() * tau)`; the value is
            // the second argument when there are more (`Param::from_mapped_value(id, v, mapper)`).
            let at = usize::from(c.args.len() >= 2);
            if let Some(value) = c.args.iter().nth(at)
                && !mentions_method(value, common::LEAVE_AUTODIFF_METHODS)
            {
                let vals: Vec<Val> = c.args.iter().map(|a| self.expr(a)).collect();
                let v = &vals[at];
                // A blend of a parameter's value with another tensor (another parameter's value,
                // a captured online tensor); `p.val().clamp(..)` alone is not one.
                if v.producer == Producer::Derived {
                    let (span, value) = (call_span(self), self.full(value));
                    let (reads, old) = (v.reads.clone(), self.g.param_reads.clone());
                    self.g.param_rewrites.push(super::graph::ParamRewrite { span, value, reads: reads.to_vec(), old });
                }
                let n = self.value_node(Val::plain(), 0..0);
                self.params.push(n);
                return Some(Val { reads: smallvec::smallvec![n], producer: Producer::Derived, op: false });
            }
        }
        None
    }

    fn call(&mut self, c: &syn::ExprCall) -> Val {
        let span = self.cheap(&c.func);
        // `std::mem::take(&mut self.buf)`, `mem::replace(&mut self.buf, Vec::new())`: empties
        // the place, as `self.buf.clear()` does, for what it held.
        if let Some(Expr::Reference(r)) = c.args.first()
            && r.mutability.is_some()
            && let Expr::Path(p) = &*c.func
            && p.path.segments.len() >= 2
            && let Some(f) = p.path.segments.last()
            && (f.ident == "take" || f.ident == "replace")
            && p.path.segments[p.path.segments.len() - 2].ident == "mem"
            && let Some(slot) = self.place_slot(&r.expr)
        {
            let version = self.env[slot].1;
            let (in_loop, at) = (self.cur_loop(), span.start);
            self.g.cleared.push(Cleared { version, in_loop, at });
        }
        // `policy(&obs)` with `policy` a parameter (a closure handed in by the caller).
        if !self.g.params.is_empty()
            && let Expr::Path(p) = &*c.func
            && let Some(id) = p.path.get_ident()
            && let Some(slot) = self.env.iter().rposition(|(b, _)| *id == self.g.bindings[*b].name)
        {
            let b = self.env[slot].0;
            if self.g.bindings[b].kind == BindingKind::Param
                && let Some(index) = self.g.params.iter().position(|p| p.and_then(|p| self.g.binding_of(p)) == Some(b))
            {
                // Its result gets a node of its own: a crate function handed in that runs backward
                // returns what training made of its arguments (set by the crate-level pass).
                let in_loop = self.cur_loop();
                let call_span = self.between(first_token(&c.func), c.paren_token.span.close());
                // What each argument reads (as `combine` joins them): the crate-level pass asks
                // whether every call hands the closure an untracked model there.
                let mut arg_reads: Vec<Reads> = Vec::with_capacity(c.args.len());
                for a in &c.args {
                    let (v, part) = (self.expr(a), self.cheap(a));
                    if v.producer == Producer::Derived && !v.op {
                        arg_reads.push(v.reads);
                    } else {
                        arg_reads.push(self.materialize(v, part).into_iter().collect());
                    }
                }
                let mut reads: Vec<NodeIndex> = arg_reads.iter().flatten().copied().collect();
                reads.sort_unstable();
                reads.dedup();
                let args = Val { reads: reads.into(), producer: Producer::Derived, op: true };
                let result = self.value_node(args, span);
                self.g.param_calls.push(super::graph::ParamCall {
                    param: index,
                    in_loop,
                    span: call_span,
                    path: self.path.clone(),
                    result,
                    arg_reads,
                });
                return Val { reads: smallvec::smallvec![result], producer: Producer::Derived, op: false };
            }
        }
        let Expr::Path(p) = &*c.func else {
            let f = self.expr(&c.func);
            let args = self.exprs(c.args.iter(), true);
            return self.combine(vec![(f, span.clone()), (args, span)], true);
        };
        // `update(actor, critic, batch)` with `let update = |..| { ..backward.. };`: the closure's
        // backward runs here, in the loops around this call.
        if !self.closure_bindings.is_empty()
            && let Some(id) = p.path.get_ident()
            && let Some(slot) = self.lookup(&id.to_string())
            && let Some(&(_, closure)) = self.closure_bindings.iter().find(|(b, _)| *b == self.env[slot].0)
        {
            self.run_bound_closure(closure, id, c);
            // Its value is what the closure returns (`let blend = |t, s| (..)?.detach();` gives a
            // cut tensor); what the call hands in flows into its inputs.
            let ret = self.env[slot].1;
            let params = self.g.closures.get(closure).map(|s| s.params.clone()).unwrap_or_default();
            for (k, arg) in c.args.iter().enumerate() {
                let v = self.expr(arg);
                if let Some(Some(param)) = params.get(k)
                    && let Some(n) = self.materialize(v, span.clone())
                {
                    self.g.graph.add_edge(n, *param, Edge::DerivedFrom);
                }
            }
            return Val { reads: smallvec::smallvec![ret], producer: Producer::Derived, op: false };
        }
        let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
        let last = segs.last().map(String::as_str).unwrap_or("");
        // Built by hand, not with `format!`: this runs for every path call of the crate.
        let last_two: std::borrow::Cow<'_, str> = if segs.len() >= 2 {
            let ty = &segs[segs.len() - 2];
            let mut both = String::with_capacity(ty.len() + 2 + last.len());
            both.push_str(ty);
            both.push_str("::");
            both.push_str(last);
            both.into()
        } else {
            last.into()
        };
        let ty = if segs.len() >= 2 { segs[segs.len() - 2].as_str() } else { "" };
        let specs = self.specs();
        // `nn::linear(vs.root() / "fc", ..)`, `Net::new(&vs.root(), ..)`: variables created in
        // the store the first argument names.
        if let Some(first) = c.args.first()
            && (specs.iter().any(|s| !s.var_builders.is_empty())
                && (ty != "nn" || specs.iter().any(|s| s.var_builders.contains(&last))))
            && let Some(root) = self.var_root(first)
        {
            let span = self.between(first_token(&c.func), c.paren_token.span.close());
            self.note_var_creation(span, root);
        }

        if specs.iter().any(|s| s.no_grad_functions.contains(&last)) && c.args.len() == 1 {
            return self.no_grad_region(|s| s.exprs(c.args.iter(), false));
        }
        // `AutodiffModule::valid(&self.model)`, `Module::no_grad(model)`: the method called with
        // its receiver as the argument, as `model.valid()` is.
        if segs.len() >= 2
            && c.args.len() == 1
            && ty.starts_with(char::is_uppercase)
            && specs.iter().any(|s| s.no_grad_models.contains(&last))
        {
            let recv = self.exprs(c.args.iter(), false);
            self.g.untracks_models = true;
            return Val { producer: Producer::InertModel, ..recv };
        }
        // `VarBuilder::from_varmap(&varmap, ..)`, `Var::new(..)`: trainable variables; what is
        // built from them records a graph in every forward pass.
        if self.g.spec.is_trainable_constructor(&last_two) {
            let args = self.exprs(c.args.iter(), false);
            let span = self.between(first_token(&c.func), c.paren_token.span.close());
            let n = self.value_node(args, span);
            self.g.trainable_seeds.push(n);
            return Val { reads: smallvec::smallvec![n], producer: Producer::Derived, op: false };
        }
        // `VarBuilder::from_mmaped_safetensors(..)`: plain weights; a model built from them is
        // as inert as one made untracked.
        if self.g.spec.frozen_constructors.contains(&&*last_two) {
            let args = self.exprs(c.args.iter(), false);
            self.g.untracks_models = true;
            return Val { producer: Producer::InertModel, ..args };
        }
        // `Tensor::detach(&next)`: a cutting method called with its receiver as the argument.
        if specs.iter().any(|s| s.is_cut_function(&last_two))
            || (segs.len() >= 2
                && common::TENSOR_TYPES.contains(&ty)
                && c.args.len() == 1
                && specs.iter().any(|s| s.cut_methods.contains(&last)))
        {
            self.exprs(c.args.iter(), false);
            return Val::plain();
        }
        // `BaseOptimizer::zero_grad(self)`, `Optimizer::zero_grad(&mut opt)`: a method called
        // with its receiver as the first argument.
        if segs.len() >= 2
            && let Some(recv) = c.args.first()
            && self.g.spec.is_clear(last, c.args.len() - 1)
        {
            self.exprs(c.args.iter(), false);
            let span = self.between(first_token(&c.func), c.paren_token.span.close());
            self.record_call(TrainingCallKind::Clear, span, expr_text(strip_place(recv)));
            return Val::plain();
        }
        // `Tensor::backward(&loss)`, `<T as Backward>::backward(loss)`: the method called with
        // the loss as its first argument, as `loss.backward()` is.
        if segs.len() >= 2
            && ty != "Self"
            && ty.starts_with(char::is_uppercase)
            && let Some(loss) = c.args.first()
            && specs.iter().any(|s| s.is_backward(last, c.args.len() - 1))
        {
            let v = self.expr(loss);
            let loss_span = self.cheap(loss);
            self.exprs(c.args.iter().skip(1), false);
            self.mark_loss(v, loss_span);
            let span = self.between(first_token(&c.func), c.paren_token.span.close());
            self.record_call(TrainingCallKind::Backward, span, expr_text(strip_place(loss)));
            return Val::plain();
        }
        // `Net::forward(&model, x)`, `Module::forward(&self.policy, obs)`: a forward pass on the
        // first argument, as `model.forward(x)` is. Not a loss module's.
        if segs.len() >= 2
            && ty != "Self"
            && ty.starts_with(char::is_uppercase)
            && !ty.ends_with("Loss")
            && last.starts_with("forward")
            && frameworks::is_forward_method(last)
            && !self.crate_fns.plain_fns.contains(last)
            && let Some(model) = c.args.first()
        {
            let recv = self.expr(model);
            let recv_span = self.cheap(model);
            let span = self.between(first_token(&c.func), c.paren_token.span.close());
            return self.forward_parts(span, recv, recv_span, c.args.iter().skip(1));
        }
        if frameworks::is_loss_function(last) {
            let args = self.exprs(c.args.iter(), true);
            return Val { reads: args.reads, producer: Producer::Forward { receiver: None }, op: true };
        }
        if let Some(v) = self.param_rebuild(c, last, ty) {
            return v;
        }
        if common::PARAM_TYPES.contains(&ty) {
            self.exprs(c.args.iter(), false);
            let n = self.value_node(Val::plain(), span);
            self.params.push(n);
            return Val { reads: smallvec::smallvec![n], producer: Producer::Derived, op: false };
        }
        if common::TENSOR_TYPES.contains(&ty) && common::DATA_CONSTRUCTORS.contains(&last) {
            self.exprs(c.args.iter(), false);
            return Val::plain();
        }
        if rust::WRAPPERS.contains(&last) || rust::WRAPPERS.contains(&&*last_two) {
            return self.exprs(c.args.iter(), false);
        }
        let records_op = (common::TENSOR_TYPES.contains(&ty) && common::TENSOR_OP_FUNCTIONS.contains(&last))
            || segs.iter().any(|s| common::OP_MODULES.contains(&s.as_str()));
        if records_op && self.after_backward() {
            // `Tensor::cat(vec![..])`, `activation::softmax(x, 1)`: tensor operations on their arguments.
            let call_span = self.between(first_token(&c.func), c.paren_token.span.close());
            let mut parts = Vec::with_capacity(c.args.len());
            for a in &c.args {
                let v = self.expr(a);
                self.note_op_after_backward(&v, call_span.clone());
                parts.push((v, self.cheap(a)));
            }
            return self.combine(parts, true);
        }
        if common::TENSOR_TYPES.contains(&ty)
            || last.starts_with(char::is_uppercase)
            || !self.crate_fns.fns.contains(last)
        {
            // `Tensor::cat`, tuple structs and enum variants: derived from their arguments.
            return self.exprs(c.args.iter(), true);
        }
        // Possibly a function of this crate (`compute_loss(..)`, `Self::helper(..)`).
        let mut closure_args = Vec::new();
        let args: Vec<(Val, Span)> =
            c.args.iter().enumerate().map(|(i, a)| self.arg(i, a, &mut closure_args)).collect();
        let span = p.path.segments.last().map_or(0..0, |s| self.span(s.ident.span()));
        let qualifier = (segs.len() >= 2).then(|| segs[segs.len() - 2].clone());
        // `M::f(..)` or `<M as Trait>::f(..)` with `M` a type parameter: any impl of the crate.
        let dispatched = match &p.qself {
            Some(q) => {
                matches!(&*q.ty, syn::Type::Path(t) if t.qself.is_none() && t.path.get_ident().is_some_and(|i| self.is_type_param(i)))
            }
            None => segs.len() == 2 && p.path.segments.first().is_some_and(|s| self.is_type_param(&s.ident)),
        };
        let plain_device_only = self.devices.is_some() && self.hands_only_plain_device(c.args.iter());
        let result = self.call_site(last.to_string(), qualifier, false, None, false, None, args, span);
        if self.crate_fns.inner_returns.contains(last) {
            self.inner_result();
        }
        if let Some(site) = self.g.call_sites.last_mut() {
            site.type_param_dispatch = dispatched;
            site.plain_device_only = plain_device_only;
            site.closure_args = closure_args;
        }
        self.note_bool_literals(c.args.iter());
        self.note_mut_refs(c.args.iter());
        // `run_evaluation::<TrainingBackend>(..)`: the callee is instantiated with that backend.
        if let Some(syn::PathSegment { arguments: syn::PathArguments::AngleBracketed(t), .. }) = p.path.segments.last()
        {
            let autodiff = self.generic_args_autodiff(t);
            if let Some(site) = self.g.call_sites.last_mut() {
                site.turbofish_autodiff = autodiff;
            }
        }
        result
    }

    /// What explicit generic arguments say about the backend: `Some(true)` when they name an
    /// autodiff one, `Some(false)` when they name its inner backend (`B::InnerBackend`), `None`
    /// otherwise (`run::<B, E>(..)` hands on the caller's own types).
    fn generic_args_autodiff(&self, args: &syn::AngleBracketedGenericArguments) -> Option<bool> {
        if !(self.g.spec.autodiff_by_type && self.g.framework_known) {
            return None;
        }
        use syn::visit::Visit;
        // `InnerBackend` (also as `<TB as AutodiffBackend>::InnerBackend`, whose path names the
        // autodiff trait), one of burn's plain backends, or a crate alias of one: no autodiff.
        let is_plain = |a: &syn::GenericArgument| match a {
            syn::GenericArgument::Type(syn::Type::Path(p)) => p.path.segments.last().is_some_and(|s| {
                let name = s.ident.to_string();
                self.g.spec.inner_backend_names.contains(&name.as_str())
                    || common::PLAIN_BACKEND_NAMES.contains(&name.as_str())
                    || self.crate_fns.plain_aliases.contains(&name)
            }),
            _ => false,
        };
        let mut v = AutodiffNames::new(self.crate_fns).with(&self.aliases).around(self.module_aliases);
        let mut plain = false;
        for a in &args.args {
            if is_plain(a) {
                plain = true;
            } else {
                v.visit_generic_argument(a);
            }
        }
        if v.found {
            return Some(true);
        }
        plain.then_some(false)
    }

    /// Macros: only `vec![…]` (and `dbg!`) pass values through; formatting and assertion macros
    /// produce strings or nothing, so their bodies are not parsed (parsing them costs as much
    /// as the rest of the walk).
    fn mac(&mut self, mac: &syn::Macro) -> Val {
        let last = mac.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        let passes_through = last == "vec" || last == "dbg";
        if FORMAT_MACROS.contains(&last.as_str()) && runs_code(&mac.tokens) {
            // `println!("{epoch} {}", validate(&model, data))`: the arguments after the format
            // string run (calls, forward passes); the macro's value is text or `()`.
            if let Ok(args) = mac.parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated) {
                // Named arguments (`loss = total`) are not assignments: only their values run.
                let runs: Vec<&Expr> = args
                    .iter()
                    .map(|a| if let Expr::Assign(named) = a { &*named.right } else { a })
                    .filter(|a| !matches!(a, Expr::Lit(_)))
                    .collect();
                self.exprs(runs, false);
            }
            return Val::plain();
        }
        if !passes_through {
            // A macro of the crate (`dispatch_env!(name, { run::<B, E>(..) })`) whose arguments
            // are expressions: they run, in some expansion, when the macro does — on some paths,
            // as a branch does. Their value is the expansion's and is not known.
            let crate_macro =
                mac.path.segments.last().is_some_and(|s| self.crate_fns.macros.contains(&s.ident.to_string()));
            if crate_macro && let Ok(args) = mac.parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated) {
                let mark = self.env.len();
                self.branch(|s| s.exprs(args.iter(), false));
                self.env.truncate(mark);
            }
            return Val::plain();
        }
        match mac.parse_body_with(Punctuated::<Expr, syn::Token![,]>::parse_terminated) {
            Ok(args) => self.exprs(args.iter(), false),
            Err(_) => Val::plain(),
        }
    }

    fn if_expr(&mut self, i: &syn::ExprIf) -> Val {
        // tch `if g.defined() { g.zero_(); }`: a gradient is undefined only before the first
        // backward, so what clears it whenever it exists runs on every step that needs it.
        if i.else_branch.is_none() && self.tests_grad_defined(&i.cond) {
            self.expr(&i.cond);
            return self.block(&i.then_branch);
        }
        let mark = self.env.len();
        self.expr(&i.cond);
        let after_cond: Vec<_> = self.env[..mark.min(self.env.len())].to_vec();
        let mut else_waits = false;
        let mut value_gate = None;
        if compares_a_length(&i.cond) || self.compares_a_counter(&i.cond) {
            // `if step < warmup { random() } else { act() }`: the else-block runs once the
            // threshold is reached; otherwise the then-block does (the id `branch` gives it).
            if tests_below(&i.cond, |e| is_len(e) || self.is_counter(e)) {
                else_waits = i.else_branch.is_some();
            } else {
                self.g.size_wait_branches.push(self.next_branch + 1);
                if waits_briefly(&i.cond, &self.crate_fns.consts) {
                    self.g.brief_wait_branches.push(self.next_branch + 1);
                }
            }
        } else {
            let mut cond = strip_parens(&i.cond);
            while let Expr::Binary(b) = cond
                && matches!(b.op, syn::BinOp::And(_))
            {
                if let Some(callee) = self.crate_call_name(&b.right) {
                    self.g.gated_branches.push((self.next_branch + 1, callee));
                }
                cond = strip_parens(&b.left);
            }
            if let Some(callee) = self.crate_call_name(cond) {
                self.g.gated_branches.push((self.next_branch + 1, callee));
            }
            // `if let Some(batch) = memory.sample(n) { learn(batch) }`: taken when the crate's
            // function hands a value (a size gate's `None` until the memory has filled).
            if let Some(callee) = self.some_of_crate_call(cond) {
                self.g.gated_branches.push((self.next_branch + 1, callee));
            }
            if let Some((param, opens_on, name)) = self.bool_param_test(&i.cond) {
                self.g.param_gates.push((self.next_branch + 1, param, opens_on, name));
            }
            value_gate = self.param_value_test(&i.cond);
        }
        if let Some(b) = self.presence_test(&i.cond) {
            self.g.presence_ifs.push((self.next_branch + 1, b));
        }
        let flag = if i.else_branch.is_some() { self.setting_test(&i.cond) } else { None };
        let then_id = self.next_branch + 1;
        if let Some((param, opens)) = &value_gate {
            self.g.value_gates.push((then_id, *param, opens.clone()));
        }
        let leaves = leaves_function(&i.then_branch);
        self.leaving += usize::from(leaves);
        // `if boundary { opt.step() } .. if boundary { opt.zero_grad() }`: two blocks on the same
        // local `bool` at the same depth run on the same iterations (the later one counts as the
        // first's branch).
        if i.else_branch.is_none()
            && let Expr::Path(p) = strip_parens(&i.cond)
            && let Some(id) = p.path.get_ident()
            && let Some(slot) = self.lookup(&id.to_string())
        {
            let (b, version) = self.env[slot];
            let earlier =
                self.bool_ifs.iter().find(|&&(eb, ev, _, ref path)| eb == b && ev == version && *path == self.path);
            match earlier {
                Some(&(_, _, first, _)) => self.g.branch_aliases.push((then_id, first)),
                None => self.bool_ifs.push((b, version, then_id, self.path.clone())),
            }
        }
        // `if self.head.is_none() { self.head = Some(nn::linear(..)) }`: made once, when missing.
        let lazy = is_none_test(&i.cond);
        self.lazy_init += usize::from(lazy);
        // `if t % self.period == 0 { self.slow = cell(x, &self.slow)? }`: taken every k-th call,
        // so what it keeps still chains from call to call (a slow tier's state), unlike a cache
        // behind a flag.
        // `if let Some(avg) = self.shadow.get_mut(name) { *avg = .. }`: an element a state keeps
        // for every key it was made with, taken on every call, as a loop over them would be.
        if !is_periodic_test(&i.cond) && !is_element_lookup(&i.cond) && !self.is_gradient_lookup(&i.cond) {
            self.g.conditional_branches.push(self.next_branch + 1);
        }
        let then = self.branch(|s| s.block(&i.then_branch));
        self.lazy_init -= usize::from(lazy);
        self.leaving -= usize::from(leaves);
        self.env.truncate(mark);
        let after_then = std::mem::replace(&mut self.env, after_cond.clone());
        if let Some((name, on_true)) = flag {
            self.g.flag_ifs.push((then_id, self.next_branch + 1, name, on_true));
        }
        if else_waits {
            self.g.size_wait_branches.push(self.next_branch + 1);
            if waits_briefly(&i.cond, &self.crate_fns.consts) {
                self.g.brief_wait_branches.push(self.next_branch + 1);
            }
        }
        let els = match &i.else_branch {
            Some((_, e)) => {
                self.g.conditional_branches.push(self.next_branch + 1);
                if let Some((param, opens)) = &value_gate {
                    self.g.value_gates.push((self.next_branch + 1, *param, opens.negate()));
                }
                self.branch(|s| s.expr(e))
            }
            None => Val::plain(),
        };
        self.env.truncate(mark);
        let after_else = std::mem::replace(&mut self.env, after_cond);
        let span = self.span(i.if_token.span);
        self.merge(&[after_then, after_else], span.clone());
        self.combine(vec![(then, span.clone()), (els, span)], false)
    }

    /// tch: whether `cond` is `g.defined()` for a gradient (`v.grad().defined()`, or a local
    /// bound to one).
    fn tests_grad_defined(&self, cond: &Expr) -> bool {
        let Some((getter, _)) = self.g.spec.grad_zero_in_place else { return false };
        let Expr::MethodCall(m) = strip_parens(cond) else { return false };
        m.method == "defined"
            && m.args.is_empty()
            && match strip_parens(&m.receiver) {
                Expr::MethodCall(g) => g.method == getter && g.args.is_empty(),
                Expr::Path(p) => p.path.get_ident().is_some_and(|i| self.grad_locals.contains(&i.to_string())),
                _ => false,
            }
    }

    fn match_expr(&mut self, m: &syn::ExprMatch) -> Val {
        let scrutinee = self.expr(&m.expr);
        let scrut_span = self.cheap(&m.expr);
        let before = self.env.clone();
        let mut ends = Vec::new();
        let mut vals = Vec::new();
        // `match memory.sample(n) { Some(batch) => learn(batch), None => {} }`: the `Some` arm
        // is taken when the crate's function hands a value, as `if let Some(..)` is.
        let callee = m.arms.iter().any(|a| is_some_pat(&a.pat)).then(|| self.crate_call_name(&m.expr)).flatten();
        // `match mode { Mode::Explore => .., _ => .. }` on a parameter: each arm runs for the
        // variants it names (a later catch-all for every other one); not with guards, which
        // may send a variant on.
        let gated_param =
            m.arms.iter().all(|a| !matches!(a.pat, Pat::Guard(_))).then(|| self.param_index(&m.expr)).flatten();
        let mut named: Vec<super::graph::ConstArg> = Vec::new();
        for arm in &m.arms {
            if let Some(param) = gated_param {
                let opens = match pat_variants(&arm.pat) {
                    Some(values) => {
                        named.extend(values.iter().cloned());
                        Some(super::graph::Opens { values, negated: false })
                    }
                    None if matches!(arm.pat, Pat::Wild(_) | Pat::Ident(_)) => {
                        Some(super::graph::Opens { values: named.clone(), negated: true })
                    }
                    None => None,
                };
                if let Some(opens) = opens {
                    self.g.value_gates.push((self.next_branch + 1, param, opens));
                }
            }
            self.env.clone_from(&before);
            if let Some(callee) = &callee
                && is_some_pat(&arm.pat)
            {
                self.g.gated_branches.push((self.next_branch + 1, callee.clone()));
            }
            self.g.conditional_branches.push(self.next_branch + 1);
            let v = self.branch(|s| {
                let mark = s.env.len();
                s.bind_pat(&arm.pat, scrutinee.clone(), scrut_span.clone());
                if let Pat::Guard(g) = &arm.pat {
                    s.expr(&g.guard);
                }
                let leaves = match &*arm.body {
                    Expr::Block(b) => leaves_function(&b.block),
                    other => expr_leaves_function(other),
                };
                s.leaving += usize::from(leaves);
                let v = s.expr(&arm.body);
                s.leaving -= usize::from(leaves);
                s.env.truncate(mark);
                v
            });
            vals.push((v, self.cheap(&arm.body)));
            ends.push(std::mem::take(&mut self.env));
        }
        self.env = before;
        if !ends.is_empty() {
            let span = self.span(m.match_token.span);
            self.merge(&ends, span);
        }
        self.combine(vals, false)
    }

    /// After branches: bindings whose version differs between branches get a merged version.
    /// Every branch environment starts with the current environment's slots, in order.
    fn merge(&mut self, ends: &[Vec<(BindingId, NodeIndex)>], span: Span) {
        for slot in 0..self.env.len() {
            let (id, base) = self.env[slot];
            let mut versions: Vec<NodeIndex> =
                ends.iter().filter_map(|env| env.get(slot).filter(|(b, _)| *b == id).map(|(_, v)| *v)).collect();
            versions.push(base);
            versions.sort_unstable();
            versions.dedup();
            if versions.len() > 1 {
                let merged = self.add_node(NodeKind::Version(id), span.clone());
                for v in versions {
                    self.g.graph.add_edge(
                        v,
                        merged,
                        Edge::StoredInto { how: Store::Merge, span: span.clone(), through: None },
                    );
                }
                self.env[slot].1 = merged;
            }
        }
    }

    fn branch<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.next_branch += 1;
        self.path.push(self.next_branch);
        let r = f(self);
        self.path.pop();
        r
    }

    fn no_grad_region<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Val {
        self.no_grad += 1;
        f(self);
        self.no_grad -= 1;
        Val::plain()
    }

    fn looped(&mut self, header: Span, body: impl FnOnce(&mut Self)) {
        let id = self.g.loops.len();
        self.g.loops.push(LoopScope {
            parent: self.cur_loop(),
            header,
            runs_backward: false,
            may_run_backward: false,
            pushes_into_emptied: false,
            runs_forward: false,
            over_self: false,
            literal_count: None,
            over_dim: false,
            over_variables: false,
            pattern: 0..0,
            body_branch: saturate(self.next_branch as u64 + 1),
        });
        let before = self.env.clone();
        self.loop_stack.push(id);
        self.backward_marks.push(None);
        self.branch(body);
        self.backward_marks.pop();
        self.loop_stack.pop();
        // The end of an iteration flows into the next one: link end versions back to the
        // versions live at the start (which also stand for "after the loop").
        let span = self.g.loops[id].header.clone();
        for (slot, &(bid, start)) in before.iter().enumerate() {
            if let Some(&(b, end)) = self.env.get(slot)
                && b == bid
                && end != start
            {
                self.g.graph.add_edge(
                    end,
                    start,
                    Edge::StoredInto { how: Store::Merge, span: span.clone(), through: None },
                );
            }
        }
        self.env = before;
    }

    /// The frameworks whose names count here: the file's, or every registered one when it is
    /// not known.
    fn specs(&self) -> std::sync::Arc<[&'static Spec]> {
        self.specs.clone()
    }

    fn is_no_grad_guard(&self, e: &Expr) -> bool {
        let e = match e {
            Expr::Try(t) => &*t.expr,
            e => e,
        };
        let Expr::Call(c) = e else { return false };
        let Expr::Path(p) = &*c.func else { return false };
        let last = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        self.specs().iter().any(|s| s.no_grad_guards.contains(&last.as_str()))
    }
}

/// Whether a block ends by leaving the function: `return`, `bail!(..)`, `panic!(..)`,
/// `std::process::exit(..)`.
fn leaves_function(block: &Block) -> bool {
    match block.stmts.last() {
        Some(Stmt::Expr(e, _)) => expr_leaves_function(e),
        Some(Stmt::Macro(m)) => macro_leaves_function(&m.mac),
        _ => false,
    }
}

fn expr_leaves_function(e: &Expr) -> bool {
    match e {
        Expr::Return(_) => true,
        Expr::Macro(m) => macro_leaves_function(&m.mac),
        Expr::Call(c) => matches!(&*c.func, Expr::Path(p)
            if p.path.segments.last().is_some_and(|s| s.ident == "exit")
                && p.path.segments.iter().any(|s| s.ident == "process")),
        _ => false,
    }
}

fn macro_leaves_function(m: &syn::Macro) -> bool {
    m.path
        .segments
        .last()
        .is_some_and(|s| ["bail", "panic", "unreachable", "todo", "unimplemented"].iter().any(|n| s.ident == n))
}

/// Whether a type names the inner (non-autodiff) backend: `Lm<B::InnerBackend>`,
/// `&Model<<B as AutodiffBackend>::InnerBackend>`.
fn mentions_inner_backend(ty: &syn::Type, spec: &Spec) -> bool {
    mentions_type(ty, spec.inner_backend_names)
}

/// Whether a type names one of `names` anywhere in it (`&[(String, Var)]` names `Var`).
fn mentions_type(ty: &syn::Type, names: &[&str]) -> bool {
    use syn::visit::Visit;
    struct Inner<'s> {
        names: &'s [&'s str],
        found: bool,
    }
    impl<'a> Visit<'a> for Inner<'_> {
        fn visit_path_segment(&mut self, s: &'a syn::PathSegment) {
            if self.names.iter().any(|n| s.ident == n) {
                self.found = true;
            }
            if !self.found {
                syn::visit::visit_path_segment(self, s);
            }
        }
    }
    let mut v = Inner { names, found: false };
    v.visit_type(ty);
    v.found
}

/// Whether generics name an autodiff backend (`B: AutodiffBackend`, `Autodiff<NdArray>`).
fn mentions_autodiff(generics: &syn::Generics, names: &CrateNames, aliases: &[(String, bool)]) -> bool {
    use syn::visit::Visit;
    let mut v = AutodiffNames::new(names).with(aliases);
    v.visit_generics(generics);
    v.found
}

/// Whether a signature's generics or parameter types name an autodiff backend.
fn signature_mentions_autodiff(sig: &syn::Signature, names: &CrateNames, aliases: &[(String, bool)]) -> bool {
    use syn::visit::Visit;
    let mut v = AutodiffNames::new(names).with(aliases);
    let mut used: Vec<&syn::Ident> = Vec::new();
    for input in &sig.inputs {
        if let syn::FnArg::Typed(t) = input {
            v.visit_type(&t.ty);
            if !v.found {
                idents_in(&t.ty, &mut used);
            }
        }
    }
    if v.found {
        return true;
    }
    // A type parameter's bounds say what values of it are: they count when a parameter has that
    // type (`model: M` with `M: AutodiffModule<Ad>`), or when the bound is an autodiff backend
    // itself (`B: AutodiffBackend`). A type parameter the values do not have names a
    // configuration (`S: ModelSpec<MyBackend, MyAutodiffBackend>`, whose plain and autodiff
    // models the body picks among): it makes nothing autodiff.
    let counts = |ident: &syn::Ident, bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>| {
        used.contains(&ident) || bounds.iter().any(|b| bound_is_autodiff(b, names, aliases))
    };
    for p in sig.generics.type_params() {
        if counts(&p.ident, &p.bounds) {
            v.visit_type_param(p);
        }
    }
    if let Some(w) = &sig.generics.where_clause {
        for pred in &w.predicates {
            // `S::TrainModel: AutodiffModule<Ad>` speaks of an associated type, not of a value
            // the function is handed: only when a parameter has a type of `S`.
            if let syn::WherePredicate::Type(t) = pred
                && let syn::Type::Path(tp) = &t.bounded_ty
                && tp.qself.is_none()
                && let Some(first) = tp.path.segments.first()
                && if tp.path.segments.len() == 1 {
                    counts(&first.ident, &t.bounds)
                } else {
                    used.contains(&&first.ident)
                }
            {
                v.visit_predicate_type(t);
            }
        }
    }
    v.found
}

/// The identifiers of the paths in a type (`Net<B>`: `Net`, `B`).
fn idents_in<'t>(ty: &'t syn::Type, out: &mut Vec<&'t syn::Ident>) {
    use syn::visit::Visit;
    struct Idents<'v, 't>(&'v mut Vec<&'t syn::Ident>);
    impl<'t> Visit<'t> for Idents<'_, 't> {
        fn visit_path_segment(&mut self, s: &'t syn::PathSegment) {
            self.0.push(&s.ident);
            syn::visit::visit_path_segment(self, s);
        }
    }
    Idents(out).visit_type(ty);
}

/// A bound whose trait is itself an autodiff name (`AutodiffBackend`, a crate trait extending
/// it), not one that only names an autodiff backend among its arguments.
fn bound_is_autodiff(b: &syn::TypeParamBound, names: &CrateNames, aliases: &[(String, bool)]) -> bool {
    let syn::TypeParamBound::Trait(t) = b else { return false };
    t.path.segments.last().is_some_and(|s| {
        let name = s.ident.to_string();
        aliases.iter().rev().find(|(n, _)| *n == name).map_or_else(|| names.is_autodiff_name(&name), |&(_, a)| a)
    })
}

/// Finds burn's autodiff names in paths (walking the tree; printing it to text costs more),
/// and the crate's aliases of them (`type TrainingBackend = Autodiff<Wgpu>;`).
struct AutodiffNames<'n> {
    names: &'n CrateNames,
    /// Aliases in scope where the type is written (module and function body, innermost last),
    /// with whether each names an autodiff backend.
    scope: &'n [(String, bool)],
    /// Aliases of an enclosing scope, looked up after `scope`.
    outer: &'n [(String, bool)],
    found: bool,
}

impl<'n> AutodiffNames<'n> {
    fn new(names: &'n CrateNames) -> Self {
        Self { names, scope: &[], outer: &[], found: false }
    }

    fn with(self, scope: &'n [(String, bool)]) -> Self {
        Self { scope, ..self }
    }

    fn around(self, outer: &'n [(String, bool)]) -> Self {
        Self { outer, ..self }
    }
}

impl<'a> syn::visit::Visit<'a> for AutodiffNames<'_> {
    // `burn::backend::Wgpu<f32, i32>` names burn's own type, whatever alias the crate calls
    // `Wgpu` elsewhere (`type Wgpu = Autodiff<burn::backend::Wgpu>;` in another module): only
    // burn's autodiff names count in it, and the crate's names in its generic arguments.
    fn visit_path(&mut self, p: &'a syn::Path) {
        let framework =
            p.segments.len() > 1 && p.segments.first().is_some_and(|s| s.ident.to_string().starts_with("burn"));
        if !framework {
            return syn::visit::visit_path(self, p);
        }
        for s in &p.segments {
            if crate::frameworks::common::is_autodiff_name(&s.ident.to_string()) {
                self.found = true;
            }
            if self.found {
                return;
            }
            syn::visit::visit_path_arguments(self, &s.arguments);
        }
    }

    fn visit_path_segment(&mut self, s: &'a syn::PathSegment) {
        // `AutodiffBackend`, and crate traits extending it (`GaeAutodiffBackend`).
        let name = s.ident.to_string();
        let in_scope = self
            .scope
            .iter()
            .rev()
            .chain(self.outer.iter().rev())
            .find(|(n, _)| *n == name)
            .map(|&(_, autodiff)| autodiff);
        if in_scope.unwrap_or_else(|| self.names.is_autodiff_name(&name)) {
            self.found = true;
        }
        if !self.found {
            syn::visit::visit_path_segment(self, s);
        }
    }
}

/// Whether a `use` tree imports `Backend` from the crate's own modules (`use backend::{Backend,
/// Device};`, `use crate::config::Backend;`), not from the framework (`use
/// burn::tensor::backend::Backend;`) or the standard library.
fn imports_own_backend(tree: &syn::UseTree, spec: &Spec) -> bool {
    fn walk(tree: &syn::UseTree, first: Option<&syn::Ident>, spec: &Spec) -> bool {
        match tree {
            syn::UseTree::Path(p) => walk(&p.tree, first.or(Some(&p.ident)), spec),
            syn::UseTree::Name(n) => {
                n.ident == "Backend"
                    && first.is_some_and(|f| {
                        let f = f.to_string();
                        !matches!(f.as_str(), "std" | "core" | "alloc")
                            && !f.starts_with("burn")
                            && !spec.crate_names.contains(&f.as_str())
                    })
            }
            syn::UseTree::Group(g) => g.items.iter().any(|t| walk(t, first, spec)),
            syn::UseTree::Rename(_) | syn::UseTree::Glob(_) => false,
        }
    }
    walk(tree, None, spec)
}

/// What a declared result holds, for results the crate-level pass hands on (see
/// `Summary::result_plain`): whether it names a tensor anywhere (`Vec<&Tensor>`, `impl
/// Iterator<Item = &Tensor>`), whether a tuple is in it, and whether a tuple holds anything but
/// tensors (`(GradStore, Tensor)`, a loss beside host statistics; `CResult<(Tensor, Stats)>` too).
/// A call's one result node cannot tell a tuple's elements apart. Second: whether it names a
/// tensor or a type that `holds` says holds tensors as data.
fn tensor_parts(ty: &syn::Type, holds: &dyn Fn(&syn::Ident) -> bool) -> (bool, bool, bool, bool) {
    struct Finds<'h>(bool, bool, bool, bool, &'h dyn Fn(&syn::Ident) -> bool);
    impl<'ast> syn::visit::Visit<'ast> for Finds<'_> {
        fn visit_path_segment(&mut self, seg: &'ast syn::PathSegment) {
            if seg.ident == "Tensor" {
                self.0 = true;
                self.3 = true;
            } else if !self.3 {
                self.3 = (self.4)(&seg.ident);
            }
            syn::visit::visit_path_segment(self, seg);
        }
        fn visit_type_tuple(&mut self, t: &'ast syn::TypeTuple) {
            self.1 = true;
            self.2 |= !t.elems.iter().all(|e| {
                let mut e = e;
                while let syn::Type::Reference(r) = e {
                    e = &r.elem;
                }
                type_is_tensor(e)
            });
            syn::visit::visit_type_tuple(self, t);
        }
    }
    let mut finds = Finds(false, false, false, false, holds);
    syn::visit::Visit::visit_type(&mut finds, ty);
    (finds.0, finds.3, finds.1, finds.2)
}

/// `let Some(x) = place.get_mut(key)` (or `last_mut()`, `first_mut()`): a lookup of an element
/// of a collection to change it in place.
fn is_element_lookup(cond: &Expr) -> bool {
    matches!(strip_parens(cond), Expr::Let(l) if let_looks_up_element(l))
}

fn let_looks_up_element(l: &syn::ExprLet) -> bool {
    is_some_pat(&l.pat)
        && matches!(strip_parens(&l.expr), Expr::MethodCall(m)
            if matches!(m.method.to_string().as_str(), "get_mut" | "last_mut" | "first_mut"))
}

/// Whether a type is a tensor: `Tensor`, `Tensor<B, 2>`, `candle_core::Tensor`, in `Result<..>`
/// or `Option<..>`.
fn type_is_tensor(ty: &syn::Type) -> bool {
    let syn::Type::Path(p) = ty else { return false };
    let Some(last) = p.path.segments.last() else { return false };
    match (last.ident.to_string().as_str(), &last.arguments) {
        ("Tensor", _) => true,
        ("Result" | "Option", syn::PathArguments::AngleBracketed(a)) => {
            a.args.iter().find_map(|g| match g {
                syn::GenericArgument::Type(t) => Some(type_is_tensor(t)),
                _ => None,
            }) == Some(true)
        }
        _ => false,
    }
}

/// candle: a forward pass of a model the crate does not define (see `Builder::finish`).
struct LibraryForward {
    span: Span,
    in_loop: Option<LoopId>,
    /// The receiver's node, and the model's binding.
    receiver: NodeIndex,
    model: BindingId,
    /// A cache lent to it as `&mut`.
    lent_cache: Option<BindingId>,
}

/// A parameter type that holds no model: a backend's device (`&B::Device`, `Device<B>`), a
/// host number, `bool` or string, or tuples, slices and arrays of them. Compared without
/// allocating: every parameter of the crate is asked.
fn holds_no_model(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(r) => holds_no_model(&r.elem),
        syn::Type::Paren(p) => holds_no_model(&p.elem),
        syn::Type::Tuple(t) => t.elems.iter().all(holds_no_model),
        syn::Type::Slice(s) => holds_no_model(&s.elem),
        syn::Type::Array(a) => holds_no_model(&a.elem),
        // Neither a device nor a host type takes generic arguments (`Tensor<B, 2>` does): only
        // names without them are compared, as one string (comparing an `Ident` with each name
        // costs more).
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| {
            s.arguments.is_none() && {
                let name = s.ident.to_string();
                name == "Device" || super::rust::is_host_type(&name)
            }
        }),
        _ => false,
    }
}

fn type_is_plain(ty: &syn::Type) -> bool {
    type_is_plain_with(ty, &|_| false)
}

/// [`type_is_plain`], with the names of other types that hold no tensor (`host`).
fn type_is_plain_with(ty: &syn::Type, host: &dyn Fn(&str) -> bool) -> bool {
    match ty {
        syn::Type::Tuple(t) => t.elems.iter().all(|e| type_is_plain_with(e, host)),
        syn::Type::Array(a) => type_is_plain_with(&a.elem, host),
        syn::Type::Slice(s) => type_is_plain_with(&s.elem, host),
        syn::Type::Reference(r) => type_is_plain_with(&r.elem, host),
        syn::Type::Paren(p) => type_is_plain_with(&p.elem, host),
        syn::Type::Path(p) if p.qself.is_none() => {
            let Some(last) = p.path.segments.last() else { return false };
            let name = last.ident.to_string();
            if super::rust::is_host_type(&name) || (matches!(last.arguments, syn::PathArguments::None) && host(&name)) {
                return true;
            }
            match (name.as_str(), &last.arguments) {
                ("Result" | "Option" | "Vec" | "Box" | "VecDeque", syn::PathArguments::AngleBracketed(a)) => {
                    // `Result<T, E>`: only the value type matters.
                    a.args.iter().find_map(|g| match g {
                        syn::GenericArgument::Type(t) => Some(type_is_plain_with(t, host)),
                        _ => None,
                    }) == Some(true)
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether an expression is reached from `self` (`&self.blocks`, `self.layers.iter()`).
/// The field of `self` an expression goes through first (`blocks` in `self.blocks.iter_mut()`).
fn self_field_of(e: &Expr) -> Option<String> {
    match e {
        Expr::Field(f) if is_self(&f.base) => match &f.member {
            syn::Member::Named(name) => Some(name.to_string()),
            syn::Member::Unnamed(_) => None,
        },
        Expr::Field(f) => self_field_of(&f.base),
        Expr::MethodCall(m) => self_field_of(&m.receiver),
        Expr::Reference(r) => self_field_of(&r.expr),
        Expr::Paren(p) => self_field_of(&p.expr),
        Expr::Index(i) => self_field_of(&i.expr),
        _ => None,
    }
}

fn root_is_self(e: &Expr) -> bool {
    match e {
        Expr::Path(p) => p.path.is_ident("self"),
        Expr::Field(f) => root_is_self(&f.base),
        Expr::MethodCall(m) => root_is_self(&m.receiver),
        Expr::Reference(r) => root_is_self(&r.expr),
        Expr::Paren(p) => root_is_self(&p.expr),
        Expr::Index(i) => root_is_self(&i.expr),
        // `0..self.n_layers`, `0..self.blocks.len()`: as many iterations as the model has parts.
        Expr::Range(r) => r.end.as_deref().is_some_and(root_is_self),
        _ => false,
    }
}

/// The names a loop body counts with (`step += 1`, `self.total_steps += 1`, `t = t + 1`), by
/// their last segment, into `out`; nested loops and closures included. A counter the body also
/// sets otherwise (`accum_count = 0` after an accumulated step) is periodic, not counted.
fn counters_in(body: &Block, out: &mut Vec<String>) {
    let mark = out.len();
    let mut reset = Vec::new();
    struct Finder<'o>(&'o mut Vec<String>, &'o mut Vec<String>);
    impl<'a> syn::visit::Visit<'a> for Finder<'_> {
        fn visit_expr(&mut self, e: &'a Expr) {
            let one = |e: &Expr| matches!(strip_parens(e), Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if i.base10_digits() == "1");
            let name = |e: &Expr| match strip_parens(e) {
                Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
                Expr::Field(f) => match &f.member {
                    syn::Member::Named(n) => Some(n.to_string()),
                    syn::Member::Unnamed(_) => None,
                },
                _ => None,
            };
            let counted = match e {
                Expr::Binary(b) if matches!(b.op, syn::BinOp::AddAssign(_)) && one(&b.right) => name(&b.left),
                Expr::Assign(a) => match strip_parens(&a.right) {
                    Expr::Binary(b) if matches!(b.op, syn::BinOp::Add(_)) && one(&b.right) => {
                        name(&a.left).filter(|n| name(&b.left).as_ref() == Some(n))
                    }
                    _ => {
                        self.1.extend(name(&a.left));
                        None
                    }
                },
                _ => None,
            };
            if let Some(n) = counted {
                if !self.0.contains(&n) {
                    self.0.push(n);
                }
            } else {
                syn::visit::visit_expr(self, e);
            }
        }
    }
    syn::visit::Visit::visit_block(&mut Finder(out, &mut reset), body);
    let mut k = mark;
    while k < out.len() {
        if reset.contains(&out[k]) {
            out.remove(k);
        } else {
            k += 1;
        }
    }
}

/// The name of the function or method a call calls (`f` of `f(x)?`, `step` of
/// `state.step(b).await`), through `?`, `.await` and parentheses.
fn called_name(init: &Expr) -> Option<String> {
    let mut e = init;
    loop {
        e = match e {
            Expr::Try(t) => &t.expr,
            Expr::Await(a) => &a.base,
            Expr::Paren(p) => &p.expr,
            _ => break,
        };
    }
    match e {
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) => Some(p.path.segments.last()?.ident.to_string()),
            _ => None,
        },
        Expr::MethodCall(m) => Some(m.method.to_string()),
        _ => None,
    }
}

/// A macro that never returns (`panic!`, `unreachable!`, `todo!`, `unimplemented!`).
fn diverging_macro(mac: &syn::Macro) -> bool {
    mac.path
        .segments
        .last()
        .is_some_and(|s| matches!(s.ident.to_string().as_str(), "panic" | "unreachable" | "todo" | "unimplemented"))
}

/// The number of elements of a declared tuple result (`-> (Self, Tensor<B, 2>)`, `->
/// Result<(Tensor, f32)>`, `-> Option<(A, B)>`).
fn declared_tuple_arity(output: &syn::ReturnType) -> Option<usize> {
    let syn::ReturnType::Type(_, ty) = output else { return None };
    let mut ty = &**ty;
    loop {
        ty = match ty {
            syn::Type::Paren(p) => &p.elem,
            syn::Type::Group(g) => &g.elem,
            syn::Type::Path(p) => {
                let last = p.path.segments.last()?;
                if !matches!(last.ident.to_string().as_str(), "Result" | "Option") {
                    return None;
                }
                let syn::PathArguments::AngleBracketed(a) = &last.arguments else { return None };
                match a.args.first()? {
                    syn::GenericArgument::Type(t) => t,
                    _ => return None,
                }
            }
            syn::Type::Tuple(t) if t.elems.len() >= 2 => return Some(t.elems.len()),
            _ => return None,
        };
    }
}

/// The tuple literals a function with a declared tuple result returns, when every value it
/// returns is written as one (`Ok((next, onsets))`, in each branch, and every `return`): what
/// each element carries is then followed on its own. Empty otherwise.
fn returned_tuples(sig: &syn::Signature, block: &Block) -> Vec<*const syn::ExprTuple> {
    struct Returns<'a> {
        arity: usize,
        out: Vec<&'a syn::ExprTuple>,
        ok: bool,
    }
    impl<'a> Returns<'a> {
        fn leaves(&mut self, e: &'a Expr) -> bool {
            match e {
                Expr::Paren(p) => self.leaves(&p.expr),
                Expr::Group(g) => self.leaves(&g.expr),
                Expr::Block(b) => self.block(&b.block),
                Expr::Unsafe(u) => self.block(&u.block),
                Expr::If(i) => {
                    self.block(&i.then_branch) && i.else_branch.as_ref().is_some_and(|(_, e)| self.leaves(e))
                }
                Expr::Match(m) => m.arms.iter().all(|a| self.leaves(&a.body)),
                Expr::Call(c) if c.args.len() == 1 => {
                    matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Ok" || s.ident == "Some"))
                        && self.leaves(&c.args[0])
                }
                Expr::Tuple(t) if t.elems.len() == self.arity => {
                    self.out.push(t);
                    true
                }
                // Diverges: what it returns, if anything, is found with the other `return`s.
                Expr::Return(_) => true,
                Expr::Macro(m) => diverging_macro(&m.mac),
                _ => false,
            }
        }
        fn block(&mut self, b: &'a Block) -> bool {
            match b.stmts.last() {
                Some(Stmt::Expr(e, None)) => self.leaves(e),
                Some(Stmt::Expr(Expr::Return(_), Some(_))) => true,
                Some(Stmt::Macro(m)) => diverging_macro(&m.mac),
                _ => false,
            }
        }
    }
    impl<'a> syn::visit::Visit<'a> for Returns<'a> {
        fn visit_expr_return(&mut self, r: &'a syn::ExprReturn) {
            self.ok &= r.expr.as_deref().is_some_and(|e| self.leaves(e));
            syn::visit::visit_expr_return(self, r);
        }
        // Their `return`s are theirs.
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        fn visit_expr_async(&mut self, _: &'a syn::ExprAsync) {}
        fn visit_item(&mut self, _: &'a syn::Item) {}
    }
    let Some(arity) = declared_tuple_arity(&sig.output) else { return Vec::new() };
    let mut r = Returns { arity, out: Vec::new(), ok: true };
    r.ok = r.block(block);
    if r.ok {
        syn::visit::Visit::visit_block(&mut r, block);
    }
    if !r.ok {
        return Vec::new();
    }
    r.out.into_iter().map(|t| t as *const _).collect()
}

/// `a..b`, `(a..b).rev()`, `(a..=b).step_by(k)`: a range, however it is walked.
/// The closure a closure body ends with (`|p| { ..; move |x| .. }`, `|p| move |x| ..`).
fn tail_closure(body: &Expr) -> Option<&syn::ExprClosure> {
    match body {
        Expr::Closure(c) => Some(c),
        Expr::Paren(p) => tail_closure(&p.expr),
        Expr::Block(b) => match b.block.stmts.last() {
            Some(Stmt::Expr(e, None)) => tail_closure(e),
            _ => None,
        },
        _ => None,
    }
}

/// The attributes of an item (those `item` looks at: functions, impls, modules).
fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Fn(f) => &f.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(m) => &m.attrs,
        syn::Item::Trait(t) => &t.attrs,
        _ => &[],
    }
}

/// `#[cfg(test)]`.
fn is_cfg_test(a: &syn::Attribute) -> bool {
    a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
}

/// An attribute that may make code outside the crate's text call the function: anything but
/// the ones that only document, configure lints, inline or select by `cfg`.
pub(crate) fn registers(attr: &syn::Attribute) -> bool {
    const QUIET: &[&str] = &[
        "doc",
        "allow",
        "warn",
        "deny",
        "expect",
        "inline",
        "cfg",
        "cfg_attr",
        "must_use",
        "deprecated",
        "track_caller",
        "cold",
        "rustfmt",
        "clippy",
    ];
    attr.path().segments.first().is_none_or(|s| !QUIET.iter().any(|q| s.ident == q))
}

/// `#[test]`, `#[tokio::test]`, `#[rstest]`-style: an attribute whose last segment is `test`.
pub(crate) fn is_test_attr(a: &syn::Attribute) -> bool {
    a.path().segments.last().is_some_and(|s| s.ident == "test")
}

/// A count kept in a `u32` field, saturated.
fn saturate(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// How many times a `for` loop over `e` runs, when the source says: a range of integer literals
/// or of the crate's integer constants (`0..4`, `0..PREVIEW_LEN`), an array literal or constant
/// array (`[a, b]`, `PROMPTS.iter()`), and `.take(n)` of anything.
fn literal_count(e: &Expr, named: &dyn Fn(&str) -> Option<u64>) -> Option<u64> {
    let int = |e: &Expr| match e {
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<u64>().ok(),
        Expr::Path(p) => named(&p.path.get_ident()?.to_string()),
        _ => None,
    };
    match e {
        Expr::Paren(p) => literal_count(&p.expr, named),
        Expr::Reference(r) => literal_count(&r.expr, named),
        Expr::Array(a) => Some(a.elems.len() as u64),
        Expr::Path(_) => int(e),
        Expr::MethodCall(m)
            if m.args.is_empty()
                && matches!(m.method.to_string().as_str(), "iter" | "into_iter" | "iter_mut" | "enumerate") =>
        {
            literal_count(&m.receiver, named)
        }
        // `loader.iter().take(1)`: at most `n`, whatever the receiver holds.
        Expr::MethodCall(m) if m.method == "take" && m.args.len() == 1 && rust::is_iterator_chain(&m.receiver) => {
            int(&m.args[0])
        }
        Expr::Range(r) => {
            let (start, end) = (r.start.as_deref().map_or(Some(0), int)?, int(r.end.as_deref()?)?);
            let end = if matches!(r.limits, syn::RangeLimits::Closed(_)) { end + 1 } else { end };
            Some(end.saturating_sub(start))
        }
        _ => None,
    }
}

/// `if c { a } else { b }` with each branch's value assigned to `left` (`if c { left = a } else
/// { left = b }`), when every branch ends in a value; `None` otherwise.
fn assign_in_branches(left: &Expr, i: &syn::ExprIf) -> Option<syn::ExprIf> {
    fn assign_tail(left: &Expr, block: &mut Block) -> Option<()> {
        let Some(Stmt::Expr(tail, None)) = block.stmts.last_mut() else { return None };
        let value = std::mem::replace(tail, Expr::Verbatim(Default::default()));
        *tail = Expr::Assign(syn::ExprAssign {
            attrs: Vec::new(),
            left: Box::new(left.clone()),
            eq_token: Default::default(),
            right: Box::new(value),
        });
        Some(())
    }
    let (_, els) = i.else_branch.as_ref()?;
    let mut out = i.clone();
    assign_tail(left, &mut out.then_branch)?;
    let (_, els_out) = out.else_branch.as_mut()?;
    match (&**els, &mut **els_out) {
        (Expr::Block(_), Expr::Block(b)) => assign_tail(left, &mut b.block)?,
        (Expr::If(inner), slot @ Expr::If(_)) => *slot = Expr::If(assign_in_branches(left, inner)?),
        _ => return None,
    }
    Some(out)
}

/// Whether `e` is the literal `0`.
fn is_zero_literal(e: &Expr) -> bool {
    matches!(strip_parens(e), Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if i.base10_digits() == "0")
}

fn is_range(e: &Expr) -> bool {
    match e {
        Expr::Range(_) => true,
        Expr::Paren(p) => is_range(&p.expr),
        Expr::MethodCall(m) => is_range(&m.receiver),
        _ => false,
    }
}

/// A constant argument as written: `true`, `false`, or an enum variant named through its type
/// (`Mode::Eval`, `&ActMode::Exploit`; not a `SCREAMING_CASE` constant).
fn const_arg(e: &Expr) -> Option<super::graph::ConstArg> {
    match strip_parens(e) {
        Expr::Reference(r) => const_arg(&r.expr),
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. }) => Some(super::graph::ConstArg::Bool(b.value)),
        Expr::Path(p) if p.qself.is_none() => variant_name(&p.path),
        _ => None,
    }
}

/// The variant a path of two or more segments names (`Mode::Eval`): its last segment, written
/// in camel case.
fn variant_name(path: &syn::Path) -> Option<super::graph::ConstArg> {
    if path.segments.len() < 2 {
        return None;
    }
    let last = path.segments.last()?;
    if !last.arguments.is_none() {
        return None;
    }
    let name = last.ident.to_string();
    (name.starts_with(|c: char| c.is_ascii_uppercase()) && name.contains(|c: char| c.is_ascii_lowercase()))
        .then_some(super::graph::ConstArg::Variant(name))
}

/// The variants a pattern matches (`Mode::A`, `Mode::B(..)`, `Mode::C { .. }`, `Mode::A |
/// Mode::B`); `None` for any other pattern.
fn pat_variants(p: &Pat) -> Option<Vec<super::graph::ConstArg>> {
    match p {
        Pat::Path(p) => Some(vec![variant_name(&p.path)?]),
        Pat::TupleStruct(t) => Some(vec![variant_name(&t.path)?]),
        Pat::Struct(s) => Some(vec![variant_name(&s.path)?]),
        Pat::Reference(r) => pat_variants(&r.pat),
        Pat::Paren(p) => pat_variants(&p.pat),
        Pat::Or(o) => o.cases.iter().map(pat_variants).try_fold(Vec::new(), |mut all, v| {
            all.extend(v?);
            Some(all)
        }),
        _ => None,
    }
}

/// burn 0.22: the locals of `body` bound to an autodiff device (`let ad = device.autodiff();`)
/// and to a plain one (the receiver of such a call, `let device = Device::default();`), when the
/// body makes an autodiff device; `None` otherwise.
fn device_names(body: &Block, method: &str) -> Option<(Vec<String>, Vec<String>)> {
    use syn::visit::Visit;
    struct Devices<'m> {
        method: &'m str,
        autodiff: Vec<String>,
        plain: Vec<String>,
        any: bool,
    }
    fn autodiff_call<'e>(e: &'e Expr, method: &str) -> Option<&'e syn::ExprMethodCall> {
        match strip_try(e) {
            Expr::MethodCall(m) if m.method == method && m.args.is_empty() => Some(m),
            Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "clone" | "to_owned") => {
                autodiff_call(&m.receiver, method)
            }
            Expr::Reference(r) => autodiff_call(&r.expr, method),
            _ => None,
        }
    }
    impl<'a> Visit<'a> for Devices<'_> {
        fn visit_local(&mut self, l: &'a syn::Local) {
            if let (Pat::Ident(p), Some(init)) = (strip_pat_type(&l.pat), &l.init) {
                if autodiff_call(&init.expr, self.method).is_some() {
                    self.autodiff.push(p.ident.to_string());
                } else if let Expr::Call(c) = strip_try(&init.expr)
                    && let Expr::Path(f) = &*c.func
                    && f.path.segments.len() >= 2
                    && f.path.segments.last().is_some_and(|s| s.ident == "default")
                    && f.path.segments[f.path.segments.len() - 2].ident.to_string().ends_with("Device")
                {
                    self.plain.push(p.ident.to_string());
                }
            }
            syn::visit::visit_local(self, l);
        }
        fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
            if m.method == self.method && m.args.is_empty() {
                self.any = true;
                if let Expr::Path(p) = strip_parens(&m.receiver)
                    && let Some(i) = p.path.get_ident()
                {
                    self.plain.push(i.to_string());
                }
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut d = Devices { method, autodiff: Vec::new(), plain: Vec::new(), any: false };
    d.visit_block(body);
    d.any.then(|| {
        d.plain.retain(|p| !d.autodiff.contains(p));
        (d.autodiff, d.plain)
    })
}

/// Whether `cond` holds on every k-th value of a counter (`t % k == 0`, `(step + 1) % k != 0`,
/// `t.is_multiple_of(k)`).
fn is_periodic_test(cond: &Expr) -> bool {
    match strip_parens(cond) {
        Expr::Binary(b) if matches!(b.op, syn::BinOp::Eq(_) | syn::BinOp::Ne(_)) => [&*b.left, &*b.right]
            .iter()
            .any(|side| matches!(strip_parens(side), Expr::Binary(r) if matches!(r.op, syn::BinOp::Rem(_)))),
        Expr::MethodCall(m) => m.method == "is_multiple_of" && m.args.len() == 1,
        _ => false,
    }
}

/// `x.is_none()`, `self.head.is_none()`, `let None = x`: a test that a value is still missing.
fn is_none_test(cond: &Expr) -> bool {
    match strip_parens(cond) {
        Expr::MethodCall(m) => m.method == "is_none" && m.args.is_empty(),
        Expr::Let(l) => {
            matches!(&*l.pat, Pat::Ident(p) if p.ident == "None")
                || matches!(&*l.pat, Pat::Path(p) if p.path.is_ident("None"))
        }
        _ => false,
    }
}

/// Whether a loop body ends with an unconditional `break` or `return` and holds no `continue` (in nested
/// loops and closures included, to stay simple): its loop runs the body at most once.
fn runs_once(body: &Block) -> bool {
    struct Continue(bool);
    impl<'a> syn::visit::Visit<'a> for Continue {
        fn visit_expr_continue(&mut self, _: &'a syn::ExprContinue) {
            self.0 = true;
        }
    }
    let ends_with_break = matches!(body.stmts.last(), Some(Stmt::Expr(Expr::Break(_) | Expr::Return(_), _)));
    if !ends_with_break {
        return false;
    }
    let mut c = Continue(false);
    syn::visit::Visit::visit_block(&mut c, body);
    !c.0
}

/// Finds parts of `self` picked by index (`self.layers[i]`, `self.blocks.get(i)`).
struct SelfIndexFinder<'n>(bool, &'n rustc_hash::FxHashSet<String>);

impl<'a> syn::visit::Visit<'a> for SelfIndexFinder<'_> {
    fn visit_expr(&mut self, e: &'a Expr) {
        // `self.alphas[t]`, a schedule of host numbers, is not a part of the model.
        let part = |e: &Expr| {
            root_is_self(e)
                && !matches!(strip_parens(e), Expr::Field(f)
                    if matches!(&f.member, syn::Member::Named(n) if self.1.contains(&n.to_string())))
        };
        match e {
            Expr::Index(i) if part(&i.expr) => self.0 = true,
            Expr::MethodCall(m) if m.method == "get" && part(&m.receiver) => self.0 = true,
            _ if !self.0 => syn::visit::visit_expr(self, e),
            _ => {}
        }
    }
}

/// Whether `body` picks parts of `self` by index (`self.layers[i]`, `self.blocks.get(i)`; not a
/// field of host numbers, `host_arrays`).
fn indexes_self(body: &Block, host_arrays: &rustc_hash::FxHashSet<String>) -> bool {
    let mut f = SelfIndexFinder(false, host_arrays);
    syn::visit::Visit::visit_block(&mut f, body);
    f.0
}

/// [`indexes_self`] for a closure's body.
fn indexes_self_expr(body: &Expr, host_arrays: &rustc_hash::FxHashSet<String>) -> bool {
    let mut f = SelfIndexFinder(false, host_arrays);
    syn::visit::Visit::visit_expr(&mut f, body);
    f.0
}

/// A place written as a local or a chain of named fields (`grads`, `dqn.gradients`), as text;
/// `None` for anything else (`self` included, whose fields other methods may write).
fn place_key(e: &Expr) -> Option<String> {
    match strip_place(e) {
        Expr::Path(p) => p.path.get_ident().filter(|i| *i != "self").map(ToString::to_string),
        // A field of `self` (`self.zeroed`) is a place of its own; `self` alone is not.
        Expr::Field(f) => match &f.member {
            syn::Member::Named(m) if is_self(&f.base) => Some(format!("self.{m}")),
            syn::Member::Named(m) => Some(format!("{}.{m}", place_key(&f.base)?)),
            syn::Member::Unnamed(_) => None,
        },
        _ => None,
    }
}

/// A field chain on a local (`net.fast.cell.state`): the local's name and the path below it.
fn field_path(e: &Expr) -> Option<(String, String)> {
    let mut parts = Vec::new();
    let mut at = strip_parens(e);
    while let Expr::Field(f) = at {
        let syn::Member::Named(name) = &f.member else { return None };
        parts.push(name.to_string());
        at = strip_parens(&f.base);
    }
    let Expr::Path(p) = at else { return None };
    parts.reverse();
    Some((p.path.get_ident()?.to_string(), parts.join(".")))
}

/// The place under borrows and `lock()`-like calls (`&mut x.values`, `x.values.borrow_mut()`).
fn strip_place(e: &Expr) -> &Expr {
    match e {
        Expr::Reference(r) => strip_place(&r.expr),
        Expr::Paren(p) => strip_place(&p.expr),
        Expr::MethodCall(m) if rust::PLACE_METHODS.contains(&m.method.to_string().as_str()) => strip_place(&m.receiver),
        e => e,
    }
}

/// `e` without trailing `?`s.
fn strip_try(e: &Expr) -> &Expr {
    match e {
        Expr::Try(t) => strip_try(&t.expr),
        Expr::Paren(p) => strip_try(&p.expr),
        e => e,
    }
}

/// The base a place expression starts from (`self` in `self.cache.kvs`).
fn place_root(e: &Expr) -> &Expr {
    match e {
        Expr::Field(f) => place_root(&f.base),
        Expr::Index(i) => place_root(&i.expr),
        Expr::Paren(p) => place_root(&p.expr),
        Expr::Reference(r) => place_root(&r.expr),
        e => e,
    }
}

fn is_self(e: &Expr) -> bool {
    matches!(e, Expr::Path(p) if p.path.is_ident("self"))
}

fn is_whole_binding(e: &Expr) -> bool {
    match e {
        Expr::Path(_) => true,
        Expr::Field(f) => is_self(&f.base),
        Expr::Paren(p) => is_whole_binding(&p.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => is_whole_binding(&u.expr),
        _ => false,
    }
}

/// The type a `let` names: its annotation, or the type of a constructor call or struct literal
/// (`Memory::new(..)`, `Trace { .. }`).
/// `model.alloc_grads()` (through `?`): a new gradient store.
fn allocates_grads(e: &Expr, spec: &Spec) -> bool {
    let mut e = e;
    while let Expr::Try(t) = e {
        e = &t.expr;
    }
    matches!(e, Expr::MethodCall(m) if m.args.is_empty() && spec.grads_alloc_methods.contains(&m.method.to_string().as_str()))
}

fn declared_type(pat: &Pat, init: Option<&Expr>) -> Option<String> {
    if let Pat::Type(t) = pat {
        return type_name(&t.ty);
    }
    constructed_type(init?)
}

/// For `let (a, b) = <tuple>` (also the tuple a `match` arm, `if` branch or block ends with):
/// the names bound to an element whose type its text says (`Llama::load(..)?`).
fn tuple_element_types<'p>(pat: &'p Pat, init: &Expr) -> Vec<(&'p syn::Ident, String)> {
    fn tail(b: &Block) -> Option<&Punctuated<Expr, syn::token::Comma>> {
        match b.stmts.last() {
            Some(Stmt::Expr(e, None)) => tail_tuple(e),
            _ => None,
        }
    }
    fn tail_tuple(e: &Expr) -> Option<&Punctuated<Expr, syn::token::Comma>> {
        match e {
            Expr::Tuple(t) => Some(&t.elems),
            Expr::Paren(p) => tail_tuple(&p.expr),
            Expr::Block(b) => tail(&b.block),
            Expr::If(i) => tail(&i.then_branch),
            Expr::Match(m) => m.arms.iter().find_map(|a| tail_tuple(&a.body)),
            _ => None,
        }
    }
    let Pat::Tuple(t) = strip_pat_type(pat) else { return Vec::new() };
    let Some(elems) = tail_tuple(init) else { return Vec::new() };
    if elems.len() != t.elems.len() {
        return Vec::new();
    }
    t.elems
        .iter()
        .zip(elems)
        .filter_map(|(p, e)| match p {
            Pat::Ident(i) => constructed_type(e).map(|ty| (&i.ident, ty)),
            _ => None,
        })
        .collect()
}

/// `xs.iter().map(|x| { let agent = Dqn::new(..); (x, agent) }).collect()`: the type of each
/// element the closure builds (one for a single value, one per part of a tuple), where the text
/// says it: a constructor, a struct literal, or a `let` of the closure's body that makes one.
fn collected_element_types(init: &Expr) -> Option<Vec<Option<String>>> {
    let Expr::MethodCall(c) = strip_try(init) else { return None };
    if c.method != "collect" {
        return None;
    }
    let Expr::MethodCall(m) = strip_parens(&c.receiver) else { return None };
    if m.method != "map" || m.args.len() != 1 {
        return None;
    }
    let Expr::Closure(closure) = strip_parens(&m.args[0]) else { return None };
    let (stmts, tail): (&[Stmt], &Expr) = match strip_parens(&closure.body) {
        Expr::Block(b) => match b.block.stmts.split_last() {
            Some((Stmt::Expr(e, None), rest)) => (rest, e),
            _ => return None,
        },
        e => (&[], e),
    };
    let of = |e: &Expr| -> Option<String> {
        match strip_parens(e) {
            Expr::Path(p) => {
                let id = p.path.get_ident()?;
                stmts.iter().rev().find_map(|st| match st {
                    Stmt::Local(l) if matches!(strip_pat_type(&l.pat), Pat::Ident(pi) if pi.ident == *id) => {
                        declared_type(&l.pat, l.init.as_ref().map(|i| &*i.expr))
                    }
                    _ => None,
                })
            }
            e => constructed_type(e),
        }
    };
    let types: Vec<Option<String>> = match strip_parens(tail) {
        Expr::Tuple(t) => t.elems.iter().map(of).collect(),
        e => vec![of(e)],
    };
    types.iter().any(Option::is_some).then_some(types)
}

/// The local a `for` loop walks (`seats`, `&mut seats`, `seats.iter_mut()`), and whether it is
/// walked with `.enumerate()`.
fn iterated_local(e: &Expr) -> Option<(&syn::Ident, bool)> {
    match strip_parens(e) {
        Expr::MethodCall(m) if m.args.is_empty() && m.method == "enumerate" => {
            iterated_local(&m.receiver).filter(|(_, en)| !en).map(|(i, _)| (i, true))
        }
        Expr::MethodCall(m)
            if m.args.is_empty() && matches!(m.method.to_string().as_str(), "iter" | "iter_mut" | "into_iter") =>
        {
            iterated_local(&m.receiver)
        }
        Expr::Reference(r) => iterated_local(&r.expr),
        Expr::Path(p) => p.path.get_ident().map(|i| (i, false)),
        _ => None,
    }
}

/// `map.get_mut(k)` (also `last_mut`, `first_mut`, and `map.entry(k).or_insert_with(..)`),
/// unwrapped or not (`.expect(..)?`): the lookup of a mutable element.
/// `e` without `?`, `.unwrap()` and `.expect(..)` around it.
fn strip_unwraps(e: &Expr) -> &Expr {
    let mut e = strip_try(e);
    while let Expr::MethodCall(m) = e
        && matches!(m.method.to_string().as_str(), "unwrap" | "expect")
    {
        e = strip_try(&m.receiver);
    }
    e
}

fn element_lookup(e: &Expr) -> Option<&syn::ExprMethodCall> {
    let mut e = strip_try(e);
    while let Expr::MethodCall(m) = e
        && matches!(m.method.to_string().as_str(), "unwrap" | "expect")
    {
        e = strip_try(&m.receiver);
    }
    match e {
        Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "get_mut" | "last_mut" | "first_mut") => Some(m),
        // `self.sums.entry(name).or_insert_with(..)`: the entry's place in the map.
        Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "or_insert" | "or_insert_with" | "or_insert_with_key" | "or_default"
            ) =>
        {
            match strip_parens(&m.receiver) {
                Expr::MethodCall(entry) if entry.method == "entry" && entry.args.len() == 1 => Some(entry),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The type an expression constructs, where its text says: `Net::new(..)?`, `Net { .. }`.
/// `.unwrap()`, `.expect(..)` and the `Result` adapters of [`rust::is_pass_on`]: what the call
/// before them made is what they hand on.
const PASS_ON_METHODS: &[&str] = &[
    "unwrap",
    "expect",
    "map_err",
    "context",
    "with_context",
    "wrap_err",
    "wrap_err_with",
    "ok",
    "ok_or",
    "ok_or_else",
    "inspect",
    "inspect_err",
];

/// An expression through `?`, `.unwrap()`, `.expect(..)` and the adapters that hand on a
/// `Result`'s value (`Model::<B>::from_dir(..).context("params")?`).
fn through_pass_on(mut e: &Expr) -> &Expr {
    loop {
        e = match e {
            Expr::Try(t) => &t.expr,
            // Compared without making the name a `String`: this runs for every `let`.
            Expr::MethodCall(m) if PASS_ON_METHODS.iter().any(|n| m.method == n) => &m.receiver,
            _ => return e,
        };
    }
}

fn constructed_type(init: &Expr) -> Option<String> {
    let e = through_pass_on(init);
    let path = match e {
        Expr::Struct(s) => return s.path.segments.last().map(|s| s.ident.to_string()),
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) => &p.path,
            _ => return None,
        },
        _ => return None,
    };
    let n = path.segments.len();
    let ty = path.segments.iter().nth(n.checked_sub(2)?)?.ident.to_string();
    // `Rc::new(RefCell::new(RunLogger::new(..)))`: the methods called on it (through `Deref`,
    // `borrow_mut()`, `lock()`) are the inner value's, as for a declared `Rc<RefCell<RunLogger>>`.
    if let Expr::Call(c) = e
        && c.args.len() == 1
        && path.segments.last().is_some_and(|s| s.ident == "new")
        && rust::TRANSPARENT_WRAPPERS.contains(&ty.as_str())
    {
        return constructed_type(&c.args[0]);
    }
    ty.starts_with(char::is_uppercase).then_some(ty)
}

/// burn's configs: `CrossEntropyLossConfig::new().with_smoothing(..).init(&device)` makes a
/// `CrossEntropyLoss` — a convention, so a guess for a crate's own configs.
fn config_init_type(init: &Expr) -> Option<String> {
    let mut e = init;
    while let Expr::Try(t) = e {
        e = &t.expr;
    }
    let Expr::MethodCall(m) = e else { return None };
    if m.method != "init" {
        return None;
    }
    let mut root = &*m.receiver;
    while let Expr::MethodCall(inner) = root {
        root = &inner.receiver;
    }
    let config = declared_type(&Pat::Verbatim(Default::default()), Some(root))?;
    config.strip_suffix("Config").filter(|t| !t.is_empty()).map(str::to_string)
}

/// Whether a body's value is a struct literal, possibly in `Ok(..)`, `Some(..)` or `Box::new(..)`.
fn returns_struct_literal(block: &Block) -> bool {
    let Some(Stmt::Expr(e, None)) = block.stmts.last() else { return false };
    let mut e = e;
    loop {
        match strip_parens(e) {
            Expr::Struct(_) => return true,
            Expr::Call(c) if c.args.len() == 1 => match &*c.func {
                Expr::Path(p)
                    if p.path.segments.last().is_some_and(|s| ["Ok", "Some", "new"].iter().any(|n| s.ident == n)) =>
                {
                    e = &c.args[0];
                }
                _ => return false,
            },
            _ => return false,
        }
    }
}

/// What an early exit says about the rest of its block (see `Builder::early_exit`).
enum EarlyExit<'s> {
    /// `if memory.len() < n { return; }`: the rest waits for a size (one batch: `true`).
    Length(bool),
    /// `if !agent.can_learn() { return }`, `let Some(b) = memory.sample() else { return }`: the
    /// rest waits for what that crate function says (a size, if it is a size gate).
    Gate(String),
    /// Any other test (`if self.step < self.config.learning_starts { return random }`): the
    /// fields it compares guard the rest.
    Threshold(&'s Expr),
    /// A test of a parameter's value (`if !explore { return greedy }`): the rest runs for the
    /// values that fail it.
    Value(usize, super::graph::Opens),
}

/// Whether a function tells that a collection has reached a size (see `FnModel::size_gate`):
/// `-> bool` whose value compares a length, or `-> Option<..>` that returns `None` while a
/// length comparison holds (or is `Some` only under one).
/// For a function returning `Option`: the calls whose `None` its top-level `let`s hand on with
/// `?` (`let (batch, weights) = self.sample(episode)?;`), by name.
fn option_passed_on(sig: &syn::Signature, block: &Block) -> Vec<String> {
    let syn::ReturnType::Type(_, ty) = &sig.output else { return Vec::new() };
    let syn::Type::Path(p) = &**ty else { return Vec::new() };
    if p.path.segments.last().is_none_or(|s| s.ident != "Option") {
        return Vec::new();
    }
    block
        .stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Local(l) => match l.init.as_ref().map(|i| strip_parens(&i.expr)) {
                Some(Expr::Try(t)) => match strip_parens(&t.expr) {
                    Expr::MethodCall(m) => Some(m.method.to_string()),
                    Expr::Call(c) => match &*c.func {
                        Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn size_gate_fields(sig: &syn::Signature, block: &Block) -> Option<(Vec<String>, bool)> {
    let syn::ReturnType::Type(_, ty) = &sig.output else { return None };
    let syn::Type::Path(p) = &**ty else { return None };
    let last = p.path.segments.last()?;
    let tail = match block.stmts.last() {
        Some(Stmt::Expr(e, None)) => Some(e),
        _ => None,
    };
    let fields = |cond: &Expr| {
        let mut out = Vec::new();
        compared_fields(cond, &mut out);
        (out, waits_for_one_batch(cond))
    };
    if last.ident == "bool" {
        return tail.filter(|e| compares_a_length(e)).map(&fields);
    }
    if last.ident != "Option" {
        return None;
    }
    let is_none = |e: &Expr| matches!(strip_parens(e), Expr::Path(p) if p.path.is_ident("None"));
    let returns_none = |b: &Block| match b.stmts.last() {
        Some(Stmt::Expr(Expr::Return(r), _)) => r.expr.as_deref().is_some_and(is_none),
        Some(Stmt::Expr(e, None)) => is_none(e),
        _ => false,
    };
    // `if memory.len() < n { return None; }` at the top level of the body.
    let early = block.stmts.iter().find_map(|s| match s {
        Stmt::Expr(Expr::If(i), _)
            if i.else_branch.is_none() && compares_a_length(&i.cond) && returns_none(&i.then_branch) =>
        {
            Some(&i.cond)
        }
        _ => None,
    });
    // `if n <= memory.len() { .. Some(batch) } else { None }` as the body's value.
    let gated_tail = tail.and_then(|e| match strip_parens(e) {
        Expr::If(i)
            if compares_a_length(&i.cond)
                && matches!(&i.else_branch, Some((_, els)) if matches!(&**els, Expr::Block(b) if returns_none(&b.block))) =>
        {
            Some(&*i.cond)
        }
        _ => None,
    });
    early.map(|c| &**c).or(gated_tail).map(fields)
}

/// The fields and variables a condition's comparisons read (`self.step < self.config.start` →
/// `step`, `start`), not lengths (`buffer.len()`) or calls.
fn compared_fields(cond: &Expr, out: &mut Vec<String>) {
    fn name(e: &Expr) -> Option<String> {
        match strip_parens(e) {
            Expr::Field(f) => match &f.member {
                syn::Member::Named(n) => Some(n.to_string()),
                syn::Member::Unnamed(_) => None,
            },
            Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
            Expr::Cast(c) => name(&c.expr),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => name(&u.expr),
            _ => None,
        }
    }
    if let Expr::Binary(b) = strip_parens(cond) {
        match b.op {
            syn::BinOp::And(_) | syn::BinOp::Or(_) => {
                compared_fields(&b.left, out);
                compared_fields(&b.right, out);
            }
            syn::BinOp::Lt(_) | syn::BinOp::Le(_) | syn::BinOp::Gt(_) | syn::BinOp::Ge(_) => {
                out.extend(name(&b.left));
                out.extend(name(&b.right));
            }
            _ => {}
        }
    }
}

/// Whether a condition compares a collection's length with `<`, `<=`, `>` or `>=`
/// (`config.batch_size < memory.len()`, `buffer.len() >= min_replay && ready`).
fn compares_a_length(cond: &Expr) -> bool {
    match strip_parens(cond) {
        Expr::Binary(b) => match b.op {
            // `==` too: `if buffer.len() == horizon { train() }` waits for a size as well.
            syn::BinOp::Lt(_) | syn::BinOp::Le(_) | syn::BinOp::Gt(_) | syn::BinOp::Ge(_) | syn::BinOp::Eq(_) => {
                is_len(&b.left) || is_len(&b.right)
            }
            syn::BinOp::And(_) => compares_a_length(&b.left) || compares_a_length(&b.right),
            _ => false,
        },
        _ => false,
    }
}

/// The most a collection may have to hold, by a literal or constant threshold, for the wait to
/// count as short (`if buffer.len() == T_HORIZON` with `T_HORIZON = 20`): a handful of forwards
/// wait for each backward.
const SHORT_WAIT_MAX: u64 = 32;

/// Whether `cond` tests only that a collection holds one batch (`memory.len() >= self.batch_size`,
/// `BATCH_SIZE > buffer.len()`) or a handful of items (a literal or one of the crate's constants
/// of at most [`SHORT_WAIT_MAX`]: `buffer.len() == T_HORIZON`): each of its comparisons (joined
/// by `&&`) sets a length against such an operand. A batch-named operand not with `==`: a buffer
/// tested for equality is emptied and refilled (an on-policy rollout of that length, each
/// time). Never a counter (`step >= learning_starts`).
fn waits_briefly(cond: &Expr, consts: &rustc_hash::FxHashMap<String, Option<u64>>) -> bool {
    let small = |e: &Expr| match strip_parens(e) {
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => {
            i.base10_parse::<u64>().is_ok_and(|n| n <= SHORT_WAIT_MAX)
        }
        Expr::Path(p) => p
            .path
            .get_ident()
            .and_then(|id| consts.get(&id.to_string()).copied().flatten())
            .is_some_and(|n| n <= SHORT_WAIT_MAX),
        _ => false,
    };
    every_length_test(cond, &|other, equality| small(other) || (!equality && names_a_batch(other)))
}

/// Whether `cond` tests only that a collection holds one batch (`memory.len() >= self.batch_size`,
/// `BATCH_SIZE > buffer.len()`): each of its comparisons (joined by `&&`) sets a length against
/// an operand named like a batch size. Not `==`: a buffer tested for equality is emptied and
/// refilled (an on-policy rollout of that length, each time), and not a counter (`step >=
/// learning_starts`).
fn waits_for_one_batch(cond: &Expr) -> bool {
    every_length_test(cond, &|other, equality| !equality && names_a_batch(other))
}

/// Whether `cond` is one or more comparisons joined by `&&`, each of which sets a collection's
/// length ([`is_len`]) against an operand that `accepts` (given whether the comparison is `==`).
fn every_length_test(cond: &Expr, accepts: &impl Fn(&Expr, bool) -> bool) -> bool {
    let Expr::Binary(b) = strip_parens(cond) else { return false };
    match b.op {
        syn::BinOp::And(_) => every_length_test(&b.left, accepts) && every_length_test(&b.right, accepts),
        syn::BinOp::Lt(_) | syn::BinOp::Le(_) | syn::BinOp::Gt(_) | syn::BinOp::Ge(_) | syn::BinOp::Eq(_) => {
            let other = if is_len(&b.left) {
                &*b.right
            } else if is_len(&b.right) {
                &*b.left
            } else {
                return false;
            };
            accepts(other, matches!(b.op, syn::BinOp::Eq(_)))
        }
        _ => false,
    }
}

/// `batch_size`, `BATCH_SIZE`, `mini_batch_size`, `batchsize`, `batch` (a path, a field or a
/// getter): one batch, not a count of them (`WARMUP_BATCHES`, `min_batches`).
fn names_a_batch(e: &Expr) -> bool {
    let batchy = |name: String| {
        let name = name.to_ascii_lowercase();
        name.contains("batch_size") || name.contains("batchsize") || name == "batch" || name.ends_with("_batch")
    };
    match strip_parens(e) {
        Expr::Cast(c) => names_a_batch(&c.expr),
        Expr::Path(p) => p.path.segments.last().is_some_and(|s| batchy(s.ident.to_string())),
        Expr::Field(f) => matches!(&f.member, syn::Member::Named(n) if batchy(n.to_string())),
        Expr::MethodCall(m) => m.args.is_empty() && batchy(m.method.to_string()),
        _ => false,
    }
}

/// A collection's length: `len()`, or `size()` (a buffer type of the crate often names its length
/// so: `replay_buffer.size()`).
/// Whether the collection whose length `stmt` (an early exit) waits on is emptied by `rest`
/// (`std::mem::take(&mut self.pending)`, `self.pending.clear()`, `.drain(..)`, a new value):
/// each wait starts from empty.
fn emptied_after_wait(stmt: &Stmt, rest: &[Stmt]) -> bool {
    use syn::visit::Visit;
    let Stmt::Expr(Expr::If(i), _) = stmt else { return false };
    let Expr::Binary(b) = strip_parens(&i.cond) else { return false };
    let len = if is_len(&b.left) { &*b.left } else { &*b.right };
    let Expr::MethodCall(m) = strip_parens(len) else { return false };
    let collection = expr_text(&m.receiver);
    struct Empties<'a> {
        collection: &'a str,
        found: bool,
    }
    impl<'ast> Visit<'ast> for Empties<'_> {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            if matches!(m.method.to_string().as_str(), "clear" | "drain" | "take" | "split_off")
                && expr_text(strip_place(&m.receiver)) == self.collection
            {
                self.found = true;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let Expr::Path(p) = &*c.func
                && p.path.segments.last().is_some_and(|s| s.ident == "take" || s.ident == "replace")
                && c.args.first().is_some_and(|a| expr_text(strip_place(a)) == self.collection)
            {
                self.found = true;
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
            if expr_text(&a.left) == self.collection {
                self.found = true;
            }
            syn::visit::visit_expr_assign(self, a);
        }
    }
    let mut v = Empties { collection: &collection, found: false };
    for s in rest {
        v.visit_stmt(s);
    }
    v.found
}

fn is_len(e: &Expr) -> bool {
    matches!(strip_parens(e), Expr::MethodCall(m) if (m.method == "len" || m.method == "size") && m.args.is_empty())
}

/// `step < warmup`, `learning_starts > step`, `buffer.len() <= n`: the condition holds while the
/// value that `tested` recognises is still below its threshold.
fn tests_below(cond: &Expr, tested: impl Fn(&Expr) -> bool) -> bool {
    match strip_parens(cond) {
        Expr::Binary(b) => match b.op {
            syn::BinOp::Lt(_) | syn::BinOp::Le(_) => tested(&b.left),
            syn::BinOp::Gt(_) | syn::BinOp::Ge(_) => tested(&b.right),
            _ => false,
        },
        _ => false,
    }
}

/// Whether `f` holds for explicit generic arguments of the call that makes a bound value:
/// `cfg.init::<B>(&d)`, `Net::<B>::new(..)`, through `?`, `.unwrap()`, `.expect(..)`,
/// `.to_device(..)` and the adapters that hand on a `Result`'s value (`.map_err(..)`).
fn made_with_generic_args(e: &Expr, f: &mut impl FnMut(&syn::AngleBracketedGenericArguments) -> bool) -> bool {
    match e {
        Expr::Paren(p) => made_with_generic_args(&p.expr, f),
        Expr::Try(t) => made_with_generic_args(&t.expr, f),
        Expr::MethodCall(m) => match &m.turbofish {
            Some(t) => f(t),
            None => {
                let name = m.method.to_string();
                // burn's `Module::load_file`/`load_record` return the module they load into.
                (matches!(name.as_str(), "unwrap" | "expect" | "to_device" | "fork" | "load_file" | "load_record")
                    || rust::is_pass_on(&name))
                    && made_with_generic_args(&m.receiver, f)
            }
        },
        Expr::Call(c) => match &*c.func {
            Expr::Path(p) => p.path.segments.iter().any(|s| match &s.arguments {
                syn::PathArguments::AngleBracketed(a) => f(a),
                _ => false,
            }),
            _ => false,
        },
        // `Agent::<Ad> { policy, .. }`: a struct literal whose path states the backend.
        Expr::Struct(st) => st.path.segments.iter().any(|s| match &s.arguments {
            syn::PathArguments::AngleBracketed(a) => f(a),
            _ => false,
        }),
        _ => false,
    }
}

/// `vs.trainable_variables()`, `vs.variables().values_mut()`, `&mut params`... through
/// iterator adapters: the iterable names a store's variables.
fn iterates_variables(e: &Expr) -> bool {
    match strip_parens(e) {
        Expr::Reference(r) => iterates_variables(&r.expr),
        Expr::MethodCall(m) => {
            m.method == "trainable_variables" || m.method == "variables" || iterates_variables(&m.receiver)
        }
        _ => false,
    }
}

/// `Some(..)`, the pattern of a value handed over.
fn is_some_pat(p: &Pat) -> bool {
    matches!(p, Pat::TupleStruct(t) if t.path.is_ident("Some"))
}

/// An expression without the parentheses around it.
fn strip_parens(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip_parens(&p.expr),
        _ => e,
    }
}

/// Whether an expression calls one of `methods` anywhere.
fn mentions_method(e: &Expr, methods: &[&str]) -> bool {
    use syn::visit::Visit;
    struct Find<'m>(&'m [&'m str], bool);
    impl<'a> Visit<'a> for Find<'_> {
        fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
            if self.0.iter().any(|n| m.method == n) {
                self.1 = true;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut f = Find(methods, false);
    f.visit_expr(e);
    f.1
}

/// burn: whether a `map` receiver is a parameter — a `weight`/`bias`-like field, or a binding
/// declared as `Param<..>` (`this: &mut Param<Tensor<B, D>>`), possibly cloned.
fn is_param_place(e: &Expr, b: &Builder<'_>) -> bool {
    match e {
        Expr::MethodCall(m) if m.method == "clone" && m.args.is_empty() => is_param_place(&m.receiver, b),
        Expr::Paren(p) => is_param_place(&p.expr, b),
        Expr::Reference(r) => is_param_place(&r.expr, b),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => is_param_place(&u.expr, b),
        Expr::Field(f) => matches!(&f.member, syn::Member::Named(n) if common::PARAM_FIELDS.iter().any(|p| n == p)),
        Expr::Path(_) => b.declared_type_of(e).as_deref() == Some(b.g.spec.param_type),
        _ => false,
    }
}

/// A number literal (`0.0`, `0f32`, `-1.0`, `0 as f64`): the binding it initializes is a host number.
fn is_number(e: &Expr) -> bool {
    match e {
        Expr::Lit(l) => matches!(l.lit, syn::Lit::Float(_) | syn::Lit::Int(_)),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => is_number(&u.expr),
        Expr::Paren(p) => is_number(&p.expr),
        Expr::Cast(c) => is_number(&c.expr),
        _ => false,
    }
}

fn strip_pat_type(p: &Pat) -> &Pat {
    match p {
        Pat::Type(t) => strip_pat_type(&t.pat),
        p => p,
    }
}

/// `let x: f32 = …`: a host scalar never carries a graph.
fn pat_is_host_scalar(p: &Pat) -> bool {
    let Pat::Type(t) = p else { return false };
    let syn::Type::Path(tp) = &*t.ty else { return false };
    let Some(ident) = tp.path.get_ident() else { return false };
    super::rust::is_host_type(&ident.to_string())
}

/// The identifiers a pattern binds.
pub fn pat_idents<'p>(p: &'p Pat, out: &mut Vec<&'p syn::Ident>) {
    match p {
        Pat::Ident(i) => {
            if i.ident != "self" {
                out.push(&i.ident);
            }
            if let Some((_, sub)) = &i.subpat {
                pat_idents(sub, out);
            }
        }
        Pat::Tuple(t) => t.elems.iter().for_each(|p| pat_idents(p, out)),
        Pat::TupleStruct(t) => t.elems.iter().for_each(|p| pat_idents(p, out)),
        Pat::Struct(s) => s.fields.iter().for_each(|f| pat_idents(&f.pat, out)),
        Pat::Slice(s) => s.elems.iter().for_each(|p| pat_idents(p, out)),
        Pat::Or(o) => {
            if let Some(first) = o.cases.first() {
                pat_idents(first, out);
            }
        }
        Pat::Reference(r) => pat_idents(&r.pat, out),
        Pat::Paren(p) => pat_idents(&p.pat, out),
        Pat::Type(t) => pat_idents(&t.pat, out),
        Pat::Guard(g) => pat_idents(&g.pat, out),
        _ => {}
    }
}

/// The source text of a short expression, for messages (`opt`, `self.optimizer`).
pub fn expr_text(e: &Expr) -> String {
    use quote::ToTokens;
    let s = e.to_token_stream().to_string();
    s.replace(" . ", ".").replace(" (", "(").replace("( ", "(").replace(" )", ")").replace("& ", "&")
}

fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => {
            let last = p.path.segments.last()?;
            // `Option<&Tokenizer>`, `Arc<Model>`: the methods called on it (after `unwrap`, or
            // through `Deref`) are the inner type's.
            if rust::TRANSPARENT_WRAPPERS.iter().any(|w| last.ident == w)
                && let syn::PathArguments::AngleBracketed(a) = &last.arguments
                && let Some(syn::GenericArgument::Type(inner)) = a.args.first()
            {
                return type_name(inner);
            }
            Some(last.ident.to_string())
        }
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        _ => None,
    }
}

/// Whether a parameter's type is a trait object or `impl Trait` (behind references and a
/// `Box`) of a trait a crate may implement for its models: not a closure, iterator, I/O or
/// formatting trait of the standard library, nor a random-number generator.
fn trait_object_of(ty: &syn::Type) -> bool {
    let bounds = match ty {
        syn::Type::Reference(r) => return trait_object_of(&r.elem),
        syn::Type::Paren(p) => return trait_object_of(&p.elem),
        syn::Type::Path(p) => {
            return p.path.segments.last().is_some_and(|last| {
                last.ident == "Box"
                    && matches!(&last.arguments, syn::PathArguments::AngleBracketed(a)
                        if matches!(a.args.first(), Some(syn::GenericArgument::Type(t)) if trait_object_of(t)))
            });
        }
        syn::Type::TraitObject(t) => &t.bounds,
        syn::Type::ImplTrait(t) => &t.bounds,
        _ => return false,
    };
    let mut traits = bounds.iter().filter_map(|b| match b {
        syn::TypeParamBound::Trait(t) => t.path.segments.last(),
        _ => None,
    });
    traits.next().is_some_and(|t| !rust::STD_TRAITS.contains(&t.ident.to_string().as_str()))
}

/// Whether a type is a collection of trait objects (`Vec<Box<dyn Metric>>`, `[Box<dyn Hook>;
/// 2]`, `VecDeque<Box<dyn Callback>>`).
fn is_trait_object_collection(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(r) => is_trait_object_collection(&r.elem),
        syn::Type::Slice(s) => trait_object_of(&s.elem),
        syn::Type::Array(a) => trait_object_of(&a.elem),
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|last| {
            matches!(last.ident.to_string().as_str(), "Vec" | "VecDeque" | "SmallVec")
                && matches!(&last.arguments, syn::PathArguments::AngleBracketed(a)
                    if matches!(a.args.first(), Some(syn::GenericArgument::Type(t)) if trait_object_of(t)))
        }),
        _ => false,
    }
}

/// The same for a field's type as written in the struct (`Vec<Box<dyn Metric<B>>>`).
pub(super) fn is_trait_object_collection_text(ty: &str) -> bool {
    syn::parse_str::<syn::Type>(ty.trim().trim_end_matches(',')).is_ok_and(|t| is_trait_object_collection(&t))
}

/// The identifiers of `pat` annotated with a trait object (see [`trait_object_of`]), element by
/// element through tuples.
fn trait_object_idents<'p>(pat: &'p Pat, ty: &syn::Type, out: &mut Vec<&'p syn::Ident>) {
    match (pat, ty) {
        (Pat::Ident(p), ty) if trait_object_of(ty) => out.push(&p.ident),
        (Pat::Tuple(p), syn::Type::Tuple(t)) if p.elems.len() == t.elems.len() => {
            for (p, t) in p.elems.iter().zip(&t.elems) {
                trait_object_idents(p, t, out);
            }
        }
        _ => {}
    }
}

/// The element type's name of a slice, array or `Vec` type (`&[Var]`, `Vec<Var>`, `[Var; 2]`).
pub(super) fn element_type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Reference(r) => element_type_name(&r.elem),
        syn::Type::Paren(p) => element_type_name(&p.elem),
        syn::Type::Slice(s) => type_name(&s.elem),
        syn::Type::Array(a) => type_name(&a.elem),
        syn::Type::Path(p) => {
            let last = p.path.segments.last()?;
            match &last.arguments {
                syn::PathArguments::AngleBracketed(a) if last.ident == "Vec" => match a.args.first()? {
                    syn::GenericArgument::Type(inner) => type_name(inner),
                    _ => None,
                },
                _ => None,
            }
        }
        _ => None,
    }
}

/// The leftmost token of an expression.
fn first_token(e: &Expr) -> PmSpan {
    match e {
        Expr::MethodCall(m) => first_token(&m.receiver),
        Expr::Binary(b) => first_token(&b.left),
        Expr::Field(f) => first_token(&f.base),
        Expr::Index(i) => first_token(&i.expr),
        Expr::Try(t) => first_token(&t.expr),
        Expr::Await(a) => first_token(&a.base),
        Expr::Cast(c) => first_token(&c.expr),
        Expr::Call(c) => first_token(&c.func),
        Expr::Assign(a) => first_token(&a.left),
        Expr::Range(r) => r.start.as_deref().map_or_else(|| r.limits.span(), first_token),
        Expr::Path(p) if p.qself.is_none() => match &p.path.leading_colon {
            Some(c) => c.spans[0],
            None => p.path.segments.first().map_or_else(PmSpan::call_site, |s| s.ident.span()),
        },
        Expr::Lit(l) => l.lit.span(),
        Expr::Paren(p) => p.paren_token.span.open(),
        Expr::Tuple(t) => t.paren_token.span.open(),
        Expr::Array(a) => a.bracket_token.span.open(),
        Expr::Reference(r) => r.and_token.span,
        Expr::Unary(u) => u.op.span(),
        Expr::Macro(m) => m.mac.path.segments.first().map_or_else(PmSpan::call_site, |s| s.ident.span()),
        Expr::Block(b) if b.label.is_none() => b.block.brace_token.span.open(),
        Expr::If(i) => i.if_token.span,
        Expr::Match(m) => m.match_token.span,
        e => e.span(),
    }
}

/// The rightmost token of an expression.
fn last_token(e: &Expr) -> PmSpan {
    match e {
        Expr::MethodCall(m) => m.paren_token.span.close(),
        Expr::Call(c) => c.paren_token.span.close(),
        Expr::Binary(b) => last_token(&b.right),
        Expr::Assign(a) => last_token(&a.right),
        Expr::Field(f) => match &f.member {
            syn::Member::Named(n) => n.span(),
            syn::Member::Unnamed(i) => i.span,
        },
        Expr::Index(i) => i.bracket_token.span.close(),
        Expr::Try(t) => t.question_token.span,
        Expr::Await(a) => a.await_token.span,
        Expr::Path(p) if p.qself.is_none() => match p.path.segments.last() {
            Some(s) if matches!(s.arguments, syn::PathArguments::None) => s.ident.span(),
            _ => e.span(),
        },
        Expr::Lit(l) => l.lit.span(),
        Expr::Paren(p) => p.paren_token.span.close(),
        Expr::Tuple(t) => t.paren_token.span.close(),
        Expr::Array(a) => a.bracket_token.span.close(),
        Expr::Reference(r) => last_token(&r.expr),
        Expr::Unary(u) => last_token(&u.expr),
        Expr::Macro(m) => match &m.mac.delimiter {
            syn::MacroDelimiter::Paren(p) => p.span.close(),
            syn::MacroDelimiter::Brace(b) => b.span.close(),
            syn::MacroDelimiter::Bracket(b) => b.span.close(),
        },
        Expr::Block(b) => b.block.brace_token.span.close(),
        Expr::Struct(s) => s.brace_token.span.close(),
        Expr::Match(m) => m.brace_token.span.close(),
        Expr::Closure(c) => last_token(&c.body),
        e => e.span(),
    }
}

/// `+=`, `-=` and the other compound assignments: writes of their left side.
fn is_compound_assign(op: &syn::BinOp) -> bool {
    use syn::BinOp::*;
    matches!(
        op,
        AddAssign(_)
            | SubAssign(_)
            | MulAssign(_)
            | DivAssign(_)
            | RemAssign(_)
            | BitXorAssign(_)
            | BitAndAssign(_)
            | BitOrAssign(_)
            | ShlAssign(_)
            | ShrAssign(_)
    )
}

/// Whether `e` is a chain of method calls (perhaps behind `?` or parentheses) on a field of
/// `self` (`self.teacher.forward(x).max_dim(1)`): a cut on it ends a chain that starts with a
/// call on that field.
fn chain_on_self_field(e: &Expr) -> bool {
    let mut e = e;
    let mut calls = 0;
    loop {
        match e {
            Expr::Paren(p) => e = &p.expr,
            Expr::Try(t) => e = &t.expr,
            Expr::MethodCall(m) => {
                calls += 1;
                e = &m.receiver;
            }
            Expr::Field(f) => return calls > 0 && is_self(&f.base),
            _ => return false,
        }
    }
}

/// Whether `e` reads a tensor's shape (`x.dims2()?`, `x.dim(1)?`, `x.dims()[1]`, tch's
/// `x.size()`).
fn is_shape_read(e: &Expr) -> bool {
    match strip_try(e) {
        Expr::MethodCall(m) => frameworks::is_shape_method(&m.method.to_string()),
        Expr::Index(i) => is_shape_read(&i.expr),
        Expr::Paren(p) => is_shape_read(&p.expr),
        _ => false,
    }
}

/// Whether `e` walks places written in turn: `shadows.iter_mut()`, or several such walks zipped
/// (`self.sums.iter_mut().zip(self.counts.iter_mut())`).
fn places_in_turn(e: &Expr) -> bool {
    match strip_parens(e) {
        Expr::MethodCall(m) if m.method == "iter_mut" && m.args.is_empty() => true,
        Expr::MethodCall(m) if m.method == "zip" && m.args.len() == 1 => {
            places_in_turn(&m.receiver) && places_in_turn(&m.args[0])
        }
        _ => false,
    }
}
