//! The run's side of a pod ([`PodJob`]): the upload and the training job started with
//! the same job script as on an SSH target, after the image's environment that the
//! pod's bootstrap wrote (POD-74, [`crate::runpod::bootstrap::source_job_env`]), then the run's own follower
//! ([`crate::runs::follow::follow`], the run lifecycle) over a second connection to the
//! pod, beside the pod's driver. The follower streams the metrics, honours snapshot
//! requests (a `train stop`, or the pod's deadline and cost rules placing
//! `snapshot.request`), retrieves and verifies the results (the run's entries only:
//! `.pod/`, to which the watchdog appends, is never part of a verified manifest) and
//! decides the run's state; the pod's driver learns from here when the job made
//! progress (the lease), when the following ended, and whether the results are
//! retrieved, after which the pod is marked retrieved and deleted. A snapshot's
//! checkpoint is checked on the pod by the job's Python before that
//! ([`super::checkpoint`]).

use std::sync::{Arc, Mutex, PoisonError};

use secrecy::SecretString;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::checkpoint;
use crate::env::TimeScale;
use crate::exec::{AnyExecutor, Executor as _, JobRuntime, JobSpec, SshExecutor};
use crate::project::Project;
use crate::runpod::driver::{JobNews, PodJob};
use crate::runs::follow::{DetachReason, Outcome, follow};
use crate::runs::lifecycle::transitions;
use crate::runs::record::{RunRecord, State};
use crate::runs::start::{NEVER_UPLOADED, error_chain};
use crate::runs::{Events, RunError, RunEvent, RunWarning, emit};
use crate::train::job::Stages;
use crate::train::stall::Policy;

/// How the run's follower ended, as the pod's driver needs to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FollowEnd {
    /// The run reached a terminal state with its results retrieved and verified.
    Retrieved,
    /// A Ctrl-C: the pod stays under its watchdog (POD-53).
    Interrupted,
    /// Anything else: not retrieved (the pod stays within its retrieve grace).
    NotRetrieved,
}

/// What the pod's driver and the follower share.
#[derive(Debug, Default)]
pub(super) struct Shared {
    /// Training lines seen so far.
    progress: u64,
    /// The follower declared the job stalled and it made no progress since (issue 21).
    stalled: bool,
    /// That stall was handed to the pod's driver.
    stall_told: bool,
    end: Option<FollowEnd>,
    /// The follower's result, taken by the flow at the end.
    pub(super) result: Option<Result<Outcome, RunError>>,
    /// The run's record once its job was started.
    pub(super) started: Option<RunRecord>,
    /// Why the results do not count as retrieved, when they do not.
    pub(super) not_retrieved: Option<String>,
    /// Where the pod's `sshd` was reached: `user@host` and port.
    pub(super) endpoint: Option<(String, Option<u16>)>,
}

pub(super) type SharedRef = Arc<Mutex<Shared>>;

fn lock(shared: &SharedRef) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the follower gets once the job runs: the run's record and where the pod is.
pub(super) struct Begin {
    record: RunRecord,
    destination: crate::exec::SshDestination,
    scale: TimeScale,
    /// The stall policy of `[training]` (issue 21).
    stall: Policy,
    /// A `train stop` placed the snapshot request just before (RUN-26).
    requested: bool,
}

impl Begin {
    /// The following of `record`'s job on the pod at `destination`.
    pub(super) fn new(
        record: RunRecord,
        destination: crate::exec::SshDestination,
        scale: TimeScale,
        stall: Policy,
        requested: bool,
    ) -> Self {
        Self {
            record,
            destination,
            scale,
            stall,
            requested,
        }
    }
}

/// Records in `shared` that this process already retrieved and recorded the run of
/// `record` (`train cancel`): the pod may go.
pub(super) fn ended(shared: &SharedRef, record: RunRecord) {
    let mut shared = lock(shared);
    shared.end = Some(if record.retrieved {
        FollowEnd::Retrieved
    } else {
        FollowEnd::NotRetrieved
    });
    if !record.retrieved {
        shared.not_retrieved = Some(format!("run `{}` is not retrieved", record.id));
    }
    shared.result = Some(Ok(Outcome::Ended(record)));
}

