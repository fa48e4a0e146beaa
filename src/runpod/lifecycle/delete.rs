//! Deleting a pod until it is gone (issue 12: "gone means gone"): a 204 from `DELETE`
//! is not proof; the pod is checked until it is no longer listed and `GET` answers 404,
//! the delete is sent again with backoff, and a pod that stays listed past the rules'
//! patience is reported as lingering (POD-31, POD-36, POD-50, POD-51, POD-67).

use std::time::Duration;

use super::{DeleteCause, Deleter, Deletion, Effect, Notice, Phase, PodFailure, PodState, attempt};

/// Deletes the pod for `cause`.
pub(super) fn start(state: &mut PodState, at: Duration, cause: DeleteCause, fx: &mut Vec<Effect>) {
    let Some(pod) = state.facts.pod.clone() else {
        return;
    };
    state.deletion = Some(Deletion {
        pod: pod.clone(),
        cause: Some(cause),
        by: Deleter::Client,
        attempts: 1,
        since: at,
        next_delete: at + state.rules.backoff(1),
    });
    state.phase = Phase::Deleting;
    fx.push(Effect::Notice(Notice::Deleting {
        pod: pod.clone(),
        cause,
    }));
    fx.push(Effect::Record);
    fx.push(Effect::Delete(pod));
}

/// The pod was found missing while it should run: someone else (its watchdog, under
/// the rule `cause` when one was due) deleted it; confirmed gone like any other deletion.
pub(super) fn vanished(
    state: &mut PodState,
    at: Duration,
    cause: Option<DeleteCause>,
    fx: &mut Vec<Effect>,
) {
    let Some(pod) = state.facts.pod.clone() else {
        return;
    };
    state.deletion = Some(Deletion {
        pod: pod.clone(),
        cause,
        by: Deleter::Watchdog,
        attempts: 0,
        since: at,
        next_delete: at,
    });
    state.phase = Phase::ConfirmingGone;
    fx.push(Effect::CheckGone(pod));
}

/// The bootstrap told that the image lacks what POD-74 requires while the pod is being
/// deleted: a pod deleted because it could not become ready is deleted for that
/// instead, so that no other GPU type is tried; any other cause stands.
pub(super) fn unfit(state: &mut PodState, image: String, missing: Vec<String>) {
    let Some(deletion) = state.deletion.as_mut() else {
        return;
    };
    if matches!(
        deletion.cause,
        Some(DeleteCause::NotReady | DeleteCause::Died)
    ) {
        deletion.cause = Some(DeleteCause::ImageUnfit);
        state.unfit = Some((image, missing));
    }
}

/// `DELETE` answered (204 or 404), or failed.
pub(super) fn answered(
    state: &mut PodState,
    at: Duration,
    result: &Result<(), String>,
    fx: &mut Vec<Effect>,
) {
    let Some(deletion) = state.deletion.clone() else {
        return;
    };
    if result.is_ok() {
        state.phase = Phase::ConfirmingGone;
        fx.push(Effect::CheckGone(deletion.pod));
    } else if !linger(state, at, fx) {
        let wait = deletion.next_delete.saturating_sub(at);
        fx.push(Effect::Wait(wait));
    }
}

/// The backoff after a failed delete is over: send it again.
pub(super) fn resend(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) {
    if linger(state, at, fx) {
        return;
    }
    let rules = state.rules;
    let Some(deletion) = state.deletion.as_mut() else {
        return;
    };
    deletion.attempts += 1;
    deletion.next_delete = at + rules.backoff(deletion.attempts);
    state.phase = Phase::Deleting;
    fx.push(Effect::Delete(deletion.pod.clone()));
}

/// The pause between two checks is over.
pub(super) fn check(state: &PodState, fx: &mut Vec<Effect>) {
    if let Some(deletion) = &state.deletion {
        fx.push(Effect::CheckGone(deletion.pod.clone()));
    }
}

