//! The static engine of memlint.
//!
//! It parses Rust sources with `syn` (never compiling or running them), builds a semantic model
//! per function ([`model`]), a type graph per crate ([`type_graph`]), and runs the [`rules`] over
//! them (see `docs/architecture.md`). [`Linter::lint_crate`] lints the files of one crate in
//! parallel; [`lint_source`] lints one file's text (used by `#[mem_guard]`).

pub mod context;
pub mod diagnostic;
pub mod frameworks;
pub mod levels;
pub mod model;
pub mod output;
mod reach;
pub mod rule;
pub mod rules;
pub mod source;
mod spans;
pub mod suppress;
pub mod type_graph;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

pub use diagnostic::{Applicability, Finding, Label, Level, Suggestion};
pub use frameworks::{BurnEra, Framework};
pub use levels::Levels;
pub use rule::Group;
pub use source::SourceFile;

use context::{Context, Report};
use type_graph::{TypeDecl, TypeGraph};

/// Stack size for threads that parse: `syn` and the walk recurse on nested expressions.
pub const PARSE_STACK_SIZE: usize = 256 * 1024 * 1024;

/// Lints files with a set of rule levels.
#[derive(Debug, Clone, Default)]
pub struct Linter {
    pub levels: Levels,
    /// Framework to assume for every file, overriding detection.
    pub framework: Option<Framework>,
    /// The era of burn's graph store the crate's burn requirement allows (its manifest says
    /// so: set by the CLI per package; a requirement that allows 0.19 or later is the newest).
    pub burn_era: frameworks::BurnEra,
    /// The crate is known to have binary targets only (its manifest says so; set by the CLI per
    /// package): nothing outside it uses its items, so a function nothing in it calls, or a
    /// method of a type nothing in it names, never runs, and findings there are not reported.
    pub binary: bool,
}

/// One parsed and walked file, before the crate-level pass.
struct Parsed {
    file: Arc<SourceFile>,
    graphs: Vec<model::FnModel>,
    decls: Vec<TypeDecl>,
    findings: Vec<Finding>,
}

/// Findings for a file that could not be read.
struct FileResult {
    findings: Vec<Finding>,
}

impl Linter {
    pub fn new(levels: Levels) -> Self {
        Self { levels, framework: None, burn_era: frameworks::BurnEra::default(), binary: false }
    }

    /// Lints the files of one crate: function rules per file (in parallel on the current rayon
    /// pool) and type rules over all of them. `fallback` is the framework of the crate's
    /// dependencies, used for files that name none. Findings are sorted by file and position.
    pub fn lint_crate(&self, files: &[PathBuf], fallback: Option<Framework>) -> Vec<Finding> {
        self.lint_crate_with(files, &[], fallback)
    }

    /// [`Linter::lint_crate`], with the files of crates it depends on (`context`) read for the
    /// call graph only: calls into them are followed, and nothing is reported in them.
    pub fn lint_crate_with(&self, files: &[PathBuf], context: &[PathBuf], fallback: Option<Framework>) -> Vec<Finding> {
        let context: Vec<Arc<SourceFile>> =
            context.par_iter().filter_map(|path| read_source(path).ok().map(Arc::new)).collect();
        let mut unreadable = Vec::new();
        let sources: Vec<Arc<SourceFile>> = files
            .par_iter()
            .map(|path| read_source(path).map(Arc::new).map_err(|message| self.unreadable(path, message)))
            .collect::<Vec<_>>()
            .into_iter()
            .filter_map(|r| r.map_err(|e| unreadable.push(e)).ok())
            .collect();
        let mut findings = self.lint_sources_with(&sources, &context, fallback);
        for r in unreadable {
            findings.extend(r.findings);
        }
        sort(&mut findings);
        findings
    }

    /// Lints the in-memory files of one crate (see [`Linter::lint_crate`]): parse and build
    /// graphs per file in parallel, link calls across the crate, then run the rules.
    pub fn lint_sources(&self, files: &[Arc<SourceFile>], fallback: Option<Framework>) -> Vec<Finding> {
        self.lint_sources_with(files, &[], fallback)
    }

