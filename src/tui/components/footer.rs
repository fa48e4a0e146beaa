//! The footer: on the left the keys of whatever receives keys, or for 10 seconds the latest
//! message prefixed `✓` or `✗`; on the right the running work, the version and `? help`
//! (TUI-60, TUI-61).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::super::theme::Theme;

/// A status-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Success (`✓`) or failure (`✗`).
    pub ok: bool,
    /// The text.
    pub text: String,
}

/// What the footer shows.
#[derive(Debug, Clone, Default)]
pub struct Footer<'a> {
    /// Keys of the receiver, `(key, what)`.
    pub keys: &'a [(&'a str, &'a str)],
    /// The current message, replacing the keys.
    pub message: Option<&'a Message>,
    /// Running work, one label each.
    pub work: Vec<String>,
    /// Hide the version (a dialog or the help is open).
    pub covered: bool,
}

impl Footer<'_> {
    /// Draws the footer in `area` (one row).
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: Theme) {
        let mut right = String::new();
        for work in &self.work {
            right.push_str("● ");
            right.push_str(work);
            right.push_str("  ");
        }
        if !self.covered {
            right.push_str(concat!("v", env!("CARGO_PKG_VERSION"), "  "));
        }
        right.push_str("? help");
        let right_width = u16::try_from(right.chars().count())
            .unwrap_or(u16::MAX)
            .min(area.width);
        let left_width = area.width.saturating_sub(right_width + 1);
        let left = if let Some(message) = self.message {
            Line::from(vec![
                Span::styled(
                    if message.ok { "✓ " } else { "✗ " },
                    if message.ok {
                        theme.ok()
                    } else {
                        theme.error()
                    },
                ),
                Span::raw(message.text.clone()),
            ])
        } else {
            let mut spans = Vec::new();
            for (key, what) in self.keys {
                spans.push(Span::styled(*key, theme.title()));
                spans.push(Span::raw(format!(" {what}  ")));
            }
            Line::from(spans)
        };
        Paragraph::new(left).render(
            Rect {
                width: left_width,
                ..area
            },
            buf,
        );
        Paragraph::new(Line::styled(right, theme.dim())).render(
            Rect {
                x: area.x + area.width - right_width,
                width: right_width,
                ..area
            },
            buf,
        );
    }
}
