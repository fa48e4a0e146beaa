//! A followed run's life as a pure state machine (spec/training.md, RUN-9, RUN-16..RUN-25,
//! RUN-28, RUN-29, MPL-4): [`handle`] takes the [`RunState`] and one [`Event`] and
//! returns the [`Effect`]s to perform, in order. No I/O, no async, no clock: time comes
//! in with the events (`at`, the time since the follower began). The driver,
//! [`super::follow`], performs the effects through an executor and feeds what they
//! found back as events.
//!
//! The life: `following` (poll the job about once a second, sample its machine every
//! 10 s, look for another process's snapshot request every 30 s, cancel a job that
//! overstays its snapshot request, save the summary every 10 s; a job that waits in a
//! scheduler's queue makes the run `pending` until it runs, without a stall clock),
//! then, once the job ended, `ending` (drain the metrics, read `snapshot.json`, read a
//! cancel's leftovers, decide the final state with [`super::ending`], retrieve, check a
//! snapshot checkpoint, point at `job.log`), then `ended` (the record saved in its final state)
//! or `detached` (Ctrl-C, or [`Rules::max_failed_reaches`] failed reaches in a row: the
//! job goes on and `run.json` keeps its state). A retrieval that fails leaves the run
//! `running`, pending retrieval.
//!
//! The changes of `run.json`'s state made outside a follower (a start, a second cancel,
//! `train merge`) are the pure functions of [`transitions`].
//!
//! Every machine of a run has this form, [`Machine`]: a pod's life (lease, deadline,
//! cost cap, client guard) is a second one beside it, with its own state, events and
//! effects.

mod events;
mod queue;
mod rules;
mod stalls;
pub mod transitions;

use std::time::{Duration, SystemTime};

pub use events::{Effect, Event};
pub use rules::Rules;
pub use stalls::silence_text;

use super::RunEvent;
use super::ending::{Ending, JobEnd, ending, unresumable};
use super::record::{RunRecord, Snapshot, SnapshotReason, State};
use super::warning::RunWarning;
use crate::exec::JobStatus;
use crate::system::Sample;
use crate::train::axolotl::MERGED_DIR;
use crate::train::metrics::{MetricLine, MetricReader, Parsed, Summary};
use crate::train::phase::PhaseTracker;
use crate::train::stall::Detector;

pub use crate::machine::Machine;

/// Why a follower stopped following while the job goes on (RUN-16).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetachReason {
    /// Ctrl-C.
    Interrupted,
    /// The target could not be reached `times` times in a row.
    Unreachable {
        /// Target name.
        target: String,
        /// Failed reaches in a row.
        times: u32,
    },
}

/// How a following ended.
#[derive(Debug)]
pub enum Outcome {
    /// The run reached a terminal state, results retrieved.
    Ended(RunRecord),
    /// The follower stopped; the job goes on (RUN-16).
    Detached {
        /// The run, as recorded.
        record: RunRecord,
        /// Why.
        reason: DetachReason,
    },
}

/// Where a followed run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The job runs; the follower polls it.
    Following,
    /// The job ended; the follower collects it.
    Ending,
    /// The run is recorded in its final state.
    Ended,
    /// The retrieval failed; the run is recorded `running`, pending retrieval.
    Pending,
    /// The follower detached; the job goes on.
    Detached,
}

/// A followed run: its record and what the follower knows.
#[derive(Debug)]
pub struct RunState {
    /// The run's record, as it is to be saved.
    pub record: RunRecord,
    /// The rules.
    pub rules: Rules,
    /// Where the run is in its life.
    pub step: Step,
    /// What the metric lines said.
    pub summary: Summary,
    reader: MetricReader,
    tracker: PhaseTracker,
    failures: u32,
    next_sample: Duration,
    next_save: Duration,
    next_request_check: Duration,
    request_seen: Option<Duration>,
    snapshot_seen: Option<Duration>,
    previous_sample: Option<Sample>,
    status: Option<JobStatus>,
    end: Option<Ending>,
    /// The wall-clock time of `at` zero (the follower's start), for the stall's record.
    pub began: SystemTime,
    stall: Detector,
    /// This follower cancelled the job for a stall (`on_stall = "cancel"`).
    stall_cancel: bool,
    /// The scheduler's word on the queued job this follower last sent (issue 33).
    queue_said: Option<String>,
}

