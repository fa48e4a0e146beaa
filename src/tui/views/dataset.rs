//! The Dataset view (`2`, TUI-29..TUI-31, issue 17): the stages' files under `data/` with
//! their record counts, the tree of topics → subtopics → questions ([`Tree`]) with the
//! selected node's detail, an optional stats pane for the selected topic, and every line
//! that could not be read (by file and line), as [`crate::dataset::listing::list`] read
//! them; `e` edits the selected question's text or subtopic's name and `E` the selected
//! question's answer in the user's editor (TUI-32, TUI-33); `d`/`D` ask to delete the
//! selected item with its dependents (TUI-34). Not built yet: deleting a configured topic.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::super::action::Action;
use super::super::theme::Theme;
use super::View;
use super::dataset_tree::{Node, Tree};
use super::truncate;
use crate::dataset::answer_edit::AnswerText;
use crate::dataset::delete::{Target, dependents};
use crate::dataset::listing::{Listing, Row};

/// What the view says when no stage has written a file.
const EMPTY: &[&str] = &[
    "No dataset yet: data/ holds none of the stages' files.",
    "",
    "`overbrainer subtopics`, `questions`, `answers` and `split` write them,",
    "or `overbrainer run` for all of them.",
];

const KEYS: &[(&str, &str)] = &[
    ("j/k", "move"),
    ("l/h", "open/close"),
    ("Enter", "toggle"),
    ("PgUp/PgDn", "scroll"),
    ("[/]", "section"),
    ("/", "filter"),
    ("s", "stats"),
    ("e", "edit"),
    ("E", "edit answer"),
    ("d", "delete"),
    ("D", "delete answer"),
    ("R", "reload"),
];

/// Lines PgUp/PgDn scroll the detail by.
const PAGE: u16 = 10;

/// The detail's sections `[` and `]` jump between (TUI-30).
const SECTIONS: [&str; 3] = ["── Question ──", "── Reasoning ──", "── Answer ──"];

/// The Dataset view.
#[derive(Debug, Clone)]
pub struct DatasetView {
    theme: Theme,
    listing: Option<Listing>,
    tree: Tree,
    /// The filter as typed, and whether it is being typed.
    filter: String,
    typing: bool,
    stats: bool,
    /// The detail's section shown first (index into [`SECTIONS`]) and its scroll.
    section: usize,
    scroll: u16,
}

/// The view.
#[must_use]
pub fn new(theme: Theme) -> DatasetView {
    DatasetView {
        theme,
        listing: None,
        tree: Tree::default(),
        filter: String::new(),
        typing: false,
        stats: false,
        section: 0,
        scroll: 0,
    }
}

impl DatasetView {
    /// Replaces what was read, keeping the selected node and the expanded ones.
    pub fn set_listing(&mut self, listing: Listing) {
        self.tree.rebuild(&listing);
        self.listing = Some(listing);
    }

