//! Code that never runs in a crate of binaries only: functions that nothing in the crate calls,
//! and methods of types that nothing in the crate names (what rustc's `dead_code` lint warns
//! of). A leak there costs nothing until someone calls it, so findings in it are not reported.
//! A library's items may be used by other crates: nothing is decided there.
//!
//! A generic function that only calls from code that never runs instantiate with an autodiff
//! backend (`warmup_samples_v1` handing the training model to `sample`, which live code calls
//! with `model.valid()`) runs on a plain backend whenever it runs: its findings are dropped
//! with the rest.
//!
//! Asked only of functions with a finding: the crate's texts are searched for the name, and the
//! files that hold it are parsed again. Every doubt counts as a use: a name in a macro's tokens
//! or an attribute, a method call of the same name on any value, a file that does not parse.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use syn::visit::Visit;

use crate::model::FnModel;
use crate::source::SourceFile;

/// How deep the search follows functions that name a function only from code that may itself
/// never run; deeper, it counts as a use.
const MAX_DEPTH: usize = 12;

/// What the crate's files say of the names asked about, cached per name.
pub(crate) struct Reach<'a> {
    files: &'a [Arc<SourceFile>],
    /// The linked crate: every file with its functions' models (for the callers a function's
    /// autodiff instance comes from).
    graphs: &'a [(Arc<SourceFile>, Vec<FnModel>)],
    /// The crate has binary targets only (see [`crate::Linter::binary`]).
    binary: bool,
    /// The modules the crate's files are (`src/dqn.rs` and `src/dqn/mod.rs` are `dqn`).
    file_modules: Vec<String>,
    cache: Mutex<HashMap<Asked, bool>>,
}

/// A question: is this type, or this function, never named by code that may run?
#[derive(Clone, PartialEq, Eq, Hash)]
enum Asked {
    Type(String),
    /// A function: its name, its type when it is a method, and the modules it is in (for a
    /// function of a module: `dqn::run` in another module names another `run`).
    Fn {
        name: String,
        owner: Option<String>,
        modules: Vec<String>,
    },
}

/// A function in which a name was found (the innermost `fn` around the use).
#[derive(Clone, PartialEq, Eq)]
struct User {
    ident: String,
    owner: Option<String>,
    trait_impl: bool,
    /// Something other than the crate's code may call it (see [`FnModel::entry_point`]).
    entry: bool,
    modules: Vec<String>,
}

impl<'a> Reach<'a> {
    pub(crate) fn new(
        files: &'a [Arc<SourceFile>],
        binary: bool,
        graphs: &'a [(Arc<SourceFile>, Vec<FnModel>)],
    ) -> Self {
        let mut file_modules: Vec<String> = files.iter().filter_map(|f| file_module(&f.path)).collect();
        file_modules.sort();
        file_modules.dedup();
        Self { files, binary, graphs, file_modules, cache: Mutex::default() }
    }

    /// Whether the findings of `g` (in `file`) concern code that never runs: [`Self::never_runs`],
    /// or a generic function whose autodiff instance only code that never runs makes.
    pub(crate) fn findings_never_run(&self, g: &FnModel, file: &Path) -> bool {
        self.never_runs(g, file) || self.autodiff_only_from_dead(g, 0)
    }

    /// Whether every call that instantiates `g` with an autodiff backend is made by a function
    /// that never runs, or is itself such an instance (`depth` bounds the chain).
    fn autodiff_only_from_dead(&self, g: &FnModel, depth: usize) -> bool {
        let callers = g.autodiff_callers();
        !callers.is_empty()
            && depth < MAX_DEPTH
            && callers.iter().all(|&(fi, gi)| {
                self.graphs.get(fi).and_then(|(file, gs)| Some((file, gs.get(gi)?))).is_some_and(|(file, c)| {
                    self.never_runs(c, &file.path) || self.autodiff_only_from_dead(c, depth + 1)
                })
            })
    }

