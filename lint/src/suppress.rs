//! Suppression comments.
//!
//! - `// memlint: allow(rule_id, other_rule)` at the end of a line suppresses findings that start
//!   on that line; on a line of its own, findings on the next line of code.
//! - `// memlint: allow-file(rule_id)` before the first item of a file suppresses the rule in
//!   the whole file.
//!
//! (`#[allow(memlint::rule)]` cannot work on stable Rust: tool attributes need the unstable
//! `register_tool`.) A suppression that suppresses nothing, names an unknown rule, or cannot be
//! read is reported as `memlint::unused_suppression`, like ruff's RUF100, with a fix that removes it.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use crate::context::{Context, Report};
use crate::diagnostic::{Applicability, Finding, Level, Suggestion};
use crate::levels::Levels;
use crate::rule::RuleMeta;
use crate::source::SourceFile;

/// Whether a comment covers one line or the whole file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Findings that start on this 1-based line.
    Line(usize),
    File,
}

/// One `memlint:` comment.
#[derive(Debug, Clone)]
pub struct Suppression {
    pub scope: Scope,
    /// The rule ids (without `memlint::`) and their spans in the file.
    pub rules: Vec<(String, Range<usize>)>,
    /// What to delete to remove the comment (the whole line for a comment on its own line).
    pub removal: Range<usize>,
}

/// A `memlint:` comment that cannot take effect.
#[derive(Debug, Clone)]
pub struct Problem {
    pub span: Range<usize>,
    pub message: String,
    pub removal: Range<usize>,
}

/// The suppressions of one file, and the comments that are wrong.
pub fn parse(file: &SourceFile) -> (Vec<Suppression>, Vec<Problem>) {
    let text = &*file.text;
    let mut found = Vec::new();
    let mut problems = Vec::new();
    if !text.contains("memlint:") {
        return (found, problems);
    }
    let first_code = first_code_line(file);
    for comment in line_comments(text) {
        let body = &text[comment.start + 2..comment.end];
        let lead = body.len() - body.trim_start().len();
        let Some(directive) = body.trim_start().strip_prefix("memlint:") else { continue };
        let directive_start = comment.start + 2 + lead + "memlint:".len();
        let (line, _) = file.line_col(comment.start);
        let line_text = &text[file.line_range(line)];
        let own_line = line_text.trim_start().starts_with("//");
        let removal = if own_line {
            let r = file.line_range(line);
            let end = if line < file.line_count() { file.line_range(line + 1).start } else { r.end };
            r.start..end
        } else {
            let before = &text[..comment.start];
            before.trim_end_matches([' ', '\t']).len()..comment.end
        };
        let trimmed = directive.trim();
        let offset = directive_start + (directive.len() - directive.trim_start().len());
        let (is_file, rest, rest_offset) = if let Some(r) = trimmed.strip_prefix("allow-file") {
            (true, r, offset + "allow-file".len())
        } else if let Some(r) = trimmed.strip_prefix("allow") {
            (false, r, offset + "allow".len())
        } else {
            problems.push(Problem {
                span: comment.clone(),
                message: "suppression comment is not understood".into(),
                removal,
            });
            continue;
        };
        let inner = rest.trim_start();
        let inner_offset = rest_offset + (rest.len() - inner.len());
        let Some(list) = inner.strip_prefix('(').and_then(|s| s.split_once(')')).map(|(l, _)| l) else {
            problems.push(Problem {
                span: comment.clone(),
                message: "suppression comment is not understood".into(),
                removal,
            });
            continue;
        };
        let mut rules = Vec::new();
        let mut at = inner_offset + 1;
        for part in list.split(',') {
            let name = part.trim();
            let start = at + (part.len() - part.trim_start().len());
            at += part.len() + 1;
            if name.is_empty() {
                continue;
            }
            let id = name.strip_prefix("memlint::").unwrap_or(name);
            let span = start..start + name.len();
            if crate::rules::find(id).is_none() {
                problems.push(Problem {
                    span,
                    message: format!("suppression names an unknown rule `{name}`"),
                    removal: removal.clone(),
                });
                continue;
            }
            rules.push((id.to_string(), span));
        }
        if rules.is_empty() {
            continue;
        }
        let scope = if is_file {
            if line > first_code {
                problems.push(Problem {
                    span: comment.clone(),
                    message: "`allow-file` suppression is not at the top of the file".into(),
                    removal,
                });
                continue;
            }
            Scope::File
        } else if own_line {
            Scope::Line(next_code_line(file, line))
        } else {
            Scope::Line(line)
        };
        found.push(Suppression { scope, rules, removal });
    }
    (found, problems)
}

/// A file, its suppressions, and for each of their rules whether it suppressed a finding.
type FileSuppressions = (Arc<SourceFile>, Vec<Suppression>, Vec<Vec<bool>>);

