//! The `r` menu (TUI-5): auto, each stage, run; `j`/`k` move, Enter runs, Esc closes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use super::super::theme::Theme;

/// Draws the menu of `entries` with `selected` highlighted, centred in `area`.
pub fn render(entries: &[&str], selected: usize, area: Rect, buf: &mut Buffer, theme: Theme) {
    let lines: Vec<Line<'_>> = entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let style = if i == selected {
                theme.selected()
            } else {
                theme.text()
            };
            // The whole row inside the borders is highlighted, not only the name.
            Line::styled(format!(" {entry:<21}"), style)
        })
        .collect();
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let rect = super::centered(area, 24, height);
    Clear.render(rect, buf);
    buf.set_style(rect, theme.base());
    Paragraph::new(lines)
        .block(
            Block::new()
                .borders(Borders::ALL)
                .title(Span::styled(" run ", theme.title())),
        )
        .render(rect, buf);
}
