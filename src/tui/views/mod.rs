//! The six views, one file each: each a struct with its state, `handle_key` returning an
//! [`Action`], and `impl Widget for &View` drawing from `&self`
//! (STYLE 8).

pub mod compare;
pub mod dataset;
pub mod dataset_tree;
pub mod logs;
pub mod pipeline;
pub mod project;
pub mod project_add;
pub mod training;

use crossterm::event::KeyEvent;

use super::action::Action;

/// What the app asks of every view.
pub trait View {
    /// The tab title.
    fn title(&self) -> &'static str;
    /// The keys the view takes, for the footer and the help overlay.
    fn keys(&self) -> &'static [(&'static str, &'static str)];
    /// What `key` asks for; `None` when the view used it itself (or ignores it).
    fn handle_key(&mut self, key: KeyEvent) -> Option<Action>;
    /// Whether the view takes every key as typed text (a filter being typed), so the
    /// app's own keys (`q`, `1`…`6`, `?`, `R`, Tab) go to it instead.
    fn typing(&self) -> bool {
        false
    }
}

/// Moves `selected` within `len` items by `delta`, clamped.
#[must_use]
pub fn step(selected: usize, len: usize, delta: isize) -> usize {
    if len == 0 {
        return 0;
    }
    selected.saturating_add_signed(delta).min(len - 1)
}

/// `text` cut to `width` characters, an ellipsis last when cut.
#[must_use]
pub fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// An empty state's lines: the first as a title, the rest dimmed (the words say which
/// commands fill the view).
#[must_use]
pub fn empty_state(
    lines: &[&'static str],
    theme: super::theme::Theme,
) -> Vec<ratatui::text::Line<'static>> {
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            ratatui::text::Line::styled(*l, if i == 0 { theme.title() } else { theme.dim() })
        })
        .collect()
}