impl RunState {
    /// A follower of `record` under `rules`; `requested` says this process placed a
    /// snapshot request just before (RUN-26).
    #[must_use]
    pub fn new(record: RunRecord, rules: Rules, requested: bool) -> Self {
        Self {
            record,
            rules,
            step: Step::Following,
            summary: Summary::default(),
            reader: MetricReader::new(),
            tracker: PhaseTracker::new(),
            failures: 0,
            next_sample: Duration::ZERO,
            next_save: rules.save_interval,
            next_request_check: Duration::ZERO,
            request_seen: requested.then_some(Duration::ZERO),
            snapshot_seen: None,
            previous_sample: None,
            status: None,
            end: None,
            began: SystemTime::UNIX_EPOCH,
            stall: Detector::new(rules.stall),
            stall_cancel: false,
            queue_said: None,
        }
    }

    /// A run whose job ended, with what its metric lines said, to be collected from
    /// [`Event::JobEnded`].
    #[must_use]
    pub fn ended(record: RunRecord, summary: Summary) -> Self {
        let mut state = Self::new(record, Rules::default(), false);
        state.summary = summary;
        state
    }
}

impl Machine for RunState {
    type Event = Event;
    type Effect = Effect;

    fn handle(&mut self, event: Event) -> Vec<Effect> {
        handle(self, event)
    }
}

/// Takes `event` into `state` and returns what to do, in order.
#[must_use]
pub fn handle(state: &mut RunState, event: Event) -> Vec<Effect> {
    let mut effects = Vec::new();
    match (state.step, event) {
        (Step::Following, Event::Began) => {
            effects.push(Effect::Emit(RunEvent::Following {
                run_id: state.record.id.clone(),
                target: state.record.target.clone(),
            }));
            effects.push(Effect::Poll);
        }
        (
            Step::Following,
            Event::Polled {
                at,
                metrics,
                log,
                status,
                queued,
            },
        ) => polled(state, at, metrics, log, status, queued, &mut effects),
        (Step::Following, Event::Woke) => effects.push(Effect::Poll),
        (Step::Following, Event::Interrupted) => {
            state.record.set_summary(&state.summary);
            state.step = Step::Detached;
            effects.push(Effect::Save);
            effects.push(Effect::Detach(DetachReason::Interrupted));
        }
        (Step::Following, Event::RequestChecked { at, found: true })
            if state.request_seen.is_none() =>
        {
            state.request_seen = Some(at);
        }
        (_, Event::Sampled { output, wall }) => {
            let sample = crate::system::parse(&output, wall, state.previous_sample.as_ref());
            state.previous_sample = Some(sample.clone());
            effects.push(Effect::Emit(RunEvent::Sample(Box::new(sample))));
        }
        (_, Event::CancelFailed(cause)) => {
            effects.push(warning(RunWarning::CancelFailed { cause }));
        }
        (_, Event::RequestFailed(cause)) => {
            effects.push(warning(RunWarning::StallRequestFailed {
                run_id: state.record.id.clone(),
                cause,
            }));
        }
        (Step::Following, Event::JobEnded(status)) => {
            state.status = Some(status);
            state.step = Step::Ending;
            begin_ending(state, &mut effects);
        }
        (Step::Ending, event) => ending_event(state, event, &mut effects),
        // Anything else comes too late or out of turn: nothing to do.
        _ => {}
    }
    effects
}

/// An event while the run is collected.
fn ending_event(state: &mut RunState, event: Event, effects: &mut Vec<Effect>) {
    match event {
        Event::Drained { lines, rest } => {
            for line in lines {
                let parsed = state.reader.parse(&line);
                observe(state, parsed, effects);
            }
            let parsed = state.reader.parse_last(&rest);
            observe(state, parsed, effects);
            begin_ending(state, effects);
        }
        Event::SnapshotFile(found) => {
            if state.summary.snapshot.is_none() {
                state.summary.snapshot = found;
            }
            after_snapshot(state, effects);
        }
        Event::Leftovers(found) => {
            let pids = found.unwrap_or_else(|cause| {
                effects.push(warning(RunWarning::LeftoversUnreadable {
                    run_id: state.record.id.clone(),
                    cause,
                }));
                Vec::new()
            });
            decide(state, &pids, effects);
        }
        Event::Retrieved(Err(error)) => {
            let end = state.end.take().unwrap_or_else(|| no_end(state));
            state.record.state = State::Running;
            state.record.message = Some(format!(
                "the job ended ({}); results pending retrieval: {error}",
                end.message(None)
                    .unwrap_or_else(|| end.state.name().to_owned())
            ));
            state.step = Step::Pending;
            effects.push(Effect::Save);
            effects.push(Effect::Fail);
        }
        Event::Retrieved(Ok(())) => {
            let stopped = state
                .end
                .as_ref()
                .is_some_and(|e| e.state == State::Stopped);
            match (&state.summary.snapshot, stopped) {
                (Some((_, checkpoint)), true) => {
                    effects.push(Effect::CheckCheckpoint(checkpoint.clone()));
                }
                _ => conclude(state, effects),
            }
        }
        Event::CheckpointChecked(missing) => {
            if let (false, Some((step, checkpoint))) = (missing.is_empty(), &state.summary.snapshot)
            {
                // RUN-30: never `stopped` with a checkpoint a resume cannot use.
                state.end = Some(unresumable(&state.record.id, *step, checkpoint, &missing));
                state.record.last_step = Some(*step);
            }
            conclude(state, effects);
        }
        Event::LogPointer(pointer) => record_end(state, Some(&pointer), effects),
        // Anything else comes out of turn: nothing to do.
        _ => {}
    }
}