    /// Whether nothing can run `g` (defined in `file`), in a crate of binaries: a method of a
    /// type the crate defines and names only in its own definition, impls, imports and code that
    /// never runs, or a function (not a trait's method) that the crate names only in code that
    /// never runs (`dqn::run` when `main` calls only `ppo::run`).
    pub(crate) fn never_runs(&self, g: &FnModel, file: &Path) -> bool {
        if !self.binary || g.entry_point() {
            return false;
        }
        let user = User {
            ident: g.ident().to_string(),
            owner: g.owner_type().map(str::to_string),
            trait_impl: g.in_trait_impl(),
            entry: false,
            modules: file_module(file).into_iter().collect(),
        };
        let mut asking = Vec::new();
        self.user_never_runs(&user, &mut asking).0
    }

    /// Whether `u` never runs; and, when the answer assumed that of a question still open
    /// further up (a cycle of calls), the outermost such question's depth: the answer is kept
    /// only once that question is answered.
    fn user_never_runs(&self, u: &User, asking: &mut Vec<Asked>) -> (bool, Option<usize>) {
        if u.entry {
            return (false, None);
        }
        let mut assumed = None;
        if let Some(owner) = &u.owner {
            let (dead, a) = self.never_named(Asked::Type(owner.clone()), asking);
            assumed = outermost(assumed, a);
            if dead {
                return (true, assumed);
            }
        }
        if u.trait_impl {
            return (false, assumed);
        }
        let asked = Asked::Fn { name: u.ident.clone(), owner: u.owner.clone(), modules: u.modules.clone() };
        let (dead, a) = self.never_named(asked, asking);
        (dead, outermost(assumed, a))
    }

    /// Whether the crate names `asked` only where it cannot run; see [`Self::user_never_runs`]
    /// for the second value.
    fn never_named(&self, asked: Asked, asking: &mut Vec<Asked>) -> (bool, Option<usize>) {
        if let Some(depth) = asking.iter().position(|a| *a == asked) {
            // Named by itself through a cycle: the rest of the crate decides.
            return (true, Some(depth));
        }
        if asking.len() >= MAX_DEPTH {
            return (false, None);
        }
        if let Some(&known) = self.cache.lock().ok().as_ref().and_then(|c| c.get(&asked)) {
            return (known, None);
        }
        let Some(users) = self.users(&asked) else {
            return (false, None);
        };
        let depth = asking.len();
        asking.push(asked.clone());
        let (mut dead, mut assumed) = (true, None);
        for u in &users {
            let (d, a) = self.user_never_runs(u, asking);
            assumed = outermost(assumed, a);
            if !d {
                dead = false;
                break;
            }
        }
        asking.pop();
        let assumed = assumed.filter(|&at| at < depth);
        if assumed.is_none()
            && let Ok(mut c) = self.cache.lock()
        {
            c.insert(asked, dead);
        }
        (dead, assumed)
    }

    /// The functions of the crate that name `asked`; `None` when something else names it (a
    /// constant, a field's type, a file that does not parse), or a type the crate does not define.
    fn users(&self, asked: &Asked) -> Option<Vec<User>> {
        let (name, kind) = match asked {
            Asked::Type(t) => (t.as_str(), Kind::Type),
            Asked::Fn { name, owner, .. } => (name.as_str(), if owner.is_some() { Kind::Method } else { Kind::Fn }),
        };
        let mut scan = Scan { name, kind, ..Scan::default() };
        for file in self.files {
            if !contains_word(&file.text, name) {
                continue;
            }
            let (text, _) = crate::parseable_text(&file.text);
            let ast = syn::parse_file(&text).ok()?;
            scan.modules = file_module(&file.path).into_iter().collect();
            scan.visit_file(&ast);
            if scan.used_at_item_level {
                return None;
            }
        }
        if kind == Kind::Type && !scan.defined {
            return None;
        }
        if let Asked::Fn { modules, .. } = asked {
            // `m::run` names the `run` of module `m`: not this one when `m` is another of the
            // crate's files, and the crate imports no `run` (perhaps to re-export it) and not
            // everything of this function's module.
            let other =
                |m: &String| !modules.contains(m) && !scan.inline_modules.contains(m) && self.file_modules.contains(m);
            let glob = || {
                modules.iter().any(|m| {
                    let glob = format!("{m}::*");
                    self.files.iter().any(|f| f.text.contains(&glob))
                })
            };
            if scan.imported || !scan.qualified.iter().all(|(m, _)| other(m)) || glob() {
                for (_, u) in std::mem::take(&mut scan.qualified) {
                    if !scan.users.contains(&u) {
                        scan.users.push(u);
                    }
                }
            }
        }
        Some(scan.users)
    }
}