    /// The tree.
    #[must_use]
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The selected question's detail: its text, a line with its ID and status, the
    /// answer's metadata, then the reasoning and the answer, each under a heading.
    fn question_detail(&self, row: &Row) -> Vec<Line<'static>> {
        let t = self.theme;
        let mut lines = vec![Line::styled(SECTIONS[0], t.dim())];
        lines.extend(
            row.question
                .lines()
                .map(|l| Line::styled(l.to_owned(), t.text())),
        );
        let status = match (&row.answer, row.excluded) {
            _ if row.orphaned => format!("orphaned: topic {} is no longer configured", row.topic),
            (_, Some(code)) => format!("answer excluded from training: {code}"),
            (Some(_), None) => "answered".to_owned(),
            (None, None) => "unanswered".to_owned(),
        };
        lines.push(Line::from(vec![
            Span::styled("ID ", t.dim()),
            Span::styled(row.id.clone(), t.text()),
            Span::styled(" · ", t.dim()),
            Span::styled(
                status,
                if row.excluded.is_some() || row.orphaned {
                    t.warn()
                } else {
                    t.text()
                },
            ),
        ]));
        if let Some(meta) = &row.meta {
            lines.push(Line::styled(
                format!(
                    "{} · {} in / {} out tokens · finish {}{}",
                    meta.model,
                    meta.input_tokens,
                    meta.output_tokens,
                    meta.finish_reason.as_deref().unwrap_or("n/a"),
                    if meta.edited {
                        " · edited by hand"
                    } else {
                        ""
                    }
                ),
                t.dim(),
            ));
        }
        if let Some(reasoning) = &row.reasoning {
            lines.push(Line::raw(""));
            lines.push(Line::styled(SECTIONS[1], t.dim()));
            lines.extend(
                reasoning
                    .lines()
                    .map(|l| Line::styled(l.to_owned(), t.text())),
            );
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled(SECTIONS[2], t.dim()));
        match &row.answer {
            Some(answer) => {
                lines.extend(answer.lines().map(|l| Line::styled(l.to_owned(), t.text())));
            }
            None => lines.push(Line::styled(
                "No answer yet: `overbrainer answers` writes it.",
                t.dim(),
            )),
        }
        lines
    }

    /// A topic's or subtopic's detail: its name and counts.
    fn group_detail(&self, listing: &Listing, node: &Node) -> Vec<Line<'static>> {
        let t = self.theme;
        let (title, rows): (String, Vec<&Row>) = match node {
            Node::Topic(topic) => (
                format!("Topic {topic}"),
                listing.rows.iter().filter(|r| &r.topic == topic).collect(),
            ),
            Node::Subtopic(topic, subtopic) => (
                format!("Subtopic {subtopic} of topic {topic}"),
                listing
                    .rows
                    .iter()
                    .filter(|r| &r.topic == topic && &r.subtopic == subtopic)
                    .collect(),
            ),
            Node::Question(_) => return Vec::new(),
        };
        let answered = rows.iter().filter(|r| r.answer.is_some()).count();
        let excluded = rows.iter().filter(|r| r.excluded.is_some()).count();
        vec![
            Line::styled(title, t.title()),
            Line::styled(
                format!(
                    "{} · {answered} answered · {excluded} excluded",
                    counted(rows.len(), "question")
                ),
                t.text(),
            ),
        ]
    }

    /// The stats pane's lines for the selected topic (TUI-30).
    fn stats_lines(&self, listing: &Listing) -> Vec<Line<'static>> {
        let t = self.theme;
        let Some(topic) = self.tree.selected_topic(listing) else {
            return vec![Line::styled("No topic selected.", t.dim())];
        };
        let rows: Vec<&Row> = listing.rows.iter().filter(|r| r.topic == topic).collect();
        let subtopics = listing
            .subtopics
            .iter()
            .filter(|s| s.topic == topic)
            .count();
        let answered = rows.iter().filter(|r| r.answer.is_some()).count();
        let excluded = rows.iter().filter(|r| r.excluded.is_some()).count();
        let split = match listing.split.get(topic) {
            Some(sizes) => format!("train {} · eval {}", sizes.train, sizes.eval),
            None => "train/eval: not split yet".to_owned(),
        };
        let mut lines = vec![
            Line::styled(format!("Topic {topic}"), t.title()),
            Line::styled(split, t.text()),
            Line::styled(
                format!(
                    "{} · {} · {answered} answered · {excluded} excluded",
                    counted(subtopics, "subtopic"),
                    counted(rows.len(), "question")
                ),
                t.text(),
            ),
        ];
        if let Some(&n) = listing.orphaned_answers.get(topic) {
            lines.push(Line::styled(
                format!(
                    "{} (question gone; not split)",
                    counted(n, "orphaned answer")
                ),
                t.warn(),
            ));
        }
        lines
    }

    fn filter_key(&mut self, key: KeyEvent) {
        match key.code {
            KeyCode::Esc => {
                self.typing = false;
                self.filter.clear();
            }
            KeyCode::Enter => self.typing = false,
            KeyCode::Backspace => {
                self.filter.pop();
            }
            KeyCode::Char(c) => self.filter.push(c),
            _ => return,
        }
        if let Some(listing) = &self.listing {
            self.tree.set_filter(&self.filter, listing);
        }
    }

    /// `e` (TUI-32): the selected question's text or subtopic's name, in the editor.
    fn edit(&self) -> Action {
        let Some(listing) = &self.listing else {
            return Action::refuse("data/ is still being read");
        };
        match (
            self.tree.selected_item().map(|i| &i.node),
            self.tree.selected_row(listing),
        ) {
            (Some(Node::Question(id)), Some(row)) => {
                Action::EditData(super::super::dataset_edit::DataEdit::Question {
                    id: id.clone(),
                    shown: row.question.clone(),
                })
            }
            (Some(Node::Subtopic(topic, name)), _) => {
                Action::EditData(super::super::dataset_edit::DataEdit::Subtopic {
                    topic: topic.clone(),
                    name: name.clone(),
                })
            }
            _ => Action::refuse("`e` edits a question's text or a subtopic's name: select one"),
        }
    }

    /// `E` (TUI-32): the selected question's answer, its reasoning and content, in the
    /// editor; a question without an answer opens nothing.
    fn edit_answer(&self) -> Action {
        let Some(listing) = &self.listing else {
            return Action::refuse("data/ is still being read");
        };
        match (
            self.tree.selected_item().map(|i| &i.node),
            self.tree.selected_row(listing),
        ) {
            (Some(Node::Question(_)), Some(row)) => match &row.answer {
                Some(content) => Action::EditData(super::super::dataset_edit::DataEdit::Answer {
                    id: row.id.clone(),
                    shown: AnswerText {
                        reasoning: row.reasoning.clone().unwrap_or_default(),
                        content: content.clone(),
                    },
                }),
                None => Action::refuse(format!(
                    "question {} has no answer to edit yet: `overbrainer answers` writes it",
                    row.id
                )),
            },
            _ => Action::refuse("`E` edits a question's answer: select an answered question"),
        }
    }

    /// `d` (`answer_only` false) or `D`: the confirmation listing what goes, per file
    /// (TUI-34), or why nothing can be deleted.
    fn ask_delete(&self, answer_only: bool) -> Action {
        let Some(listing) = &self.listing else {
            return Action::refuse("data/ is still being read");
        };
        let item = self.tree.selected_item();
        let row = self.tree.selected_row(listing);
        let target = match (answer_only, item.map(|i| &i.node), row) {
            (true, _, Some(row)) if row.meta.is_some() => Target::Answer { id: row.id.clone() },
            (true, _, _) => {
                return Action::refuse(
                    "`D` deletes a question's answer: select an answered question",
                );
            }
            (false, Some(Node::Subtopic(topic, subtopic)), _) => Target::Subtopic {
                topic: topic.clone(),
                subtopic: subtopic.clone(),
            },
            (false, Some(Node::Question(id)), _) => Target::Question { id: id.clone() },
            (false, Some(Node::Topic(topic)), _) if listing.orphaned_topics.contains(topic) => {
                Target::Topic {
                    topic: topic.clone(),
                }
            }
            (false, _, _) => {
                return Action::refuse(
                    "`d` deletes a subtopic, a question or a topic no longer configured; a configured topic goes in the Project view (1)",
                );
            }
        };
        let counts = dependents(listing, &target);
        let mut lines = vec![format!(
            "Delete {}?",
            super::super::dataset_delete::describe(&target)
        )];
        if let Some(row) = row.filter(|_| !matches!(target, Target::Subtopic { .. })) {
            lines.push(format!("  {}", truncate(&row.question, 60)));
        }
        lines.push(String::new());
        for (file, n, what) in [
            ("subtopics.jsonl", counts.subtopics, "subtopic"),
            ("questions.jsonl", counts.questions, "question"),
            ("answers.jsonl", counts.answers, "answer"),
        ] {
            let shown = match target {
                Target::Topic { .. } | Target::Subtopic { .. } => true,
                Target::Question { .. } => what != "subtopic",
                Target::Answer { .. } => what == "answer",
            };
            if shown {
                lines.push(format!("{file:<16} {}", counted(n, what)));
            }
        }
        if !answer_only {
            lines.push("rejected.jsonl   records it, so no stage makes it again".to_owned());
        }
        lines.push("then `split` rewrites train.jsonl and eval.jsonl".to_owned());
        Action::Ask(super::super::action::Dialog::new(
            "Delete",
            lines,
            Action::DeleteData(target),
        ))
    }

    /// Whether the stats pane is shown.
    #[must_use]
    pub fn stats(&self) -> bool {
        self.stats
    }
}

