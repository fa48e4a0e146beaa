//! Shared helpers: a temporary project and an `overbrainer` command that runs in it with a
//! clean environment (no inherited `OVERBRAINER_*`, `VAULT_*` or `NO_COLOR`, `HOME` inside
//! the temp directory), so tests run in parallel without seeing each other or the host.

#![allow(dead_code)]

use std::fmt::Debug;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

/// How often a waiting test looks again. Many checks start a process (`scontrol`,
/// `podman exec`, `tmux`): at 50 ms, a few waiting tests kept a core busy (issue 31).
const POLL_EVERY: Duration = Duration::from_millis(250);

/// Calls `check` every 250 ms until it gives a value, and fails the test when `within`
/// has passed first, naming `what` it waited for and the last thing `check` saw. The one
/// way a test waits for something another process does (a job's state, a file, a log
/// line).
pub fn poll<T, E: Debug>(within: Duration, what: &str, check: impl FnMut() -> Result<T, E>) -> T {
    poll_every(POLL_EVERY, within, what, check)
}

/// [`poll`], looking every `every`: for a cheap check (no process started) that has to
/// catch a short moment, such as a transfer's `tar` while it runs.
pub fn poll_every<T, E: Debug>(
    every: Duration,
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
        std::thread::sleep(every);
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

/// A directory holding a project directory `project/` and a `home/`: a temporary one
/// (removed with the value), or a shared fixture's (see [`shared_fixture`]), kept.
pub struct TestProject {
    temp: Option<tempfile::TempDir>,
    root: PathBuf,
    project: PathBuf,
}

impl TestProject {
    /// An empty project directory (no `overbrainer.toml`).
    pub fn empty() -> Self {
        let temp = tempfile::tempdir().expect("temp dir");
        let mut project = Self::at(temp.path());
        project.temp = Some(temp);
        project
    }

    /// The project of the directory `root` (a shared fixture's), made when missing and
    /// kept when the value goes.
    pub fn at(root: &Path) -> Self {
        std::fs::create_dir_all(root.join("project")).expect("project dir");
        std::fs::create_dir_all(root.join("home")).expect("home dir");
        Self {
            temp: None,
            root: root.to_owned(),
            project: root.join("project"),
        }
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
        self.root.join("home")
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

/// How long one `overbrainer` command of a test may run unless the test says otherwise
/// (`.timeout(...)` again): past it the command is killed and the test fails naming it.
pub const COMMAND_DEADLINE: Duration = Duration::from_secs(600);

/// The `overbrainer` binary with a clean environment: only `PATH` and `HOME`, and a
/// bound of [`COMMAND_DEADLINE`].
pub fn overbrainer(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_overbrainer"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .timeout(COMMAND_DEADLINE);
    cmd
}

/// How often a wait for a child's end looks again: a `waitpid` costs nothing, and each
/// command a test runs waits this long at most past its end.
const CHILD_EVERY: Duration = Duration::from_millis(20);

/// `child`'s exit status once it ends, looking every [`CHILD_EVERY`] until `deadline`;
/// `None` when the deadline came first, the child then killed and reaped.
fn ended_by(
    child: &mut std::process::Child,
    deadline: Instant,
) -> Option<std::process::ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(CHILD_EVERY);
    }
}

/// Waits for `child` to end at most `within`; past it the child is killed and the test
/// fails naming `what`.
pub fn wait_status(
    child: &mut std::process::Child,
    within: Duration,
    what: &str,
) -> std::process::ExitStatus {
    ended_by(child, Instant::now() + within)
        .unwrap_or_else(|| panic!("{what} did not end within {within:?}; killed it"))
}

/// Waits for `child` at most `within`, reading its piped output meanwhile (a child that
/// fills a pipe nobody reads never ends); past the bound the child is killed and the test
/// fails naming `what`.
pub fn wait_output(
    mut child: std::process::Child,
    within: Duration,
    what: &str,
) -> std::process::Output {
    fn drain<R: std::io::Read + Send + 'static>(
        pipe: Option<R>,
    ) -> std::sync::mpsc::Receiver<Vec<u8>> {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            let _ = sender.send(bytes);
        });
        receiver
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let deadline = Instant::now() + within;
    let Some(status) = ended_by(&mut child, deadline) else {
        let err = stderr
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_default();
        let mut err = String::from_utf8_lossy(&err).into_owned();
        err.truncate(4000);
        panic!("{what} did not end within {within:?}; killed it (stderr: {err})");
    };
    // A process it left behind may hold its output open: wait for the end of the
    // output as long as the bound allows, and at least 5 s.
    let rest = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(5));
    let collect = |receiver: std::sync::mpsc::Receiver<Vec<u8>>, name: &str| {
        receiver.recv_timeout(rest).unwrap_or_else(|_| {
            panic!("{what} ended ({status}) but something it started kept its {name} open")
        })
    };
    let stdout = collect(stdout, "standard output");
    let stderr = collect(stderr, "standard error");
    std::process::Output {
        status,
        stdout,
        stderr,
    }
}

