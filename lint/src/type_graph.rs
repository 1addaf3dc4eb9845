//! The graph of a crate's types for `rc_cycle`: one node per struct/enum, one edge per field
//! that owns (directly, through containers, or through `Rc`/`Arc`) another of the crate's types.

use std::collections::HashMap;
use std::sync::Arc;

use petgraph::graph::{DiGraph, NodeIndex};
use syn::spanned::Spanned;

use crate::model::Span;
use crate::source::SourceFile;

#[derive(Debug)]
pub struct TypeNode {
    pub name: String,
    pub file: Arc<SourceFile>,
    pub span: Span,
}

/// A field that reaches another type.
#[derive(Debug, Clone)]
pub struct FieldEdge {
    /// `Type.field` or `Type::Variant.0`.
    pub field: String,
    pub file: Arc<SourceFile>,
    pub span: Span,
    /// Reached through `Rc`/`Arc` (a strong shared reference).
    pub shared: bool,
    /// Reached through interior mutability (`RefCell`, `Mutex`, …), which is what lets a cycle
    /// be closed after construction.
    pub interior: bool,
    /// Reached through `Weak`: owns nothing, but shows the author broke a cycle on purpose.
    pub weak: bool,
}

#[derive(Debug, Default)]
pub struct TypeGraph {
    pub graph: DiGraph<TypeNode, FieldEdge>,
    /// The declarations the graph was built from.
    pub decls: Vec<TypeDecl>,
    /// Fields that some function of the crate stores a graph-carrying value into.
    pub graph_stores: Vec<crate::model::FieldStore>,
}

/// Wrappers that give interior mutability.
const INTERIOR: &[&str] = &[
    "RefCell",
    "Cell",
    "Mutex",
    "RwLock",
    "OnceCell",
    "OnceLock",
    "UnsafeCell",
    "ReentrantMutex",
    "AtomicCell",
    "ArcSwap",
    "ArcSwapOption",
    "LazyCell",
];

/// A struct or enum declared in the crate, with its fields' types reduced to names.
#[derive(Debug, Clone)]
pub struct TypeDecl {
    pub name: String,
    pub file: Arc<SourceFile>,
    pub span: Span,
    pub fields: Vec<FieldDecl>,
    /// Type parameter names, in order (`B`, `M`).
    pub generics: Vec<String>,
    /// Const parameter names (`D` of burn 0.22's `Tensor<D>`).
    pub consts: Vec<String>,
    /// Type parameters bounded by burn's `AutodiffBackend`, with the bound's span.
    pub autodiff: Vec<(String, Span)>,
    /// A type alias naming an autodiff backend (`type Train = Autodiff<Wgpu>;`): no fields.
    pub autodiff_alias: bool,
    /// Declared a module of the framework (`#[derive(Module)]`, burn): its methods are model code.
    pub module: bool,
}

#[derive(Debug, Clone)]
pub struct FieldDecl {
    /// `Type.field` or `Type::Variant.0`.
    pub field: String,
    pub span: Span,
    pub ty: Shape,
}

/// The part of a type that matters for ownership: named types and their type arguments.
/// References and raw pointers own nothing and are dropped.
#[derive(Debug, Clone)]
pub enum Shape {
    Named { name: String, args: Vec<Shape> },
    Tuple(Vec<Shape>),
    Opaque,
}

