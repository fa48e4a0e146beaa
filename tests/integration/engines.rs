//! Real container engines for the tests of the `docker` runtime (issue 11): rootful
//! Podman with a private configuration and graph root, and a private Docker daemon
//! (its own data root, exec root and socket) that the first test needing it starts for
//! the whole run and `make test` stops at its end. `scripts/container-env.sh` (run by `make test`) installs both,
//! writes the configuration and builds the two local images; nothing is ever pulled.
//!
//! Overbrainer itself gets the configuration the way a user's shell would hand it:
//! `CONTAINERS_CONF` and `CONTAINERS_STORAGE_CONF` for Podman, `DOCKER_HOST` for
//! Docker ([`TestEngine::env`]). Tests that drive an executor directly put
//! [`ContainerEnv::shims`] first on the target's `PATH` instead: two-line scripts that
//! set those same variables and run the real engine.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// What `scripts/container-env.sh` printed.
pub struct ContainerEnv {
    /// Its `KEY=VALUE` lines.
    values: Vec<(String, String)>,
}

impl ContainerEnv {
    /// The value of `key`. An empty value counts as unset: an empty image name (or
    /// path) never reaches an engine's command line.
    ///
    /// # Panics
    ///
    /// When the script printed no `key`, or an empty one, naming it.
    pub fn get(&self, key: &str) -> &str {
        lookup(&self.values, key)
    }

    /// The busybox image (shell-only jobs).
    pub fn shell_image(&self) -> &str {
        self.get("SHELL_IMAGE")
    }

    /// The image holding the Axolotl venv, its Python and the tiny model.
    pub fn axolotl_image(&self) -> &str {
        self.get("AXOLOTL_IMAGE")
    }

    /// Directory of the `podman` and `docker` shims.
    pub fn shims(&self) -> PathBuf {
        PathBuf::from(self.get("SHIMS"))
    }
}

/// The value of `key` among `values`; a missing or empty one fails, naming `key`.
fn lookup<'a>(values: &'a [(String, String)], key: &str) -> &'a str {
    match values.iter().find(|(k, _)| k == key) {
        Some((_, value)) if !value.trim().is_empty() => value,
        Some(_) => panic!(
            "scripts/container-env.sh printed an empty {key}: an empty value counts as unset; \
             run `make test` (as root) to rebuild the test images"
        ),
        None => panic!("scripts/container-env.sh printed no {key}"),
    }
}

// Defect 3: an empty `..._IMAGE` from the environment script is refused, naming the
// variable, and never handed on as an empty image name.
#[test]
fn regression_an_empty_image_variable_counts_as_unset_and_is_named() {
    let values = vec![
        ("SHELL_IMAGE".to_owned(), "localhost/x:1".to_owned()),
        ("AXOLOTL_IMAGE".to_owned(), String::new()),
        ("POD_IMAGE".to_owned(), "  ".to_owned()),
    ];
    assert_eq!(lookup(&values, "SHELL_IMAGE"), "localhost/x:1");
    for key in ["AXOLOTL_IMAGE", "POD_IMAGE", "TINY_MODEL"] {
        let panic = std::panic::catch_unwind(|| lookup(&values, key).to_owned()).expect_err(key);
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains(key), "{key}: {message}");
    }
}

/// Runs `scripts/container-env.sh` once for the test run (a shared fixture: its
/// output is kept on disk for every test process of the run).
///
/// # Panics
///
/// When the script fails: the message says to run it (or `make test`) as root.
pub fn container_env() -> &'static ContainerEnv {
    static ENV: OnceLock<ContainerEnv> = OnceLock::new();
    ENV.get_or_init(|| {
        let text = crate::util::setup_script(
            "container-env.sh",
            "run `make test` (as root), which installs Podman and Docker (`apt-get install \
             --no-install-recommends podman runc docker.io debootstrap busybox-static`) and \
             builds the test images",
        );
        let values = text
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        ContainerEnv { values }
    })
}

/// One of the two real engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestEngine {
    Podman,
    Docker,
}

impl TestEngine {
    /// Both engines.
    pub const ALL: [Self; 2] = [Self::Podman, Self::Docker];

