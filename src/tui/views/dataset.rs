//! The Dataset view (`2`, TUI-29, issue 17): the stages' files under `data/` with their
//! record counts, the questions with their topic, subtopic and answer, and every line
//! that could not be read (by file and line), as [`crate::dataset::listing::list`]
//! read them. Not built yet: search, filters and delete (TUI-30..TUI-35).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::super::action::Action;
use super::super::theme::Theme;
use super::{View, step, truncate};
use crate::dataset::listing::{Listing, Row};

/// What the view says when no stage has written a file.
const EMPTY: &[&str] = &[
    "No dataset yet: data/ holds none of the stages' files.",
    "",
    "`overbrainer subtopics`, `questions`, `answers` and `split` write them,",
    "or `overbrainer run` for all of them.",
];

const KEYS: &[(&str, &str)] = &[("j/k", "select"), ("R", "reload")];

/// The Dataset view.
#[derive(Debug, Clone)]
pub struct DatasetView {
    theme: Theme,
    listing: Option<Listing>,
    selected: usize,
}

/// The view.
#[must_use]
pub fn new(theme: Theme) -> DatasetView {
    DatasetView {
        theme,
        listing: None,
        selected: 0,
    }
}

impl DatasetView {
    /// Replaces what was read, keeping the selected question where it still is.
    pub fn set_listing(&mut self, listing: Listing) {
        let kept = self
            .listing
            .as_ref()
            .and_then(|old| old.rows.get(self.selected))
            .and_then(|old| listing.rows.iter().position(|r| r.id == old.id))
            .unwrap_or(0);
        self.listing = Some(listing);
        self.selected = kept;
    }

    /// The selected question's detail: topic, subtopic, ID, whether its answer is excluded,
    /// the question and the answer.
    fn detail(&self, row: &Row) -> Vec<Line<'static>> {
        let t = self.theme;
        let field = |key: &str, value: String| {
            Line::from(vec![
                Span::styled(format!("{key:<10}"), t.dim()),
                Span::styled(value, t.text()),
            ])
        };
        let mut lines = vec![
            field("Topic", row.topic.clone()),
            field("Subtopic", row.subtopic.clone()),
            field("ID", row.id.clone()),
        ];
        if let Some(code) = row.excluded {
            lines.push(Line::styled(
                format!("Excluded from training: {code}"),
                t.warn(),
            ));
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled("── Question ──", t.dim()));
        lines.push(Line::styled(row.question.clone(), t.text()));
        if let Some(meta) = &row.meta {
            lines.push(field(
                "Answered",
                format!(
                    "{} · {} in / {} out tokens · finish {}",
                    meta.model,
                    meta.input_tokens,
                    meta.output_tokens,
                    meta.finish_reason.as_deref().unwrap_or("n/a")
                ),
            ));
        }
        if let Some(reasoning) = &row.reasoning {
            lines.push(Line::raw(""));
            lines.push(Line::styled("── Reasoning ──", t.dim()));
            lines.extend(
                reasoning
                    .lines()
                    .map(|l| Line::styled(l.to_owned(), t.text())),
            );
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled("── Answer ──", t.dim()));
        match &row.answer {
            Some(answer) => {
                lines.extend(answer.lines().map(|l| Line::styled(l.to_owned(), t.text())));
            }
            None => lines.push(Line::styled("No answer yet.", t.dim())),
        }
        lines
    }

    /// The selected question's index.
    #[must_use]
    pub fn selected(&self) -> usize {
        self.selected
    }
}

impl View for DatasetView {
    fn title(&self) -> &'static str {
        "Dataset"
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        KEYS
    }

    fn handle_key(&mut self, key: KeyEvent) -> Option<Action> {
        let delta = match key.code {
            KeyCode::Char('j') | KeyCode::Down => 1,
            KeyCode::Char('k') | KeyCode::Up => -1,
            _ => return None,
        };
        let len = self.listing.as_ref().map_or(0, |l| l.rows.len());
        self.selected = step(self.selected, len, delta);
        None
    }
}

