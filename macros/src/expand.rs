//! Code generation of `#[mem_guard]`: find the sampled loop, embed the static findings, wrap.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Error, Expr, ExprBreak, Ident, ItemFn, Label, Result, Stmt, parse_quote};

use crate::args::{Args, Device, Horizon};
use crate::marks::{MarkSpec, instrument};

/// Expands `#[mem_guard(args)]` on `item`.
pub fn expand(args: Args, item: TokenStream) -> Result<TokenStream> {
    let mut function: ItemFn = syn::parse2(item)
        .map_err(|e| Error::new(e.span(), "#[mem_guard] applies to functions and methods with a body"))?;
    if let Some(constness) = &function.sig.constness {
        return Err(Error::new(
            constness.span(),
            "#[mem_guard] cannot guard a `const fn`: sampling memory is not possible at compile time",
        ));
    }
    let name = function.sig.ident.to_string();
    let guard = Ident::new("__memlint_guard", Span::mixed_site());

    let mut collector = Collector::default();
    collector.visit_block_mut(&mut function.block);
    let target = choose_loop(&collector.loops, args.loop_label.as_ref(), &name)?;

    let fn_line = function.sig.fn_token.span().start().line;
    let end_line = function.block.brace_token.span.close().start().line;
    let first_line = Span::call_site().start().line.min(fn_line);
    let (source_path, findings, framework) = static_findings(first_line, end_line.max(fn_line));
    let source_text = Span::call_site().local_file().and_then(|p| std::fs::read_to_string(p).ok());
    let findings = findings.iter().map(|f| {
        let (rule, line, message) = (&f.rule, f.line as u32, &f.message);
        quote!(::memlint::__private::StaticFinding { rule: #rule, line: #line, message: #message })
    });

    let mut marks = Vec::new();
    let loop_at = match target {
        Some(index) => {
            let found = &collector.loops[index];
            let (line, column) = (found.line as u32, found.column as u32 + 1);
            let mut rewriter = Rewriter {
                target: index,
                next: 0,
                guard: guard.clone(),
                lines: args.lines.unwrap_or(false),
                source: source_text,
                framework,
                marks: Vec::new(),
            };
            rewriter.visit_block_mut(&mut function.block);
            marks = rewriter.marks;
            quote!(::core::option::Option::Some((#line, #column)))
        }
        None => quote!(::core::option::Option::None),
    };
    let options = options(&args, &marks);
    let fn_line = fn_line as u32;
    let site = quote_spanned! {Span::mixed_site()=>
        static __MEMLINT_SITE: ::memlint::__private::Site = ::memlint::__private::Site {
            function: #name,
            file: ::core::file!(),
            source_path: #source_path,
            line: #fn_line,
            loop_at: #loop_at,
            options: #options,
            static_findings: &[#(#findings),*],
        };
    };
    let prologue: Vec<Stmt> = if target.is_some() {
        parse_quote! {
            #site
            let mut #guard = ::memlint::__private::Guard::enter(&__MEMLINT_SITE);
        }
    } else {
        let call = Ident::new("__memlint_call", Span::mixed_site());
        parse_quote! {
            #site
            static __MEMLINT_STATE: ::memlint::__private::SiteState =
                ::memlint::__private::SiteState::new(&__MEMLINT_SITE);
            let #call = ::memlint::__private::CallScope::enter(&__MEMLINT_STATE);
        }
    };
    function.block.stmts.splice(0..0, prologue);
    if args.loop_label.is_some() {
        // The label names the loop for the guard: nothing need break to it, and rustc's
        // `unused_labels` would otherwise warn about the label the user wrote for us.
        function.attrs.push(parse_quote!(#[allow(unused_labels)]));
    }
    Ok(function.into_token_stream())
}

fn options(args: &Args, marks: &[MarkSpec]) -> TokenStream {
    let mut fields = Vec::new();
    if !marks.is_empty() {
        let marks = marks.iter().map(MarkSpec::tokens);
        fields.push(quote!(marks: &[#(#marks),*],));
    }
    if args.lines == Some(true) {
        fields.push(quote!(lines: true,));
    }
    if let Some(n) = args.warmup {
        fields.push(quote!(warmup: #n,));
    }
    if let Some(n) = args.window {
        let n = n as usize;
        fields.push(quote!(window: #n,));
    }
    if let Some(n) = args.tolerance {
        fields.push(quote!(tolerance_bytes: #n,));
    }
    if let Some(horizon) = args.horizon {
        let value = match horizon {
            Horizon::Iterations(n) => quote!(Iterations(#n)),
            Horizon::Seconds(s) => quote!(Seconds(#s)),
        };
        fields.push(quote!(horizon: ::memlint::__private::HorizonSpec::#value,));
    }
    if let Some(n) = args.budget {
        fields.push(quote!(budget_bytes: ::core::option::Option::Some(#n),));
    }
    if let Some(panic) = args.on_leak_panic {
        let value = if panic { quote!(Panic) } else { quote!(Warn) };
        fields.push(quote!(on_leak: ::memlint::__private::OnLeak::#value,));
    }
    if let Some(device) = args.device {
        let value = match device {
            Device::Auto => quote!(Auto),
            Device::Host => quote!(Host),
            Device::Cuda(n) => quote!(Cuda(#n)),
        };
        fields.push(quote!(device: ::memlint::__private::DeviceChoice::#value,));
    }
    if let Some(path) = &args.report {
        fields.push(quote!(report: ::core::option::Option::Some(#path),));
    }
    if let Some(name) = args.source.as_deref().filter(|n| *n != "auto") {
        fields.push(quote!(source: ::core::option::Option::Some(#name),));
    }
    quote!(::memlint::__private::Options { #(#fields)* ..::memlint::__private::Options::DEFAULT })
}

/// Runs the static engine on the guarded function's file and keeps the findings between
/// `first` and `last` (1-based lines). Also returns the file's path for the runtime snippet and
/// the file's framework (for the phase marks).
fn static_findings(first: usize, last: usize) -> (String, Vec<memlint_lint::Finding>, Option<memlint_lint::Framework>) {
    let Some(path) = Span::call_site().local_file() else {
        return (String::new(), Vec::new(), None);
    };
    let absolute = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let Ok(text) = std::fs::read_to_string(&path) else {
        return (absolute.display().to_string(), Vec::new(), None);
    };
    // The engine parses plain text with proc-macro2, which inside a macro would hand its spans to
    // the compiler's bridge (and panic on the engine's span bookkeeping): force proc-macro2's own
    // implementation while it runs, on a separate thread so that a panic in the engine costs only
    // the findings. Every compiler span this macro needs was read above; tokens are built after.
    proc_macro2::fallback::force();
    let linted = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let framework = syn::parse_file(&text).ok().and_then(|f| memlint_lint::frameworks::detect(&f));
                (memlint_lint::lint_source(&path, &text), framework)
            })
            .join()
    });
    proc_macro2::fallback::unforce();
    let (linted, framework) = linted.unwrap_or_default();
    let mut findings: Vec<_> = linted
        .into_iter()
        .filter(|f| f.line >= first && f.line <= last && !matches!(f.rule, "parse_error" | "unused_suppression"))
        .collect();
    findings.sort_by_key(|f| (f.line, f.column));
    findings.dedup_by(|a, b| a.line == b.line && a.rule == b.rule);
    (absolute.display().to_string(), findings, framework)
}

/// A loop of the function body (not inside a closure, async block or nested item).
#[derive(Debug)]
struct FoundLoop {
    label: Option<String>,
    span: Span,
    line: usize,
    /// 0-based column.
    column: usize,
    /// Its body (or a nested loop's) calls backward / an optimizer step.
    trains: bool,
    /// Index of the enclosing loop.
    parent: Option<usize>,
    /// Inside a closure or async block (cannot be sampled).
    in_closure: bool,
}

/// Collects the loops in pre-order (the order [`Rewriter`] counts them in).
#[derive(Default)]
struct Collector {
    loops: Vec<FoundLoop>,
    /// Enclosing loops (indices), innermost last.
    stack: Vec<usize>,
    closure_depth: usize,
}

impl Collector {
    fn enter(&mut self, label: Option<&Label>, keyword: Span) -> usize {
        let start = label.map_or(keyword, |l| l.name.apostrophe).start();
        self.loops.push(FoundLoop {
            label: label.map(|l| l.name.ident.to_string()),
            span: label.map_or(keyword, |l| l.name.span()),
            line: start.line,
            column: start.column,
            trains: false,
            parent: self.stack.last().copied(),
            in_closure: self.closure_depth > 0,
        });
        self.loops.len() - 1
    }

    fn training_call(&mut self) {
        for &i in &self.stack {
            self.loops[i].trains = true;
        }
    }
}

impl VisitMut for Collector {
    fn visit_expr_for_loop_mut(&mut self, node: &mut syn::ExprForLoop) {
        self.visit_expr_mut(&mut node.expr);
        let index = self.enter(node.label.as_ref(), node.for_token.span());
        self.stack.push(index);
        self.visit_block_mut(&mut node.body);
        self.stack.pop();
    }

    fn visit_expr_while_mut(&mut self, node: &mut syn::ExprWhile) {
        let index = self.enter(node.label.as_ref(), node.while_token.span());
        self.stack.push(index);
        self.visit_expr_mut(&mut node.cond);
        self.visit_block_mut(&mut node.body);
        self.stack.pop();
    }

    fn visit_expr_loop_mut(&mut self, node: &mut syn::ExprLoop) {
        let index = self.enter(node.label.as_ref(), node.loop_token.span());
        self.stack.push(index);
        self.visit_block_mut(&mut node.body);
        self.stack.pop();
    }

    fn visit_expr_method_call_mut(&mut self, node: &mut syn::ExprMethodCall) {
        if memlint_lint::frameworks::is_training_call(&node.method.to_string()) {
            self.training_call();
        }
        visit_mut::visit_expr_method_call_mut(self, node);
    }

    fn visit_expr_call_mut(&mut self, node: &mut syn::ExprCall) {
        if let Expr::Path(path) = &*node.func
            && let Some(last) = path.path.segments.last()
            && memlint_lint::frameworks::is_training_call(&last.ident.to_string())
        {
            self.training_call();
        }
        visit_mut::visit_expr_call_mut(self, node);
    }

    fn visit_expr_closure_mut(&mut self, node: &mut syn::ExprClosure) {
        self.closure_depth += 1;
        visit_mut::visit_expr_closure_mut(self, node);
        self.closure_depth -= 1;
    }

    fn visit_expr_async_mut(&mut self, node: &mut syn::ExprAsync) {
        self.closure_depth += 1;
        visit_mut::visit_expr_async_mut(self, node);
        self.closure_depth -= 1;
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {
        // Nested items are separate functions: not part of the guarded body.
    }
}

/// Picks the loop to sample: the labelled one, else the innermost loop that trains.
/// `None` = sample once per call.
fn choose_loop(loops: &[FoundLoop], label: Option<&(String, Span)>, function: &str) -> Result<Option<usize>> {
    if let Some((label, span)) = label {
        let Some(index) = loops.iter().position(|l| l.label.as_deref() == Some(label.as_str())) else {
            let known: Vec<String> = loops.iter().filter_map(|l| l.label.as_ref().map(|n| format!("'{n}"))).collect();
            let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            return Err(Error::new(
                *span,
                format!("no loop labelled `'{label}` in `{function}` (labelled loops: {known})"),
            ));
        };
        if loops[index].in_closure {
            return Err(Error::new(
                loops[index].span,
                format!(
                    "#[mem_guard] cannot sample `'{label}`: it is inside a closure or async block; label a loop of the function body itself"
                ),
            ));
        }
        return Ok(Some(index));
    }
    let candidates: Vec<usize> = (0..loops.len())
        .filter(|&i| {
            let l = &loops[i];
            l.trains && !l.in_closure && !loops.iter().any(|c| c.parent == Some(i) && c.trains && !c.in_closure)
        })
        .collect();
    match candidates.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        [first, second, ..] => {
            let mut error = Error::new(
                loops[*second].span,
                format!(
                    "`{function}` has several loops that run a training step (lines {}); choose one with #[mem_guard(loop = \"label\")]",
                    candidates.iter().map(|&i| loops[i].line.to_string()).collect::<Vec<_>>().join(", ")
                ),
            );
            error.combine(Error::new(loops[*first].span, "first training loop"));
            Err(error)
        }
    }
}

/// Inserts the tick at the start of the target loop's body and the loop-exit call after it.
struct Rewriter {
    target: usize,
    next: usize,
    guard: Ident,
    /// `#[mem_guard(lines)]`.
    lines: bool,
    /// The file's text, for the marks' `code`.
    source: Option<String>,
    /// The marks inserted in the target loop's body.
    marks: Vec<MarkSpec>,
    /// The file's framework, when detected.
    framework: Option<memlint_lint::Framework>,
}

impl Rewriter {
    /// Whether this loop is the target (counting loops in the collector's order).
    fn is_target(&mut self) -> bool {
        let index = self.next;
        self.next += 1;
        index == self.target
    }

    fn instrument_body(&mut self, body: &mut Block) {
        let guard = &self.guard;
        self.marks = instrument(body, guard, self.lines, self.source.as_deref(), self.framework);
        body.stmts.insert(0, parse_quote!(#guard.tick();));
    }

    /// `{ loop; guard.loop_exit(); }`, or with the loop's value kept when it breaks with one.
    fn wrap(&self, expr: &Expr, exits: Exits) -> Expr {
        let guard = &self.guard;
        match exits {
            Exits::Never => expr.clone(),
            Exits::Unit => parse_quote!({ #expr; #guard.loop_exit(); }),
            Exits::Value => {
                let value = Ident::new("__memlint_value", Span::mixed_site());
                parse_quote!({ let #value = #expr; #guard.loop_exit(); #value })
            }
        }
    }
}

/// How a loop can finish normally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exits {
    /// `loop` without a `break` for it: only `return`/`?`/panic leave it.
    Never,
    /// Finishes with `()`.
    Unit,
    /// `loop` with `break value`.
    Value,
}

impl VisitMut for Rewriter {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        let exits = match expr {
            Expr::ForLoop(node) => {
                self.visit_expr_mut(&mut node.expr);
                let target = self.is_target();
                self.visit_block_mut(&mut node.body);
                if !target {
                    return;
                }
                self.instrument_body(&mut node.body);
                Exits::Unit
            }
            Expr::While(node) => {
                let target = self.is_target();
                self.visit_expr_mut(&mut node.cond);
                self.visit_block_mut(&mut node.body);
                if !target {
                    return;
                }
                self.instrument_body(&mut node.body);
                Exits::Unit
            }
            Expr::Loop(node) => {
                let target = self.is_target();
                self.visit_block_mut(&mut node.body);
                if !target {
                    return;
                }
                let label = node.label.as_ref().map(|l| l.name.ident.to_string());
                let mut breaks = BreakFinder { label, depth: 0, found: None };
                breaks.visit_block_mut(&mut node.body);
                self.instrument_body(&mut node.body);
                breaks.found.unwrap_or(Exits::Never)
            }
            _ => {
                visit_mut::visit_expr_mut(self, expr);
                return;
            }
        };
        *expr = self.wrap(expr, exits);
    }

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}

/// Finds the `break`s that leave a given `loop`: unlabelled ones outside nested loops, or ones
/// naming its label.
struct BreakFinder {
    label: Option<String>,
    /// Nesting depth of inner loops.
    depth: usize,
    found: Option<Exits>,
}

impl BreakFinder {
    fn nested(&mut self, f: impl FnOnce(&mut Self)) {
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }
}

impl VisitMut for BreakFinder {
    fn visit_expr_break_mut(&mut self, node: &mut ExprBreak) {
        let ours = match &node.label {
            Some(l) => self.label.as_deref() == Some(l.ident.to_string().as_str()),
            None => self.depth == 0,
        };
        if ours {
            let exits = if node.expr.is_some() { Exits::Value } else { Exits::Unit };
            self.found = Some(match self.found {
                Some(Exits::Value) => Exits::Value,
                _ => exits,
            });
        }
        visit_mut::visit_expr_break_mut(self, node);
    }

    fn visit_expr_for_loop_mut(&mut self, node: &mut syn::ExprForLoop) {
        self.nested(|s| visit_mut::visit_expr_for_loop_mut(s, node));
    }

    fn visit_expr_while_mut(&mut self, node: &mut syn::ExprWhile) {
        self.nested(|s| visit_mut::visit_expr_while_mut(s, node));
    }

    fn visit_expr_loop_mut(&mut self, node: &mut syn::ExprLoop) {
        self.nested(|s| visit_mut::visit_expr_loop_mut(s, node));
    }

    fn visit_expr_block_mut(&mut self, node: &mut syn::ExprBlock) {
        // A labelled block's unlabelled breaks are errors anyway; labelled ones are checked by name.
        visit_mut::visit_expr_block_mut(self, node);
    }

    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}

    fn visit_expr_async_mut(&mut self, _: &mut syn::ExprAsync) {}

    fn visit_item_mut(&mut self, _: &mut syn::Item) {}
}
