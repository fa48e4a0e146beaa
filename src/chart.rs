//! Hand-written SVG charts (a domain module, no I/O): the frame every chart shares (the
//! picture, its background, the plot area and axes, text and the series' shapes), used by
//! the Hub card's loss curve (`hub/svg.rs`) and compare's charts (`compare/charts.rs`). A
//! few polylines and bars do not justify a plotting crate.

use std::fmt::Write as _;

/// Series colours, in order.
pub const COLOURS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"];

/// A chart being drawn: its size, margins and the SVG so far.
#[derive(Debug, Clone)]
pub struct Frame {
    /// Width in pixels.
    pub w: f64,
    /// Height in pixels.
    pub h: f64,
    /// Left margin (labels).
    pub ml: f64,
    /// Right margin.
    pub mr: f64,
    /// Top margin.
    pub mt: f64,
    /// Bottom margin (labels).
    pub mb: f64,
    svg: String,
}

/// Escapes text for SVG.
#[must_use]
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Frame {
    /// A `w` x `h` picture with margins left, right, top, bottom: its header, white
    /// background and the two axes of the plot area.
    #[must_use]
    pub fn new(w: f64, h: f64, margins: [f64; 4]) -> Self {
        let [ml, mr, mt, mb] = margins;
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(svg, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
        let _ = writeln!(
            svg,
            r##"<path d="M{ml} {mt} V{} H{}" fill="none" stroke="#444444"/>"##,
            h - mb,
            w - mr
        );
        Self {
            w,
            h,
            ml,
            mr,
            mt,
            mb,
            svg,
        }
    }

    /// Width of the plot area.
    #[must_use]
    pub fn plot_w(&self) -> f64 {
        self.w - self.ml - self.mr
    }

    /// Height of the plot area.
    #[must_use]
    pub fn plot_h(&self) -> f64 {
        self.h - self.mt - self.mb
    }

    /// Text at (`x`, `y`) with `anchor` (`start`, `middle`, `end`) and an optional colour.
    pub fn text(&mut self, x: f64, y: f64, anchor: &str, fill: Option<&str>, text: &str) {
        let fill = fill.map_or_else(String::new, |f| format!(r#" fill="{f}""#));
        let _ = writeln!(
            self.svg,
            r#"<text x="{x}" y="{y}" text-anchor="{anchor}"{fill}>{}</text>"#,
            escape(text)
        );
    }

    /// A filled rectangle.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str) {
        let _ = writeln!(
            self.svg,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}"/>"#,
            w.max(0.0),
            h.max(0.0)
        );
    }

    /// A straight line.
    pub fn line(&mut self, from: (f64, f64), to: (f64, f64), stroke: &str, width: f64) {
        let _ = writeln!(
            self.svg,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{stroke}" stroke-width="{width}"/>"#,
            from.0, from.1, to.0, to.1
        );
    }

    /// A polyline through `points` (pixels), with a dot at each when `dots`.
    pub fn polyline(&mut self, points: &[(f64, f64)], colour: &str, dots: bool) {
        let coords: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            self.svg,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            coords.join(" ")
        );
        if dots {
            for (x, y) in points {
                let _ = writeln!(
                    self.svg,
                    r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.5" fill="{colour}"/>"#
                );
            }
        }
    }

    /// The finished SVG.
    #[must_use]
    pub fn finish(mut self) -> String {
        self.svg.push_str("</svg>\n");
        self.svg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_one_svg_with_its_axes_and_escaped_text() {
        let mut frame = Frame::new(100.0, 50.0, [10.0, 5.0, 5.0, 10.0]);
        frame.text(1.0, 2.0, "start", None, "a < b & c");
        frame.rect(0.0, 0.0, -1.0, 2.0, "#000");
        let svg = frame.finish();
        assert!(
            svg.starts_with("<svg ") && svg.ends_with("</svg>\n"),
            "{svg}"
        );
        assert!(svg.contains(r#"<path d="M10 5 V40 H95""#), "{svg}");
        assert!(svg.contains("a &lt; b &amp; c"), "{svg}");
        assert!(svg.contains(r#"width="0.0""#), "{svg}");
    }
}