impl Widget for &DatasetView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = |title: &'static str| {
            Block::new()
                .borders(Borders::ALL)
                .title(Span::styled(title, t.title()))
        };
        let Some(listing) = &self.listing else {
            Paragraph::new(Line::styled("Reading data/…", t.dim()))
                .block(block(" dataset "))
                .render(area, buf);
            return;
        };
        let error_height = if listing.errors.is_empty() {
            0
        } else {
            u16::try_from(listing.errors.len().min(4) + 2).unwrap_or(6)
        };
        let [main, errors] =
            Layout::vertical([Constraint::Min(5), Constraint::Length(error_height)]).areas(area);
        if !listing.errors.is_empty() {
            let lines: Vec<Line<'_>> = listing
                .errors
                .iter()
                .map(|e| Line::styled(e.clone(), t.error()))
                .collect();
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(block(" unreadable "))
                .render(errors, buf);
        }
        if listing.is_empty() {
            let lines: Vec<Line<'_>> = EMPTY
                .iter()
                .enumerate()
                .map(|(i, l)| Line::styled(*l, if i == 0 { t.title() } else { t.dim() }))
                .collect();
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(block(" dataset "))
                .render(main, buf);
            return;
        }
        let [left, detail] =
            Layout::horizontal([Constraint::Length(32), Constraint::Min(20)]).areas(main);
        let files_height = u16::try_from(listing.files.len() + 2).unwrap_or(7);
        let [files, questions] =
            Layout::vertical([Constraint::Length(files_height), Constraint::Min(3)]).areas(left);
        let file_lines: Vec<Line<'_>> = listing
            .files
            .iter()
            .map(|f| match f.records {
                Some(n) => Line::styled(format!("{:<18} {n:>9}", f.name), t.text()),
                None => Line::styled(format!("{:<18} {:>9}", f.name, "none"), t.dim()),
            })
            .collect();
        Paragraph::new(file_lines)
            .block(block(" data/ "))
            .render(files, buf);
        let visible = usize::from(questions.height.saturating_sub(2)).max(1);
        let first = self.selected.saturating_sub(visible - 1);
        let items: Vec<Line<'_>> = listing
            .rows
            .iter()
            .enumerate()
            .skip(first)
            .take(visible)
            .map(|(i, r)| {
                let style = if i == self.selected {
                    t.selected()
                } else {
                    t.text()
                };
                // TUI-31's markers, less `[o]` (the configured topics are not read here).
                let marker = match (&r.answer, r.excluded) {
                    (_, Some(_)) => "[x]",
                    (Some(_), None) => "[a]",
                    (None, None) => "[ ]",
                };
                Line::styled(format!("{marker} {}", truncate(&r.question, 26)), style)
            })
            .collect();
        Paragraph::new(items)
            .block(block(" questions "))
            .render(questions, buf);
        let Some(row) = listing.rows.get(self.selected) else {
            Paragraph::new(Line::styled(
                "No questions yet: `overbrainer questions` writes them.",
                t.dim(),
            ))
            .wrap(Wrap { trim: false })
            .block(block(" record "))
            .render(detail, buf);
            return;
        };
        let lines = self.detail(row);
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block(" record "))
            .render(detail, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn row(id: &str) -> Row {
        Row {
            id: id.into(),
            topic: "t".into(),
            subtopic: "s".into(),
            question: "q".into(),
            answer: None,
            reasoning: None,
            meta: None,
            excluded: None,
        }
    }

    #[test]
    fn j_and_k_move_within_the_questions_and_a_reload_keeps_the_selected_one() {
        let key = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        let mut view = new(Theme::new(false));
        assert_eq!(view.handle_key(key('j')), None);
        assert_eq!(view.selected(), 0);
        view.set_listing(Listing {
            rows: vec![row("a"), row("b")],
            ..Listing::default()
        });
        view.handle_key(key('j'));
        view.handle_key(key('j'));
        assert_eq!(view.selected(), 1);
        view.set_listing(Listing {
            rows: vec![row("z"), row("a"), row("b")],
            ..Listing::default()
        });
        assert_eq!(view.selected(), 2);
        view.handle_key(key('k'));
        assert_eq!(view.selected(), 1);
    }
}
