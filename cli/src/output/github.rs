//! GitHub Actions workflow commands: one `::warning …::message` (or `::error`, `::notice`) line
//! per finding, which the runner turns into an annotation on the pull request's diff.

use memlint_lint::{Finding, Level};

/// `::warning file=src/lib.rs,line=6,col=5,endLine=6,endColumn=9,title=memlint::rc_cycle::…`.
pub fn render(f: &Finding) -> String {
    let command = match f.level {
        Level::Deny => "error",
        Level::Warn => "warning",
        Level::Allow => "notice",
    };
    let (end_line, end_column) = f.file.line_col(f.primary.span.end.max(f.primary.span.start));
    let path = f.file.path.to_string_lossy().replace('\\', "/");
    let mut message = f.message.clone();
    if let Some(help) = &f.help {
        message.push_str(&format!("\nhelp: {help}"));
    }
    message.push_str(&format!("\nsee {}", f.url()));
    format!(
        "::{command} file={},line={},col={},endLine={end_line},endColumn={end_column},title={}::{}",
        escape_property(&path),
        f.line,
        f.column,
        escape_property(&f.code()),
        escape_data(&message)
    )
}

/// The message part: `%`, CR and LF are escaped (as `@actions/core` does).
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A property value: also `:` and `,`, which separate properties.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_the_actions_toolkit() {
        assert_eq!(escape_data("100% done\r\nnext: a,b"), "100%25 done%0D%0Anext: a,b");
        assert_eq!(escape_property("memlint::a,b%"), "memlint%3A%3Aa%2Cb%25");
    }
}
