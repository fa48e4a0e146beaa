//! [`Rules`]: the durations and counts a follower goes by, on the executor's time scale.

use std::time::Duration;

use crate::config::OnStall;
use crate::env::TimeScale;
use crate::train::stall::{Bounds, Policy};

/// The durations and counts of a follower's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// Pause between two polls of the job.
    pub poll_interval: Duration,
    /// Pause between two system samples (SYS-1).
    pub sample_interval: Duration,
    /// Consecutive failed reaches after which the follower detaches (RUN-16).
    pub max_failed_reaches: u32,
    /// How often a follower that did not place a snapshot request looks for one
    /// (RUN-29).
    pub request_check_interval: Duration,
    /// Time a job has to save its snapshot or end after a request (RUN-28).
    pub snapshot_deadline: Duration,
    /// Time a job has to end once its snapshot was saved (RUN-28).
    pub end_after_snapshot: Duration,
    /// Pause between two summary refreshes of `run.json` while following.
    pub save_interval: Duration,
    /// The stall bounds (issue 21).
    pub stall: Bounds,
    /// What to do once the job stalled (`training.on_stall`).
    pub on_stall: OnStall,
}

impl Default for Rules {
    /// The rules in real time.
    fn default() -> Self {
        Self::scaled(TimeScale::REAL)
    }
}

impl Rules {
    /// The rules with every duration on `scale` (the test suite's
    /// `OVERBRAINER_TEST_SECOND_MS`); the counts stay as they are.
    #[must_use]
    pub fn scaled(scale: TimeScale) -> Self {
        let seconds = |n: u64| scale.scale(Duration::from_secs(n));
        // How often to look, with a floor on fast test scales (`TimeScale::poll`).
        let every = |n: u64| scale.poll(Duration::from_secs(n));
        Self {
            poll_interval: every(1),
            sample_interval: every(10),
            max_failed_reaches: 6,
            request_check_interval: every(30),
            snapshot_deadline: seconds(30 * 60),
            end_after_snapshot: seconds(10 * 60),
            save_interval: every(10),
            stall: Policy::default().bounds(scale),
            on_stall: OnStall::Warn,
        }
    }

    /// These rules with the stall policy `policy` on `scale`.
    #[must_use]
    pub fn with_stall(self, policy: &Policy, scale: TimeScale) -> Self {
        Self {
            stall: policy.bounds(scale),
            on_stall: policy.on_stall,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_duration_of_the_rules_scales_polls_keep_their_floor_and_the_counts_do_not() {
        let real = Rules::default();
        assert_eq!(real, Rules::scaled(TimeScale::REAL));
        assert_eq!(real.poll_interval, Duration::from_secs(1));
        assert_eq!(real.snapshot_deadline, Duration::from_secs(30 * 60));
        assert_eq!(real.stall.first_step, Duration::from_secs(30 * 60));
        let fast = Rules::scaled(TimeScale::with_second(Duration::from_millis(10)));
        assert_eq!(
            fast,
            Rules {
                poll_interval: crate::env::MIN_SCALED_POLL,
                sample_interval: crate::env::MIN_SCALED_POLL,
                max_failed_reaches: 6,
                request_check_interval: Duration::from_millis(300),
                snapshot_deadline: Duration::from_secs(18),
                end_after_snapshot: Duration::from_secs(6),
                save_interval: crate::env::MIN_SCALED_POLL,
                stall: Policy::default().bounds(TimeScale::with_second(Duration::from_millis(10))),
                on_stall: OnStall::Warn,
            }
        );
    }
}
