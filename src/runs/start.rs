//! Starting a run (spec/training.md, RUN-6, RUN-10..RUN-15, RUN-35, RUN-36): every check
//! first, then the local run directory, the claim on the target, the upload and the
//! detached job. Nothing here waits for a Ctrl-C: a start is never interrupted (RUN-14).

use std::path::{Path, PathBuf};

use secrecy::SecretString;

use super::lifecycle::transitions;
use super::record::{RunRecord, State, TargetKind, write_atomic};
use super::target::{self, Resolved};
use super::{Events, Refusal, RunError, RunEvent, RunWarning, emit, id};
use crate::config::{AdapterKind, EnvSnapshot, Provenance, Settings, Training};
use crate::exec::{AnyExecutor, Executor as _, JobRuntime, quote, shell_path};
use crate::project::Project;
use crate::train::axolotl::{self, AXOLOTL_YAML, EVAL_DATA, OUTPUT_DIR, RESUME_DIR, TRAIN_DATA};
use crate::train::job::{PROGRAM, Stages};
use crate::train::plugin::{PLUGIN_FILE, PLUGIN_SOURCE};
use crate::train::template::Decision;

/// Entries of a local run directory that never leave this machine (LAY-5): the record,
/// a Runpod run's SSH files and pod record.
pub const NEVER_UPLOADED: [&str; 3] = ["run.json", "ssh", "pod.json"];

/// The directory of a run on its target that holds its uploaded base model
/// (`training.upload_base_model`, issue 21).
pub const BASE_MODEL_DIR: &str = "base_model";

/// The project's file of local SHA-256 digests (by path, size and modification time)
/// of the base models it uploaded, under its `.overbrainer/` state directory.
pub const DIGEST_CACHE: &str = "digests.json";

/// What `train` was asked.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// `--target NAME`; `training.target` when unset.
    pub target: Option<String>,
    /// `--resume-from RUN_ID`.
    pub resume_from: Option<String>,
    /// `--keep-pod` (Runpod targets, POD-61).
    pub keep_pod: bool,
    /// `--over-budget`: a Runpod start whose most the pod may cost passes
    /// `budget.max_usd` goes ahead, the pod's cost cap still what remains (issue 20).
    pub over_budget: bool,
    /// The VRAM estimate in GB that the TUI's start confirmation showed: `"auto"` uses
    /// it instead of computing it again (POD-19).
    pub vram_estimate: Option<f64>,
}

/// A started run: its record (state `running`) and the executor of its target.
#[derive(Debug)]
pub struct Started {
    /// The run's record.
    pub record: RunRecord,
    /// The connected executor.
    pub executor: AnyExecutor,
}

/// The `[training]` section.
///
/// # Errors
///
/// [`Refusal::NoTraining`] when the project has none (RUN-10).
pub fn training(settings: &Settings) -> Result<&Training, RunError> {
    settings
        .training
        .as_ref()
        .ok_or(RunError::Refused(Refusal::NoTraining))
}

/// Whether `path` is a file holding at least one record: a byte other than white
/// space after a leading UTF-8 byte-order mark. A file of blank lines, or of a mark
/// alone, holds none. Reads only up to the first such byte.
fn non_empty(path: &Path) -> bool {
    use std::io::Read as _;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut reader = std::io::BufReader::new(file);
    let mut buffer = [0_u8; 8192];
    let mut first = true;
    loop {
        let Ok(read) = reader.read(&mut buffer) else {
            return false;
        };
        if read == 0 {
            return false;
        }
        let mut chunk = &buffer[..read];
        if std::mem::take(&mut first) {
            chunk = crate::dataset::jsonl::strip_bom(chunk);
        }
        if chunk.iter().any(|byte| !byte.is_ascii_whitespace()) {
            return true;
        }
    }
}

