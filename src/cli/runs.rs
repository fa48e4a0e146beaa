//! `overbrainer runs ls` and `overbrainer runs logs RUN_ID [--tail N]`: read-only views
//! of `runs/` that never contact a target (RUN-44, RUN-45).

use std::process::ExitCode;

use anyhow::Context as _;

use super::Context;
use crate::runpod::api::logs::LogSource;
use crate::runpod::logs::show::{self, ShowOptions};
use crate::runpod::record::PodRecord;
use crate::runs::record::{RunRecord, Stalled, State, TargetKind, list};

/// `runs ...`.
#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// List the runs, oldest first.
    Ls,
    /// Print a run's `job.log`.
    Logs(LogsArgs),
}

/// Arguments of `runs logs`.
#[derive(Debug, clap::Args)]
pub struct LogsArgs {
    /// The run.
    #[arg(value_name = "RUN_ID", add = clap_complete::ArgValueCompleter::new(super::complete::run_ids))]
    pub run_id: String,
    /// Print only the last N lines (of each log, with `--pod`).
    #[arg(long, value_name = "N")]
    pub tail: Option<usize>,
    /// Print the logs of the run's pod: the kept bootstrap, watchdog and pod
    /// logs, then the lines Runpod has after them while the pod exists.
    #[arg(long)]
    pub pod: bool,
    /// Only this source of the pod's log.
    #[arg(long, value_name = "SOURCE", requires = "pod")]
    pub source: Option<LogSource>,
    /// Keep printing the pod's new lines until Ctrl-C.
    #[arg(long, requires = "pod")]
    pub follow: bool,
}

