//! Results on stdout never crash a command (exit 101): a closed pipe ends quietly, any other
//! failed write (a full disk) gives an `error:` line and a failure status. And `init`'s
//! refusals leave the disk as it was, with messages that say what the path is.

use std::process::Stdio;

use predicates::prelude::*;

use crate::util::TestProject;

/// `overbrainer -C <project> config check` as a plain `std::process::Command` (to choose its
/// stdout), with the clean environment of `util::overbrainer`.
fn config_check(project: &TestProject) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_overbrainer"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", project.home())
        .arg("-C")
        .arg(project.path())
        .args(["config", "check"]);
    command
}

#[test]
fn a_closed_stdout_pipe_ends_quietly() {
    let project = TestProject::init();
    let mut command = config_check(&project);
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the command prints its first line (like `| head -0`).
    drop(child.stdout.take());
    let output = crate::util::wait_output(
        child,
        std::time::Duration::from_secs(120),
        "the command writing to a closed pipe",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
}

#[test]
fn a_full_stdout_fails_with_an_error_line_not_a_panic() {
    let project = TestProject::init();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = config_check(&project)
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("error: cannot write to stdout: No space left on device"),
        "{stderr}"
    );
}

#[test]
fn init_checks_every_path_before_writing_anything() {
    let project = TestProject::empty();
    std::fs::create_dir_all(project.path().join("d/.gitignore")).unwrap();
    project.cmd().args(["init", "d"]).assert().failure().stderr(
        predicate::str::contains("cannot read").and(predicate::str::contains(".gitignore")),
    );
    let left: Vec<_> = std::fs::read_dir(project.path().join("d"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [".gitignore"]);

    project.write("e/.gitignore", "");
    std::fs::write(project.path().join("e/.gitignore"), b"\xff.env\n").unwrap();
    project.cmd().args(["init", "e"]).assert().failure().stderr(
        predicate::str::contains("cannot read")
            .and(predicate::str::contains("UTF-8"))
            .and(predicate::str::contains("cannot write").not()),
    );
    assert!(!project.path().join("e/overbrainer.toml").exists());

    project.write("f/prompts", "a file");
    project
        .cmd()
        .args(["init", "f"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("is a file, not a directory"));
    assert!(!project.path().join("f/overbrainer.toml").exists());
}

#[test]
fn a_path_that_is_a_file_is_called_a_file() {
    let project = TestProject::empty();
    project.write("somefile", "x");
    project
        .cmd()
        .args(["init", "somefile"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("`somefile` is a file, not a directory")
                .or(predicate::str::contains(
                    "somefile` is a file, not a directory",
                ))
                .and(predicate::str::contains("os error").not()),
        );
    let mut cmd = crate::util::overbrainer(&project.home());
    cmd.arg("-C")
        .arg(project.path().join("somefile"))
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("is a file, not a directory")
                .and(predicate::str::contains("does not exist").not()),
        );
}

#[test]
fn init_counts_one_gitignore_entry_in_the_singular() {
    let project = TestProject::empty();
    project.write(".gitignore", ".env\n");
    project
        .cmd()
        .arg("init")
        .assert()
        .success()
        .stdout(predicate::str::contains("(1 entry added)"));
}

#[test]
fn init_appends_env_when_git_would_not_ignore_it() {
    let project = TestProject::empty();
    project.write(".gitignore", "  .env\n/.overbrainer/\n");
    project.cmd().arg("init").assert().success();
    assert_eq!(project.read(".gitignore"), "  .env\n/.overbrainer/\n.env\n");
    let project = TestProject::empty();
    project.write(".gitignore", ".env\n/.overbrainer/\n!.env\n");
    project.cmd().arg("init").assert().success();
    assert_eq!(
        project.read(".gitignore"),
        ".env\n/.overbrainer/\n!.env\n.env\n"
    );
}
