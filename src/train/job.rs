//! A training job's script (spec/training.md: RUN-15, MPL-2, MPL-6): which stages run
//! and in what order, the command and arguments of each, the `stage` line written
//! before each (in [`super::metrics`]'s format), the rule that skips what follows
//! training once it stopped at a snapshot, and the job's fixed environment.
//!
//! This file decides; the executor layer runs: the script returned here goes to
//! [`JobSpec::job`], which puts the runtime's prelude (a venv's `PATH`, or a container
//! engine's GPU detection) before it, and every stage command is
//! [`exec::stage_command`] of [`PROGRAM`], run natively or wrapped in the container.

use std::fmt::Write as _;

use secrecy::SecretString;

use super::axolotl::{AXOLOTL_YAML, MERGED_DIR, OUTPUT_DIR};
use super::metrics::{METRICS_FILE, Stage};
use super::plugin::SNAPSHOT_FILE;
use crate::exec::{self, JobCommand, JobSpec};

pub use super::axolotl::PROGRAM;

/// The fixed environment of every training job, set here only and given to every
/// command of the job (see [`JobSpec::env`]): Python output unbuffered so `job.log`
/// shows progress as it happens, no Hugging Face telemetry, and no Axolotl telemetry
/// (`AXOLOTL_DO_NOT_TRACK`, Axolotl's `telemetry/manager.py`: without a network its
/// exit waits on the upload). Names and values are plain (never secrets).
pub const JOB_ENV: &[(&str, &str)] = &[
    ("PYTHONUNBUFFERED", "1"),
    ("HF_HUB_DISABLE_TELEMETRY", "1"),
    ("AXOLOTL_DO_NOT_TRACK", "1"),
];

/// [`JOB_ENV`] as owned pairs, for [`JobSpec::env`].
#[must_use]
pub fn environment() -> Vec<(String, String)> {
    JOB_ENV
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

/// The stages of a training job after `axolotl train axolotl.yaml` (RUN-15).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stages {
    /// Run `axolotl merge-lora axolotl.yaml` after training (`merge = true` with a
    /// LoRA or QLoRA adapter).
    pub merge: bool,
    /// POSIX shell commands of the GGUF export (EXP-12), run last in the run
    /// directory; `None` when `[export] after_training` is off.
    pub export: Option<String>,
    /// How the train stage launches Axolotl: one process, or several through
    /// accelerate (a Slurm target's `nodes` and `gpus_per_node`, issue 19).
    pub launch: super::launch::Launch,
}

impl Stages {
    /// The job's script, without the runtime's prelude: before each stage a `stage`
    /// line (`{"kind":"stage","stage":"<name>","ts":<unix seconds>}`, MPL-2) is
    /// appended to `metrics.jsonl`, then the stage runs; the first failing command
    /// ends the job with its exit code. When training stopped at a snapshot
    /// (`snapshot.json` exists, MPL-6) the merge and the export are skipped.
    #[must_use]
    pub fn script(&self, spec: &JobSpec) -> String {
        let mut script = format!("set -e\nmkdir -p {OUTPUT_DIR}\n");
        script.push_str(&stage_line(Stage::Train));
        script.push_str(&self.launch.train_command(spec));
        script.push('\n');
        if self.merge || self.export.is_some() {
            let _ = writeln!(script, "if [ ! -e {SNAPSHOT_FILE} ]; then");
            if self.merge {
                script.push_str(&stage_line(Stage::Merge));
                script.push_str(&merge_command(spec));
                script.push('\n');
            }
            if let Some(export) = &self.export {
                script.push_str(&stage_line(Stage::Export));
                script.push_str(export);
                script.push('\n');
            }
            script.push_str("fi\n");
        }
        script
    }

    /// The [`JobCommand`] of the training job of `spec` with `secrets`: the runtime's
    /// prelude and [`Stages::script`], rendered once.
    #[must_use]
    pub fn job(&self, spec: &JobSpec, secrets: Vec<(String, SecretString)>) -> JobCommand {
        spec.job(&self.script(spec), secrets)
    }
}

