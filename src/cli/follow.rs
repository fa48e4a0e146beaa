//! What the training commands share: Ctrl-C as a cancellation token, rendering the run
//! events on stderr (phase lines, an indicatif bar with step, loss and ETA, evaluation
//! lines, a system sample line every 10 s), and the summary lines on stdout
//! (spec/training.md, RUN-16..RUN-20, RUN-27).

use crate::runpod::lifecycle::Notice;
use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use crate::config::{EnvSnapshot, Settings};
use crate::pipeline::pump::pump;
use crate::project::Project;
use crate::runs::record::{RunRecord, State};
use crate::runs::{DetachReason, Events, Outcome, RunError, RunEvent, RunWarning};

/// A cancellation token cancelled by the first Ctrl-C; catching it keeps the process
/// alive so a start is never cut (RUN-14) and a follower detaches cleanly (RUN-16).
pub(crate) fn ctrl_c() -> CancellationToken {
    let token = CancellationToken::new();
    let on_signal = token.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            on_signal.cancel();
        }
    });
    token
}

/// A channel for run events.
pub(crate) fn channel() -> (Events, UnboundedReceiver<RunEvent>) {
    unbounded_channel()
}

/// Runs `flow` while rendering its events on stderr; returns its output.
pub(crate) async fn drive<T>(
    events: &mut UnboundedReceiver<RunEvent>,
    flow: impl std::future::Future<Output = T>,
) -> T {
    let mut renderer = Renderer::new();
    let follower = super::metrics::follower();
    let output = pump(events, flow, |event| {
        super::metrics::run_event(follower, &event);
        renderer.render(event);
    })
    .await;
    renderer.finish();
    super::metrics::unfollow(follower);
    output
}

/// What `train attach` and `train merge` do around their flow: Ctrl-C becomes its
/// cancellation token (caught first, so a start is never cut, RUN-14), the project is
/// opened, its configuration loaded and the project lock taken (LCK-1), and `flow` runs on
/// run `run_id` while its run events are rendered.
pub(crate) async fn on_run(
    ctx: &super::Context,
    run_id: &str,
    flow: impl AsyncFnOnce(
        &Project,
        &Settings,
        &EnvSnapshot,
        &str,
        &Events,
        &CancellationToken,
    ) -> Result<Outcome, RunError>,
) -> anyhow::Result<Outcome> {
    let cancel = ctrl_c();
    let (project, loaded) = ctx.load()?;
    let _lock = project.lock()?;
    let (events, mut receiver) = channel();
    let flow = flow(
        &project,
        &loaded.settings,
        &loaded.env,
        run_id,
        &events,
        &cancel,
    );
    // Boxed: a run flow (a merge, a follow) is a large future.
    Ok(drive(&mut receiver, Box::pin(flow)).await?)
}

struct Renderer {
    bar: Option<ProgressBar>,
    terminal: bool,
    last_line: Option<Instant>,
}

impl Renderer {
    fn new() -> Self {
        Self {
            bar: None,
            terminal: std::io::stderr().is_terminal(),
            last_line: None,
        }
    }

    fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => errln!("{text}"),
        }
    }

    fn render(&mut self, event: RunEvent) {
        match event {
            RunEvent::Following { run_id, target } => {
                self.line(&format!(
                    "train: following run {run_id} on target `{target}`"
                ));
            }
            RunEvent::Phase(phase) => self.line(&format!("train: {phase}")),
            RunEvent::Train(train) => {
                let loss = train
                    .loss
                    .map_or_else(|| "?".into(), |v| format!("{:.4}", v.0));
                let lr = train
                    .learning_rate
                    .map_or_else(|| "?".into(), |v| format!("{:.3e}", v.0));
                let epoch = train
                    .epoch
                    .map_or_else(|| "?".into(), |v| format!("{:.2}", v.0));
                let text = format!("loss {loss} lr {lr} epoch {epoch}");
                if self.terminal {
                    let bar = self.bar.get_or_insert_with(|| {
                        let bar = ProgressBar::with_draw_target(
                            train.max_steps,
                            ProgressDrawTarget::stderr(),
                        );
                        bar.set_style(
                            ProgressStyle::with_template(
                                "train: [{bar:30}] step {pos}/{len} {msg} ETA {eta}",
                            )
                            .unwrap_or_else(|_| ProgressStyle::default_bar())
                            .progress_chars("=> "),
                        );
                        bar
                    });
                    if let Some(max) = train.max_steps {
                        bar.set_length(max);
                    }
                    bar.set_position(train.step);
                    bar.set_message(text);
                } else if self
                    .last_line
                    .is_none_or(|at| at.elapsed() >= Duration::from_secs(1))
                {
                    // RUN-17: at most one training line per second.
                    self.last_line = Some(Instant::now());
                    let max = train
                        .max_steps
                        .map_or_else(|| "?".into(), |m| m.to_string());
                    errln!("train: step {}/{max} {text}", train.step);
                }
            }
            RunEvent::Eval(eval) => {
                let loss = eval
                    .eval_loss
                    .map_or_else(|| "?".into(), |v| format!("{:.4}", v.0));
                self.line(&format!(
                    "train: eval at step {} eval_loss {loss}",
                    eval.step
                ));
            }
            RunEvent::Sample(sample) => {
                self.line(&format!("train: system {}", sample_text(&sample)));
            }
            RunEvent::JobLog(line) => tracing::debug!(target: "overbrainer::job", "{line}"),
            RunEvent::Pod(notice) => self.line(&pod_text(&notice)),
            RunEvent::Scheduler(note) => self.line(&format!("slurm: {note}")),
            RunEvent::Pending(note) => self.line(&format!(
                "train: {note}; no stall clock runs until the job starts"
            )),
            RunEvent::Started => {
                self.line("train: the job left the queue and runs");
            }
            RunEvent::Upload(summary) => {
                self.line(&format!("train: uploading the base model: {summary}"));
            }
            RunEvent::Warning(warning) => {
                let message = warning_text(&warning);
                if let Some(bar) = &self.bar {
                    bar.suspend(|| tracing::warn!("{message}"));
                } else {
                    tracing::warn!("{message}");
                }
            }
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// Which machine a sample describes (issue 33): `node NAME`, and on a Slurm target the
/// job in whose allocation it was taken.
fn node_text(sample: &crate::system::Sample) -> Option<String> {
    let node = sample.node.as_deref()?;
    Some(match sample.slurm_job {
        Some(job) => format!("node {node} (Slurm job {job})"),
        None => format!("node {node}"),
    })
}

/// One line of a system sample: the node, CPU, memory, GPUs and disk, what the target
/// reports.
fn sample_text(sample: &crate::system::Sample) -> String {
    let gib = |bytes: u64| {
        #[allow(clippy::cast_precision_loss, reason = "display only")]
        let value = bytes as f64 / f64::from(1u32 << 30);
        value
    };
    let mut parts: Vec<String> = node_text(sample).into_iter().collect();
    if let Some(cpu) = &sample.cpu {
        if let Some(load) = cpu.load1 {
            parts.push(format!("load {load:.2}"));
        }
        if let Some(usage) = cpu.usage {
            parts.push(format!("cpu {:.0}%", usage * 100.0));
        }
    }
    if let Some(memory) = &sample.memory {
        parts.push(format!(
            "mem {:.1}/{:.1} GiB",
            gib(memory.used_bytes),
            gib(memory.limit_bytes)
        ));
    }
    for gpu in &sample.gpus {
        parts.push(format!("gpu {}", gpu.name));
    }
    if let Some(disk) = sample.run_disk() {
        parts.push(format!(
            "disk {:.1} GiB free",
            gib(disk.size_bytes.saturating_sub(disk.used_bytes))
        ));
    }
    if parts.is_empty() {
        "(nothing reported)".to_owned()
    } else {
        parts.join(", ")
    }
}

/// The RUN-19 summary line of a run.
pub(crate) fn summary_line(record: &RunRecord) -> String {
    let mut line = format!("train: {} {}", record.id, record.state.name());
    let step = record
        .last_step
        .map_or_else(|| "?".into(), |s| s.to_string());
    let max = record
        .max_steps
        .map_or_else(|| "?".into(), |s| s.to_string());
    let _ = write!(line, " step {step}/{max}");
    if let Some(epoch) = record.epoch {
        let _ = write!(line, " epoch {epoch:.2}");
    }
    if let Some(loss) = record.last_loss {
        let _ = write!(line, " loss {loss:.4}");
    }
    if let Some(loss) = record.last_eval_loss {
        let _ = write!(line, " eval_loss {loss:.4}");
    }
    let _ = write!(line, " output runs/{}/output", record.id);
    if let Some(message) = &record.message {
        if record.state != State::Succeeded {
            let _ = write!(line, " ({message})");
        }
    }
    line
}

/// Prints the end of a following on stdout (or stderr for a detach) and returns the
/// exit status (RUN-16, RUN-19, RUN-20, RUN-27).
pub(crate) fn conclude(outcome: &Outcome) -> ExitCode {
    match outcome {
        Outcome::Ended(record) => {
            outln!("{}", summary_line(record));
            match record.state {
                State::Succeeded => {
                    outln!("train: adapter in runs/{}/output", record.id);
                    if record.merge {
                        outln!("train: merged model in runs/{}/output/merged", record.id);
                    }
                    ExitCode::SUCCESS
                }
                State::Stopped => {
                    stopped_lines(record);
                    ExitCode::FAILURE
                }
                State::MergeFailed => {
                    outln!(
                        "train: training succeeded; adapter in runs/{id}/output; redo the merge alone with: overbrainer train merge {id}",
                        id = record.id
                    );
                    ExitCode::FAILURE
                }
                _ => ExitCode::FAILURE,
            }
        }
        Outcome::Detached { record, reason } => {
            errln!(
                "train: detached from run {} ({}); the job goes on. Follow it again with:\n  overbrainer train attach {}",
                record.id,
                detach_text(reason),
                record.id
            );
            detach_status(reason)
        }
    }
}

/// The two RUN-27 lines of a stopped run.
pub(crate) fn stopped_lines(record: &RunRecord) {
    if let Some(snapshot) = &record.snapshot {
        let reason = serde_json::to_value(snapshot.reason)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        outln!(
            "train: run {id} stopped at step {step} ({reason}); snapshot checkpoint in runs/{id}/output/{checkpoint}; resume with: overbrainer train --resume-from {id}",
            id = record.id,
            step = snapshot.step,
            checkpoint = snapshot.checkpoint
        );
        outln!(
            "train: runs/{}/output also holds a partial model at step {}, not a finished model",
            record.id,
            snapshot.step
        );
    }
}

/// Why a follower detached, in words.
pub(crate) fn detach_text(reason: &DetachReason) -> String {
    match reason {
        DetachReason::Interrupted => "interrupted".to_owned(),
        DetachReason::Unreachable { target, times } => {
            format!("target `{target}` could not be reached {times} times in a row")
        }
    }
}

/// The exit status of a detach: 130 for a Ctrl-C, failure otherwise.
pub(crate) fn detach_status(reason: &DetachReason) -> ExitCode {
    match reason {
        DetachReason::Interrupted => ExitCode::from(130),
        DetachReason::Unreachable { .. } => ExitCode::FAILURE,
    }
}

/// A run flow's warning, in words.
pub(crate) fn warning_text(warning: &RunWarning) -> String {
    match warning {
        RunWarning::HubModelIdDeprecated => {
            "`training.hub_model_id` is deprecated; use `[hub] repo`".to_owned()
        }
        RunWarning::NoVramFloor { target, why } => format!(
            "`targets.{target}.min_vram_gb` is unset and no VRAM estimate could be made ({why}): `gpu_types = \"auto\"` may pick a GPU too small for the model; set `min_vram_gb`"
        ),
        RunWarning::BlobsCopied { target } => format!(
            "target `{target}` refused hard links from its blob cache: the base model's files were copied into the run directory (more disk)"
        ),
        RunWarning::HubTokenMissing => "`[hub] after_training = true` but `OVERBRAINER_HF_TOKEN` is unset: the push after training will fail".to_owned(),
        RunWarning::Unreachable {
            target,
            failures,
            limit,
            cause,
        } => format!("cannot reach target `{target}` ({failures}/{limit}): {cause}"),
        RunWarning::TemplateDropsReasoning(text)
        | RunWarning::Metrics(text)
        | RunWarning::PodFailed(text)
        | RunWarning::PodStray(text)
        | RunWarning::Disk(text) => text.clone(),
        RunWarning::PodReconciled {
            pod,
            run_id,
            failed,
        } => super::pod::reconciled_text(&crate::runs::pod::manage::Reconciled {
            pod: pod.clone(),
            run_id: run_id.clone(),
            failed: failed.clone(),
        })
        .trim_start_matches("warning: ")
        .to_owned(),
        RunWarning::PodKept { run_id, command } => format!(
            "the pod of run `{run_id}` is kept with no limit (it bills until `overbrainer pod rm {run_id} --force`); reach it with: {command}"
        ),
        RunWarning::SnapshotOverdue { run_id } => format!(
            "run `{run_id}` did not stop in time after the snapshot request; cancelling its job"
        ),
        RunWarning::CancelFailed { cause } => format!("cancel failed: {cause}"),
        RunWarning::LeftoversUnreadable { run_id, cause } => format!(
            "cannot read what the cancel of run `{run_id}` left behind: {cause}"
        ),
        RunWarning::AlreadyEnded { run_id, state } => format!(
            "run `{run_id}` already ended as {}; checking that nothing of its job is left on the target",
            state.name()
        ),
        RunWarning::CancelNotRecorded {
            run_id,
            cause,
            state,
        } => format!(
            "the job of run `{run_id}` was cancelled on the target, but `runs/{run_id}/run.json` cannot be updated ({cause}); it may still read `{}`",
            state.name()
        ),
        RunWarning::MergeLogUnretrieved { run_id, log, cause } => {
            format!("cannot retrieve `{log}` of run `{run_id}`: {cause}")
        }
        RunWarning::Stalled {
            run_id,
            last_step,
            silent,
            sample,
            action,
        } => stall_text(run_id, *last_step, *silent, sample.as_deref(), *action),
        RunWarning::StallEnded { run_id, step } => match step {
            Some(step) => format!("run `{run_id}` makes progress again: step {step}"),
            None => format!("run `{run_id}` makes progress again: an evaluation"),
        },
        RunWarning::StallRequestFailed { run_id, cause } => format!(
            "cannot place the snapshot request for the stall of run `{run_id}`: {cause}"
        ),
    }
}

/// The warning of a stalled job (issue 21): the last step and its time, the silence,
/// the latest system sample (GPU utilisation and memory, CPU) and what is done.
fn stall_text(
    run_id: &str,
    last_step: Option<(u64, Option<jiff::Timestamp>)>,
    silent: Duration,
    sample: Option<&crate::system::Sample>,
    action: crate::config::OnStall,
) -> String {
    let step = match last_step {
        Some((step, Some(at))) => format!(
            "last step {step} at {} UTC",
            at.strftime("%Y-%m-%d %H:%M:%S")
        ),
        Some((step, None)) => format!("last step {step}"),
        None => "no step yet".to_owned(),
    };
    let system = sample.map_or_else(
        || "no system sample".to_owned(),
        |sample| format!("system {}", stall_sample_text(sample)),
    );
    let what = match action {
        crate::config::OnStall::Warn => {
            "`training.on_stall = \"warn\"`: the job goes on; `overbrainer train stop` or `train cancel` ends it"
        }
        crate::config::OnStall::Snapshot => {
            "`training.on_stall = \"snapshot\"`: requesting a snapshot, then the run stops"
        }
        crate::config::OnStall::Cancel => "`training.on_stall = \"cancel\"`: cancelling the job",
    };
    format!(
        "run `{run_id}` stalled: its processes live but no training step or evaluation progress for {} ({step}; {system}); {what}",
        crate::runs::lifecycle::silence_text(silent.as_secs_f64())
    )
}

/// The node, GPU utilisation and memory, then CPU, of a sample: what a stall's warning
/// shows.
fn stall_sample_text(sample: &crate::system::Sample) -> String {
    let gib = |bytes: u64| {
        #[allow(clippy::cast_precision_loss, reason = "display only")]
        let value = bytes as f64 / f64::from(1u32 << 30);
        value
    };
    let mut parts: Vec<String> = node_text(sample).into_iter().collect();
    for gpu in &sample.gpus {
        let util = gpu
            .utilization
            .map_or_else(|| "?".to_owned(), |u| format!("{:.0}%", u * 100.0));
        let memory = match (gpu.memory_used_bytes, gpu.memory_total_bytes) {
            (Some(used), Some(total)) => format!("{:.1}/{:.1} GiB", gib(used), gib(total)),
            (Some(used), None) => format!("{:.1} GiB", gib(used)),
            _ => "?".to_owned(),
        };
        parts.push(format!("gpu {} util {util} mem {memory}", gpu.index));
    }
    if sample.gpus.is_empty() {
        parts.push("no GPU".to_owned());
    }
    if let Some(cpu) = &sample.cpu {
        match (cpu.usage, cpu.load1) {
            (Some(usage), _) => parts.push(format!("cpu {:.0}%", usage * 100.0)),
            (None, Some(load)) => parts.push(format!("load {load:.2}")),
            (None, None) => {}
        }
    }
    parts.join(", ")
}

/// One line of what the run's pod went through.
fn pod_text(notice: &Notice) -> String {
    let rate = |rate: &Option<f64>| {
        rate.map_or_else(|| "rate unknown".to_owned(), |r| format!("USD {r:.3}/h"))
    };
    match notice {
        Notice::Creating { gpu_type } => format!("pod: creating a pod of GPU type {gpu_type}"),
        Notice::NextType { gpu_type, reason } => {
            format!("pod: GPU type {gpu_type} refused ({reason}); trying the next one")
        }
        Notice::RateLimited(wait) => format!("pod: rate limited, waiting {}s", wait.as_secs()),
        Notice::Picked { request, choices } => format!(
            "pod: {request} picks, in order: {}",
            choices.join("; ")
        ),
        Notice::Reordered(order) => format!(
            "pod: the catalog read again orders the GPU types left: {}",
            order.join(", ")
        ),
        Notice::OrderKept(why) => {
            format!("warning: pod: keeping the order of the GPU types left: {why}")
        }
        Notice::Searching(cause) => {
            format!("pod: no clear answer to the create call ({cause}); searching for the run's pod")
        }
        Notice::Created { pod, adopted } => {
            if *adopted {
                format!("pod: adopted pod {pod}, found by the run's name")
            } else {
                format!("pod: created pod {pod}")
            }
        }
        Notice::Strays(pods) => format!(
            "pod: more pods carry this run's name: {} (`overbrainer pod rm` removes them)",
            pods.join(", ")
        ),
        Notice::Ready { pod } => format!("pod: {pod} is ready (pinned host key)"),
        Notice::CapShort { smallest } => format!(
            "pod: `max_cost_usd` buys less than 30 minutes at the pod's rate; the smallest cap that does is USD {smallest:.2}"
        ),
        Notice::Snapshot(cause) => format!("pod: snapshot requested ({cause:?})"),
        Notice::Deleting { pod, cause } => format!("pod: deleting {pod} ({cause:?})"),
        Notice::StillListed { pod } => {
            format!("pod: {pod} is still listed after its delete; deleting again")
        }
        Notice::Gone { pod, by } => format!("pod: {pod} is gone (deleted by {by:?})"),
        Notice::Kept { pod, rate: r } => format!(
            "pod: keeping {pod} ({}) with no limit until `overbrainer pod rm`",
            rate(r)
        ),
        Notice::RetrieveLater { .. } => {
            "pod: the results are not retrieved yet; the pod stays within its retrieve grace and `overbrainer train attach` retries".to_owned()
        }
    }
}
