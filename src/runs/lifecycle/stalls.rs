//! A followed run's stalls (issue 21): the machine's part around the pure detector
//! ([`crate::train::stall`]). Each new metric line goes to the detector with the time of
//! its poll, each poll of a living job ticks it; a stall is recorded in `run.json`
//! (`stalled`), warned about with the last step, its time and the latest system sample,
//! and acted on as `training.on_stall` says: `warn` only, `snapshot` places
//! `snapshot.request` (reason `stall`) and holds the job to RUN-28's deadlines from then
//! on, as `train stop` does, `cancel` cancels the job, whose run is then recorded
//! `cancelled` with the stall as its cause. While a snapshot request is pending no
//! stall is declared: RUN-28's deadlines decide then.

use std::time::Duration;

use super::{Effect, RunState, warning};
use crate::config::OnStall;
use crate::runs::ending::Ending;
use crate::runs::record::{Stalled, State};
use crate::runs::warning::RunWarning;
use crate::train::metrics::MetricLine;
use crate::train::stall::{Change, Stall};

/// The word of a stall's snapshot request (and of its `snapshot` line).
pub(super) const REQUEST_REASON: &str = "stall\n";

/// A new metric line, read at `at`.
pub(super) fn line(state: &mut RunState, at: Duration, line: &MetricLine, fx: &mut Vec<Effect>) {
    if let Some(Change::Resumed(step)) = state.stall.line(at, line) {
        fx.push(warning(RunWarning::StallEnded {
            run_id: state.record.id.clone(),
            step,
        }));
    }
}

/// A poll at `at` found the job alive or not. Once a snapshot was requested (`train
/// stop`, a pod's rule, or this stall's own), RUN-28's deadlines own the job: no stall
/// is declared then.
pub(super) fn tick(state: &mut RunState, at: Duration, alive: bool, fx: &mut Vec<Effect>) {
    if state.request_seen.is_some() {
        return;
    }
    let Some(Change::Stalled(stall)) = state.stall.tick(at, alive) else {
        return;
    };
    let action = state.rules.on_stall;
    state.record.stalled = Some(Box::new(record_of(state, &stall, action)));
    state.record.set_summary(&state.summary);
    fx.push(Effect::Save);
    fx.push(warning(RunWarning::Stalled {
        run_id: state.record.id.clone(),
        last_step: stall.last_step.map(|last| (last.step, timestamp(last.ts))),
        silent: stall.silent,
        sample: state.previous_sample.clone().map(Box::new),
        action,
    }));
    match action {
        OnStall::Warn => {}
        OnStall::Snapshot => {
            // RUN-28 from now on, as after `train stop`: the snapshot in 30 minutes,
            // the end 10 minutes after it, else a cancel.
            state.request_seen = Some(at);
            fx.push(Effect::RequestSnapshot(REQUEST_REASON));
        }
        OnStall::Cancel => {
            if !state.stall_cancel {
                state.stall_cancel = true;
                fx.push(Effect::CancelJob);
            }
        }
    }
}

/// The end of a job this follower cancelled for a stall says so.
pub(super) fn ending(state: &RunState, mut end: Ending, leftovers: &[u32]) -> Ending {
    if state.stall_cancel && end.state == State::Cancelled && leftovers.is_empty() {
        if let Some(stalled) = &state.record.stalled {
            end.cause = cancel_cause(stalled);
        }
    }
    end
}

/// How long a stalled job was silent, as its messages say it: seconds under two
/// minutes (a `stall_minutes` of 0.05 is 3 s, not "0.1 minutes"), minutes with one
/// decimal above.
#[must_use]
pub fn silence_text(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else {
        format!("{:.1} minutes", seconds / 60.0)
    }
}

/// The message of a run cancelled for its stall.
fn cancel_cause(stalled: &Stalled) -> String {
    let step = stalled.last_step.map_or_else(
        || "before its first step".to_owned(),
        |s| format!("after step {s}"),
    );
    format!(
        "cancelled: the job stalled {step} (no training progress for {}) and `training.on_stall` is `cancel`",
        silence_text(stalled.silent_seconds)
    )
}

/// The `run.json` record of `stall`.
fn record_of(state: &RunState, stall: &Stall, action: OnStall) -> Stalled {
    let at = state
        .began
        .checked_add(stall.at)
        .and_then(|wall| jiff::Timestamp::try_from(wall).ok())
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    Stalled {
        at,
        last_step: stall.last_step.map(|s| s.step),
        last_step_at: stall.last_step.and_then(|s| timestamp(s.ts)),
        silent_seconds: stall.silent.as_secs_f64(),
        on_stall: action,
    }
}

/// UTC seconds as a timestamp, to the millisecond.
fn timestamp(seconds: f64) -> Option<jiff::Timestamp> {
    if !seconds.is_finite() {
        return None;
    }
    #[allow(
        clippy::cast_possible_truncation,
        reason = "a metric line's time, far inside i64 milliseconds"
    )]
    let millis = (seconds * 1000.0).round() as i64;
    jiff::Timestamp::from_millisecond(millis).ok()
}