/// A [`RunWarning`] to send.
fn warning(warning: RunWarning) -> Effect {
    Effect::Emit(RunEvent::Warning(warning))
}

/// One poll of the job while following.
fn polled(
    state: &mut RunState,
    at: Duration,
    metrics: Result<Vec<String>, String>,
    log: Vec<String>,
    status: Result<JobStatus, String>,
    queued: Option<String>,
    effects: &mut Vec<Effect>,
) {
    let mut failed = None;
    match metrics {
        Ok(lines) => {
            for line in lines {
                let parsed = state.reader.parse(&line);
                if let Parsed::Line(line) | Parsed::Flagged(line, _) = &parsed {
                    stalls::line(state, at, line, effects);
                }
                observe(state, parsed, effects);
            }
        }
        Err(cause) => failed = Some(cause),
    }
    effects.extend(
        log.into_iter()
            .map(|line| Effect::Emit(RunEvent::JobLog(line))),
    );
    let status = match status {
        Ok(status) => Some(status),
        Err(cause) => {
            failed = Some(cause);
            None
        }
    };
    if let Some(cause) = failed {
        state.failures += 1;
        effects.push(warning(RunWarning::Unreachable {
            target: state.record.target.clone(),
            failures: state.failures,
            limit: state.rules.max_failed_reaches,
            cause,
        }));
        if state.failures >= state.rules.max_failed_reaches {
            state.record.set_summary(&state.summary);
            state.step = Step::Detached;
            effects.push(Effect::Save);
            effects.push(Effect::Detach(DetachReason::Unreachable {
                target: state.record.target.clone(),
                times: state.rules.max_failed_reaches,
            }));
            return;
        }
        // A target that did not answer is asked nothing more until the next poll: each
        // call to a wedged host waits out its connect bound, so a sample or a request
        // check now would stretch one failed reach over several.
        effects.push(Effect::Wait(state.rules.poll_interval));
        return;
    }
    state.failures = 0;
    if let Some(status) = status.filter(|s| s.is_finished()) {
        // MPL-4: drain the whole file before the final state is computed.
        state.status = Some(status);
        state.step = Step::Ending;
        effects.push(Effect::Drain);
        return;
    }
    let alive = status == Some(JobStatus::Running);
    // Issue 33: a job waiting in the scheduler's queue is pending, not stalled.
    let queued = queued.filter(|_| alive);
    let waiting = queued.is_some();
    queue::polled(state, queued, effects);
    stalls::tick(state, at, alive && !waiting, effects);
    let rules = state.rules;
    if at >= state.next_sample {
        state.next_sample = at + rules.sample_interval;
        effects.push(Effect::Sample);
    }
    if state.request_seen.is_none() && at >= state.next_request_check {
        state.next_request_check = at + rules.request_check_interval;
        effects.push(Effect::CheckRequest);
    }
    if state.summary.snapshot.is_some() && state.snapshot_seen.is_none() {
        state.snapshot_seen = Some(at);
    }
    let overdue = match (state.request_seen, state.snapshot_seen) {
        (_, Some(saved)) => at.saturating_sub(saved) > rules.end_after_snapshot,
        (Some(asked), None) => at.saturating_sub(asked) > rules.snapshot_deadline,
        (None, None) => false,
    };
    if overdue {
        effects.push(warning(RunWarning::SnapshotOverdue {
            run_id: state.record.id.clone(),
        }));
        effects.push(Effect::CancelJob);
    }
    if at >= state.next_save {
        state.next_save = at + rules.save_interval;
        state.record.set_summary(&state.summary);
        effects.push(Effect::Save);
    }
    effects.push(Effect::Wait(rules.poll_interval));
}

