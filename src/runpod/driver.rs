//! The driver of [`super::lifecycle`], as `runs::follow` drives `runs::lifecycle`: it
//! performs the effects the pod's machine returns and feeds back what they found. The
//! machine decides; this file only does. Its clock is the UNIX clock the client's pod
//! views use (`createdAt`), so a later process can take a recorded pod up again.
//!
//! What it does itself: the API calls through [`RunpodClient`] (create, search, poll,
//! delete, gone, the host-key secret's deletion), the handshake through the executor's
//! SSH client with the run's own `ssh -F` configuration (which pins the host key: a pod
//! presenting another one is refused before any command runs), and the small files in
//! the pod's run directory through [`Executor::put_file`](crate::exec::Executor::put_file): the cost files, the lease, the
//! snapshot request and the retrieved mark. What the run itself does (upload and start
//! the job, watch it, retrieve and verify its results) comes through [`PodJob`]; what
//! the front end and `pod.json` learn, through [`PodHooks`].

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::api::{ApiError, CreatePod, RunpodClient};
use super::catalog::auto::AutoState;
use super::lifecycle::{
    Effect, Event, Handshake, Notice, Phase, PodFailure, PodState, SnapshotCause, handle,
};
use super::logs;
use crate::env::TimeScale;
use crate::exec::{ExecError, Executor as _, PodEndpoint, SshExecutor};
use crate::train::plugin::SNAPSHOT_REQUEST;

/// The lease, rewritten while a followed job makes progress (POD-35): UNIX seconds.
pub const LEASE_FILE: &str = ".pod/lease";
/// When the watchdog requests the cost snapshot (POD-41): UNIX seconds.
pub const SNAPSHOT_AT_FILE: &str = ".pod/snapshot_at";
/// When the watchdog deletes the pod at the cost cap (POD-41): UNIX seconds.
pub const COST_CAP_AT_FILE: &str = ".pod/cost_cap_at";
/// The results were retrieved and verified: the watchdog deletes the pod (POD-50).
pub const RETRIEVED_FILE: &str = ".pod/retrieved";
/// The network volume's size in GB that overbrainer knows, written while it follows
/// the run and after a grow; the watchdog's disk backstop reads it (POD-48).
pub const VOLUME_GB_FILE: &str = ".pod/volume_gb";

/// The pod's `max_hours` deadline in its environment (UNIX seconds), set at each create
/// call; the watchdog deletes the pod there ([`super::watchdog`]).
pub const DEADLINE_VAR: &str = "OVERBRAINER_DEADLINE_AT";

/// What the job did since the last look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobNews {
    /// Nothing new.
    Quiet,
    /// A new metric line arrived (POD-35).
    Progress,
    /// The job stalled (issue 21): the lease is no longer renewed until it makes
    /// progress again.
    Stalled,
    /// The job ended.
    Ended,
}

/// The run's side of a pod: what the job does on it.
pub trait PodJob: Send {
    /// Uploads the run directory and starts the job on the ready pod.
    fn start(&mut self, pod: &SshExecutor) -> impl Future<Output = Result<(), String>> + Send;

    /// What the job did since the last call; an error when the pod could not be read
    /// (the next look tries again).
    fn watch(&mut self, pod: &SshExecutor) -> impl Future<Output = Result<JobNews, String>> + Send;

    /// Retrieves the results and verifies them (snapshot checkpoint included).
    fn retrieve(&mut self, pod: &SshExecutor) -> impl Future<Output = Result<(), String>> + Send;
}

/// Where the pod's life is told.
pub trait PodHooks: Send {
    /// A notice for the front end.
    fn notice(&mut self, notice: &Notice);

    /// Writes `pod.json` from `state` (before each create call, POD-24).
    ///
    /// # Errors
    /// Why it could not be written.
    fn record(&mut self, state: &PodState) -> Result<(), String>;
}