/// What the check found.
pub(super) fn checked(
    state: &mut PodState,
    at: Duration,
    seen: &Result<(bool, bool), String>,
    fx: &mut Vec<Effect>,
) {
    let Some(deletion) = state.deletion.clone() else {
        return;
    };
    match seen {
        Ok((false, false)) => gone(state, at, fx),
        Ok(_) if deletion.by == Deleter::Watchdog && deletion.attempts == 0 => {
            // GET said 404 but the pod is still listed (or the other way round): it is
            // being deleted by someone else; make sure of it.
            state.deletion = Some(Deletion {
                by: Deleter::Client,
                ..deletion
            });
            resend(state, at, fx);
        }
        Ok(_) if at >= deletion.next_delete => {
            fx.push(Effect::Notice(Notice::StillListed {
                pod: deletion.pod.clone(),
            }));
            resend(state, at, fx);
        }
        Ok(_) | Err(_) => {
            if !linger(state, at, fx) {
                let wait = state
                    .rules
                    .poll_interval
                    .min(deletion.next_delete.saturating_sub(at))
                    .max(Duration::from_millis(1));
                fx.push(Effect::Wait(wait));
            }
        }
    }
}

/// Past the patience: the pod is reported as lingering, recorded `deleting` so that
/// every later command reports it until it is gone.
fn linger(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) -> bool {
    let Some(deletion) = &state.deletion else {
        return false;
    };
    if at < deletion.since + state.rules.gone_patience {
        return false;
    }
    let failure = PodFailure::StillListed {
        pod: deletion.pod.clone(),
        rate: state.facts.rate,
    };
    state.phase = Phase::Lingering;
    fx.push(Effect::Record);
    fx.push(Effect::Done(Some(failure)));
    true
}

/// Confirmed gone: recorded, then the next GPU type after a pod that could not become
/// ready, else the end and the host-key secret (POD-31).
fn gone(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) {
    let Some(deletion) = state.deletion.take() else {
        return;
    };
    state.facts.deleted = Some((at, deletion.by));
    state.phase = Phase::Gone;
    fx.push(Effect::Notice(Notice::Gone {
        pod: deletion.pod,
        by: deletion.by,
    }));
    let failure = match deletion.cause {
        Some(DeleteCause::NotReady | DeleteCause::Died) if !state.interrupted => {
            // A new pod comes: this one's ID no longer names the run's pod.
            state.facts.pod = None;
            state.facts.gpu_type = None;
            state.facts.rate = None;
            state.facts.created_at = None;
            state.facts.deleted = None;
            state.endpoint = None;
            fx.push(Effect::Record);
            return attempt::next_type(state, at, fx);
        }
        Some(DeleteCause::Retrieved) => None,
        Some(DeleteCause::Interrupted | DeleteCause::NotReady | DeleteCause::Died) => {
            Some(PodFailure::Interrupted)
        }
        Some(DeleteCause::OtherHostKey) => Some(PodFailure::OtherHostKey(state.why.clone())),
        Some(DeleteCause::CapNotTransmitted) => Some(PodFailure::CapNotTransmitted),
        Some(DeleteCause::Deadline) => Some(PodFailure::DeadlineReached),
        Some(DeleteCause::CostCap) => Some(PodFailure::CostCapReached),
        Some(DeleteCause::BootGrace) => Some(PodFailure::BootGrace),
        Some(DeleteCause::RetrieveGrace) => Some(PodFailure::RetrieveGrace),
        Some(DeleteCause::StartFailed) => Some(PodFailure::StartFailed(state.why.clone())),
        Some(DeleteCause::ImageUnfit) => {
            let (image, missing) = state.unfit.clone().unwrap_or_default();
            Some(PodFailure::ImageUnfit { image, missing })
        }
        None if state.facts.retrieved => None,
        None => Some(PodFailure::Vanished),
    };
    attempt::finish(state, failure, true, fx);
}
