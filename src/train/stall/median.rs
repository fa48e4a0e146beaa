//! [`RunningMedian`]: the exact median of every step time seen, kept in two heaps so
//! each new one costs O(log n) however long the run.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// The median of the durations pushed so far (the mean of the two middle ones when
/// their number is even), to the microsecond.
#[derive(Debug, Clone, Default)]
pub struct RunningMedian {
    /// The lower half, largest on top; it holds the middle one of an odd count.
    lower: BinaryHeap<u128>,
    /// The upper half, smallest on top.
    upper: BinaryHeap<Reverse<u128>>,
}

impl RunningMedian {
    /// Takes `value` in.
    pub fn push(&mut self, value: Duration) {
        let micros = value.as_micros();
        if self.lower.peek().is_none_or(|&top| micros <= top) {
            self.lower.push(micros);
        } else {
            self.upper.push(Reverse(micros));
        }
        if self.lower.len() > self.upper.len() + 1 {
            if let Some(top) = self.lower.pop() {
                self.upper.push(Reverse(top));
            }
        } else if self.upper.len() > self.lower.len() {
            if let Some(Reverse(low)) = self.upper.pop() {
                self.lower.push(low);
            }
        }
    }

    /// How many were pushed.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lower.len() + self.upper.len()
    }

    /// Whether none was pushed.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lower.is_empty()
    }

    /// The median; `None` before the first value.
    #[must_use]
    pub fn median(&self) -> Option<Duration> {
        let low = *self.lower.peek()?;
        let micros = match self.upper.peek() {
            Some(&Reverse(high)) if self.lower.len() == self.upper.len() => low + (high - low) / 2,
            _ => low,
        };
        Some(Duration::from_micros(
            u64::try_from(micros).unwrap_or(u64::MAX),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_running_median_is_the_median_of_everything_pushed() {
        let mut median = RunningMedian::default();
        assert_eq!(median.median(), None);
        let mut seen = Vec::new();
        // A sequence with outliers, repeats and both orders.
        for value in [500, 20, 20, 9000, 510, 490, 1, 505, 505, 70_000, 495] {
            median.push(ms(value));
            seen.push(value);
            let mut sorted = seen.clone();
            sorted.sort_unstable();
            let n = sorted.len();
            let expected = if n % 2 == 1 {
                ms(sorted[n / 2])
            } else {
                Duration::from_micros((sorted[n / 2 - 1] + sorted[n / 2]) * 500)
            };
            assert_eq!(median.median(), Some(expected), "after {seen:?}");
            assert_eq!(median.len(), n);
        }
    }
}