/// Drops suppressed findings from `findings` (the findings of `files`, one crate) and adds an
/// `unused_suppression` finding for each suppression that suppressed nothing. Run by
/// [`crate::Linter`] on every file it lints, so every entry point honours the comments.
pub fn apply(files: &[Arc<SourceFile>], findings: Vec<Finding>, levels: &Levels) -> Vec<Finding> {
    let mut parsed: HashMap<PathBuf, FileSuppressions> = HashMap::new();
    let mut problems_out = Vec::new();
    for file in files {
        let (sups, problems) = parse(file);
        if !problems.is_empty() {
            problems_out.push((file.clone(), problems));
        }
        if !sups.is_empty() {
            let used = sups.iter().map(|s| vec![false; s.rules.len()]).collect();
            parsed.insert(file.path.clone(), (file.clone(), sups, used));
        }
    }
    if parsed.is_empty() && problems_out.is_empty() {
        return findings;
    }

    let mut kept = Vec::with_capacity(findings.len());
    let mut unparsable = std::collections::HashSet::new();
    for f in findings {
        if f.rule == "parse_error" {
            unparsable.insert(f.file.path.clone());
        }
        let mut suppressed = false;
        if let Some((_, sups, used)) = parsed.get_mut(&f.file.path) {
            for (s, used) in sups.iter().zip(used.iter_mut()) {
                let applies = match s.scope {
                    Scope::File => true,
                    Scope::Line(l) => l == f.line,
                };
                if !applies {
                    continue;
                }
                for ((rule, _), u) in s.rules.iter().zip(used.iter_mut()) {
                    if rule == f.rule {
                        *u = true;
                        suppressed = true;
                    }
                }
            }
        }
        if !suppressed {
            kept.push(f);
        }
    }

    let meta = &UNUSED_SUPPRESSION;
    let mut paths: Vec<&PathBuf> = parsed.keys().collect();
    paths.sort();
    for path in paths {
        if unparsable.contains(path) {
            // Nothing was linted in this file, so nothing could be suppressed.
            continue;
        }
        let (file, sups, used) = &parsed[path];
        let mut cx = Context::new(Some(file.clone()), meta, levels, &mut kept);
        for (s, used) in sups.iter().zip(used) {
            let unused: Vec<usize> = (0..s.rules.len())
                .filter(|&i| !used[i])
                .filter(|&i| {
                    // A rule that is allowed reports nothing, so its suppression is not "unused".
                    let rule = crate::rules::find(&s.rules[i].0);
                    rule.is_some_and(|m| levels.level_of(m) != Level::Allow)
                })
                .collect();
            for &i in &unused {
                let (rule, span) = &s.rules[i];
                let (removal, message) = if unused.len() == s.rules.len() && i == unused[0] {
                    (s.removal.clone(), "remove the suppression comment")
                } else if unused.len() == s.rules.len() {
                    continue;
                } else {
                    (list_item_removal(&file.text, span), "remove the rule from the suppression")
                };
                let what = match s.scope {
                    Scope::File => "in this file".to_string(),
                    Scope::Line(l) => format!("on line {l}"),
                };
                let mut names: Vec<&str> = vec![rule];
                if unused.len() == s.rules.len() && i == unused[0] {
                    names = unused.iter().map(|&j| s.rules[j].0.as_str()).collect();
                }
                let shown = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
                cx.report(
                    Report::new(
                        format!("unused suppression: no {shown} finding {what}"),
                        span.clone(),
                        "suppresses nothing",
                    )
                    .help(format!("{message}; it would hide a future finding here"))
                    .suggest(Suggestion {
                        message: message.to_string(),
                        span: removal,
                        replacement: String::new(),
                        applicability: Applicability::MachineApplicable,
                    }),
                );
            }
        }
        drop(cx);
    }
    for (file, problems) in problems_out {
        if unparsable.contains(&file.path) {
            continue;
        }
        let mut cx = Context::new(Some(file.clone()), meta, levels, &mut kept);
        for p in problems {
            cx.report(
                Report::new(p.message, p.span, "this comment suppresses nothing")
                    .help("write `// memlint: allow(rule_id)` on or above the line, or `// memlint: allow-file(rule_id)` at the top of the file")
                    .suggest(Suggestion {
                        message: "remove the suppression comment".into(),
                        span: p.removal,
                        replacement: String::new(),
                        applicability: Applicability::MaybeIncorrect,
                    }),
            );
        }
    }
    kept.sort_by(|a, b| {
        (a.file.path.as_path(), a.primary.span.start).cmp(&(b.file.path.as_path(), b.primary.span.start))
    });
    kept
}

/// The span of one name in `allow(a, b, c)` with the comma that separates it from its neighbour.
fn list_item_removal(text: &str, name: &Range<usize>) -> Range<usize> {
    let after = &text[name.end..];
    let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
    if after[spaces..].starts_with(',') {
        let rest = &after[spaces + 1..];
        let trailing = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        return name.start..name.end + spaces + 1 + trailing;
    }
    let before = &text[..name.start];
    let trimmed = before.trim_end_matches([' ', '\t']);
    if trimmed.ends_with(',') { trimmed.len() - 1..name.end } else { name.clone() }
}

