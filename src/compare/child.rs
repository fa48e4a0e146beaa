//! The child's side of a compare (CMP-5..CMP-12): the run and its GGUF (the newest
//! `export.json`), the questions of `data/eval.jsonl`, the compare's directory claimed on
//! the run's target, `setup.json` written first, the GGUF sent only when the target lacks
//! it or holds another digest, the compare job started, followed and cancelled on
//! Ctrl-C, and its directory retrieved and checked.

use std::path::{Path, PathBuf};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::setup::{self, EvalRecord, Gguf, Setup};
use super::{COMPARES_DIR, CompareError, CompareEvent, Events, Request, emit, job};
use crate::config::{EnvSnapshot, Settings};
use crate::dataset::jsonl::{read_jsonl, replace_jsonl};
use crate::exec::{
    AnyExecutor, Executor as _, JOB_LOG, JobCommand, JobHandle, JobRuntime, JobStatus,
};
use crate::export::{EXPORTS_DIR, ExportRecord, script::EXPORT_JSON, yaml_value};
use crate::gguf::llama_of;
use crate::project::Project;
use crate::runs::record::{RunRecord, TargetKind, write_atomic};
use crate::runs::{RunError, elsewhere, target};
use crate::train::axolotl::{AXOLOTL_YAML, OUTPUT_DIR};

/// The compare job's own `run.json` (CMP-26): its state in RUN-9's words and its job.
#[derive(Debug, Serialize)]
struct JobRecord<'a> {
    compare_id: &'a str,
    run_id: &'a str,
    target: &'a str,
    state: &'a str,
    job: Option<&'a JobHandle>,
    message: Option<String>,
}

/// The export records of a run, newest last: every `exports/*/export.json` and an
/// in-job export's `output/gguf/export.json`, by their `created`.
fn exports(run_dir: &Path) -> Vec<(String, ExportRecord)> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(run_dir.join(EXPORTS_DIR)) {
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            found.push((id, entry.path().join(EXPORT_JSON)));
        }
    }
    found.push((
        "in-job".into(),
        run_dir.join(OUTPUT_DIR).join("gguf").join(EXPORT_JSON),
    ));
    let mut records: Vec<(String, ExportRecord)> = found
        .into_iter()
        .filter_map(|(id, path)| {
            let text = std::fs::read_to_string(path).ok()?;
            Some((id, serde_json::from_str(&text).ok()?))
        })
        .filter(|(_, r): &(String, ExportRecord)| run_dir.join(&r.file).is_file())
        .collect();
    records.sort_by(|a, b| a.1.created.cmp(&b.1.created).then(a.0.cmp(&b.0)));
    records
}

/// The GGUF of the run in `run_dir`: the one the newest `export.json` names (CMP-5).
fn newest_gguf(run_dir: &Path) -> Option<Gguf> {
    let (export_id, record) = exports(run_dir).pop()?;
    Some(Gguf {
        file: record.file,
        kind: record.quantize,
        sha256: record.sha256,
        llama_cpp: record.llama_cpp,
        export_id,
    })
}

/// The run to compare and its GGUF: `--run`, else the newest run that has one (CMP-2).
///
/// # Errors
///
/// An unknown run, a run without a GGUF, or no run with one.
pub fn pick(project: &Project, run_id: Option<&str>) -> Result<(RunRecord, Gguf), CompareError> {
    if let Some(id) = run_id {
        let record = RunRecord::load(&project.runs_dir(), id)?;
        let gguf =
            newest_gguf(&project.run_dir(id)).ok_or_else(|| CompareError::NoGguf(id.to_owned()))?;
        return Ok((record, gguf));
    }
    let (mut records, _) = crate::runs::record::list(&project.runs_dir());
    records.sort_by_key(|r| r.created);
    records
        .into_iter()
        .rev()
        .find_map(|r| {
            let gguf = newest_gguf(&project.run_dir(&r.id))?;
            Some((r, gguf))
        })
        .ok_or(CompareError::NoRunWithGguf)
}

/// The selected questions of `data/eval.jsonl` (CMP-2).
pub(super) fn questions(
    project: &Project,
    limit: Option<usize>,
) -> Result<Vec<setup::Question>, CompareError> {
    let path = project.data_dir().join("eval.jsonl");
    let (records, skipped) =
        read_jsonl::<EvalRecord>(&path).map_err(|e| CompareError::Bad(e.to_string()))?;
    if let Some(bad) = skipped.first() {
        return Err(CompareError::Bad(bad.to_string()));
    }
    let selected = setup::select(records, limit);
    if selected.is_empty() {
        return Err(CompareError::NoQuestions);
    }
    selected
        .iter()
        .map(|r| {
            r.question().map_err(|why| {
                CompareError::Bad(format!(
                    "`{}`: record `{}` cannot be compared: {why}",
                    path.display(),
                    r.id
                ))
            })
        })
        .collect()
}

