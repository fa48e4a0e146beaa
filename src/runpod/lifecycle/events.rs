//! The events a pod's machine takes, the effects it returns and the typed outcomes
//! it reports (see [`super`]).

use std::time::Duration;

use crate::exec::PodEndpoint;

/// A pod's `status` as Runpod REST v2 reports it (wire-facts A.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodStatus {
    /// Waiting for a machine.
    Provisioning,
    /// The image is pulled and the container starts.
    Starting,
    /// The container runs; its SSH endpoint may still be missing.
    Running,
    /// The container exited.
    Exited,
    /// The pod failed.
    Error,
    /// The pod was terminated.
    Terminated,
}

impl PodStatus {
    /// Whether the pod can no longer become ready.
    #[must_use]
    pub fn is_dead(self) -> bool {
        matches!(self, Self::Exited | Self::Error | Self::Terminated)
    }
}

/// What the API says about the pod.
#[derive(Debug, Clone, PartialEq)]
pub struct PodView {
    /// Pod ID.
    pub id: String,
    /// Its status.
    pub status: PodStatus,
    /// Its hourly rate in USD; `None` when Runpod gave none (or 0).
    pub cost_per_hour: Option<f64>,
    /// Where its `sshd` is reachable (`ssh.direct`); `None` until a public port is
    /// assigned, which can be several polls after `RUNNING`.
    pub ssh: Option<PodEndpoint>,
    /// When Runpod created it, on the events' clock; `None` when unknown (the event's
    /// time is taken then).
    pub created_at: Option<Duration>,
}

/// Why `POST /v2/pods` did not create a pod, classified by its retry table
/// (wire-facts A.2; POD-25 with issue 12's rules).
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// 400 saying that no instance is available: the next GPU type.
    Capacity(String),
    /// 403, no access to this GPU pool: the next GPU type.
    Forbidden(String),
    /// Any other 400 (a rule violation), another 4xx, or a request that could not be
    /// made here: stop. The HTTP status when one came.
    Rejected {
        /// HTTP status.
        status: Option<u16>,
        /// The API's reason.
        reason: String,
    },
    /// 422, the request breaks the contract: stop, never retry.
    Invalid(String),
    /// 402, insufficient balance: stop.
    NoCredit(String),
    /// 429: wait `Retry-After` (its absence: the rules' default) and try again.
    RateLimited(Option<Duration>),
    /// 5xx, a timeout or a lost connection: a pod may exist; search before any
    /// new create.
    Ambiguous(String),
}

/// How the SSH handshake with the pod's endpoint went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handshake {
    /// It presented the run's pinned host key.
    Pinned,
    /// It presented another host key: refused before any command runs.
    OtherKey(String),
    /// No handshake (nothing listening yet, a reset): try again on the next poll.
    Failed(String),
}

/// Why a snapshot is requested by the pod's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotCause {
    /// `max_hours` is near and no fresh lease holds the pod (POD-40).
    Deadline,
    /// The spend is near `max_cost_usd` (POD-41).
    Cost,
}

/// Why the pod is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteCause {
    /// The results were retrieved and verified (POD-50).
    Retrieved,
    /// Ctrl-C before the job existed (POD-53).
    Interrupted,
    /// Not ready within the readiness bound (POD-28): the next GPU type.
    NotReady,
    /// The pod died while booting: the next GPU type.
    Died,
    /// It presented another host key than the pinned one.
    OtherHostKey,
    /// `max_cost_usd` is set and Runpod gave no hourly rate, or the cap could not be
    /// written on the pod (POD-42).
    CapNotTransmitted,
    /// The client guard: `max_hours` passed with no lease holding the pod (POD-36).
    Deadline,
    /// `max_cost_usd` reached at the pod's rate (POD-41).
    CostCap,
    /// No job started within `boot_grace_minutes` (POD-33).
    BootGrace,
    /// The results were not retrieved within `retrieve_grace_minutes` (POD-33).
    RetrieveGrace,
    /// The driver gave up before the job existed (an upload or start that failed).
    StartFailed,
    /// The pod's bootstrap found that the image lacks what POD-74 requires: no other
    /// GPU type is tried (the image lacks it on every one).
    ImageUnfit,
}

