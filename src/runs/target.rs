//! From a `[targets.<name>]` entry to a connected executor and the job's runtime
//! (spec/training.md, TGT-1..TGT-7; spec/config.md, table 2.7).

use std::path::Path;

use secrecy::SecretString;

use super::record::{RunRecord, TargetKind};
use super::{Refusal, RunError};
use crate::config::{EnvSnapshot, Runtime, Settings, SlurmTarget, SshClient, Target};
use crate::env::TimeScale;
use crate::exec::{
    AnyExecutor, DeadlineSignal, Executor as _, JobRuntime, JobSpec, LocalExecutor, Login,
    SlurmExecutor, SlurmOptions, SshDestination, SshExecutor,
};
use crate::train::plugin::SNAPSHOT_REQUEST;

/// Test-suite knob (ENV-5 reserves `OVERBRAINER_TEST_*`): an `ssh` configuration file
/// used instead of `~/.ssh/config` (`ssh -F`), since OpenSSH finds `~` through the
/// password database and not `HOME`.
pub const SSH_CONFIG_VAR: &str = "OVERBRAINER_TEST_SSH_CONFIG";

/// A slurm target's default `workdir`, relative to the login node's home.
pub const SLURM_WORKDIR: &str = "overbrainer";

/// Test-suite knob (ENV-5): a slurm target submits without `--signal`, so a job that
/// outlives `max_hours` is killed at its time limit without a snapshot (issue 19,
/// case 6).
pub const SLURM_NO_SIGNAL_VAR: &str = "OVERBRAINER_TEST_SLURM_NO_SIGNAL";

/// The work directory on a Runpod pod, under which its run directory lives.
pub const POD_WORKDIR: &str = "/workspace/runs";

/// A resolved target, not yet connected.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Target name.
    pub name: String,
    /// Its kind.
    pub kind: TargetKind,
    /// How Axolotl runs there (the tools cache is left unset: no export here).
    pub runtime: JobRuntime,
    /// SSH host (`user@host` or an alias), for `ssh` targets.
    pub host: Option<String>,
    /// Remote work directory, for `ssh` targets.
    pub workdir: Option<String>,
    /// The target's keys, for `runpod` targets.
    pub runpod: Option<Box<crate::config::RunpodTarget>>,
    /// The target's keys, for `slurm` targets.
    pub slurm: Option<Box<crate::config::SlurmTarget>>,
    /// GPUs of one machine the train stage uses, a process each: a `local`, `ssh` or
    /// `runpod` target's `gpu_count`; 1 for a slurm target (its launch comes from its
    /// own keys).
    pub gpu_count: u32,
}

impl Resolved {
    /// How the train stage of this target's job launches Axolotl: a slurm target's
    /// `nodes` and `gpus_per_node`; a process per GPU of a `local`, `ssh` or `runpod`
    /// target's `gpu_count` elsewhere (a pod rents that many GPUs).
    #[must_use]
    pub fn launch(&self) -> crate::train::launch::Launch {
        self.slurm.as_ref().map_or_else(
            || crate::train::launch::Launch::one_machine(self.gpu_count),
            |slurm| crate::train::launch::Launch::slurm(slurm.nodes, slurm.gpus_per_node),
        )
    }
}

fn runtime(
    runtime: Runtime,
    venv: Option<&String>,
    engine: crate::config::Engine,
    image: &str,
) -> JobRuntime {
    match runtime {
        Runtime::Native => JobRuntime::Native {
            venv: venv.cloned(),
        },
        Runtime::Docker => JobRuntime::Container {
            engine,
            image: image.to_owned(),
            tools_cache: None,
        },
    }
}

