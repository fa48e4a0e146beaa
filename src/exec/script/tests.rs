//! Tests of the job scripts.
#![allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]

use super::*;
use crate::exec::{
    CANCELLING_FILE, Container, EXIT_FILE, ExecError, JOB_LOG, JobStatus, RUN_MARKER_VAR,
};
use crate::shell::quote;
use proptest::prelude::*;

fn sh_echo(word: &str) -> Vec<u8> {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("printf %s {}", quote(word)))
        .output()
        .unwrap();
    out.stdout
}

#[test]
fn quote_survives_awkward_words() {
    for word in [
        "", "a b", "it's", "'", "-n", "$HOME", "`x`", "a\nb", "\\", "é",
    ] {
        assert_eq!(sh_echo(word), word.as_bytes(), "{word:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn quote_round_trips_through_sh(word in "[^\u{0}]{0,40}") {
        prop_assert_eq!(sh_echo(&word), word.as_bytes());
    }

    #[test]
    fn parse_status_reads_what_the_script_prints(code in any::<i32>(), pick in 0_u8..4) {
        let (text, status) = match pick {
            0 => ("running".to_owned(), JobStatus::Running),
            1 => ("cancelled".to_owned(), JobStatus::Cancelled),
            2 => ("lost".to_owned(), JobStatus::Lost),
            _ => (format!("exited {code}"), JobStatus::Exited(code)),
        };
        prop_assert_eq!(parse_status(&format!("{text}\n")).unwrap(), status);
    }

    #[test]
    fn parse_status_never_panics(text in ".{0,40}") {
        let _ = parse_status(&text);
    }
}

#[test]
fn parse_status_rejects_garbage() {
    for text in [
        "",
        "exited",
        "exited x",
        "exited 99999999999",
        "runnin",
        "Running",
    ] {
        assert!(parse_status(text).is_err(), "{text:?}");
    }
}

#[test]
fn parse_cancel_reads_what_the_script_prints() {
    for done in ["cancelled\n", "exited\n", " gone "] {
        assert!(parse_cancel(done).is_ok(), "{done:?}");
    }
    match parse_cancel("leftovers 42 7 42 \n") {
        Err(ExecError::Leftovers { pids }) => assert_eq!(pids, [7, 42]),
        other => panic!("{other:?}"),
    }
    let error = parse_cancel("leftovers 9").unwrap_err();
    assert_eq!(error.to_string(), "cancelled with leftovers: 9");
    for garbage in [
        "",
        "leftovers",
        "leftovers ",
        "leftovers x",
        "leftovers -1",
        "Cancelled",
    ] {
        assert!(
            matches!(parse_cancel(garbage), Err(ExecError::Protocol(_))),
            "{garbage:?}"
        );
    }
}

#[test]
fn parse_pids_sorts_dedups_and_refuses_words() {
    assert_eq!(parse_pids("3\n1 3\n"), Some(vec![1, 3]));
    assert_eq!(parse_pids(""), Some(vec![]));
    assert_eq!(parse_pids("1 x"), None);
}

#[test]
fn the_shell_functions_use_the_files_and_variable_of_this_module() {
    for name in [START_FILE, MARKER_FILE] {
        assert!(GROUP_SIGNAL.contains(&format!("/{name}\"")), "{name}");
    }
    assert!(GROUP_SIGNAL.contains(&format!("{RUN_MARKER_VAR}=$ob_m")));
    let wrapper = job_script("/w/r1", "true", TimeScale::REAL);
    assert!(wrapper.contains(&format!("export {RUN_MARKER_VAR}")));
}

/// A job that ends while the status script looks (its wrapper writes the exit
/// code and is gone between the look at the files and the look at its processes)
/// reads `exited`, never `lost`: seen under load once the wrapper no longer lingers.
#[test]
fn regression_a_job_that_ends_while_its_status_is_read_is_exited_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    for (marker, expected) in [(None, "exited 3"), (Some(CANCELLING_FILE), "exited 3")] {
        let _ = std::fs::remove_file(dir.path().join(EXIT_FILE));
        if let Some(marker) = marker {
            std::fs::write(dir.path().join(marker), "").unwrap();
        }
        // `job_alive` stands in for the wrapper's last moment: it writes the exit
        // code, then no process of the job is left.
        let start = format!("d={}\n", quote(path));
        let script = status_script(path, 4242).replacen(
            &start,
            &format!("{start}job_alive() {{ printf '3\\n' > \"$d/{EXIT_FILE}\"; return 1; }}\n"),
            1,
        );
        assert!(script.contains("return 1; }"), "{script}");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            expected,
            "{marker:?}"
        );
    }
}

