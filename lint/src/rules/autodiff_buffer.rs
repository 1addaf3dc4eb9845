//! `autodiff_buffer`: burn struct fields that collect autodiff tensors and are filled with
//! graph-carrying values.

use std::collections::{HashMap, HashSet};

use crate::context::{Context, Report};
use crate::diagnostic::{Label, Level};
use crate::rule::{Group, Rule, RuleMeta};
use crate::type_graph::{Shape, TypeDecl, TypeGraph, names_autodiff};

pub struct AutodiffBuffer;

pub static META: RuleMeta = RuleMeta {
    id: "autodiff_buffer",
    summary: "a buffer field collects tensors of an autodiff backend",
    default_level: Level::Warn,
    group: Group::Nursery,
    docs: r#"### What it does
Finds struct fields that collect tensors of a burn autodiff backend — a `Vec`, `VecDeque` or map
of `Tensor<B, D>` where `B: AutodiffBackend` (or `Autodiff<..>`), directly or through another
struct of the crate such as `Vec<Transition<B>>` — when some function of the crate stores a
graph-carrying value into it (a forward pass's output, a log-probability, a value estimate),
directly or through a method such as `memory.push(..)`. Buffers that only ever receive data
(observations built with `Tensor::from_data`) or `.inner()`/`detach()` values are not
reported. In burn 0.22, where `Tensor<D>` names no backend, a collection of tensors is reported
when a function working on an autodiff device (`device.autodiff()`) fills it with
graph-carrying values.

### Why is this bad?
A tensor of an autodiff backend that came out of a forward pass keeps its part of the autograd
graph alive, and burn's graph store keeps the state of every node such a tensor can reach. A
rollout or replay buffer outlives the iteration that filled it, so it keeps the graphs of all
the steps it holds.

### Example
```rust
struct Rollout<B: AutodiffBackend> {
    values: Vec<Tensor<B, 1>>,
}

impl<B: AutodiffBackend> Rollout<B> {
    fn record(&mut self, critic: &Critic<B>, obs: Tensor<B, 2>) {
        self.values.push(critic.forward(obs));   // keeps this step's graph
    }
}
```

### Use instead
```rust
struct Rollout<B: AutodiffBackend> {
    values: Vec<Tensor<B::InnerBackend, 1>>,
}

impl<B: AutodiffBackend> Rollout<B> {
    fn record(&mut self, critic: &Critic<B>, obs: Tensor<B, 2>) {
        self.values.push(critic.forward(obs).inner());
    }
    // Where training needs gradients again: `Tensor::from_inner(value)`.
}
```
"#,
};

/// Growable collections: a field of one outlives the iterations that fill it.
const COLLECTIONS: &[&str] =
    &["Vec", "VecDeque", "HashMap", "BTreeMap", "LinkedList", "BinaryHeap", "IndexMap", "SmallVec", "ArrayVec"];

/// What the crate's generic types do with each of their type parameters.
#[derive(Default, Clone)]
struct Params {
    /// Parameter i is the backend of a tensor the type holds.
    tensor: Vec<bool>,
    /// Parameter i is the backend of tensors the type collects in a growable collection.
    buffer: Vec<bool>,
}

struct Types<'a> {
    by_name: HashMap<&'a str, usize>,
    params: Vec<Params>,
}

impl Types<'_> {
    /// Whether `shape` holds tensors whose backend satisfies `backend`: in a growable collection
    /// when `need_collection` (`in_collection`: already inside one).
    fn holds(
        &self,
        shape: &Shape,
        backend: &dyn Fn(&Shape) -> bool,
        in_collection: bool,
        need_collection: bool,
    ) -> bool {
        let Shape::Named { name, args } = shape else {
            return match shape {
                Shape::Tuple(items) => items.iter().any(|s| self.holds(s, backend, in_collection, need_collection)),
                _ => false,
            };
        };
        match name.as_str() {
            // Parameters are the model's own leaves.
            "Param" | "RunningState" => false,
            "Tensor" => {
                // Integer and boolean tensors are never tracked.
                let tracked =
                    !args.iter().any(|a| matches!(a, Shape::Named { name, .. } if name == "Int" || name == "Bool"));
                // burn 0.22 `Tensor<2>` names no backend: the first argument is not a type.
                tracked && backend(args.first().unwrap_or(&Shape::Opaque)) && (in_collection || !need_collection)
            }
            n if COLLECTIONS.contains(&n) => args.iter().any(|a| self.holds(a, backend, true, need_collection)),
            n => {
                if let Some(&t) = self.by_name.get(n) {
                    let p = &self.params[t];
                    let through = args.iter().enumerate().any(|(j, a)| {
                        backend(a)
                            && if need_collection {
                                p.buffer.get(j) == Some(&true) || (in_collection && p.tensor.get(j) == Some(&true))
                            } else {
                                p.tensor.get(j) == Some(&true)
                            }
                    });
                    if through {
                        return true;
                    }
                }
                args.iter().any(|a| self.holds(a, backend, in_collection, need_collection))
            }
        }
    }
}

