//! A pod's life as a pure state machine beside the run's (`runs::lifecycle`): [`handle`]
//! takes the [`PodState`] and one [`Event`] and returns the [`Effect`]s to perform, in
//! order. No I/O, no async, no clock: time comes in with the events. A driver performs
//! the effects through the Runpod client and the executor and feeds back what they
//! found.
//!
//! The life (spec/runpod.md sections 5-8, 10, 12; issue 12):
//!
//! - `creating`: one `POST /v2/pods` per GPU type, in the target's order, `pod.json`
//!   recorded before each call (POD-24). The retry table ([`Refusal`]): capacity 400 and
//!   403 move to the next type; 402, 422 and any other 400 stop with no pod; 429 waits
//!   out `Retry-After`; a 5xx, a timeout or a lost connection goes to `adopting`.
//! - `adopting`: the pods carrying the run's name are searched for; one found is
//!   adopted, none found allows the same create again, never a second pod otherwise.
//! - `booting`: the pod is polled until `ssh.direct` exists, then a handshake must
//!   present the pinned host key (never the status alone, POD-28); not ready within the
//!   readiness bound, or dead: deleted, and the next type. Another host key, or the
//!   bootstrap's word in the pod's log that the image lacks what POD-74 requires (also
//!   while such a pod is being deleted): deleted, and the run stops.
//! - `transmitting`: with `max_cost_usd`, the cost files are written on the pod before
//!   the job may start (POD-41, POD-42).
//! - `ready`: the driver uploads and starts the job.
//! - `running` / `snapshotting`: the lease is rewritten while the job makes progress
//!   (POD-35); the deadline snapshot (POD-40), the cost snapshot and the cost cap
//!   (POD-41) and the client guard (POD-36) run on the time the ticks bring.
//! - `retrieving`: the job ended; retrieved and verified, the pod is marked retrieved
//!   and deleted; the retrieval failed, the pod stays within its retrieve grace and this
//!   process detaches (POD-44, POD-50).
//! - `deleting` / `confirming gone`: "gone means gone": a 204 is not proof; the pod is
//!   polled until it is not listed and `GET` answers 404, the delete retried with
//!   backoff, and a pod still listed after the rules' patience is `lingering`, reported.
//! - `kept` (`--keep-pod` once the job exists, POD-61), `detached` (Ctrl-C once the job
//!   exists, POD-53; a failed retrieval), `gone`.
//!
//! Every duration of [`Rules`] is scaled by [`crate::env::TimeScale`] (the test-only
//! factor), so tests run the real rules in seconds.

mod attempt;
mod create;
mod delete;
mod events;
mod guard;
mod rules;

use std::collections::VecDeque;
use std::time::Duration;

pub use events::{
    DeleteCause, Deleter, Effect, Event, Handshake, Notice, PodFailure, PodStatus, PodView,
    Refusal, SnapshotCause,
};
pub use rules::Rules;

use crate::exec::PodEndpoint;
use crate::machine::Machine;

/// Where a pod is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing sent yet.
    Idle,
    /// A create call is out, or waits out a 429.
    Creating,
    /// An ambiguous create: searching for a pod carrying the run's name.
    Adopting,
    /// The pod exists; waiting for its SSH endpoint and the pinned host key.
    Booting,
    /// Writing the cost files on the pod.
    Transmitting,
    /// Ready: the job is being uploaded and started.
    Ready,
    /// The job runs.
    Running,
    /// The job runs and a snapshot was requested by the pod's rules.
    Snapshotting,
    /// The job ended; its results are being retrieved.
    Retrieving,
    /// A delete is out or waits its backoff.
    Deleting,
    /// Deleted; waiting until it is no longer listed and `GET` answers 404.
    ConfirmingGone,
    /// `--keep-pod`: no rule removes it.
    Kept,
    /// This process stopped following; the pod stays under its watchdog.
    Detached,
    /// No pod of this machine exists (none was made, or it is confirmed gone).
    Gone,
    /// Deleted but still listed after the rules' patience: reported until gone.
    Lingering,
}