/// The wrapper's clean-up must not count its own helpers (the command
/// substitutions it scans `/proc` from) as what is left of the job: a job that
/// leaves nothing behind ends its wrapper at once, by itself, never through the
/// `SIGKILL` that ends a clean-up whose grace ran out.
#[test]
fn regression_a_wrapper_whose_job_left_nothing_exits_without_killing_itself() {
    use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(job_script(path, "echo done", TimeScale::REAL))
        .process_group(0)
        .status()
        .unwrap();
    assert_eq!(
        (status.signal(), status.code()),
        (None, Some(0)),
        "the wrapper waited out its grace and killed its own group"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(EXIT_FILE)).unwrap(),
        "0\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(JOB_LOG)).unwrap(),
        "done\n"
    );
}

/// Runs the shell functions with `body` in a scratch directory `dir`.
fn run_functions(dir: &std::path::Path, body: &str) -> (bool, String) {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{GROUP_SIGNAL}{body}"))
        .current_dir(dir)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn ob_leader_tells_the_job_from_another_process_and_a_gone_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // This very shell, recorded by its own identity: the leader.
    let (_, out) = run_functions(
        d,
        "ob_identity $$ > job.start; ob_leader . $$; echo \"rc $?\"",
    );
    assert_eq!(out.trim(), "rc 0");
    // Legacy form: the bare start time.
    let (_, out) = run_functions(
        d,
        "ob_identity $$ | { read -r k b t; echo \"$t\"; } > job.start; ob_leader . $$; echo \"rc $?\"",
    );
    assert_eq!(out.trim(), "rc 0");
    // Another identity, then none recorded: not the job.
    std::fs::write(d.join("job.start"), "proc - 1\n").unwrap();
    let (_, out) = run_functions(d, "ob_leader . $$; echo \"rc $?\"");
    assert_eq!(out.trim(), "rc 1");
    std::fs::remove_file(d.join("job.start")).unwrap();
    let (_, out) = run_functions(d, "ob_leader . $$; echo \"rc $?\"");
    assert_eq!(out.trim(), "rc 1");
    // A process ID no process has: the leader is gone.
    std::fs::write(d.join("job.start"), "proc - 1\n").unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let gone = child.id();
    child.wait().unwrap();
    let (_, out) = run_functions(d, &format!("ob_leader . {gone}; echo \"rc $?\""));
    assert_eq!(out.trim(), "rc 2");
}

#[test]
fn ob_leader_lives_answers_only_for_the_live_recorded_leader() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // This very shell, recorded by its own identity: it lives.
    let (_, out) = run_functions(
        d,
        "ob_identity $$ > job.start; ob_leader_lives . $$; echo \"rc $?\"",
    );
    assert_eq!(out.trim(), "rc 0");
    // Another identity, the legacy bare start time, or none recorded: no answer.
    for recorded in ["proc - 1\n", "1\n"] {
        std::fs::write(d.join("job.start"), recorded).unwrap();
        let (_, out) = run_functions(d, "ob_leader_lives . $$; echo \"rc $?\"");
        assert_eq!(out.trim(), "rc 1", "{recorded:?}");
    }
    std::fs::remove_file(d.join("job.start")).unwrap();
    let (_, out) = run_functions(d, "ob_leader_lives . $$; echo \"rc $?\"");
    assert_eq!(out.trim(), "rc 1");
    // A zombie with the recorded identity does not live: exited, not yet reaped.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    let exited = rustix::process::waitid(
        rustix::process::WaitId::Pid(
            rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap(),
        ),
        rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT,
    )
    .unwrap();
    assert!(exited.is_some(), "true did not exit");
    let (_, out) = run_functions(
        d,
        &format!("ob_identity {pid} > job.start; ob_leader_lives . {pid}; echo \"rc $?\""),
    );
    assert_eq!(out.trim(), "rc 1");
    let (_, out) = run_functions(d, &format!("ob_leader . {pid}; echo \"rc $?\""));
    assert_eq!(
        out.trim(),
        "rc 0",
        "the zombie still has the recorded identity"
    );
    child.wait().unwrap();
    // Reaped: no process has that ID any more.
    let (_, out) = run_functions(d, &format!("ob_leader_lives . {pid}; echo \"rc $?\""));
    assert_eq!(out.trim(), "rc 1");
}

