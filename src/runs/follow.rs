//! Following a run (spec/training.md, RUN-16..RUN-21, RUN-28, RUN-29, MPL-4, MPL-7,
//! SYS-1, SYS-5): poll the job's status and its new metric lines about once a second,
//! sample its machine every 10 seconds, and when the job has ended drain the metrics,
//! retrieve the results and record the final state.
//!
//! The job's `job.log` is tailed along with the metrics and each new line sent as an
//! event (the command line shows them at `debug` level).
//!
//! A Ctrl-C (the cancellation token) or six failed reaches in a row end the following
//! only; the job goes on and `run.json` keeps its state (RUN-21).

use std::time::{Duration, Instant, SystemTime};

use tokio_util::sync::CancellationToken;

use super::ending::{JobEnd, ending, unresumable};
pub use super::ending::{LEFTOVERS_PREFIX, leftovers_message};
use super::record::{RunRecord, Snapshot, SnapshotReason, State};
use super::retrieve::retrieve;
use super::start::error_chain;
use super::{Events, RunError, RunEvent, emit};
use crate::exec::{AnyExecutor, Executor as _, JOB_LOG, JobStatus, MAX_TAIL_READ};
use crate::project::Project;
use crate::train::axolotl::{MERGED_DIR, OUTPUT_DIR};
use crate::train::metrics::{METRICS_FILE, MetricLine, MetricReader, Parsed, Summary};
use crate::train::phase::PhaseTracker;
use crate::train::plugin::{SNAPSHOT_FILE, SNAPSHOT_REQUEST, SnapshotFile};

/// Pause between two polls of the job.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Pause between two system samples (SYS-1).
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(10);
/// Consecutive failed reaches after which the follower detaches (RUN-16).
pub const MAX_FAILED_REACHES: u32 = 6;
/// How often a follower that did not place a snapshot request looks for one (RUN-29).
pub const REQUEST_CHECK_INTERVAL: Duration = Duration::from_secs(30);
/// Time a job has to save its snapshot or end after a request (RUN-28).
pub const SNAPSHOT_DEADLINE: Duration = Duration::from_secs(30 * 60);
/// Time a job has to end once its snapshot was saved (RUN-28).
pub const END_AFTER_SNAPSHOT: Duration = Duration::from_secs(10 * 60);
/// Pause between two summary refreshes of `run.json` while following.
const SAVE_INTERVAL: Duration = Duration::from_secs(10);

/// How a following ended.
#[derive(Debug)]
pub enum Outcome {
    /// The run reached a terminal state, results retrieved.
    Ended(RunRecord),
    /// The follower stopped; the job goes on (RUN-16).
    Detached {
        /// The run, as recorded.
        record: RunRecord,
        /// Why: interrupted, or the target could not be reached.
        reason: String,
    },
}