/// The command of the merge stage: `axolotl merge-lora axolotl.yaml`.
fn merge_command(spec: &JobSpec) -> String {
    exec::stage_command(spec, PROGRAM, &["merge-lora", AXOLOTL_YAML])
}

/// The script of a `train merge` job, run in its `merge-<n>/` directory inside the run
/// directory (without the runtime's prelude): back to the run directory, the failed
/// merge's partial `output/merged/` removed, then the merge stage's command alone.
#[must_use]
pub fn merge_script(spec: &JobSpec) -> String {
    let mut script = String::from("cd .. || exit 1\nset -e\n");
    let _ = writeln!(script, "rm -rf {OUTPUT_DIR}/{MERGED_DIR}");
    script.push_str(&merge_command(spec));
    script.push('\n');
    script
}

/// The shell command appending the `stage` line of `stage` to `metrics.jsonl`.
fn stage_line(stage: Stage) -> String {
    format!(
        "printf '{{\"kind\":\"stage\",\"stage\":\"{}\",\"ts\":%s}}\\n' \"$(date +%s)\" >> {METRICS_FILE}\n",
        stage.name()
    )
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]
mod tests {
    use super::*;
    use crate::config::Engine;
    use crate::exec::JobRuntime;
    use crate::train::metrics::MetricLine;

    fn native(dir: &str, venv: Option<&str>) -> JobSpec {
        JobSpec {
            run_id: "r1".into(),
            container_suffix: None,
            run_dir: dir.into(),
            hf_home: format!("{dir}/hf"),
            runtime: JobRuntime::Native {
                venv: venv.map(Into::into),
            },
            secret_names: Vec::new(),
            env: environment(),
        }
    }

    #[test]
    fn the_job_script_sets_the_runtime_environment_then_the_stages() {
        let spec = native("/w/r", Some("/opt/venv/"));
        let job = Stages {
            merge: true,
            export: None,
            ..Stages::default()
        }
        .job(&spec, Vec::new());
        let script = &job.script;
        assert!(
            script.starts_with("PATH='/opt/venv'/bin:\"$PATH\"; export PATH\n"),
            "{script}"
        );
        assert!(
            script.contains("AXOLOTL_DO_NOT_TRACK='1'; export AXOLOTL_DO_NOT_TRACK\n"),
            "{script}"
        );
        assert!(
            script.contains("'/opt/venv'/bin/'axolotl' 'train' 'axolotl.yaml'"),
            "{script}"
        );
        assert!(script.contains("merge-lora"), "{script}");
        assert_eq!(job.dir, "/w/r");
        assert!(job.container.is_none());
        assert!(!Stages::default().script(&spec).contains("merge-lora"));
    }

    /// The fixed environment is set in one place and reaches the commands of both
    /// runtimes.
    #[test]
    fn the_fixed_environment_reaches_every_stage_command() {
        let container = JobSpec {
            runtime: JobRuntime::Container {
                engine: Engine::Docker,
                image: "img".into(),
                tools_cache: None,
            },
            ..native("/w/r", None)
        };
        let script = Stages::default().script(&container);
        let native_job = Stages::default().job(&native("/w/r", None), Vec::new());
        for (name, value) in JOB_ENV {
            assert!(script.contains(&format!("-e {name}='{value}'")), "{script}");
            assert!(
                native_job
                    .script
                    .contains(&format!("{name}='{value}'; export {name}\n")),
                "{}",
                native_job.script
            );
        }
    }