/// The first line that holds code (not blank, a comment or an inner attribute).
fn first_code_line(file: &SourceFile) -> usize {
    let mut in_block = false;
    for line in 1..=file.line_count() {
        let t = file.text[file.line_range(line)].trim();
        if in_block {
            in_block = !t.contains("*/");
            continue;
        }
        if t.starts_with("/*") {
            in_block = !t.contains("*/");
            continue;
        }
        if t.is_empty() || t.starts_with("//") || t.starts_with("#!") {
            continue;
        }
        return line;
    }
    file.line_count() + 1
}

/// The first line after `line` that is not blank or a line comment.
fn next_code_line(file: &SourceFile, line: usize) -> usize {
    (line + 1..=file.line_count())
        .find(|&l| {
            let t = file.text[file.line_range(l)].trim();
            !t.is_empty() && !t.starts_with("//")
        })
        .unwrap_or(line + 1)
}

/// Byte ranges of the plain `//` comments (not doc comments) of a Rust file, skipping string,
/// raw string and character literals and block comments.
fn line_comments(text: &str) -> Vec<Range<usize>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |e| i + e);
                let doc =
                    matches!(b.get(i + 2), Some(b'!')) || (b.get(i + 2) == Some(&b'/') && b.get(i + 3) != Some(&b'/'));
                if !doc {
                    out.push(i..end);
                }
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 1;
                i += 2;
                while i < b.len() && depth > 0 {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
            }
            b'r' if !ident_before(b, i) || matches!(i.checked_sub(1).map(|j| b[j]), Some(b'b' | b'c')) => {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) == Some(&b'"') {
                    let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                    let from = i + 2 + hashes;
                    i = text[from..].find(&close).map_or(b.len(), |e| from + e + close.len());
                } else {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'\'' => {
                // A character literal ('x', '\n', '\u{..}') or a lifetime ('a).
                if b.get(i + 1) == Some(&b'\\') {
                    // Skip the quote, the backslash and the escaped character, then up to the end.
                    i += 3;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                } else {
                    let ch_len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    if b.get(i + 1 + ch_len) == Some(&b'\'') { i += 2 + ch_len } else { i += 1 }
                }
            }
            _ => i += 1,
        }
    }
    out
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// memlint's own diagnostic for a suppression comment that suppresses nothing; listed with the
/// rules (`explain`, docs) but reported here, after suppressions are matched to findings.
pub static UNUSED_SUPPRESSION: RuleMeta = RuleMeta {
    id: "unused_suppression",
    summary: "a suppression comment suppresses no finding",
    default_level: Level::Warn,
    group: crate::rule::Group::Stable,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_inside_literals_are_not_comments() {
        let text = "let s = \"// memlint: allow(rc_cycle)\"; let r = r#\"// x\"#; let c = '/'; // real\n/* // no */ fn f<'a>() {} // yes\n";
        let found: Vec<&str> = line_comments(text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(found, vec!["// real", "// yes"]);
        let text =
            "let q = '\\''; let s = \"'\"; let u = '\\u{2F}'; let e = \"\\\"//\"; /// doc\n//! inner\nx(); //// four\n";
        let found: Vec<&str> = line_comments(text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(found, vec!["//// four"]);
    }

    #[test]
    fn scopes_problems_and_spans() {
        let text = "// memlint: allow-file(rc_cycle)\nuse x;\n\n// memlint: allow(accumulated_loss_tensor, memlint::missing_zero_grad)\n\n    total += loss; // memlint: allow(retained_graph_output)\n// memlint: allow(no_such)\n// memlint: allow-file(rc_cycle)\n// memlint: deny(x)\n";
        let file = SourceFile::new("a.rs", text);
        let (sups, problems) = parse(&file);
        let scopes: Vec<Scope> = sups.iter().map(|s| s.scope).collect();
        assert_eq!(scopes, vec![Scope::File, Scope::Line(6), Scope::Line(6)]);
        assert_eq!(
            sups[1].rules.iter().map(|(r, s)| (r.as_str(), &text[s.clone()])).collect::<Vec<_>>(),
            vec![
                ("accumulated_loss_tensor", "accumulated_loss_tensor"),
                ("missing_zero_grad", "memlint::missing_zero_grad")
            ]
        );
        // The trailing comment's removal keeps the code and its line break.
        assert_eq!(&text[sups[2].removal.clone()], " // memlint: allow(retained_graph_output)");
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "suppression names an unknown rule `no_such`",
                "`allow-file` suppression is not at the top of the file",
                "suppression comment is not understood"
            ]
        );
    }

    #[test]
    fn list_items_are_removed_with_one_comma() {
        let text = "allow(a, b, c)";
        assert_eq!(&text[list_item_removal(text, &(6..7))], "a, ");
        assert_eq!(&text[list_item_removal(text, &(12..13))], ", c");
    }
}