/// Follows the run of `record` on `executor` until it ends or the follower detaches.
/// `requested` says this process placed a snapshot request just before (RUN-26).
///
/// # Errors
///
/// [`RunError::Retrieval`] when the job ended but its results could not be retrieved
/// (the run stays `running`, pending retrieval), or [`RunError::Io`] when `run.json`
/// cannot be written.
#[allow(
    clippy::too_many_lines,
    reason = "one polling loop, read top to bottom"
)]
pub async fn follow(
    project: &Project,
    executor: &AnyExecutor,
    mut record: RunRecord,
    events: &Events,
    cancel: &CancellationToken,
    requested: bool,
) -> Result<Outcome, RunError> {
    let runs_dir = project.runs_dir();
    let Some(job) = record.job.clone() else {
        return Err(RunError::Refused(format!(
            "run `{}` has not started a job",
            record.id
        )));
    };
    // LCK-9: a `train cancel` from another terminal sees that this process follows
    // the run and records its end; it then only cancels the job on the target.
    let _following = match project.follow_lock(&record.id) {
        Ok(lock) => Some(lock),
        Err(error) => {
            tracing::debug!("run `{}` not marked as followed: {error}", record.id);
            None
        }
    };
    emit(
        events,
        RunEvent::Following {
            run_id: record.id.clone(),
            target: record.target.clone(),
        },
    );
    let metrics_path = format!("{}/{METRICS_FILE}", record.dir);
    let mut stream = executor.tail(&metrics_path, 0);
    let log_path = format!("{}/{JOB_LOG}", record.dir);
    let mut log_stream = executor.tail(&log_path, 0);
    let mut reader = MetricReader::new();
    let mut summary = Summary::default();
    let mut tracker = PhaseTracker::new();
    let mut failures = 0;
    let mut previous_sample = None;
    let mut next_sample = Instant::now();
    let mut next_save = Instant::now() + SAVE_INTERVAL;
    let mut request_seen = requested.then(Instant::now);
    let mut next_request_check = Instant::now();
    let mut snapshot_seen_at: Option<Instant> = None;
    let probe = crate::system::probe_script(&record.dir);

    let status = loop {
        let mut failed: Option<String> = None;
        match stream.poll().await {
            Ok(lines) => {
                for line in lines {
                    observe(&mut reader, &line, &mut summary, &mut tracker, events);
                }
            }
            Err(error) => failed = Some(error_chain(&error)),
        }
        if let Ok(lines) = log_stream.poll().await {
            for line in lines {
                emit(events, RunEvent::JobLog(line));
            }
        }
        let status = match executor.status(&job).await {
            Ok(status) => Some(status),
            Err(error) => {
                failed = Some(error_chain(&error));
                None
            }
        };
        if let Some(cause) = failed {
            failures += 1;
            emit(
                events,
                RunEvent::Warning(format!(
                    "cannot reach target `{}` ({failures}/{MAX_FAILED_REACHES}): {cause}",
                    record.target
                )),
            );
            if failures >= MAX_FAILED_REACHES {
                record.set_summary(&summary);
                record.save(&runs_dir)?;
                let reason = format!(
                    "target `{}` could not be reached {MAX_FAILED_REACHES} times in a row",
                    record.target
                );
                return Ok(Outcome::Detached { record, reason });
            }
        } else {
            failures = 0;
        }
        if let Some(status) = status.filter(|s| s.is_finished()) {
            break status;
        }
        let now = Instant::now();
        if now >= next_sample {
            next_sample = now + SAMPLE_INTERVAL;
            match executor.probe(&probe).await {
                Ok(output) => {
                    let sample = crate::system::parse(
                        &String::from_utf8_lossy(&output),
                        SystemTime::now(),
                        previous_sample.as_ref(),
                    );
                    previous_sample = Some(sample.clone());
                    emit(events, RunEvent::Sample(Box::new(sample)));
                }
                Err(error) => tracing::debug!("system sample failed: {}", error_chain(&error)),
            }
        }
        if request_seen.is_none() && now >= next_request_check {
            next_request_check = now + REQUEST_CHECK_INTERVAL;
            let path = format!("{}/{SNAPSHOT_REQUEST}", record.dir);
            if executor
                .read_from(&path, 0, 64)
                .await
                .is_ok_and(|bytes| !bytes.is_empty())
            {
                request_seen = Some(now);
            }
        }
        if summary.snapshot.is_some() && snapshot_seen_at.is_none() {
            snapshot_seen_at = Some(now);
        }
        let overdue = match (request_seen, snapshot_seen_at) {
            (_, Some(saved)) => now.duration_since(saved) > END_AFTER_SNAPSHOT,
            (Some(asked), None) => now.duration_since(asked) > SNAPSHOT_DEADLINE,
            (None, None) => false,
        };
        if overdue {
            emit(
                events,
                RunEvent::Warning(format!(
                    "run `{}` did not stop in time after the snapshot request; cancelling its job",
                    record.id
                )),
            );
            if let Err(error) = executor.cancel(&job).await {
                emit(
                    events,
                    RunEvent::Warning(format!("cancel failed: {}", error_chain(&error))),
                );
            }
        }
        if now >= next_save {
            next_save = now + SAVE_INTERVAL;
            record.set_summary(&summary);
            record.save(&runs_dir)?;
        }
        tokio::select! {
            () = cancel.cancelled() => {
                record.set_summary(&summary);
                record.save(&runs_dir)?;
                return Ok(Outcome::Detached { record, reason: "interrupted".into() });
            }
            () = tokio::time::sleep(POLL_INTERVAL) => {}
        }
    };

    // MPL-4: drain the whole file before the final state is computed.
    drain(
        executor,
        &mut stream,
        &mut reader,
        &mut summary,
        &mut tracker,
        events,
        &metrics_path,
    )
    .await;
    finish(
        project,
        executor,
        record,
        status,
        summary,
        &mut tracker,
        events,
    )
    .await
}