/// Takes one parsed metric line into the summary and the phase, with its events.
fn observe(state: &mut RunState, parsed: Parsed, effects: &mut Vec<Effect>) {
    let line = match parsed {
        Parsed::Line(line) => line,
        Parsed::Flagged(line, text) => {
            effects.push(warning(RunWarning::Metrics(text)));
            line
        }
        Parsed::Skipped(Some(text)) => {
            effects.push(warning(RunWarning::Metrics(text)));
            return;
        }
        Parsed::Skipped(None) => return,
    };
    state.summary.observe(&line);
    if let Some(phase) = state.tracker.observe(&line) {
        effects.push(Effect::Emit(RunEvent::Phase(phase)));
    }
    match line {
        MetricLine::Train(train) => effects.push(Effect::Emit(RunEvent::Train(train))),
        MetricLine::Eval(eval) => effects.push(Effect::Emit(RunEvent::Eval(eval))),
        _ => {}
    }
}

/// The job ended and its metrics are read: the retrieval phase, then `snapshot.json`
/// when the metrics named no snapshot.
fn begin_ending(state: &mut RunState, effects: &mut Vec<Effect>) {
    if let Some(phase) = state.tracker.retrieving() {
        effects.push(Effect::Emit(RunEvent::Phase(phase)));
    }
    if state.summary.snapshot.is_none() {
        effects.push(Effect::ReadSnapshotFile);
    } else {
        after_snapshot(state, effects);
    }
}

/// The snapshot is known: a cancelled job's leftovers, then the decision.
fn after_snapshot(state: &mut RunState, effects: &mut Vec<Effect>) {
    state.record.set_summary(&state.summary);
    if state.status == Some(JobStatus::Cancelled) {
        effects.push(Effect::ReadLeftovers);
    } else {
        decide(state, &[], effects);
    }
}

/// The final state before the retrieval (RUN-9), and what to retrieve.
fn decide(state: &mut RunState, leftovers: &[u32], effects: &mut Vec<Effect>) {
    let summary = &state.summary;
    let end = ending(
        &state.record.id,
        &JobEnd {
            status: state.status.unwrap_or(JobStatus::Lost),
            plugin_seen: summary.plugin_seen,
            snapshot: summary.snapshot.as_ref().map(|(s, c)| (*s, c.as_str())),
            last_stage: summary.last_stage,
            leftovers,
        },
    );
    let end = stalls::ending(state, end, leftovers);
    let summary = &state.summary;
    let checkpoint = match (&summary.snapshot, end.state) {
        (Some((_, checkpoint)), State::Stopped) => Some(checkpoint.clone()),
        _ => None,
    };
    // A failed merge's partial `output/merged/` is no result (see `ending`).
    let skip = if end.state == State::MergeFailed {
        vec![MERGED_DIR]
    } else {
        Vec::new()
    };
    state.end = Some(end);
    effects.push(Effect::Retrieve { checkpoint, skip });
}

/// The end of a job that was never decided: lost.
fn no_end(state: &RunState) -> Ending {
    ending(
        &state.record.id,
        &JobEnd {
            status: JobStatus::Lost,
            plugin_seen: state.summary.plugin_seen,
            snapshot: None,
            last_stage: None,
            leftovers: &[],
        },
    )
}

/// Retrieved and checked: the pointer into `job.log` when the message needs one.
fn conclude(state: &mut RunState, effects: &mut Vec<Effect>) {
    if state.end.is_none() {
        state.end = Some(no_end(state));
    }
    if let Some(end) = state.end.as_ref().filter(|end| end.points_at_log) {
        effects.push(Effect::PointAtLog {
            last: end.state == State::MergeFailed,
        });
    } else {
        record_end(state, None, effects);
    }
}

/// Records the run's final state.
fn record_end(state: &mut RunState, pointer: Option<&str>, effects: &mut Vec<Effect>) {
    let end = state.end.take().unwrap_or_else(|| no_end(state));
    let record = &mut state.record;
    record.retrieved = true;
    record.state = end.state;
    record.message = end.message(pointer);
    if let (State::Stopped, Some((step, checkpoint))) = (end.state, &state.summary.snapshot) {
        // The reason the job honoured (its snapshot line), else what was known before.
        let reason = state
            .summary
            .snapshot_reason
            .as_deref()
            .and_then(SnapshotReason::from_word)
            .or_else(|| record.snapshot.as_ref().map(|s| s.reason))
            .unwrap_or(SnapshotReason::Requested);
        record.snapshot = Some(Snapshot {
            checkpoint: checkpoint.clone(),
            step: *step,
            reason,
        });
        record.last_step = Some(*step);
    }
    state.step = Step::Ended;
    effects.push(Effect::Save);
    effects.push(Effect::End);
}

#[cfg(test)]
mod stall_tests;
#[cfg(test)]
mod tests;
