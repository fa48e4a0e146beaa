//! Training runs end to end with the real stack: real Axolotl 0.19 on the CPU training the
//! demo's tiny model, the real `overbrainer` binary, a local target and an SSH target
//! served by a real `sshd` on 127.0.0.1 (spec/training.md; issue 4, tests 1..7), plus the
//! refusals before a start. The container runtime on real Podman and Docker is in
//! `training_containers`.
//!
//! The Axolotl venv and the tiny model come from `scripts/training-env.sh` (what `make
//! test` runs first): it builds them once per machine, outside the checkout. Each run is a
//! few optimizer steps so the suite stays within minutes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::sshd::{Options, Sshd};
use crate::util::{TestProject, output_text, poll, signal};

/// How long a run may take to reach an awaited state on this small shared machine.
pub(crate) const DEADLINE: Duration = Duration::from_secs(600);

/// The Axolotl venv and the tiny model, from `scripts/training-env.sh`.
pub(crate) struct TrainingEnv {
    pub(crate) venv: PathBuf,
    pub(crate) model: PathBuf,
}

pub(crate) fn training_env() -> &'static TrainingEnv {
    static ENV: OnceLock<TrainingEnv> = OnceLock::new();
    ENV.get_or_init(|| {
        let text = crate::util::setup_script(
            "training-env.sh",
            "run `make test`, which installs the Axolotl venv",
        );
        let value = |key: &str| crate::util::setup_value(&text, key);
        TrainingEnv {
            venv: value("AXOLOTL_VENV"),
            model: value("TINY_MODEL"),
        }
    })
}

fn current_user() -> String {
    let output = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// A training project: the demo data, a `local` target and, with an `sshd`, a `remote`
/// target reaching it.
pub(crate) struct Training {
    pub(crate) project: TestProject,
    pub(crate) extra_env: Vec<(String, String)>,
    pub(crate) sshd: Option<Sshd>,
}

/// What a training project is made of.
pub(crate) struct Setup<'a> {
    pub(crate) max_steps: u32,
    pub(crate) merge: bool,
    pub(crate) base_model: Option<&'a str>,
    pub(crate) venv: Option<&'a Path>,
    pub(crate) ssh: Option<Options>,
    pub(crate) runtime: &'a str,
    pub(crate) engine: &'a str,
    /// The target's `image`, when set.
    pub(crate) image: Option<&'a str>,
    pub(crate) extra: &'a str,
}

impl Default for Setup<'_> {
    fn default() -> Self {
        Self {
            max_steps: 4,
            merge: true,
            base_model: None,
            venv: None,
            ssh: None,
            runtime: "native",
            engine: "docker",
            image: None,
            extra: "",
        }
    }
}

impl Training {
    pub(crate) fn new(setup: &Setup<'_>) -> Self {
        Self::new_in(setup, TestProject::empty())
    }

    /// The training project a shared fixture made in `root`, its commands given
    /// `extra_env` (no SSH target).
    pub(crate) fn reopen(root: &Path, extra_env: Vec<(String, String)>) -> Self {
        Self {
            project: TestProject::at(root),
            extra_env,
            sshd: None,
        }
    }

    /// A training project made in `project` (a shared fixture's directory, for one).
    pub(crate) fn new_in(setup: &Setup<'_>, project: TestProject) -> Self {
        let env = training_env();
        let model = setup
            .base_model
            .map_or_else(|| env.model.to_string_lossy().into_owned(), str::to_owned);
        let venv = setup
            .venv
            .unwrap_or(&env.venv)
            .to_string_lossy()
            .into_owned();
        let mut config = format!(
            r#"[project]
name = "tiny test"

[training]
target = "local"
base_model = "{model}"
adapter = "lora"
epochs = 1
learning_rate = 1e-3
lora_r = 4
lora_alpha = 8
sequence_len = 256
micro_batch_size = 8
gradient_accumulation_steps = 1
optimizer = "adamw_torch"
sample_packing = false
evals_per_epoch = 1
saves_per_epoch = 1
merge = {merge}

[training.axolotl_extra]
max_steps = {max_steps}
# A data set of a few hundred examples: one process prepares it faster than a pool.
dataset_num_proc = 1
bf16 = false
fp16 = false
tf32 = false
lora_mlp_kernel = false
lora_qkv_kernel = false
lora_o_kernel = false
{extra}
[targets.local]
kind = "local"
runtime = "{runtime}"
venv = "{venv}"
engine = "{engine}"
{image}"#,
            merge = setup.merge,
            max_steps = setup.max_steps,
            runtime = setup.runtime,
            engine = setup.engine,
            image = setup
                .image
                .map_or_else(String::new, |image| format!("image = \"{image}\"\n")),
            extra = setup.extra,
        );
        let mut extra_env = Vec::new();
        let sshd = setup.ssh.as_ref().map(|options| {
            let sshd = Sshd::start_with(options);
            let workdir = project.home().join("remote-work");
            std::fs::create_dir_all(&workdir).unwrap();
            let _ = write!(
                config,
                "\n[targets.remote]\nkind = \"ssh\"\nruntime = \"native\"\nvenv = \"{venv}\"\nworkdir = \"{}\"\n",
                workdir.display()
            );
            let ssh_config = project.home().join("ssh_config");
            std::fs::write(
                &ssh_config,
                format!(
                    "Host obtarget\n  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {dir}/client_key\n  IdentitiesOnly yes\n  UserKnownHostsFile {dir}/known_hosts\n  BatchMode yes\n  LogLevel ERROR\n",
                    sshd.port(),
                    current_user(),
                    dir = sshd.dir().display()
                ),
            )
            .unwrap();
            extra_env.push((
                "OVERBRAINER_TEST_SSH_CONFIG".to_owned(),
                ssh_config.to_string_lossy().into_owned(),
            ));
            extra_env.push((
                "OVERBRAINER_TARGETS__REMOTE__HOST".to_owned(),
                "obtarget".to_owned(),
            ));
            sshd
        });
        project.write("overbrainer.toml", &config);
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/data");
        for name in ["train.jsonl", "eval.jsonl"] {
            project.write(
                &format!("data/{name}"),
                &std::fs::read_to_string(data.join(name)).unwrap(),
            );
        }
        Self {
            project,
            extra_env,
            sshd,
        }
    }

