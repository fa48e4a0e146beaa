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

/// The most rows a long message takes (at 80 columns, about 450 characters).
pub const MESSAGE_ROWS: u16 = 6;

impl Footer<'_> {
    /// The work, the lock, the spend, the version and `? help`, right-aligned.
    fn right(&self) -> String {
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
        right
    }

    /// The widths of the left part (keys or message) and the right part at `width`.
    fn widths(&self, width: u16) -> (u16, u16) {
        let right_width = u16::try_from(self.right().chars().count())
            .unwrap_or(u16::MAX)
            .min(width);
        (width.saturating_sub(right_width + 1), right_width)
    }

    /// The rows the footer takes at `width`: one, or up to [`MESSAGE_ROWS`] for a
    /// message too long for one (so that it is read whole).
    #[must_use]
    pub fn rows(&self, width: u16) -> u16 {
        let Some(message) = self.message else {
            return 1;
        };
        let (left, _) = self.widths(width);
        let rows = wrapped_rows(&format!("✗ {}", message.text), usize::from(left.max(1)));
        u16::try_from(rows)
            .unwrap_or(MESSAGE_ROWS)
            .clamp(1, MESSAGE_ROWS)
    }

    /// Draws the footer in `area`: a message over its rows, the right part on the last.
    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: Theme) {
        let right = self.right();
        let (left_width, right_width) = self.widths(area.width);
        let room = usize::from(left_width);
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
                Span::raw(fitted(
                    &message.text,
                    (room * usize::from(area.height.max(1))).saturating_sub(2),
                )),
            ])
        } else {
            // Whole keys only: one that does not fit is left for the `?` overlay.
            let mut spans = Vec::new();
            let mut used = 0;
            for (key, what) in self.keys {
                let width = key.chars().count() + 1 + what.chars().count() + 2;
                if used + width > room + 2 {
                    break;
                }
                used += width;
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
        Paragraph::new(left)
            .wrap(ratatui::widgets::Wrap { trim: false })
            .render(
                Rect {
                    width: left_width,
                    ..area
                },
                buf,
            );
        Paragraph::new(Line::styled(right, theme.dim())).render(
            Rect {
                x: area.x + area.width - right_width,
                y: area.bottom().saturating_sub(1),
                width: right_width,
                height: 1,
            },
            buf,
        );
    }
}

/// The rows `text` takes wrapped at word boundaries in `width` columns, as the footer's
/// paragraph wraps it (a word longer than a row is broken).
fn wrapped_rows(text: &str, width: usize) -> usize {
    let mut rows = 1;
    let mut used = 0;
    for word in text.split(' ') {
        let len = word.chars().count();
        let needed = if used == 0 { len } else { used + 1 + len };
        if needed <= width {
            used = needed;
            continue;
        }
        if used > 0 {
            rows += 1;
        }
        rows += len.saturating_sub(1) / width;
        used = len - len.saturating_sub(1) / width * width;
    }
    rows
}

/// Where a message longer than [`MESSAGE_ROWS`] rows is cut.
const CUT: &str = "…";

/// `text` in `room` characters: as it is when it fits, else cut with [`CUT`].
fn fitted(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_owned();
    }
    let keep = room.saturating_sub(CUT.chars().count());
    let mut cut: String = text.chars().take(keep).collect();
    cut.truncate(cut.trim_end().len());
    cut.push_str(CUT);
    cut.chars().take(room).collect()
}

#[cfg(test)]
mod tests {
    use super::{Footer, MESSAGE_ROWS, Message, SpendShown, fitted, wrapped_rows};
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

    // A message too long for one row takes up to six, read whole; past six it is
    // cut with `…`. Keys that do not fit are left out whole, never cut inside.
    #[test]
    fn a_long_message_takes_more_rows_and_keys_are_never_cut() {
        let message = |words: usize| Message {
            ok: false,
            text: format!("the run could not start:{}", " xxxx".repeat(words)),
        };
        let footer = |message| Footer {
            message: Some(message),
            ..Footer::default()
        };
        let short = message(2);
        assert_eq!(footer(&short).rows(100), 1);
        let long = message(24);
        assert_eq!(footer(&long).rows(100), 2);
        let longer = message(200);
        assert_eq!(footer(&longer).rows(100), MESSAGE_ROWS);

        let area = Rect::new(0, 0, 100, 2);
        let mut buf = Buffer::empty(area);
        footer(&long).render(area, &mut buf, Theme::new(false));
        let rows: Vec<String> = (0..2)
            .map(|y| (0..100).map(|x| buf[(x, y)].symbol().to_owned()).collect())
            .collect();
        let xs = rows.iter().map(|r| r.matches('x').count()).sum::<usize>();
        assert_eq!(xs, 96, "the whole message: {rows:?}");
        assert!(rows[1].trim_end().ends_with("? help"), "{rows:?}");

        let (line, _) = drawn(&footer(&longer), "could not start");
        assert!(line.contains('…'), "cut past the rows it may take: {line}");
        assert!(line.trim_end().ends_with("? help"), "{line}");
        assert_eq!(wrapped_rows("aaaa bbbb", 4), 2);
        assert_eq!(wrapped_rows("aaaa bbbb", 9), 1);
        assert_eq!(wrapped_rows("a bbbbbbbbbb", 4), 4, "a long word is broken");
        assert_eq!(fitted("short", 10), "short");
        assert_eq!(fitted("abcdefgh", 3), "ab…");

        let keys = [
            ("a", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
            ("b", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"),
            ("c", "cccccccccccccccccccccccccccccc"),
        ];
        let footer = Footer {
            keys: &keys,
            ..Footer::default()
        };
        let (line, _) = drawn(&footer, "a aaa");
        assert!(line.contains("b bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"), "{line}");
        assert!(!line.contains("c c"), "left out whole: {line}");
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
