//! The retry policy of provider requests (PRV-11): up to `max_retries` further attempts,
//! each after the server's `Retry-After` when given, else an exponential backoff with full
//! jitter (base 1 s, factor 2, cap 60 s; "Exponential Backoff And Jitter", AWS
//! Architecture Blog, 2015).
//!
//! A `Retry-After` longer than `max_wait` (`pipeline.max_retry_wait_secs`) is not waited
//! for: the request ends with [`super::Error::WaitTooLong`] and the stage stops. Our own
//! backoff never exceeds `max_wait`. The rules see waits as the server and the policy
//! state them; the time actually slept is that wait scaled by `second` (1 s in the
//! product, a few milliseconds in the test suite, so tests run the real rules quickly).

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
    /// The longest `Retry-After` waited for (`pipeline.max_retry_wait_secs`).
    pub max_wait: Duration,
    /// How long one second of a wait lasts: 1 s in the product; the test suite shrinks it.
    pub second: Duration,
}

impl RetryPolicy {
    /// The product's policy: base 1 s, cap 60 s, waits up to 600 s.
    #[must_use]
    pub fn new(max_retries: u32) -> Self {
        Self {
            max_retries,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
            max_wait: Duration::from_secs(600),
            second: Duration::from_secs(1),
        }
    }

    /// The wait before retry number `retry` (0 for the first retry): `retry_after` when
    /// the server gave one, else a uniform draw in `[0, min(cap, max_wait, base × 2^retry)]`.
    #[must_use]
    pub fn wait(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait;
        }
        let ceiling = self
            .base
            .saturating_mul(2_u32.saturating_pow(retry.min(31)))
            .min(self.cap)
            .min(self.max_wait);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(rand::rng().random_range(0..=nanos))
    }

    /// Whether the server's `retry_after` is longer than the policy waits for.
    #[must_use]
    pub fn too_long(&self, retry_after: Option<Duration>) -> bool {
        retry_after.is_some_and(|wait| wait > self.max_wait)
    }

    /// The time actually slept for a `wait`: the wait scaled by [`RetryPolicy::second`].
    #[must_use]
    pub fn sleep_for(&self, wait: Duration) -> Duration {
        self.second.mul_f64(wait.as_secs_f64())
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
        let short = RetryPolicy {
            max_wait: Duration::from_secs(3),
            ..policy
        };
        for retry in 0..20 {
            assert!(short.wait(retry, None) <= Duration::from_secs(3));
        }
    }

    #[test]
    fn a_retry_after_longer_than_max_wait_is_too_long_and_sleeps_scale() {
        let policy = RetryPolicy::new(5);
        assert!(!policy.too_long(None));
        assert!(!policy.too_long(Some(Duration::from_secs(600))));
        assert!(policy.too_long(Some(Duration::from_secs(601))));
        assert_eq!(
            policy.sleep_for(Duration::from_secs(30)),
            Duration::from_secs(30)
        );
        let test = RetryPolicy {
            second: Duration::from_millis(10),
            ..policy
        };
        assert_eq!(
            test.sleep_for(Duration::from_secs(30)),
            Duration::from_millis(300)
        );
    }
}