    /// `overbrainer -C <project>` for a CPU run.
    pub(crate) fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = self.project.cmd();
        cmd.env("CUDA_VISIBLE_DEVICES", "")
            .env("HF_HUB_OFFLINE", "1")
            .timeout(DEADLINE);
        for (key, value) in &self.extra_env {
            cmd.env(key, value);
        }
        cmd
    }

    /// The same command as a background process.
    pub(crate) fn spawn(&self, args: &[&str]) -> Child {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_overbrainer"));
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.project.home())
            .env("CUDA_VISIBLE_DEVICES", "")
            .env("HF_HUB_OFFLINE", "1")
            .arg("-C")
            .arg(self.project.path())
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.extra_env {
            cmd.env(key, value);
        }
        let child = cmd.spawn().expect("spawn overbrainer");
        // The test polls while nobody reads the output until [`finish`]: give each pipe
        // the most the kernel allows (1 MiB by default, not 64 KiB), so a talkative
        // command does not block on a full pipe while the test waits for it.
        for fd in [
            child.stdout.as_ref().map(std::os::fd::AsFd::as_fd),
            child.stderr.as_ref().map(std::os::fd::AsFd::as_fd),
        ]
        .into_iter()
        .flatten()
        {
            let _ = rustix::pipe::fcntl_setpipe_size(fd, 1 << 20);
        }
        child
    }

    pub(crate) fn runs(&self) -> PathBuf {
        self.project.path().join("runs")
    }

    /// IDs of the runs, sorted.
    pub(crate) fn run_ids(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.runs()) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join("run.json").exists())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        ids.sort();
        ids
    }

    pub(crate) fn record(&self, id: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(self.runs().join(id).join("run.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// Waits for the only run to be recorded `running` with a job.
    pub(crate) fn wait_running(&self, child: &mut Child) -> String {
        poll(DEADLINE, "a running run", || {
            if let Some(id) = self.run_ids().into_iter().next() {
                let record = self.record(&id);
                if record["state"] == "running" && !record["job"].is_null() {
                    return Ok(id);
                }
            }
            if let Ok(Some(status)) = child.try_wait() {
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                panic!("train ended early ({status}): {stderr}");
            }
            Err("no run recorded running yet")
        })
    }
}

/// Waits for a background command (at most [`DEADLINE`]) and returns its output.
pub(crate) fn finish(child: Child) -> std::process::Output {
    crate::util::wait_output(child, DEADLINE, "a background overbrainer command")
}

pub(crate) fn assert_file(path: &Path) {
    assert!(path.is_file(), "missing {}", path.display());
}

pub(crate) fn assert_merged_run(training: &Training, id: &str) {
    assert_trained_run(training, id);
    let run = training.runs().join(id);
    assert_file(&run.join("output/merged/model.safetensors"));
    assert_file(&run.join("output/merged/config.json"));
}

/// A run that succeeded and came back: its adapter, metrics and log in place, retrieved,
/// with a last loss.
pub(crate) fn assert_trained_run(training: &Training, id: &str) {
    let run = training.runs().join(id);
    assert_file(&run.join("output/adapter_model.safetensors"));
    assert_file(&run.join("output/adapter_config.json"));
    assert_file(&run.join("metrics.jsonl"));
    assert_file(&run.join("job.log"));
    let record = training.record(id);
    assert_eq!(record["state"], "succeeded", "{record}");
    assert_eq!(record["retrieved"], true, "{record}");
    assert!(record["last_loss"].is_f64(), "{record}");
}

/// Whether a process group still has a live member; zombies, which a cancel leaves
/// to be reaped by their parent or `init`, do not count.
pub(crate) fn group_alive(pid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.len() >= 3 && fields[0] != "Z" && fields[2] == pid.to_string()
    })
}

// Issue 4, test 1.
#[test]
fn a_local_native_run_with_merge_succeeds() {
    // The shared default run (trained once per test run, see `crate::fixtures`): its
    // `train` succeeded (the fixture checks its status), and the checks below read what
    // it printed and a copy of its project, so the `runs` commands leave the shared one
    // as it was.
    let shared = crate::fixtures::local_run();
    let (training, _) = crate::fixtures::copy();
    let ids = training.run_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let id = &ids[0];
    assert_eq!(id, &shared.id);
    assert!(id.starts_with("tiny_test_"), "{id}");
    assert_merged_run(&training, id);
    let stdout = &shared.stdout;
    assert!(
        stdout.contains(&format!("train: {id} succeeded step 4/4")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("runs/{id}/output/merged")),
        "{stdout}"
    );
    let stderr = &shared.stderr;
    for phase in [
        "train: training",
        "train: merging adapter",
        "train: retrieving results",
        "train: system ",
    ] {
        assert!(stderr.contains(phase), "{phase}: {stderr}");
    }
    // The YAML kept as written; the plugin and the data copies in the run directory.
    let run = training.runs().join(id);
    assert!(
        std::fs::read_to_string(run.join("axolotl.yaml"))
            .unwrap()
            .contains("overbrainer_metrics.MetricsPlugin")
    );
    assert_file(&run.join("overbrainer_metrics.py"));
    assert_file(&run.join("train.jsonl"));
    let ls = training.cmd().args(["runs", "ls"]).output().unwrap();
    let ls_text = String::from_utf8_lossy(&ls.stdout);
    let row = ls_text
        .lines()
        .find(|l| l.starts_with(id.as_str()))
        .unwrap_or_else(|| panic!("{ls_text}"));
    assert!(row.contains("succeeded"), "{row}");
    let loss = training.record(id)["last_loss"].as_f64().unwrap();
    assert!(row.contains(&format!("{loss:.4}")), "{row}");
    let job_log = training
        .cmd()
        .args(["runs", "logs", id, "--tail", "2"])
        .output()
        .unwrap();
    assert!(job_log.status.success());
    assert_eq!(String::from_utf8_lossy(&job_log.stdout).lines().count(), 2);
}