impl View for DatasetView {
    fn title(&self) -> &'static str {
        "Dataset"
    }

    fn keys(&self) -> &'static [(&'static str, &'static str)] {
        KEYS
    }

    fn typing(&self) -> bool {
        self.typing
    }

    fn handle_key(&mut self, key: KeyEvent) -> Option<Action> {
        if self.typing {
            self.filter_key(key);
            return None;
        }
        if key.code == KeyCode::Esc && !self.filter.is_empty() {
            self.filter_key(key);
            return None;
        }
        let before = self.tree.selected_item().map(|i| i.node.clone());
        let listing = self.listing.as_ref()?;
        match key.code {
            KeyCode::Char('j') | KeyCode::Down => self.tree.step(1),
            KeyCode::Char('k') | KeyCode::Up => self.tree.step(-1),
            KeyCode::Char('l') | KeyCode::Right => self.tree.expand(true, listing),
            KeyCode::Char('h') | KeyCode::Left => self.tree.expand(false, listing),
            KeyCode::Enter => self.tree.toggle(listing),
            KeyCode::PageDown => self.scroll = self.scroll.saturating_add(PAGE),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(PAGE),
            KeyCode::Char(']') => {
                self.section = (self.section + 1).min(SECTIONS.len() - 1);
                self.scroll = 0;
            }
            KeyCode::Char('[') => {
                self.section = self.section.saturating_sub(1);
                self.scroll = 0;
            }
            KeyCode::Char('/') => self.typing = true,
            KeyCode::Char('s') => self.stats = !self.stats,
            KeyCode::Char('e') => return Some(self.edit()),
            KeyCode::Char('E') => return Some(self.edit_answer()),
            KeyCode::Char('d') => return Some(self.ask_delete(false)),
            KeyCode::Char('D') => return Some(self.ask_delete(true)),
            _ => return None,
        }
        if self.tree.selected_item().map(|i| &i.node) != before.as_ref() {
            self.section = 0;
            self.scroll = 0;
        }
        None
    }
}