/// Why `[training]` cannot run on the project's data: settings that need eval data
/// while `data/eval.jsonl` is missing or empty (see [`axolotl::eval_data_conflict`];
/// `provenance` tells a set `evals_per_epoch` from its default). `None` before
/// `data/train.jsonl` exists (the split decides then) and without a `[training]`
/// section.
#[must_use]
pub fn eval_data_problem(
    project: &Project,
    settings: &Settings,
    provenance: &Provenance,
) -> Option<String> {
    let training = settings.training.as_ref()?;
    let data = project.data_dir();
    if !non_empty(&data.join(TRAIN_DATA)) {
        return None;
    }
    axolotl::eval_data_conflict(
        training,
        provenance,
        non_empty(&data.join(EVAL_DATA)),
        &format!("data/{EVAL_DATA}"),
    )
}

/// The directory the run uploads its base model from: `training.base_model` relative
/// to the project (an absolute path as is, `~/` in `HOME` of `env`); `None` without
/// `training.upload_base_model`.
#[must_use]
pub fn local_base_model(
    project: &Project,
    training: &Training,
    env: &EnvSnapshot,
) -> Option<PathBuf> {
    training.upload_base_model.then(|| {
        let base = training.base_model.as_str();
        let home = env.get("HOME").filter(|home| !home.is_empty());
        let dir = match (base.strip_prefix("~/"), home) {
            (Some(rest), Some(home)) => Path::new(home).join(rest),
            _ if base == "~" && home.is_some() => PathBuf::from(home.unwrap_or_default()),
            _ => project.root().join(base),
        };
        std::path::absolute(&dir).unwrap_or(dir)
    })
}

/// Why the local base model of `training.upload_base_model` cannot be uploaded: its
/// directory is missing or not a directory. `None` when it is one, without
/// `upload_base_model` and without a `[training]` section.
#[must_use]
pub fn base_model_problem(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
) -> Option<String> {
    let dir = local_base_model(project, settings.training.as_ref()?, env)?;
    match std::fs::metadata(&dir) {
        // A model's directory (a Hugging Face snapshot) has its `config.json`.
        Ok(meta) if meta.is_dir() && !dir.join("config.json").is_file() => Some(format!(
            "`training.base_model` (`{}`) has no `config.json`, but `training.upload_base_model` is set: name the directory of a model (its `config.json`, weights and tokenizer)",
            dir.display()
        )),
        Ok(meta) if meta.is_dir() => None,
        Ok(_) => Some(format!(
            "`training.base_model` (`{}`) is not a directory, but `training.upload_base_model` is set: name the model's local directory, or unset `upload_base_model` for a Hugging Face repo ID or a path on the target",
            dir.display()
        )),
        Err(error) => Some(format!(
            "`training.base_model` (`{}`) cannot be read ({error}), but `training.upload_base_model` is set: name the model's local directory, or unset `upload_base_model` for a Hugging Face repo ID or a path on the target",
            dir.display()
        )),
    }
}

/// A warning when `training.base_model` names a model's directory in the project (its
/// `config.json` there) but `training.upload_base_model` is unset: the job would read
/// it as a Hugging Face repo ID or a path on the target, and fail far from the cause.
#[must_use]
pub fn base_model_hint(project: &Project, settings: &Settings) -> Option<String> {
    let training = settings.training.as_ref()?;
    let base = training.base_model.as_str();
    if training.upload_base_model || base.is_empty() || base.starts_with('~') {
        return None;
    }
    let path = Path::new(base);
    if path.is_absolute() || !project.root().join(path).join("config.json").is_file() {
        return None;
    }
    Some(format!(
        "`training.base_model` (`{base}`) is a model directory in the project, but `training.upload_base_model` is not set: the job will look for `{base}` on the Hugging Face Hub or on the target; set `upload_base_model = true` to use this directory"
    ))
}

/// Where the run's uploaded base model lives in its target directory `remote_dir`.
fn uploaded_base_model(remote_dir: &str) -> String {
    format!("{}/{BASE_MODEL_DIR}", remote_dir.trim_end_matches('/'))
}

/// Whether the run's job sees the local base model of `upload_base_model` where it is
/// (a local target without a container): its run directory gets a symbolic link to
/// it; elsewhere a copy ([`BaseModel`]).
fn in_place(target: &Resolved) -> bool {
    target.kind == TargetKind::Local && matches!(target.runtime, JobRuntime::Native { .. })
}