/// Resolves target `name` of `settings`.
///
/// # Errors
///
/// a [`super::Refusal`] for an unknown target, an `ssh` target without its host, or the built-in SSH client (SSH-4).
pub fn resolve(settings: &Settings, name: &str) -> Result<Resolved, RunError> {
    let Some(target) = settings.targets.get(name) else {
        return Err(Refusal::UnknownTarget {
            name: name.to_owned(),
            known: settings.targets.keys().cloned().collect(),
        }
        .into());
    };
    match target {
        Target::Local(local) => Ok(Resolved {
            name: name.to_owned(),
            kind: TargetKind::Local,
            runtime: runtime(
                local.runtime,
                local.venv.as_ref(),
                local.engine,
                &local.image,
            ),
            host: None,
            workdir: None,
            runpod: None,
            slurm: None,
            gpu_count: local.gpu_count,
        }),
        Target::Ssh(ssh) => {
            if settings.ssh_client_for(target) == Some(SshClient::Builtin) {
                let by = if settings.ssh_client.is_some() {
                    "`OVERBRAINER_SSH_CLIENT`"
                } else {
                    "the target's `ssh_client`"
                };
                return Err(Refusal::BuiltinSsh {
                    target: name.to_owned(),
                    chosen_by: by.to_owned(),
                }
                .into());
            }
            let Some(host) = ssh.host.clone() else {
                return Err(Refusal::NoHost {
                    target: name.to_owned(),
                    variable: crate::config::var_name(&["targets", name, "host"]),
                }
                .into());
            };
            Ok(Resolved {
                name: name.to_owned(),
                kind: TargetKind::Ssh,
                runtime: runtime(ssh.runtime, ssh.venv.as_ref(), ssh.engine, &ssh.image),
                host: Some(host),
                workdir: Some(ssh.workdir.clone()),
                runpod: None,
                slurm: None,
                gpu_count: ssh.gpu_count,
            })
        }
        Target::Runpod(runpod) => Ok(Resolved {
            name: name.to_owned(),
            kind: TargetKind::Runpod,
            runtime: JobRuntime::Native {
                venv: Some(runpod.venv.clone()),
            },
            host: None,
            workdir: Some(POD_WORKDIR.to_owned()),
            runpod: Some(Box::new(runpod.clone())),
            slurm: None,
            gpu_count: runpod.gpu_count,
        }),
        Target::Slurm(slurm) => Ok(Resolved {
            name: name.to_owned(),
            kind: TargetKind::Slurm,
            runtime: runtime(
                slurm.runtime,
                slurm.venv.as_ref(),
                slurm.engine,
                &slurm.image,
            ),
            host: slurm.host.clone(),
            workdir: Some(
                slurm
                    .workdir
                    .clone()
                    .unwrap_or_else(|| SLURM_WORKDIR.to_owned()),
            ),
            runpod: None,
            slurm: Some(Box::new(slurm.clone())),
            gpu_count: 1,
        }),
    }
}

/// Connects to `target`: a [`LocalExecutor`] over `runs_dir`, or an [`SshExecutor`]
/// over one master connection, each on the time scale `env` sets ([`TimeScale`]: the
/// graces of its job scripts, and the follower's rules through
/// [`crate::exec::Executor::time_scale`]).
///
/// # Errors
///
/// [`RunError::Exec`] when the target cannot be reached.
pub async fn connect(
    target: &Resolved,
    runs_dir: &Path,
    env: &EnvSnapshot,
) -> Result<AnyExecutor, RunError> {
    let exec = |source| RunError::Exec {
        target: target.name.clone(),
        source: Box::new(source),
    };
    let scale = TimeScale::from_env(env);
    if target.kind == TargetKind::Runpod {
        // A pod is reached through its run (`runs::pod::connect`), never by name.
        return Err(Refusal::UnknownTarget {
            name: target.name.clone(),
            known: Vec::new(),
        }
        .into());
    }
    if let Some(slurm) = &target.slurm {
        return connect_slurm(target, slurm, env, scale)
            .await
            .map(|slurm| AnyExecutor::Slurm(Box::new(slurm)));
    }
    match (&target.host, &target.workdir) {
        (Some(host), Some(workdir)) => {
            let executor = SshExecutor::connect(ssh_destination(host, env), workdir)
                .await
                .map_err(exec)?;
            Ok(AnyExecutor::Ssh(executor.with_time_scale(scale)))
        }
        _ => Ok(AnyExecutor::Local(
            LocalExecutor::new(runs_dir)
                .map_err(exec)?
                .with_time_scale(scale),
        )),
    }
}