fn exec_error(target: &str) -> impl Fn(crate::exec::ExecError) -> CompareError + '_ {
    move |source| {
        CompareError::Run(RunError::Exec {
            target: target.to_owned(),
            source: Box::new(source),
        })
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> CompareError + '_ {
    move |source| CompareError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Sends the GGUF unless the target holds it with the digest of `export.json` (CMP-6).
async fn ensure_gguf(
    executor: &AnyExecutor,
    record: &RunRecord,
    local_run: &Path,
    local_dir: &Path,
    gguf: &Gguf,
    events: &Events,
) -> Result<(), CompareError> {
    let exec = exec_error(&record.target);
    let present = executor
        .manifest(&record.dir, std::slice::from_ref(&gguf.file), &[])
        .await
        .map_err(&exec)?
        .iter()
        .any(|f| f.path == gguf.file && f.sha256 == gguf.sha256);
    if present {
        emit(
            events,
            CompareEvent::GgufPresent {
                file: gguf.file.clone(),
            },
        );
        return Ok(());
    }
    let local = local_run.join(&gguf.file);
    if record.target_kind == TargetKind::Local {
        return Err(CompareError::Bad(format!(
            "`{}` does not match the SHA-256 its `export.json` records; export the run again",
            local.display()
        )));
    }
    let digest = crate::exec::sha256_file(&local).map_err(|e| CompareError::Bad(e.to_string()))?;
    if digest != gguf.sha256 {
        return Err(CompareError::Bad(format!(
            "`{}` does not match the SHA-256 its `export.json` records; export the run again",
            local.display()
        )));
    }
    let staging = local_dir.join(".gguf-send");
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(io(&staging))?;
    let name = local.file_name().map(PathBuf::from).unwrap_or_default();
    let staged = staging.join(&name);
    if std::fs::hard_link(&local, &staged).is_err() {
        std::fs::copy(&local, &staged).map_err(io(&staged))?;
    }
    let remote_parent = Path::new(&gguf.file)
        .parent()
        .map_or_else(String::new, |p| p.to_string_lossy().into_owned());
    let remote = format!("{}/{remote_parent}", record.dir.trim_end_matches('/'));
    let sent = executor.upload(&staging, &remote, &[]).await.map_err(&exec);
    let _ = std::fs::remove_dir_all(&staging);
    sent?;
    let size = std::fs::metadata(&local).map_or(0, |m| m.len());
    emit(
        events,
        CompareEvent::GgufSent {
            file: gguf.file.clone(),
            size,
        },
    );
    Ok(())
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CompareError> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| CompareError::Bad(e.to_string()))? + "\n";
    write_atomic(path, text.as_bytes()).map_err(|e| CompareError::Bad(e.to_string()))
}

/// The target the child's job of a compare of `record` runs on (`--target`, the run's
/// own, or the one local target of a run whose pod is gone), resolved.
///
/// # Errors
///
/// The refusals of [`elsewhere::side_target`] and [`target::resolve`];
/// [`CompareError::UnsupportedTarget`] for a container target.
pub(super) fn target_of(
    settings: &Settings,
    record: &RunRecord,
    request: &Request,
) -> Result<target::Resolved, CompareError> {
    let on = elsewhere::side_target(settings, record, request.target.as_deref(), "compare")?;
    let resolved = target::resolve(settings, &on)?;
    if !matches!(resolved.runtime, JobRuntime::Native { .. }) {
        return Err(CompareError::UnsupportedTarget(on));
    }
    Ok(resolved)
}