/// What became of one create call.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptOutcome {
    /// Sent; no answer yet (what `pod.json` holds if this process dies now).
    Sent,
    /// A pod was created (or adopted): its ID.
    Created(String),
    /// Refused: the API's reason.
    Refused(String),
    /// No clear answer: the cause.
    Ambiguous(String),
}

/// One create call, as `pod.json` records it (POD-52).
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// GPU type ID.
    pub gpu_type: String,
    /// When it was sent.
    pub at: Duration,
    /// What became of it.
    pub outcome: AttemptOutcome,
}

/// What `pod.json` records of the pod (POD-52); [`Effect::Record`] writes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodFacts {
    /// Pod ID, once one exists.
    pub pod: Option<String>,
    /// Its GPU type.
    pub gpu_type: Option<String>,
    /// Its hourly rate in USD.
    pub rate: Option<f64>,
    /// When it was created.
    pub created_at: Option<Duration>,
    /// Every create call.
    pub attempts: Vec<Attempt>,
    /// When its job started.
    pub job_started_at: Option<Duration>,
    /// When it was confirmed gone, and who deleted it.
    pub deleted: Option<(Duration, Deleter)>,
    /// Whether the results were retrieved and verified.
    pub retrieved: bool,
}

/// A deletion under way.
#[derive(Debug, Clone, PartialEq)]
struct Deletion {
    pod: String,
    /// `None`: found gone (the watchdog or someone else deleted it).
    cause: Option<DeleteCause>,
    by: Deleter,
    attempts: u32,
    since: Duration,
    next_delete: Duration,
}

/// Where a run's order of GPU types comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeOrder {
    /// The listed `gpu_types`, tried exactly in their order.
    Fixed,
    /// `gpu_types = "auto"`: a fresh catalog read after each type that cannot be placed
    /// (POD-15).
    Catalog,
}

/// A pod's life: its rules, where it is, what `pod.json` records and what the rules
/// need to remember.
#[derive(Debug, Clone)]
pub struct PodState {
    /// The rules.
    pub rules: Rules,
    /// Where it is.
    pub phase: Phase,
    /// What `pod.json` records.
    pub facts: PodFacts,
    current: Option<String>,
    remaining: VecDeque<String>,
    /// Where the order of the types comes from.
    order: TypeOrder,
    tried: Vec<(String, String)>,
    rate_waits: u32,
    ambiguous: u32,
    search_failures: u32,
    last_cause: String,
    boot_since: Duration,
    endpoint: Option<PodEndpoint>,
    /// The last view of the booting pod (its create answer or a poll).
    viewed_at: Duration,
    /// A handshake on the known endpoint failed: the next is tried without a poll
    /// until [`Rules::poll_interval`] has passed since the last view.
    handshake_again: bool,
    progress_at: Option<Duration>,
    lease_at: Option<Duration>,
    next_lease: Duration,
    deadline_request: Option<Duration>,
    cost_requested: bool,
    cost_times: Option<(Duration, Duration)>,
    ended_at: Option<Duration>,
    interrupted: bool,
    why: String,
    /// The image and what it lacks, once its bootstrap told (POD-74).
    unfit: Option<(String, Vec<String>)>,
    deletion: Option<Deletion>,
}

impl PodState {
    /// A pod still to be created, trying `gpu_types` in order.
    #[must_use]
    pub fn new(rules: Rules, gpu_types: Vec<String>) -> Self {
        Self {
            rules,
            phase: Phase::Idle,
            facts: PodFacts::default(),
            current: None,
            remaining: gpu_types.into(),
            order: TypeOrder::Fixed,
            tried: Vec::new(),
            rate_waits: 0,
            ambiguous: 0,
            search_failures: 0,
            last_cause: String::new(),
            boot_since: Duration::ZERO,
            endpoint: None,
            viewed_at: Duration::ZERO,
            handshake_again: false,
            progress_at: None,
            lease_at: None,
            next_lease: Duration::ZERO,
            deadline_request: None,
            cost_requested: false,
            cost_times: None,
            ended_at: None,
            interrupted: false,
            why: String::new(),
            unfit: None,
            deletion: None,
        }
    }

    /// This state with `gpu_types = "auto"`'s walk: each type that cannot be placed is
    /// followed by [`Effect::Reorder`] before the next is tried (POD-15).
    #[must_use]
    pub fn with_reorder(mut self) -> Self {
        self.order = TypeOrder::Catalog;
        self
    }

