//! `parse_error`: a file memlint could not read or parse. Not a rule over graphs: the driver
//! reports it, and the rest of the crate is still linted.

use crate::diagnostic::Level;
use crate::rule::RuleMeta;

pub static META: RuleMeta = RuleMeta {
    id: "parse_error",
    summary: "a source file could not be read or parsed",
    default_level: Level::Warn,
    docs: r#"### What it does
Reports a `.rs` file that is not valid UTF-8 or that `syn` cannot parse (syntax errors, or
syntax newer than memlint understands). The file is skipped; every other file is still linted.

### Why is this bad?
memlint cannot see leaks in code it cannot read, so a clean result says nothing about this file.

### Example
```rust
fn train( {
```

### Use instead
Fix the syntax error (`cargo check` shows it), or exclude the file from the paths you lint.
"#,
};
