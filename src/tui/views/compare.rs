//! The Compare view (`6`, TUI-58, TUI-59): compares are not in this build; an honest empty state names the command.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::super::action::Action;
use super::super::theme::Theme;
use super::View;

/// The Compare view: an empty state naming the commands that do its work today.
#[derive(Debug, Clone, Copy)]
pub struct CompareView {
    theme: Theme,
}

const LINES: &[&str] = &[
    "This view is not built yet: it does not list compares.",
    "",
    "`overbrainer compare --run RUN_ID` compares an exported run with its parent;",
    "its report is `runs/RUN_ID/compares/COMPARE_ID/compare.md`.",
];

impl CompareView {
    /// The view.
    #[must_use]
    pub fn new(theme: Theme) -> Self {
        Self { theme }
    }
}

impl View for CompareView {
    fn title(&self) -> &'static str {
        "Compare"
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn handle_key(&mut self, _key: KeyEvent) -> Option<Action> {
        None
    }
}

impl Widget for &CompareView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let lines: Vec<Line<'_>> = LINES
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
                    .title(Span::styled(" compare ", t.title())),
            )
            .render(area, buf);
    }
}
