//! miette's graphical rendering.

use miette::{GraphicalReportHandler, GraphicalTheme};

use crate::diagnostic::Finding;

/// How to render: colour, width, links. Tests use [`Style::plain`].
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
    pub width: usize,
    pub links: bool,
}

impl Style {
    /// No colour, width 80, no links: deterministic output for snapshots.
    pub fn plain() -> Self {
        Self { color: false, width: 80, links: false }
    }
}

pub fn render(f: &Finding, style: Style) -> String {
    let theme = if style.color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
    let handler =
        GraphicalReportHandler::new_themed(theme).with_width(style.width).with_links(style.links).with_context_lines(1);
    let mut out = String::new();
    let diagnostic = f.diagnostic();
    if handler.render_report(&mut out, &diagnostic).is_err() {
        out = crate::output::short::render(f);
    }
    out
}