/// Reads every line left in `metrics.jsonl`, then a last line without a line break.
async fn drain(
    executor: &AnyExecutor,
    stream: &mut crate::exec::LineStream<'_, AnyExecutor>,
    reader: &mut MetricReader,
    summary: &mut Summary,
    tracker: &mut PhaseTracker,
    events: &Events,
    path: &str,
) {
    loop {
        match stream.poll().await {
            Ok(lines) if !lines.is_empty() => {
                for line in lines {
                    observe(reader, &line, summary, tracker, events);
                }
            }
            _ => break,
        }
    }
    if let Ok(rest) = executor
        .read_from(path, stream.offset(), MAX_TAIL_READ)
        .await
    {
        match reader.parse_last(&rest) {
            Parsed::Line(line) => apply(&line, summary, tracker, events),
            Parsed::Flagged(line, warning) => {
                emit(events, RunEvent::Warning(warning));
                apply(&line, summary, tracker, events);
            }
            Parsed::Skipped(Some(warning)) => emit(events, RunEvent::Warning(warning)),
            Parsed::Skipped(None) => {}
        }
    }
}

fn observe(
    reader: &mut MetricReader,
    line: &str,
    summary: &mut Summary,
    tracker: &mut PhaseTracker,
    events: &Events,
) {
    match reader.parse(line) {
        Parsed::Line(line) => apply(&line, summary, tracker, events),
        Parsed::Flagged(line, warning) => {
            emit(events, RunEvent::Warning(warning));
            apply(&line, summary, tracker, events);
        }
        Parsed::Skipped(Some(warning)) => emit(events, RunEvent::Warning(warning)),
        Parsed::Skipped(None) => {}
    }
}

fn apply(line: &MetricLine, summary: &mut Summary, tracker: &mut PhaseTracker, events: &Events) {
    summary.observe(line);
    if let Some(phase) = tracker.observe(line) {
        emit(events, RunEvent::Phase(phase));
    }
    match line {
        MetricLine::Train(train) => emit(events, RunEvent::Train(train.clone())),
        MetricLine::Eval(eval) => emit(events, RunEvent::Eval(eval.clone())),
        _ => {}
    }
}

/// Computes the final state of a run whose job ended with `status`, retrieves its
/// results and records it (RUN-9, RUN-24).
///
/// # Errors
///
/// [`RunError::Retrieval`] when the results could not be retrieved: the run is then
/// recorded `running` with a message saying results are pending.
pub async fn finish(
    project: &Project,
    executor: &AnyExecutor,
    mut record: RunRecord,
    status: JobStatus,
    mut summary: Summary,
    tracker: &mut PhaseTracker,
    events: &Events,
) -> Result<Outcome, RunError> {
    let runs_dir = project.runs_dir();
    let local_dir = project.run_dir(&record.id);
    if let Some(phase) = tracker.retrieving() {
        emit(events, RunEvent::Phase(phase));
    }
    if summary.snapshot.is_none() {
        let path = format!("{}/{SNAPSHOT_FILE}", record.dir);
        if let Ok(bytes) = executor.read_from(&path, 0, 4096).await {
            let bytes = crate::dataset::jsonl::strip_bom(&bytes);
            if let Ok(file) = serde_json::from_slice::<SnapshotFile>(bytes) {
                summary.snapshot = Some((file.step, file.checkpoint));
            }
        }
    }
    record.set_summary(&summary);
    let leftovers = if status == JobStatus::Cancelled {
        leftovers_of(executor, &record, events).await
    } else {
        Vec::new()
    };
    let mut end = ending(
        &record.id,
        &JobEnd {
            status,
            plugin_seen: summary.plugin_seen,
            snapshot: summary.snapshot.as_ref().map(|(s, c)| (*s, c.as_str())),
            last_stage: summary.last_stage,
            leftovers: &leftovers,
        },
    );
    let checkpoint = match (&summary.snapshot, end.state) {
        (Some((_, checkpoint)), State::Stopped) => Some(checkpoint.clone()),
        _ => None,
    };
    // A failed merge's partial `output/merged/` is no result (see `ending`).
    let skip: &[&str] = if end.state == State::MergeFailed {
        &[MERGED_DIR]
    } else {
        &[]
    };
    if let Err(error) = retrieve(executor, &record, &local_dir, checkpoint.as_deref(), skip).await {
        record.state = State::Running;
        record.message = Some(format!(
            "the job ended ({}); results pending retrieval: {error}",
            end.message(None)
                .unwrap_or_else(|| end.state.name().to_owned())
        ));
        record.save(&runs_dir)?;
        return Err(error);
    }
    if let (State::Stopped, Some((step, checkpoint))) = (end.state, &summary.snapshot) {
        // RUN-30: never `stopped` with a checkpoint a resume cannot use.
        let dir = local_dir.join(OUTPUT_DIR).join(checkpoint);
        let missing = crate::train::checkpoint::missing(&dir)
            .unwrap_or_else(|error| vec![format!("a readable directory ({error})")]);
        if !missing.is_empty() {
            end = unresumable(&record.id, *step, checkpoint, &missing);
            record.last_step = Some(*step);
        }
    }
    record.retrieved = true;
    record.state = end.state;
    let pointer = end.points_at_log.then(|| {
        log_pointer(
            &local_dir,
            &record.id,
            JOB_LOG,
            state_after_training(end.state),
        )
    });
    record.message = end.message(pointer.as_deref());
    let state = end.state;
    if let (State::Stopped, Some((step, checkpoint))) = (state, &summary.snapshot) {
        let reason = if record.snapshot.is_some() {
            record
                .snapshot
                .as_ref()
                .map_or(SnapshotReason::Requested, |s| s.reason)
        } else {
            SnapshotReason::Requested
        };
        record.snapshot = Some(Snapshot {
            checkpoint: checkpoint.clone(),
            step: *step,
            reason,
        });
        record.last_step = Some(*step);
    }
    record.save(&runs_dir)?;
    Ok(Outcome::Ended(record))
}

