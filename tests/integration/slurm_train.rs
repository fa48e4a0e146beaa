//! Training runs on a `slurm` target with real Axolotl on the CPU inside Slurm jobs of
//! the test's single-node cluster (issue 19, cases 1, 2, 3, 5, 6; issue 33, a queued job
//! is `pending`, never stalled, and the system samples come from the job's node), the login node this machine or the test's `sshd`; and
//! the refusals made before any job (bad `extra_sbatch`, `nodes = 0`, a partition
//! `sinfo` does not list).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use overbrainer::exec::RUN_MARKER_VAR;

use crate::cpu_cap::CpuCap;
use crate::slurm_cluster::cluster;
use crate::sshd::Options;
use crate::training::{DEADLINE, Setup, Training, assert_trained_run, finish, training_env};
use crate::util::{output_text, poll};

/// A training project with a `cluster` target of kind `slurm` (login node: this
/// machine, or the test's `sshd` with `ssh`), whose work directory is `slurm-work` in
/// the test's home; `target` holds further keys of the target.
fn slurm_training(setup: &Setup<'_>, target: &str) -> Training {
    let mut training = Training::new(setup);
    let venv = training_env().venv.display().to_string();
    let workdir = training.project.home().join("slurm-work");
    let mut config = training.project.read("overbrainer.toml");
    let _ = write!(
        config,
        "\n[targets.cluster]\nkind = \"slurm\"\nvenv = \"{venv}\"\nworkdir = \"{}\"\n{target}",
        workdir.display()
    );
    training.project.write("overbrainer.toml", &config);
    training.extra_env.extend(cluster().env());
    if training.sshd.is_some() {
        training.extra_env.push((
            "OVERBRAINER_TARGETS__CLUSTER__HOST".into(),
            "obtarget".into(),
        ));
    }
    training
}

/// Without the merge, which is no Slurm matter and doubles a run's time on this small
/// shared machine.
fn setup() -> Setup<'static> {
    Setup {
        merge: false,
        ..Setup::default()
    }
}

/// The Slurm job ID `run.json` records.
fn slurm_job(training: &Training, id: &str) -> u64 {
    let record = training.record(id);
    record["job"]["slurm_job"]
        .as_u64()
        .unwrap_or_else(|| panic!("no Slurm job ID in {record}"))
}