/// Runs `runs ls` or `runs logs`.
///
/// # Errors
///
/// When there is no project; for `logs`, an invalid or unknown run, or a log not
/// retrieved yet.
pub async fn run(ctx: &Context, command: &RunsCommand) -> anyhow::Result<ExitCode> {
    let project = ctx.project()?;
    match command {
        RunsCommand::Ls => {
            let (records, warnings) = list(&project.runs_dir());
            for warning in warnings {
                tracing::warn!("{warning}");
            }
            let pods: Vec<Option<PodRecord>> = records
                .iter()
                .map(|record| {
                    if record.target_kind != TargetKind::Runpod {
                        return None;
                    }
                    PodRecord::read(&project.run_dir(&record.id))
                        .map_err(|e| tracing::warn!("{e}"))
                        .ok()
                        .flatten()
                })
                .collect();
            out!("{}", table(&records, &pods));
            Ok(ExitCode::SUCCESS)
        }
        RunsCommand::Logs(args) if args.pod => pod_logs(ctx, &project, args).await,
        RunsCommand::Logs(args) => {
            let log = crate::runs::job_log::retrieved_lines(&project, &args.run_id, args.tail)?;
            if let Some(problem) = &log.bad_record {
                tracing::warn!("{problem}; showing the retrieved log anyway");
            }
            for line in &log.lines {
                outln!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `runs logs RUN_ID --pod` (POD-60): reads only, takes no lock.
async fn pod_logs(
    ctx: &Context,
    project: &crate::project::Project,
    args: &LogsArgs,
) -> anyhow::Result<ExitCode> {
    let record = RunRecord::load(&project.runs_dir(), &args.run_id)?;
    let run_dir = project.run_dir(&record.id);
    let options = ShowOptions {
        source: args.source,
        tail: args.tail,
        follow: args.follow,
    };
    let known = crate::llm::Redactor::new();
    let (kept, cursor) = show::kept(&run_dir, &options, &known)
        .with_context(|| format!("cannot read the pod logs of run `{}`", record.id))?;
    for line in &kept {
        outln!("{line}");
    }
    let pod = PodRecord::read(&run_dir).map_err(|e| anyhow::anyhow!("run `{}`: {e}", record.id))?;
    let Some(pod_id) = pod
        .filter(|p| p.deleted.is_none() && p.state != "deleted")
        .and_then(|p| p.pod_id)
    else {
        return Ok(ExitCode::SUCCESS);
    };
    let client = super::pod_catalog::client(ctx).await?;
    let stop = tokio_util::sync::CancellationToken::new();
    let stopper = stop.clone();
    let ctrl_c = tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            stopper.cancel();
        }
    });
    let result = show::live(&client, &pod_id, cursor, &options, &stop, |line| {
        outln!("{line}");
    })
    .await;
    ctrl_c.abort();
    result.with_context(|| format!("cannot read the log of run `{}`'s pod", record.id))?;
    Ok(ExitCode::SUCCESS)
}

/// POD-68: a Runpod run's pod as `pod.json` last recorded it, with its rate while alive
/// and its estimated spend once deleted.
fn pod_note(pod: &PodRecord) -> String {
    // A start that failed before any pod existed: nothing was made, nothing billed. A pod
    // made and deleted for another GPU type leaves a `created` (or `ambiguous`) attempt.
    let none_made = pod
        .attempts
        .iter()
        .all(|a| a.outcome != "created" && a.outcome != "ambiguous");
    if pod.pod_id.is_none() && (pod.deleted.is_some() || pod.state == "deleted") {
        return if none_made {
            "no pod was created".to_owned()
        } else {
            "its pod was deleted before it was ready (attempts in pod.json)".to_owned()
        };
    }
    let id = pod.pod_id.as_deref().unwrap_or("(none yet)");
    let gpu = pod.gpu_type.as_deref().unwrap_or("?");
    match (&pod.deleted, pod.rate_usd_per_hour) {
        (Some(deleted), _) => format!(
            "pod {id} {gpu} deleted by {}, spent USD {}",
            deleted.by,
            deleted
                .cost_usd
                .map_or_else(|| "unknown".to_owned(), |c| format!("{c:.4}"))
        ),
        (None, Some(rate)) => format!("pod {id} {gpu} {}, USD {rate:.3}/h", pod.state),
        (None, None) => format!("pod {id} {gpu} {}, rate unknown", pod.state),
    }
}

/// Issue 21: a run whose job stalled while followed.
fn stalled_note(stalled: &Stalled) -> String {
    let step = stalled.last_step.map_or_else(
        || "before its first step".to_owned(),
        |s| format!("after step {s}"),
    );
    format!(
        "stalled {step} at {} UTC (on_stall {})",
        stalled.at.strftime("%Y-%m-%d %H:%M:%S"),
        stalled.on_stall.name()
    )
}

/// The `runs ls` table: ID, STATE, TARGET, CREATED, STEP, LOSS, NOTE.
fn table(records: &[RunRecord], pods: &[Option<PodRecord>]) -> String {
    let mut rows = vec![[
        "ID".to_owned(),
        "STATE".to_owned(),
        "TARGET".to_owned(),
        "CREATED".to_owned(),
        "STEP".to_owned(),
        "LOSS".to_owned(),
        "NOTE".to_owned(),
    ]];
    for (index, record) in records.iter().enumerate() {
        let mut notes = Vec::new();
        if let Some(Some(pod)) = pods.get(index) {
            notes.push(pod_note(pod));
        }
        if let (State::Stopped, Some(snapshot)) = (record.state, &record.snapshot) {
            let reason = serde_json::to_value(snapshot.reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            notes.push(format!(
                "snapshot at step {} ({reason}); output/ holds a partial model",
                snapshot.step
            ));
        }
        if let Some(from) = &record.resumed_from {
            notes.push(format!("resumed from {from}"));
        }
        if let Some(stalled) = &record.stalled {
            notes.push(stalled_note(stalled));
        }
        // A running run's message says its results are pending retrieval; a pending
        // run's gives the scheduler's reason (issue 33).
        if matches!(record.state, State::Running | State::Pending) {
            if let Some(message) = &record.message {
                notes.push(message.clone());
            }
        }
        if matches!(record.state, State::Failed | State::MergeFailed) {
            if let Some(message) = &record.message {
                notes.push(message.chars().take(120).collect());
            }
        }
        let step = match (record.last_step, record.max_steps) {
            (Some(step), Some(max)) => format!("{step}/{max}"),
            (Some(step), None) => step.to_string(),
            _ => "-".to_owned(),
        };
        rows.push([
            record.id.clone(),
            record.state.name().to_owned(),
            record.target.clone(),
            record.created.strftime("%Y-%m-%d %H:%M:%S").to_string(),
            step,
            record
                .last_loss
                .map_or_else(|| "-".to_owned(), |l| format!("{l:.4}")),
            notes.join("; "),
        ]);
    }
    let mut widths = [0_usize; 7];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: &str) -> PodRecord {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_pod_note_says_no_pod_was_created_when_the_start_failed_before_one_existed() {
        let base = r#""version":1,"run_id":"r","pod_name":"n","keep_pod":false"#;
        assert_eq!(
            pod_note(&pod(&format!(r#"{{{base},"state":"deleted"}}"#))),
            "no pod was created"
        );
        // A pod made, deleted (it never became ready) and no other type had capacity.
        let attempts = r#""attempts":[{"gpu_type":"A","at":"2026-01-01T00:00:00Z","outcome":"created","detail":"p1"},{"gpu_type":"B","at":"2026-01-01T00:01:00Z","outcome":"refused"}]"#;
        assert_eq!(
            pod_note(&pod(&format!(r#"{{{base},"state":"deleted",{attempts}}}"#))),
            "its pod was deleted before it was ready (attempts in pod.json)"
        );
        assert_eq!(
            pod_note(&pod(&format!(r#"{{{base},"state":"creating"}}"#))),
            "pod (none yet) ? creating, rate unknown"
        );
        assert_eq!(
            pod_note(&pod(&format!(
                r#"{{{base},"state":"running","pod_id":"p1","gpu_type":"A","rate_usd_per_hour":0.74}}"#
            ))),
            "pod p1 A running, USD 0.740/h"
        );
    }
}
