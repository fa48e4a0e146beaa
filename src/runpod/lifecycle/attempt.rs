//! The create calls themselves: the next GPU type, one call recorded before it is sent
//! (POD-24), and the end of a machine whose pod no longer exists. Below `create` and
//! `delete`, which both come back here.

use std::time::Duration;

use super::{Attempt, AttemptOutcome, Effect, Notice, Phase, PodFailure, PodState};

/// The next GPU type, or the end when every type was tried.
pub(super) fn next_type(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) {
    if let Some(gpu_type) = state.remaining.pop_front() {
        state.current = Some(gpu_type);
        state.rate_waits = 0;
        state.ambiguous = 0;
        state.search_failures = 0;
        send(state, at, fx);
    } else {
        let failure = if state.interrupted {
            PodFailure::Interrupted
        } else {
            PodFailure::NoCapacity(state.tried.clone())
        };
        finish(state, Some(failure), true, fx);
    }
}

/// The create call for the current type, recorded first (POD-24).
pub(super) fn send(state: &mut PodState, at: Duration, fx: &mut Vec<Effect>) {
    let Some(gpu_type) = state.current.clone() else {
        return next_type(state, at, fx);
    };
    state.phase = Phase::Creating;
    state.facts.attempts.push(Attempt {
        gpu_type: gpu_type.clone(),
        at,
        outcome: AttemptOutcome::Sent,
    });
    fx.push(Effect::Notice(Notice::Creating {
        gpu_type: gpu_type.clone(),
    }));
    fx.push(Effect::Record);
    fx.push(Effect::Create(gpu_type));
}

/// No pod of this machine exists any more: the end, with the host-key secret deleted
/// unless a pod of the run may still appear.
pub(super) fn finish(
    state: &mut PodState,
    failure: Option<PodFailure>,
    delete_secret: bool,
    fx: &mut Vec<Effect>,
) {
    state.phase = Phase::Gone;
    fx.push(Effect::Record);
    if delete_secret {
        fx.push(Effect::DeleteSecret);
    }
    fx.push(Effect::Done(failure));
}