/// Waits for the only run to be recorded with its Slurm job (it may still be pending).
fn wait_submitted(training: &Training, child: &mut Child) -> String {
    poll(DEADLINE, "a submitted run", || {
        if let Some(id) = training.run_ids().into_iter().next() {
            let record = training.record(&id);
            if record["job"]["slurm_job"].is_u64() {
                return Ok(id);
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("train ended early ({status})");
        }
        Err("no run submitted yet")
    })
}

/// Waits until the job wrote its first training line.
fn wait_training(training: &Training, id: &str) {
    let metrics = training
        .project
        .home()
        .join("slurm-work")
        .join(id)
        .join("metrics.jsonl");
    poll(DEADLINE, "the job's first training line", || {
        let text = std::fs::read_to_string(&metrics).unwrap_or_default();
        let trained = text
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .any(|line| line["kind"] == "train");
        if trained { Ok(()) } else { Err(text) }
    });
}

// Case 1.
#[test]
fn the_demo_trains_on_a_slurm_target_and_comes_back_verified() {
    let _turn = cluster().lock();
    let training = slurm_training(&setup(), "partition = \"debug\"\n");
    let output = training
        .cmd()
        .args(["train", "--target", "cluster"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    let id = &training.run_ids()[0];
    assert_trained_run(&training, id);
    let record = training.record(id);
    assert_eq!(record["target_kind"], "slurm", "{record}");
    assert!(record["job"]["pid"].is_null(), "{record}");
    let job = slurm_job(&training, id);
    assert!(cluster().job(job).contains(&format!("JobName=ob-{id}")));
    let ls = training.cmd().args(["runs", "ls"]).output().unwrap();
    let text = String::from_utf8_lossy(&ls.stdout);
    let line = text
        .lines()
        .find(|line| line.contains(id.as_str()))
        .unwrap_or_default();
    assert!(line.contains("succeeded"), "{text}");
}

// Case 1 through a login node over SSH.
#[test]
fn a_slurm_run_submitted_through_a_login_node_over_ssh_succeeds() {
    let _turn = cluster().lock();
    let training = slurm_training(
        &Setup {
            ssh: Some(Options {
                env: cluster().env(),
                ..Options::default()
            }),
            ..setup()
        },
        "",
    );
    let output = training
        .cmd()
        .args(["train", "--target", "cluster"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    let id = &training.run_ids()[0];
    assert_trained_run(&training, id);
    assert!(slurm_job(&training, id) > 0);
}

// Issue 21: a base model uploaded from the project (`upload_base_model`) through the
// blob cache of the cluster's working directory, which its node reads; the job trains
// on that copy.
#[test]
fn a_slurm_run_trains_on_a_base_model_uploaded_through_the_blob_cache() {
    let _turn = cluster().lock();
    let training = slurm_training(
        &Setup {
            base_model: Some("models/tiny"),
            ..setup()
        },
        "partition = \"debug\"\n",
    );
    crate::upload_train::upload_tiny_model(&training);
    let output = training
        .cmd()
        .args(["train", "--target", "cluster"])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    let (bytes, present, sent) = crate::upload_train::summary(&text);
    assert_eq!((present, sent), (0, bytes), "{text}");
    let id = &training.run_ids()[0];
    assert_trained_run(&training, id);
    let workdir = training.project.home().join("slurm-work");
    let yaml = std::fs::read_to_string(training.runs().join(id).join("axolotl.yaml")).unwrap();
    assert!(yaml.contains("base_model: \"./base_model\""), "{yaml}");
    assert!(
        workdir
            .join(id)
            .join("base_model/model.safetensors")
            .is_file()
    );
}

/// One rule second of the pending test, in milliseconds: one rule minute is 15 s.
const PENDING_SECOND_MS: u64 = 250;

/// The pending test's `training.stall_first_step_minutes`: 90 s on its clock, more than
/// twice what real Axolotl takes here from the job's start to its first step.
const PENDING_FIRST_STEP_MINUTES: u64 = 6;

// Case 2, and issue 33 (defect 1): a job waiting in the queue is no stalled job. The
// node stays drained for longer than the first-step bound under `on_stall = "cancel"`:
// the run is `pending` with the scheduler's reason all that time (`run.json`, `runs
// ls`), never stalled nor cancelled, and once the node is resumed it starts and trains.
#[test]
fn a_run_on_a_drained_node_is_pending_with_the_reason_past_the_stall_bound_and_starts_on_resume() {
    let _turn = cluster().lock();
    let mut training = slurm_training(&setup(), "");
    let config = training.project.read("overbrainer.toml");
    let config = config.replacen(
        "merge = false\n",
        &format!(
            "merge = false\non_stall = \"cancel\"\nstall_first_step_minutes = {PENDING_FIRST_STEP_MINUTES}\n"
        ),
        1,
    );
    assert!(config.contains("on_stall = \"cancel\""), "{config}");
    training.project.write("overbrainer.toml", &config);
    training.extra_env.push((
        "OVERBRAINER_TEST_SECOND_MS".into(),
        PENDING_SECOND_MS.to_string(),
    ));
    let first_step = Duration::from_millis(PENDING_SECOND_MS * 60 * PENDING_FIRST_STEP_MINUTES);
    cluster().command(
        "scontrol",
        &["update", "nodename=localhost", "state=drain", "reason=test"],
    );
    let mut follower = training.spawn(&["train", "--target", "cluster"]);
    let id = wait_submitted(&training, &mut follower);
    let job = slurm_job(&training, &id);
    poll(DEADLINE, "the job to be pending with a reason", || {
        let shown = cluster().job(job);
        if shown.contains("JobState=PENDING") && !shown.contains("Reason=None") {
            Ok(())
        } else {
            Err(shown)
        }
    });
    // The first-step bound and a margin pass while the job waits: never a stall.
    let queued = Instant::now();
    poll(
        DEADLINE,
        "the first-step bound to pass in the queue",
        || {
            let record = training.record(&id);
            assert!(
                record["stalled"].is_null(),
                "a queued job stalled: {record}"
            );
            let state = record["state"].as_str().unwrap_or_default().to_owned();
            // Recorded `pending` from its submission on: never `running` while queued.
            assert_eq!(state, "pending", "the queued run is {state}: {record}");
            if queued.elapsed() > first_step + Duration::from_secs(20) {
                Ok(())
            } else {
                Err(record)
            }
        },
    );
    assert!(cluster().job(job).contains("JobState=PENDING"));
    let record = training.record(&id);
    assert_eq!(record["state"], "pending", "{record}");
    let message = record["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("pending on Slurm ("), "{record}");
    let ls = training.cmd().args(["runs", "ls"]).output().unwrap();
    let listing = String::from_utf8_lossy(&ls.stdout).into_owned();
    assert!(
        listing.lines().any(|line| line.starts_with(id.as_str())
            && line.contains(" pending ")
            && line.contains("pending on Slurm (")),
        "{listing}"
    );
    cluster().command(
        "scontrol",
        &["update", "nodename=localhost", "state=resume"],
    );
    let output = finish(follower);
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("train: pending on Slurm ("), "{text}");
    assert!(text.contains("train: the job left the queue"), "{text}");
    // Issue 33 (defect 2): a queued job has no node, so no system sample (the login
    // node's would describe the wrong machine).
    let queued_part = text
        .split("train: the job left the queue")
        .next()
        .unwrap_or_default();
    assert!(!queued_part.contains("train: system "), "{text}");
    assert_trained_run(&training, &id);
    assert!(training.record(&id)["stalled"].is_null());
}

// Issue 33 (defect 2): the follower's system samples describe the job's node, taken
// inside the job's allocation (`srun --jobid --overlap`), not the login node where
// `sbatch` runs. Login and compute node are one machine here, so the proof is what only
// a step of the job knows: Slurm's name of the node (`localhost`, not the host name)
// and the job's ID, both from the step's environment.
#[test]
fn a_slurm_runs_system_samples_come_from_its_node_inside_the_job() {
    let _turn = cluster().lock();
    let training = slurm_training(
        &Setup {
            max_steps: 8,
            ..setup()
        },
        "",
    );
    let mut follower = training.spawn(&["train", "--target", "cluster"]);
    let id = wait_submitted(&training, &mut follower);
    let job = slurm_job(&training, &id);
    let node = poll(DEADLINE, "the job's node", || {
        let shown = cluster().command("squeue", &["-h", "-j", &job.to_string(), "-o", "%T %N"]);
        match shown.trim().split_once(' ') {
            Some(("RUNNING", node)) if !node.trim().is_empty() => Ok(node.trim().to_owned()),
            _ => Err(shown),
        }
    });
    let output = finish(follower);
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert_trained_run(&training, &id);
    let samples: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("train: system "))
        .collect();
    assert!(!samples.is_empty(), "no system sample:\n{text}");
    let expected = format!("train: system node {node} (Slurm job {job}), ");
    for line in &samples {
        assert!(
            line.contains(&expected),
            "{expected:?} not in {line:?}\n{text}"
        );
    }
    let host = std::process::Command::new("uname")
        .arg("-n")
        .output()
        .unwrap();
    let host = String::from_utf8_lossy(&host.stdout).trim().to_owned();
    if host != node {
        assert!(
            !text.contains(&format!("node {host}")),
            "a sample of the login node `{host}`:\n{text}"
        );
    }
}

/// Processes whose environment holds the run marker of the job in `dir`.
fn marked(dir: &Path) -> Vec<u32> {
    let marker = std::fs::read_to_string(dir.join("job.marker")).unwrap_or_default();
    let needle = format!("{RUN_MARKER_VAR}={}", marker.trim());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'));
        if !zombie && environ.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// Holds the processes of run `id`'s job to a quarter of a core: a job that trains
/// only to wait for its deadline signal, a minute or two away, still makes steps and
/// its snapshot, without taking the cores of the tests beside it.
fn cap_job(training: &Training, id: &str) -> CpuCap {
    let cap = CpuCap::new("slurm-deadline", 0.25);
    let held = cap.hold(&marked(
        &training.project.home().join("slurm-work").join(id),
    ));
    assert!(held > 0, "no process of the job to cap");
    cap
}

/// Stops (`SIGSTOP`) the Python processes of the job whose run directory is `dir`.
fn pause_trainer(dir: &Path) {
    let paused: Vec<u32> = marked(dir)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains("python"))
        })
        .collect();
    assert!(!paused.is_empty(), "no trainer process of the job found");
    for pid in paused {
        crate::util::signal(pid, "STOP");
    }
}

// Case 3.
#[test]
fn a_cancelled_slurm_run_leaves_no_process_of_its_job() {
    let _turn = cluster().lock();
    let training = slurm_training(
        &Setup {
            max_steps: 4000,
            ..setup()
        },
        "",
    );
    let mut follower = training.spawn(&["train", "--target", "cluster"]);
    let id = wait_submitted(&training, &mut follower);
    wait_training(&training, &id);
    let dir = training.project.home().join("slurm-work").join(&id);
    assert!(!marked(&dir).is_empty(), "no process of the job found");
    let cancel = training
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    assert!(cancel.status.success(), "{}", output_text(&cancel));
    let output = finish(follower);
    let record = training.record(&id);
    assert_eq!(
        record["state"],
        "cancelled",
        "{record}\n{}",
        output_text(&output)
    );
    // A helper the trainer started in a process group of its own (`datasets`' resource
    // tracker) is orphaned when Slurm kills the trainer and ends when its pipe closes:
    // on a loaded machine a moment after the job. Nothing may be left after 15 s.
    poll(
        Duration::from_secs(15),
        "no process of the cancelled job left",
        || {
            let left: Vec<String> = marked(&dir)
                .into_iter()
                .map(|pid| {
                    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    let stat =
                        std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                    format!(
                        "{pid} {} [{stat}]",
                        String::from_utf8_lossy(&cmdline).replace('\0', " ")
                    )
                })
                .collect();
            if left.is_empty() { Ok(()) } else { Err(left) }
        },
    );
    assert!(dir.join("cancelled").exists());
    assert!(
        cluster()
            .job(slurm_job(&training, &id))
            .contains("JobState=CANCELLED")
    );
}

// Case 6: a job that fails on the node.
#[test]
fn a_slurm_job_that_fails_on_the_node_points_at_its_log() {
    let _turn = cluster().lock();
    let training = slurm_training(
        &Setup {
            base_model: Some("/nonexistent/base-model"),
            ..setup()
        },
        "",
    );
    let output = training
        .cmd()
        .args(["train", "--target", "cluster"])
        .output()
        .unwrap();
    assert!(!output.status.success(), "{}", output_text(&output));
    let id = &training.run_ids()[0];
    let record = training.record(id);
    assert_eq!(record["state"], "failed", "{record}");
    let message = record["message"].as_str().unwrap();
    assert!(message.contains("exited with code"), "{message}");
    assert!(
        message.contains(&format!("runs/{id}/job.log` lines")),
        "{message}"
    );
}

// Case 6: killed at the time limit, the deadline signal removed through the test knob.
#[test]
fn a_slurm_job_killed_at_its_time_limit_fails_saying_so() {
    let _turn = cluster().lock();
    let mut training = slurm_training(
        &Setup {
            max_steps: 100_000,
            merge: false,
            ..Setup::default()
        },
        "max_hours = 0.0166\n",
    );
    training
        .extra_env
        .push(("OVERBRAINER_TEST_SLURM_NO_SIGNAL".into(), "1".into()));
    let mut follower = training.spawn(&["train", "--target", "cluster"]);
    let id = wait_submitted(&training, &mut follower);
    wait_training(&training, &id);
    // Nothing need burn a core until the limit: the trainer's processes are paused
    // (`SIGSTOP`), and Slurm's kill at the limit ends them as it would busy ones.
    pause_trainer(&training.project.home().join("slurm-work").join(&id));
    let output = finish(follower);
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    let record = training.record(&id);
    assert_eq!(record["state"], "failed", "{record}");
    let message = record["message"].as_str().unwrap();
    assert!(message.contains("the job was lost"), "{message}");
    assert!(message.contains("time limit (`max_hours`)"), "{message}");
    assert!(record["snapshot"].is_null(), "{record}");
    assert!(
        cluster()
            .job(slurm_job(&training, &id))
            .contains("JobState=TIMEOUT")
    );
}

// Case 5: `kill -9` of the follower, a controller restart while the job runs, then
// `train attach`.
#[test]
fn a_slurm_run_survives_a_killed_follower_and_a_controller_restart() {
    let _turn = cluster().lock();
    let training = slurm_training(
        &Setup {
            max_steps: 12,
            ..setup()
        },
        "",
    );
    let mut follower = training.spawn(&["train", "--target", "cluster"]);
    let id = wait_submitted(&training, &mut follower);
    wait_training(&training, &id);
    follower.kill().unwrap(); // SIGKILL
    let _ = follower.wait();
    cluster().stop_controller();
    cluster().start_controller();
    let attach = training
        .cmd()
        .args(["train", "attach", &id])
        .output()
        .unwrap();
    assert!(attach.status.success(), "{}", output_text(&attach));
    assert_trained_run(&training, &id);
}

// Bad input, before any job.
#[test]
fn bad_slurm_settings_are_refused_naming_the_key_before_any_job() {
    let _turn = cluster().lock();
    for (target, expected) in [
        (
            "extra_sbatch = [\"--constraint=x\", \"--output=elsewhere.log\"]\n",
            "`targets.cluster.extra_sbatch[1]`: `--output` is set by overbrainer",
        ),
        (
            "extra_sbatch = [\"-t 10\"]\n",
            "`targets.cluster.extra_sbatch[0]`: `-t` is set by overbrainer",
        ),
        (
            "extra_sbatch = [\"--job-name=x\"]\n",
            "`targets.cluster.extra_sbatch[0]`: `--job-name` is set by overbrainer",
        ),
        ("nodes = 0\n", "`targets.cluster.nodes`: out of range"),
    ] {
        let training = slurm_training(&setup(), target);
        let check = training.cmd().args(["config", "check"]).output().unwrap();
        assert!(!check.status.success());
        assert!(
            output_text(&check).contains(expected),
            "{}",
            output_text(&check)
        );
        let train = training
            .cmd()
            .args(["train", "--target", "cluster"])
            .output()
            .unwrap();
        assert!(!train.status.success());
        assert!(
            output_text(&train).contains(expected),
            "{}",
            output_text(&train)
        );
        assert!(training.run_ids().is_empty());
    }
    let before = cluster().command("squeue", &["-h", "-o", "%i"]);
    let training = slurm_training(&setup(), "partition = \"gpu\"\n");
    let train = training
        .cmd()
        .args(["train", "--target", "cluster"])
        .output()
        .unwrap();
    let text = output_text(&train);
    assert!(!train.status.success(), "{text}");
    assert!(
        text.contains(
            "`targets.cluster.partition`: the cluster has no partition `gpu` (sinfo lists: debug)"
        ),
        "{text}"
    );
    assert!(training.run_ids().is_empty(), "a run was created");
    assert_eq!(cluster().command("squeue", &["-h", "-o", "%i"]), before);
}

// Case 4: a `max_hours` shorter than the job. The job is submitted with a nine-minute
// limit, so Slurm is asked for `SIGUSR1` 54 s before it (room for Axolotl to save its
// snapshot on a loaded machine). Once the job trains, the test brings the limit forward
// with `scontrol update TimeLimit` to two minutes past the job's run time (Slurm limits
// are whole minutes; a shell job in `slurm::` proves the signal's timing), so the signal
// comes about a minute later instead of after nine. The wrapper places the `deadline`
// snapshot request, the run ends `stopped` with a verified checkpoint, and
// `--resume-from` on the local target starts from the step after it.
#[test]
fn the_deadline_signal_stops_a_slurm_run_with_a_snapshot_that_resumes_locally() {
    let _turn = cluster().lock();
    let training = slurm_training(
        &Setup {
            max_steps: 100_000,
            merge: false,
            ..Setup::default()
        },
        "max_hours = 0.15\n",
    );
    let mut train = training.spawn(&["train", "--target", "cluster"]);
    let id = wait_submitted(&training, &mut train);
    wait_training(&training, &id);
    let cap = cap_job(&training, &id);
    let job = slurm_job(&training, &id);
    let shown = cluster().job(job);
    let run_time = shown
        .split_whitespace()
        .find_map(|field| field.strip_prefix("RunTime="))
        .unwrap_or_else(|| panic!("no RunTime in {shown}"));
    let parts: Vec<u64> = run_time
        .split(':')
        .map(|part| {
            part.parse()
                .unwrap_or_else(|_| panic!("RunTime {run_time}"))
        })
        .collect();
    let elapsed = match parts[..] {
        [hours, minutes, _] => hours * 60 + minutes,
        [minutes, _] => minutes,
        _ => panic!("RunTime {run_time} in {shown}"),
    };
    let limit = (elapsed + 2).to_string();
    let updated = cluster().command(
        "scontrol",
        &[
            "update",
            &format!("JobId={job}"),
            &format!("TimeLimit={limit}"),
        ],
    );
    assert!(
        cluster()
            .job(job)
            .contains(&format!("TimeLimit=00:{:02}:00", elapsed + 2)),
        "{updated}\n{}",
        cluster().job(job)
    );
    let output = finish(train);
    let text = output_text(&output);
    assert!(cap.throttled() > 0, "the cap never held the job back");
    drop(cap);
    let record = training.record(&id);
    assert_eq!(record["state"], "stopped", "{record}\n{text}");
    assert_eq!(record["snapshot"]["reason"], "deadline", "{record}");
    assert_eq!(record["retrieved"], true, "{record}");
    let step = record["snapshot"]["step"].as_u64().unwrap();
    let checkpoint = record["snapshot"]["checkpoint"].as_str().unwrap();
    assert!(
        training
            .runs()
            .join(&id)
            .join(format!("output/{checkpoint}/optimizer.pt"))
            .is_file()
    );
    assert!(
        cluster()
            .job(slurm_job(&training, &id))
            .contains("JobState=COMPLETED")
    );

    let mut child = training.spawn(&["train", "--resume-from", &id, "--target", "local"]);
    let resumed = poll(DEADLINE, "the resumed run", || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the resume ended first ({status})");
        }
        training.run_ids().into_iter().find(|i| *i != id).ok_or(())
    });
    let metrics = training.runs().join(&resumed).join("metrics.jsonl");
    let first = poll(DEADLINE, "the resumed run's first training line", || {
        let text = std::fs::read_to_string(&metrics).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|l| l["kind"] == "train")
            .map(|l| l["step"].as_u64().unwrap())
            .ok_or(())
    });
    assert_eq!(
        first,
        step + 1,
        "the resume did not start from its checkpoint"
    );
    let cancel = training
        .cmd()
        .args(["train", "cancel", &resumed])
        .output()
        .unwrap();
    assert!(cancel.status.success(), "{}", output_text(&cancel));
    let _ = finish(child);
    assert_eq!(training.record(&resumed)["resumed_from"], id.as_str());
}
