//! The `?` overlay: the current view's keys, then the keys of every view (TUI-5).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use super::super::theme::Theme;

/// Keys available in every view.
pub const GLOBAL_KEYS: &[(&str, &str)] = &[
    ("1-6 Tab S-Tab", "switch view"),
    ("?", "this help (Esc, ? or q closes it)"),
    ("q Ctrl-C", "quit (a followed run is detached)"),
    ("Ctrl-Z", "suspend"),
    ("R", "re-read the runs from disk"),
    ("r", "menu: auto, each stage, run"),
];

/// Draws the overlay for a view (or a picker, a confirmation) titled `view` with keys
/// `keys`, then, with `global`, the keys of every view.
pub fn render(
    (view, global): (&str, bool),
    keys: &[(&str, &str)],
    area: Rect,
    buf: &mut Buffer,
    theme: Theme,
) {
    let mut lines = Vec::new();
    // A key the view gives its own meaning is listed once, with the view's.
    let every: Vec<(&str, &str)> = GLOBAL_KEYS
        .iter()
        .copied()
        .filter(|(key, _)| global && !keys.iter().any(|(own, _)| own == key))
        .collect();
    let gap: &[(&str, &str)] = if global { &[("", "")] } else { &[] };
    for (key, what) in keys.iter().chain(gap).chain(every.iter()) {
        if key.is_empty() {
            lines.push(Line::raw(""));
            continue;
        }
        lines.push(Line::from(vec![
            Span::styled(format!("{key:>14}  "), theme.title()),
            Span::raw(*what),
        ]));
    }
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let rect = super::centered(area, 60, height);
    Clear.render(rect, buf);
    buf.set_style(rect, theme.base());
    Paragraph::new(lines)
        .block(
            Block::new()
                .borders(Borders::ALL)
                .title(Span::styled(format!(" {view}: keys "), theme.title())),
        )
        .render(rect, buf);
}
