//! The time rules while the pod lives (POD-33..POD-44, POD-61): the lease, the deadline
//! snapshot and the client guard, the cost snapshot and the cost cap, the boot and
//! retrieve graces.

use std::time::Duration;

use super::{DeleteCause, Effect, Notice, Phase, PodState, SnapshotCause, delete};

/// The job exists on the pod.
pub(super) fn job_started(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) {
    state.facts.job_started_at = Some(at);
    if state.rules.keep_pod {
        state.phase = Phase::Kept;
        fx.push(Effect::Record);
        fx.push(Effect::Notice(Notice::Kept {
            pod: state.facts.pod.clone().unwrap_or_default(),
            rate: state.facts.rate,
        }));
        return;
    }
    // The start counts as progress: the lease holds from the first minute on.
    state.progress_at = Some(at);
    state.next_lease = at + state.rules.lease_renew;
    state.phase = Phase::Running;
    fx.push(Effect::Record);
    fx.push(Effect::WriteLease);
    fx.push(Effect::Wait(next_due(state, at)));
}

/// Whether the lease holds the pod at `at` (POD-35).
fn lease_fresh(state: &PodState, at: Duration) -> bool {
    state
        .lease_at
        .is_some_and(|l| at.saturating_sub(l) < state.rules.lease_fresh)
}

/// When the watchdog deletes the pod for its deadline: at `max_hours`, or up to the
/// snapshot window after a deadline snapshot's request, at most that window past the
/// deadline (POD-40).
fn watchdog_deletion(state: &PodState, deadline: Duration) -> Duration {
    let window = state.rules.snapshot_window;
    state.deadline_request.map_or(deadline, |asked| {
        (asked + window).min(deadline + window).max(deadline)
    })
}

/// When a pod whose job ended and whose results are not retrieved goes: the retrieve
/// grace after the end, at most the grace past the deadline when the deadline snapshot
/// ended the job (POD-44).
pub(super) fn retrieve_until(state: &PodState) -> Duration {
    let grace = state.rules.retrieve_grace;
    let ended = state.ended_at.unwrap_or_default();
    match (state.deadline_request, state.deadline()) {
        (Some(_), Some(deadline)) => (ended + grace).min(deadline + grace),
        _ => ended + grace,
    }
}

/// The rule under which the watchdog deleted a pod found gone at `at` while its job
/// ran: the cost cap once reached, the deadline once its deletion was due with no fresh
/// lease; `None` when no rule was due (someone else deleted it). So a run whose pod its
/// watchdog deleted at `max_hours` or `max_cost_usd` fails saying so (POD-37, POD-41).
pub(super) fn watchdog_rule(state: &PodState, at: Duration) -> Option<DeleteCause> {
    if state.cost_times.is_some_and(|(_, cap)| at >= cap) {
        return Some(DeleteCause::CostCap);
    }
    let deadline = state.deadline()?;
    (!lease_fresh(state, at) && at >= watchdog_deletion(state, deadline))
        .then_some(DeleteCause::Deadline)
}

/// Time passed while the pod lives.
pub(super) fn tick(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) {
    let rules = state.rules;
    let Some(deadline) = state.deadline() else {
        return;
    };
    if let Some((snapshot_at, cost_cap_at)) = state.cost_times {
        if at >= cost_cap_at {
            return delete::start(state, at, DeleteCause::CostCap, fx);
        }
        let job_runs = matches!(state.phase, Phase::Running | Phase::Snapshotting);
        if job_runs && at >= snapshot_at && !state.cost_requested {
            state.cost_requested = true;
            request(state, SnapshotCause::Cost, fx);
        }
    }
    match state.phase {
        Phase::Ready => {
            let created = state.facts.created_at.unwrap_or_default();
            if at >= created + rules.boot_grace + rules.client_guard {
                return delete::start(state, at, DeleteCause::BootGrace, fx);
            }
            if at >= deadline + rules.client_guard {
                return delete::start(state, at, DeleteCause::Deadline, fx);
            }
            // The driver is uploading: it asks again at its own pace.
            return;
        }
        Phase::Retrieving => {
            if at >= retrieve_until(state) + rules.client_guard {
                return delete::start(state, at, DeleteCause::RetrieveGrace, fx);
            }
        }
        _ => {
            let progressing = state
                .progress_at
                .is_some_and(|p| at.saturating_sub(p) < rules.progress_window);
            if progressing && at >= state.next_lease {
                state.next_lease = at + rules.lease_renew;
                fx.push(Effect::WriteLease);
            }
            let fresh = lease_fresh(state, at);
            if !fresh && state.deadline_request.is_none() && at + rules.snapshot_lead >= deadline {
                state.deadline_request = Some(at);
                request(state, SnapshotCause::Deadline, fx);
            }
            if !fresh && at >= watchdog_deletion(state, deadline) + rules.client_guard {
                return delete::start(state, at, DeleteCause::Deadline, fx);
            }
        }
    }
    fx.push(Effect::Wait(next_due(state, at)));
}

/// A snapshot request of the pod's rules (one already placed keeps its reason).
fn request(state: &mut PodState, cause: SnapshotCause, fx: &mut Vec<Effect>) {
    state.phase = Phase::Snapshotting;
    fx.push(Effect::Notice(Notice::Snapshot(cause)));
    fx.push(Effect::Record);
    fx.push(Effect::RequestSnapshot(cause));
}

/// The pause until the next rule is due, at most [`super::Rules::tick`].
fn next_due(state: &PodState, at: Duration) -> Duration {
    let rules = state.rules;
    let mut due = vec![at + rules.tick];
    if let Some((snapshot_at, cost_cap_at)) = state.cost_times {
        due.extend([snapshot_at, cost_cap_at]);
    }
    if let Some(deadline) = state.deadline() {
        if state.phase == Phase::Retrieving {
            due.push(retrieve_until(state) + rules.client_guard);
        } else {
            if state.progress_at.is_some() {
                due.push(state.next_lease);
            }
            if let Some(lease) = state.lease_at {
                due.push(lease + rules.lease_fresh);
            }
            due.push(deadline.saturating_sub(rules.snapshot_lead));
            due.push(watchdog_deletion(state, deadline) + rules.client_guard);
        }
    }
    due.into_iter()
        .filter(|&t| t > at)
        .min()
        .map_or(rules.tick, |t| t.saturating_sub(at))
}
