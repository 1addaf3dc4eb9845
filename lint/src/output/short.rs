//! `path:line:col: warning[memlint::rule]: message`.

use crate::diagnostic::Finding;

pub fn render(f: &Finding) -> String {
    format!("{}:{}:{}: {}[{}]: {}", f.file.path.display(), f.line, f.column, f.level.as_str(), f.code(), f.message)
}