/// What the driver needs to know of one run's pod.
#[derive(Debug, Clone)]
pub struct PodPlan {
    /// The create body; its `gpu.id` is set for each create call.
    pub body: CreatePod,
    /// The run's `ssh -F` configuration (`runs/<run-id>/ssh/config`): the client key
    /// and the pinned host key.
    pub ssh_config: PathBuf,
    /// The work directory on the pod, under which the run directory lives.
    pub workdir: String,
    /// The run directory on the pod (absolute).
    pub run_dir: String,
    /// The ID of the run's host-key secret, deleted with its last pod (POD-31).
    pub host_key_secret: Option<String>,
    /// How often the job is looked at while the machine waits.
    pub job_poll: Duration,
    /// The scale of the executor's job scripts (the test-only factor).
    pub time_scale: TimeScale,
    /// `gpu_types = "auto"`: each create call's data centers and the re-reads
    /// (POD-14, POD-15).
    pub auto: Option<AutoState>,
    /// The run directory on this machine, where the pod's log is copied while the pod
    /// is followed (`.pod/pod.log`, POD-54, POD-55); `None` keeps no copy, and then the
    /// bootstrap's word that the image lacks what POD-74 requires is not read either
    /// (such a pod ends as one that does not become ready).
    pub log_dir: Option<PathBuf>,
}

/// How the driving ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The pod's life as this process sees it is over: `None` when it ended as meant.
    Done(Option<PodFailure>),
    /// This process stopped following; the pod stays under its watchdog (POD-53).
    Detached,
}

/// The pod's final state and how the driving ended.
#[derive(Debug)]
pub struct Driven {
    /// The machine's state.
    pub state: PodState,
    /// How it ended.
    pub ending: Ending,
    /// Why the host-key secret could not be deleted, when it could not.
    pub secret_left: Option<String>,
}

/// Why the driver stopped before the machine ended.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// `pod.json` could not be written before a create call: none was sent (POD-24).
    #[error("cannot record the pod before creating it: {0}")]
    Record(String),
    /// The machine asked for nothing more without ending (a defect).
    #[error("the pod's life stopped in phase {0:?} without an end")]
    Stalled(Phase),
}

/// The time on the driver's clock (UNIX time).
#[must_use]
pub fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Drives `state` from `first` until its life ends or this process detaches.
///
/// # Errors
/// See [`DriveError`].
pub async fn drive<J: PodJob, H: PodHooks>(
    client: &RunpodClient,
    plan: &PodPlan,
    state: PodState,
    first: Event,
    job: &mut J,
    hooks: &mut H,
    cancel: &CancellationToken,
) -> Result<Driven, DriveError> {
    drive_on(client, plan, state, first, job, hooks, cancel, None).await
}

/// [`drive`] of a pod this process takes up again ([`PodState::attached`]), already
/// connected through `pod` with the run's `ssh -F` file (its pinned host key), so the
/// job's part, the lease and the retrieved mark reach it without a new handshake.
///
/// # Errors
/// See [`DriveError`].
#[allow(
    clippy::too_many_arguments,
    reason = "drive's arguments and the connection"
)]
pub async fn drive_on<J: PodJob, H: PodHooks>(
    client: &RunpodClient,
    plan: &PodPlan,
    state: PodState,
    first: Event,
    job: &mut J,
    hooks: &mut H,
    cancel: &CancellationToken,
    pod: Option<SshExecutor>,
) -> Result<Driven, DriveError> {
    let mut driver = Driver {
        client,
        plan,
        auto: plan.auto.clone(),
        job,
        hooks,
        cancel,
        pod,
        interrupted: false,
        secret_left: None,
        logs: None,
        watch: logs::copy::ImageWatch::default(),
        watched: String::new(),
    };
    let result = Box::pin(driver.run(state, first)).await;
    driver.stop_logs().await;
    if let Some(pod) = driver.pod.take() {
        pod.disconnect().await;
    }
    result.map(|(state, ending)| Driven {
        state,
        ending,
        secret_left: driver.secret_left,
    })
}

struct Driver<'a, J, H> {
    client: &'a RunpodClient,
    plan: &'a PodPlan,
    /// The `"auto"` walk, as it goes.
    auto: Option<AutoState>,
    job: &'a mut J,
    hooks: &'a mut H,
    cancel: &'a CancellationToken,
    /// The pod, once it presented the pinned host key.
    pod: Option<SshExecutor>,
    /// A Ctrl-C was handed to the machine (it is handed over once).
    interrupted: bool,
    secret_left: Option<String>,
    /// The reading of the pod's log stream into its copy, while it goes on.
    logs: Option<(CancellationToken, tokio::task::JoinHandle<()>)>,
    /// What the reading saw of the bootstrap's word on the image (POD-74), for the pod
    /// [`Self::watched`].
    watch: logs::copy::ImageWatch,
    /// The pod whose log [`Self::watch`] is about.
    watched: String,
}

