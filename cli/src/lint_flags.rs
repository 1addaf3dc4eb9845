//! Lint-level flags after `--`, as clippy users write them: `cargo memlint -- -D warnings`.

use memlint_lint::Level;

/// What the flags after `--` may be.
pub const HELP: &str = "after `--` memlint takes lint levels as clippy does: `-D RULE`, `-W RULE`, `-A RULE`, \
`-F RULE` (forbid, treated as deny), their long forms `--deny RULE`/`--deny=RULE`, or `-DRULE`";

/// The `(rule, level)` pairs of the flags after `--`, in order.
pub fn parse(flags: &[String]) -> Result<Vec<(String, Level)>, String> {
    let mut out = Vec::new();
    let mut iter = flags.iter();
    while let Some(flag) = iter.next() {
        let Some((level, attached)) = split(flag) else {
            return Err(format!("`{flag}` after `--` is not a lint level flag"));
        };
        let name = match attached {
            Some(name) => name.to_string(),
            None => iter.next().cloned().ok_or_else(|| format!("`{flag}` after `--` needs a rule name"))?,
        };
        if name.is_empty() || name.starts_with('-') {
            return Err(format!("`{flag}` after `--` needs a rule name, found `{name}`"));
        }
        out.push((name, level));
    }
    Ok(out)
}

/// The level of a flag and the rule attached to it (`-Dwarnings`, `--deny=warnings`).
fn split(flag: &str) -> Option<(Level, Option<&str>)> {
    for (short, long, level) in [
        ("-D", "--deny", Level::Deny),
        ("-F", "--forbid", Level::Deny),
        ("-W", "--warn", Level::Warn),
        ("-A", "--allow", Level::Allow),
    ] {
        if flag == short || flag == long {
            return Some((level, None));
        }
        if let Some(rest) = flag.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            return Some((level, Some(rest)));
        }
        if let Some(rest) = flag.strip_prefix(short).filter(|r| !r.starts_with('-')) {
            return Some((level, Some(rest)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(flags: &[&str]) -> Result<Vec<(String, Level)>, String> {
        parse(&flags.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn clippy_spellings() {
        let want = |v: &[(&str, Level)]| Ok(v.iter().map(|(n, l)| (n.to_string(), *l)).collect());
        assert_eq!(p(&["-D", "warnings"]), want(&[("warnings", Level::Deny)]));
        assert_eq!(
            p(&["-Dwarnings", "--allow=rc_cycle", "--warn", "memlint::rc_cycle", "-F", "x"]),
            want(&[
                ("warnings", Level::Deny),
                ("rc_cycle", Level::Allow),
                ("memlint::rc_cycle", Level::Warn),
                ("x", Level::Deny)
            ])
        );
    }

    #[test]
    fn other_flags_and_missing_names_are_errors() {
        assert_eq!(p(&["--cap-lints", "warn"]), Err("`--cap-lints` after `--` is not a lint level flag".into()));
        assert_eq!(p(&["-D"]), Err("`-D` after `--` needs a rule name".into()));
        assert_eq!(p(&["-D", "-W"]), Err("`-D` after `--` needs a rule name, found `-W`".into()));
        assert_eq!(p(&["warnings"]), Err("`warnings` after `--` is not a lint level flag".into()));
    }
}
