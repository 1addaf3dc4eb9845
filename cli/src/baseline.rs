//! Fingerprints and baselines: `--write-baseline FILE` records today's findings,
//! `--baseline FILE` then reports only findings that are not in it.
//!
//! A fingerprint hashes the rule, the file (relative to the workspace root), the primary span's
//! line(s) with whitespace collapsed and the name of the enclosing function — never a line
//! number — so findings keep their fingerprint when unrelated lines are added above them or the
//! code is re-indented. Identical findings in one file are told apart by their order.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use memlint_lint::Finding;

/// Version of the fingerprint recipe; a baseline written with another one is rejected.
pub const FINGERPRINT_VERSION: u32 = 1;

/// The fingerprint of each finding, in order. `relative` maps a finding's path to the path
/// recorded (relative to the workspace root, with `/`). Must run on a thread with a large stack
/// ([`memlint_lint::PARSE_STACK_SIZE`]): it parses the files with findings to find enclosing functions.
pub fn fingerprints(findings: &[&Finding], relative: impl Fn(&Path) -> String) -> Vec<String> {
    let mut functions: HashMap<&Path, Vec<(std::ops::Range<usize>, String)>> = HashMap::new();
    let mut seen: HashMap<u64, usize> = HashMap::new();
    findings
        .iter()
        .map(|f| {
            let fns = functions.entry(f.file.path.as_path()).or_insert_with(|| function_spans(&f.file.text));
            let enclosing = fns
                .iter()
                .filter(|(r, _)| r.start <= f.primary.span.start && f.primary.span.start < r.end)
                .min_by_key(|(r, _)| r.end - r.start)
                .map_or("", |(_, name)| name.as_str());
            let (first, _) = f.file.line_col(f.primary.span.start);
            let (last, _) = f.file.line_col(f.primary.span.end.max(f.primary.span.start));
            let text: String =
                (first..=last).map(|l| &f.file.text[f.file.line_range(l)]).flat_map(str::split_whitespace).collect();
            let key = fnv1a(&[f.rule, &relative(&f.file.path), enclosing, &text]);
            let n = seen.entry(key).or_insert(0);
            *n += 1;
            format!("{key:016x}:{n}")
        })
        .collect()
}

/// Byte ranges and names (`fit`, `Trainer::step`) of the functions and methods in a file.
fn function_spans(text: &str) -> Vec<(std::ops::Range<usize>, String)> {
    use syn::spanned::Spanned;
    use syn::visit::Visit;

    struct Collector {
        owner: Vec<String>,
        out: Vec<(std::ops::Range<usize>, String)>,
        offset: usize,
    }
    impl Collector {
        fn push(&mut self, span: proc_macro2::Span, name: String) {
            let r = span.byte_range();
            let qualified = match self.owner.last() {
                Some(o) => format!("{o}::{name}"),
                None => name,
            };
            self.out.push((r.start + self.offset..r.end + self.offset, qualified));
        }
    }
    impl<'ast> Visit<'ast> for Collector {
        fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
            self.push(i.span(), i.sig.ident.to_string());
            syn::visit::visit_item_fn(self, i);
        }
        fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
            let ty = match &*i.self_ty {
                syn::Type::Path(p) => p.path.segments.last().map_or(String::new(), |s| s.ident.to_string()),
                _ => String::new(),
            };
            self.owner.push(ty);
            syn::visit::visit_item_impl(self, i);
            self.owner.pop();
        }
        fn visit_item_trait(&mut self, i: &'ast syn::ItemTrait) {
            self.owner.push(i.ident.to_string());
            syn::visit::visit_item_trait(self, i);
            self.owner.pop();
        }
        fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
            self.push(i.span(), i.sig.ident.to_string());
            syn::visit::visit_impl_item_fn(self, i);
        }
        fn visit_trait_item_fn(&mut self, i: &'ast syn::TraitItemFn) {
            self.push(i.span(), i.sig.ident.to_string());
            syn::visit::visit_trait_item_fn(self, i);
        }
    }

    let (body, offset) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (rest, 3),
        None => (text, 0),
    };
    let mut c = Collector { owner: Vec::new(), out: Vec::new(), offset };
    if let Ok(file) = syn::parse_str::<syn::File>(body) {
        c.visit_file(&file);
    }
    proc_macro2::extra::invalidate_current_thread_spans();
    c.out
}

/// 64-bit FNV-1a over the parts, each followed by a 0 byte: stable across Rust versions.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.as_bytes().iter().chain(std::iter::once(&0u8)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// A baseline file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// [`FINGERPRINT_VERSION`] of the recipe that wrote it.
    pub version: u32,
    pub findings: Vec<BaselineEntry>,
}