/// `training` as a run uses it: with `upload_base_model`, `base_model` is
/// `./base_model`, the run directory's link to the local directory ([`in_place`]) or
/// its copy there. Every Axolotl command of a run runs in its run directory; the path
/// is relative because Axolotl 0.19 guesses the model's family from the text of
/// `base_model` (`mpt` anywhere in it refuses gradient checkpointing, `falcon` refuses
/// FSDP, `llama` marks it a Llama): an absolute path would carry the names of every
/// directory above the model (`/home/me/attempts/...`).
fn effective(training: &Training) -> Training {
    let mut training = training.clone();
    if training.upload_base_model {
        training.base_model = crate::train::axolotl::in_run_dir_path(BASE_MODEL_DIR);
    }
    training
}

/// Where the run's train and eval data come from, and the resume checkpoint.
pub(super) struct Inputs {
    pub(super) train: PathBuf,
    eval: Option<PathBuf>,
    resume: Option<(String, PathBuf)>,
}

/// Checks a resume (RUN-35, RUN-36): the run is stopped, its checkpoint is complete
/// ([`crate::train::checkpoint::missing`]) and its settings may be resumed; returns its
/// inputs.
fn resume_inputs(
    project: &Project,
    training: &Training,
    from: &str,
    has_eval: bool,
) -> Result<Inputs, RunError> {
    let stopped = RunRecord::load(&project.runs_dir(), from)?;
    let Some(snapshot) = stopped
        .snapshot
        .as_ref()
        .filter(|_| stopped.state == State::Stopped)
    else {
        return Err(Refusal::NotStopped {
            run_id: from.to_owned(),
            state: stopped.state,
        }
        .into());
    };
    let dir = project.run_dir(from);
    let checkpoint = dir.join(OUTPUT_DIR).join(&snapshot.checkpoint);
    if !checkpoint.is_dir() {
        return Err(Refusal::CheckpointMissing {
            run_id: from.to_owned(),
            checkpoint: snapshot.checkpoint.clone(),
        }
        .into());
    }
    // What a resume needs must be there before anything starts (Axolotl #1631).
    let missing =
        crate::train::checkpoint::missing(&checkpoint).map_err(|source| RunError::Io {
            path: checkpoint.clone(),
            source,
        })?;
    if !missing.is_empty() {
        return Err(Refusal::CheckpointIncomplete {
            run_id: from.to_owned(),
            checkpoint: snapshot.checkpoint.clone(),
            missing,
        }
        .into());
    }
    let yaml_path = dir.join(AXOLOTL_YAML);
    let old = std::fs::read_to_string(&yaml_path).map_err(|source| RunError::Io {
        path: yaml_path,
        source,
    })?;
    // The stopped run's base model was its own upload (or the same local directory):
    // the resume's is the same tree, uploaded again through the blob cache.
    let training = effective(training);
    let new = axolotl::config(&training, Some(&snapshot.checkpoint), has_eval).map_err(|e| {
        Refusal::Axolotl {
            reason: e.to_string(),
        }
    })?;
    let differing = axolotl::resume_differences(&old, &new);
    if !differing.is_empty() {
        return Err(Refusal::ResumeDiffers {
            run_id: from.to_owned(),
            keys: differing.iter().map(ToString::to_string).collect(),
        }
        .into());
    }
    let eval = dir.join(EVAL_DATA);
    Ok(Inputs {
        train: dir.join(TRAIN_DATA),
        eval: non_empty(&eval).then_some(eval),
        resume: Some((snapshot.checkpoint.clone(), checkpoint)),
    })
}

/// The job's secret variables: `HF_TOKEN` when `OVERBRAINER_HF_TOKEN` is set
/// (TGT-10), resolved now.
///
/// # Errors
///
/// [`RunError::Secret`] when the token cannot be resolved.
pub async fn job_secrets(
    settings: &Settings,
    env: &EnvSnapshot,
) -> Result<Vec<(String, SecretString)>, RunError> {
    match &settings.hf_token {
        Some(reference) => {
            let value: SecretString = crate::secrets::Resolver::new(env)
                .resolve("OVERBRAINER_HF_TOKEN", reference)
                .await
                .map_err(|e| RunError::Secret(Box::new(e)))?;
            Ok(vec![("HF_TOKEN".to_owned(), value)])
        }
        None => Ok(Vec::new()),
    }
}