#[test]
fn scripts_pass_shellcheck() {
    let container = Container {
        engine: crate::config::Engine::Docker,
        name: "overbrainer-r1".into(),
    };
    for script in [
        job_script("/w/r 1", "echo hi", TimeScale::REAL),
        status_script("/w/r 1", 42),
        cancel_script("/w/r 1", 42, Some(&container), TimeScale::REAL),
        claim_script("/w/r 1", "owner"),
    ] {
        crate::exec::shellcheck::assert_passes(&script, "SC2016,SC3040");
    }
}

/// The waiting loops of the wrapper and the cancel tick on the executor's time scale:
/// five ticks a rule second, the same counts, shorter pauses.
#[test]
fn the_graces_of_the_scripts_scale_with_the_time_scale() {
    let fast = TimeScale::with_second(std::time::Duration::from_millis(10));
    assert_eq!(tick(TimeScale::REAL), "0.200");
    assert_eq!(tick(fast), "0.002");
    let container = Container {
        engine: crate::config::Engine::Docker,
        name: "overbrainer-r1".into(),
    };
    for (scale, pause) in [(TimeScale::REAL, "sleep 0.200 "), (fast, "sleep 0.002 ")] {
        let wrapper = job_script("/w/r1", "true", scale);
        let cancel = cancel_script("/w/r1", 42, Some(&container), scale);
        assert!(wrapper.contains(pause), "{wrapper}");
        assert!(cancel.contains(pause), "{cancel}");
        assert!(
            wrapper.contains(&format!("-ge {} ]", wrapper::REAP_GRACE_SECONDS * 5)),
            "{wrapper}"
        );
        assert!(
            cancel.contains(&format!(
                "ob_wait_gone {}; then",
                cancel::CANCEL_GRACE_SECONDS * 5
            )),
            "{cancel}"
        );
    }
}

/// A Slurm batch wrapper writes its job's code only when the job ended by itself, not
/// once the controller ends the job: Slurm signals the job's processes one at a time,
/// so the command can die of the scheduler's `SIGTERM`, or end normally when the
/// children it waited for die first, before the wrapper gets its own signal. A
/// stand-in `scontrol` answers with the state each case names. A `cancelling` marker
/// alone changes nothing (a cancel killed before `scancel` leaves it behind).
#[test]
fn a_batch_wrapper_writes_no_code_once_the_scheduler_ends_the_job() {
    use std::os::unix::{fs::PermissionsExt as _, process::CommandExt as _};
    // (command's code, scontrol's JobState or none at all, cancelling marker, code written)
    let cases: [(i32, Option<&str>, bool, Option<&str>); 9] = [
        (143, Some("COMPLETING"), false, None),
        (143, Some("TIMEOUT"), false, None),
        (0, Some("COMPLETING"), true, None),
        (0, Some("CANCELLED"), false, None),
        (137, Some("RUNNING"), false, Some("137\n")),
        (143, Some("RUNNING"), true, Some("143\n")),
        (0, Some("RUNNING"), true, Some("0\n")),
        (143, None, false, Some("143\n")),
        (1, None, true, Some("1\n")),
    ];
    for (code, state, cancelling, written) in cases {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        let scontrol = bin.join("scontrol");
        let answer = match state {
            Some(state) => format!("echo 'JobId=7 JobName=ob-r JobState={state} Reason=None'"),
            None => "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1"
                .to_owned(),
        };
        std::fs::write(&scontrol, format!("#!/bin/sh\n{answer}\n")).unwrap();
        std::fs::set_permissions(&scontrol, std::fs::Permissions::from_mode(0o755)).unwrap();
        if cancelling {
            std::fs::write(run.join(CANCELLING_FILE), "").unwrap();
        }
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(batch_job_script(
                run.to_str().unwrap(),
                &format!("exit {code}"),
                TimeScale::REAL,
                None,
            ))
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("SLURM_JOB_ID", "7")
            .process_group(0)
            .status()
            .unwrap();
        assert!(
            status.success(),
            "{code} {state:?} {cancelling}: {status:?}"
        );
        let found = std::fs::read_to_string(run.join(EXIT_FILE)).ok();
        assert_eq!(found.as_deref(), written, "{code} {state:?} {cancelling}");
    }
}