// Issue 4, test 2.
#[test]
fn an_ssh_run_with_merge_succeeds() {
    // The shared SSH run (`train --target remote`, trained once per test run, see
    // `crate::fixtures`; the fixture checks that `train` succeeded), copied with its
    // run directory on the target.
    let (training, _) = crate::fixtures::ssh_copy();
    let ids = training.run_ids();
    let id = &ids[0];
    assert_merged_run(&training, id);
    assert_eq!(training.record(id)["target_kind"], "ssh");
    // Intermediate checkpoints stay on the target.
    let local_output = training.runs().join(id).join("output");
    assert!(
        !std::fs::read_dir(&local_output).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("checkpoint-")),
        "a checkpoint came back"
    );
    let remote = training.project.home().join("remote-work").join(id);
    assert!(remote.join("output/merged/model.safetensors").is_file());
}

// Issue 4, test 3.
#[test]
fn a_stopped_run_resumes_on_the_other_target() {
    let training = Training::new(&Setup {
        max_steps: 6,
        ssh: Some(Options::default()),
        ..Setup::default()
    });
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    // The follower holds the project: `train stop` only places the request (RUN-33).
    let stop = training
        .cmd()
        .args(["train", "stop", &id])
        .output()
        .unwrap();
    assert!(stop.status.success(), "{}", output_text(&stop));
    assert!(String::from_utf8_lossy(&stop.stdout).contains("snapshot requested"));
    let output = finish(follower);
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    let record = training.record(&id);
    assert_eq!(record["state"], "stopped", "{record}\n{text}");
    let snapshot_step = record["snapshot"]["step"].as_u64().unwrap();
    let checkpoint = record["snapshot"]["checkpoint"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(checkpoint, format!("checkpoint-{snapshot_step}"));
    assert_eq!(record["snapshot"]["reason"], "requested");
    assert!(snapshot_step < 6, "{record}");
    let run = training.runs().join(&id);
    assert_file(&run.join(format!("output/{checkpoint}/optimizer.pt")));
    assert!(
        !run.join("output/merged").exists(),
        "a stopped run is not merged"
    );
    assert!(
        text.contains(&format!("overbrainer train --resume-from {id}")),
        "{text}"
    );
    let ls = training.cmd().args(["runs", "ls"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&ls.stdout).contains(&format!("snapshot at step {snapshot_step}"))
    );

    // RUN-36: a setting that may not differ is refused, naming it; nothing is created.
    let config = training.project.read("overbrainer.toml");
    training.project.write(
        "overbrainer.toml",
        &config.replace("learning_rate = 1e-3", "learning_rate = 2e-3"),
    );
    let refused = training
        .cmd()
        .args(["train", "--resume-from", &id])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        output_text(&refused).contains("`learning_rate` differs"),
        "{}",
        output_text(&refused)
    );
    assert_eq!(training.run_ids().len(), 1);
    training.project.write("overbrainer.toml", &config);

    let resumed = training
        .cmd()
        .args(["train", "--resume-from", &id, "--target", "remote"])
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", output_text(&resumed));
    let new_id = training.run_ids().into_iter().find(|i| *i != id).unwrap();
    assert_merged_run(&training, &new_id);
    let record = training.record(&new_id);
    assert_eq!(record["resumed_from"], id.as_str());
    let metrics =
        std::fs::read_to_string(training.runs().join(&new_id).join("metrics.jsonl")).unwrap();
    let steps: Vec<u64> = metrics
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["kind"] == "train")
        .map(|v| v["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps.first().copied(), Some(snapshot_step + 1), "{metrics}");
    assert_eq!(steps.last().copied(), Some(6), "{metrics}");
    assert!(
        std::fs::read_to_string(training.runs().join(&new_id).join("axolotl.yaml"))
            .unwrap()
            .contains(&format!(
                "resume_from_checkpoint: \"./resume/{checkpoint}\""
            ))
    );
}

// Issue 4, test 4.
#[test]
fn a_cancelled_run_leaves_no_process_and_keeps_its_artifacts() {
    let training = Training::new(&Setup {
        max_steps: 400,
        ..Setup::default()
    });
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    let pid = training.record(&id)["job"]["pid"].as_u64().unwrap();
    let pid = u32::try_from(pid).unwrap();
    assert!(group_alive(pid));
    // (A cancel while the follower runs is LCK-9's test below.)
    // Ctrl-C detaches the follower; the job goes on and the cancel, which takes the
    // project lock itself, stops it and records the run.
    assert!(signal(follower.id(), "INT"));
    let output = finish(follower);
    assert_eq!(output.status.code(), Some(130), "{}", output_text(&output));
    assert!(group_alive(pid), "detaching stopped the job");
    let cancel = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    assert!(cancel.status.success(), "{}", output_text(&cancel));
    assert!(String::from_utf8_lossy(&cancel.stdout).contains("cancelled"));
    assert!(!group_alive(pid), "the job's process group is still alive");
    let record = training.record(&id);
    assert_eq!(record["state"], "cancelled", "{record}");
    assert_eq!(record["retrieved"], true, "{record}");
    assert_file(&training.runs().join(&id).join("job.log"));
    // A second cancel changes nothing and says why.
    let again = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(output_text(&again).contains("already ended as cancelled"));
}

// Issue 4, test 5.
#[test]
fn the_job_survives_a_killed_follower_and_attach_collects_it() {
    let training = Training::new(&Setup {
        max_steps: 8,
        ..Setup::default()
    });
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    follower.kill().unwrap(); // SIGKILL
    let _ = follower.wait();
    let pid = u32::try_from(training.record(&id)["job"]["pid"].as_u64().unwrap()).unwrap();
    assert!(group_alive(pid) || training.runs().join(&id).join("exit_code").exists());
    assert_eq!(training.record(&id)["state"], "running");
    // Ctrl-C on a follower detaches it and says how to follow again (RUN-16).
    let attach = training.spawn(&["train", "attach", &id]);
    let lock = training.project.path().join(".overbrainer/lock");
    poll(DEADLINE, "train attach to take the lock", || {
        let holder = std::fs::read_to_string(&lock).unwrap_or_default();
        if holder.trim() == attach.id().to_string() {
            Ok(())
        } else {
            Err(holder)
        }
    });
    assert!(signal(attach.id(), "INT"));
    let output = finish(attach);
    let text = output_text(&output);
    assert_eq!(output.status.code(), Some(130), "{text}");
    assert!(
        text.contains(&format!("overbrainer train attach {id}")),
        "{text}"
    );
    assert_eq!(training.record(&id)["state"], "running");
    let attach = training
        .cmd()
        .args(["train", "attach", &id])
        .output()
        .unwrap();
    assert!(attach.status.success(), "{}", output_text(&attach));
    assert_merged_run(&training, &id);
    // Attaching to a finished run prints its summary again.
    let again = training
        .cmd()
        .args(["train", "attach", &id])
        .output()
        .unwrap();
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("succeeded"));
}

