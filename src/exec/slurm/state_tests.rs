//! Tests of `exec::slurm::state`.

use super::*;

const PENDING: &str = "JobId=3 JobName=wrap UserId=root(0) JobState=PENDING Reason=Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions Dependency=(null) ExitCode=0:0";

#[test]
fn scontrol_lines_are_read_for_state_reason_and_exit() {
    let job = SchedulerJob::parse(PENDING).unwrap();
    assert_eq!(job.state, SchedulerState::Pending);
    assert_eq!(
        job.reason.as_deref(),
        Some(
            "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions"
        )
    );
    assert_eq!(job.exit_code.as_deref(), Some("0:0"));
    let cases = [
        (
            "JobState=RUNNING Reason=None",
            SchedulerState::Running,
            None,
        ),
        (
            "JobState=COMPLETING Reason=None",
            SchedulerState::Running,
            None,
        ),
        (
            "JobState=TIMEOUT Reason=TimeLimit",
            SchedulerState::Timeout,
            Some("Slurm killed the job at its time limit (`max_hours`) before it saved a snapshot"),
        ),
        (
            "JobState=NODE_FAIL Reason=NodeDown",
            SchedulerState::NodeFail,
            Some("a node of the Slurm job failed"),
        ),
        (
            "JobState=PREEMPTED Reason=None",
            SchedulerState::Preempted,
            Some("Slurm preempted the job"),
        ),
        (
            "JobState=OUT_OF_MEMORY Reason=OutOfMemory",
            SchedulerState::OutOfMemory,
            Some("Slurm killed the job for using more memory than it asked for (`mem_gb`)"),
        ),
        (
            "JobState=COMPLETED Reason=None",
            SchedulerState::Completed,
            None,
        ),
        (
            "JobState=CANCELLED Reason=None",
            SchedulerState::Cancelled,
            None,
        ),
        (
            "JobState=FAILED Reason=NonZeroExitCode",
            SchedulerState::Failed,
            None,
        ),
        (
            "JobState=SOMETHING_NEW",
            SchedulerState::Other("SOMETHING_NEW".into()),
            None,
        ),
    ];
    for (line, state, note) in cases {
        let job = SchedulerJob::parse(line).unwrap();
        assert_eq!(job.state, state, "{line}");
        assert_eq!(job.note().as_deref(), note, "{line}");
        // Only a pending job waits in the queue.
        assert_eq!(job.queued(), None, "{line}");
    }
    assert_eq!(
        SchedulerJob::parse(PENDING).unwrap().queued().as_deref(),
        Some(
            "pending on Slurm (Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions)"
        )
    );
    assert_eq!(
        SchedulerJob::parse("JobState=PENDING Reason=Priority")
            .unwrap()
            .note()
            .as_deref(),
        Some("pending on Slurm (Priority)")
    );
    assert_eq!(
        SchedulerJob::parse("JobState=PENDING Reason=None")
            .unwrap()
            .note()
            .as_deref(),
        Some("pending on Slurm")
    );
    assert!(SchedulerJob::parse("slurm_load_jobs error: Invalid job id specified").is_none());
}

