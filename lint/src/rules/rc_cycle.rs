//! `rc_cycle`: types that can form a cycle of strong `Rc`/`Arc` references.

use std::collections::VecDeque;

use petgraph::algo::tarjan_scc;
use petgraph::graph::{EdgeIndex, NodeIndex};
use petgraph::visit::EdgeRef;

use crate::context::{Context, Report};
use crate::diagnostic::{Label, Level};
use crate::rule::{Group, Rule, RuleMeta};
use crate::type_graph::TypeGraph;

pub struct RcCycle;

pub static META: RuleMeta = RuleMeta {
    id: "rc_cycle",
    summary: "types can form a cycle of strong Rc/Arc references",
    default_level: Level::Warn,
    group: Group::Nursery,
    docs: r#"### What it does
Builds the graph of the crate's structs and enums (an edge for each field that owns another of
the crate's types, directly or through `Option`, `Vec`, `Box`, maps, `RefCell`, `Mutex`, …) and
reports strongly connected components that contain a strong `Rc`/`Arc` edge and interior
mutability (without which safe code cannot close the cycle). `Weak` breaks an edge.

### Why is this bad?
Reference counts on a cycle never reach zero: when the last outside handle is dropped, every
value on the cycle, and everything they own (tensors, buffers, caches), is leaked for the rest of
the process.

### Example
```rust
struct Node {
    parent: Option<Rc<RefCell<Node>>>,
    children: Vec<Rc<RefCell<Node>>>,
}
```

### Use instead
```rust
struct Node {
    parent: Option<Weak<RefCell<Node>>>,
    children: Vec<Rc<RefCell<Node>>>,
}
```
"#,
};

/// Field names that usually point back up a structure: the edge to make `Weak`.
const BACK_NAMES: &[&str] = &["parent", "owner", "prev", "previous", "back", "up", "outer", "root", "manager", "graph"];

impl Rule for RcCycle {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_types(&self, types: &TypeGraph, cx: &mut Context<'_>) {
        let g = &types.graph;
        let strong = petgraph::visit::EdgeFiltered::from_fn(g, |e| !e.weight().weak);
        for scc in tarjan_scc(&strong) {
            let in_scc = |n: NodeIndex| scc.contains(&n);
            let inner = || scc.iter().flat_map(|&n| g.edges(n)).filter(|e| in_scc(e.target()));
            // A `Weak` link inside the component: the author already broke the cycle.
            if inner().any(|e| e.weight().weak) {
                continue;
            }
            let edges: Vec<EdgeIndex> = inner().map(|e| e.id()).collect();
            // The cycle through a shared edge; prefer a shared edge with a "back" name.
            let mut shared: Vec<EdgeIndex> = edges.iter().copied().filter(|&e| g[e].shared).collect();
            shared.sort_by_key(|&e| (!is_back_name(&g[e].field), g[e].span.start));
            let Some(cycle) = shared.iter().find_map(|&e| cycle_through(types, e, &scc)) else { continue };
            if !cycle.iter().any(|&e| g[e].interior) {
                continue;
            }
            let back = cycle[0];
            let back_edge = &g[back];
            let names: Vec<&str> = cycle.iter().map(|&e| g[g.edge_endpoints(e).unwrap().0].name.as_str()).collect();
            let path = names.iter().chain(names.first()).copied().collect::<Vec<_>>().join(" → ");
            let mut report = Report::new(
                format!("strong reference cycle: {path}"),
                back_edge.span.clone(),
                format!("`{}` closes the cycle", back_edge.field),
            );
            // Label the cycle first, then the other strong links inside the component.
            let rest =
                cycle[1..].iter().copied().chain(edges.iter().copied().filter(|e| !cycle.contains(e) && !g[*e].weak));
            for e in rest {
                let edge = &g[e];
                let how = if edge.shared { "holds a strong reference" } else { "owns" };
                let target = &g[g.edge_endpoints(e).unwrap().1].name;
                if std::sync::Arc::ptr_eq(&edge.file, &back_edge.file) {
                    report
                        .secondary
                        .push(Label::new(edge.span.clone(), format!("`{}` {how} to `{target}`", edge.field)));
                } else {
                    let (line, _) = edge.file.line_col(edge.span.start);
                    report.elsewhere.push((
                        edge.file.path.clone(),
                        line,
                        format!("`{}` {how} to `{target}`", edge.field),
                    ));
                }
            }
            report = report
                .help(format!("make `{}` a `Weak` reference (`Rc::downgrade` / `Arc::downgrade`) so the cycle does not keep itself alive", back_edge.field))
                .note("reference counts on a cycle never reach zero: everything on it, and everything it owns, is leaked");
            cx.report_in(&back_edge.file.clone(), report);
        }
    }
}

fn is_back_name(field: &str) -> bool {
    let name = field.rsplit('.').next().unwrap_or(field);
    BACK_NAMES.iter().any(|b| name.contains(b))
}

/// A cycle that starts with `first` and returns to its source inside the component.
fn cycle_through(types: &TypeGraph, first: EdgeIndex, scc: &[NodeIndex]) -> Option<Vec<EdgeIndex>> {
    let g = &types.graph;
    let (start, next) = g.edge_endpoints(first)?;
    if g[first].weak {
        return None;
    }
    if next == start {
        return Some(vec![first]);
    }
    // Breadth-first from `next` back to `start`, remembering the edge used to reach each node.
    let mut via: Vec<Option<EdgeIndex>> = vec![None; g.node_count()];
    let mut queue = VecDeque::from([next]);
    let mut seen = vec![false; g.node_count()];
    seen[next.index()] = true;
    while let Some(n) = queue.pop_front() {
        for e in g.edges(n).filter(|e| !e.weight().weak) {
            let t = e.target();
            if !scc.contains(&t) || seen[t.index()] {
                continue;
            }
            seen[t.index()] = true;
            via[t.index()] = Some(e.id());
            if t == start {
                let mut path = Vec::new();
                let mut cur = start;
                while cur != next {
                    let e = via[cur.index()]?;
                    path.push(e);
                    cur = g.edge_endpoints(e)?.0;
                }
                path.reverse();
                let mut cycle = vec![first];
                cycle.extend(path);
                return Some(cycle);
            }
            queue.push_back(t);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
use std::cell::RefCell;
use std::rc::Rc;
struct Node {
    children: Vec<Rc<RefCell<Node>>>,
    parent: Option<Rc<RefCell<Node>>>,
}
"#;

    const PASSES: &str = r#"
use std::cell::RefCell;
use std::rc::{Rc, Weak};
struct Node {
    children: Vec<Rc<RefCell<Node>>>,
    parent: Option<Weak<RefCell<Node>>>,
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("rc_cycle", None, FAILS), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("rc_cycle", None, PASSES), 0);
    }
}