    /// [`Linter::lint_sources`] with `context` files (see [`Linter::lint_crate_with`]).
    pub fn lint_sources_with(
        &self,
        files: &[Arc<SourceFile>],
        context: &[Arc<SourceFile>],
        fallback: Option<Framework>,
    ) -> Vec<Finding> {
        // The crate-level steps run outside the per-file guards: a bug there must not crash the
        // run either, so they fall back to per-function analysis.
        let all: Vec<Arc<SourceFile>> = files.iter().chain(context).cloned().collect();
        let crate_fns =
            std::panic::catch_unwind(|| model::crate_names(all.iter().map(|f| &*f.text))).unwrap_or_default();
        let parsed: Vec<Parsed> = all.par_iter().map(|file| self.parse(file.clone(), fallback, &crate_fns)).collect();
        let mut findings = Vec::new();
        let mut decls = Vec::new();
        let mut linked: Vec<(Arc<SourceFile>, Vec<model::FnModel>)> = Vec::with_capacity(parsed.len());
        let mut context_decls = Vec::new();
        for (k, p) in parsed.into_iter().enumerate() {
            // Context files feed the call graph only.
            if k < files.len() {
                findings.extend(p.findings);
                decls.extend(p.decls);
            } else {
                context_decls.extend(p.decls);
            }
            linked.push((p.file, p.graphs));
        }
        let fields = type_graph::autodiff_fields(decls.iter().chain(&context_decls));
        let modules = type_graph::module_types(decls.iter().chain(&context_decls));
        let field_types = type_graph::field_types(decls.iter().chain(&context_decls));
        let generic_fields = type_graph::generic_fields(decls.iter().chain(&context_decls));
        model::link(&mut linked, &fields, &modules, &field_types, &generic_fields, &crate_fns);
        let crate_graphs = &linked[..];
        let linked = &linked[..files.len()];
        for (file, gs) in linked {
            for g in gs {
                g.debug_nodes(&file.text);
            }
        }
        let reach = reach::Reach::new(&all, self.binary, crate_graphs);
        let per_file: Vec<(Vec<Finding>, Vec<Finding>)> =
            linked.par_iter().map(|(file, graphs)| self.check_functions(file, graphs, &reach)).collect();
        // Findings in code that never runs are dropped after suppression, so that a comment
        // allowing one is still used.
        let mut unreached = std::collections::HashSet::new();
        for (live, dead) in per_file {
            findings.extend(live);
            for f in dead {
                unreached.insert((f.file.path.clone(), f.primary.span.clone(), f.rule));
                findings.push(f);
            }
        }
        let graph_stores: Vec<model::FieldStore> = linked
            .iter()
            .flat_map(|(file, graphs)| {
                // Stores of graphs only matter to the crate's types where the type says autodiff.
                graphs
                    .iter()
                    .filter(|g| g.framework_known() && g.spec().autodiff_by_type && !g.is_instance())
                    .flat_map(move |g| g.graph_field_stores(file))
            })
            .collect();
        findings.extend(self.check_types(&decls, graph_stores));
        let mut findings = suppress::apply(files, findings, &self.levels);
        if !unreached.is_empty() {
            findings.retain(|f| !unreached.contains(&(f.file.path.clone(), f.primary.span.clone(), f.rule)));
        }
        sort(&mut findings);
        findings
    }

    /// Lints one file's text: function rules and the type rules over this file alone.
    pub fn lint_text(&self, path: &Path, text: &str, fallback: Option<Framework>) -> Vec<Finding> {
        self.lint_sources(&[Arc::new(SourceFile::new(path, text))], fallback)
    }

