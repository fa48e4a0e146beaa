//! Downsampling for the loss chart: a series of any length becomes at most two points per
//! column (each bucket's lowest and highest, in step order), so a redraw costs the same at
//! 100 or 100,000 points.

/// At most `2 * buckets` points of `points` (sorted by x) keeping each bucket's extremes.
#[must_use]
pub fn downsample(points: &[(f64, f64)], buckets: usize) -> Vec<(f64, f64)> {
    if buckets == 0 || points.len() <= buckets.saturating_mul(2) {
        return points.to_vec();
    }
    let mut out = Vec::with_capacity(buckets * 2);
    let size = points.len().div_ceil(buckets);
    for chunk in points.chunks(size) {
        let (mut low, mut high) = (0, 0);
        for (i, point) in chunk.iter().enumerate() {
            if point.1 < chunk[low].1 {
                low = i;
            }
            if point.1 > chunk[high].1 {
                high = i;
            }
        }
        let (first, second) = if low <= high {
            (low, high)
        } else {
            (high, low)
        };
        out.push(chunk[first]);
        if second != first {
            out.push(chunk[second]);
        }
    }
    out
}

/// The lowest and highest y of `series`, padded so a flat line stays visible.
#[must_use]
pub fn y_bounds<'a>(series: impl IntoIterator<Item = &'a [(f64, f64)]>) -> [f64; 2] {
    let mut low = f64::INFINITY;
    let mut high = f64::NEG_INFINITY;
    for points in series {
        for &(_, y) in points {
            low = low.min(y);
            high = high.max(y);
        }
    }
    if !low.is_finite() || !high.is_finite() {
        return [0.0, 1.0];
    }
    let pad = ((high - low) * 0.05).max(0.01);
    [(low - pad).max(0.0), high + pad]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_series_is_kept_whole() {
        let points = vec![(0.0, 1.0), (1.0, 0.5)];
        assert_eq!(downsample(&points, 10), points);
    }

    #[test]
    fn a_long_series_keeps_each_buckets_extremes_in_order() {
        #[allow(clippy::cast_precision_loss, reason = "test data")]
        let points: Vec<(f64, f64)> = (0..10_000)
            .map(|i| (f64::from(i), if i == 5_000 { 9.0 } else { 1.0 }))
            .collect();
        let small = downsample(&points, 100);
        assert!(small.len() <= 200, "{}", small.len());
        assert!(small.contains(&(5_000.0, 9.0)), "the spike survives");
        assert!(
            small.windows(2).all(|w| w[0].0 < w[1].0),
            "x stays in order"
        );
    }

    #[test]
    fn bounds_pad_a_flat_line_and_default_when_empty() {
        let [low, high] = y_bounds([&[][..]]);
        assert!(low.abs() < f64::EPSILON && (high - 1.0).abs() < f64::EPSILON);
        let [low, high] = y_bounds([&[(0.0, 2.0), (1.0, 2.0)][..]]);
        assert!(low < 2.0 && high > 2.0);
    }
}
