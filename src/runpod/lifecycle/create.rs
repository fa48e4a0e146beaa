//! Creating, adopting and booting a pod: the retry table of `POST /v2/pods` (issue 12),
//! adoption after an ambiguous outcome and readiness (POD-24..POD-28).

use std::time::Duration;

use super::attempt::{finish, next_type, send};
use super::{
    AttemptOutcome, DeleteCause, Effect, Handshake, Notice, Phase, PodFailure, PodState, PodView,
    Refusal, TypeOrder, delete, rules,
};

fn set_outcome(state: &mut PodState, outcome: AttemptOutcome) {
    if let Some(last) = state.facts.attempts.last_mut() {
        last.outcome = outcome;
    }
}

/// `POST /v2/pods` did not create a pod, or may have.
pub(super) fn refused(state: &mut PodState, at: Duration, refusal: Refusal, fx: &mut Vec<Effect>) {
    let gpu_type = state.current.clone().unwrap_or_default();
    match refusal {
        Refusal::Capacity(reason) | Refusal::Forbidden(reason) => {
            set_outcome(state, AttemptOutcome::Refused(reason.clone()));
            state.tried.push((gpu_type.clone(), reason.clone()));
            if !state.remaining.is_empty() {
                fx.push(Effect::Notice(Notice::NextType { gpu_type, reason }));
                if state.order == TypeOrder::Catalog {
                    // POD-15: a fresh catalog read orders what is left.
                    fx.push(Effect::Reorder);
                    return;
                }
            }
            next_type(state, at, fx);
        }
        Refusal::Rejected { status, reason } => stop(state, status, reason, fx),
        Refusal::Invalid(detail) => stop(state, Some(422), detail, fx),
        Refusal::NoCredit(detail) => stop(state, Some(402), detail, fx),
        Refusal::RateLimited(wait) => {
            set_outcome(state, AttemptOutcome::Refused("rate limited (429)".into()));
            state.rate_waits += 1;
            if state.rules.rate_limit.exhausted(state.rate_waits) {
                return finish(state, Some(PodFailure::RateLimited), true, fx);
            }
            let wait = state.rules.rate_limit.wait(wait);
            fx.push(Effect::Notice(Notice::RateLimited(wait)));
            fx.push(Effect::Record);
            fx.push(Effect::Wait(wait));
        }
        Refusal::Ambiguous(cause) => {
            set_outcome(state, AttemptOutcome::Ambiguous(cause.clone()));
            state.ambiguous += 1;
            state.search_failures = 0;
            state.last_cause.clone_from(&cause);
            state.phase = Phase::Adopting;
            fx.push(Effect::Notice(Notice::Searching(cause)));
            fx.push(Effect::Record);
            fx.push(Effect::Search);
        }
    }
}

/// A fresh catalog read ordered the untried types, or the order is kept (POD-15);
/// then the next type is tried. A type already tried never comes back.
pub(super) fn reordered(
    state: &mut PodState,
    at: Duration,
    order: Result<Vec<String>, String>,
    fx: &mut Vec<Effect>,
) {
    match order {
        Ok(order) => {
            let untried: Vec<String> = order
                .into_iter()
                .filter(|t| !state.tried.iter().any(|(tried, _)| tried == t))
                .collect();
            fx.push(Effect::Notice(Notice::Reordered(untried.clone())));
            state.remaining = untried.into();
        }
        Err(why) => fx.push(Effect::Notice(Notice::OrderKept(why))),
    }
    next_type(state, at, fx);
}

/// The request itself was refused: no pod, no retry.
fn stop(state: &mut PodState, status: Option<u16>, detail: String, fx: &mut Vec<Effect>) {
    set_outcome(state, AttemptOutcome::Refused(detail.clone()));
    finish(
        state,
        Some(PodFailure::Refused { status, detail }),
        true,
        fx,
    );
}

/// What the search after an ambiguous outcome found.
pub(super) fn searched(
    state: &mut PodState,
    at: Duration,
    found: Result<Vec<PodView>, String>,
    fx: &mut Vec<Effect>,
) {
    match found {
        Ok(pods) if pods.is_empty() => {
            if state.interrupted {
                // No pod was made; one that appears later is a stray the next `train`
                // reports, so the secret stays for its sweep (POD-63).
                finish(state, Some(PodFailure::Interrupted), false, fx);
            } else if state.ambiguous >= state.rules.max_ambiguous {
                let cause = state.last_cause.clone();
                finish(state, Some(PodFailure::Ambiguous(cause)), false, fx);
            } else {
                send(state, at, fx);
            }
        }
        Ok(mut pods) => {
            let pod = pods.remove(0);
            if !pods.is_empty() {
                fx.push(Effect::Notice(Notice::Strays(
                    pods.into_iter().map(|p| p.id).collect(),
                )));
            }
            created(state, at, pod, true, fx);
        }
        Err(cause) => {
            state.search_failures += 1;
            if state.search_failures >= state.rules.max_ambiguous {
                finish(state, Some(PodFailure::Ambiguous(cause)), false, fx);
            } else {
                fx.push(Effect::Wait(state.rules.poll_interval));
            }
        }
    }
}

/// The pod exists: created, or adopted after a search.
pub(super) fn created(
    state: &mut PodState,
    at: Duration,
    pod: PodView,
    adopted: bool,
    fx: &mut Vec<Effect>,
) {
    set_outcome(state, AttemptOutcome::Created(pod.id.clone()));
    let created = pod.created_at.unwrap_or(at);
    state.facts.pod = Some(pod.id.clone());
    state.facts.gpu_type.clone_from(&state.current);
    state.facts.rate = pod.cost_per_hour;
    state.facts.created_at = Some(created);
    state.boot_since = created;
    state.phase = Phase::Booting;
    fx.push(Effect::Record);
    fx.push(Effect::Notice(Notice::Created {
        pod: pod.id.clone(),
        adopted,
    }));
    if state.interrupted {
        return delete::start(state, at, DeleteCause::Interrupted, fx);
    }
    view(state, at, pod, fx);
}

