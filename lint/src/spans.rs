//! Byte ranges of `proc_macro2` spans, computed from line starts.
//!
//! Outside a procedural macro, `proc_macro2::Span::byte_range` turns the span's character
//! position into a byte offset by walking the file's characters from the nearest position it
//! has converted before: about 2,700 instructions a call on burn-core, a fifth of memlint's time
//! over parsing. The span's line and column (a binary search in proc-macro2's line table) and
//! this file's line starts give the same offset for the cost of counting the characters before
//! the column on one line (none on an ASCII line: the column is the byte offset).

use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;

use crate::source::SourceFile;

thread_local! {
    /// The file whose spans are being converted on this thread, and where the parsed text starts
    /// in it (after a byte-order mark).
    static FILE: RefCell<Option<(Arc<SourceFile>, usize)>> = const { RefCell::new(None) };
}

/// Runs `f` with [`byte_range`] reading positions in `file`, parsed from `file.text[offset..]`
/// (the lines of that text are the file's: only a byte-order mark is left out before it).
pub(crate) fn with_file<R>(file: &Arc<SourceFile>, offset: usize, f: impl FnOnce() -> R) -> R {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            FILE.with(|cell| cell.borrow_mut().take());
        }
    }
    FILE.with(|cell| *cell.borrow_mut() = Some((file.clone(), offset)));
    let _reset = Reset;
    f()
}

/// The byte range of `span` in the parsed text, as `span.byte_range()` gives it.
pub(crate) fn byte_range(span: proc_macro2::Span) -> Range<usize> {
    FILE.with(|cell| match &*cell.borrow() {
        Some((file, offset)) => {
            let start = byte_at(file, *offset, span.start());
            let end = byte_at(file, *offset, span.end());
            start..end.max(start)
        }
        None => span.byte_range(),
    })
}

/// Whether `text` calls method `name` with no arguments (`.autodiff()`), without allocating the
/// needle.
pub(crate) fn calls_method(text: &[u8], name: &str) -> bool {
    memchr::memmem::find_iter(text, name.as_bytes())
        .any(|at| at > 0 && text[at - 1] == b'.' && text[at + name.len()..].starts_with(b"()"))
}

/// Whether the current file's text in `range` (byte offsets past the file's offset, as
/// [`byte_range`] gives them) calls method `name` with no arguments ([`calls_method`]); true
/// when no file is set or the range is not in it (the caller then does the full work).
pub(crate) fn text_calls_method(range: Range<usize>, name: &str) -> bool {
    FILE.with(|cell| match &*cell.borrow() {
        Some((file, offset)) => {
            file.text.get(offset + range.start..offset + range.end).is_none_or(|t| calls_method(t.as_bytes(), name))
        }
        None => true,
    })
}

/// The offset in the parsed text of a 1-based line and 0-based column in characters.
fn byte_at(file: &SourceFile, offset: usize, at: proc_macro2::LineColumn) -> usize {
    let text = &*file.text;
    let begin = file.line_start(at.line).unwrap_or(text.len()).max(offset).min(text.len());
    let line = &text.as_bytes()[begin..];
    let in_line = match line.get(..at.column) {
        Some(before) if before.is_ascii() => at.column,
        _ => text[begin..].char_indices().nth(at.column).map_or(text.len() - begin, |(i, _)| i),
    };
    begin + in_line - offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_method_call_is_told_from_other_mentions_of_its_name() {
        assert!(calls_method(b"let ad = device.autodiff();", "autodiff"));
        assert!(calls_method(b"dev.clone().autodiff()", "autodiff"));
        // A path, a call with arguments, a longer name and a name at the start are no such call.
        assert!(!calls_method(b"use burn::backend::autodiff::Autodiff;", "autodiff"));
        assert!(!calls_method(b"x.autodiff(true)", "autodiff"));
        assert!(!calls_method(b"x.autodiff_on()", "autodiff"));
        assert!(!calls_method(b"autodiff()", "autodiff"));
        assert!(!calls_method(b"x.autodiff", "autodiff"));
    }

    /// Every token's range, computed here and by proc-macro2, on text with non-ASCII
    /// identifiers, strings and comments, CRLF line ends and a byte-order mark.
    #[test]
    fn agrees_with_proc_macro2_on_every_token() {
        let bodies = [
            "fn größe(x: f32) -> f32 {\n    let s = \"→ ünïcödé\"; // ☃ comment\n    x * 2.0\n}\n",
            "struct Ä { b: Vec<u8> }\r\nimpl Ä {\r\n    fn f(&self) -> usize { self.b.len() /* é */ }\r\n}\r\n",
            "fn main() { let 名前 = 1; let y = 名前 + 2; println!(\"{y} 🚀\"); }",
        ];
        for body in bodies {
            for bom in [false, true] {
                let text = if bom { format!("\u{feff}{body}") } else { body.to_string() };
                let offset = if bom { 3 } else { 0 };
                let file = Arc::new(SourceFile::new("t.rs", text.clone()));
                let tokens: proc_macro2::TokenStream = text[offset..].parse().expect("valid tokens");
                let mut spans = Vec::new();
                collect(tokens, &mut spans);
                assert!(spans.len() > 10);
                with_file(&file, offset, || {
                    for span in &spans {
                        assert_eq!(byte_range(*span), span.byte_range(), "{:?}", &text[offset..][span.byte_range()]);
                    }
                });
                proc_macro2::extra::invalidate_current_thread_spans();
            }
        }
    }

    fn collect(tokens: proc_macro2::TokenStream, out: &mut Vec<proc_macro2::Span>) {
        for t in tokens {
            out.push(t.span());
            if let proc_macro2::TokenTree::Group(g) = t {
                out.push(g.span_open());
                out.push(g.span_close());
                collect(g.stream(), out);
            }
        }
    }
}
