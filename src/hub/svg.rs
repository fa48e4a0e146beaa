//! The run's loss curve as an SVG drawn next to the card: train and eval loss against
//! the step. Hand-written SVG (a polyline per series, axes and labels): two lines do not
//! justify a plotting crate.

use std::fmt::Write as _;

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
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r##"<rect width="{W}" height="{H}" fill="#ffffff"/>"##);
    let _ = writeln!(
        svg,
        r##"<path d="M{ML} {MT} V{} H{}" fill="none" stroke="#444444"/>"##,
        H - MB,
        W - MR
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">step</text>"#,
        (ML + W - MR) / 2.0,
        H - 8.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="{ML}" y="{}" text-anchor="start">loss</text>"#,
        MT - 12.0
    );
    for (v, anchor_y) in [(y1, py(y1)), (y0, py(y0))] {
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="end">{v:.3}</text>"#,
            ML - 6.0,
            anchor_y + 4.0
        );
    }
    for (s, anchor) in [(x0, "start"), (x1, "end")] {
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="{anchor}">{s}</text>"#,
            ML + (s - x0) / (x1 - x0) * (W - ML - MR),
            H - MB + 16.0
        );
    }
    for (name, points, colour, y) in [
        ("train loss", train, "#1f77b4", MT - 12.0),
        ("eval loss", eval, "#d62728", MT + 4.0),
    ] {
        let finite: Vec<&(u64, f64)> = points.iter().filter(|(_, v)| v.is_finite()).collect();
        if finite.is_empty() {
            continue;
        }
        let coords: Vec<String> = finite
            .iter()
            .map(|(s, v)| format!("{:.1},{:.1}", px(*s), py(*v)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            coords.join(" ")
        );
        for c in &coords {
            let (cx, cy) = c.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(
                svg,
                r#"<circle cx="{cx}" cy="{cy}" r="2.5" fill="{colour}"/>"#
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="{y}" text-anchor="end" fill="{colour}">{name}</text>"#,
            W - MR
        );
    }
    svg.push_str("</svg>\n");
    Some(svg)
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