    /// Parses and walks one file; a bug in memlint that panics is reported as a finding.
    fn parse(&self, file: Arc<SourceFile>, fallback: Option<Framework>, crate_fns: &model::CrateNames) -> Parsed {
        let f = file.clone();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.parse_inner(f, fallback, crate_fns))) {
            Ok(r) => r,
            Err(panic) => {
                proc_macro2::extra::invalidate_current_thread_spans();
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let r = self.unreadable(&file.path, format!("internal error while linting this file: {what}"));
                Parsed { file, graphs: Vec::new(), decls: Vec::new(), findings: r.findings }
            }
        }
    }

    fn unreadable(&self, path: &Path, message: String) -> FileResult {
        let file = Arc::new(SourceFile::new(path, ""));
        let mut findings = Vec::new();
        let mut cx = Context::new(Some(file), &source::PARSE_ERROR, &self.levels, &mut findings);
        cx.report(Report::new(message, 0..0, "").help("memlint skipped this file and linted the rest"));
        FileResult { findings }
    }

    fn parse_inner(&self, file: Arc<SourceFile>, fallback: Option<Framework>, crate_fns: &model::CrateNames) -> Parsed {
        let (text, offset) = parseable_text(&file.text);
        let parsed = match syn::parse_str::<syn::File>(&text) {
            Ok(ast) => spans::with_file(&file, offset, || {
                let detected = self.framework.or_else(|| frameworks::detect(&ast));
                // A file that names no framework and declares its own `Tensor` is not framework code
                // (e.g. a pure-Rust inference module in a tch crate).
                let own_tensor = ast.items.iter().any(|i| match i {
                    syn::Item::Struct(s) => s.ident == "Tensor",
                    syn::Item::Enum(e) => e.ident == "Tensor",
                    syn::Item::Type(t) => t.ident == "Tensor",
                    _ => false,
                });
                // Likewise a file that imports its `Tensor` from a crate that is none of the
                // frameworks (`use flame_core::{Tensor, Result};`): its tensors are not theirs.
                let foreign_tensor = ast.items.iter().any(|i| match i {
                    syn::Item::Use(u) => frameworks::imports_foreign_tensor(&u.tree),
                    _ => false,
                });
                let framework =
                    if detected.is_none() && (own_tensor || foreign_tensor) { None } else { detected.or(fallback) };
                let framework = framework.map(|f| f.at_version(self.burn_era));
                let spec = framework.map_or(frameworks::REGISTRY[0], Framework::spec);
                // Tensors of another crate have none of the frameworks' semantics: no model.
                let graphs = if detected.is_none() && foreign_tensor {
                    Vec::new()
                } else {
                    model::function_models(&ast, spec, framework.is_some(), offset, crate_fns)
                };
                let decls = type_graph::collect_decls(&ast, &file, offset);
                Parsed { file: file.clone(), graphs, decls, findings: Vec::new() }
            }),
            Err(err) => {
                let start = err.span().byte_range().start + offset;
                let end = (err.span().byte_range().end + offset).max(start);
                let mut findings = Vec::new();
                let mut cx = Context::new(Some(file.clone()), &source::PARSE_ERROR, &self.levels, &mut findings);
                cx.report(
                    Report::new(format!("could not parse file: {err}"), start..end, "syntax error here")
                        .help("fix the syntax (`cargo check` shows it); memlint skipped this file and linted the rest"),
                );
                Parsed { file: file.clone(), graphs: Vec::new(), decls: Vec::new(), findings }
            }
        };
        // Spans live in a thread-local source map; drop this file's entry.
        proc_macro2::extra::invalidate_current_thread_spans();
        parsed
    }

    /// Runs the function rules over one file's functions: the findings, and apart from them
    /// those in functions that never run (see [`reach`]).
    fn check_functions(
        &self,
        file: &Arc<SourceFile>,
        graphs: &[model::FnModel],
        reach: &reach::Reach<'_>,
    ) -> (Vec<Finding>, Vec<Finding>) {
        let mut findings = Vec::new();
        let mut dead = Vec::new();
        for rule in rules::all() {
            let mut cx = Context::new(Some(file.clone()), rule.meta(), &self.levels, &mut findings);
            let applies = rule.applies();
            for g in graphs.iter().filter(|g| applies.to(g.spec(), g.framework_known())) {
                let mark = cx.reported();
                rule.check_function(g, &mut cx);
                if cx.reported() > mark && reach.findings_never_run(g, &file.path) {
                    dead.extend(cx.take_since(mark));
                }
            }
        }
        // An instance of generic code (`link::specialize`) repeats what its original reports:
        // one finding per rule and place.
        if graphs.iter().any(model::FnModel::is_instance) {
            let mut seen = std::collections::HashSet::new();
            findings.retain(|f| seen.insert((f.rule, f.primary.span.clone())));
            dead.retain(|f| seen.insert((f.rule, f.primary.span.clone())));
        }
        (findings, dead)
    }

    fn check_types(&self, decls: &[TypeDecl], graph_stores: Vec<model::FieldStore>) -> Vec<Finding> {
        let types = TypeGraph::build(decls, graph_stores);
        let mut findings = Vec::new();
        for rule in rules::all() {
            let mut cx = Context::new(None, rule.meta(), &self.levels, &mut findings);
            rule.check_types(&types, &mut cx);
        }
        findings
    }
}

/// Lints one file's text with default levels. Never panics: an unparsable file yields a
/// `parse_error` finding. The framework is detected from the text alone.
pub fn lint_source(path: &Path, text: &str) -> Vec<Finding> {
    Linter::default().lint_text(path, text, None)
}

/// Reads a file; unreadable and non-UTF-8 files give a message for a `parse_error` finding.
fn read_source(path: &Path) -> Result<SourceFile, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("could not read file: {e}"))?;
    match String::from_utf8(bytes) {
        Ok(text) => Ok(SourceFile::new(path, text)),
        Err(e) => Err(format!("file is not valid UTF-8 (invalid byte at offset {})", e.utf8_error().valid_up_to())),
    }
}

/// The text handed to syn and the offset of its positions in the file: a byte-order mark is
/// skipped and a shebang line blanked, so positions stay those of the file.
fn parseable_text(text: &str) -> (std::borrow::Cow<'_, str>, usize) {
    let (body, offset) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (rest, 3),
        None => (text, 0),
    };
    if body.starts_with("#!") && !body[2..].trim_start().starts_with('[') {
        let end = body.find('\n').unwrap_or(body.len());
        let mut owned = String::with_capacity(body.len());
        owned.push_str(&" ".repeat(end));
        owned.push_str(&body[end..]);
        return (owned.into(), offset);
    }
    (body.into(), offset)
}

fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        (a.file.path.as_path(), a.primary.span.start, a.rule).cmp(&(
            b.file.path.as_path(),
            b.primary.span.start,
            b.rule,
        ))
    });
}