/// The reason the deadline signal's snapshot request carries (the plugin's word).
const DEADLINE_REASON: &str = "deadline";

/// The `sbatch` options of `slurm`; `env` may drop the deadline signal (the test
/// suite's [`SLURM_NO_SIGNAL_VAR`]).
#[must_use]
pub fn slurm_options(slurm: &SlurmTarget, env: &EnvSnapshot) -> SlurmOptions {
    let deadline = env
        .get(SLURM_NO_SIGNAL_VAR)
        .is_none()
        .then(|| DeadlineSignal {
            file: SNAPSHOT_REQUEST.to_owned(),
            content: DEADLINE_REASON.to_owned(),
        });
    SlurmOptions {
        partition: slurm.partition.clone(),
        account: slurm.account.clone(),
        qos: slurm.qos.clone(),
        gpus_per_node: slurm.gpus_per_node,
        nodes: slurm.nodes,
        cpus_per_task: slurm.cpus_per_task,
        mem_gb: slurm.mem_gb,
        max_hours: slurm.max_hours,
        extra_sbatch: slurm.extra_sbatch.clone(),
        deadline,
    }
}

/// Connects to the login node of the slurm target `target`: over SSH when `host` is set, else this
/// machine, whose `workdir` is taken relative to `HOME` when not absolute.
///
/// # Errors
///
/// [`RunError::Exec`] when the login node cannot be reached or the work directory
/// cannot be made.
async fn connect_slurm(
    target: &Resolved,
    slurm: &SlurmTarget,
    env: &EnvSnapshot,
    scale: TimeScale,
) -> Result<SlurmExecutor, RunError> {
    let exec = |source| RunError::Exec {
        target: target.name.clone(),
        source: Box::new(source),
    };
    let workdir = target
        .workdir
        .clone()
        .unwrap_or_else(|| SLURM_WORKDIR.to_owned());
    let login = if let Some(host) = &target.host {
        Login::Ssh(
            SshExecutor::connect(ssh_destination(host, env), &workdir)
                .await
                .map_err(exec)?
                .with_time_scale(scale),
        )
    } else {
        let dir = if workdir.starts_with('/') {
            std::path::PathBuf::from(&workdir)
        } else {
            std::path::Path::new(env.get("HOME").unwrap_or("/")).join(&workdir)
        };
        Login::Local(
            LocalExecutor::new(&dir)
                .map_err(exec)?
                .with_time_scale(scale),
        )
    };
    Ok(SlurmExecutor::new(login, slurm_options(slurm, env)))
}

/// How to reach the SSH host `host`: the test suite's `ssh` configuration when set,
/// and the control socket under the first of `XDG_RUNTIME_DIR`, `TMPDIR` and `/tmp`
/// short enough for it.
pub(super) fn ssh_destination(host: &str, env: &EnvSnapshot) -> SshDestination {
    let mut destination = SshDestination::new(host);
    if let Some(config) = env.get(SSH_CONFIG_VAR) {
        destination.config_file = Some(config.into());
    }
    destination.control_dirs =
        crate::exec::control_dirs(env.get("XDG_RUNTIME_DIR"), env.get("TMPDIR"));
    destination
}

/// The job of `record` on `executor` in `runtime`, with the names of `secrets` and the
/// training job's fixed environment ([`crate::train::job::environment`]).
#[must_use]
pub fn job_spec(
    record: &RunRecord,
    executor: &AnyExecutor,
    runtime: &JobRuntime,
    secrets: &[(String, SecretString)],
) -> JobSpec {
    JobSpec {
        run_id: record.id.clone(),
        container_suffix: record.container_suffix.clone(),
        run_dir: record.dir.clone(),
        hf_home: hf_home(executor),
        runtime: runtime.clone(),
        secret_names: secrets.iter().map(|(name, _)| name.clone()).collect(),
        env: crate::train::job::environment(),
    }
}