    /// A pod `pod.json` recorded, taken up again by a later process (`train attach`):
    /// its job ended at `ended` when known. With no creation time recorded, `at` counts
    /// as the creation (the deadline then comes later than it should, never earlier
    /// than the watchdog's, which keeps its own).
    #[must_use]
    pub fn attached(
        rules: Rules,
        mut facts: PodFacts,
        ended: Option<Duration>,
        at: Duration,
    ) -> Self {
        let mut state = Self::new(rules, Vec::new());
        let created = *facts.created_at.get_or_insert(at);
        state.current.clone_from(&facts.gpu_type);
        state.boot_since = created;
        state.cost_times = facts
            .rate
            .and_then(|rate| rules::cost_times(&state.rules, created, rate));
        state.phase = match (facts.job_started_at, ended) {
            (Some(_), _) if state.rules.keep_pod => Phase::Kept,
            (Some(_), Some(_)) => Phase::Retrieving,
            (Some(_), None) => Phase::Running,
            (None, _) => Phase::Booting,
        };
        state.ended_at = ended;
        state.facts = facts;
        state
    }

    /// The pod's `max_hours` deadline, once it exists.
    #[must_use]
    pub fn deadline(&self) -> Option<Duration> {
        self.facts.created_at.map(|c| c + self.rules.deadline)
    }

    /// When the cost snapshot is requested and when the pod is deleted at the cost cap.
    #[must_use]
    pub fn cost_times(&self) -> Option<(Duration, Duration)> {
        self.cost_times
    }

    /// When the lease was last written on the pod.
    #[must_use]
    pub fn lease_at(&self) -> Option<Duration> {
        self.lease_at
    }
}

impl Machine for PodState {
    type Event = Event;
    type Effect = Effect;

    fn handle(&mut self, event: Event) -> Vec<Effect> {
        handle(self, event)
    }
}