/// Who deleted the pod (POD-36, recorded in `pod.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleter {
    /// This process.
    Client,
    /// The pod's watchdog, or anyone else: the pod was found gone.
    Watchdog,
}

/// Why the pod's life ended without the result it was made for.
#[derive(Debug, Clone, PartialEq)]
pub enum PodFailure {
    /// Every GPU type was refused for capacity or access: each with the API's reason.
    NoCapacity(Vec<(String, String)>),
    /// The create request itself was refused (402, 422, another 4xx): HTTP status (none
    /// when the request could not be made) and the API's reason. No pod exists.
    Refused {
        /// HTTP status.
        status: Option<u16>,
        /// The API's reason (redacted by the client).
        detail: String,
    },
    /// Still rate limited after the rules' number of waits.
    RateLimited,
    /// The create outcome stayed ambiguous and no pod carrying the run's name could be
    /// found, or the search kept failing: the last cause.
    Ambiguous(String),
    /// The pod presented another host key than the pinned one.
    OtherHostKey(String),
    /// `max_cost_usd` could not be transmitted to the pod (POD-42).
    CapNotTransmitted,
    /// Ctrl-C before the job existed (POD-53).
    Interrupted,
    /// The job did not start within `boot_grace_minutes`.
    BootGrace,
    /// `max_hours` was reached and the pod deleted before the job ended (POD-37).
    DeadlineReached,
    /// `max_cost_usd` was reached and the pod deleted before the job ended (POD-41).
    CostCapReached,
    /// The results were not retrieved within the retrieve grace; the pod is deleted.
    RetrieveGrace,
    /// The pod vanished (deleted by its watchdog or by hand) before its results were
    /// retrieved.
    Vanished,
    /// The driver gave up before the job existed: its cause.
    StartFailed(String),
    /// The image lacks what a pod's image must provide (POD-74), as the pod's bootstrap
    /// told in its log; the pod was deleted and no other GPU type was tried.
    ImageUnfit {
        /// The image.
        image: String,
        /// What it lacks: tools, and `axolotl in <venv>`.
        missing: Vec<String>,
    },
    /// The pod was deleted but stays listed (or `GET` still finds it) after the
    /// rules' patience: reported at every later command until gone.
    StillListed {
        /// Pod ID.
        pod: String,
        /// Its hourly rate.
        rate: Option<f64>,
    },
}

/// What the front end is told (typed; only the front end turns it into text).
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// A create call for this GPU type is about to be sent.
    Creating {
        /// GPU type ID.
        gpu_type: String,
    },
    /// This GPU type was refused; the next one is tried.
    NextType {
        /// The refused type.
        gpu_type: String,
        /// The API's reason.
        reason: String,
    },
    /// Rate limited: waiting this long before the same create.
    RateLimited(Duration),
    /// `"auto"` resolved before any pod (POD-12, POD-14): the request as POD-16 names it
    /// and the choices in order (GPU types with VRAM and price, or data centers).
    Picked {
        /// The request.
        request: String,
        /// The choices, in order.
        choices: Vec<String>,
    },
    /// `gpu_types = "auto"`: a fresh catalog read gave the untried types this order
    /// (POD-15).
    Reordered(Vec<String>),
    /// `gpu_types = "auto"`: the catalog could not be read again or shows nothing left
    /// in stock; the remaining order is kept (POD-15).
    OrderKept(String),
    /// An ambiguous create outcome: searching for a pod carrying the run's name.
    Searching(String),
    /// The pod exists.
    Created {
        /// Pod ID.
        pod: String,
        /// Whether it was found by a search rather than answered by the create.
        adopted: bool,
    },
    /// More pods carry the run's name than the one adopted (POD-62 reports them).
    Strays(Vec<String>),
    /// The pod answered with its pinned host key.
    Ready {
        /// Pod ID.
        pod: String,
    },
    /// `max_cost_usd` buys less than 30 minutes at the rate (POD-23): the smallest cap
    /// that buys 30 minutes.
    CapShort {
        /// USD.
        smallest: f64,
    },
    /// A snapshot is requested.
    Snapshot(SnapshotCause),
    /// The pod is being deleted.
    Deleting {
        /// Pod ID.
        pod: String,
        /// Why.
        cause: DeleteCause,
    },
    /// A delete was answered but the pod is still listed; the delete is sent again.
    StillListed {
        /// Pod ID.
        pod: String,
    },
    /// The pod is confirmed gone.
    Gone {
        /// Pod ID.
        pod: String,
        /// Who deleted it.
        by: Deleter,
    },
    /// `--keep-pod`: no rule removes the pod once the job exists (POD-61).
    Kept {
        /// Pod ID.
        pod: String,
        /// Its hourly rate.
        rate: Option<f64>,
    },
    /// The retrieval failed; the pod stays until this time (the retrieve grace).
    RetrieveLater {
        /// When the grace ends, on the events' clock.
        until: Duration,
    },
}

