//! A view whose flow the TUI does not drive yet: an honest empty state that says so and
//! names the commands and files that do its work today, showing nothing it has not read.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::super::action::Action;
use super::super::theme::Theme;
use super::View;

/// An empty state: the first line says what is not built, the rest where the work is
/// done today.
#[derive(Debug, Clone, Copy)]
pub struct NotBuilt {
    title: &'static str,
    block: &'static str,
    lines: &'static [&'static str],
    theme: Theme,
}

impl NotBuilt {
    /// The view titled `title` (its tab), `block` (its frame), saying `lines`.
    #[must_use]
    pub fn new(
        title: &'static str,
        block: &'static str,
        lines: &'static [&'static str],
        theme: Theme,
    ) -> Self {
        Self {
            title,
            block,
            lines,
            theme,
        }
    }
}

impl View for NotBuilt {
    fn title(&self) -> &'static str {
        self.title
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn handle_key(&mut self, _key: KeyEvent) -> Option<Action> {
        None
    }
}

impl Widget for &NotBuilt {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let lines: Vec<Line<'_>> = self
            .lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if i == 0 {
                    Line::styled(*l, t.title())
                } else {
                    Line::styled(*l, t.dim())
                }
            })
            .collect();
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(
                Block::new()
                    .borders(Borders::ALL)
                    .title(Span::styled(self.block, t.title())),
            )
            .render(area, buf);
    }
}