/// Copies the directory `from` to `to`, hard-linking files when the file system allows
/// it (RUN-35).
fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            link_or_copy(&entry.path(), &target)?;
        } else if std::fs::hard_link(entry.path(), &target).is_err() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Checks that every line of `path` (the project's `data/<name>`) is a JSON object
/// with a non-empty `messages` array, before a run exists.
///
/// # Errors
///
/// a [`Refusal`] naming the file, the line and why; [`RunError::Io`] when
/// the file cannot be read.
fn check_chat_file(path: &Path, name: &str) -> Result<(), RunError> {
    match crate::dataset::chat_check::first_bad_chat_line(path) {
        Ok(None) => Ok(()),
        Ok(Some(bad)) => Err(Refusal::BadDataLine {
            file: name.to_owned(),
            line: bad.line,
            reason: bad.reason,
        }
        .into()),
        Err(crate::dataset::JsonlError::Io { path, source, .. }) => {
            Err(RunError::Io { path, source })
        }
        Err(error) => Err(Refusal::BadData {
            reason: error_chain(&error),
        }
        .into()),
    }
}

/// Checks everything that can be checked before a run exists: `[training]`, the data,
/// the target, `axolotl_extra`, a resume, a local venv (RUN-10, RUN-36).
///
/// # Errors
///
/// a [`Refusal`] (or [`RunError::UnknownRun`], [`RunError::BadRunId`]) naming
/// what is missing or wrong.
pub(super) fn check(
    project: &Project,
    (settings, env): (&Settings, &EnvSnapshot),
    provenance: &Provenance,
    options: &StartOptions,
) -> Result<(Resolved, Inputs, String), RunError> {
    let training = training(settings)?;
    let target_name = options
        .target
        .clone()
        .unwrap_or_else(|| training.target.clone());
    let target = target::resolve(settings, &target_name)?;
    if training.upload_base_model && target.kind == TargetKind::Runpod {
        return Err(Refusal::BaseModel {
            reason: format!(
                "`training.upload_base_model` is not supported on the runpod target `{}`: a pod is made for the run, so set `base_model` to a Hugging Face repo ID or a path on the pod's network volume",
                target.name
            ),
        }
        .into());
    }
    if let Some(reason) = base_model_problem(project, settings, env) {
        return Err(Refusal::BaseModel { reason }.into());
    }
    let data = project.data_dir();
    let inputs = if let Some(from) = &options.resume_from {
        if !id::is_valid(from) {
            return Err(RunError::BadRunId(from.clone()));
        }
        let stopped_eval = project.run_dir(from).join(EVAL_DATA);
        resume_inputs(project, training, from, non_empty(&stopped_eval))?
    } else {
        let train = data.join(TRAIN_DATA);
        if !non_empty(&train) {
            return Err(Refusal::NoTrainData.into());
        }
        let eval = data.join(EVAL_DATA);
        let eval = non_empty(&eval).then_some(eval);
        check_chat_file(&train, TRAIN_DATA)?;
        if let Some(eval) = &eval {
            check_chat_file(eval, EVAL_DATA)?;
        }
        Inputs {
            train,
            eval,
            resume: None,
        }
    };
    let eval_file = match &options.resume_from {
        Some(from) => format!("runs/{from}/{EVAL_DATA}"),
        None => format!("data/{EVAL_DATA}"),
    };
    if let Some(problem) =
        axolotl::eval_data_conflict(training, provenance, inputs.eval.is_some(), &eval_file)
    {
        return Err(Refusal::Axolotl { reason: problem }.into());
    }
    // The run directory on the target is not known yet: `start` renders again once
    // claimed ([`render`]).
    let yaml = render(&effective(training), &inputs)?;
    if target.kind == TargetKind::Local {
        if let JobRuntime::Native { venv: Some(venv) } = &target.runtime {
            let program = Path::new(venv).join("bin").join(PROGRAM);
            if !program.is_file() {
                return Err(Refusal::NoAxolotl {
                    venv: venv.clone(),
                    target: target.name.clone(),
                    local: true,
                }
                .into());
            }
        }
    }
    Ok((target, inputs, yaml))
}

/// The run's `axolotl.yaml` from `training` (as [`effective`] makes it) and its inputs.
fn render(training: &Training, inputs: &Inputs) -> Result<String, RunError> {
    axolotl::render(
        training,
        inputs.resume.as_ref().map(|(name, _)| name.as_str()),
        inputs.eval.is_some(),
    )
    .map_err(|e| {
        Refusal::Axolotl {
            reason: e.to_string(),
        }
        .into()
    })
}

/// Whether the run `options` asks for is on a `runpod` target (an unknown target is
/// refused by the start).
#[must_use]
pub fn is_runpod(settings: &Settings, options: &StartOptions) -> bool {
    let name = options
        .target
        .clone()
        .or_else(|| settings.training.as_ref().map(|t| t.target.clone()));
    name.and_then(|name| settings.targets.get(&name).cloned())
        .is_some_and(|t| matches!(t, crate::config::Target::Runpod(_)))
}

/// Checks a remote venv has `bin/axolotl` (read-only probe).
async fn check_remote_venv(executor: &AnyExecutor, target: &Resolved) -> Result<(), RunError> {
    if let JobRuntime::Native { venv: Some(venv) } = &target.runtime {
        let script = format!(
            "test -x {}/bin/{}",
            shell_path(venv.trim_end_matches('/')),
            quote(PROGRAM)
        );
        if executor.probe(&script).await.is_err() {
            return Err(Refusal::NoAxolotl {
                venv: venv.clone(),
                target: target.name.clone(),
                local: false,
            }
            .into());
        }
    }
    Ok(())
}

/// Starts a run: checks, creates `runs/<id>/` with `axolotl.yaml`, the data copies, the
/// plugin and `run.json`, claims the run directory on the target, uploads, starts the
/// job and records the run `running`.
///
/// # Errors
///
/// A [`RunError`]: a refusal before anything was created, or a start error after it (the
/// run is then recorded `failed` with the cause).
#[allow(
    clippy::too_many_lines,
    reason = "one sequence of start steps, read top to bottom"
)]
pub async fn start(
    project: &Project,
    settings: &Settings,
    provenance: &Provenance,
    env: &EnvSnapshot,
    options: &StartOptions,
    events: &Events,
) -> Result<Started, RunError> {
    let (target, inputs, _) = check(project, (settings, env), provenance, options)?;
    let training = training(settings)?;
    if options.keep_pod {
        return Err(Refusal::KeepPodNotRunpod {
            target: target.name.clone(),
        }
        .into());
    }
    warn(settings, events);
    if let Some(pre) = settings.export.pre_tokenizer.as_ref().filter(|pre| {
        settings.export.after_training
            && !crate::gguf::llama::PRE_TOKENIZERS.contains(&pre.as_str())
    }) {
        return Err(Refusal::UnknownPreTokenizer(pre.clone()).into());
    }
    let secrets = job_secrets(settings, env).await?;
    let runs_dir = project.runs_dir();
    std::fs::create_dir_all(&runs_dir).map_err(|source| RunError::Io {
        path: runs_dir.clone(),
        source,
    })?;
    let executor = target::connect(&target, &runs_dir, env).await?;
    check_remote_venv(&executor, &target).await?;
    target::check_engine(&executor, &target.name, &target.runtime).await?;
    super::slurm::check(&executor, &target).await?;
    // A base model still to copy into the run directory is read here, before it is.
    let local_base = local_base_model(project, training, env);
    let linked = in_place(&target);
    let mut read = training.clone();
    if let Some(local) = &local_base {
        read.base_model = local.to_string_lossy().into_owned();
    }
    match super::template::check(
        &executor,
        &target,
        &read,
        local_base.is_some() && !linked,
        &inputs.train,
    )
    .await?
    {
        Decision::Fine => {}
        Decision::Warn(text) => emit(
            events,
            RunEvent::Warning(RunWarning::TemplateDropsReasoning(text)),
        ),
        Decision::Refuse(text) => {
            return Err(RunError::Refused(Refusal::TemplateDropsReasoning(text)));
        }
    }
    let exec = |source| RunError::Exec {
        target: target.name.clone(),
        source: Box::new(source),
    };

    // The ID: a free local directory, then a claim on the target (RUN-2, RUN-3).
    let created = jiff::Timestamp::now();
    let base = id::base_id(&settings.project.name, created);
    let owner = format!("{} {:016x}", std::process::id(), rand::random::<u64>());
    let mut n = 1;
    let (run_id, local_dir, remote_dir) = loop {
        let candidate = id::candidate(&base, n);
        n += 1;
        let local_dir = runs_dir.join(&candidate);
        match std::fs::create_dir(&local_dir) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => {
                return Err(RunError::Io {
                    path: local_dir,
                    source,
                });
            }
        }
        let remote_dir = format!("{}/{candidate}", executor.workdir().trim_end_matches('/'));
        match executor.claim(&remote_dir, &owner).await {
            Ok(true) => break (candidate, local_dir, remote_dir),
            Ok(false) => {
                let _ = std::fs::remove_dir_all(&local_dir);
            }
            Err(error) => {
                let _ = std::fs::remove_dir_all(&local_dir);
                return Err(exec(error));
            }
        }
    };

    let merge = training.merge && training.adapter != AdapterKind::Full;
    let mut record = RunRecord {
        owner,
        container_suffix: Some(container_suffix()),
        resumed_from: options.resume_from.clone(),
        merge,
        ..RunRecord::starting(&run_id, created, &target.name, target.kind, &remote_dir)
    };
    record.save(&runs_dir)?;

    let training = effective(training);
    let settings = Settings {
        training: Some(training.clone()),
        ..settings.clone()
    };
    let result =
        match render(&training, &inputs).and_then(|yaml| prepare(&local_dir, &inputs, &yaml)) {
            Ok(()) => {
                let base = local_base.map(|dir| BaseModel {
                    local: dir,
                    linked,
                    digests: project.state_dir().join(DIGEST_CACHE),
                    events: events.clone(),
                    target: target.name.clone(),
                });
                launch(
                    &executor, &settings, &target, &record, &local_dir, merge, secrets, base,
                )
                .await
            }
            Err(error) => Err(error),
        };
    match result {
        Ok(job) => {
            transitions::started(&mut record, job);
            record.save(&runs_dir)?;
            Ok(Started { record, executor })
        }
        Err(error) => {
            transitions::start_failed(&mut record, &error_chain(&error));
            let _ = record.save(&runs_dir);
            Err(error)
        }
    }
}

