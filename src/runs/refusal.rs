//! Why a run flow refuses before anything starts or changes: one variant per refusal,
//! with its data, so a front end can match them (the TUI shows some as dialogs). The
//! message of each names the run, key, file or line and says the fix when known.

use super::record::State;
use crate::exec::JobStatus;
use crate::train::axolotl::{MERGED_DIR, OUTPUT_DIR};

/// A refusal of a run flow; nothing was created or changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The project has no `[training]` section (RUN-10).
    #[error(
        "`overbrainer.toml` has no `[training]` section; add one with `target`, `base_model` and `adapter`"
    )]
    NoTraining,
    /// `data/train.jsonl` is missing or empty (RUN-10).
    #[error(
        "`data/train.jsonl` is missing or empty; run `overbrainer split` (or `overbrainer run`) first"
    )]
    NoTrainData,
    /// A line of a data file is not a chat record.
    #[error(
        "`data/{file}` line {line}: {reason}; fix or remove that line (or rerun `overbrainer split`)"
    )]
    BadDataLine {
        /// File name under `data/`.
        file: String,
        /// Line number, 1-based.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A data file that cannot be read as JSONL.
    #[error("{reason}")]
    BadData {
        /// What is wrong, naming the file.
        reason: String,
    },
    /// The Axolotl settings cannot be rendered or resumed (AXO-*), or eval settings
    /// need eval data that is missing.
    #[error("{reason}")]
    Axolotl {
        /// What is wrong, naming the keys.
        reason: String,
    },
    /// `training.upload_base_model` cannot be honoured: the local directory is missing
    /// or not a directory, or the target cannot take an upload (issue 21).
    #[error("{reason}")]
    BaseModel {
        /// What is wrong, naming the keys and the path.
        reason: String,
    },
    /// `--resume-from` names a run that is not stopped (RUN-35).
    #[error(
        "run `{run_id}` is {}, not stopped: only a run stopped with `train stop` can be resumed",
        state.name()
    )]
    NotStopped {
        /// The run.
        run_id: String,
        /// Its state.
        state: State,
    },
    /// The stopped run's checkpoint was not retrieved (RUN-35).
    #[error(
        "the checkpoint of run `{run_id}` is not in `runs/{run_id}/{OUTPUT_DIR}/{checkpoint}`; `overbrainer train attach {run_id}` retrieves it"
    )]
    CheckpointMissing {
        /// The stopped run.
        run_id: String,
        /// Its checkpoint directory name.
        checkpoint: String,
    },
    /// The stopped run's checkpoint lacks what a resume needs (RUN-36).
    #[error(
        "run `{run_id}` cannot be resumed: its checkpoint `runs/{run_id}/{OUTPUT_DIR}/{checkpoint}` lacks {}; start a new run with `overbrainer train`",
        missing.join(", ")
    )]
    CheckpointIncomplete {
        /// The stopped run.
        run_id: String,
        /// Its checkpoint directory name.
        checkpoint: String,
        /// What it lacks.
        missing: Vec<String>,
    },
    /// Settings that differ from the stopped run's `axolotl.yaml` (RUN-36).
    #[error(
        "cannot resume from run `{run_id}`: {} {} from its `axolotl.yaml`",
        quoted(keys),
        if keys.len() == 1 { "differs" } else { "differ" }
    )]
    ResumeDiffers {
        /// The stopped run.
        run_id: String,
        /// The differing keys.
        keys: Vec<String>,
    },
    /// A native runtime's venv without `bin/axolotl`.
    #[error(
        "the venv `{venv}` of target `{target}` has no `bin/axolotl`; install Axolotl there{} or fix `targets.{target}.venv`",
        if *local { format!(" (`python3 -m venv {venv} && {venv}/bin/pip install axolotl==0.19.0`)") } else { String::new() }
    )]
    NoAxolotl {
        /// The venv.
        venv: String,
        /// Target name.
        target: String,
        /// Whether the target is this machine (the message then says how to install).
        local: bool,
    },
    /// A container runtime whose engine program is not on the target's `PATH`.
    #[error(
        "the container engine `{program}` of target `{target}` is not on its `PATH`; install it there or fix `targets.{target}.engine`"
    )]
    NoEngine {
        /// The engine's program (`docker`, `podman`).
        program: String,
        /// Target name.
        target: String,
    },
    /// `[export] after_training` with an `[export] pre_tokenizer` the pinned llama.cpp
    /// does not know: refused before the run, not after its training (issue 14).
    #[error(
        "`export.pre_tokenizer` = `{0}` is not a pre-tokenizer llama.cpp b11434 knows (`export.after_training` would fail after the training); use one of its names, such as `gpt-2`, `llama-bpe`, `qwen2`"
    )]
    UnknownPreTokenizer(String),
    /// A target name that is not declared.
    #[error(
        "unknown target `{name}`; declared targets: {}",
        if known.is_empty() { "none".to_owned() } else { quoted(known) }
    )]
    UnknownTarget {
        /// The name asked for.
        name: String,
        /// The declared targets.
        known: Vec<String>,
    },
    /// `[export] after_training` for a run on a Runpod target (issue 34).
    #[error(
        "`export.after_training = true` is not run on the Runpod target `{target}`: its pod is deleted once the run is retrieved; set it to false (in `overbrainer.toml`, or `OVERBRAINER_EXPORT__AFTER_TRAINING`) and run `overbrainer export RUN_ID [--target NAME]` after the run: it exports this machine's copy on a `local`, `ssh` or `slurm` target"
    )]
    AfterTrainingOnPod {
        /// The Runpod target.
        target: String,
    },
    /// `--target` of an export or compare names a Runpod target (issue 34).
    #[error(
        "`{job}` does not run on the Runpod target `{target}`: it runs from this machine's copy of the run; choose a `local`, `ssh` or `slurm` target with `--target`"
    )]
    SideJobOnPod {
        /// `export` or `compare`.
        job: String,
        /// The Runpod target named.
        target: String,
    },
    /// An export or compare of a run whose pod is gone, with no target to run on
    /// (issue 34).
    #[error(
        "run `{run_id}` trained on the Runpod target `{target}`, whose pod is gone; `{job}` runs from this machine's copy of the run on another target: {}",
        if choices.is_empty() {
            "declare a `local` target (`[targets.<name>] kind = \"local\"`) or an `ssh` one".to_owned()
        } else {
            format!("name one with `--target NAME` ({})", quoted(choices))
        }
    )]
    NoSideTarget {
        /// `export` or `compare`.
        job: String,
        /// The run.
        run_id: String,
        /// Its Runpod target.
        target: String,
        /// The declared targets it could run on.
        choices: Vec<String>,
    },
    /// The built-in SSH client, which this build lacks (SSH-4).
    #[error(
        "the built-in SSH client, chosen by {chosen_by} for target `{target}`, needs a build with the `builtin-ssh` feature; use `ssh_client = \"openssh\"`"
    )]
    BuiltinSsh {
        /// Target name.
        target: String,
        /// What chose it.
        chosen_by: String,
    },
    /// An `ssh` target without a host.
    #[error("target `{target}` has no host: set `{variable}` in `.env`")]
    NoHost {
        /// Target name.
        target: String,
        /// The variable that sets it.
        variable: String,
    },
    /// A slurm target's `partition` that the cluster's `sinfo` does not list (issue
    /// 19), checked before any job is submitted.
    #[error(
        "`targets.{target}.partition`: the cluster has no partition `{partition}` (sinfo lists: {})",
        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
    )]
    UnknownPartition {
        /// Target name.
        target: String,
        /// The configured partition.
        partition: String,
        /// The partitions `sinfo` lists.
        known: Vec<String>,
    },
    /// `--keep-pod` on a target that is not a Runpod target.
    #[error("`--keep-pod` applies only to Runpod targets; target `{target}` is not one")]
    KeepPodNotRunpod {
        /// Target name.
        target: String,
    },
    /// `pod rm` of an ID absent from `runs/` without `--force` (POD-65).
    #[error(
        "no run `{run_id}` in this project's `runs/` (another checkout may own it); `overbrainer pod rm {run_id} --force` removes its pods anyway"
    )]
    PodRmNotHere {
        /// The ID.
        run_id: String,
    },
    /// `pod rm` of a pod ID (POD-65: it takes the ID of a run, an export or a compare),
    /// with or without `--force`.
    #[error(
        "`{pod}` is a pod ID; `overbrainer pod rm` takes the ID of the pod's run{}; nothing was deleted",
        run.as_ref().map(|r| format!(" (`{r}`)")).unwrap_or_default()
    )]
    PodRmPodId {
        /// The pod ID given.
        pod: String,
        /// The run marker that pod carries, when it carries one.
        run: Option<String>,
    },
    /// `pod rm` of a run still starting its pod, or whose pod is not recorded, without
    /// `--force` (POD-65, POD-66).
    #[error(
        "run `{run_id}` is still starting its pod, or its pod is not recorded; `overbrainer pod rm {run_id} --force` removes its pods and fails the run"
    )]
    PodRmStarting {
        /// The run.
        run_id: String,
    },
    /// A Runpod target without the account's key (POD-4).
    #[error(
        "`{variable}` is not set: a Runpod target needs the account's API key (set it in `.env` or the environment); no pod was created"
    )]
    NoRunpodKey {
        /// The variable.
        variable: String,
    },
    /// `pod ls`/`pod rm` without the account's key (POD-4, POD-64).
    #[error(
        "`{variable}` is not set: listing and deleting pods needs the Runpod account's API key (set it in `.env` or the environment); nothing was deleted"
    )]
    NoRunpodKeyForPods {
        /// The variable.
        variable: String,
    },
    /// A read of the Runpod catalog (`pod gpus` and the other listings, the TUI's
    /// pickers and start preview) without the account's key: nothing is created.
    #[error(
        "`{variable}` is not set: the Runpod catalog is read with the account's API key (set it in `.env`)"
    )]
    NoRunpodKeyForCatalog {
        /// The variable.
        variable: String,
    },
    /// `"auto"` of a Runpod target found nothing to create, or the catalog could not be
    /// read (POD-16).
    #[error("target `{target}`: {reason}; no pod was created")]
    AutoChoice {
        /// Target name.
        target: String,
        /// Why, naming the request.
        reason: String,
    },
    /// POD-21: the Runpod key may not manage account secrets.
    #[error(
        "the Runpod key (OVERBRAINER_RUNPOD__API_KEY) cannot manage account secrets (HTTP {status}): give it read and write access to secrets in the Runpod console; no pod was created"
    )]
    NoSecretsAccess {
        /// HTTP status.
        status: u16,
    },
    /// The run has no job to act on.
    #[error("run `{run_id}` has not started a job")]
    NoJob {
        /// The run.
        run_id: String,
    },
    /// `runs logs` of a run whose `job.log` was not retrieved yet (RUN-45).
    #[error(
        "the log of run `{run_id}` was not retrieved yet; run `overbrainer train attach {run_id}`"
    )]
    LogNotRetrieved {
        /// The run.
        run_id: String,
    },
    /// `train cancel` in a project without `[training]`, which it needs to retrieve the
    /// artifacts (RUN-37).
    #[error(
        "`overbrainer.toml` has no `[training]` section, which `train cancel` needs to retrieve artifacts"
    )]
    NoTrainingForCancel,
    /// `train stop` of a job that is not running (RUN-26).
    #[error(
        "the job of run `{run_id}` is not running ({}); nothing to stop{}",
        status_text(*status),
        if *collected { String::new() } else { format!("; `overbrainer train attach {run_id}` collects it") }
    )]
    NotRunning {
        /// The run.
        run_id: String,
        /// What its job reads.
        status: JobStatus,
        /// Whether the run is already terminal and retrieved.
        collected: bool,
    },
    /// `train cancel` of a run already cancelled (RUN-41).
    #[error("run `{run_id}` already ended as cancelled")]
    AlreadyCancelled {
        /// The run.
        run_id: String,
    },
    /// `train merge` of a run already merged.
    #[error(
        "run `{run_id}` is already merged: the merged model is in `runs/{run_id}/{OUTPUT_DIR}/{MERGED_DIR}`"
    )]
    AlreadyMerged {
        /// The run.
        run_id: String,
    },
    /// `train merge` of a run still starting, pending or running.
    #[error(
        "run `{run_id}` is {}: only a run whose merge failed (`merge_failed`) is merged again; `overbrainer train attach {run_id}` follows it",
        state.name()
    )]
    MergeOfLiveRun {
        /// The run.
        run_id: String,
        /// Its state.
        state: State,
    },
    /// `train merge` of a run whose merge did not fail.
    #[error(
        "run `{run_id}` is {}{}: only a run whose training succeeded and whose merge failed (`merge_failed`) is merged again",
        state.name(),
        if *state == State::Succeeded { " without a merge" } else { "" }
    )]
    NotMergeFailed {
        /// The run.
        run_id: String,
        /// Its state.
        state: State,
    },
    /// The recorded merge job is missing from `run.json`.
    #[error("run `{run_id}` has no merge job")]
    NoMergeJob {
        /// The run.
        run_id: String,
    },
    /// The adapter a merge needs is no longer on the target.
    #[error(
        "the adapter of run `{run_id}` is no longer in `{dir}/{OUTPUT_DIR}` on target `{target}`: the merge needs it there"
    )]
    AdapterGone {
        /// The run.
        run_id: String,
        /// Its run directory on the target.
        dir: String,
        /// Target name.
        target: String,
    },
    /// The run's chat template drops the reasoning its training data holds (TGT-12,
    /// decided by rendering, see [`crate::train::template::decide`]); the text names
    /// the template, the turns and the fix.
    #[error("{0}")]
    TemplateDropsReasoning(String),
    /// The most a training pod may cost, with the spend, passes `budget.max_usd`, or
    /// nothing of it remains (issue 20); the figures are USD as shown.
    #[error(
        "{what}, and with {spent} already spent that passes the cap of {cap} (`budget.max_usd`); no pod was made: raise the cap{hint}"
    )]
    OverBudget {
        /// What passes the cap, as a clause (the most the pod may cost, naming the key).
        what: String,
        /// USD spent.
        spent: String,
        /// The cap.
        cap: String,
        /// `, or pass `--over-budget` ...` where that helps.
        hint: String,
    },
}