// Issue 4, test 6.
#[test]
fn a_job_that_fails_points_at_its_log() {
    let training = Training::new(&Setup {
        base_model: Some("/nonexistent/base-model"),
        ..Setup::default()
    });
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    let id = &training.run_ids()[0];
    let record = training.record(id);
    assert_eq!(record["state"], "failed", "{record}");
    let message = record["message"].as_str().unwrap();
    assert!(message.contains("exited with code"), "{message}");
    assert!(
        message.contains(&format!("runs/{id}/job.log` lines")),
        "{message}"
    );
    assert!(text.contains(message), "{text}");
    // The lines named hold the error.
    let lines = message.split("lines ").nth(1).unwrap();
    let (first, rest) = lines.split_once('-').unwrap();
    let last: usize = rest.split(':').next().unwrap().parse().unwrap();
    let first: usize = first.parse().unwrap();
    let log = std::fs::read_to_string(training.runs().join(id).join("job.log")).unwrap();
    let named: Vec<&str> = log.lines().skip(first - 1).take(last - first + 1).collect();
    assert!(named.last().unwrap().contains("Error"), "{named:?}");
    // The root cause, not the launcher's re-raise of the child's exit status.
    assert!(
        !named.last().unwrap().contains("CalledProcessError"),
        "{named:?}"
    );
}

#[test]
fn a_job_without_any_metric_line_fails() {
    let fake = tempfile::tempdir().unwrap();
    let bin = fake.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let axolotl = bin.join("axolotl");
    std::fs::write(
        &axolotl,
        "#!/bin/sh\necho \"fake axolotl $*\"\nmkdir -p output/merged\nexit 0\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &axolotl,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let training = Training::new(&Setup {
        venv: Some(fake.path()),
        ..Setup::default()
    });
    let output = training.cmd().arg("train").output().unwrap();
    assert!(!output.status.success(), "{}", output_text(&output));
    let record = training.record(&training.run_ids()[0]);
    assert_eq!(record["state"], "failed", "{record}");
    assert!(
        record["message"]
            .as_str()
            .unwrap()
            .contains("no metric line"),
        "{record}"
    );
}

// Issue 4, test 7.
#[test]
fn a_corrupted_download_is_refused_then_retried_by_attach() {
    // The manifest's hashing tools on the target's PATH (`openssl dgst`, and
    // `sha256sum` where openssl is missing or for odd names), each of which, once,
    // changes `job.log` right after hashing it: the file then differs from the manifest
    // when it is downloaded.
    let tools = tempfile::tempdir().unwrap();
    let marker = tools.path().join("corrupt-once");
    std::fs::write(&marker, "").unwrap();
    crate::util::hash_tools_corrupting_once(tools.path(), &marker, "*job.log");
    let training = Training::new(&Setup {
        merge: false,
        ssh: Some(Options {
            path_prefix: Some(tools.path().to_owned()),
            ..Options::default()
        }),
        ..Setup::default()
    });
    let output = training
        .cmd()
        .args(["train", "--target", "remote"])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(!marker.exists(), "the stand-in never ran: {text}");
    assert!(
        text.contains("does not match the target's manifest"),
        "{text}"
    );
    let id = &training.run_ids()[0];
    let record = training.record(id);
    assert_eq!(record["state"], "running", "{record}");
    assert_eq!(record["retrieved"], false, "{record}");
    assert!(
        record["message"]
            .as_str()
            .unwrap()
            .contains("pending retrieval"),
        "{record}"
    );
    let attach = training
        .cmd()
        .args(["train", "attach", id])
        .output()
        .unwrap();
    assert!(attach.status.success(), "{}", output_text(&attach));
    let record = training.record(id);
    assert_eq!(record["state"], "succeeded", "{record}");
    assert_eq!(record["retrieved"], true, "{record}");
    assert!(
        std::fs::read_to_string(training.runs().join(id).join("job.log"))
            .unwrap()
            .ends_with('x')
    );
}