impl<'a> Types<'a> {
    /// What each generic type does with its parameters, through the crate's other types.
    fn of(decls: &[&'a TypeDecl]) -> Self {
        let mut t = Types { by_name: HashMap::new(), params: Vec::new() };
        for (i, d) in decls.iter().enumerate() {
            t.by_name.entry(d.name.as_str()).or_insert(i);
            t.params.push(Params { tensor: vec![false; d.generics.len()], buffer: vec![false; d.generics.len()] });
        }
        for _ in 0..8 {
            let mut changed = false;
            for (i, d) in decls.iter().enumerate() {
                for (j, g) in d.generics.iter().enumerate() {
                    let backend = is_param(g);
                    let tensor = d.fields.iter().any(|f| t.holds(&f.ty, &backend, false, false));
                    let buffer = d.fields.iter().any(|f| t.holds(&f.ty, &backend, false, true));
                    let p = &mut t.params[i];
                    if (tensor && !p.tensor[j]) || (buffer && !p.buffer[j]) {
                        p.tensor[j] |= tensor;
                        p.buffer[j] |= buffer;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        t
    }
}

fn is_param(name: &str) -> impl Fn(&Shape) -> bool + '_ {
    move |s| matches!(s, Shape::Named { name: n, args } if n == name && args.is_empty())
}

impl Rule for AutodiffBuffer {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_types(&self, types: &TypeGraph, cx: &mut Context<'_>) {
        let decls: Vec<&TypeDecl> = types.decls.iter().filter(|d| !d.autodiff_alias).collect();
        // Only burn functions report graph stores.
        if types.graph_stores.is_empty() {
            return;
        }
        let aliases: HashSet<&str> = types.decls.iter().filter(|d| d.autodiff_alias).map(|d| d.name.as_str()).collect();
        let t = Types::of(&decls);
        let autodiff_type =
            |s: &Shape| names_autodiff(s) || matches!(s, Shape::Named { name, .. } if aliases.contains(name.as_str()));
        for d in &decls {
            for f in &d.fields {
                let short = f.field.rsplit('.').next().unwrap_or(&f.field);
                let bound = d.autodiff.iter().find(|(g, _)| t.holds(&f.ty, &is_param(g), false, true));
                // burn 0.22 `Tensor<D>`: the device, not the type, makes it autodiff.
                let no_backend = |s: &Shape| match s {
                    Shape::Opaque => true,
                    Shape::Named { name, args } => args.is_empty() && d.consts.contains(name),
                    Shape::Tuple(_) => false,
                };
                let found = match bound {
                    Some((g, span)) => Some((format!("`{g}`"), Some(span.clone()), false)),
                    None if t.holds(&f.ty, &autodiff_type, false, true) => {
                        Some(("an autodiff".to_string(), None, false))
                    }
                    None if t.holds(&f.ty, &no_backend, false, true) => {
                        Some(("an autodiff device's".to_string(), None, true))
                    }
                    None => None,
                };
                let Some((backend, bound_span, device_only)) = found else { continue };
                let stores: Vec<_> = types
                    .graph_stores
                    .iter()
                    .filter(|s| s.owner().is_none_or(|o| o == d.name) && s.field() == short)
                    .filter(|s| !device_only || s.autodiff())
                    .collect();
                if stores.is_empty() {
                    continue;
                }
                let mut report = Report::new(
                    format!("`{}` collects tensors of an autodiff backend", f.field),
                    f.span.clone(),
                    if device_only {
                        "a collection of tensors, filled from an autodiff device".to_string()
                    } else {
                        format!("a collection of tensors on {backend} backend")
                    },
                );
                if let Some(span) = bound_span {
                    report.secondary.push(Label::new(span, "an autodiff backend"));
                }
                for s in stores.iter().take(3) {
                    let text = "a graph-carrying value is stored here";
                    if std::sync::Arc::ptr_eq(s.file(), &d.file) {
                        report.secondary.push(Label::new(s.span().clone(), text));
                    } else {
                        let (line, _) = s.file().line_col(s.span().start);
                        report.elsewhere.push((s.file().path.clone(), line, text.to_string()));
                    }
                }
                let help = if device_only {
                    "push `.detach()`ed tensors (or `.inner()` ones on the inner device), and rebuild what training needs gradients for"
                } else {
                    "store tensors of the inner backend (`Tensor<B::InnerBackend, D>`, pushing `.inner()`), and convert with `Tensor::from_inner` where training needs gradients"
                };
                report = report
                    .help(help)
                    .note("each kept tensor keeps its autograd graph alive; a buffer that outlives iterations keeps the graphs of every step it holds");
                cx.report_in(&d.file.clone(), report);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
use burn::tensor::backend::AutodiffBackend;
struct Memory<B: AutodiffBackend> {
    values: Vec<Tensor<B, 1>>,
}
impl<B: AutodiffBackend> Memory<B> {
    fn remember(&mut self, model: &Net<B>, x: Tensor<B, 2>) {
        let v = model.forward(x);
        self.values.push(v);
    }
}
"#;

    const PASSES: &str = r#"
use burn::tensor::backend::AutodiffBackend;
struct Memory<B: AutodiffBackend> {
    values: Vec<Tensor<B::InnerBackend, 1>>,
}
impl<B: AutodiffBackend> Memory<B> {
    fn remember(&mut self, model: &Net<B>, x: Tensor<B, 2>) {
        let v = model.forward(x);
        self.values.push(v.inner());
    }
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("autodiff_buffer", None, FAILS), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("autodiff_buffer", None, PASSES), 0);
    }
}
