//! How a `429` of the Runpod API is waited out (wire-facts A.2: "429 → honour
//! Retry-After"): one policy for every call. The create call's retry table
//! ([`crate::runpod::lifecycle`]) waits through its own machine, with [`RateLimit::wait`]
//! and [`RateLimit::exhausted`]; the client's reads and deletes, which are safe to send
//! again, wait inside [`super::api::RunpodClient`] with [`RateLimit::next`], which also
//! bounds the waits of one call by a total deadline.
//!
//! `Retry-After` is honoured as given; only the default wait (no `Retry-After`) and the
//! deadline are rule durations on the test-only [`TimeScale`].

use std::time::Duration;

use crate::env::TimeScale;

/// The rate-limit policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// The wait after a 429 without `Retry-After` (10 s on the scale).
    pub default_wait: Duration,
    /// 429 answers in a row (to one call, or to the creates of one GPU type) before
    /// giving up (10).
    pub max_waits: u32,
    /// The longest a read or a delete waits in all before it gives up with the 429 (2
    /// minutes on the scale): Runpod's narrowest window is a minute; a `Retry-After`
    /// that reaches past this deadline is not waited at all.
    pub deadline: Duration,
}

impl RateLimit {
    /// The policy on `scale`.
    #[must_use]
    pub fn new(scale: TimeScale) -> Self {
        Self {
            default_wait: scale.scale(Duration::from_secs(10)),
            max_waits: 10,
            deadline: scale.scale(Duration::from_secs(120)),
        }
    }

    /// The wait a 429 with `retry_after` asks for: `Retry-After`, or the default.
    #[must_use]
    pub fn wait(&self, retry_after: Option<Duration>) -> Duration {
        retry_after.unwrap_or(self.default_wait)
    }

    /// Whether `waits` 429 answers in a row are past the limit.
    #[must_use]
    pub fn exhausted(&self, waits: u32) -> bool {
        waits > self.max_waits
    }

    /// The pause before a read or a delete is sent again after its `waits`-th 429 in a
    /// row (counting this one) asked for `retry_after`, `waited` having passed already
    /// in earlier pauses; `None` when the call gives up: too many 429s, or a pause
    /// that would end past [`Self::deadline`].
    #[must_use]
    pub fn next(
        &self,
        retry_after: Option<Duration>,
        waits: u32,
        waited: Duration,
    ) -> Option<Duration> {
        let wait = self.wait(retry_after);
        (!self.exhausted(waits) && waited.saturating_add(wait) <= self.deadline).then_some(wait)
    }
}

impl Default for RateLimit {
    /// The policy in real time.
    fn default() -> Self {
        Self::new(TimeScale::REAL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn retry_after_is_waited_as_given_and_its_absence_waits_the_scaled_default() {
        let policy = RateLimit::new(TimeScale::with_second(Duration::from_millis(100)));
        assert_eq!(policy.wait(Some(s(7))), s(7));
        assert_eq!(policy.wait(None), s(1));
        assert_eq!(policy.deadline, s(12));
    }

    #[test]
    fn a_read_gives_up_past_the_deadline_or_the_count() {
        let policy = RateLimit::default();
        assert_eq!(policy.next(Some(s(3)), 1, Duration::ZERO), Some(s(3)));
        assert_eq!(policy.next(None, 1, s(100)), Some(s(10)));
        // The deadline: 110 s waited, 11 more would end past 120 s.
        assert_eq!(policy.next(Some(s(11)), 2, s(110)), None);
        assert_eq!(policy.next(Some(s(10)), 2, s(110)), Some(s(10)));
        // An hour's window is not waited at all.
        assert_eq!(policy.next(Some(s(3600)), 1, Duration::ZERO), None);
        // The count: ten waits, not eleven, even of nothing.
        assert_eq!(policy.next(Some(s(0)), 10, Duration::ZERO), Some(s(0)));
        assert_eq!(policy.next(Some(s(0)), 11, Duration::ZERO), None);
        assert!(!policy.exhausted(10));
        assert!(policy.exhausted(11));
    }
}
