//! Shared helpers: a temporary project and an `overbrainer` command that runs in it with a
//! clean environment (no inherited `OVERBRAINER_*`, `VAULT_*` or `NO_COLOR`, `HOME` inside
//! the temp directory), so tests run in parallel without seeing each other or the host.

#![allow(dead_code)]

use std::fmt::Debug;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

/// How often a waiting test looks again.
const POLL_EVERY: Duration = Duration::from_millis(50);

/// Calls `check` every 50 ms until it gives a value, and fails the test when `within` has
/// passed first, naming `what` it waited for and the last thing `check` saw. The one way a
/// test waits for something another process does (a job's state, a file, a log line).
pub fn poll<T, E: Debug>(
    within: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<T, E>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        match check() {
            Ok(value) => return value,
            Err(last) => assert!(
                Instant::now() < deadline,
                "timed out after {within:?} waiting for {what} (last seen: {last:?})"
            ),
        }
        std::thread::sleep(POLL_EVERY);
    }
}

/// [`poll`] for an async `check`, sleeping on the tokio timer.
pub async fn poll_async<T, E: Debug, F: Future<Output = Result<T, E>>>(
    within: Duration,
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        match check().await {
            Ok(value) => return value,
            Err(last) => assert!(
                Instant::now() < deadline,
                "timed out after {within:?} waiting for {what} (last seen: {last:?})"
            ),
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// The one way tests signal a process (see [`crate::sshd::signal`]).
pub use crate::sshd::signal;

/// A temporary directory holding a project directory `project/` and a `home/`.
pub struct TestProject {
    temp: tempfile::TempDir,
    project: PathBuf,
}

impl TestProject {
    /// An empty project directory (no `overbrainer.toml`).
    pub fn empty() -> Self {
        let temp = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(temp.path().join("project")).expect("project dir");
        std::fs::create_dir(temp.path().join("home")).expect("home dir");
        let project = temp.path().join("project");
        Self { temp, project }
    }

    /// A project written by `overbrainer init`.
    pub fn init() -> Self {
        let project = Self::empty();
        project.cmd().arg("init").assert().success();
        project
    }

    /// A project whose `overbrainer.toml` is `text`.
    pub fn with_config(text: &str) -> Self {
        let project = Self::empty();
        project.write("overbrainer.toml", text);
        project
    }

    /// The project directory.
    pub fn path(&self) -> &Path {
        &self.project
    }

    /// `HOME` of the commands.
    pub fn home(&self) -> PathBuf {
        self.temp.path().join("home")
    }

    /// Writes `text` to `relative` inside the project, creating directories.
    pub fn write(&self, relative: &str, text: &str) {
        let path = self.path().join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("parent dir");
        }
        std::fs::write(path, text).expect("write file");
    }

    /// Reads `relative` inside the project.
    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.path().join(relative)).expect("read file")
    }

    /// `overbrainer -C <project>` with a clean environment.
    pub fn cmd(&self) -> Command {
        let mut cmd = overbrainer(&self.home());
        cmd.arg("-C").arg(self.path());
        cmd
    }
}

/// The `overbrainer` binary with a clean environment: only `PATH` and `HOME`.
pub fn overbrainer(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_overbrainer"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home);
    cmd
}

/// Text of a command's stdout and stderr together.
pub fn output_text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A path of this test binary's build directory (`target/debug`).
pub fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/debug/deps/integration-<hash> -> target/debug
    exe.parent()
        .and_then(Path::parent)
        .expect("build dir")
        .to_owned()
}

/// The manifest's hashing tools (`sha256sum`, and `openssl` for `openssl dgst`) as
/// wrappers in `dir`, for a target's `PATH`: each hashes as the real tool does, then,
/// while `marker` exists, appends a byte to the first argument matching the shell
/// `pattern` and removes `marker`, so that file differs from its manifest line once.
pub fn hash_tools_corrupting_once(dir: &Path, marker: &Path, pattern: &str) {
    for (tool, real) in [
        ("sha256sum", "/usr/bin/sha256sum"),
        ("openssl", "/usr/bin/openssl"),
    ] {
        let wrapper = dir.join(tool);
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\n{real} \"$@\"\nrc=$?\nfor f in \"$@\"; do case \"$f\" in {pattern}) if [ -e '{m}' ]; then rm -f '{m}'; printf x >> \"$f\"; fi;; esac; done\nexit $rc\n",
                m = marker.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(
            &wrapper,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
}
