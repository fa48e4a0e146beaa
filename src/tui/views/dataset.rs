//! The Dataset view (`2`, TUI-29..TUI-35): not built yet; it says so and names the commands and files that hold the dataset today, and shows nothing it has not read.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::super::action::Action;
use super::super::theme::Theme;
use super::View;

/// The Dataset view: an empty state naming the commands that do its work today.
#[derive(Debug, Clone, Copy)]
pub struct DatasetView {
    theme: Theme,
}

const LINES: &[&str] = &[
    "The dataset browser is not built in this version of the TUI.",
    "",
    "The dataset lives in data/ (topics, subtopics, questions, answers;",
    "train.jsonl and eval.jsonl after split).",
    "",
    "From the command line: `overbrainer history` shows the stages run and their cost.",
];

impl DatasetView {
    /// The view.
    #[must_use]
    pub fn new(theme: Theme) -> Self {
        Self { theme }
    }
}

impl View for DatasetView {
    fn title(&self) -> &'static str {
        "Dataset"
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn handle_key(&mut self, _key: KeyEvent) -> Option<Action> {
        None
    }
}

impl Widget for &DatasetView {
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
                    .title(Span::styled(" dataset ", t.title())),
            )
            .render(area, buf);
    }
}