/// Checks that a container runtime's engine program is on the target's `PATH`
/// (`command -v`, a read-only probe; for a local target, overbrainer's own `PATH`)
/// before anything of a run is created: a missing engine would otherwise only show
/// as a job that fails at once.
///
/// # Errors
///
/// [`Refusal::NoEngine`] naming the program and the target's `engine` key;
/// [`RunError::Exec`] when the target cannot be asked.
pub async fn check_engine(
    executor: &AnyExecutor,
    target: &str,
    runtime: &JobRuntime,
) -> Result<(), RunError> {
    let JobRuntime::Container { engine, .. } = runtime else {
        return Ok(());
    };
    let program = engine.program();
    let script =
        format!("if command -v {program} >/dev/null 2>&1; then echo found; else echo missing; fi");
    let answer = executor
        .probe(&script)
        .await
        .map_err(|source| RunError::Exec {
            target: target.to_owned(),
            source: Box::new(source),
        })?;
    match String::from_utf8_lossy(&answer).trim() {
        "found" => Ok(()),
        _ => Err(Refusal::NoEngine {
            program: program.to_owned(),
            target: target.to_owned(),
        }
        .into()),
    }
}

/// The target's shared Hugging Face cache (TGT-5): `<workdir>/.hf-cache`, which is
/// `runs/.hf-cache` for a local target.
#[must_use]
pub fn hf_home(executor: &AnyExecutor) -> String {
    format!("{}/.hf-cache", executor.workdir().trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_tmpdir_still_leaves_tmp_for_the_control_socket() {
        let long = format!("/{}", "t".repeat(150));
        let env = EnvSnapshot::from_pairs([("TMPDIR", long.as_str())]);
        let destination = ssh_destination("obtarget", &env);
        assert_eq!(
            destination.control_dirs,
            [
                std::path::PathBuf::from(&long),
                std::path::PathBuf::from("/tmp")
            ]
        );
        let env = EnvSnapshot::from_pairs([("XDG_RUNTIME_DIR", "/run/user/7")]);
        assert_eq!(
            ssh_destination("obtarget", &env).control_dirs[0],
            std::path::Path::new("/run/user/7")
        );
    }

    /// `gpu_count` of a `local`, an `ssh` and a `runpod` target reaches the train stage's
    /// launch (issue 19; a pod rents that many GPUs): two processes through accelerate;
    /// unset, one.
    #[test]
    fn the_gpu_count_of_local_ssh_and_runpod_targets_sets_the_launch() {
        use crate::train::launch::Launch;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(crate::config::FILE_NAME),
            "[project]\nname = \"p\"\n\n[targets.here]\nkind = \"local\"\ngpu_count = 2\n\n\
             [targets.box]\nkind = \"ssh\"\nruntime = \"docker\"\ngpu_count = 2\n\n\
             [targets.pod]\nkind = \"runpod\"\ngpu_types = [\"A\"]\nmax_hours = 1\ngpu_count = 2\n\n\
             [targets.plain]\nkind = \"local\"\n",
        )
        .unwrap();
        let env =
            crate::config::EnvSnapshot::from_pairs([("OVERBRAINER_TARGETS__BOX__HOST", "me@box")]);
        let loaded = crate::config::load(dir.path(), &env, |_, _, _| {}).unwrap();
        for name in ["here", "box", "pod"] {
            let target = resolve(&loaded.settings, name).unwrap();
            assert_eq!(target.gpu_count, 2, "{name}");
            let launch = target.launch();
            assert_eq!(launch, Launch::one_machine(2), "{name}");
            assert_eq!(
                launch.train_args()[2..],
                [
                    "--launcher",
                    "accelerate",
                    "--",
                    "--num_processes",
                    "2",
                    "--num_machines",
                    "1"
                ],
                "{name}"
            );
        }
        let plain = resolve(&loaded.settings, "plain").unwrap();
        assert_eq!(plain.launch(), Launch::default());
    }
}