    /// The program, and the `engine` value of a target.
    pub fn name(self) -> &'static str {
        match self {
            Self::Podman => "podman",
            Self::Docker => "docker",
        }
    }

    /// The engine as the executor names it.
    pub fn config(self) -> overbrainer::config::Engine {
        match self {
            Self::Podman => overbrainer::config::Engine::Podman,
            Self::Docker => overbrainer::config::Engine::Docker,
        }
    }

    /// The variables that point this engine's client at the test's engine, as a user
    /// would export them. For Docker, the test's daemon is started first.
    pub fn env(self) -> Vec<(String, String)> {
        let env = container_env();
        match self {
            Self::Podman => vec![
                (
                    "CONTAINERS_CONF".to_owned(),
                    env.get("CONTAINERS_CONF").to_owned(),
                ),
                (
                    "CONTAINERS_STORAGE_CONF".to_owned(),
                    env.get("CONTAINERS_STORAGE_CONF").to_owned(),
                ),
            ],
            Self::Docker => {
                docker_daemon();
                vec![("DOCKER_HOST".to_owned(), env.get("DOCKER_HOST").to_owned())]
            }
        }
    }

    /// Engine variables that point this engine's client at an engine that does not know the
    /// test's containers: for Podman a private, empty configuration and storage under
    /// `dir`, for Docker a socket nobody listens on. A shell with them is a user's other
    /// terminal with another `CONTAINERS_CONF` or `DOCKER_HOST`.
    pub fn env_elsewhere(self, dir: &Path) -> Vec<(String, String)> {
        std::fs::create_dir_all(dir.join("tmp")).expect("engine dir");
        match self {
            TestEngine::Podman => {
                let conf = dir.join("containers.conf");
                std::fs::write(
                    &conf,
                    format!(
                        "[containers]\nnetns = \"none\"\n[engine]\nruntime = \"runc\"\n\
                         cgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n\
                         events_logfile_path = \"{d}/events.log\"\ntmp_dir = \"{d}/tmp\"\n",
                        d = dir.display()
                    ),
                )
                .expect("containers.conf");
                let storage = dir.join("storage.conf");
                std::fs::write(
                    &storage,
                    format!(
                        "[storage]\ndriver = \"vfs\"\ngraphroot = \"{d}/graph\"\nrunroot = \"{d}/run\"\n",
                        d = dir.display()
                    ),
                )
                .expect("storage.conf");
                vec![
                    (
                        "CONTAINERS_CONF".to_owned(),
                        conf.to_string_lossy().into_owned(),
                    ),
                    (
                        "CONTAINERS_STORAGE_CONF".to_owned(),
                        storage.to_string_lossy().into_owned(),
                    ),
                ]
            }
            TestEngine::Docker => vec![(
                "DOCKER_HOST".to_owned(),
                format!("unix://{}", dir.join("nobody.sock").display()),
            )],
        }
    }

    /// Makes sure the engine answers: starts the test's Docker daemon for Docker
    /// (Podman has no daemon).
    pub fn start(self) {
        if self == Self::Docker {
            docker_daemon();
        }
    }

    /// The engine's client, configured for the test's engine.
    pub fn command(self) -> Command {
        let mut command = Command::new(self.name());
        command.envs(self.env());
        command
    }

    /// Names of every container the engine knows, running or not.
    pub fn containers(self) -> Vec<String> {
        let mut command = self.command();
        command.args(["ps", "-a", "--format", "{{.Names}}"]);
        let output =
            crate::util::output_within(&mut command, Duration::from_secs(120)).expect("engine ps");
        assert!(output.status.success(), "{} ps -a failed", self.name());
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Whether the container `name` exists and runs.
    pub fn is_running(self, name: &str) -> bool {
        let mut command = self.command();
        command.args([
            "container",
            "inspect",
            "--format",
            "{{.State.Running}}",
            name,
        ]);
        let output = crate::util::output_within(&mut command, Duration::from_secs(120))
            .expect("engine inspect");
        output.status.success() && String::from_utf8_lossy(&output.stdout).trim() == "true"
    }

    /// Polls until the container `name` runs, failing after `deadline`.
    pub fn wait_running(self, name: &str, deadline: Duration) {
        let what = format!("{}: container {name} to run", self.name());
        crate::util::poll(deadline, &what, || {
            if self.is_running(name) {
                Ok(())
            } else {
                Err("not running")
            }
        });
    }

    /// Removes the container `name` if it is left (clean-up after a failed test).
    pub fn remove(self, name: &str) {
        let _ = self
            .command()
            .args(["rm", "-f", name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Makes sure the test run's Docker daemon answers: `dockerd` on its private socket,
/// data root and exec root. Under nextest every test is a process of its own, so the
/// daemon belongs to no test: the first test that needs it starts it detached (`setsid
/// -f`), under a file lock in the daemon's directory so two tests never start two, and
/// every later test uses it as it is. `make test` stops it when the run ends
/// (`scripts/stop-test-dockerd.sh`, which reads the daemon's pidfile).
fn docker_daemon() {
    use fs4::fs_std::FileExt as _;
    static STARTING: Mutex<()> = Mutex::new(());
    let _one_at_a_time = STARTING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let env = container_env();
    let host = env.get("DOCKER_HOST").to_owned();
    let answers = || {
        let mut info = Command::new("docker");
        info.args(["-H", &host, "info"]);
        crate::util::output_within(&mut info, Duration::from_secs(60))
            .is_ok_and(|output| output.status.success())
    };
    if answers() {
        return;
    }
    let dir = PathBuf::from(env.get("DOCKER_DIR"));
    let lock = std::fs::File::create(dir.join("test-dockerd.lock")).expect("dockerd lock");
    lock.lock_exclusive().expect("dockerd lock");
    if answers() {
        return;
    }
    let log_path = dir.join("dockerd.log");
    let log = std::fs::File::create(&log_path).expect("dockerd.log");
    let status = Command::new("setsid")
        .args(["-f", "dockerd"])
        .args(env.get("DOCKERD_ARGS").split_whitespace())
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .status();
    assert!(
        status.as_ref().is_ok_and(std::process::ExitStatus::success),
        "cannot start dockerd ({status:?}): run `apt-get install docker.io`"
    );
    crate::util::poll(
        Duration::from_secs(120),
        &format!("dockerd to answer on {host}"),
        || {
            if answers() {
                Ok(())
            } else {
                Err(std::fs::read_to_string(&log_path).unwrap_or_default())
            }
        },
    );
}

/// Process IDs of the processes on this machine whose environment holds `needle`
/// (container processes included: they are host processes too).
pub fn processes_with_env(needle: &str) -> Vec<u32> {
    processes_with(needle, "environ")
}

/// Process IDs of the processes on this machine whose command line holds `needle`.
pub fn processes_with_cmdline(needle: &str) -> Vec<u32> {
    processes_with(needle, "cmdline")
}

fn processes_with(needle: &str, file: &str) -> Vec<u32> {
    let me = std::process::id();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        if let Ok(bytes) = std::fs::read(entry.path().join(file))
            && bytes
                .windows(needle.len())
                .any(|window| window == needle.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

/// Files under `root` changed since `since` whose content holds `needle` (symbolic
/// links not followed; unreadable entries skipped). Older files, such as the layers
/// of the images, cannot hold a canary made after them and are not read.
pub fn files_holding(root: &Path, needle: &str, since: std::time::SystemTime) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file()
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|modified| modified >= since)
                && let Ok(bytes) = std::fs::read(&path)
                && bytes
                    .windows(needle.len())
                    .any(|window| window == needle.as_bytes())
            {
                found.push(path);
            }
        }
    }
    found
}

/// A long random token, for canaries.
pub fn canary() -> String {
    let mut bytes = [0_u8; 24];
    let file = std::fs::File::open("/dev/urandom").expect("/dev/urandom");
    std::io::Read::read_exact(&mut &file, &mut bytes).expect("random bytes");
    let mut token = String::from("canary");
    for byte in bytes {
        let _ = std::fmt::Write::write_fmt(&mut token, format_args!("{byte:02x}"));
    }
    token
}