/// Whether a job that ended in `state` failed after its training succeeded, so the
/// last root cause in its log is the one that counts.
fn state_after_training(state: State) -> bool {
    state == State::MergeFailed
}

/// The `; `-prefixed pointer into the log `log` (a path relative to the run directory
/// `local_dir` of run `run_id`) at the lines that say why a job failed, see
/// [`error_lines`]; with `last`, see [`last_error_lines`].
#[must_use]
pub fn log_pointer(local_dir: &std::path::Path, run_id: &str, log: &str, last: bool) -> String {
    let text = std::fs::read(local_dir.join(log)).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines = if last {
        last_error_lines(&text)
    } else {
        error_lines(&text)
    };
    lines.map_or_else(
        || format!("; see `runs/{run_id}/{log}`"),
        |(first, last, text)| format!("; `runs/{run_id}/{log}` lines {first}-{last}: {text}"),
    )
}

/// The processes that the cancel of `record`'s job left on the target; none (with a
/// warning event) when that cannot be read.
async fn leftovers_of(executor: &AnyExecutor, record: &RunRecord, events: &Events) -> Vec<u32> {
    let Some(job) = record.job.as_ref() else {
        return Vec::new();
    };
    executor.leftovers(job).await.unwrap_or_else(|error| {
        emit(
            events,
            RunEvent::Warning(format!(
                "cannot read what the cancel of run `{}` left behind: {}",
                record.id,
                error_chain(&error)
            )),
        );
        Vec::new()
    })
}

/// Where `job.log` says why the job failed: the first and last line numbers (1-based)
/// of the root cause, and its error line trimmed to 300 characters.
///
/// The root cause is the first Python traceback whose final exception line is not
/// a launcher wrapper's `subprocess.CalledProcessError` (the `accelerate launch` and
/// `axolotl` command-line wrappers re-raise a child's failure that way, after the
/// child's own traceback): the lines from its `Traceback (most recent call last):`
/// header to its exception line, the first line after the header that is not an
/// indented frame or source line (Python's `traceback` module format). A
/// `[rankN]: ` prefix, as `torch.distributed` writes it, is ignored. Without such a
/// traceback, the last line naming an error (and the traceback it ends, if any).
#[must_use]
pub fn error_lines(log: &str) -> Option<(usize, usize, String)> {
    let lines: Vec<&str> = log.lines().map(strip_rank).collect();
    root_traceback(&lines).or_else(|| last_error_line(&lines))
}

/// `line` without a leading `[rankN]: ` prefix.
fn strip_rank(line: &str) -> &str {
    line.strip_prefix("[rank")
        .and_then(|rest| rest.split_once("]: "))
        .filter(|(rank, _)| !rank.is_empty() && rank.bytes().all(|b| b.is_ascii_digit()))
        .map_or(line, |(_, rest)| rest)
}

