//! `no_grad_guard_dropped`: a tch no-grad guard dropped as soon as it is made.

use crate::context::{Context, Report};
use crate::diagnostic::{Applicability, Level, Suggestion};
use crate::model::{CallKind, FnModel};
use crate::rule::{Group, Rule, RuleMeta};

pub struct NoGradGuardDropped;

pub static META: RuleMeta = RuleMeta {
    id: "no_grad_guard_dropped",
    summary: "a no-grad guard is dropped as soon as it is made",
    default_level: Level::Warn,
    group: Group::Stable,
    docs: r#"### What it does
Finds `let _ = tch::no_grad_guard();` and `tch::no_grad_guard();` as a statement (tch).

### Why is this bad?
`let _ = …` does not bind: the guard is dropped at the end of the statement, so gradient
tracking is back on for the code that follows. Every forward pass below it records an autograd
graph, and whatever keeps the outputs keeps the graphs.

### Example
```rust
let _ = tch::no_grad_guard();
let logits = net.forward(&images);
```

### Use instead
```rust
let _guard = tch::no_grad_guard();
let logits = net.forward(&images);
```
or `tch::no_grad(|| net.forward(&images))`.
"#,
};

impl Rule for NoGradGuardDropped {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check_function(&self, f: &FnModel, cx: &mut Context<'_>) {
        for e in f.calls_of(CallKind::NoGradGuard).filter(|c| c.discarded()) {
            let mut report = Report::new(
                "no-grad guard dropped immediately",
                e.span().clone(),
                "the guard is dropped at the end of this statement",
            )
            .help("bind the guard to a named variable: `let _guard = tch::no_grad_guard();`")
            .note("gradients are disabled only while the guard lives; `let _ = …` drops it at once");
            if let Some(fix) = e.fix_span() {
                report = report.suggest(Suggestion {
                    message: "keep the guard alive until the end of the scope".to_string(),
                    span: fix.clone(),
                    replacement: "_guard".to_string(),
                    applicability: Applicability::MachineApplicable,
                });
            }
            cx.report(report);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::count;

    const FAILS: &str = r#"
fn eval(net: &dyn tch::nn::Module, x: &tch::Tensor) -> f64 {
    let _ = tch::no_grad_guard();
    net.forward(x).double_value(&[])
}
"#;

    const PASSES: &str = r#"
fn eval(net: &dyn tch::nn::Module, x: &tch::Tensor) -> f64 {
    let _guard = tch::no_grad_guard();
    net.forward(x).double_value(&[])
}
"#;

    #[test]
    fn reports_the_leak() {
        assert_eq!(count("no_grad_guard_dropped", None, FAILS), 1);
    }

    #[test]
    fn accepts_the_fixed_code() {
        assert_eq!(count("no_grad_guard_dropped", None, PASSES), 0);
    }
}
