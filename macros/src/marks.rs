//! Marks inside the sampled loop's body: after each statement that ends a phase of a training
//! step (forward, loss, backward, step, clear — the static engine's framework tables decide),
//! or after every statement with `#[mem_guard(lines)]`, a call `guard.mark(i)` that reads memory.

use std::collections::BTreeSet;

use memlint_lint::Framework;
use memlint_lint::frameworks::phase::{Phase, function_phases, method_phases};
use proc_macro2::TokenStream;
use quote::quote;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::{Block, Expr, Ident, Stmt, parse_quote};

/// One generated mark, as embedded in the `Options` of the site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkSpec {
    /// 1-based line of the statement.
    pub line: u32,
    /// Phases it ends, joined by `+`, or empty.
    pub phase: String,
    /// Its first source line, trimmed.
    pub code: String,
}

impl MarkSpec {
    /// `::memlint::__private::Mark { .. }`.
    pub fn tokens(&self) -> TokenStream {
        let (line, phase, code) = (self.line, &self.phase, &self.code);
        quote!(::memlint::__private::Mark { line: #line, phase: #phase, code: #code })
    }
}

/// Inserts `guard.mark(i)` after the statements of `body` that end a phase (every statement
/// when `lines`); `source` is the file's text (for the `code` column). Returns the marks.
/// `framework` is the file's (every framework's call names when unknown).
pub fn instrument(
    body: &mut Block,
    guard: &Ident,
    lines: bool,
    source: Option<&str>,
    framework: Option<Framework>,
) -> Vec<MarkSpec> {
    let mut marks = Vec::new();
    let old = std::mem::take(&mut body.stmts);
    let count = old.len();
    for (index, mut stmt) in old.into_iter().enumerate() {
        let phases = statement_phases(&stmt, framework);
        let wanted = (lines || !phases.is_empty()) && markable(&stmt);
        if wanted && index + 1 == count {
            // The body's tail expression is `()`: a semicolon keeps it so.
            if let Stmt::Expr(_, semi @ None) = &mut stmt {
                *semi = Some(Default::default());
            }
        }
        let line = stmt.span().start().line;
        body.stmts.push(stmt);
        if wanted {
            let mark = marks.len() as u32;
            body.stmts.push(parse_quote!(#guard.mark(#mark);));
            let phase = phases.iter().map(|p| p.name()).collect::<Vec<_>>().join("+");
            marks.push(MarkSpec { line: line as u32, phase, code: source_line(source, line) });
        }
    }
    marks
}

/// Statements after which a mark is reachable and meaningful: not items, not a bare
/// `break`/`continue`/`return` or a panicking macro (code after them would be unreachable).
fn markable(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Item(_) => false,
        Stmt::Expr(Expr::Break(_) | Expr::Continue(_) | Expr::Return(_), _) => false,
        Stmt::Macro(m) => !m.mac.path.segments.last().is_some_and(|s| {
            matches!(s.ident.to_string().as_str(), "panic" | "unreachable" | "todo" | "unimplemented")
        }),
        _ => true,
    }
}

/// The phases a statement runs, in step order.
fn statement_phases(stmt: &Stmt, framework: Option<Framework>) -> Vec<Phase> {
    struct Calls(BTreeSet<Phase>, Option<Framework>);
    impl<'ast> Visit<'ast> for Calls {
        fn visit_expr_method_call(&mut self, node: &'ast syn::ExprMethodCall) {
            self.0.extend(method_phases(&node.method.to_string(), node.args.len(), self.1));
            visit::visit_expr_method_call(self, node);
        }
        fn visit_expr_call(&mut self, node: &'ast syn::ExprCall) {
            if let Expr::Path(path) = &*node.func
                && let Some(last) = path.path.segments.last()
            {
                self.0.extend(function_phases(&last.ident.to_string(), node.args.len(), self.1));
            }
            visit::visit_expr_call(self, node);
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut calls = Calls(BTreeSet::new(), framework);
    calls.visit_stmt(stmt);
    calls.0.into_iter().collect()
}

/// Line `line` (1-based) of `source`, trimmed and cut to 80 characters.
fn source_line(source: Option<&str>, line: usize) -> String {
    let Some(text) = source.and_then(|s| s.lines().nth(line.wrapping_sub(1))) else {
        return String::new();
    };
    let text = text.trim();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(body: Block, lines: bool) -> (Vec<String>, Vec<(String, String)>) {
        let mut body = body;
        let guard = Ident::new("g", proc_macro2::Span::call_site());
        let marks = instrument(&mut body, &guard, lines, None, Framework::from_name("candle"));
        let stmts = body.stmts.iter().map(|s| quote!(#s).to_string()).collect();
        (stmts, marks.into_iter().map(|m| (m.phase, m.code)).collect())
    }

    #[test]
    fn phases_are_marked_after_their_statements() {
        let body: Block = parse_quote!({
            let (xs, ys) = batch()?;
            let logits = model.forward(&xs)?;
            let loss = loss::cross_entropy(&logits, &ys)?;
            opt.backward_step(&loss)?;
            total = (total + &loss)?
        });
        let (stmts, marks) = run(body.clone(), false);
        let phases: Vec<&str> = marks.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(phases, ["forward", "loss", "backward+step"]);
        assert_eq!(stmts.len(), 8);
        assert_eq!(stmts[2], "g . mark (0u32) ;");
        assert_eq!(stmts[6], "g . mark (2u32) ;");

        let (stmts, marks) = run(body, true);
        assert_eq!(marks.len(), 5);
        assert_eq!(marks[0].0, "");
        // The tail expression got a semicolon so that the mark after it keeps the body `()`.
        assert_eq!(stmts[8], "total = (total + & loss) ? ;");
        assert_eq!(stmts[9], "g . mark (4u32) ;");
    }

    #[test]
    fn diverging_statements_and_items_are_not_marked() {
        let body: Block = parse_quote!({
            fn helper() {}
            let y = m.forward(&x)?;
            if done {
                break;
            }
            continue;
        });
        let (stmts, marks) = run(body, true);
        assert_eq!(marks.len(), 2);
        assert_eq!(stmts.last().unwrap(), "continue ;");
    }

    #[test]
    fn code_comes_from_the_source_line() {
        assert_eq!(source_line(Some("a\n    let x = 1;\n"), 2), "let x = 1;");
        assert_eq!(source_line(None, 2), "");
        assert_eq!(source_line(Some("a"), 5), "");
    }
}