/// Whether `line` is the exception line of a launcher wrapper's traceback.
fn is_wrapper_exception(line: &str) -> bool {
    line.trim().contains("CalledProcessError")
}

/// The first traceback in `lines` whose exception is not a wrapper's, see
/// [`error_lines`].
fn root_traceback(lines: &[&str]) -> Option<(usize, usize, String)> {
    root_tracebacks(lines).into_iter().next()
}

/// Every traceback in `lines` whose exception is not a wrapper's, in order: the first
/// and last line numbers (1-based) and the exception line trimmed to 300 characters.
fn root_tracebacks(lines: &[&str]) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        if !lines[index].starts_with("Traceback (most recent call last)") {
            index += 1;
            continue;
        }
        let header = index;
        let Some(exception) = lines[header + 1..]
            .iter()
            .position(|line| !line.is_empty() && !line.starts_with(char::is_whitespace))
            .map(|offset| header + 1 + offset)
        else {
            break;
        };
        if !is_wrapper_exception(lines[exception]) {
            let text: String = lines[exception].trim().chars().take(300).collect();
            found.push((header + 1, exception + 1, text));
        }
        index = exception + 1;
    }
    found
}

/// Where the log of a job whose last command failed after earlier ones succeeded (a
/// merge after training) says why: the last traceback whose exception is not a
/// wrapper's (an earlier one did not stop the job), else as [`error_lines`].
#[must_use]
pub fn last_error_lines(log: &str) -> Option<(usize, usize, String)> {
    let lines: Vec<&str> = log.lines().map(strip_rank).collect();
    root_tracebacks(&lines)
        .pop()
        .or_else(|| last_error_line(&lines))
}