    #[test]
    fn the_job_script_writes_stage_lines_and_skips_after_a_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("venv/bin");
        std::fs::create_dir_all(&bin).unwrap();
        let axolotl = bin.join("axolotl");
        std::fs::write(
            &axolotl,
            "#!/bin/sh\necho \"$@ $AXOLOTL_DO_NOT_TRACK\" >> calls\n",
        )
        .unwrap();
        std::fs::set_permissions(
            &axolotl,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let root = dir.path().to_string_lossy().into_owned();
        let venv = dir.path().join("venv").to_string_lossy().into_owned();
        let spec = native(&root, Some(&venv));
        let stages = Stages {
            merge: true,
            export: Some("echo exported >> calls".into()),
            ..Stages::default()
        };
        let run = |script: &str| {
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(dir.path())
                .status()
                .unwrap();
            assert!(status.success());
        };
        run(&stages.job(&spec, Vec::new()).script);
        let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
        assert_eq!(
            calls,
            "train axolotl.yaml 1\nmerge-lora axolotl.yaml 1\nexported\n"
        );
        let metrics = std::fs::read_to_string(dir.path().join(METRICS_FILE)).unwrap();
        let stages_seen: Vec<Stage> = metrics
            .lines()
            .map(
                |line| match serde_json::from_str::<MetricLine>(line).unwrap() {
                    MetricLine::Stage { stage, ts } => {
                        assert!(ts > 0.0, "{line}");
                        stage
                    }
                    other => panic!("{other:?}"),
                },
            )
            .collect();
        assert_eq!(stages_seen, [Stage::Train, Stage::Merge, Stage::Export]);
        assert!(dir.path().join(OUTPUT_DIR).is_dir());
        std::fs::write(dir.path().join(SNAPSHOT_FILE), "{}").unwrap();
        std::fs::remove_file(dir.path().join("calls")).unwrap();
        run(&stages.job(&spec, Vec::new()).script);
        let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
        assert_eq!(calls, "train axolotl.yaml 1\n");
    }

    #[test]
    fn the_merge_script_runs_merge_lora_alone_in_the_run_directory() {
        let spec = native("/w/r_1", Some("/opt/venv"));
        let script = spec.job(&merge_script(&spec), Vec::new()).script;
        assert!(script.starts_with("PATH='/opt/venv'/bin"), "{script}");
        assert!(script.contains("PYTHONPATH='/w/r_1'"), "{script}");
        assert!(script.contains("cd .. || exit 1\n"), "{script}");
        assert!(script.contains("rm -rf output/merged\n"), "{script}");
        assert!(
            script.contains("'/opt/venv'/bin/'axolotl' 'merge-lora' 'axolotl.yaml'"),
            "{script}"
        );
        assert!(!script.contains("'train'"), "{script}");
        let at_merge = script.find("merge-lora").unwrap();
        assert!(script.find("rm -rf").unwrap() < at_merge, "{script}");
    }

    /// Issue 9: a `train merge` job in a container defines what its stage command
    /// calls (`ob_engine_failed`, the GPU flags): the runtime's prelude comes first.
    #[test]
    fn regression_a_container_merge_job_has_the_container_prelude() {
        let spec = JobSpec {
            runtime: JobRuntime::Container {
                engine: Engine::Podman,
                image: "img".into(),
                tools_cache: None,
            },
            ..native("/w/r_1", None)
        };
        let script = spec.job(&merge_script(&spec), Vec::new()).script;
        let defined = script.find("ob_engine_failed() {").unwrap();
        let used = script.find("|| ob_engine_failed $?").unwrap();
        assert!(defined < used, "{script}");
        crate::exec::shellcheck::assert_passes(&script, "SC2016");
    }

    #[test]
    fn container_job_scripts_pass_shellcheck() {
        for engine in [Engine::Docker, Engine::Podman] {
            let spec = JobSpec {
                runtime: JobRuntime::Container {
                    engine,
                    image: "img".into(),
                    tools_cache: Some("/w/.cache".into()),
                },
                secret_names: vec!["HF_TOKEN".into()],
                ..native("/w/r1", None)
            };
            let stages = Stages {
                merge: true,
                export: Some("echo export".into()),
                ..Stages::default()
            };
            crate::exec::shellcheck::assert_passes(&stages.job(&spec, Vec::new()).script, "SC2016");
        }
    }
}
