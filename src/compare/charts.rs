//! The report's pictures (issue 15), SVG beside `compare.md` on the shared frame of
//! `crate::chart`: win/tie/loss by topic as stacked bars with the win-or-tie rate's 95%
//! interval drawn over them, and the latency distribution (sorted seconds per answer) of
//! the child's total time and time to first token, with the parent's where the dataset's
//! `meta` records them. Pure.

use crate::chart::{COLOURS, Frame};

use super::stats::TopicRow;

const WIN: &str = "#2ca02c";
const TIE: &str = "#bbbbbb";
const LOSS: &str = "#d62728";

/// Win/tie/loss by topic, or `None` without a counted verdict.
#[must_use]
#[allow(clippy::cast_precision_loss, reason = "question counts")]
#[allow(clippy::many_single_char_names, reason = "coordinates: x, y, w, h, n")]
pub fn topics(rows: &[TopicRow]) -> Option<String> {
    let rows: Vec<&TopicRow> = rows.iter().filter(|r| r.win_or_tie.of > 0).collect();
    if rows.is_empty() {
        return None;
    }
    let bar = 22.0;
    let gap = 12.0;
    let h = 50.0 + rows.len() as f64 * (bar + gap) + 30.0;
    let mut frame = Frame::new(640.0, h, [160.0, 30.0, 40.0, 30.0]);
    let (ml, mt, pw) = (frame.ml, frame.mt, frame.plot_w());
    let x = |share: f64| ml + share * pw;
    frame.text(
        ml,
        16.0,
        "start",
        None,
        "win / tie / loss by topic; line: win-or-tie rate, 95% interval",
    );
    for (i, (label, colour)) in [("win", WIN), ("tie", TIE), ("loss", LOSS)]
        .iter()
        .enumerate()
    {
        frame.text(
            ml + 360.0 + i as f64 * 60.0,
            32.0,
            "start",
            Some(colour),
            label,
        );
    }
    for (i, row) in rows.iter().enumerate() {
        let y = mt + 10.0 + i as f64 * (bar + gap);
        let k = &row.counts;
        let n = (k.wins + k.ties + k.losses) as f64;
        let mut at = 0.0;
        for (count, colour) in [(k.wins, WIN), (k.ties, TIE), (k.losses, LOSS)] {
            let share = count as f64 / n;
            frame.rect(x(at), y, share * pw, bar, colour);
            at += share;
        }
        frame.text(
            ml - 6.0,
            y + bar / 2.0 + 4.0,
            "end",
            None,
            &format!("{} (n={})", row.topic, n),
        );
        if let (Some(low), Some(high), Some(rate)) =
            (row.win_or_tie.low, row.win_or_tie.high, row.win_or_tie.rate)
        {
            let mid = y + bar / 2.0;
            frame.line((x(low), mid), (x(high), mid), "#000000", 2.0);
            frame.line((x(low), mid - 5.0), (x(low), mid + 5.0), "#000000", 2.0);
            frame.line((x(high), mid - 5.0), (x(high), mid + 5.0), "#000000", 2.0);
            frame.line((x(rate), mid - 8.0), (x(rate), mid + 8.0), "#000000", 3.0);
        }
    }
    let bottom = frame.h - frame.mb;
    for (share, anchor) in [(0.0, "start"), (0.5, "middle"), (1.0, "end")] {
        frame.text(
            x(share),
            bottom + 16.0,
            anchor,
            None,
            &format!("{:.0}%", share * 100.0),
        );
    }
    Some(frame.finish())
}

/// One latency series: its name and seconds.
pub type Series<'a> = (&'a str, Vec<f64>);

/// The latency distribution: each series' seconds sorted, against their rank as a
/// share of the answers; `None` when no series has a value.
#[must_use]
#[allow(clippy::cast_precision_loss, reason = "answer counts")]
pub fn latency(series: &[Series<'_>]) -> Option<String> {
    let series: Vec<(&str, Vec<f64>)> = series
        .iter()
        .map(|(name, values)| {
            let mut v: Vec<f64> = values.iter().copied().filter(|s| s.is_finite()).collect();
            v.sort_by(f64::total_cmp);
            (*name, v)
        })
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let max = series
        .iter()
        .filter_map(|(_, v)| v.last().copied())
        .fold(0.0_f64, f64::max);
    if series.is_empty() {
        return None;
    }
    let max = if max > 0.0 { max } else { 1.0 };
    let mut frame = Frame::new(640.0, 360.0, [60.0, 20.0, 40.0, 40.0]);
    let (ml, mt, pw, ph) = (frame.ml, frame.mt, frame.plot_w(), frame.plot_h());
    let bottom = frame.h - frame.mb;
    frame.text(
        ml,
        16.0,
        "start",
        None,
        "latency distribution: share of answers within x seconds",
    );
    for (i, (name, values)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let n = values.len() as f64;
        let points: Vec<(f64, f64)> = values
            .iter()
            .enumerate()
            .map(|(rank, s)| (ml + s / max * pw, mt + ph - (rank as f64 + 1.0) / n * ph))
            .collect();
        frame.polyline(&points, colour, true);
        frame.text(
            frame.w - frame.mr,
            mt + 4.0 + i as f64 * 14.0,
            "end",
            Some(colour),
            name,
        );
    }
    frame.text(ml, bottom + 16.0, "start", None, "0 s");
    frame.text(ml + pw, bottom + 16.0, "end", None, &format!("{max:.2} s"));
    frame.text(ml - 6.0, mt + 4.0, "end", None, "100%");
    frame.text(ml - 6.0, bottom, "end", None, "0%");
    Some(frame.finish())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::compare::stats::{Counts, Rate};

    #[test]
    fn the_topic_chart_draws_three_bars_and_an_interval_per_topic() {
        let row = |topic: &str, wins, ties, losses| TopicRow {
            topic: topic.into(),
            counts: Counts {
                wins,
                ties,
                losses,
                unparsed: 0,
            },
            win_or_tie: Rate::new(wins + ties, wins + ties + losses),
        };
        let svg = topics(&[row("a", 2, 1, 1), row("b", 0, 0, 3), row("none", 0, 0, 0)]).unwrap();
        assert!(
            svg.contains("a (n=4)") && svg.contains("b (n=3)") && !svg.contains("none (n="),
            "{svg}"
        );
        // Frame background + 3 bars per topic.
        assert_eq!(svg.matches("<rect").count(), 1 + 6, "{svg}");
        // Whisker, two caps and the rate mark per topic.
        assert_eq!(svg.matches("<line").count(), 8, "{svg}");
        assert!(topics(&[row("none", 0, 0, 0)]).is_none());
    }

    #[test]
    fn the_latency_chart_draws_each_series_that_has_values() {
        let svg = latency(&[("child total", vec![2.0, 1.0]), ("parent total", vec![])]).unwrap();
        assert_eq!(svg.matches("<polyline").count(), 1, "{svg}");
        assert!(svg.contains("child total") && !svg.contains("parent total"));
        assert!(svg.contains("2.00 s"), "{svg}");
        assert!(latency(&[("x", vec![])]).is_none());
    }
}
