//! The footer: on the left the keys of whatever receives keys, or for 10 seconds the latest
//! message prefixed `✓` or `✗`; on the right the running work, the version and `? help`
//! (TUI-60, TUI-61), and the project's spend against its budget (issue 20).

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

/// The project's spend as the ledger sums it, against the cap.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpendShown {
    /// Everything the ledger holds, summed.
    pub total: crate::budget::Spend,
    /// `budget.max_usd`, when set.
    pub max_usd: Option<f64>,
    /// `budget.warn_at`.
    pub warn_at: f64,
}

impl SpendShown {
    /// The footer's words for it: `$1.2345 of $5.0000` under a cap (`!` past `warn_at`,
    /// `cap reached` at it), `$1.2345 spent` without one, and the unpriced requests, which
    /// are never counted as free; nothing for a project with no ledger line and no cap.
    #[must_use]
    pub fn text(&self) -> Option<String> {
        let usd = crate::budget::usd;
        let spent = self.total.usd;
        let mut text = match self.max_usd {
            Some(cap) if spent >= cap => {
                format!("{} of {} cap reached", usd(spent), usd(cap))
            }
            Some(cap) if spent >= cap * self.warn_at => {
                format!("! {} of {}", usd(spent), usd(cap))
            }
            Some(cap) => format!("{} of {}", usd(spent), usd(cap)),
            None if self.total.events > 0 => format!("{} spent", usd(spent)),
            None => return None,
        };
        if self.total.unpriced > 0 {
            text = format!("{text} +{} unpriced", self.total.unpriced);
        }
        Some(text)
    }
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
    /// The project's spend against its budget, once read.
    pub spend: Option<SpendShown>,
    /// Hide the version (a dialog or the help is open).
    pub covered: bool,
    /// The spinner's glyph before each piece of running work.
    pub spinner: char,
    /// The data lock holds: the keys it refuses are struck through and `locked` shows
    /// among the work (TUI-62).
    pub locked: bool,
}

/// The keys the data lock refuses (TUI-64).
pub const LOCKED_KEYS: [&str; 5] = ["e", "d", "r", "A", "t"];

impl Footer<'_> {
    /// Draws the footer in `area` (one row).
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: Theme) {
        let mut right = String::new();
        for work in &self.work {
            right.push(self.spinner);
            right.push(' ');
            right.push_str(work);
            right.push_str("  ");
        }
        if self.locked {
            right.push_str("locked  ");
        }
        if let Some(spend) = self.spend.and_then(|spend| spend.text()) {
            right.push_str(&spend);
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
                if self.locked && LOCKED_KEYS.contains(key) {
                    let struck = theme
                        .dim()
                        .add_modifier(ratatui::style::Modifier::CROSSED_OUT);
                    spans.push(Span::styled(format!("{key} {what}"), struck));
                    spans.push(Span::raw("  "));
                } else {
                    spans.push(Span::styled(*key, theme.title()));
                    spans.push(Span::raw(format!(" {what}  ")));
                }
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

#[cfg(test)]
mod tests {
    use super::{Footer, SpendShown};
    use crate::tui::theme::Theme;
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::style::Modifier;

    /// The footer drawn at 100 columns, and whether the cell under `text` is struck.
    fn drawn(footer: &Footer<'_>, text: &str) -> (String, bool) {
        let area = Rect::new(0, 0, 100, 1);
        let mut buf = Buffer::empty(area);
        footer.render(area, &mut buf, Theme::new(false));
        let line: String = (0..100).map(|x| buf[(x, 0)].symbol().to_owned()).collect();
        let at = u16::try_from(line.find(text).expect(text)).unwrap();
        let struck = buf[(at, 0)].modifier.contains(Modifier::CROSSED_OUT);
        (line, struck)
    }

    // TUI-61, TUI-62: the data lock strikes through the keys it refuses and shows `locked`;
    // each piece of work has the spinner's glyph.
    #[test]
    fn the_lock_strikes_its_keys_and_work_has_the_spinner() {
        let keys = [("t", "start"), ("s", "stop")];
        let mut footer = Footer {
            keys: &keys,
            work: vec!["train r-1".to_owned()],
            spinner: '⠙',
            ..Footer::default()
        };
        let (line, struck) = drawn(&footer, "t start");
        assert!(!struck && !line.contains("locked"), "{line}");
        assert!(line.contains("⠙ train r-1"), "{line}");
        footer.locked = true;
        let (line, struck) = drawn(&footer, "t start");
        assert!(struck, "{line}");
        assert!(line.contains("locked"), "{line}");
        assert!(!drawn(&footer, "s stop").1, "`s` is not the lock's");
    }

    fn shown(usd: f64, max_usd: Option<f64>, unpriced: u64, any: bool) -> Option<String> {
        SpendShown {
            total: crate::budget::Spend {
                usd,
                events: u64::from(any),
                unpriced,
                ..crate::budget::Spend::default()
            },
            max_usd,
            warn_at: 0.8,
        }
        .text()
    }

    #[test]
    fn the_spend_reads_against_the_cap_and_never_counts_unpriced_requests_as_free() {
        let table = [
            (0.0, None, 0, false, None),
            (0.0, None, 0, true, Some("$0.0000 spent")),
            (1.5, None, 2, true, Some("$1.5000 spent +2 unpriced")),
            (1.0, Some(5.0), 0, true, Some("$1.0000 of $5.0000")),
            (0.0, Some(5.0), 0, false, Some("$0.0000 of $5.0000")),
            (4.0, Some(5.0), 0, true, Some("! $4.0000 of $5.0000")),
            (
                5.0,
                Some(5.0),
                1,
                true,
                Some("$5.0000 of $5.0000 cap reached +1 unpriced"),
            ),
        ];
        for (usd, cap, unpriced, any, want) in table {
            assert_eq!(
                shown(usd, cap, unpriced, any).as_deref(),
                want,
                "{usd} {cap:?} {unpriced} {any}"
            );
        }
    }
}