/// The run's part on its pod.
pub(super) struct PodRun<'a> {
    pub(super) project: &'a Project,
    pub(super) record: RunRecord,
    pub(super) runtime: JobRuntime,
    pub(super) workdir: String,
    pub(super) scale: TimeScale,
    pub(super) stall: Policy,
    pub(super) merge: bool,
    pub(super) launch: crate::train::launch::Launch,
    pub(super) secrets: Vec<(String, SecretString)>,
    pub(super) shared: SharedRef,
    pub(super) begin: Option<oneshot::Sender<Begin>>,
    /// The progress handed to the pod's driver so far.
    pub(super) seen: u64,
}

impl PodJob for PodRun<'_> {
    async fn start(&mut self, pod: &SshExecutor) -> Result<(), String> {
        let dir = self.record.dir.clone();
        // The bootstrap claimed the run directory for the run ID (RUN-4): so does this.
        match pod.claim(&dir, &self.record.id).await {
            Ok(true) => {}
            Ok(false) => return Err(format!("`{dir}` on the pod belongs to another run")),
            Err(error) => return Err(error_chain(&error)),
        }
        let local_dir = self.project.run_dir(&self.record.id);
        let skip: Vec<String> = NEVER_UPLOADED.iter().map(|s| (*s).to_owned()).collect();
        pod.upload(&local_dir, &dir, &skip)
            .await
            .map_err(|e| error_chain(&e))?;
        let spec = JobSpec {
            run_id: self.record.id.clone(),
            container_suffix: self.record.container_suffix.clone(),
            run_dir: dir,
            hf_home: format!("{}/.hf-cache", self.workdir.trim_end_matches('/')),
            runtime: self.runtime.clone(),
            secret_names: self.secrets.iter().map(|(name, _)| name.clone()).collect(),
            env: crate::train::job::environment(),
        };
        let mut job = Stages {
            merge: self.merge,
            export: None,
            launch: self.launch,
        }
        .job(&spec, std::mem::take(&mut self.secrets));
        // POD-74: the image's environment, which a job started over SSH would lose,
        // first; the job's own prelude after it wins.
        job.script
            .insert_str(0, &crate::runpod::bootstrap::source_job_env());
        let job = pod.spawn(&job).await.map_err(|e| error_chain(&e))?;
        transitions::started(&mut self.record, job.into());
        self.record
            .save(&self.project.runs_dir())
            .map_err(|e| error_chain(&e))?;
        {
            let mut shared = lock(&self.shared);
            shared.started = Some(self.record.clone());
            let destination = pod.destination();
            shared.endpoint = Some((destination.host.clone(), destination.port));
        }
        if let Some(begin) = self.begin.take() {
            let _ = begin.send(Begin {
                record: self.record.clone(),
                destination: pod.destination().clone(),
                scale: self.scale,
                stall: self.stall,
                requested: false,
            });
        }
        Ok(())
    }

    async fn watch(&mut self, _pod: &SshExecutor) -> Result<JobNews, String> {
        let mut shared = lock(&self.shared);
        if !shared.stalled {
            shared.stall_told = false;
        }
        Ok(match shared.end {
            // Ctrl-C: the driver sees the same token and detaches.
            Some(FollowEnd::Interrupted) => JobNews::Quiet,
            Some(_) => JobNews::Ended,
            // A stall ends the lease (POD-35, issue 21), whatever `on_stall` says.
            None if shared.stalled && !shared.stall_told => {
                shared.stall_told = true;
                JobNews::Stalled
            }
            None if shared.progress > self.seen => {
                self.seen = shared.progress;
                JobNews::Progress
            }
            None => JobNews::Quiet,
        })
    }

    async fn retrieve(&mut self, pod: &SshExecutor) -> Result<(), String> {
        let record = {
            let shared = lock(&self.shared);
            if shared.end != Some(FollowEnd::Retrieved) {
                return Err(shared
                    .not_retrieved
                    .clone()
                    .unwrap_or_else(|| "the results were not retrieved".to_owned()));
            }
            match &shared.result {
                Some(Ok(Outcome::Ended(record))) => record.clone(),
                _ => return Err("the results were not retrieved".to_owned()),
            }
        };
        // A snapshot is verified on the pod before the pod goes (issue 12).
        if let (State::Stopped, Some(snapshot)) = (record.state, &record.snapshot) {
            let venv = match &self.runtime {
                JobRuntime::Native { venv } => venv.clone(),
                JobRuntime::Container { .. } => None,
            };
            let problems = checkpoint::check_on(
                pod,
                &record.dir,
                &snapshot.checkpoint,
                snapshot.step,
                venv.as_deref(),
            )
            .await?;
            if !problems.is_empty() {
                let text = format!(
                    "the snapshot checkpoint `output/{}` on the pod is not complete: {}",
                    snapshot.checkpoint,
                    problems.join("; ")
                );
                lock(&self.shared).not_retrieved = Some(text.clone());
                return Err(text);
            }
        }
        Ok(())
    }
}