/// What happened, as the driver saw it. `at` is the time on the driver's clock (the
/// same clock for every event of one pod; a driver that resumes a pod converts the
/// recorded creation time to it).
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The machine starts: create the first GPU type.
    Began {
        /// When.
        at: Duration,
    },
    /// `POST /v2/pods` answered 201.
    Created {
        /// When.
        at: Duration,
        /// The pod.
        pod: PodView,
    },
    /// `POST /v2/pods` did not create a pod, or may have.
    CreateFailed {
        /// When.
        at: Duration,
        /// The classified outcome.
        refusal: Refusal,
    },
    /// The pods carrying the run's name, oldest first, or why the listing failed.
    Searched {
        /// When.
        at: Duration,
        /// What the listing found.
        found: Result<Vec<PodView>, String>,
    },
    /// `gpu_types = "auto"`: the untried types in their new order from a fresh catalog
    /// read, or why the order is kept (POD-15).
    Reordered {
        /// When.
        at: Duration,
        /// The new order, or why there is none.
        order: Result<Vec<String>, String>,
    },
    /// `GET /v2/pods/{id}`: the pod, `None` when Runpod no longer has it (404), or
    /// why it could not be read.
    Polled {
        /// When.
        at: Duration,
        /// What it said.
        pod: Result<Option<PodView>, String>,
    },
    /// The handshake with the endpoint.
    Handshook {
        /// When.
        at: Duration,
        /// How it went.
        result: Handshake,
    },
    /// `.pod/snapshot_at` and `.pod/cost_cap_at` written on the pod, or why not.
    CostFilesWritten {
        /// When.
        at: Duration,
        /// How it went.
        result: Result<(), String>,
    },
    /// The job exists on the pod.
    JobStarted {
        /// When.
        at: Duration,
    },
    /// The driver could not upload or start the job: the pod goes.
    StartFailed {
        /// When.
        at: Duration,
        /// Why.
        cause: String,
    },
    /// A new metric line arrived: the job makes progress (POD-35).
    Progress {
        /// When.
        at: Duration,
    },
    /// The run's follower declared the job stalled (issue 21): no lease until it makes
    /// progress again.
    Stalled {
        /// When.
        at: Duration,
    },
    /// `.pod/lease` rewritten, or why not.
    LeaseWritten {
        /// When.
        at: Duration,
        /// How it went.
        result: Result<(), String>,
    },
    /// The pause asked for by [`Effect::Wait`] is over (or the driver's own pace
    /// came round): time passed.
    Tick {
        /// When.
        at: Duration,
    },
    /// The job ended.
    JobEnded {
        /// When.
        at: Duration,
    },
    /// The results were retrieved and verified (snapshot checkpoint included), or why
    /// not.
    Retrieved {
        /// When.
        at: Duration,
        /// How it went.
        result: Result<(), String>,
    },
    /// Ctrl-C.
    Interrupted {
        /// When.
        at: Duration,
    },
    /// The pod's log holds its bootstrap's line saying that the image lacks what POD-74
    /// requires ([`crate::runpod::bootstrap::image_lacks`]).
    ImageUnfit {
        /// When.
        at: Duration,
        /// The image.
        image: String,
        /// What it lacks.
        missing: Vec<String>,
    },
    /// `DELETE /v2/pods/{id}` answered (204 or 404), or why it failed.
    DeleteAnswered {
        /// When.
        at: Duration,
        /// How it went.
        result: Result<(), String>,
    },
    /// Whether the pod is still listed and whether `GET` still finds it, or why that
    /// could not be read.
    GoneChecked {
        /// When.
        at: Duration,
        /// `(listed, found by GET)`.
        seen: Result<(bool, bool), String>,
    },
}