#[test]
fn a_broken_data_line_is_refused_before_a_run_exists() {
    let training = Training::new(&Setup::default());
    let data = training.project.path().join("data");
    let good = std::fs::read_to_string(data.join("train.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    let refused = |expected: &str| {
        let output = training.cmd().arg("train").output().unwrap();
        let text = output_text(&output);
        assert!(!output.status.success(), "{text}");
        assert!(text.contains(expected), "{text}");
        assert!(training.run_ids().is_empty(), "{text}");
    };

    let broken = format!("{first}\n{{not json\n{first}\n");
    std::fs::write(data.join("train.jsonl"), &broken).unwrap();
    refused("`data/train.jsonl` line 2: key must be a string");
    // Nothing is lost on disk.
    assert_eq!(
        std::fs::read_to_string(data.join("train.jsonl")).unwrap(),
        broken
    );

    std::fs::write(data.join("train.jsonl"), format!("{first}\n[1]\n")).unwrap();
    refused("`data/train.jsonl` line 2: invalid type");

    std::fs::write(data.join("train.jsonl"), &good).unwrap();
    std::fs::write(
        data.join("eval.jsonl"),
        format!("{first}\n{first}\n{{\"messages\": []}}\n"),
    )
    .unwrap();
    refused("`data/eval.jsonl` line 3: `messages` is empty");
}

#[test]
fn bad_input_is_refused_before_anything_starts() {
    let training = Training::new(&Setup::default());
    let refused = |args: &[&str], expected: &str| {
        let output = training.cmd().args(args).output().unwrap();
        let text = output_text(&output);
        assert!(!output.status.success(), "{args:?}: {text}");
        assert!(text.contains(expected), "{args:?}: {text}");
    };
    refused(&["train", "--target", "nope"], "unknown target `nope`");
    refused(
        &["train", "attach", "nope_20260101-000000"],
        "no run `nope_20260101-000000`",
    );
    refused(&["train", "stop", "a/b"], "`a/b` is not a run ID");
    refused(&["train", "cancel", ".."], "`..` is not a run ID");
    refused(&["runs", "logs", "x/y"], "`x/y` is not a run ID");
    refused(&["train", "--resume-from", "nope_1"], "no run `nope_1`");
    refused(&["train", "--keep-pod"], "only to Runpod targets");
    assert!(training.run_ids().is_empty());
    assert!(
        !training.runs().exists()
            || std::fs::read_dir(training.runs()).unwrap().all(|e| e
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.'))
    );

    std::fs::remove_file(training.project.path().join("data/train.jsonl")).unwrap();
    refused(&["train"], "`data/train.jsonl` is missing");
    assert!(training.run_ids().is_empty());

    let empty_venv = tempfile::tempdir().unwrap();
    let training = Training::new(&Setup {
        venv: Some(empty_venv.path()),
        ..Setup::default()
    });
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    assert!(!output.status.success());
    assert!(text.contains("has no `bin/axolotl`"), "{text}");
    assert!(training.run_ids().is_empty());

    let training = Training::new(&Setup {
        extra: "output_dir = \"elsewhere\"\n",
        ..Setup::default()
    });
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    assert!(!output.status.success());
    assert!(text.contains("training.axolotl_extra.output_dir"), "{text}");
    assert!(training.run_ids().is_empty());
}

#[test]
fn eval_settings_without_eval_data_are_refused_at_config_check_and_train() {
    let training = Training::new(&Setup {
        extra: "eval_steps = 2\n",
        ..Setup::default()
    });
    // Without `evals_per_epoch` set: `eval_steps` replaces its default (AXO-7).
    let config = training.project.read("overbrainer.toml");
    let without_per_epoch = config.replace("evals_per_epoch = 1\n", "");
    assert_ne!(config, without_per_epoch);
    training
        .project
        .write("overbrainer.toml", &without_per_epoch);
    let eval = training.project.path().join("data/eval.jsonl");
    std::fs::write(&eval, "").unwrap();
    // `config check` and `train` both refuse, saying all of `expected`, and start nothing.
    let refused = |expected: &[&str]| {
        for args in [&["config", "check"][..], &["train"][..]] {
            let output = training.cmd().args(args).output().unwrap();
            let text = output_text(&output);
            assert!(!output.status.success(), "{args:?}: {text}");
            for part in expected {
                assert!(text.contains(part), "{args:?}: {part} not in {text}");
            }
            assert!(output.stdout.is_empty(), "{args:?}: {text}");
        }
        assert!(training.run_ids().is_empty());
    };
    refused(&[
        "`training.axolotl_extra.eval_steps` needs eval data",
        "`data/eval.jsonl`",
    ]);
    // With eval data the same settings pass `config check`...
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/data/eval.jsonl"),
        &eval,
    )
    .unwrap();
    let output = training.cmd().args(["config", "check"]).output().unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    // ...but not the `evals_per_epoch` set beside it, which Axolotl refuses with it.
    training.project.write("overbrainer.toml", &config);
    refused(&[
        "`training.axolotl_extra.eval_steps`: cannot be used with `training.evals_per_epoch`",
    ]);
    // Issue 32: a set `evals_per_epoch` alone needs eval data too (its default does not).
    training
        .project
        .write("overbrainer.toml", &config.replace("eval_steps = 2\n", ""));
    std::fs::write(&eval, "").unwrap();
    refused(&[
        "`training.evals_per_epoch` needs eval data, and `data/eval.jsonl` is missing or empty",
    ]);
}

/// A venv whose `bin/axolotl` plays a short training in the run directory: a metric
/// line and an adapter, then it waits until `release` exists (so a test decides when
/// the job ends). Returns the venv directory.
fn held_venv(dir: &Path, release: &Path) -> PathBuf {
    let venv = dir.join("venv");
    let bin = venv.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        r#"#!/bin/sh
case "$1" in
  train)
    mkdir -p output
    printf '{{"kind":"train","ts":1,"step":1,"max_steps":1,"epoch":1.0,"loss":1.5,"learning_rate":0.001,"grad_norm":1.0}}\n{{"kind":"end","ts":2,"step":1}}\n' >> metrics.jsonl
    echo adapter > output/adapter_model.safetensors
    while [ ! -e '{release}' ]; do sleep 0.05; done ;;
esac
exit 0
"#,
        release = release.display()
    );
    let axolotl = bin.join("axolotl");
    std::fs::write(&axolotl, script).unwrap();
    std::fs::set_permissions(
        &axolotl,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    venv
}