/// The warnings of every start.
pub(super) fn warn(settings: &Settings, events: &Events) {
    if settings
        .training
        .as_ref()
        .is_some_and(|t| t.hub_model_id.is_some())
    {
        emit(events, RunEvent::Warning(RunWarning::HubModelIdDeprecated));
    }
    if settings.hub.after_training && settings.hf_token.is_none() {
        emit(events, RunEvent::Warning(RunWarning::HubTokenMissing));
    }
}

/// Writes the start files into the local run directory (RUN-6, RUN-35).
pub(super) fn prepare(local_dir: &Path, inputs: &Inputs, yaml: &str) -> Result<(), RunError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| RunError::Io { path, source }
    };
    write_atomic(&local_dir.join(AXOLOTL_YAML), yaml.as_bytes())?;
    write_atomic(&local_dir.join(PLUGIN_FILE), PLUGIN_SOURCE.as_bytes())?;
    std::fs::copy(&inputs.train, local_dir.join(TRAIN_DATA)).map_err(io(&inputs.train))?;
    if let Some(eval) = &inputs.eval {
        std::fs::copy(eval, local_dir.join(EVAL_DATA)).map_err(io(eval))?;
    }
    if let Some((name, checkpoint)) = &inputs.resume {
        let to = local_dir.join(RESUME_DIR).join(name);
        link_or_copy(checkpoint, &to).map_err(io(&to))?;
    }
    Ok(())
}

