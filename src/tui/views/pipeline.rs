//! The Pipeline view (`3`, TUI-36, issue 17): the four dataset stages with what each has
//! written under `data/` (its file's record count, or that it has not run), read with the
//! Dataset view by [`crate::dataset::listing::list`]. Not built yet: starting a stage, its
//! live progress, and auto mode (TUI-36..TUI-40); `overbrainer subtopics`, `questions`,
//! `answers`, `split` or `overbrainer run` do that.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::super::action::Action;
use super::super::theme::Theme;
use super::View;
use crate::dataset::listing::Listing;

const KEYS: &[(&str, &str)] = &[("R", "reload")];

/// The Pipeline view.
#[derive(Debug, Clone)]
pub struct PipelineView {
    theme: Theme,
    listing: Option<Listing>,
}

/// The view.
#[must_use]
pub fn new(theme: Theme) -> PipelineView {
    PipelineView {
        theme,
        listing: None,
    }
}

impl PipelineView {
    /// Replaces what was read.
    pub fn set_listing(&mut self, listing: Listing) {
        self.listing = Some(listing);
    }
}

/// The records of `name` in `listing`, `None` when the file does not exist.
fn records(listing: &Listing, name: &str) -> Option<usize> {
    listing
        .files
        .iter()
        .find(|f| f.name == name)
        .and_then(|f| f.records)
}

impl View for PipelineView {
    fn title(&self) -> &'static str {
        "Pipeline"
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        KEYS
    }

    fn handle_key(&mut self, _key: KeyEvent) -> Option<Action> {
        None
    }
}

impl Widget for &PipelineView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = Block::new()
            .borders(Borders::ALL)
            .title(Span::styled(" pipeline ", t.title()));
        let Some(listing) = &self.listing else {
            Paragraph::new(Line::styled("Reading data/…", t.dim()))
                .block(block)
                .render(area, buf);
            return;
        };
        let stage = |name: &str, written: Option<String>| match written {
            Some(text) => Line::from(vec![
                Span::styled(format!("{name:<11}"), t.text()),
                Span::styled(text, t.text()),
            ]),
            None => Line::from(vec![
                Span::styled(format!("{name:<11}"), t.text()),
                Span::styled("not run (no file in data/)", t.dim()),
            ]),
        };
        let split = match (
            records(listing, "train.jsonl"),
            records(listing, "eval.jsonl"),
        ) {
            (None, None) => None,
            (train, eval) => Some(format!(
                "{} train, {} eval",
                train.unwrap_or(0),
                eval.unwrap_or(0)
            )),
        };
        let mut lines = vec![
            Line::styled("What each stage has written, read from data/", t.dim()),
            Line::raw(""),
            stage(
                "subtopics",
                records(listing, "subtopics.jsonl").map(|n| format!("{n} subtopics")),
            ),
            stage(
                "questions",
                records(listing, "questions.jsonl").map(|n| format!("{n} questions")),
            ),
            stage(
                "answers",
                records(listing, "answers.jsonl").map(|n| format!("{n} answers")),
            ),
            stage("split", split),
        ];
        if !listing.errors.is_empty() {
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                format!(
                    "{} unreadable line(s): the Dataset view (2) names them",
                    listing.errors.len()
                ),
                t.error(),
            ));
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            "Starting stages from the TUI is not built in this version:",
            t.dim(),
        ));
        lines.push(Line::styled(
            "`overbrainer subtopics`, `questions`, `answers`, `split`, or `overbrainer run`.",
            t.dim(),
        ));
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block)
            .render(area, buf);
    }
}