/// Polls `condition` until it holds, failing after [`DEADLINE`].
pub(crate) fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    poll(DEADLINE, what, || {
        if condition() { Ok(()) } else { Err("not yet") }
    });
}

/// A run whose job is left running with no follower (the follower was killed).
fn an_unfollowed_job(training: &Training) -> (String, u32) {
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    follower.kill().unwrap(); // SIGKILL: no detach, the lock goes with the process
    let _ = follower.wait();
    let pid = u32::try_from(training.record(&id)["job"]["pid"].as_u64().unwrap()).unwrap();
    (id, pid)
}

// RUN-40, RUN-38: a cancel never marks a job that had already ended as cancelled.
#[test]
fn a_cancel_of_a_job_that_already_ended_leaves_the_run_as_it_is() {
    let fake = tempfile::tempdir().unwrap();
    let release = fake.path().join("release");
    let venv = held_venv(fake.path(), &release);
    let training = Training::new(&Setup {
        merge: false,
        venv: Some(&venv),
        ..Setup::default()
    });
    let (id, _) = an_unfollowed_job(&training);
    // The job ends while nobody follows it: the record still says `running`.
    std::fs::write(&release, "").unwrap();
    let exit_code = training.runs().join(&id).join("exit_code");
    wait_for("the job's exit code", || exit_code.exists());
    let before = std::fs::read(training.runs().join(&id).join("run.json")).unwrap();
    let cancel = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    let text = output_text(&cancel);
    assert!(!cancel.status.success(), "{text}");
    assert!(text.contains("had already ended"), "{text}");
    assert!(text.contains("not signalled"), "{text}");
    assert!(
        text.contains(&format!("overbrainer train attach {id}")),
        "{text}"
    );
    assert_eq!(
        std::fs::read(training.runs().join(&id).join("run.json")).unwrap(),
        before,
        "the cancel changed run.json"
    );
    // `train attach` collects it as it ended.
    let attach = training
        .cmd()
        .args(["train", "attach", &id])
        .output()
        .unwrap();
    assert!(attach.status.success(), "{}", output_text(&attach));
    assert_eq!(training.record(&id)["state"], "succeeded");
    // A cancel of the recorded, finished run says it already ended, then leaves it.
    let again = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    let text = output_text(&again);
    assert!(!again.status.success(), "{text}");
    assert!(text.contains("already ended as succeeded"), "{text}");
    let record = training.record(&id);
    assert_eq!(record["state"], "succeeded", "{record}");
    assert_eq!(record["retrieved"], true, "{record}");
}

// LCK-9: `train cancel` from another terminal while a follower holds the project
// cancels the job on the target; the follower sees it cancelled, retrieves and records.
#[test]
fn a_cancel_from_another_terminal_stops_the_job_and_the_follower_records_it() {
    let fake = tempfile::tempdir().unwrap();
    let release = fake.path().join("never");
    let venv = held_venv(fake.path(), &release);
    let training = Training::new(&Setup {
        merge: false,
        venv: Some(&venv),
        ..Setup::default()
    });
    let mut follower = training.spawn(&["train"]);
    let id = training.wait_running(&mut follower);
    let pid = u32::try_from(training.record(&id)["job"]["pid"].as_u64().unwrap()).unwrap();
    assert!(group_alive(pid));
    let cancel = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    let text = output_text(&cancel);
    assert!(cancel.status.success(), "{text}");
    assert!(
        text.contains(&format!("the job of run {id} was cancelled on the target")),
        "{text}"
    );
    assert!(
        text.contains(&format!("overbrainer process {} follows", follower.id())),
        "{text}"
    );
    assert!(!group_alive(pid), "the job's process group is still alive");
    let output = finish(follower);
    let text = output_text(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(&format!("train: {id} cancelled")),
        "{text}"
    );
    let record = training.record(&id);
    assert_eq!(record["state"], "cancelled", "{record}");
    assert_eq!(record["retrieved"], true, "{record}");
    assert_file(&training.runs().join(&id).join("job.log"));
    assert_file(
        &training
            .runs()
            .join(&id)
            .join("output/adapter_model.safetensors"),
    );
    // A second cancel, without a follower now, changes nothing and says why.
    let again = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert!(output_text(&again).contains("already ended as cancelled"));
}

// LCK-2, LCK-9: a holder of the project that does not follow the run still refuses
// the cancel, which then signals nothing.
#[test]
fn a_cancel_while_a_process_that_does_not_follow_the_run_holds_the_project_is_refused() {
    let fake = tempfile::tempdir().unwrap();
    let release = fake.path().join("never");
    let venv = held_venv(fake.path(), &release);
    let training = Training::new(&Setup {
        merge: false,
        venv: Some(&venv),
        ..Setup::default()
    });
    let (id, pid) = an_unfollowed_job(&training);
    let helper = crate::util::build_dir().join("examples/hold_lock");
    assert!(
        helper.is_file(),
        "{} is missing; `cargo test` builds it (run the whole suite, or `cargo build --examples`)",
        helper.display()
    );
    let mut holder = std::process::Command::new(&helper)
        .arg(training.project.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), format!("locked {}", holder.id()));
    let refused = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    let text = output_text(&refused);
    assert!(!refused.status.success(), "{text}");
    assert!(text.contains(&format!("PID {}", holder.id())), "{text}");
    assert!(
        text.contains(&format!("does not follow run `{id}`")),
        "{text}"
    );
    assert!(group_alive(pid), "a refused cancel stopped the job");
    assert_eq!(training.record(&id)["state"], "running");
    holder.kill().unwrap();
    holder.wait().unwrap();
    let cancel = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    assert!(cancel.status.success(), "{}", output_text(&cancel));
    assert!(!group_alive(pid));
    assert_eq!(training.record(&id)["state"], "cancelled");
}