impl<J: PodJob, H: PodHooks> Driver<'_, J, H> {
    async fn run(
        &mut self,
        mut state: PodState,
        first: Event,
    ) -> Result<(PodState, Ending), DriveError> {
        let mut queue: std::collections::VecDeque<Effect> = handle(&mut state, first).into();
        loop {
            let events = match queue.pop_front() {
                Some(Effect::Done(failure)) => return Ok((state, Ending::Done(failure))),
                Some(Effect::Detach) => return Ok((state, Ending::Detached)),
                Some(Effect::Notice(notice)) => {
                    self.hooks.notice(&notice);
                    Vec::new()
                }
                Some(Effect::Record) => {
                    if let Err(cause) = self.hooks.record(&state) {
                        // POD-24: no create call goes out unrecorded.
                        if matches!(queue.front(), Some(Effect::Create(_))) {
                            return Err(DriveError::Record(cause));
                        }
                        tracing::warn!("cannot write pod.json: {cause}");
                    }
                    Vec::new()
                }
                Some(effect) => self.perform(effect, &state).await,
                None => self.idle(&state).await?,
            };
            for event in events {
                // What an effect found is handled before the effects that followed it.
                for effect in handle(&mut state, event).into_iter().rev() {
                    queue.push_front(effect);
                }
            }
        }
    }

    /// `gpu_types = "auto"`: the untried types ordered from a fresh catalog read, or why
    /// the order is kept (POD-15).
    async fn reorder(&mut self) -> Result<Vec<String>, String> {
        let Some(auto) = self.auto.as_mut() else {
            return Err("not an automatic choice".to_owned());
        };
        let read = self
            .client
            .gpu_catalog(auto.gpu_count())
            .await
            .map_err(|e| e.to_string());
        let order = auto.reorder(read);
        match &order {
            Ok(order) => tracing::info!(order = ?order, "gpu_types = \"auto\": new order"),
            Err(why) => tracing::warn!("gpu_types = \"auto\": order kept: {why}"),
        }
        order
    }

    /// The machine asked for nothing: the job's part is due.
    async fn idle(&mut self, state: &PodState) -> Result<Vec<Event>, DriveError> {
        match state.phase {
            Phase::Retrieving => Ok(vec![self.retrieve().await]),
            Phase::Kept => Ok(self.follow_kept().await),
            phase => Err(DriveError::Stalled(phase)),
        }
    }

    /// Starts reading pod `pod`'s log stream into the run's copy, unless it is read
    /// already or no copy is kept (POD-55).
    fn follow_logs(&mut self, pod: &str) {
        let Some(dir) = self.plan.log_dir.clone() else {
            return;
        };
        if self.logs.is_some() || pod.is_empty() {
            return;
        }
        if self.watched != pod {
            pod.clone_into(&mut self.watched);
            self.watch = logs::copy::ImageWatch::default();
        }
        let stop = CancellationToken::new();
        let client = self.client.clone();
        let known = client.redactor().clone();
        let pod = pod.to_owned();
        let pause = self.plan.time_scale.poll(Duration::from_secs(2));
        let stopped = stop.clone();
        let watch = self.watch.clone();
        let task = tokio::spawn(async move {
            let read =
                logs::read::follow(&client, &pod, &dir, &known, pause, &stopped, Some(&watch));
            if let Err(error) = read.await {
                let cause = std::error::Error::source(&error).map(ToString::to_string);
                tracing::warn!("{error}: {}", cause.unwrap_or_default());
            }
        });
        self.logs = Some((stop, task));
    }

    /// Stops reading the log stream, once what was read is written.
    async fn stop_logs(&mut self) {
        if let Some((stop, task)) = self.logs.take() {
            stop.cancel();
            let _ = task.await;
        }
    }

    /// POD-57: before pod `pod` is deleted, what is left of its stream is read for up to
    /// 5 seconds (on the run's time scale).
    async fn drain_logs(&mut self, pod: &str) {
        self.stop_logs().await;
        let Some(dir) = self.plan.log_dir.as_deref() else {
            return;
        };
        let limit = self.plan.time_scale.scale(logs::read::DRAIN);
        let known = self.client.redactor().clone();
        let watch = (self.watched == pod).then_some(&self.watch);
        if let Err(error) = logs::read::drain(self.client, pod, dir, &known, limit, watch).await {
            let cause = std::error::Error::source(&error).map(ToString::to_string);
            tracing::warn!("{error}: {}", cause.unwrap_or_default());
        }
    }

    /// Deletes pod `id`, once the rest of its log stream is read (POD-57).
    async fn delete(&mut self, id: &str) -> Event {
        self.drain_logs(id).await;
        Event::DeleteAnswered {
            result: self.client.delete_pod(id).await.map_err(|e| e.to_string()),
            at: now(),
        }
    }

    /// The bootstrap's word that the image lacks what POD-74 requires, once read from
    /// the pod's log while the pod boots or is deleted (the machine decides what it
    /// means then).
    fn image_told(&self, state: &PodState) -> Option<Event> {
        if !matches!(
            state.phase,
            Phase::Booting | Phase::Deleting | Phase::ConfirmingGone
        ) {
            return None;
        }
        let missing = self.watch.take()?;
        let image = &self.plan.body.image;
        tracing::info!("the image `{image}` lacks what overbrainer needs: {missing:?}");
        Some(Event::ImageUnfit {
            at: now(),
            image: self.plan.body.image.clone(),
            missing,
        })
    }

    /// Performs `effect`; the bootstrap's word on the image comes first when it was
    /// read meanwhile: instead of the effect while the pod boots (the machine deletes
    /// the pod), before what the effect found while the pod is deleted.
    async fn perform(&mut self, effect: Effect, state: &PodState) -> Vec<Event> {
        match self.image_told(state) {
            Some(told) if state.phase == Phase::Booting => vec![told],
            Some(told) => {
                let mut events = vec![told];
                events.extend(self.perform_effect(effect, state).await);
                events
            }
            None => self.perform_effect(effect, state).await,
        }
    }

    async fn perform_effect(&mut self, effect: Effect, state: &PodState) -> Vec<Event> {
        let pod_id = state.facts.pod.clone().unwrap_or_default();
        if !matches!(effect, Effect::Delete(_) | Effect::CheckGone(_)) {
            self.follow_logs(&pod_id);
        }
        let event = match effect {
            Effect::Create(gpu_type) => {
                let mut body = self.plan.body.clone();
                if let Some(candidate) = self.auto.as_mut().and_then(|a| a.take(&gpu_type)) {
                    body.data_center_ids = candidate.data_centers;
                }
                body.gpu.id = gpu_type;
                // Every pod carries its bound (issue 12): `max_hours` from this call, never
                // later than from Runpod's own creation time.
                body.env.insert(
                    DEADLINE_VAR.to_owned(),
                    (now() + state.rules.deadline).as_secs().to_string(),
                );
                match self.client.create_pod(&body).await {
                    Ok(pod) => Event::Created {
                        at: now(),
                        pod: pod.view(),
                    },
                    Err(error) => Event::CreateFailed {
                        at: now(),
                        refusal: error.refusal(),
                    },
                }
            }
            Effect::Reorder => Event::Reordered {
                order: self.reorder().await,
                at: now(),
            },
            Effect::Search => Event::Searched {
                found: self
                    .client
                    .pods_named(&self.plan.body.name)
                    .await
                    .map(|pods| pods.iter().map(super::api::Pod::view).collect())
                    .map_err(|e| e.to_string()),
                at: now(),
            },
            Effect::Poll => Event::Polled {
                pod: self
                    .client
                    .get_pod(&pod_id)
                    .await
                    .map(|pod| pod.map(|p| p.view()))
                    .map_err(|e| e.to_string()),
                at: now(),
            },
            Effect::Handshake(endpoint) => Event::Handshook {
                result: self.handshake(&endpoint).await,
                at: now(),
            },
            Effect::WriteCostFiles {
                snapshot_at,
                cost_cap_at,
            } => Event::CostFilesWritten {
                result: self.cost_files(snapshot_at, cost_cap_at).await,
                at: now(),
            },
            Effect::Ready(_) => self.start().await,
            Effect::WriteLease => Event::LeaseWritten {
                result: self.put(LEASE_FILE, &unix_line(now())).await,
                at: now(),
            },
            Effect::RequestSnapshot(cause) => {
                if let Err(cause) = self.request_snapshot(cause).await {
                    tracing::warn!("cannot place the snapshot request: {cause}");
                }
                return Vec::new();
            }
            Effect::MarkRetrieved => {
                if let Err(cause) = self.put(RETRIEVED_FILE, &unix_line(now())).await {
                    tracing::warn!("cannot mark the results retrieved on the pod: {cause}");
                }
                return Vec::new();
            }
            Effect::Delete(id) => self.delete(&id).await,
            Effect::CheckGone(id) => Event::GoneChecked {
                seen: self.client.gone(&id).await.map_err(|e| e.to_string()),
                at: now(),
            },
            Effect::DeleteSecret => {
                if let Some(secret) = &self.plan.host_key_secret {
                    self.secret_left = self
                        .client
                        .delete_secret(secret)
                        .await
                        .err()
                        .map(|e: ApiError| e.to_string());
                }
                return Vec::new();
            }
            Effect::Wait(pause) => return self.wait(pause, state).await,
            Effect::Notice(_) | Effect::Record | Effect::Detach | Effect::Done(_) => {
                return Vec::new();
            }
        };
        vec![event]
    }

    /// Connects with the run's configuration, which accepts only the pinned host key.
    async fn handshake(&mut self, endpoint: &PodEndpoint) -> Handshake {
        if let Some(old) = self.pod.take() {
            old.disconnect().await;
        }
        let destination = endpoint.destination(self.plan.ssh_config.clone());
        match SshExecutor::connect(destination, &self.plan.workdir).await {
            Ok(pod) => {
                self.pod = Some(pod.with_time_scale(self.plan.time_scale));
                Handshake::Pinned
            }
            Err(error) => classify(&error),
        }
    }

    async fn put(&self, file: &str, content: &str) -> Result<(), String> {
        let pod = self.pod.as_ref().ok_or("no connection to the pod")?;
        pod.put_file(&format!("{}/{file}", self.plan.run_dir), content)
            .await
            .map_err(|e| chain(&e))
    }

    async fn cost_files(&self, snapshot_at: Duration, cost_cap_at: Duration) -> Result<(), String> {
        self.put(SNAPSHOT_AT_FILE, &unix_line(snapshot_at)).await?;
        self.put(COST_CAP_AT_FILE, &unix_line(cost_cap_at)).await
    }

    /// Places `snapshot.request` with the cause as its reason, unless one is there.
    async fn request_snapshot(&self, cause: SnapshotCause) -> Result<(), String> {
        let pod = self.pod.as_ref().ok_or("no connection to the pod")?;
        let path = format!("{}/{SNAPSHOT_REQUEST}", self.plan.run_dir);
        let placed = pod.read_from(&path, 0, 64).await.map_err(|e| chain(&e))?;
        if !placed.is_empty() {
            return Ok(());
        }
        let reason = match cause {
            SnapshotCause::Deadline => "deadline\n",
            SnapshotCause::Cost => "cost\n",
        };
        self.put(SNAPSHOT_REQUEST, reason).await
    }

    /// Uploads and starts the job; a Ctrl-C meanwhile interrupts it.
    async fn start(&mut self) -> Event {
        let Some(pod) = self.pod.as_ref() else {
            return Event::StartFailed {
                at: now(),
                cause: "no connection to the pod".into(),
            };
        };
        let cancel = self.cancel;
        let result = tokio::select! {
            () = cancel.cancelled(), if !self.interrupted => None,
            result = self.job.start(pod) => Some(result),
        };
        match result {
            None => {
                self.interrupted = true;
                Event::Interrupted { at: now() }
            }
            Some(Ok(())) => Event::JobStarted { at: now() },
            Some(Err(cause)) => Event::StartFailed { at: now(), cause },
        }
    }

    /// Waits `pause`; while the job runs it is looked at every [`PodPlan::job_poll`]:
    /// progress is handed over with the tick, an end cuts the wait short.
    async fn wait(&mut self, pause: Duration, state: &PodState) -> Vec<Event> {
        let until = Instant::now() + pause;
        let watching = matches!(state.phase, Phase::Running | Phase::Snapshotting);
        let mut progress = None;
        loop {
            let step = if watching {
                self.plan
                    .job_poll
                    .min(until.saturating_duration_since(Instant::now()))
            } else {
                until.saturating_duration_since(Instant::now())
            };
            if let Some(event) = self.pause(step).await {
                return progress.into_iter().chain([event]).collect();
            }
            let pod = self.pod.as_ref().filter(|_| watching);
            if let Some(pod) = pod {
                match self.job.watch(pod).await {
                    Ok(JobNews::Progress) => progress = Some(Event::Progress { at: now() }),
                    Ok(JobNews::Stalled) => progress = Some(Event::Stalled { at: now() }),
                    Ok(JobNews::Ended) => {
                        return progress
                            .into_iter()
                            .chain([Event::JobEnded { at: now() }])
                            .collect();
                    }
                    Ok(JobNews::Quiet) => {}
                    Err(cause) => tracing::warn!("cannot look at the job on the pod: {cause}"),
                }
            }
            if Instant::now() >= until {
                return progress
                    .into_iter()
                    .chain([Event::Tick { at: now() }])
                    .collect();
            }
        }
    }

    /// Sleeps `step`; a Ctrl-C not yet handed over ends it with [`Event::Interrupted`].
    async fn pause(&mut self, step: Duration) -> Option<Event> {
        let cancel = self.cancel;
        tokio::select! {
            () = cancel.cancelled(), if !self.interrupted => {
                self.interrupted = true;
                Some(Event::Interrupted { at: now() })
            }
            () = tokio::time::sleep(step) => None,
        }
    }

    async fn retrieve(&mut self) -> Event {
        let result = match self.pod.as_ref() {
            Some(pod) => self.job.retrieve(pod).await,
            None => Err("no connection to the pod".into()),
        };
        self.copy_side_logs().await;
        Event::Retrieved { at: now(), result }
    }

    /// POD-56: the job ended: the pod's watchdog and bootstrap logs are copied next to
    /// the copy of its log stream (their last 4 MiB at most, where a failure shows); a
    /// failure to copy is only told.
    async fn copy_side_logs(&self) {
        let (Some(pod), Some(dir)) = (self.pod.as_ref(), self.plan.log_dir.as_deref()) else {
            return;
        };
        for name in [logs::show::BOOTSTRAP_LOG, logs::show::WATCHDOG_LOG] {
            let remote = format!("{}/{name}", self.plan.run_dir);
            let copied = match side_log_tail(pod, &remote).await {
                Ok((bytes, _)) if bytes.is_empty() => Ok(()),
                Ok((bytes, skipped)) => {
                    logs::copy::write_side_log(dir, name, &bytes, skipped, self.client.redactor())
                        .map_err(|e| e.to_string())
                }
                Err(error) => Err(chain(&error)),
            };
            if let Err(cause) = copied {
                tracing::warn!("cannot copy `{name}` from the pod: {cause}");
            }
        }
    }

    /// `--keep-pod`: the job is followed until it ends, then its results retrieved.
    async fn follow_kept(&mut self) -> Vec<Event> {
        loop {
            if let Some(event) = self.pause(self.plan.job_poll).await {
                return vec![event];
            }
            let Some(pod) = self.pod.as_ref() else {
                return vec![self.retrieve().await];
            };
            match self.job.watch(pod).await {
                Ok(JobNews::Ended) => return vec![self.retrieve().await],
                Ok(_) => {}
                Err(cause) => tracing::warn!("cannot look at the job on the pod: {cause}"),
            }
        }
    }
}