impl Event {
    /// When it happened.
    #[must_use]
    pub fn at(&self) -> Duration {
        match self {
            Self::Began { at }
            | Self::Created { at, .. }
            | Self::CreateFailed { at, .. }
            | Self::Searched { at, .. }
            | Self::Reordered { at, .. }
            | Self::Polled { at, .. }
            | Self::Handshook { at, .. }
            | Self::CostFilesWritten { at, .. }
            | Self::JobStarted { at }
            | Self::StartFailed { at, .. }
            | Self::Progress { at }
            | Self::Stalled { at }
            | Self::LeaseWritten { at, .. }
            | Self::Tick { at }
            | Self::JobEnded { at }
            | Self::Retrieved { at, .. }
            | Self::Interrupted { at }
            | Self::ImageUnfit { at, .. }
            | Self::DeleteAnswered { at, .. }
            | Self::GoneChecked { at, .. } => *at,
        }
    }
}

/// What to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Tell the front end.
    Notice(Notice),
    /// Write `pod.json` from the state's [`super::PodFacts`] (before each create call,
    /// POD-24, and at every change of the pod's life).
    Record,
    /// Send `POST /v2/pods` for this GPU type; then [`Event::Created`] or
    /// [`Event::CreateFailed`].
    Create(String),
    /// List the pods and keep those carrying the run's name; then [`Event::Searched`].
    Search,
    /// `gpu_types = "auto"`: read the catalog again and order the untried types; then
    /// [`Event::Reordered`] (POD-15).
    Reorder,
    /// `GET /v2/pods/{id}`; then [`Event::Polled`].
    Poll,
    /// Handshake with the endpoint, accepting only the pinned host key; then
    /// [`Event::Handshook`].
    Handshake(PodEndpoint),
    /// Write `.pod/snapshot_at` and `.pod/cost_cap_at` (times on the events' clock);
    /// then [`Event::CostFilesWritten`].
    WriteCostFiles {
        /// When the cost snapshot is requested.
        snapshot_at: Duration,
        /// When the pod is deleted.
        cost_cap_at: Duration,
    },
    /// The pod is ready: upload and start the job; then [`Event::JobStarted`] or
    /// [`Event::StartFailed`].
    Ready(PodEndpoint),
    /// Rewrite `.pod/lease`; then [`Event::LeaseWritten`].
    WriteLease,
    /// Place the snapshot request with this reason (one already placed keeps its own).
    RequestSnapshot(SnapshotCause),
    /// Write `.pod/retrieved` (POD-50).
    MarkRetrieved,
    /// Send `DELETE /v2/pods/{id}`; then [`Event::DeleteAnswered`].
    Delete(String),
    /// List the pods and `GET` this one; then [`Event::GoneChecked`].
    CheckGone(String),
    /// Delete the run's host-key secret: its last pod is gone (POD-31).
    DeleteSecret,
    /// Wait this long; then [`Event::Tick`] (or [`Event::Interrupted`]).
    Wait(Duration),
    /// Stop following; the pod stays under its watchdog (POD-53).
    Detach,
    /// The pod's life as this process sees it is over: `None` when it ended as meant
    /// (retrieved and gone, or kept).
    Done(Option<PodFailure>),
}