#[test]
fn the_markers_come_first_and_the_scheduler_says_the_rest() {
    let known =
        |state: &str| Scheduler::Known(SchedulerJob::parse(&format!("JobState={state}")).unwrap());
    let markers = |cancelled, cancelling, exit| Markers {
        dir: true,
        cancelled,
        cancelling,
        exit,
    };
    let down = Scheduler::Unreachable("Unable to contact slurm controller".into());
    let cases = [
        (known("RUNNING"), Markers::default(), Some(JobStatus::Lost)),
        (
            known("RUNNING"),
            markers(true, true, Some(0)),
            Some(JobStatus::Cancelled),
        ),
        (
            known("RUNNING"),
            markers(false, true, Some(143)),
            Some(JobStatus::Running),
        ),
        (
            known("CANCELLED"),
            markers(false, true, None),
            Some(JobStatus::Cancelled),
        ),
        (
            known("CANCELLED"),
            markers(false, true, Some(0)),
            Some(JobStatus::Exited(0)),
        ),
        (
            known("COMPLETING"),
            markers(false, false, Some(3)),
            Some(JobStatus::Exited(3)),
        ),
        (
            known("PENDING"),
            markers(false, false, None),
            Some(JobStatus::Running),
        ),
        (
            known("RUNNING"),
            markers(false, false, None),
            Some(JobStatus::Running),
        ),
        (
            known("TIMEOUT"),
            markers(false, false, None),
            Some(JobStatus::Lost),
        ),
        (
            known("NODE_FAIL"),
            markers(false, false, None),
            Some(JobStatus::Lost),
        ),
        (
            known("COMPLETED"),
            markers(false, false, Some(0)),
            Some(JobStatus::Exited(0)),
        ),
        (
            Scheduler::Forgotten,
            markers(false, false, Some(1)),
            Some(JobStatus::Exited(1)),
        ),
        (
            Scheduler::Forgotten,
            markers(false, false, None),
            Some(JobStatus::Lost),
        ),
        (
            down.clone(),
            markers(false, false, Some(0)),
            Some(JobStatus::Exited(0)),
        ),
        (down.clone(), markers(false, false, None), None),
        (down, markers(false, true, None), None),
    ];
    for (scheduler, markers, expected) in cases {
        assert_eq!(
            combine(&scheduler, &markers),
            expected,
            "{scheduler:?} {markers:?}"
        );
    }
}

#[test]
fn a_signals_death_the_scheduler_dealt_is_not_the_jobs_exit_code() {
    let known =
        |state: &str| Scheduler::Known(SchedulerJob::parse(&format!("JobState={state}")).unwrap());
    let markers = |cancelling, exit| Markers {
        dir: true,
        cancelled: false,
        cancelling,
        exit: Some(exit),
    };
    let cases = [
        // A signal's death written while the scheduler was ending the job (Slurm
        // signals a job's processes one at a time) is the scheduler's end, not the job's.
        (known("TIMEOUT"), markers(false, 143), Some(JobStatus::Lost)),
        (
            known("PREEMPTED"),
            markers(false, 137),
            Some(JobStatus::Lost),
        ),
        (
            known("CANCELLED"),
            markers(true, 143),
            Some(JobStatus::Cancelled),
        ),
        (
            known("CANCELLED"),
            markers(false, 143),
            Some(JobStatus::Lost),
        ),
        // A code of its own (128 or below), or a signal's death the scheduler did not
        // deal (the OOM killer, a crash), stays the job's.
        (
            known("TIMEOUT"),
            markers(false, 1),
            Some(JobStatus::Exited(1)),
        ),
        (
            known("FAILED"),
            markers(false, 137),
            Some(JobStatus::Exited(137)),
        ),
        (
            known("OUT_OF_MEMORY"),
            markers(false, 137),
            Some(JobStatus::Exited(137)),
        ),
        (
            Scheduler::Forgotten,
            markers(false, 143),
            Some(JobStatus::Exited(143)),
        ),
    ];
    for (scheduler, markers, expected) in cases {
        assert_eq!(
            combine(&scheduler, &markers),
            expected,
            "{scheduler:?} {markers:?}"
        );
    }
}

#[test]
fn status_answers_are_read_strictly() {
    let (scheduler, markers) =
        parse_status(&format!("scheduler 0 {PENDING}\ndir\ncancelling\nexit 0\n")).unwrap();
    assert!(matches!(
        scheduler,
        Scheduler::Known(SchedulerJob {
            state: SchedulerState::Pending,
            ..
        })
    ));
    assert_eq!(
        markers,
        Markers {
            dir: true,
            cancelled: false,
            cancelling: true,
            exit: Some(0)
        }
    );
    let (scheduler, _) =
        parse_status("scheduler 1 slurm_load_jobs error: Invalid job id specified\ndir\n").unwrap();
    assert_eq!(scheduler, Scheduler::Forgotten);
    let (scheduler, _) = parse_status(
        "scheduler 1 slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n",
    )
    .unwrap();
    assert!(matches!(scheduler, Scheduler::Unreachable(_)));
    assert!(parse_status("running\n").is_err());
    assert_eq!(parse_partitions("debug*\ngpu\ngpu\n"), ["debug", "gpu"]);
}

