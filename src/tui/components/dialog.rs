//! A confirmation dialog: `y` confirms, `n`, Esc and Enter cancel; `n` is the highlighted
//! default (TUI-63).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget, Wrap};

pub use super::super::action::Dialog;

use super::super::action::Action;
use super::super::theme::Theme;

/// What a key did to a dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// `y`: carry out the action.
    Yes(Action),
    /// `n`, Esc or Enter: close, nothing happens.
    No,
    /// Any other key: the dialog stays.
    Pending,
}

impl Dialog {
    /// The answer `key` gives.
    #[must_use]
    pub fn handle_key(&self, key: KeyEvent) -> Answer {
        match key.code {
            KeyCode::Char('y') => Answer::Yes((*self.yes).clone()),
            KeyCode::Char('n') | KeyCode::Esc | KeyCode::Enter => Answer::No,
            _ => Answer::Pending,
        }
    }

    /// Draws the dialog centred in `area`.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: Theme) {
        render(&self.title, &self.lines, area, buf, theme);
    }
}

/// Draws a question titled `title` with `lines` and the `y`/`n` answers, centred in
/// `area`. Long lines wrap; when the lines do not fit, the last ones are cut and the
/// answers stay on the bottom row.
pub fn render(title: &str, lines: &[String], area: Rect, buf: &mut Buffer, theme: Theme) {
    let width = lines
        .iter()
        .map(|l| l.chars().count())
        .chain([title.chars().count() + 4, 24])
        .max()
        .unwrap_or(24);
    let width = u16::try_from(width + 4)
        .unwrap_or(u16::MAX)
        .min(area.width.saturating_sub(4));
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let rows: usize = lines
        .iter()
        .map(|l| l.chars().count().div_ceil(inner).max(1))
        .sum();
    let height = u16::try_from(rows + 4).unwrap_or(u16::MAX);
    let rect = super::centered(area, width, height);
    Clear.render(rect, buf);
    buf.set_style(rect, theme.base());
    let block = Block::new()
        .borders(Borders::ALL)
        .title(Span::styled(format!(" {title} "), theme.title()));
    let inside = block.inner(rect);
    block.render(rect, buf);
    let text: Vec<Line<'_>> = lines.iter().map(|l| Line::raw(l.as_str())).collect();
    let body = Rect {
        height: inside.height.saturating_sub(2),
        ..inside
    };
    Paragraph::new(text)
        .wrap(Wrap { trim: false })
        .render(body, buf);
    let answers = Rect {
        y: inside.y + inside.height.saturating_sub(1),
        height: inside.height.min(1),
        ..inside
    };
    Paragraph::new(Line::from(vec![
        Span::styled("y", theme.title()),
        Span::raw(" yes   "),
        Span::styled(" n ", theme.selected()),
        Span::raw(" no"),
    ]))
    .render(answers, buf);
}
