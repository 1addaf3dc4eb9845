//! A source file as read from disk, with byte-offset ↔ line/column conversion, and the
//! diagnostic of a file that cannot be read or parsed.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diagnostic::Level;
use crate::rule::RuleMeta;

/// One `.rs` file: its path as shown to users and its text.
#[derive(Debug)]
pub struct SourceFile {
    /// The path as given or discovered (relative to the working directory where possible).
    pub path: PathBuf,
    pub text: Arc<str>,
    /// Byte offset of the start of each line.
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub fn new(path: impl Into<PathBuf>, text: impl Into<Arc<str>>) -> Self {
        let text: Arc<str> = text.into();
        let line_starts =
            std::iter::once(0).chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1)).collect();
        Self { path: path.into(), text, line_starts }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// 1-based line of a byte offset (no column to count).
    pub fn line(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset.min(self.text.len()))
    }

    /// 1-based line and 1-based column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let col = self.text.get(start..offset).map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// Byte range of a 1-based line, without its line break.
    pub fn line_range(&self, line: usize) -> Range<usize> {
        let start = self.line_starts.get(line.wrapping_sub(1)).copied().unwrap_or(self.text.len());
        let end = self.line_starts.get(line).map_or(self.text.len(), |&next| next.saturating_sub(1));
        let end = if end > start && self.text.as_bytes().get(end - 1) == Some(&b'\r') { end - 1 } else { end };
        start..end.max(start)
    }

    /// Byte offset of the start of a 1-based line.
    pub fn line_start(&self, line: usize) -> Option<usize> {
        self.line_starts.get(line.wrapping_sub(1)).copied()
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }
}

/// The diagnostic of a file memlint could not read or parse (code `memlint::parse_error`). It is
/// memlint's own, not a rule over the model: the driver reports it, and the rest of the crate is
/// still linted.
pub static PARSE_ERROR: RuleMeta = RuleMeta {
    id: "parse_error",
    summary: "a source file could not be read or parsed",
    default_level: Level::Warn,
    group: crate::rule::Group::Stable,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters() {
        let f = SourceFile::new("a.rs", "ab\nπx = 1;\n");
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        // 'x' follows a two-byte character: byte 5, character column 2.
        assert_eq!(f.line_col(5), (2, 2));
        assert_eq!(&f.text[f.line_range(2)], "πx = 1;");
        // `line` agrees with `line_col` everywhere, past the end included.
        for offset in 0..=f.text.len() + 2 {
            assert_eq!(f.line(offset), f.line_col(offset).0, "offset {offset}");
        }
    }
}