/// The child's side of a new compare: returns the local compare directory and its setup,
/// with `child_answers.jsonl` and `hardware.json` retrieved there.
///
/// # Errors
///
/// Every [`CompareError`] of the child's side.
#[allow(
    clippy::too_many_arguments,
    reason = "the flow's inputs, each needed once"
)]
#[allow(
    clippy::too_many_lines,
    reason = "the child's side in its order, step by step"
)]
pub async fn run(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    (record, resolved): (&RunRecord, target::Resolved),
    gguf: Gguf,
    questions: Vec<setup::Question>,
    request: &Request,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<(PathBuf, Setup), CompareError> {
    let local_run = project.run_dir(&record.id);
    let yaml_path = local_run.join(AXOLOTL_YAML);
    let yaml = std::fs::read_to_string(&yaml_path).map_err(io(&yaml_path))?;
    let context = yaml_value(&yaml, "sequence_len")
        .and_then(|v| v.as_u64())
        .unwrap_or(2048);
    let base_model = yaml_value(&yaml, "base_model")
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let executor = target::connect(&resolved, &project.runs_dir(), env).await?;
    let record = &elsewhere::seen_from(record, &resolved, executor.workdir());
    let exec = exec_error(&record.target);
    let run_dir = record.dir.trim_end_matches('/').to_owned();
    let (compare_id, remote_dir) =
        crate::runs::side_job::stamped(&executor, &run_dir, COMPARES_DIR, "compare")
            .await
            .map_err(&exec)?;
    let local_dir = local_run.join(COMPARES_DIR).join(&compare_id);
    std::fs::create_dir_all(&local_dir).map_err(io(&local_dir))?;
    let setup = Setup {
        compare_id: compare_id.clone(),
        run_id: record.id.clone(),
        base_model,
        target: record.target.clone(),
        gguf,
        seed: rand::random::<u64>() >> 11,
        max_tokens: settings.compare.max_tokens,
        temperature: settings.compare.temperature,
        context,
        limit: request.limit,
        questions,
    };
    write_json(&local_dir.join(setup::SETUP_JSON), &setup)?;
    replace_jsonl(&local_dir.join(setup::QUESTIONS_JSONL), &setup.asked())
        .map_err(|e| CompareError::Bad(e.to_string()))?;
    let plan = job::Plan {
        dir: remote_dir.clone(),
        gguf: format!("{run_dir}/{}", setup.gguf.file),
        llama: llama_of(settings, &record.target, executor.workdir()),
        context,
        max_tokens: settings.compare.max_tokens,
        temperature: settings.compare.temperature,
        server_start_secs: settings.compare.server_start_secs,
    };
    let spec = target::job_spec(record, &executor, &resolved.runtime, &[]);
    let script = plan.script(&spec);
    for (name, text) in [
        (job::SCRIPT_FILE, script.as_str()),
        (job::CLIENT_FILE, job::CLIENT),
    ] {
        let path = local_dir.join(name);
        write_atomic(&path, text.as_bytes()).map_err(|e| CompareError::Bad(e.to_string()))?;
    }
    emit(
        events,
        CompareEvent::Started {
            compare_id: compare_id.clone(),
            run_id: record.id.clone(),
            target: Some(record.target.clone()),
            questions: setup.questions.len(),
        },
    );
    if record.target_kind != TargetKind::Local {
        executor
            .upload(&local_dir, &remote_dir, &[])
            .await
            .map_err(&exec)?;
    }
    ensure_gguf(
        &executor,
        record,
        &local_run,
        &local_dir,
        &setup.gguf,
        events,
    )
    .await?;
    let job_record = |state: &str, job: Option<&JobHandle>, message: Option<String>| {
        write_json(
            &local_dir.join("run.json"),
            &JobRecord {
                compare_id: &compare_id,
                run_id: &record.id,
                target: &record.target,
                state,
                job,
                message,
            },
        )
    };
    let command = JobCommand {
        dir: remote_dir.clone(),
        ..spec.job(&script, Vec::new())
    };
    let job_id = executor.spawn_job(&command).await.map_err(&exec)?;
    job_record("running", Some(&job_id), None)?;
    let status = follow(&executor, &job_id, events, cancel)
        .await
        .map_err(&exec)?;
    let relative = format!("{COMPARES_DIR}/{compare_id}");
    let retrieve = async || {
        crate::runs::retrieve::retrieve_export(&executor, record, &local_run, &relative, false)
            .await
    };
    if status == JobStatus::Running {
        executor.cancel_job(&job_id).await.map_err(&exec)?;
        let _ = retrieve().await;
        job_record("cancelled", Some(&job_id), None)?;
        return Err(CompareError::Cancelled {
            run_id: record.id.clone(),
            compare_id,
        });
    }
    if status != JobStatus::Exited(0) {
        let _ = retrieve().await;
        let log_path = local_dir.join(JOB_LOG);
        let log = std::fs::read_to_string(&log_path).unwrap_or_default();
        let reason = job::failure(&log).map_or_else(
            || format!("{status:?}; see {}", log_path.display()),
            str::to_owned,
        );
        job_record("failed", Some(&job_id), Some(reason.clone()))?;
        return Err(CompareError::JobFailed {
            run_id: record.id.clone(),
            compare_id,
            reason,
        });
    }
    retrieve().await?;
    job_record("succeeded", Some(&job_id), None)?;
    Ok((local_dir, setup))
}

/// Follows the job until it ends, sending its progress; [`JobStatus::Running`] when
/// `cancel` fired first.
async fn follow(
    executor: &AnyExecutor,
    job: &JobHandle,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<JobStatus, crate::exec::ExecError> {
    crate::runs::side_job::follow(executor, job, cancel, |line| {
        if let Some((done, total)) = job::answered(&line) {
            emit(events, CompareEvent::Answered { done, total });
        } else if let Some(step) = crate::runs::side_job::step(&line, job::LINE_PREFIX) {
            emit(events, CompareEvent::Step(step.to_owned()));
        }
        emit(events, CompareEvent::JobLog(line));
    })
    .await
}