// Tester defect 4: `train stop` beside a process that holds the project without
// following the run placed the request and said that process records the stop; nobody
// does. It says what becomes of the snapshot and how to retrieve it.
#[test]
fn regression_a_stop_beside_a_holder_that_does_not_follow_says_how_to_get_the_snapshot() {
    let fake = tempfile::tempdir().unwrap();
    let release = fake.path().join("never");
    let venv = held_venv(fake.path(), &release);
    let training = Training::new(&Setup {
        merge: false,
        venv: Some(&venv),
        ..Setup::default()
    });
    let (id, pid) = an_unfollowed_job(&training);
    let helper = crate::util::build_dir().join("examples/hold_lock");
    assert!(
        helper.is_file(),
        "{} is missing; `cargo test` builds it (run the whole suite, or `cargo build --examples`)",
        helper.display()
    );
    let mut holder = std::process::Command::new(&helper)
        .arg(training.project.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), format!("locked {}", holder.id()));
    let stop = training
        .cmd()
        .args(["train", "stop", &id])
        .output()
        .unwrap();
    let text = output_text(&stop);
    assert!(stop.status.success(), "{text}");
    for part in [
        format!("snapshot requested for run {id}"),
        "the job saves a snapshot checkpoint on the target and ends".to_owned(),
        format!(
            "overbrainer process {} holds the project but does not follow this run",
            holder.id()
        ),
        format!("`overbrainer train attach {id}` retrieves it"),
    ] {
        assert!(text.contains(&part), "`{part}` in: {text}");
    }
    assert!(!text.contains("records the stop\n"), "{text}");
    assert!(
        training.runs().join(&id).join("snapshot.request").exists(),
        "the request was placed"
    );
    holder.kill().unwrap();
    holder.wait().unwrap();
    let cancel = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    assert!(cancel.status.success(), "{}", output_text(&cancel));
    assert!(!group_alive(pid));
}

/// A venv whose `bin/axolotl` plays a short training that starts a worker leaving the
/// job's process group (`setsid`, as some data loaders do), writes its PID to
/// `worker.pid` in the run directory, and waits for ever.
fn worker_venv(dir: &Path) -> PathBuf {
    let venv = dir.join("venv");
    let bin = venv.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = r#"#!/bin/sh
case "$1" in
  train)
    mkdir -p output
    printf '{"kind":"train","ts":1,"step":1,"max_steps":2,"epoch":1.0,"loss":1.5,"learning_rate":0.001,"grad_norm":1.0}\n' >> metrics.jsonl
    echo adapter > output/adapter_model.safetensors
    setsid sleep 300 &
    echo $! > worker.pid.tmp && mv worker.pid.tmp worker.pid
    while :; do sleep 0.05; done ;;
esac
exit 0
"#;
    let axolotl = bin.join("axolotl");
    std::fs::write(&axolotl, script).unwrap();
    std::fs::set_permissions(
        &axolotl,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    venv
}

/// Whether process `pid` lives; a zombie does not.
fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
    })
}

