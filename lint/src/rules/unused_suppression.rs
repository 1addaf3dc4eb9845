//! `unused_suppression`: a `// memlint: allow(…)` comment that suppresses nothing. Not a rule over
//! graphs: the driver reports it after matching suppressions to findings (see `crate::suppress`).

use crate::diagnostic::Level;
use crate::rule::RuleMeta;

pub static META: RuleMeta = RuleMeta {
    id: "unused_suppression",
    summary: "a suppression comment suppresses no finding",
    default_level: Level::Warn,
    docs: r#"### What it does
Reports a `// memlint: allow(rule_id)` or `// memlint: allow-file(rule_id)` comment that
suppresses no finding: the code it covered was fixed or moved, it names an unknown rule, an
`allow-file` comment sits below the first item of the file, or the comment cannot be read.
Suppressions of a rule that is allowed (`-A rule_id` or config) are not reported.

### Why is this bad?
A stale suppression hides the next real finding on that line, and a misspelled one never
worked: the finding it was meant for is still reported, or was silently never there.

### Example
```rust
for (x, y) in data {
    let loss = model.forward(x)?.sub(y)?.sqr()?.mean_all()?;
    // memlint: allow(accumulated_loss_tensor)
    total += loss.to_scalar::<f32>()?;
}
```

### Use instead
Remove the comment (`cargo memlint --fix` does), or fix the rule id:
```rust
for (x, y) in data {
    let loss = model.forward(x)?.sub(y)?.sqr()?.mean_all()?;
    total += loss.to_scalar::<f32>()?;
}
```
"#,
};
