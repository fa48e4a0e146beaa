//! A followed run's wait in a scheduler's queue (issue 33): a Slurm job that waits
//! (`PENDING`) reads as running to the executor, but the run is `pending`, with the
//! scheduler's word on why as its message, and no stall clock runs until the job
//! leaves the queue. Each change is saved at once, so `runs ls` and the TUI's runs list
//! show it, then sent to the front ends.

use super::{Effect, RunState};
use crate::runs::RunEvent;
use crate::runs::record::State;

/// A poll found the live job waiting in the queue (`queued`, the scheduler's word) or
/// not: `running` -> `pending`, `pending` -> `pending` with a new reason, `pending` ->
/// `running`.
pub(super) fn polled(state: &mut RunState, queued: Option<String>, fx: &mut Vec<Effect>) {
    let record = &mut state.record;
    let Some(note) = queued else {
        state.queue_said = None;
        if record.state == State::Pending {
            record.state = State::Running;
            record.message = None;
            record.set_summary(&state.summary);
            fx.push(Effect::Save);
            fx.push(Effect::Emit(RunEvent::Started));
        }
        return;
    };
    // No silence counts while the job waits; a requeued job starts afresh.
    state.stall.queued();
    if record.state != State::Pending || record.message.as_ref() != Some(&note) {
        record.state = State::Pending;
        record.message = Some(note.clone());
        record.set_summary(&state.summary);
        fx.push(Effect::Save);
    }
    // Said once by each follower (a `train attach` of a pending run too).
    if state.queue_said.as_ref() != Some(&note) {
        state.queue_said = Some(note.clone());
        fx.push(Effect::Emit(RunEvent::Pending(note)));
    }
}