// Issue 8: a process of the job that outlives SIGKILL is named, never a clean cancel;
// a later cancel signals it again and, once it is gone, records a clean cancel.
#[test]
fn a_cancel_that_leaves_a_process_behind_names_it_and_a_second_cancel_stops_it() {
    let fake = tempfile::tempdir().unwrap();
    let venv = worker_venv(fake.path());
    let training = Training::new(&Setup {
        merge: false,
        venv: Some(&venv),
        ..Setup::default()
    });
    let (id, pid) = an_unfollowed_job(&training);
    // A local run's directory is recorded relative to the project.
    let dir = training
        .project
        .path()
        .join(training.record(&id)["dir"].as_str().unwrap());
    let worker_file = dir.join("worker.pid");
    wait_for("the worker", || worker_file.exists());
    let worker: u32 = std::fs::read_to_string(&worker_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let frozen = crate::freezer::Frozen::freeze(worker);
    // The cancel's real graces (10 s after SIGTERM, 10 s after SIGKILL), a tenth as long.
    let cancel = training
        .cmd()
        .env("OVERBRAINER_TEST_SECOND_MS", "100")
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    let text = output_text(&cancel);
    assert!(!cancel.status.success(), "{text}");
    assert!(
        String::from_utf8_lossy(&cancel.stdout)
            .contains(&format!("cancelled with leftovers: {worker}")),
        "{text}"
    );
    assert!(!group_alive(pid), "the job's process group is still alive");
    assert!(process_alive(worker));
    let record = training.record(&id);
    assert_eq!(record["state"], "cancelled", "{record}");
    assert_eq!(record["retrieved"], true, "{record}");
    let message = record["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!("cancelled with leftovers: {worker};")),
        "{record}"
    );
    assert!(
        message.contains(&format!("overbrainer train cancel {id}")),
        "{record}"
    );

    frozen.thaw();
    let again = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    let text = output_text(&again);
    assert!(again.status.success(), "{text}");
    assert!(
        !process_alive(worker),
        "the worker outlived the second cancel"
    );
    let record = training.record(&id);
    assert_eq!(record["state"], "cancelled", "{record}");
    assert_eq!(
        record["message"], "cancelled with `train cancel`",
        "{record}"
    );
    drop(frozen);
}

// RUN-42: a cancel that stopped the job is reported even when run.json cannot be updated.
#[test]
fn a_cancel_that_cannot_update_run_json_is_still_reported() {
    let fake = tempfile::tempdir().unwrap();
    let release = fake.path().join("never");
    let venv = held_venv(fake.path(), &release);
    let training = Training::new(&Setup {
        merge: false,
        venv: Some(&venv),
        ..Setup::default()
    });
    let (id, pid) = an_unfollowed_job(&training);
    assert!(group_alive(pid));
    // The temporary file of run.json's atomic replacement is taken by a directory
    // (holding a file, so it cannot be replaced either): run.json cannot be written,
    // even by root.
    let blocker = training.runs().join(&id).join(".run.json.tmp");
    std::fs::create_dir(&blocker).unwrap();
    std::fs::write(blocker.join("keep"), "").unwrap();
    let cancel = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    let text = output_text(&cancel);
    assert!(cancel.status.success(), "{text}");
    assert!(
        String::from_utf8_lossy(&cancel.stdout).contains(&format!("train: {id} cancelled")),
        "{text}"
    );
    assert!(text.contains("was cancelled on the target"), "{text}");
    assert!(text.contains(&format!("runs/{id}/run.json")), "{text}");
    assert!(text.contains("cannot be updated"), "{text}");
    assert!(!group_alive(pid), "the job's process group is still alive");
    assert_eq!(training.record(&id)["state"], "running");
    // Once the file system lets it, `train attach` records the run cancelled (the job
    // reads cancelled on the target).
    std::fs::remove_dir_all(&blocker).unwrap();
    let attach = training
        .cmd()
        .args(["train", "attach", &id])
        .output()
        .unwrap();
    let text = output_text(&attach);
    let record = training.record(&id);
    assert_eq!(record["state"], "cancelled", "{text} {record}");
    assert_eq!(record["retrieved"], true, "{record}");
}

// RUN-16: six failed reaches in a row detach the follower; the job goes on.
#[test]
fn a_follower_that_cannot_reach_its_target_six_times_detaches() {
    let fake = tempfile::tempdir().unwrap();
    let release = fake.path().join("release");
    let venv = held_venv(fake.path(), &release);
    let mut training = Training::new(&Setup {
        merge: false,
        venv: Some(&venv),
        ssh: Some(Options::default()),
        ..Setup::default()
    });
    let mut follower = training.spawn(&["train", "--target", "remote"]);
    let id = training.wait_running(&mut follower);
    let pid = u32::try_from(training.record(&id)["job"]["pid"].as_u64().unwrap()).unwrap();
    // The server and its connections go: the master drops, every reconnect is refused.
    training.sshd.as_mut().unwrap().kill_with_connections();
    let output = finish(follower);
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    for count in 1..=6 {
        assert!(
            text.contains(&format!("cannot reach target `remote` ({count}/6)")),
            "no warning {count}/6 in {text}"
        );
    }
    assert!(!text.contains("(7/6)"), "{text}");
    assert!(
        text.contains(&format!("overbrainer train attach {id}")),
        "{text}"
    );
    // The job goes on, and ends when let.
    assert!(
        group_alive(pid),
        "the job stopped with its follower: {text}"
    );
    assert_eq!(training.record(&id)["state"], "running");
    std::fs::write(&release, "").unwrap();
    // The job's run directory on the target is on this machine (sshd on 127.0.0.1).
    let dir = training.record(&id)["dir"].as_str().unwrap().to_owned();
    let exit_code = Path::new(&dir).join("exit_code");
    wait_for("the job's exit code", || exit_code.exists());
    assert_eq!(std::fs::read_to_string(&exit_code).unwrap().trim(), "0");
}

/// Reads, with the venv's own Python and `ast` (nothing imported), the names Axolotl
/// 0.19 accepts for `optimizer` and `lr_scheduler` from the venv's source: the string
/// values of `transformers`' `OptimizerNames` and Axolotl's `CustomSupportedOptimizers`,
/// of `transformers`' `SchedulerType` and the `lr_scheduler in [...]` list of Axolotl's
/// trainer builder. Prints `optimizers <names>` and `schedulers <names>`, sorted.
const AXOLOTL_NAMES_PY: &str = r#"
import ast, glob, os, sys
site = glob.glob(os.path.join(sys.argv[1], "lib", "python3*", "site-packages"))[0]
def tree(rel):
    with open(os.path.join(site, rel)) as f:
        return ast.parse(f.read())
def values(rel, cls):
    for node in ast.walk(tree(rel)):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return [n.value.value for n in node.body
                    if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                    and isinstance(n.value.value, str)]
    raise SystemExit(f"no class {cls} in {rel}")
def alternates(rel):
    for node in ast.walk(tree(rel)):
        if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute)
                and node.left.attr == "lr_scheduler" and isinstance(node.ops[0], ast.In)
                and isinstance(node.comparators[0], ast.List)):
            return [e.value for e in node.comparators[0].elts]
    raise SystemExit(f"no `lr_scheduler in [...]` in {rel}")
opt = values("transformers/training_args.py", "OptimizerNames") + values(
    "axolotl/utils/schemas/enums.py", "CustomSupportedOptimizers")
sched = values("transformers/trainer_utils.py", "SchedulerType") + alternates(
    "axolotl/core/builders/base.py")
print("optimizers " + " ".join(sorted(set(opt))))
print("schedulers " + " ".join(sorted(set(sched))))
"#;

// Tester defect 3: the optimizer and scheduler names `config check` accepts are
// exactly those of the Axolotl 0.19 venv the runs use, read from its source.
#[test]
fn the_optimizer_and_scheduler_names_of_train_rules_are_the_axolotl_venvs() {
    let venv = &training_env().venv;
    let python = venv.join("bin/python");
    let output = std::process::Command::new(&python)
        .arg("-c")
        .arg(AXOLOTL_NAMES_PY)
        .arg(venv)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}: run `make training-env`", python.display()));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let names = |prefix: &str| -> Vec<String> {
        text.lines()
            .find_map(|line| line.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in {text}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        names("optimizers "),
        overbrainer::train::rules::AXOLOTL_OPTIMIZERS,
        "train::rules::AXOLOTL_OPTIMIZERS differs from the venv's"
    );
    assert_eq!(
        names("schedulers "),
        overbrainer::train::rules::AXOLOTL_LR_SCHEDULERS,
        "train::rules::AXOLOTL_LR_SCHEDULERS differs from the venv's"
    );
}