/// One recorded finding. Only `fingerprint` is matched; the rest helps people reading the file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineEntry {
    pub rule: String,
    pub file: String,
    /// 1-based line when it was recorded (informational: not matched).
    pub line: usize,
    pub message: String,
    pub fingerprint: String,
}

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum BaselineError {
    #[error("cannot read baseline `{0}`: {1}")]
    #[diagnostic(code(memlint::baseline), help("write one with `cargo memlint --write-baseline {0}`"))]
    Read(String, String),
    #[error("baseline `{0}` is not a memlint baseline: {1}")]
    #[diagnostic(code(memlint::baseline), help("write it again with `cargo memlint --write-baseline {0}`"))]
    Parse(String, String),
    #[error("baseline `{0}` uses fingerprint version {1}, this memlint uses {FINGERPRINT_VERSION}")]
    #[diagnostic(code(memlint::baseline), help("write it again with `cargo memlint --write-baseline {0}`"))]
    Version(String, u32),
    #[error("cannot write baseline `{0}`: {1}")]
    #[diagnostic(code(memlint::baseline))]
    Write(String, String),
}

impl Baseline {
    pub fn new(entries: Vec<BaselineEntry>) -> Self {
        Self { version: FINGERPRINT_VERSION, findings: entries }
    }

    pub fn read(path: &Path) -> Result<Self, BaselineError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| BaselineError::Read(shown.clone(), e.to_string()))?;
        let b: Baseline =
            serde_json::from_str(&text).map_err(|e| BaselineError::Parse(shown.clone(), e.to_string()))?;
        if b.version != FINGERPRINT_VERSION {
            return Err(BaselineError::Version(shown, b.version));
        }
        Ok(b)
    }

    pub fn write(&self, path: &Path) -> Result<(), BaselineError> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default() + "\n";
        std::fs::write(path, text).map_err(|e| BaselineError::Write(path.display().to_string(), e.to_string()))
    }

    /// The recorded fingerprints.
    pub fn fingerprints(&self) -> HashSet<&str> {
        self.findings.iter().map(|e| e.fingerprint.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlint_lint::SourceFile;
    use memlint_lint::{Label, Level};
    use std::sync::Arc;

    fn finding(text: &str, needle: &str) -> Finding {
        let file = Arc::new(SourceFile::new("src/a.rs", text));
        let start = text.find(needle).unwrap();
        let (line, column) = file.line_col(start);
        Finding {
            rule: "rc_cycle",
            level: Level::Warn,
            message: "m".into(),
            file,
            primary: Label::new(start..start + needle.len(), ""),
            secondary: vec![],
            help: None,
            note: None,
            elsewhere: vec![],
            suggestions: vec![],
            line,
            column,
        }
    }

    fn fp(text: &str, needle: &str) -> String {
        let f = finding(text, needle);
        fingerprints(&[&f], |p| p.display().to_string()).remove(0)
    }

    #[test]
    fn fingerprints_ignore_moves_and_indentation_but_not_the_function_or_the_code() {
        let base = "fn fit() {\n    history.push(loss);\n}\n";
        let moved = "// new\n\nuse x;\nfn fit() {\n        history.push(loss);\n}\n";
        let other_fn = "fn eval() {\n    history.push(loss);\n}\n";
        let other_code = "fn fit() {\n    history.push(out);\n}\n";
        let a = fp(base, "history.push(loss)");
        assert_eq!(a, fp(moved, "history.push(loss)"));
        assert_ne!(a, fp(other_fn, "history.push(loss)"));
        assert_ne!(a, fp(other_code, "history.push(out)"));
    }

    #[test]
    fn identical_findings_in_one_file_are_numbered_and_methods_are_qualified() {
        let text = "impl T {\n    fn f() {\n        x.push(l);\n        x.push(l);\n    }\n}\n";
        let first = finding(text, "x.push(l)");
        let mut second = first.clone();
        let at = text.rfind("x.push(l)").unwrap();
        second.primary = Label::new(at..at + 9, "");
        let fps = fingerprints(&[&first, &second], |p| p.display().to_string());
        assert!(fps[0].ends_with(":1") && fps[1].ends_with(":2"), "{fps:?}");
        assert_eq!(fps[0].split(':').next(), fps[1].split(':').next());
        assert_eq!(function_spans(text).iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>(), vec!["T::f"]);
    }
}
