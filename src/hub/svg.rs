//! The run's loss curve as an SVG drawn next to the card: train and eval loss against
//! the step. Hand-written SVG (a polyline per series, axes and labels): drawn on the shared
//! frame of `crate::chart`.

use crate::chart::{COLOURS, Frame};

/// Width and height of the picture in pixels.
const W: f64 = 640.0;
const H: f64 = 360.0;
/// Margins: left (labels), right, top, bottom (labels).
const ML: f64 = 60.0;
const MR: f64 = 20.0;
const MT: f64 = 30.0;
const MB: f64 = 40.0;

/// The curve of `train` and `eval` `(step, loss)` points, or `None` when there is no
/// finite point at all.
#[must_use]
pub fn loss_curve(train: &[(u64, f64)], eval: &[(u64, f64)]) -> Option<String> {
    let all: Vec<(u64, f64)> = train
        .iter()
        .chain(eval)
        .copied()
        .filter(|(_, v)| v.is_finite())
        .collect();
    if all.is_empty() {
        return None;
    }
    #[allow(clippy::cast_precision_loss, reason = "steps are far below 2^52")]
    let to_f = |s: u64| s as f64;
    let (mut x0, mut x1) = (f64::MAX, f64::MIN);
    let (mut y0, mut y1) = (f64::MAX, f64::MIN);
    for (s, v) in &all {
        x0 = x0.min(to_f(*s));
        x1 = x1.max(to_f(*s));
        y0 = y0.min(*v);
        y1 = y1.max(*v);
    }
    if (x1 - x0).abs() < f64::EPSILON {
        x1 = x0 + 1.0;
    }
    if (y1 - y0).abs() < f64::EPSILON {
        y1 = y0 + 1.0;
    }
    let px = |s: u64| ML + (to_f(s) - x0) / (x1 - x0) * (W - ML - MR);
    let py = |v: f64| MT + (y1 - v) / (y1 - y0) * (H - MT - MB);
    let mut frame = Frame::new(W, H, [ML, MR, MT, MB]);
    frame.text((ML + W - MR) / 2.0, H - 8.0, "middle", None, "step");
    frame.text(ML, MT - 12.0, "start", None, "loss");
    for (v, anchor_y) in [(y1, py(y1)), (y0, py(y0))] {
        frame.text(ML - 6.0, anchor_y + 4.0, "end", None, &format!("{v:.3}"));
    }
    for (s, anchor) in [(x0, "start"), (x1, "end")] {
        let x = ML + (s - x0) / (x1 - x0) * (W - ML - MR);
        frame.text(x, H - MB + 16.0, anchor, None, &s.to_string());
    }
    for (name, points, colour, y) in [
        ("train loss", train, COLOURS[0], MT - 12.0),
        ("eval loss", eval, COLOURS[1], MT + 4.0),
    ] {
        let finite: Vec<(f64, f64)> = points
            .iter()
            .filter(|(_, v)| v.is_finite())
            .map(|(s, v)| (px(*s), py(*v)))
            .collect();
        if finite.is_empty() {
            continue;
        }
        frame.polyline(&finite, colour, true);
        frame.text(W - MR, y, "end", Some(colour), name);
    }
    Some(frame.finish())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn loss_curve_draws_one_polyline_per_series_with_a_point_per_step() {
        let svg = loss_curve(&[(1, 2.0), (2, 1.5), (3, 1.0)], &[(3, 1.2)]).unwrap();
        assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
        assert_eq!(svg.matches("<circle").count(), 4, "{svg}");
        assert!(svg.contains("train loss") && svg.contains("eval loss"));
        // The first train point is at the left edge, the highest loss at the top.
        assert!(svg.contains(&format!("{ML:.1},{MT:.1}")), "{svg}");
    }

    #[test]
    fn loss_curve_skips_non_finite_points_and_is_none_without_any() {
        assert!(loss_curve(&[(1, f64::NAN)], &[]).is_none());
        let svg = loss_curve(&[(1, f64::NAN), (2, 1.0)], &[]).unwrap();
        assert_eq!(svg.matches("<circle").count(), 1);
        assert!(!svg.contains("eval loss"));
    }
}
