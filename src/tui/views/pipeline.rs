//! The Pipeline view (`3`, TUI-36..TUI-40): not built yet; it says so and names the commands that run the stages today, and shows nothing it has not measured.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::super::action::Action;
use super::super::theme::Theme;
use super::View;

/// The Pipeline view: an empty state naming the commands that do its work today.
#[derive(Debug, Clone, Copy)]
pub struct PipelineView {
    theme: Theme,
}

const LINES: &[&str] = &[
    "Running stages from the TUI is not built in this version.",
    "",
    "From the command line: `overbrainer subtopics`, `questions`, `answers`, `split`,",
    "or `overbrainer run` for all of them (then training, with [training]).",
    "",
    "Training runs started from the command line show in the Training view (4) after R.",
];

impl PipelineView {
    /// The view.
    #[must_use]
    pub fn new(theme: Theme) -> Self {
        Self { theme }
    }
}

impl View for PipelineView {
    fn title(&self) -> &'static str {
        "Pipeline"
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn handle_key(&mut self, _key: KeyEvent) -> Option<Action> {
        None
    }
}

impl Widget for &PipelineView {
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
                    .title(Span::styled(" pipeline ", t.title())),
            )
            .render(area, buf);
    }
}