/// A local base model to upload into the run directory on the target
/// (`training.upload_base_model`), or to link there on a local target: a symbolic
/// link for a native job, hard links (or copies) for a job in a container, which sees
/// the run directory only.
struct BaseModel {
    /// Its directory here.
    local: PathBuf,
    /// The run directory links to it ([`in_place`]).
    linked: bool,
    /// The project's digest cache file ([`DIGEST_CACHE`]).
    digests: PathBuf,
    /// Where the upload's summary goes before sending.
    events: Events,
    /// The target's name, for messages.
    target: String,
}

impl BaseModel {
    /// Uploads the model into `<remote_dir>/base_model` through the target's blob
    /// cache (issue 21), saying what it sends first, and keeps the local digests.
    async fn upload(&self, executor: &AnyExecutor, remote_dir: &str) -> Result<(), RunError> {
        if matches!(executor, AnyExecutor::Local(_)) {
            let to = Path::new(remote_dir).join(BASE_MODEL_DIR);
            let linked = if self.linked {
                std::os::unix::fs::symlink(&self.local, &to)
            } else {
                link_or_copy(&self.local, &to)
            };
            return linked.map_err(|source| RunError::Io { path: to, source });
        }
        let mut cache = crate::exec::blobs::DigestCache::load(&self.digests);
        let events = &self.events;
        let uploaded = crate::exec::blobs::upload_tree(
            executor,
            &self.local,
            &uploaded_base_model(remote_dir),
            &mut cache,
            |summary| emit(events, RunEvent::Upload(*summary)),
        )
        .await;
        // The digests computed are kept even when the upload failed.
        if let Err(error) = cache.save(&self.digests) {
            tracing::debug!("cannot keep the digest cache: {error:#}");
        }
        let uploaded = uploaded.map_err(|error| RunError::Upload {
            target: self.target.clone(),
            reason: format!(
                "cannot upload the base model `{}`: {error:#}",
                self.local.display()
            ),
        })?;
        if uploaded.copied {
            emit(
                events,
                RunEvent::Warning(RunWarning::BlobsCopied {
                    target: self.target.clone(),
                }),
            );
        }
        Ok(())
    }
}