#[test]
fn the_status_probe_passes_shellcheck() {
    crate::exec::shellcheck::assert_passes(&status_script("/w/r 1", 12), "");
    let sample = sample_script(12, "echo 'node x'\nexit 0\n");
    assert!(
        sample.contains("srun --jobid=12 --overlap --nodes=1 --ntasks=1 "),
        "{sample}"
    );
    crate::exec::shellcheck::assert_passes(&sample, "SC2016,SC2086");
}

/// A container job's cancel stops its container on the node, in a step of the
/// job's allocation, before `scancel`; a native job's is `scancel` alone. Both pass
/// shellcheck, the node's step too.
#[test]
fn a_container_jobs_cancel_stops_its_container_in_a_step_before_scancel() {
    let native = cancel_script("/w/r 1", 12, None);
    assert!(!native.contains("srun"), "{native}");
    assert!(native.contains("scancel 12"), "{native}");
    crate::exec::shellcheck::assert_passes(&native, "");
    let container = crate::exec::Container {
        engine: crate::config::Engine::Podman,
        name: "overbrainer-r_1".into(),
    };
    let script = cancel_script("/w/r 1", 12, Some(&container));
    let step = script.find("srun --jobid=12 --overlap --nodes=1 --ntasks=1 ");
    let cancel = script.find("scancel 12");
    assert!(step.is_some() && step < cancel, "{script}");
    assert!(script.contains("podman"), "{script}");
    crate::exec::shellcheck::assert_passes(&script, "SC2016,SC2086");
    crate::exec::shellcheck::assert_passes(&cancel_step("/w/r 1", &container), "");
}

/// `scancel` of a job that ended meanwhile (its container stopped, it ended by
/// itself) is no error; of a job the scheduler still runs, it is (stand-in clients).
#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "runs the script under sh with stand-in Slurm clients"
)]
fn a_failed_scancel_is_an_error_only_while_the_job_is_active() {
    use std::os::unix::fs::PermissionsExt as _;
    for (state, ok) in [("COMPLETED", true), ("RUNNING", false)] {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        for (name, body) in [
            (
                "scontrol",
                format!("echo 'JobId=12 JobState={state} Reason=None'"),
            ),
            (
                "scancel",
                "echo 'scancel: error: Job/step already completing or completed' >&2; exit 1"
                    .to_owned(),
            ),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg(cancel_script(&run.to_string_lossy(), 12, None))
            .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
            .output()
            .unwrap();
        assert_eq!(output.status.success(), ok, "{state}: {output:?}");
        assert!(run.join(CANCELLING_FILE).exists());
        if !ok {
            assert!(
                String::from_utf8_lossy(&output.stderr).contains("already completing"),
                "{output:?}"
            );
        }
    }
}

/// `srun` carries the caller's environment into the step: the sample unsets
/// overbrainer's own variables (secrets among them) first, and keeps the rest.
#[test]
#[allow(
    clippy::disallowed_methods,
    reason = "runs the script under sh with stand-in Slurm clients"
)]
fn the_sample_step_never_sees_overbrainers_variables() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [
        ("scontrol", "echo 'JobId=12 JobState=RUNNING Reason=None'"),
        ("srun", "env"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:/usr/bin:/bin", dir.path().display());
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(sample_script(12, "true"))
        .env("PATH", &path)
        .env("OVERBRAINER_RUNPOD__API_KEY", "rpa_CANARYz8Xq3Wm7Kv2")
        .env("VAULT_TOKEN", "hvs.CANARYp4Lr9Tn6")
        .env("OB_KEPT", "kept")
        .output()
        .unwrap();
    let env = String::from_utf8_lossy(&output.stdout);
    assert!(env.contains("OB_KEPT=kept"), "{env}");
    assert!(!env.contains("CANARY"), "{env}");
}
