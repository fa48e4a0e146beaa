//! The Compare view (`6`, TUI-58, issue 35): the project's compares, newest first, and for
//! the selected one what its report opens with: whether the judge could tell (calibration
//! and consistency, inconclusive below `[compare] min_judge_consistency`), the child's
//! rates with their 95% intervals, the per-topic rows and the losses, read from each
//! `compare.json`. Not built yet: the per-question detail pane and the keys that start,
//! rejudge or cancel a compare (TUI-59); `overbrainer compare` does that.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::super::action::Action;
use super::super::theme::Theme;
use super::{View, step, truncate};
use crate::compare::listing::Listed;

/// What the view says before any compare has a report.
const EMPTY: &[&str] = &[
    "No compare has a report yet.",
    "",
    "`overbrainer compare --run RUN_ID` compares an exported run with its parent;",
    "its report is `runs/RUN_ID/compares/COMPARE_ID/compare.md`.",
];

const KEYS: &[(&str, &str)] = &[("j/k", "select"), ("R", "reload")];

/// The Compare view.
#[derive(Debug, Clone)]
pub struct CompareView {
    theme: Theme,
    compares: Vec<Listed>,
    selected: usize,
}

/// The view.
#[must_use]
pub fn new(theme: Theme) -> CompareView {
    CompareView {
        theme,
        compares: Vec::new(),
        selected: 0,
    }
}

impl CompareView {
    /// Replaces the compares, keeping the selected one where it still is.
    pub fn set_compares(&mut self, compares: Vec<Listed>) {
        let kept = self
            .compares
            .get(self.selected)
            .and_then(|old| {
                compares
                    .iter()
                    .position(|c| c.compare_id == old.compare_id && c.run_id == old.run_id)
            })
            .unwrap_or(0);
        self.compares = compares;
        self.selected = kept;
    }

    fn detail(&self, compare: &Listed) -> Vec<Line<'static>> {
        let t = self.theme;
        let mut lines = vec![Line::styled(
            format!("{} · run {}", compare.compare_id, compare.run_id),
            t.title(),
        )];
        if !compare.conclusive {
            lines.push(Line::styled(
                format!(
                    "INCONCLUSIVE: the judge agreed with itself across both orders below {} ({} flips preferred the first answer, {} the second)",
                    compare.min_consistency, compare.flips.0, compare.flips.1
                ),
                t.error(),
            ));
        }
        if !compare.calibrated {
            lines.push(Line::styled(
                "UNCALIBRATED: the judge was not checked on control pairs, or failed them; the gate refuses this compare",
                t.warn(),
            ));
        }
        let row = |key: &str, value: String| {
            Line::from(vec![
                Span::styled(format!("{key:<17}"), t.dim()),
                Span::styled(value, t.text()),
            ])
        };
        lines.push(row("Judge", compare.judge.clone()));
        if let Some(calibration) = &compare.calibration {
            lines.push(row("Calibration", calibration.clone()));
        }
        lines.push(row("Consistency", compare.consistency.clone()));
        lines.push(row("Consistent wins", compare.consistent_wins.clone()));
        lines.push(row("Win-or-tie", compare.win_or_tie.clone()));
        lines.push(row(
            "Latency p50",
            compare
                .latency_p50
                .map_or_else(|| "n/a".to_owned(), |s| format!("{s:.2} s")),
        ));
        lines.push(row(
            "Cost / 1,000",
            compare.child_cost_per_1000.map_or_else(
                || "n/a (set `[compare] child_price_per_hour`)".to_owned(),
                |c| format!("${c:.4}"),
            ),
        ));
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            format!(
                "{:<20} {:>3} {:>3} {:>3}  win-or-tie",
                "Topic", "W", "T", "L"
            ),
            t.dim(),
        ));
        for topic in &compare.topics {
            let (w, tie, l) = topic.counts;
            lines.push(Line::styled(
                format!(
                    "{:<20} {w:>3} {tie:>3} {l:>3}  {}",
                    truncate(&topic.topic, 20),
                    topic.win_or_tie
                ),
                t.text(),
            ));
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            format!("Losses ({})", compare.losses.len()),
            t.dim(),
        ));
        for loss in &compare.losses {
            lines.push(Line::from(vec![
                Span::styled(format!("{} ", truncate(&loss.id, 12)), t.loss()),
                Span::styled(format!("[{}] ", loss.topic), t.dim()),
                Span::styled(loss.reason.clone(), t.text()),
            ]));
        }
        lines
    }
}

impl View for CompareView {
    fn title(&self) -> &'static str {
        "Compare"
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
        self.selected = step(self.selected, self.compares.len(), delta);
        None
    }
}

impl Widget for &CompareView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let block = |title: &'static str| {
            Block::new()
                .borders(Borders::ALL)
                .title(Span::styled(title, t.title()))
        };
        let Some(compare) = self.compares.get(self.selected) else {
            Paragraph::new(super::empty_state(EMPTY, t))
                .wrap(Wrap { trim: false })
                .block(block(" compare "))
                .render(area, buf);
            return;
        };
        let [list, detail] =
            Layout::horizontal([Constraint::Length(31), Constraint::Min(20)]).areas(area);
        let items: Vec<Line<'_>> = self
            .compares
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let rate = if !c.calibrated || !c.conclusive {
                    "  ?  ".to_owned()
                } else {
                    c.win_or_tie_rate
                        .map_or_else(|| " n/a ".to_owned(), |r| format!("{:>4.0}%", r * 100.0))
                };
                let text = format!("{} {rate}", truncate(&c.compare_id, 23));
                let style = if i == self.selected {
                    t.selected()
                } else {
                    t.text()
                };
                Line::styled(text, style)
            })
            .collect();
        Paragraph::new(items)
            .block(block(" compares "))
            .render(list, buf);
        Paragraph::new(self.detail(compare))
            .wrap(Wrap { trim: false })
            .block(block(" compare "))
            .render(detail, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_short_text_and_marks_a_cut() {
        assert_eq!(truncate("abc", 5), "abc");
        assert_eq!(truncate("abcdefgh", 5), "abcd…");
    }
}