/// `` `a`, `b` ``.
fn quoted(names: &[String]) -> String {
    let names: Vec<String> = names.iter().map(|k| format!("`{k}`")).collect();
    names.join(", ")
}

/// How a job's status reads in a sentence.
#[must_use]
pub fn status_text(status: JobStatus) -> String {
    match status {
        JobStatus::Running => "running".into(),
        JobStatus::Exited(code) => format!("it exited with code {code}"),
        JobStatus::Cancelled => "it was cancelled".into(),
        JobStatus::Lost => "it was lost".into(),
    }
}

impl From<Refusal> for super::RunError {
    fn from(refusal: Refusal) -> Self {
        Self::Refused(refusal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_run_key_or_file_and_the_fix() {
        let cases: Vec<(Refusal, &str)> = vec![
            (
                Refusal::NoRunpodKeyForPods {
                    variable: "OVERBRAINER_RUNPOD__API_KEY".into(),
                },
                "`OVERBRAINER_RUNPOD__API_KEY` is not set: listing and deleting pods needs the Runpod account's API key (set it in `.env` or the environment); nothing was deleted",
            ),
            (
                Refusal::ResumeDiffers {
                    run_id: "r_1".into(),
                    keys: vec!["lr".into()],
                },
                "cannot resume from run `r_1`: `lr` differs from its `axolotl.yaml`",
            ),
            (
                Refusal::ResumeDiffers {
                    run_id: "r_1".into(),
                    keys: vec!["lr".into(), "seed".into()],
                },
                "cannot resume from run `r_1`: `lr`, `seed` differ from its `axolotl.yaml`",
            ),
            (
                Refusal::UnknownTarget {
                    name: "gpu".into(),
                    known: vec![],
                },
                "unknown target `gpu`; declared targets: none",
            ),
            (
                Refusal::UnknownTarget {
                    name: "gpu".into(),
                    known: vec!["local".into(), "remote".into()],
                },
                "unknown target `gpu`; declared targets: `local`, `remote`",
            ),
            (
                Refusal::NotRunning {
                    run_id: "r_1".into(),
                    status: JobStatus::Exited(2),
                    collected: false,
                },
                "the job of run `r_1` is not running (it exited with code 2); nothing to stop; `overbrainer train attach r_1` collects it",
            ),
            (
                Refusal::NotRunning {
                    run_id: "r_1".into(),
                    status: JobStatus::Cancelled,
                    collected: true,
                },
                "the job of run `r_1` is not running (it was cancelled); nothing to stop",
            ),
            (
                Refusal::NoAxolotl {
                    venv: "/v".into(),
                    target: "t".into(),
                    local: false,
                },
                "the venv `/v` of target `t` has no `bin/axolotl`; install Axolotl there or fix `targets.t.venv`",
            ),
            (
                Refusal::NoAxolotl {
                    venv: "/v".into(),
                    target: "t".into(),
                    local: true,
                },
                "the venv `/v` of target `t` has no `bin/axolotl`; install Axolotl there (`python3 -m venv /v && /v/bin/pip install axolotl==0.19.0`) or fix `targets.t.venv`",
            ),
            (
                Refusal::NoEngine {
                    program: "podman".into(),
                    target: "t".into(),
                },
                "the container engine `podman` of target `t` is not on its `PATH`; install it there or fix `targets.t.engine`",
            ),
            (
                Refusal::NotMergeFailed {
                    run_id: "r_1".into(),
                    state: State::Succeeded,
                },
                "run `r_1` is succeeded without a merge: only a run whose training succeeded and whose merge failed (`merge_failed`) is merged again",
            ),
        ];
        for (refusal, text) in cases {
            assert_eq!(refusal.to_string(), text, "{refusal:?}");
        }
    }
}