impl Widget for &DatasetView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = |title: String| {
            Block::new()
                .borders(Borders::ALL)
                .title(Span::styled(title, t.title()))
        };
        let Some(listing) = &self.listing else {
            Paragraph::new(Line::styled("Reading data/…", t.dim()))
                .block(block(" dataset ".into()))
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
                .block(block(" unreadable ".into()))
                .render(errors, buf);
        }
        if listing.is_empty() {
            Paragraph::new(super::empty_state(EMPTY, t))
                .wrap(Wrap { trim: false })
                .block(block(" dataset ".into()))
                .render(main, buf);
            return;
        }
        let [left, right] =
            Layout::horizontal([Constraint::Length(36), Constraint::Min(20)]).areas(main);
        let files_height = u16::try_from(listing.files.len() + 2).unwrap_or(7);
        let [files, tree_area] =
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
            .block(block(" data/ ".into()))
            .render(files, buf);
        self.render_tree(listing, tree_area, buf);
        let stats_height = if self.stats { 8 } else { 0 };
        let [detail, stats] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(stats_height)]).areas(right);
        if self.stats {
            Paragraph::new(self.stats_lines(listing))
                .wrap(Wrap { trim: false })
                .block(block(" stats ".into()))
                .render(stats, buf);
        }
        let lines = match (self.tree.selected_item(), self.tree.selected_row(listing)) {
            (_, Some(row)) => {
                let lines = self.question_detail(row);
                // `[`/`]` start the detail at a section; a missing one (no reasoning)
                // starts it at the next.
                let from = SECTIONS[self.section..]
                    .iter()
                    .find_map(|h| lines.iter().position(|l| line_text(l) == *h))
                    .unwrap_or(0);
                lines.into_iter().skip(from).collect()
            }
            (Some(item), None) => self.group_detail(listing, &item.node),
            (None, None) => vec![Line::styled(
                "Nothing matches the filter; Esc clears it.",
                t.dim(),
            )],
        };
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .scroll((self.scroll, 0))
            .block(block(" record ".into()))
            .render(detail, buf);
    }
}

