//! The retry policy of provider requests (PRV-11): up to `max_retries` further attempts,
//! each after the server's `Retry-After` when given, else an exponential backoff with full
//! jitter (base 1 s, factor 2, cap 60 s; "Exponential Backoff And Jitter", AWS
//! Architecture Blog, 2015).

use std::time::Duration;

use rand::Rng;

/// How many times and how long to wait before retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Further attempts after the first (`pipeline.max_retries`).
    pub max_retries: u32,
    /// Backoff ceiling of the first retry.
    pub base: Duration,
    /// Largest backoff ceiling.
    pub cap: Duration,
}

impl RetryPolicy {
    /// The product's policy: base 1 s, cap 60 s.
    #[must_use]
    pub fn new(max_retries: u32) -> Self {
        Self {
            max_retries,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
        }
    }

    /// The wait before retry number `retry` (0 for the first retry): `retry_after` when
    /// the server gave one, else a uniform draw in `[0, min(cap, base × 2^retry)]`.
    #[must_use]
    pub fn wait(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait;
        }
        let ceiling = self
            .base
            .saturating_mul(2_u32.saturating_pow(retry.min(31)))
            .min(self.cap);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(rand::rng().random_range(0..=nanos))
    }
}

/// Parses a `Retry-After` value: delay seconds, or an HTTP date (RFC 9110, section
/// 10.2.3), measured from `now`. A date in the past gives zero.
#[must_use]
pub fn parse_retry_after(value: &str, now: jiff::Timestamp) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = jiff::fmt::rfc2822::DateTimeParser::new()
        .parse_timestamp(value)
        .ok()?;
    let span = date.duration_since(now);
    Some(Duration::try_from(span).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_dates() {
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Thu, 01 Jan 2026 00:00:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 31 Dec 2025 23:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn backoff_stays_under_its_ceiling() {
        let policy = RetryPolicy::new(5);
        for retry in 0..40 {
            let ceiling = Duration::from_secs(1u64 << retry.min(6)).min(Duration::from_secs(60));
            assert!(policy.wait(retry, None) <= ceiling);
        }
        assert_eq!(
            policy.wait(3, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
    }
}