/// The last [`logs::copy::SIDE_LIMIT`] bytes of the file `remote` on the pod (empty when it
/// is missing), and how many bytes before them were not read.
async fn side_log_tail(pod: &SshExecutor, remote: &str) -> Result<(Vec<u8>, u64), ExecError> {
    let script = format!(
        "f={}\n[ -f \"$f\" ] || {{ echo 0; exit 0; }}\nwc -c < \"$f\"\n",
        crate::shell::quote(remote)
    );
    let size = String::from_utf8_lossy(&pod.probe(&script).await?)
        .trim()
        .parse::<u64>()
        .map_err(|_| ExecError::Protocol(format!("the size of `{remote}`")))?;
    // One byte before the cut says whether it falls on a line's start; what was appended
    // since the size was read comes too (the kept part is trimmed locally).
    let skipped = size
        .saturating_sub(logs::copy::SIDE_LIMIT)
        .saturating_sub(1);
    let bytes = pod
        .read_from(remote, skipped, logs::copy::SIDE_LIMIT * 2)
        .await?;
    Ok((bytes, skipped))
}

/// A failed handshake: another host key (refused before any command ran), or no
/// handshake yet.
fn classify(error: &ExecError) -> Handshake {
    let text = chain(error);
    let lower = text.to_lowercase();
    if lower.contains("host key verification failed")
        || lower.contains("remote host identification has changed")
        || lower.contains("host key for")
    {
        Handshake::OtherKey(text)
    } else {
        Handshake::Failed(text)
    }
}

/// An error with its sources, `: `-separated.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

/// A time on the driver's clock as the pod's files hold it: whole UNIX seconds, one line.
fn unix_line(at: Duration) -> String {
    format!("{}\n", at.as_secs())
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
