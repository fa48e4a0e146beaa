//! The durations, amounts and counts of a pod's rules (spec/runpod.md POD-28, POD-33..
//! POD-44), every duration on the test-only [`TimeScale`].

use std::time::Duration;

use crate::config::RunpodTarget;
use crate::env::TimeScale;
use crate::runpod::rate::RateLimit;
use crate::train::stall::{Bounds, Policy};

/// The rules of one pod. Build them with [`Rules::new`]; every duration is already
/// scaled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    /// One hour on the scale (the unit of rates and `max_hours`).
    pub hour: Duration,
    /// Pause between two polls of a booting pod, of a search that failed and of a pod
    /// being confirmed gone.
    pub poll_interval: Duration,
    /// Pause before the next handshake once the pod's SSH endpoint exists but its
    /// `sshd` did not answer yet (it starts seconds after the endpoint appears); the API
    /// is still polled only every [`Self::poll_interval`].
    pub handshake_retry: Duration,
    /// The longest pause between two checks of the time rules (POD-34: once a minute).
    pub tick: Duration,
    /// A pod not ready this long after creation is deleted (POD-28: 15 minutes).
    pub ready_timeout: Duration,
    /// `boot_grace_minutes`: the job must exist this long after creation (POD-33).
    pub boot_grace: Duration,
    /// `retrieve_grace_minutes` (POD-33, POD-44).
    pub retrieve_grace: Duration,
    /// `max_hours` after creation (POD-33).
    pub deadline: Duration,
    /// `max_cost_usd` (ignored with `--keep-pod`, POD-1).
    pub cost_cap_usd: Option<f64>,
    /// `--keep-pod` (POD-61).
    pub keep_pod: bool,
    /// Lead of the deadline snapshot before `max_hours` and of the cost snapshot before
    /// the cap (POD-40, POD-41: 15 minutes).
    pub snapshot_lead: Duration,
    /// How long deletion waits for a deadline snapshot after its request (POD-40: 15
    /// minutes).
    pub snapshot_window: Duration,
    /// How often the lease is rewritten (POD-35: 5 minutes).
    pub lease_renew: Duration,
    /// How long a lease holds (POD-35: 15 minutes).
    pub lease_fresh: Duration,
    /// The lease is renewed only while a metric line arrived within this (POD-35: 30
    /// minutes).
    pub progress_window: Duration,
    /// The client deletes a pod this long after the watchdog should have (POD-36: 5
    /// minutes).
    pub client_guard: Duration,
    /// First pause before a delete is sent again; it doubles at each attempt.
    pub delete_backoff: Duration,
    /// Longest pause between two deletes.
    pub delete_backoff_max: Duration,
    /// How long a deleted pod may stay listed before it is reported as lingering.
    pub gone_patience: Duration,
    /// How a 429 is waited out: its default wait, and the 429 answers in a row (one
    /// GPU type) before the run stops.
    pub rate_limit: RateLimit,
    /// Ambiguous create outcomes with no pod found (one GPU type), or failed searches
    /// in a row, before the run stops.
    pub max_ambiguous: u32,
    /// The least time a cost cap should buy before POD-23 warns (30 minutes).
    pub cap_warning: Duration,
    /// The stall bounds of `[training]` (issue 21): the watchdog declares the same
    /// stalls as the follower, and a stalled job holds no lease (POD-35).
    pub stall: Bounds,
}

impl Rules {
    /// The rules of `target`'s pods, on `scale` (the test-only factor).
    #[must_use]
    pub fn new(target: &RunpodTarget, keep_pod: bool, scale: TimeScale) -> Self {
        let minutes = |m: u64| scale.scale(Duration::from_secs(m * 60));
        let secs = |s: u64| scale.scale(Duration::from_secs(s));
        let hour = minutes(60);
        Self {
            hour,
            poll_interval: scale.poll(Duration::from_secs(5)),
            handshake_retry: scale.poll(Duration::from_millis(250)),
            tick: minutes(1),
            ready_timeout: minutes(15),
            boot_grace: minutes(target.boot_grace_minutes.into()),
            retrieve_grace: minutes(target.retrieve_grace_minutes.into()),
            deadline: hour.mul_f64(target.max_hours),
            cost_cap_usd: target.max_cost_usd.filter(|_| !keep_pod),
            keep_pod,
            snapshot_lead: minutes(15),
            snapshot_window: minutes(15),
            lease_renew: minutes(5),
            lease_fresh: minutes(15),
            progress_window: minutes(30),
            client_guard: minutes(5),
            delete_backoff: secs(2),
            delete_backoff_max: secs(60),
            gone_patience: minutes(10),
            rate_limit: RateLimit::new(scale),
            max_ambiguous: 3,
            cap_warning: minutes(30),
            stall: Policy::default().bounds(scale),
        }
    }

    /// These rules with the stall bounds `stall` (already on the scale).
    #[must_use]
    pub fn with_stall(self, stall: Bounds) -> Self {
        Self { stall, ..self }
    }

    /// The pause before delete number `attempt + 1` (the first resend waits
    /// [`Self::delete_backoff`]).
    #[must_use]
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        self.delete_backoff
            .saturating_mul(factor)
            .min(self.delete_backoff_max)
    }

    /// How long `cap` USD lasts at `rate` USD per hour, on the scale.
    #[must_use]
    pub fn cap_lasts(&self, cap: f64, rate: f64) -> Duration {
        self.hour.mul_f64(cap / rate)
    }
}

/// POD-41: `(snapshot_at, cost_cap_at)` of a pod created at `created` that costs `rate`
/// USD per hour: creation + min(0.95 x cap/r, cap/r - lead), creation + cap/r. `None`
/// without a cap, or when `rate` is not a positive number (the cap cannot be
/// transmitted then, POD-42).
#[must_use]
pub fn cost_times(rules: &Rules, created: Duration, rate: f64) -> Option<(Duration, Duration)> {
    let cap = rules.cost_cap_usd?;
    if !(rate.is_finite() && rate > 0.0) {
        return None;
    }
    let lasts = rules.cap_lasts(cap, rate);
    let snapshot = lasts
        .mul_f64(0.95)
        .min(lasts.saturating_sub(rules.snapshot_lead));
    Some((created + snapshot, created + lasts))
}