impl Shape {
    fn of(ty: &syn::Type, depth: usize) -> Shape {
        if depth > 32 {
            return Shape::Opaque;
        }
        match ty {
            syn::Type::Path(p) if p.qself.is_none() => {
                let Some(last) = p.path.segments.last() else { return Shape::Opaque };
                let name = last.ident.to_string();
                if name == "PhantomData" {
                    return Shape::Opaque;
                }
                let args = match &last.arguments {
                    syn::PathArguments::AngleBracketed(a) => a
                        .args
                        .iter()
                        .filter_map(|arg| match arg {
                            syn::GenericArgument::Type(t) => Some(Shape::of(t, depth + 1)),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                Shape::Named { name, args }
            }
            syn::Type::Tuple(t) => Shape::Tuple(t.elems.iter().map(|t| Shape::of(t, depth + 1)).collect()),
            syn::Type::Array(a) => Shape::of(&a.elem, depth + 1),
            syn::Type::Slice(s) => Shape::of(&s.elem, depth + 1),
            syn::Type::Paren(p) => Shape::of(&p.elem, depth + 1),
            syn::Type::Group(g) => Shape::of(&g.elem, depth + 1),
            _ => Shape::Opaque,
        }
    }
}

/// The structs and enums declared in one parsed file (inline modules included).
pub fn collect_decls(ast: &syn::File, file: &Arc<SourceFile>, offset: usize) -> Vec<TypeDecl> {
    fn range(span: proc_macro2::Span, offset: usize) -> Span {
        let r = crate::spans::byte_range(span);
        r.start + offset..r.end + offset
    }
    fn field_decls<'a>(prefix: &str, fields: impl Iterator<Item = &'a syn::Field>, offset: usize) -> Vec<FieldDecl> {
        fields
            .enumerate()
            .map(|(i, f)| FieldDecl {
                field: format!("{prefix}.{}", f.ident.as_ref().map_or(i.to_string(), |id| id.to_string())),
                span: {
                    let r = field_range(f);
                    r.start + offset..r.end + offset
                },
                ty: Shape::of(&f.ty, 0),
            })
            .collect()
    }
    fn walk(items: &[syn::Item], file: &Arc<SourceFile>, offset: usize, out: &mut Vec<TypeDecl>) {
        for item in items {
            match item {
                syn::Item::Struct(s) => {
                    let fields = field_decls(&s.ident.to_string(), s.fields.iter(), offset);
                    let mut d = decl(&s.ident, &s.generics, fields, file, offset);
                    d.module = derives_module(&s.attrs);
                    out.push(d);
                }
                syn::Item::Enum(e) => {
                    let name = e.ident.to_string();
                    let fields = e
                        .variants
                        .iter()
                        .flat_map(|v| field_decls(&format!("{name}::{}", v.ident), v.fields.iter(), offset))
                        .collect();
                    out.push(decl(&e.ident, &e.generics, fields, file, offset));
                }
                syn::Item::Type(t) if names_autodiff(&Shape::of(&t.ty, 0)) => out.push(TypeDecl {
                    name: t.ident.to_string(),
                    file: file.clone(),
                    span: range(t.ident.span(), offset),
                    fields: Vec::new(),
                    generics: Vec::new(),
                    consts: Vec::new(),
                    autodiff: Vec::new(),
                    autodiff_alias: true,
                    module: false,
                }),
                syn::Item::Mod(m) => {
                    if let Some((_, items)) = &m.content {
                        walk(items, file, offset, out);
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    walk(&ast.items, file, offset, &mut out);
    out
}

/// The declaration of a struct or enum.
/// `#[derive(.., Module, ..)]` (burn's module derive, also as `burn::module::Module`).
fn derives_module(attrs: &[syn::Attribute]) -> bool {
    // The derive list's tokens are read as they are (no parse: most structs derive something).
    attrs.iter().any(|a| match &a.meta {
        syn::Meta::List(list) if list.path.is_ident("derive") => {
            list.tokens.clone().into_iter().any(|t| matches!(t, proc_macro2::TokenTree::Ident(i) if i == "Module"))
        }
        _ => false,
    })
}

/// A field type's named type through owning and sharing wrappers and sequences (`Box`, `Arc`,
/// `Rc`, `RefCell`, `Mutex`, `RwLock`, `Option`, `Vec`, `VecDeque`), with its type arguments.
fn through_wrappers(shape: &Shape) -> Option<(&str, &[Shape])> {
    match shape {
        Shape::Named { name, args }
            if matches!(
                name.as_str(),
                "Box" | "Arc" | "Rc" | "RefCell" | "Mutex" | "RwLock" | "Option" | "Vec" | "VecDeque"
            ) =>
        {
            args.first().and_then(through_wrappers)
        }
        Shape::Named { name, args } => Some((name, args)),
        _ => None,
    }
}

/// How the field tables key an owner: by name, or, for a type declared more than once (a
/// binary's own `OffPolicyAlgorithm` beside the library's: which one a method's `self` is cannot
/// be told by name), by name and file (`Block@src/bigcode.rs`): a method's `self` is the type of
/// that name declared in the method's file.
fn owner_keys<'d>(decls: &[&'d TypeDecl]) -> impl Fn(&TypeDecl, &str) -> String + 'd {
    let mut names: Vec<String> = decls.iter().map(|d| d.name.clone()).collect();
    names.sort_unstable();
    move |d: &TypeDecl, owner: &str| {
        let from = names.partition_point(|m| m.as_str() < d.name.as_str());
        if names[from..].iter().take_while(|m| **m == d.name).count() == 1 {
            owner.to_string()
        } else {
            format!("{owner}@{}", d.file.path().display())
        }
    }
}

/// The type [`field_types`] gives a field typed by its struct's own type parameter.
pub const TYPE_PARAM: &str = "<type parameter>";

/// The declared types of the crate's named struct fields, by owner: (owner, field, type name),
/// sorted by owner. Through `Box`, `Arc`, `Rc`, `RefCell`, `Mutex`, `RwLock`, `Option`, `Vec`
/// and `VecDeque`; a field typed by one of its struct's own type parameters (`agent: A`) gets
/// [`TYPE_PARAM`] (any impl may be behind it).
pub fn field_types<'a>(decls: impl IntoIterator<Item = &'a TypeDecl>) -> Vec<(String, String, String)> {
    let decls: Vec<&TypeDecl> = decls.into_iter().collect();
    let key = owner_keys(&decls);
    let mut out = Vec::new();
    for d in &decls {
        for f in &d.fields {
            let Some((owner, field)) = f.field.split_once('.') else { continue };
            if owner.contains("::") || field.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            match through_wrappers(&f.ty).map(|(name, _)| name) {
                // A field typed by the struct's own type parameter (`agent: A`): its calls reach
                // trait methods, of any implementing type.
                Some(ty) if d.generics.iter().any(|g| g == ty) => {
                    out.push((key(d, owner), field.to_string(), TYPE_PARAM.to_string()));
                }
                Some(ty) => out.push((key(d, owner), field.to_string(), ty.to_string())),
                None => {}
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Fields that tie a generic type of the crate to its type arguments (see [`generic_fields`]).
#[derive(Debug, Default)]
pub struct GenericFields {
    /// (owner, field, k): a field typed by its struct's k-th type parameter (`agent: A` in
    /// `struct Session<E, A>` is 1), sorted.
    pub params: Vec<(String, String, usize)>,
    /// (owner, field, type, arguments): a field of a generic type with the type name of each of
    /// its type arguments (`session: Session<E, DqnAgent<B>>` gives `[None, Some("DqnAgent")]`: a
    /// type parameter of the owner names no type), sorted.
    pub args: Vec<(String, String, String, Vec<Option<String>>)>,
}

/// The crate's fields typed by a type parameter of their struct, and those whose generic type
/// names a concrete type argument: a method of `Session<E, A>` calling `self.agent.act(..)`
/// reaches `DqnAgent::act` when it is called on a `session: Session<E, DqnAgent<B>>`.
/// Owners are keyed as in [`field_types`]. Through the same wrappers.
pub fn generic_fields<'a>(decls: impl IntoIterator<Item = &'a TypeDecl>) -> GenericFields {
    let decls: Vec<&TypeDecl> = decls.into_iter().collect();
    let key = owner_keys(&decls);
    let mut out = GenericFields::default();
    for d in &decls {
        for f in &d.fields {
            let Some((owner, field)) = f.field.split_once('.') else { continue };
            if owner.contains("::") || field.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Some((ty, args)) = through_wrappers(&f.ty) else { continue };
            if let Some(k) = d.generics.iter().position(|g| g == ty) {
                out.params.push((key(d, owner), field.to_string(), k));
                continue;
            }
            let heads: Vec<Option<String>> = args
                .iter()
                .map(|a| match a {
                    Shape::Named { name, .. } if !d.generics.contains(name) => Some(name.clone()),
                    _ => None,
                })
                .collect();
            if heads.iter().any(Option::is_some) {
                out.args.push((key(d, owner), field.to_string(), ty.to_string(), heads));
            }
        }
    }
    out.params.sort_unstable();
    out.params.dedup();
    out.args.sort_unstable();
    out.args.dedup();
    out
}

/// The crate's types declared as modules (`#[derive(Module)]`).
pub fn module_types<'a>(decls: impl IntoIterator<Item = &'a TypeDecl>) -> Vec<String> {
    let mut out: Vec<String> = decls.into_iter().filter(|d| d.module).map(|d| d.name.clone()).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The byte range of a field declaration, attributes and visibility included: what
/// `syn::spanned::Spanned::span` gives, read off the first and last tokens instead of printing
/// the whole declaration into tokens (which cost most of collecting a crate's types).
fn field_range(f: &syn::Field) -> std::ops::Range<usize> {
    let start = f
        .attrs
        .first()
        .map(|a| a.pound_token.span)
        .or(match &f.vis {
            syn::Visibility::Public(p) => Some(p.span),
            syn::Visibility::Restricted(r) => Some(r.pub_token.span),
            syn::Visibility::Inherited => None,
        })
        .or_else(|| f.ident.as_ref().map(syn::Ident::span))
        .or_else(|| type_start(&f.ty));
    // Joined first: each end of a range costs a lookup in proc-macro2's source map.
    match start.zip(type_end(&f.ty)).and_then(|(start, end)| start.join(end)) {
        Some(span) => crate::spans::byte_range(span),
        None => crate::spans::byte_range(f.span()),
    }
}

/// The first token of a type, for the common forms (None: ask `Spanned`).
fn type_start(ty: &syn::Type) -> Option<proc_macro2::Span> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => match &p.path.leading_colon {
            Some(colon) => Some(colon.spans[0]),
            None => p.path.segments.first().map(|s| s.ident.span()),
        },
        syn::Type::Reference(r) => Some(r.and_token.span),
        syn::Type::Ptr(p) => Some(p.star_token.span),
        syn::Type::Tuple(t) => Some(t.paren_token.span.open()),
        syn::Type::Array(a) => Some(a.bracket_token.span.open()),
        syn::Type::Slice(s) => Some(s.bracket_token.span.open()),
        syn::Type::Paren(p) => Some(p.paren_token.span.open()),
        _ => None,
    }
}

/// The last token of a type, for the common forms (None: ask `Spanned`).
fn type_end(ty: &syn::Type) -> Option<proc_macro2::Span> {
    match ty {
        syn::Type::Path(p) => {
            let last = p.path.segments.last()?;
            match &last.arguments {
                syn::PathArguments::None => Some(last.ident.span()),
                syn::PathArguments::AngleBracketed(a) => Some(a.gt_token.span),
                syn::PathArguments::Parenthesized(_) => None,
            }
        }
        syn::Type::Reference(r) => type_end(&r.elem),
        syn::Type::Ptr(p) => type_end(&p.elem),
        syn::Type::Tuple(t) => Some(t.paren_token.span.close()),
        syn::Type::Array(a) => Some(a.bracket_token.span.close()),
        syn::Type::Slice(s) => Some(s.bracket_token.span.close()),
        syn::Type::Paren(p) => Some(p.paren_token.span.close()),
        syn::Type::FnPtr(b) => match &b.output {
            syn::ReturnType::Type(_, t) => type_end(t.as_ref()),
            syn::ReturnType::Default => Some(b.paren_token.span.close()),
        },
        _ => None,
    }
}

fn decl(
    ident: &syn::Ident,
    generics: &syn::Generics,
    fields: Vec<FieldDecl>,
    file: &Arc<SourceFile>,
    offset: usize,
) -> TypeDecl {
    let (names, autodiff) = type_params(generics, offset);
    let r = crate::spans::byte_range(ident.span());
    TypeDecl {
        name: ident.to_string(),
        file: file.clone(),
        span: r.start + offset..r.end + offset,
        fields,
        generics: names,
        consts: generics.const_params().map(|c| c.ident.to_string()).collect(),
        autodiff,
        autodiff_alias: false,
        module: false,
    }
}

/// A type's parameter names, and those bounded by `AutodiffBackend` (inline or in `where`).
fn type_params(generics: &syn::Generics, offset: usize) -> (Vec<String>, Vec<(String, Span)>) {
    fn autodiff_bound<'a>(bounds: impl IntoIterator<Item = &'a syn::TypeParamBound>) -> Option<proc_macro2::Span> {
        bounds.into_iter().find_map(|b| match b {
            syn::TypeParamBound::Trait(t) => t
                .path
                .segments
                .last()
                .filter(|s| s.ident.to_string().ends_with("AutodiffBackend"))
                .map(|s| s.ident.span()),
            _ => None,
        })
    }
    let range = |span: proc_macro2::Span| {
        let r = crate::spans::byte_range(span);
        r.start + offset..r.end + offset
    };
    let mut names = Vec::new();
    let mut autodiff = Vec::new();
    for p in generics.type_params() {
        let name = p.ident.to_string();
        if let Some(span) = autodiff_bound(&p.bounds) {
            autodiff.push((name.clone(), range(span)));
        }
        names.push(name);
    }
    for pred in generics.where_clause.iter().flat_map(|w| &w.predicates) {
        if let syn::WherePredicate::Type(t) = pred
            && let syn::Type::Path(p) = &t.bounded_ty
            && let Some(ident) = p.path.get_ident()
            && let Some(span) = autodiff_bound(&t.bounds)
            && !autodiff.iter().any(|(n, _)| ident == n)
        {
            autodiff.push((ident.to_string(), range(span)));
        }
    }
    (names, autodiff)
}

/// Whether a type names burn's `Autodiff<..>` backend anywhere.
/// The fields (type, field) whose declared type names an autodiff backend: `Autodiff<..>` (or
/// its older name `ADBackendDecorator<..>`), an alias of the crate that is one, or a type of the
/// crate that holds such a field (`type MyAutodiffBackend = Autodiff<Wgpu>;`). Generic
/// parameters bounded by `AutodiffBackend` are not here: the `impl` says those.
pub fn autodiff_fields<'a>(decls: impl Iterator<Item = &'a TypeDecl> + Clone) -> Vec<(String, String)> {
    let aliases: Vec<&str> = decls.clone().filter(|d| d.autodiff_alias).map(|d| d.name.as_str()).collect();
    // A type's own parameters shadow the crate's aliases (`struct Model<B: Backend>` in a crate
    // with `type B = Autodiff<Wgpu>;`).
    fn names(shape: &Shape, aliases: &[&str], params: &[String]) -> bool {
        match shape {
            Shape::Named { name, args } => {
                crate::frameworks::common::is_autodiff_name(name)
                    || (aliases.contains(&name.as_str()) && !params.contains(name))
                    || args.iter().any(|a| names(a, aliases, params))
            }
            Shape::Tuple(items) => items.iter().any(|a| names(a, aliases, params)),
            Shape::Opaque => false,
        }
    }
    // Types that hold such a field count as such a type themselves (`net: PolicyNet`, whose
    // layers are `Linear<Train>`), to a fixpoint.
    let mut autodiff: Vec<&str> = aliases.clone();
    for _ in 0..8 {
        let before = autodiff.len();
        for d in decls.clone() {
            if !d.autodiff_alias
                && !autodiff.contains(&d.name.as_str())
                && d.fields.iter().any(|f| names(&f.ty, &autodiff, &d.generics))
            {
                autodiff.push(d.name.as_str());
            }
        }
        if autodiff.len() == before {
            break;
        }
    }
    let mut out: Vec<(String, String)> = decls
        .flat_map(|d| d.fields.iter().map(move |f| (d, f)))
        .filter(|(d, f)| names(&f.ty, &autodiff, &d.generics))
        .filter_map(|(d, f)| {
            let field = f.field.strip_prefix(&format!("{}.", d.name))?;
            Some((d.name.clone(), field.to_string()))
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

pub fn names_autodiff(shape: &Shape) -> bool {
    match shape {
        Shape::Named { name, args } => name == "Autodiff" || args.iter().any(names_autodiff),
        Shape::Tuple(items) => items.iter().any(names_autodiff),
        Shape::Opaque => false,
    }
}

impl TypeGraph {
    /// Builds the graph of a crate from its declarations. Types are matched by name; two types
    /// of the same name in different modules share a node.
    pub fn build(decls: &[TypeDecl], graph_stores: Vec<crate::model::FieldStore>) -> Self {
        let mut graph = DiGraph::new();
        let mut by_name: HashMap<&str, NodeIndex> = HashMap::new();
        for d in decls {
            by_name.entry(d.name.as_str()).or_insert_with(|| {
                graph.add_node(TypeNode { name: d.name.clone(), file: d.file.clone(), span: d.span.clone() })
            });
        }
        for d in decls {
            let from = by_name[d.name.as_str()];
            for f in &d.fields {
                let mut targets = Vec::new();
                reach(&f.ty, Via::default(), &by_name, &mut targets);
                for (to, via) in targets {
                    graph.add_edge(
                        from,
                        to,
                        FieldEdge {
                            field: f.field.clone(),
                            file: d.file.clone(),
                            span: f.span.clone(),
                            shared: via.shared,
                            interior: via.interior,
                            weak: via.weak,
                        },
                    );
                }
            }
        }
        Self { graph, decls: decls.to_vec(), graph_stores }
    }
}

/// What lies between a field and a type it reaches.
#[derive(Debug, Clone, Copy, Default)]
struct Via {
    shared: bool,
    interior: bool,
    weak: bool,
}

/// The crate types a field type reaches, and through what.
fn reach(shape: &Shape, via: Via, types: &HashMap<&str, NodeIndex>, out: &mut Vec<(NodeIndex, Via)>) {
    match shape {
        Shape::Named { name, args } => {
            let via = Via {
                shared: via.shared || name == "Rc" || name == "Arc",
                interior: via.interior || INTERIOR.contains(&name.as_str()),
                weak: via.weak || name == "Weak",
            };
            if let Some(&n) = types.get(name.as_str()) {
                out.push((n, via));
            }
            args.iter().for_each(|a| reach(a, via, types, out));
        }
        Shape::Tuple(items) => items.iter().for_each(|a| reach(a, via, types, out)),
        Shape::Opaque => {}
    }
}

#[cfg(test)]
mod tests {
    use syn::spanned::Spanned;

    /// The range read off the first and last tokens is the one `Spanned` computes, for the
    /// forms of field declarations real code uses.
    #[test]
    fn field_range_is_the_spanned_range() {
        let text = r#"
struct A<B: Backend> {
    /// A doc comment.
    #[serde(skip)]
    pub(crate) net: Option<Net<B>>,
    pub ids: Vec<usize>,
    plain: f32,
    refd: &'static [u8],
    arr: [Tensor<B, 1>; 4],
    tup: (Tensor<B, 2>, usize),
    ptr: *const Node,
    nested: std::collections::HashMap<String, Vec<Tensor<B, 1>>>,
    callback: Box<dyn Fn(usize) -> f32>,
    func: fn(usize) -> f32,
}
struct T(pub Tensor<B, 1>, usize, #[allow(dead_code)] Vec<Tensor<B, 2>>, &'a mut [f32], (u8, u8), ::std::rc::Rc<Node>, fn());
enum E { One { x: Tensor<B, 1> }, Two(Vec<u8>) }
"#;
        let file = syn::parse_file(text).expect("parses");
        let mut fields = Vec::new();
        for item in &file.items {
            match item {
                syn::Item::Struct(s) => fields.extend(s.fields.iter()),
                syn::Item::Enum(e) => fields.extend(e.variants.iter().flat_map(|v| v.fields.iter())),
                _ => {}
            }
        }
        assert_eq!(fields.len(), 19);
        for f in fields {
            assert_eq!(super::field_range(f), f.span().byte_range(), "{}", &text[f.span().byte_range()]);
        }
    }
}