/// Takes `event` into `state` and returns what to do, in order.
#[must_use]
#[allow(
    clippy::too_many_lines,
    reason = "the transition table: one arm per (phase, event) pair"
)]
pub fn handle(state: &mut PodState, event: Event) -> Vec<Effect> {
    let mut fx = Vec::new();
    let at = event.at();
    match (state.phase, event) {
        (Phase::Idle, Event::Began { .. }) => attempt::next_type(state, at, &mut fx),
        (Phase::Creating, Event::Created { pod, .. }) => {
            create::created(state, at, pod, false, &mut fx);
        }
        (Phase::Creating, Event::CreateFailed { refusal, .. }) => {
            create::refused(state, at, refusal, &mut fx);
        }
        (Phase::Creating, Event::Reordered { order, .. }) => {
            create::reordered(state, at, order, &mut fx);
        }
        (Phase::Creating, Event::Tick { .. }) => attempt::send(state, at, &mut fx),
        (Phase::Creating, Event::Interrupted { .. }) => {
            attempt::finish(state, Some(PodFailure::Interrupted), true, &mut fx);
        }
        (Phase::Adopting, Event::Searched { found, .. }) => {
            create::searched(state, at, found, &mut fx);
        }
        (Phase::Adopting, Event::Tick { .. }) => fx.push(Effect::Search),
        (Phase::Adopting, Event::Interrupted { .. }) => state.interrupted = true,
        (Phase::Booting, Event::Polled { pod, .. }) => create::polled(state, at, pod, &mut fx),
        (Phase::Booting, Event::Handshook { result, .. }) => {
            create::handshook(state, at, result, &mut fx);
        }
        (Phase::Booting, Event::Tick { .. }) => create::tick(state, at, &mut fx),
        (Phase::Booting, Event::ImageUnfit { image, missing, .. }) => {
            state.unfit = Some((image, missing));
            delete::start(state, at, DeleteCause::ImageUnfit, &mut fx);
        }
        // Told while the pod that could not become ready is deleted: no other type.
        (Phase::Deleting | Phase::ConfirmingGone, Event::ImageUnfit { image, missing, .. }) => {
            delete::unfit(state, image, missing);
        }
        (Phase::Transmitting, Event::CostFilesWritten { result, .. }) => match result {
            Ok(()) => create::ready(state, &mut fx),
            Err(cause) => {
                state.why = cause;
                delete::start(state, at, DeleteCause::CapNotTransmitted, &mut fx);
            }
        },
        (Phase::Booting | Phase::Transmitting | Phase::Ready, Event::Interrupted { .. }) => {
            state.interrupted = true;
            delete::start(state, at, DeleteCause::Interrupted, &mut fx);
        }
        (Phase::Ready, Event::JobStarted { .. }) => guard::job_started(state, at, &mut fx),
        (Phase::Ready, Event::StartFailed { cause, .. }) => {
            state.why = cause;
            delete::start(state, at, DeleteCause::StartFailed, &mut fx);
        }
        (
            Phase::Ready | Phase::Running | Phase::Snapshotting | Phase::Retrieving,
            Event::Tick { .. },
        ) => {
            guard::tick(state, at, &mut fx);
        }
        (Phase::Running | Phase::Snapshotting, Event::Progress { .. }) => {
            state.progress_at = Some(at);
        }
        // A stalled job stops renewing the lease, whatever `on_stall` says (POD-35).
        (Phase::Running | Phase::Snapshotting, Event::Stalled { .. }) => {
            state.progress_at = None;
        }
        // Recorded, so the project's other processes see the pod's bound (issue 34).
        (_, Event::LeaseWritten { result: Ok(()), .. }) => {
            state.lease_at = Some(at);
            fx.push(Effect::Record);
        }
        (Phase::Running | Phase::Snapshotting | Phase::Retrieving, Event::Polled { pod, .. }) => {
            match pod {
                Ok(Some(view)) => {
                    if state.facts.rate.is_none() {
                        state.facts.rate = view.cost_per_hour;
                    }
                }
                Ok(None) => {
                    let cause = guard::watchdog_rule(state, at);
                    delete::vanished(state, at, cause, &mut fx);
                }
                Err(_) => {}
            }
        }
        (Phase::Running | Phase::Snapshotting, Event::JobEnded { .. }) => {
            state.ended_at = Some(at);
            state.phase = Phase::Retrieving;
            fx.push(Effect::Record);
        }
        (Phase::Retrieving, Event::Retrieved { result, .. }) => {
            retrieved(state, at, result.is_ok(), &mut fx);
        }
        (Phase::Running | Phase::Snapshotting | Phase::Retrieving, Event::Interrupted { .. }) => {
            state.phase = Phase::Detached;
            fx.push(Effect::Record);
            fx.push(Effect::Detach);
        }
        (Phase::Kept, Event::Retrieved { result, .. }) => {
            state.facts.retrieved = result.is_ok();
            fx.push(Effect::Record);
            fx.push(Effect::Done(None));
        }
        (Phase::Kept, Event::Interrupted { .. }) => fx.push(Effect::Detach),
        (Phase::Deleting, Event::DeleteAnswered { result, .. }) => {
            delete::answered(state, at, &result, &mut fx);
        }
        (Phase::Deleting, Event::Tick { .. }) => delete::resend(state, at, &mut fx),
        (Phase::ConfirmingGone, Event::GoneChecked { seen, .. }) => {
            delete::checked(state, at, &seen, &mut fx);
        }
        (Phase::ConfirmingGone, Event::Tick { .. }) => delete::check(state, &mut fx),
        // Anything else comes too late or out of turn: nothing to do.
        _ => {}
    }
    fx
}

/// The results were retrieved and verified (`ok`), or not.
fn retrieved(state: &mut PodState, at: Duration, ok: bool, fx: &mut Vec<Effect>) {
    if ok {
        state.facts.retrieved = true;
        fx.push(Effect::MarkRetrieved);
        delete::start(state, at, DeleteCause::Retrieved, fx);
    } else {
        let until = guard::retrieve_until(state);
        state.phase = Phase::Detached;
        fx.push(Effect::Notice(Notice::RetrieveLater { until }));
        fx.push(Effect::Record);
        fx.push(Effect::Detach);
    }
}

#[cfg(test)]
pub(crate) mod tests;