/// The run's follower: waits until the job runs (or the pod's life ended first, `done`),
/// then follows it over its own connection to the pod until it ends or detaches;
/// `stop` ends the following when the pod's life ended under it.
pub(super) async fn follower(
    project: &Project,
    begin: oneshot::Receiver<Begin>,
    shared: SharedRef,
    events: &Events,
    cancel: &CancellationToken,
    stop: &CancellationToken,
    disk: &super::disk::Plan<'_>,
) {
    let begin = tokio::select! {
        begin = begin => match begin {
            Ok(begin) => begin,
            Err(_) => return,
        },
        () = stop.cancelled() => return,
    };
    let executor = match SshExecutor::connect(begin.destination, super::POD_WORKDIR).await {
        Ok(executor) => AnyExecutor::Ssh(executor.with_time_scale(begin.scale)),
        Err(error) => {
            let mut shared = lock(&shared);
            shared.not_retrieved = Some(error_chain(&error));
            shared.end = Some(FollowEnd::NotRetrieved);
            return;
        }
    };
    // The follower's own channel: its training lines are the pod's progress (POD-35),
    // its stall ends the lease until the job makes progress again (issue 21).
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // The container disk of each system sample goes to the disk watch (POD-45).
    let (disk_tx, disk_rx) = tokio::sync::mpsc::unbounded_channel();
    let forward = async {
        while let Some(event) = rx.recv().await {
            match &event {
                RunEvent::Train(_) => lock(&shared).progress += 1,
                RunEvent::Sample(sample) => {
                    if let Some(run_disk) = sample.run_disk() {
                        let _ = disk_tx.send((run_disk.used_bytes, run_disk.size_bytes));
                    }
                }
                RunEvent::Warning(RunWarning::Stalled { .. }) => lock(&shared).stalled = true,
                RunEvent::Warning(RunWarning::StallEnded { .. }) => {
                    lock(&shared).stalled = false;
                }
                _ => {}
            }
            emit(events, event);
        }
    };
    // Either token ends the following: a Ctrl-C, or the pod's life ending under it.
    let either = cancel.child_token();
    let relay = async {
        tokio::select! {
            () = stop.cancelled() => either.cancel(),
            () = either.cancelled() => {}
        }
    };
    let run_id = begin.record.id.clone();
    let run_dir = begin.record.dir.clone();
    let disks = super::disk::watch(
        disk,
        &executor,
        (&run_id, &run_dir),
        disk_rx,
        events,
        &either,
    );
    let run = async {
        let result = follow(
            project,
            &executor,
            begin.record,
            &begin.stall,
            &tx,
            &either,
            begin.requested,
        )
        .await;
        drop(tx);
        either.cancel();
        result
    };
    let (result, (), (), ()) = tokio::join!(run, forward, relay, disks);
    if let AnyExecutor::Ssh(ssh) = &executor {
        ssh.disconnect().await;
    }
    let end = match &result {
        Ok(Outcome::Ended(record)) if record.retrieved => FollowEnd::Retrieved,
        Ok(Outcome::Detached {
            reason: DetachReason::Interrupted,
            ..
        }) if cancel.is_cancelled() => FollowEnd::Interrupted,
        _ => FollowEnd::NotRetrieved,
    };
    let mut shared = lock(&shared);
    if end == FollowEnd::NotRetrieved {
        shared.not_retrieved = Some(match &result {
            Err(error) => error_chain(error),
            Ok(Outcome::Detached { reason, .. }) => format!("the following stopped: {reason:?}"),
            Ok(Outcome::Ended(record)) => format!("run `{}` ended unretrieved", record.id),
        });
    }
    shared.end = Some(end);
    shared.result = Some(result);
}
