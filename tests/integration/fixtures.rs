//! The trained runs several areas share (issue 31: fewer real Axolotl trainings): each
//! is trained once per test run as a [`crate::util::shared_fixture`], and each user
//! works on a copy of its project.
//!
//! `local-run` is the demo's default run (`Setup::default()`: local, native, merged),
//! trained once for `training` (its checks of a merged local run), `export`,
//! `export_flows` and `compare` (the `[export]` settings the export needs) and `hub`
//! (`[hub] after_training` with no token, so the push after it is skipped).
//!
//! `ssh-run` is the same run trained on an SSH target, for `training` and `export`.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::sshd::Options;
use crate::training::{Setup, Training};
use crate::util::{TestProject, copy_tree};

/// The shared local run: the fixture's directory, its project (its commands given the
/// export's environment, not `[hub] after_training`), run ID and what its `train`
/// printed.
pub(crate) struct LocalRun {
    pub(crate) root: PathBuf,
    pub(crate) training: Training,
    pub(crate) id: String,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// The environment `local-run`'s `train` had beyond the export's: `[hub] after_training`
/// (no token is set, so the push after the run is skipped with a line; nothing reaches a
/// Hub, and the run and its directory are as without it).
pub(crate) fn hub_after_training() -> (String, String) {
    ("OVERBRAINER_HUB__AFTER_TRAINING".into(), "true".into())
}

/// `Setup::default()` trained on the local target with the export's environment and
/// [`hub_after_training`], once per test run as the shared fixture `local-run`; its
/// `.ready` holds the run ID and `train`'s stdout and stderr as JSON.
pub(crate) fn local_run() -> &'static LocalRun {
    static RUN: OnceLock<LocalRun> = OnceLock::new();
    RUN.get_or_init(|| {
        let export_env = crate::export::export_env("local", true);
        let (root, data) = crate::util::shared_fixture("local-run", |root| {
            let mut training = Training::new_in(&Setup::default(), TestProject::at(root));
            training.extra_env.extend(export_env.clone());
            training.extra_env.push(hub_after_training());
            let output = training.cmd().arg("train").output().expect("train");
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            assert!(output.status.success(), "{stdout}{stderr}");
            let ids = training.run_ids();
            assert_eq!(ids.len(), 1, "{ids:?}");
            serde_json::json!({ "id": ids[0], "stdout": stdout, "stderr": stderr }).to_string()
        });
        let data: serde_json::Value = serde_json::from_str(&data).expect("local-run's .ready");
        let text = |key: &str| data[key].as_str().expect(key).to_owned();
        LocalRun {
            training: Training::reopen(&root, export_env),
            root,
            id: text("id"),
            stdout: text("stdout"),
            stderr: text("stderr"),
        }
    })
}

/// A fresh copy of the shared run's project (see [`local_run`]), with the same
/// environment: for tests that change it (an export, a `runs` command), whatever they
/// leave in it.
pub(crate) fn copy() -> (Training, String) {
    copy_into(TestProject::empty())
}

/// [`copy`] into `project` (a shared fixture's, for one).
pub(crate) fn copy_into(project: TestProject) -> (Training, String) {
    let run = local_run();
    copy_tree(&run.training.project.path().join("."), project.path());
    let training = Training {
        project,
        extra_env: run.training.extra_env.clone(),
        sshd: None,
    };
    (training, run.id.clone())
}

/// The demo's default run trained over SSH (`Setup { ssh, ..Setup::default() }`:
/// `train --target remote`, merged, with the export's environment for `remote`), once
/// per test run as the shared fixture `ssh-run` (`train` with `training.target` set to
/// `remote` by the export's environment), for `training` (its checks of an SSH
/// run) and `export` (an export on the SSH target). Its `sshd` lives only while it
/// trains; the target's workdir is the fixture's `home/remote-work`. Returns the
/// fixture's directory and the run ID.
fn ssh_run() -> &'static (PathBuf, String) {
    static RUN: OnceLock<(PathBuf, String)> = OnceLock::new();
    RUN.get_or_init(|| {
        crate::util::shared_fixture("ssh-run", |root| {
            let training = Training::new_in(&ssh_setup(), TestProject::at(root));
            crate::export::train_in(training, "remote", true).1
        })
    })
}

fn ssh_setup() -> Setup<'static> {
    Setup {
        ssh: Some(Options::default()),
        ..Setup::default()
    }
}

/// A fresh training project with an `sshd` of its own holding a copy of the shared SSH
/// run (see [`ssh_run`]): its local run directory, and the run directory on the target
/// in the project's own `home/remote-work`, `run.json` pointing there. Its commands get
/// the export's environment for `remote`. Returns the project and the run ID.
pub(crate) fn ssh_copy() -> (Training, String) {
    let (root, id) = ssh_run();
    let mut training = Training::new(&ssh_setup());
    training
        .extra_env
        .extend(crate::export::export_env("remote", true));
    let home = training.project.home();
    for (from, to) in [
        (
            root.join("project/runs"),
            training.project.path().to_owned(),
        ),
        (root.join("home/remote-work/."), home.join("remote-work")),
    ] {
        copy_tree(&from, &to);
    }
    // The target's run directory is recorded by its absolute path: point the copy's at
    // the copy on this project's target.
    let record = format!("runs/{id}/run.json");
    let moved = training.project.read(&record).replace(
        &root.join("home").display().to_string(),
        &home.display().to_string(),
    );
    training.project.write(&record, &moved);
    (training, id.clone())
}