/// The last line of `lines` naming an error, and the traceback it ends if any.
fn last_error_line(lines: &[&str]) -> Option<(usize, usize, String)> {
    let is_error = |line: &str| {
        let line = line.trim();
        line.contains("Error") || line.contains("Exception") || line.starts_with("error")
    };
    let last = lines.iter().rposition(|line| {
        let trimmed = line.trim_start();
        is_error(line) && !trimmed.starts_with("File ") && !trimmed.starts_with("raise ")
    })?;
    let first = lines[..last]
        .iter()
        .rposition(|line| line.starts_with("Traceback (most recent call last)"))
        .unwrap_or(last);
    let text: String = lines[last].trim().chars().take(300).collect();
    Some((first + 1, last + 1, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_point_at_the_last_traceback() {
        let log = "loading\nTraceback (most recent call last):\n  File \"x.py\", line 1\n    raise OSError(x)\nOSError: /nope is not a directory\nwarning: later\n";
        assert_eq!(
            error_lines(log),
            Some((2, 5, "OSError: /nope is not a directory".to_owned()))
        );
        assert_eq!(
            error_lines("a\nValueError: bad\n"),
            Some((2, 2, "ValueError: bad".to_owned()))
        );
        assert_eq!(error_lines("all good\n"), None);
    }

    /// Numbered `job.log` text: `filler` plain lines, then `tail`.
    fn log_with(filler: usize, tail: &[&str]) -> String {
        let mut log = String::new();
        for n in 1..=filler {
            log.push_str("[INFO] step ");
            log.push_str(&n.to_string());
            log.push('\n');
        }
        for line in tail {
            log.push_str(line);
            log.push('\n');
        }
        log
    }

    /// The wrapper traceback that `accelerate launch` prints after its child failed.
    const ACCELERATE_WRAPPER: [&str; 11] = [
        "Traceback (most recent call last):",
        "  File \"/venv/bin/accelerate\", line 8, in <module>",
        "    sys.exit(main())",
        "  File \"/venv/lib/python3.11/site-packages/accelerate/commands/accelerate_cli.py\", line 50, in main",
        "    args.func(args)",
        "  File \"/venv/lib/python3.11/site-packages/accelerate/commands/launch.py\", line 1204, in launch_command",
        "    simple_launcher(args)",
        "  File \"/venv/lib/python3.11/site-packages/accelerate/commands/launch.py\", line 825, in simple_launcher",
        "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)",
        "subprocess.CalledProcessError: Command '['/venv/bin/python', '-m', 'axolotl.cli.train', 'axolotl.yaml']' returned non-zero exit status 1.",
        "Error: the training process failed",
    ];

    #[test]
    fn a_missing_base_model_points_at_the_root_exception_not_the_launcher() {
        let mut tail = vec![
            "Traceback (most recent call last):",
            "  File \"/venv/lib/python3.11/site-packages/transformers/utils/hub.py\", line 402, in cached_file",
            "    resolved_file = hf_hub_download(",
            "  File \"/venv/lib/python3.11/site-packages/huggingface_hub/utils/_validators.py\", line 106, in _inner_fn",
            "    validate_repo_id(arg_value)",
            "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/none'.",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            "  File \"/venv/lib/python3.11/site-packages/transformers/utils/hub.py\", line 466, in cached_file",
            "    raise EnvironmentError(",
            "OSError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/none'. Use `repo_type` argument if needed.",
        ];
        tail.extend(ACCELERATE_WRAPPER);
        // The first traceback's exception is the root cause: line 60 + 6.
        let log = log_with(60, &tail);
        assert_eq!(
            error_lines(&log),
            Some((
                61,
                66,
                "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/none'.".to_owned()
            ))
        );

        // Only the OSError traceback (as the brief's log had it at line 81), then
        // the wrapper at 82-92.
        let mut tail = vec![
            "Traceback (most recent call last):",
            "  File \"/venv/lib/python3.11/site-packages/axolotl/cli/train.py\", line 30, in do_cli",
            "    model, tokenizer = load_model_and_tokenizer(cfg=cfg)",
            "  File \"/venv/lib/python3.11/site-packages/transformers/utils/hub.py\", line 466, in cached_file",
            "    raise EnvironmentError(",
            "OSError: Repo id must be in the form 'repo_name' or 'namespace/repo_name': '/models/none'.",
        ];
        tail.extend(ACCELERATE_WRAPPER);
        let log = log_with(75, &tail);
        let (first, last, text) = error_lines(&log).expect("a root cause");
        assert_eq!((first, last), (76, 81));
        assert!(text.starts_with("OSError: Repo id must be"), "{text}");
    }

    #[test]
    fn bad_json_points_at_the_arrow_error_and_skips_rank_prefixes() {
        let mut tail = vec![
            "[rank0]: Traceback (most recent call last):",
            "[rank0]:   File \"/venv/lib/python3.11/site-packages/datasets/packaged_modules/json/json.py\", line 153, in _generate_tables",
            "[rank0]:     pa_table = paj.read_json(",
            "[rank0]:   File \"pyarrow/_json.pyx\", line 308, in pyarrow._json.read_json",
            "[rank0]: pyarrow.lib.ArrowInvalid: JSON parse error: Missing a name for object member. in row 0",
        ];
        tail.extend(std::iter::repeat_n("[INFO] shutting down", 72));
        tail.extend(ACCELERATE_WRAPPER);
        let log = log_with(262, &tail);
        assert_eq!(
            error_lines(&log),
            Some((
                263,
                267,
                "pyarrow.lib.ArrowInvalid: JSON parse error: Missing a name for object member. in row 0".to_owned()
            ))
        );
    }

    #[test]
    fn a_failed_merge_points_at_its_own_traceback_not_an_earlier_one() {
        let mut tail = vec![
            "Traceback (most recent call last):",
            "  File \"/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 9",
            "ResourceWarning: unclosed file",
            "[INFO] training done",
            "Traceback (most recent call last):",
            "  File \"/venv/lib/python3.11/site-packages/axolotl/cli/merge_lora.py\", line 40",
            "OSError: [Errno 28] No space left on device",
        ];
        tail.extend(ACCELERATE_WRAPPER);
        let log = log_with(10, &tail);
        assert_eq!(
            last_error_lines(&log),
            Some((
                15,
                17,
                "OSError: [Errno 28] No space left on device".to_owned()
            ))
        );
        assert_eq!(error_lines(&log).map(|(first, ..)| first), Some(11));
        assert_eq!(
            last_error_lines("a\nValueError: bad\n"),
            Some((2, 2, "ValueError: bad".to_owned()))
        );
    }

    #[test]
    fn only_a_wrapper_traceback_falls_back_to_the_last_error_line() {
        let log = log_with(3, &ACCELERATE_WRAPPER);
        assert_eq!(
            error_lines(&log),
            Some((4, 14, "Error: the training process failed".to_owned()))
        );
        assert_eq!(strip_rank("[rank]: x"), "[rank]: x");
        assert_eq!(strip_rank("[rank12]: x"), "x");
    }
}