/// Uploads (SSH) and starts the job.
#[allow(
    clippy::too_many_arguments,
    reason = "the start's pieces, each used once"
)]
async fn launch(
    executor: &AnyExecutor,
    settings: &Settings,
    target: &Resolved,
    record: &RunRecord,
    local_dir: &Path,
    merge: bool,
    secrets: Vec<(String, SecretString)>,
    base: Option<BaseModel>,
) -> Result<crate::exec::JobHandle, RunError> {
    let exec = |source| RunError::Exec {
        target: target.name.clone(),
        source: Box::new(source),
    };
    if target.kind != TargetKind::Local {
        let skip: Vec<String> = NEVER_UPLOADED.iter().map(|s| (*s).to_owned()).collect();
        executor
            .upload(local_dir, &record.dir, &skip)
            .await
            .map_err(exec)?;
    }
    if let Some(base) = &base {
        Box::pin(base.upload(executor, &record.dir)).await?;
    }
    let mut runtime = target.runtime.clone();
    if let crate::exec::JobRuntime::Container { tools_cache, .. } = &mut runtime {
        if settings.export.after_training {
            // The in-job export's llama.cpp, where the container sees it.
            *tools_cache = Some(crate::gguf::tools_dir(
                settings,
                &record.target,
                executor.workdir(),
            ));
        }
    }
    let spec = target::job_spec(record, executor, &runtime, &secrets);
    // EXP-12: the export stage, when `[export] after_training` is set.
    let export = crate::gguf::in_job_stage(
        settings,
        executor.workdir(),
        &crate::gguf::RunFacts {
            id: &record.id,
            dir: &record.dir,
            target: &record.target,
            merge: record.merge,
        },
        &spec,
    );
    let launch = target.launch();
    let job = Stages {
        merge,
        export,
        launch,
    }
    .job(&spec, secrets);
    executor.spawn_job(&job).await.map_err(exec)
}

/// A fresh random suffix for a run's container names (`container_suffix` in
/// `run.json`): 8 lowercase hex digits, valid in Docker and Podman names.
fn container_suffix() -> String {
    format!("{:08x}", rand::random::<u32>())
}

/// An error with its causes, `: `-separated, for `run.json` messages.
#[must_use]
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
#[path = "start_tests.rs"]
mod tests;