/// What a poll of the booting pod said.
pub(super) fn polled(
    state: &mut PodState,
    at: Duration,
    pod: Result<Option<PodView>, String>,
    fx: &mut Vec<Effect>,
) {
    match pod {
        Ok(Some(pod)) => view(state, at, pod, fx),
        Ok(None) => died(state, at, "it vanished while booting".into(), fx),
        Err(_) => wait(state, at, fx),
    }
}

/// The pod as the API shows it while booting: the handshake once `ssh.direct` exists.
fn view(state: &mut PodState, at: Duration, pod: PodView, fx: &mut Vec<Effect>) {
    state.viewed_at = at;
    state.handshake_again = false;
    if pod.cost_per_hour.is_some() {
        state.facts.rate = pod.cost_per_hour;
    }
    if pod.status.is_dead() {
        return died(
            state,
            at,
            format!("it was {:?} while booting", pod.status),
            fx,
        );
    }
    match pod.ssh {
        Some(endpoint) => {
            state.endpoint = Some(endpoint.clone());
            fx.push(Effect::Handshake(endpoint));
        }
        None => wait(state, at, fx),
    }
}

/// The pod cannot become ready: deleted, then the next type.
fn died(state: &mut PodState, at: Duration, reason: String, fx: &mut Vec<Effect>) {
    let gpu_type = state.current.clone().unwrap_or_default();
    state.tried.push((gpu_type, reason));
    delete::start(state, at, DeleteCause::Died, fx);
}

/// The readiness bound and the deadline while booting: whether the pod is being
/// deleted for one of them.
fn bounds(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) -> bool {
    let rules = state.rules;
    if state
        .deadline()
        .is_some_and(|d| at >= d + rules.client_guard)
    {
        delete::start(state, at, DeleteCause::Deadline, fx);
        return true;
    }
    if at >= state.boot_since + rules.ready_timeout {
        let gpu_type = state.current.clone().unwrap_or_default();
        let minutes = rules.ready_timeout.as_secs_f64() * 60.0 / rules.hour.as_secs_f64();
        state
            .tried
            .push((gpu_type, format!("not ready within {minutes:.0} minutes")));
        delete::start(state, at, DeleteCause::NotReady, fx);
        return true;
    }
    false
}

/// Not ready yet: the next poll after a pause, unless a bound is reached.
fn wait(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) {
    if !bounds(state, at, fx) {
        fx.push(Effect::Wait(state.rules.poll_interval));
    }
}

/// The pause while booting is over: poll, unless a bound is reached; after a failed
/// handshake on the known endpoint, the handshake again without a poll until the poll
/// interval has passed since the last view of the pod.
pub(super) fn tick(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) {
    if bounds(state, at, fx) {
        return;
    }
    match &state.endpoint {
        Some(endpoint)
            if state.handshake_again && at < state.viewed_at + state.rules.poll_interval =>
        {
            fx.push(Effect::Handshake(endpoint.clone()));
        }
        _ => fx.push(Effect::Poll),
    }
}

/// How the handshake went.
pub(super) fn handshook(
    state: &mut PodState,
    at: Duration,
    result: Handshake,
    fx: &mut Vec<Effect>,
) {
    match result {
        Handshake::Pinned => {
            let pod = state.facts.pod.clone().unwrap_or_default();
            fx.push(Effect::Notice(Notice::Ready { pod }));
            transmit(state, at, fx);
        }
        Handshake::OtherKey(key) => {
            state.why = key;
            delete::start(state, at, DeleteCause::OtherHostKey, fx);
        }
        // The endpoint exists: its `sshd` is seconds away, try again soon.
        Handshake::Failed(_) => {
            state.handshake_again = true;
            if !bounds(state, at, fx) {
                fx.push(Effect::Wait(state.rules.handshake_retry));
            }
        }
    }
}

/// Ready over SSH: the cost cap goes to the pod before the job may start (POD-41,
/// POD-42).
fn transmit(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) {
    let Some(cap) = state.rules.cost_cap_usd else {
        return ready(state, fx);
    };
    let created = state.facts.created_at.unwrap_or(at);
    let rate = state.facts.rate.unwrap_or(0.0);
    let Some((snapshot_at, cost_cap_at)) = rules::cost_times(&state.rules, created, rate) else {
        state.why = "Runpod gave no hourly rate".into();
        return delete::start(state, at, DeleteCause::CapNotTransmitted, fx);
    };
    if state.rules.cap_lasts(cap, rate) < state.rules.cap_warning {
        let hours = state.rules.cap_warning.as_secs_f64() / state.rules.hour.as_secs_f64();
        fx.push(Effect::Notice(Notice::CapShort {
            smallest: rate * hours,
        }));
    }
    state.cost_times = Some((snapshot_at, cost_cap_at));
    state.phase = Phase::Transmitting;
    fx.push(Effect::WriteCostFiles {
        snapshot_at,
        cost_cap_at,
    });
}

/// The pod is ready for the job.
pub(super) fn ready(state: &mut PodState, fx: &mut Vec<Effect>) {
    let Some(endpoint) = state.endpoint.clone() else {
        return;
    };
    state.phase = Phase::Ready;
    fx.push(Effect::Record);
    fx.push(Effect::Ready(endpoint));
}