/// The outermost of two assumptions (see [`Reach::user_never_runs`]).
fn outermost(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// The module a file is, by its path: `src/dqn.rs` and `src/dqn/mod.rs` are `dqn`; a crate's
/// root (`main.rs`, `lib.rs`) and a binary of `src/bin` are none.
fn file_module(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    if stem == "mod" {
        return Some(path.parent()?.file_name()?.to_str()?.to_string());
    }
    let in_bin = path.parent().and_then(Path::file_name).is_some_and(|d| d == "bin");
    if in_bin || matches!(stem, "main" | "lib") {
        return None;
    }
    Some(stem.to_string())
}

#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Kind {
    Type,
    /// A function outside any `impl` or `trait`.
    #[default]
    Fn,
    Method,
}

/// Looks for uses of one name in the crate's files.
#[derive(Default)]
struct Scan<'n> {
    name: &'n str,
    kind: Kind,
    /// Named where no function of the crate decides whether it runs (an item's type, a
    /// constant, an attribute outside functions).
    used_at_item_level: bool,
    /// A struct, enum or union of that name is defined (types only).
    defined: bool,
    /// The functions that name it.
    users: Vec<User>,
    /// Paths `m::name` of a function, with the function they are in.
    qualified: Vec<(String, User)>,
    /// An import names it, or imports everything of a module (`use dqn::*`) beside it.
    imported: bool,
    /// The inline modules (`mod tests { .. }`) of the files seen.
    inline_modules: Vec<String>,
    /// The modules of the file being read, outermost first.
    modules: Vec<String>,
    /// The functions around the current node, innermost last.
    around: Vec<User>,
    /// The `impl` around the current node: its type and whether it implements a trait.
    in_impl: Option<(String, bool)>,
}

impl Scan<'_> {
    fn define(&mut self, ident: &syn::Ident) -> bool {
        if self.kind == Kind::Type && ident == self.name {
            self.defined = true;
            return true;
        }
        false
    }

    fn tokens_name_it(&self, tokens: proc_macro2::TokenStream) -> bool {
        tokens.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == self.name,
            proc_macro2::TokenTree::Group(g) => self.tokens_name_it(g.stream()),
            // `#[serde(default = "fresh_state")]`: a function named in a string.
            proc_macro2::TokenTree::Literal(l) => contains_word(&l.to_string(), self.name),
            proc_macro2::TokenTree::Punct(_) => false,
        })
    }

    /// A use of the name: by the function around it, or by an item when there is none.
    fn found(&mut self) {
        match self.around.last() {
            Some(u) => {
                if !self.users.contains(u) {
                    self.users.push(u.clone());
                }
            }
            None => self.used_at_item_level = true,
        }
    }

    fn function(&mut self, ident: &syn::Ident, attrs: &[syn::Attribute], entry: bool, body: impl FnOnce(&mut Self)) {
        let (owner, trait_impl) = match &self.in_impl {
            Some((t, tr)) => (Some(t.clone()), *tr),
            None => (None, false),
        };
        let entry = entry
            || attrs.iter().any(|a| crate::model::is_test_attr(a) || crate::model::registers(a))
            || (owner.is_none() && ident == "main");
        self.around.push(User { ident: ident.to_string(), owner, trait_impl, entry, modules: self.modules.clone() });
        body(self);
        self.around.pop();
    }
}

