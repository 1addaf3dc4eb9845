//! Code that never runs in a crate of binaries only: functions that nothing in the crate calls,
//! and methods of types that nothing in the crate names (what rustc's `dead_code` lint warns
//! of). A leak there costs nothing until someone calls it, so findings in it are not reported.
//! A library's items may be used by other crates: nothing is decided there.
//!
//! Asked only of functions with a finding: the crate's texts are searched for the name, and the
//! files that hold it are parsed again. Every doubt counts as a use: a name in a macro's tokens
//! or an attribute, a method call of the same name on any value, a file that does not parse.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use syn::visit::Visit;

use crate::model::FnModel;
use crate::source::SourceFile;

/// What the crate's files say of the names asked about, cached per name.
pub(crate) struct Reach<'a> {
    files: &'a [Arc<SourceFile>],
    /// The crate has binary targets only (see [`crate::Linter::binary`]).
    binary: bool,
    types: Mutex<HashMap<String, bool>>,
    fns: Mutex<HashMap<String, bool>>,
}

impl<'a> Reach<'a> {
    pub(crate) fn new(files: &'a [Arc<SourceFile>], binary: bool) -> Self {
        Self { files, binary, types: Mutex::default(), fns: Mutex::default() }
    }

    /// Whether nothing can run `g`, in a crate of binaries: a method of a type the crate defines
    /// and never names outside its own definition, impls and imports, or a function (not a
    /// trait's method) that the crate never names outside its definition.
    pub(crate) fn never_runs(&self, g: &FnModel) -> bool {
        if !self.binary || g.entry_point() {
            return false;
        }
        if let Some(owner) = g.owner_type()
            && self.cached(&self.types, owner, || self.unused(owner, Kind::Type))
        {
            return true;
        }
        if g.in_trait_impl() {
            return false;
        }
        self.cached(&self.fns, g.ident(), || self.unused(g.ident(), Kind::Fn))
    }

    fn cached(&self, cache: &Mutex<HashMap<String, bool>>, name: &str, compute: impl FnOnce() -> bool) -> bool {
        if let Some(&known) = cache.lock().ok().as_ref().and_then(|c| c.get(name)) {
            return known;
        }
        let answer = compute();
        if let Ok(mut c) = cache.lock() {
            c.insert(name.to_string(), answer);
        }
        answer
    }

    /// Whether no file names `name` (see [`Reach::never_runs`]); a type must also be defined in
    /// the crate.
    fn unused(&self, name: &str, kind: Kind) -> bool {
        let mut scan = Scan { name, kind, used: false, defined: false };
        for file in self.files {
            if !contains_word(&file.text, name) {
                continue;
            }
            let (text, _) = crate::parseable_text(&file.text);
            match syn::parse_file(&text) {
                Ok(ast) => scan.visit_file(&ast),
                Err(_) => return false,
            }
            if scan.used {
                return false;
            }
        }
        match kind {
            Kind::Fn => true,
            Kind::Type => scan.defined,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Type,
    Fn,
}

/// Looks for uses of one name in a file.
struct Scan<'n> {
    name: &'n str,
    kind: Kind,
    used: bool,
    /// A struct, enum or union of that name is defined (types only).
    defined: bool,
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
}

impl<'ast> Visit<'ast> for Scan<'_> {
    // Imports name a type or function without using it.
    fn visit_item_use(&mut self, _: &'ast syn::ItemUse) {}

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
        let own = self.kind == Kind::Type
            && matches!(&*i.self_ty, syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == self.name));
        if !own {
            syn::visit::visit_item_impl(self, i);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.segments.iter().any(|s| s.ident == self.name) {
            self.used = true;
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if self.kind == Kind::Fn && m.method == self.name {
            self.used = true;
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if self.tokens_name_it(m.tokens.clone()) {
            self.used = true;
        }
        syn::visit::visit_macro(self, m);
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        if let syn::Meta::List(l) = &a.meta
            && self.tokens_name_it(l.tokens.clone())
        {
            self.used = true;
        }
        if let syn::Meta::NameValue(nv) = &a.meta
            && !a.path().is_ident("doc")
            && self.tokens_name_it(quote::ToTokens::to_token_stream(&nv.value))
        {
            self.used = true;
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

    #[test]
    fn words_are_whole_identifiers() {
        assert!(contains_word("let a = Dqn::new();", "Dqn"));
        assert!(!contains_word("let a = DqnAgent::new();", "Dqn"));
        assert!(!contains_word("let a = MyDqn::new();", "Dqn"));
        assert!(contains_word("Dqn", "Dqn"));
    }
}