fn line_text(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

impl DatasetView {
    fn render_tree(&self, listing: &Listing, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let title = match (self.typing, self.filter.is_empty()) {
            (true, _) => format!(" /{}▏ ", self.filter),
            (false, false) => format!(" topics /{} ", self.filter),
            (false, true) => " topics ".to_owned(),
        };
        let width = usize::from(area.width.saturating_sub(2));
        let visible = usize::from(area.height.saturating_sub(2)).max(1);
        let selected = self.tree.selected();
        let first = selected.saturating_sub(visible - 1);
        let items: Vec<Line<'_>> = self
            .tree
            .items()
            .iter()
            .enumerate()
            .skip(first)
            .take(visible)
            .map(|(i, item)| {
                let style = if i == selected {
                    t.selected()
                } else {
                    t.text()
                };
                let fold = if item.expanded { "▾" } else { "▸" };
                let text = match (&item.node, item.row.and_then(|r| listing.rows.get(r))) {
                    (Node::Topic(topic), _) if listing.orphaned_topics.contains(topic) => {
                        format!("{fold} {topic} [o] not configured")
                    }
                    (Node::Topic(topic), _) => format!("{fold} {topic}"),
                    (Node::Subtopic(_, subtopic), _) => format!("  {fold} {subtopic}"),
                    (Node::Question(_), Some(row)) => {
                        format!("    {} {}", marker(row), row.question)
                    }
                    (Node::Question(id), None) => format!("    {id}"),
                };
                Line::styled(truncate(&text, width), style)
            })
            .collect();
        let lines = if items.is_empty() {
            vec![Line::styled(
                if self.filter.is_empty() {
                    "No questions yet: `overbrainer questions` writes them."
                } else {
                    "Nothing matches."
                },
                t.dim(),
            )]
        } else {
            items
        };
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block_titled(title, t))
            .render(area, buf);
    }
}

fn block_titled(title: String, t: Theme) -> Block<'static> {
    Block::new()
        .borders(Borders::ALL)
        .title(Span::styled(title, t.title()))
}