impl<'ast> Visit<'ast> for Scan<'_> {
    // Imports name a type or function without using it.
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        fn names(t: &syn::UseTree, name: &str) -> bool {
            match t {
                syn::UseTree::Path(p) => names(&p.tree, name),
                syn::UseTree::Name(n) => n.ident == name,
                syn::UseTree::Rename(r) => r.ident == name,
                syn::UseTree::Glob(_) => true,
                syn::UseTree::Group(g) => g.items.iter().any(|t| names(t, name)),
            }
        }
        if names(&u.tree, self.name) {
            self.imported = true;
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_some() {
            self.inline_modules.push(m.ident.to_string());
            self.modules.push(m.ident.to_string());
            syn::visit::visit_item_mod(self, m);
            self.modules.pop();
        }
    }

    fn visit_item_struct(&mut self, i: &'ast syn::ItemStruct) {
        if !self.define(&i.ident) {
            syn::visit::visit_item_struct(self, i);
        }
    }

    fn visit_item_enum(&mut self, i: &'ast syn::ItemEnum) {
        if !self.define(&i.ident) {
            syn::visit::visit_item_enum(self, i);
        }
    }

    fn visit_item_union(&mut self, i: &'ast syn::ItemUnion) {
        if !self.define(&i.ident) {
            syn::visit::visit_item_union(self, i);
        }
    }

    // A type's own impls (inherent or of a trait) do not make a value of it.
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let self_name = match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
            _ => None,
        };
        if self.kind == Kind::Type && self_name.as_deref() == Some(self.name) {
            return;
        }
        let outer = self.in_impl.take();
        self.in_impl = self_name.map(|n| (n, i.trait_.is_some()));
        syn::visit::visit_item_impl(self, i);
        self.in_impl = outer;
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let outer = self.in_impl.take();
        self.function(&f.sig.ident, &f.attrs, false, |s| syn::visit::visit_item_fn(s, f));
        self.in_impl = outer;
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(&f.sig.ident, &f.attrs, false, |s| syn::visit::visit_impl_item_fn(s, f));
    }

    // A trait's default body may be called through the trait by code outside the crate.
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        self.function(&f.sig.ident, &f.attrs, true, |s| syn::visit::visit_trait_item_fn(s, f));
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if let Some(at) = p.segments.iter().position(|s| s.ident == self.name) {
            let module = at.checked_sub(1).and_then(|k| p.segments.get(k)).map(|s| s.ident.to_string());
            match (self.kind, module, self.around.last()) {
                (Kind::Fn, Some(m), Some(u)) if !matches!(m.as_str(), "self" | "super" | "crate") => {
                    self.qualified.push((m, u.clone()));
                }
                _ => self.found(),
            }
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if self.kind == Kind::Method && m.method == self.name {
            self.found();
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if self.tokens_name_it(m.tokens.clone()) {
            self.found();
        }
        syn::visit::visit_macro(self, m);
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        let names = match &a.meta {
            syn::Meta::List(l) => self.tokens_name_it(l.tokens.clone()),
            syn::Meta::NameValue(nv) if !a.path().is_ident("doc") => {
                self.tokens_name_it(quote::ToTokens::to_token_stream(&nv.value))
            }
            _ => false,
        };
        if names {
            self.found();
        }
    }
}