/// `command`'s output (standard input closed, output piped), at most `within`: past it
/// the command is killed and the test fails naming it. For the helper programs a test
/// runs (engines, Slurm clients, `tmux`), none of which may hang a test.
pub fn output_within(
    command: &mut std::process::Command,
    within: Duration,
) -> std::io::Result<std::process::Output> {
    let what = format!(
        "{} {:?}",
        command.get_program().to_string_lossy(),
        command.get_args().collect::<Vec<_>>()
    );
    let child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    Ok(wait_output(child, within, &what))
}

/// `cp -a FROM TO` (a shared fixture's tree into a test's own folder), at most five
/// minutes; the test fails naming the copy when it fails or takes longer.
pub fn copy_tree(from: &Path, to: &Path) {
    let output = output_within(
        std::process::Command::new("cp").arg("-a").arg(from).arg(to),
        Duration::from_secs(300),
    )
    .expect("cp");
    assert!(
        output.status.success(),
        "cp -a {} {}: {}",
        from.display(),
        to.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// [`wait_status`] from async code: on a blocking thread, so the runtime goes on.
pub async fn wait_status_async(
    mut child: std::process::Child,
    within: Duration,
    what: &'static str,
) -> std::process::ExitStatus {
    tokio::task::spawn_blocking(move || wait_status(&mut child, within, what))
        .await
        .expect("the waiting thread")
}

/// The directory of the shared fixture `name` for this test run, built once by `build`
/// (given the directory; it returns a line of data the users need, such as a run ID)
/// and then reused by every test of the run, whatever process it runs in: nextest runs
/// each test in a process of its own, so a fixture lives on disk under the build's
/// temporary directory, keyed by the run (`NEXTEST_RUN_ID`; the process under `cargo
/// test`), and a file lock makes the others wait while one builds it. A build that
/// panics is recorded, and every later user fails at once naming it.
pub fn shared_fixture(name: &str, build: impl FnOnce(&Path) -> String) -> (PathBuf, String) {
    use fs4::fs_std::FileExt as _;
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
    std::fs::create_dir_all(&base).expect("fixtures dir");
    let run =
        std::env::var("NEXTEST_RUN_ID").unwrap_or_else(|_| format!("pid{}", std::process::id()));
    let dir = base.join(format!("{name}-{run}"));
    let lock = std::fs::File::create(base.join(format!("{name}-{run}.lock"))).expect("lock");
    lock.lock_exclusive().expect("fixture lock");
    let (ready, failed) = (dir.join(".ready"), dir.join(".failed"));
    if let Ok(data) = std::fs::read_to_string(&ready) {
        return (dir, data);
    }
    if let Ok(why) = std::fs::read_to_string(&failed) {
        panic!("the shared fixture `{name}` failed to build in another test: {why}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("fixture dir");
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| build(&dir))) {
        Ok(data) => {
            std::fs::write(&ready, &data).expect(".ready");
            (dir, data)
        }
        Err(panic) => {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            let _ = std::fs::write(&failed, &why);
            std::panic::resume_unwind(panic)
        }
    }
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

/// The `KEY=VALUE` lines that `scripts/NAME`, one of the set-up scripts `make test` runs
/// (each builds what it makes once per machine, then only prints where it is), printed
/// for this test run: run once, as the shared fixture `NAME`. Fails saying `install`
/// when the script fails.
pub fn setup_script(name: &str, install: &str) -> String {
    shared_fixture(name, |_| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scripts")
            .join(name);
        let output = std::process::Command::new(&script)
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", script.display()));
        assert!(output.status.success(), "scripts/{name} failed: {install}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    })
    .1
}

/// The value of `key` in a set-up script's `KEY=VALUE` lines ([`setup_script`]).
pub fn setup_value(text: &str, key: &str) -> PathBuf {
    let value = text
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix('='));
    PathBuf::from(value.unwrap_or_else(|| panic!("no {key} in {text}")))
}