/// `n` and `word`, plural unless `n` is 1.
fn counted(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

/// A question's marker (TUI-31).
fn marker(row: &Row) -> &'static str {
    if row.orphaned {
        return "[o]";
    }
    match (&row.answer, row.excluded) {
        (_, Some(_)) => "[x]",
        (Some(_), None) => "[a]",
        (None, None) => "[ ]",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn row(id: &str, subtopic: &str) -> Row {
        Row {
            id: id.into(),
            topic: "t".into(),
            subtopic: subtopic.into(),
            question: format!("question {id}"),
            answer: None,
            reasoning: None,
            meta: None,
            excluded: None,
            orphaned: false,
        }
    }

    fn code(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn key(c: char) -> KeyEvent {
        code(KeyCode::Char(c))
    }

    fn selected(view: &DatasetView) -> Option<Node> {
        view.tree().selected_item().map(|i| i.node.clone())
    }

    #[test]
    fn keys_move_open_and_close_the_tree_and_a_reload_keeps_the_selected_node() {
        let mut view = new(Theme::new(false));
        assert_eq!(view.handle_key(key('j')), None);
        view.set_listing(Listing {
            rows: vec![row("a", "s"), row("b", "s")],
            ..Listing::default()
        });
        assert_eq!(selected(&view), Some(Node::Topic("t".into())));
        view.handle_key(code(KeyCode::Right));
        view.handle_key(code(KeyCode::Down));
        view.handle_key(code(KeyCode::Enter));
        view.handle_key(key('j'));
        view.handle_key(key('j'));
        assert_eq!(selected(&view), Some(Node::Question("b".into())));
        view.set_listing(Listing {
            rows: vec![row("z", "s"), row("a", "s"), row("b", "s")],
            ..Listing::default()
        });
        assert_eq!(selected(&view), Some(Node::Question("b".into())));
        view.handle_key(key('k'));
        assert_eq!(selected(&view), Some(Node::Question("a".into())));
        view.handle_key(key('h'));
        assert_eq!(
            selected(&view),
            Some(Node::Subtopic("t".into(), "s".into()))
        );
        view.handle_key(code(KeyCode::Left));
        assert_eq!(view.tree().items().len(), 2);
        view.handle_key(key('s'));
        assert!(view.stats());
    }

    #[test]
    fn big_e_edits_the_selected_answer_and_refuses_without_one() {
        let mut view = new(Theme::new(false));
        let mut answered = row("a", "s");
        answered.answer = Some("the answer".into());
        answered.reasoning = Some("the reasoning".into());
        view.set_listing(Listing {
            rows: vec![answered, row("b", "s")],
            ..Listing::default()
        });
        let refused = |action: Option<Action>, says: &str| match action {
            Some(Action::Say { ok: false, text }) => assert!(text.contains(says), "{text}"),
            other => panic!("{other:?}"),
        };
        refused(view.handle_key(key('E')), "select an answered question");
        view.handle_key(code(KeyCode::Right));
        view.handle_key(code(KeyCode::Down));
        view.handle_key(code(KeyCode::Enter));
        view.handle_key(key('j'));
        assert_eq!(
            view.handle_key(key('E')),
            Some(Action::EditData(
                super::super::super::dataset_edit::DataEdit::Answer {
                    id: "a".into(),
                    shown: AnswerText {
                        reasoning: "the reasoning".into(),
                        content: "the answer".into(),
                    },
                }
            ))
        );
        view.handle_key(key('j'));
        refused(view.handle_key(key('E')), "question b has no answer");
    }

    #[test]
    fn a_filter_takes_every_key_while_typed_enter_keeps_it_and_esc_clears_it() {
        let mut view = new(Theme::new(false));
        view.set_listing(Listing {
            rows: vec![row("a", "one"), row("b", "two")],
            ..Listing::default()
        });
        view.handle_key(key('/'));
        assert!(view.typing());
        for c in "TWO".chars() {
            assert_eq!(view.handle_key(key(c)), None);
        }
        assert_eq!(view.tree().items().len(), 3, "topic, subtopic, question");
        view.handle_key(code(KeyCode::Enter));
        assert!(!view.typing());
        assert_eq!(view.tree().items().len(), 3, "Enter keeps the filter");
        view.handle_key(code(KeyCode::Esc));
        assert_eq!(view.tree().items().len(), 1, "Esc clears it");
        view.handle_key(key('/'));
        view.handle_key(key('x'));
        view.handle_key(code(KeyCode::Esc));
        assert!(!view.typing());
        assert_eq!(view.tree().items().len(), 1);
    }
}