/// Whether `name` occurs in `text` as a whole identifier.
fn contains_word(text: &str, name: &str) -> bool {
    let bytes = text.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    memchr::memmem::find_iter(bytes, name.as_bytes()).any(|at| {
        let end = at + name.len();
        (at == 0 || !ident(bytes[at - 1])) && (end == bytes.len() || !ident(bytes[end]))
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::contains_word;
    use crate::source::SourceFile;
    use crate::{Levels, Linter};

    const AGENT: &str = r#"
use tch::nn::OptimizerConfig;
pub struct Old {}
impl Old {
    pub fn train(&self, net: &dyn tch::nn::Module, opt: &mut tch::nn::Optimizer, xs: &[tch::Tensor]) {
        for x in xs {
            let loss = net.forward(x).mean(tch::Kind::Float);
            loss.backward();
            opt.step();
        }
    }
}
fn unused_helper(net: &dyn tch::nn::Module, opt: &mut tch::nn::Optimizer, xs: &[tch::Tensor]) {
    for x in xs {
        let loss = net.forward(x).mean(tch::Kind::Float);
        loss.backward();
        opt.step(); // memlint: allow(missing_zero_grad)
    }
}
pub fn used(net: &dyn tch::nn::Module, opt: &mut tch::nn::Optimizer, xs: &[tch::Tensor]) {
    for x in xs {
        let loss = net.forward(x).mean(tch::Kind::Float);
        loss.backward();
        opt.step();
    }
}
"#;

    /// The lines of the findings of the two files, `main.rs` calling `agent.rs`.
    fn lint(main: &str, binary: bool) -> Vec<(String, usize)> {
        let linter = Linter { binary, ..Linter::new(Levels::default()) };
        let files = [
            Arc::new(SourceFile::new(Path::new("src/main.rs"), main)),
            Arc::new(SourceFile::new(Path::new("src/agent.rs"), AGENT)),
        ];
        linter.lint_sources(&files, None).into_iter().map(|f| (f.rule.to_string(), f.line)).collect()
    }

    #[test]
    fn code_that_never_runs_is_not_reported() {
        let main = "mod agent;\nfn main() {\n    let (net, mut opt, xs) = setup();\n    agent::used(&net, &mut opt, &xs);\n}\n";
        // A binary: `Old` is never made and `unused_helper` never called; the allow comment in
        // the unused function is not reported as unused either.
        assert_eq!(lint(main, true), vec![("missing_zero_grad".to_string(), 24)]);
        // Not known to be binaries only (a library, or no manifest): everything may run.
        let lib = lint(main, false);
        assert_eq!(lib.iter().map(|(_, l)| *l).collect::<Vec<_>>(), vec![9, 24]);
        // Made in `main`: its method may run.
        let made = main.replace("agent::used(", "agent::Old {}.train(&net, &mut opt, &xs);\n    agent::used(");
        assert_eq!(lint(&made, true).len(), 2);
        // Called through a macro's tokens or as a function value: used.
        let in_macro =
            main.replace("agent::used(", "dbg!(agent::unused_helper(&net, &mut opt, &xs));\n    agent::used(");
        assert_eq!(lint(&in_macro, true).len(), 1, "the helper's own finding is allowed by its comment");
        let as_value =
            main.replace("agent::used(&net, &mut opt, &xs);", "let f = agent::used; f(&net, &mut opt, &xs);");
        assert_eq!(lint(&as_value, true).len(), 1);
    }

    /// The (file, line) of every finding of a binary made of `files`.
    fn lint_binary(files: &[(&str, &str)]) -> Vec<(String, usize)> {
        let linter = Linter { binary: true, ..Linter::new(Levels::default()) };
        let files: Vec<_> = files.iter().map(|(p, t)| Arc::new(SourceFile::new(Path::new(p), *t))).collect();
        let mut found: Vec<_> = linter
            .lint_sources(&files, None)
            .into_iter()
            .map(|f| (f.file.path.display().to_string(), f.line))
            .collect();
        found.sort();
        found
    }

    /// A tch loop that never clears gradients, in a function named `name`.
    fn leaky(name: &str) -> String {
        format!(
            "pub fn {name}(net: &dyn tch::nn::Module, opt: &mut tch::nn::Optimizer, xs: &[tch::Tensor]) {{\n    for x in xs {{\n        let loss = net.forward(x).mean(tch::Kind::Float);\n        loss.backward();\n        opt.step();\n    }}\n}}\n"
        )
    }

    #[test]
    fn code_named_only_by_code_that_never_runs_never_runs() {
        // `dqn::run` is never called: `main` runs `ppo::run` only. What only `dqn::run` calls
        // (`dqn::train`, the `Dqn` it makes) never runs either.
        let main = "mod dqn;\nmod ppo;\nfn main() {\n    ppo::run();\n}\n";
        let dqn = format!(
            "pub struct Dqn {{}}\nimpl Dqn {{\n    pub fn learn(&self) {{ crate::fit(); }}\n}}\npub fn run() {{\n    train();\n    Dqn {{}}.learn();\n}}\n{}",
            leaky("train")
        );
        let ppo = format!("pub fn run() {{\n    update();\n}}\n{}", leaky("update"));
        let found = lint_binary(&[("src/main.rs", main), ("src/dqn.rs", &dqn), ("src/ppo.rs", &ppo)]);
        assert_eq!(found, vec![("src/ppo.rs".to_string(), 8)]);
        // Once `main` calls `dqn::run`, all of it runs.
        let both = main.replace("ppo::run();", "ppo::run();\n    dqn::run();");
        let found = lint_binary(&[("src/main.rs", &both), ("src/dqn.rs", &dqn), ("src/ppo.rs", &ppo)]);
        assert_eq!(found.len(), 2, "{found:?}");
        // Imported by name, `run` may be either module's: both run.
        let imported = "mod dqn;\nmod ppo;\nuse dqn::run;\nfn main() {\n    run();\n    ppo::run();\n}\n";
        let found = lint_binary(&[("src/main.rs", imported), ("src/dqn.rs", &dqn), ("src/ppo.rs", &ppo)]);
        assert_eq!(found.len(), 2, "{found:?}");
        // Re-exported from another module (`pub use crate::dqn::*;` in `algos`): `algos::run` may
        // be `dqn::run`.
        let algos = "pub use crate::dqn::*;\n";
        let via = "mod algos;\nmod dqn;\nmod ppo;\nfn main() {\n    algos::run();\n    ppo::run();\n}\n";
        let found =
            lint_binary(&[("src/main.rs", via), ("src/algos.rs", algos), ("src/dqn.rs", &dqn), ("src/ppo.rs", &ppo)]);
        assert_eq!(found.len(), 2, "{found:?}");
    }

    #[test]
    fn functions_that_call_each_other_run_when_one_is_called() {
        // `a` and `b` call each other and nothing else calls either: neither runs.
        let a = format!(
            "pub fn a(n: u32) {{\n    if n > 0 {{ b(n - 1); }}\n    train();\n}}\npub fn b(n: u32) {{\n    a(n);\n}}\n{}",
            leaky("train")
        );
        let main = "mod a;\nfn main() {}\n";
        assert!(lint_binary(&[("src/main.rs", main), ("src/a.rs", &a)]).is_empty());
        // `main` calls `b`: `b` calls `a`, which calls `train`.
        let calls = "mod a;\nfn main() {\n    a::b(3);\n}\n";
        assert_eq!(lint_binary(&[("src/main.rs", calls), ("src/a.rs", &a)]).len(), 1);
        // Named by a test: tests run.
        let tested = format!("{a}#[test]\nfn t() {{\n    b(1);\n}}\n");
        assert_eq!(lint_binary(&[("src/main.rs", main), ("src/a.rs", &tested)]).len(), 1);
        // Named in a constant (a table of functions): it may run.
        let table = format!("{a}pub const STEPS: &[fn(u32)] = &[b];\n");
        assert_eq!(lint_binary(&[("src/main.rs", main), ("src/a.rs", &table)]).len(), 1);
    }

    #[test]
    fn an_autodiff_instance_made_only_by_code_that_never_runs_never_runs() {
        // `sample` runs on the inner backend (`model.valid()`) from `main`; only the old
        // `warmup_samples_v1`, which nothing calls, hands it the autodiff training model.
        let main = r#"
mod sampler;
use burn::backend::{Autodiff, NdArray};
type Train = Autodiff<NdArray>;
fn main() {
    let dev = Default::default();
    let model: Net<Train> = train(&dev);
    let samples = sampler::sample(&model.valid(), 100);
    println!("{samples:?}");
}
fn warmup_samples_v1(model: &Net<Train>) {
    sampler::sample(model, 10);
}
"#;
        let sampler = r#"
use burn::tensor::backend::Backend;
pub fn sample<B: Backend>(model: &Net<B>, n: usize) -> Vec<f32> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(model.forward(x(i)).into_scalar());
    }
    out
}
"#;
        assert!(lint_binary(&[("src/main.rs", main), ("src/sampler.rs", sampler)]).is_empty());
        // Called from `main`, it runs: the sampler runs on the autodiff model.
        let called = main.replace("    println!(", "    warmup_samples_v1(&model);\n    println!(");
        assert_eq!(lint_binary(&[("src/main.rs", &called), ("src/sampler.rs", sampler)]).len(), 1);
    }

    #[test]
    fn words_are_whole_identifiers() {
        assert!(contains_word("let a = Dqn::new();", "Dqn"));
        assert!(!contains_word("let a = DqnAgent::new();", "Dqn"));
        assert!(!contains_word("let a = MyDqn::new();", "Dqn"));
        assert!(contains_word("Dqn", "Dqn"));
    }
}
