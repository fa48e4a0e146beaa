//! A real OpenSSH server for tests: `/usr/sbin/sshd -D -e` on 127.0.0.1 at a free
//! port, with a throw-away host key, an `authorized_keys` for a throw-away client
//! key of the current user, and a `known_hosts` that trusts only that host key.
//!
//! ```ignore
//! let sshd = sshd::Sshd::start();
//! let executor = SshExecutor::connect(sshd.destination(), "work").await?;
//! // ... sshd.kill() to drop every connection; dropping `sshd` stops it too.
//! ```
//!
//! Each server lives in its own temporary directory, so tests run in parallel. A
//! missing `sshd` fails the test with the command that installs it.

use std::io::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use overbrainer::exec::SshDestination;

/// Path of the OpenSSH server.
pub const SSHD: &str = "/usr/sbin/sshd";

/// Options of [`Sshd::start_with`].
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// Directory put in front of `PATH` in every session (sshd's `SetEnv`), for
    /// stand-in programs.
    pub path_prefix: Option<PathBuf>,
    /// Run the server in a PID namespace of its own (`unshare --pid --fork
    /// --mount-proc`) whose `PID 1` is a `sleep` that never reaps orphans, as in a
    /// container whose entrypoint is a plain shell script: a job's dead processes
    /// stay there as zombies. Process IDs of the target are then those of the
    /// namespace; look at them through the executor (`probe`).
    pub pid_namespace: bool,
    /// Variables set in every session (sshd's `SetEnv`, beside `PATH`), as a login
    /// shell's profile would: values without spaces or quotes.
    pub env: Vec<(String, String)>,
}

/// A running `sshd`, stopped when dropped.
pub struct Sshd {
    child: Option<Child>,
    dir: tempfile::TempDir,
    port: u16,
    user: String,
}

impl Sshd {
    /// Starts a server with default [`Options`].
    pub fn start() -> Self {
        Self::start_with(&Options::default())
    }

    /// Starts a server and waits until it accepts connections.
    ///
    /// # Panics
    ///
    /// When `sshd` is not installed (the message says to run
    /// `apt-get install openssh-server`), `ssh` or `ssh-keygen` is not on `PATH`
    /// (`apt-get install openssh-client`), or the server does not start within 20
    /// seconds.
    pub fn start_with(options: &Options) -> Self {
        assert!(
            Path::new(SSHD).exists(),
            "{SSHD} is missing: run `apt-get install openssh-server`"
        );
        for client in ["ssh", "ssh-keygen"] {
            assert!(
                on_path(client),
                "`{client}` is missing: run `apt-get install openssh-client`"
            );
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        keygen(&root.join("host_key"));
        keygen(&root.join("client_key"));
        std::fs::copy(root.join("client_key.pub"), root.join("authorized_keys"))
            .expect("authorized_keys");
        let user = current_user();
        // Privilege separation needs this directory when sshd runs as root.
        let _ = std::fs::create_dir_all("/run/sshd");
        let mut last_log = String::new();
        for _ in 0..5 {
            let port = free_port();
            let mut config = format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {root}/host_key\n\
                 AuthorizedKeysFile {root}/authorized_keys\nPermitRootLogin yes\nStrictModes no\n\
                 PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
                 PidFile none\nMaxSessions 64\nMaxStartups 64\nLogLevel VERBOSE\n",
                root = root.display()
            );
            let mut set_env = Vec::new();
            if let Some(prefix) = &options.path_prefix {
                set_env.push(format!(
                    "PATH={}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
                    prefix.to_string_lossy()
                ));
            }
            for (name, value) in &options.env {
                assert!(
                    !value.contains([' ', '"', '\'', '\n']),
                    "SetEnv {name}: a value without spaces or quotes"
                );
                set_env.push(format!("{name}={value}"));
            }
            if !set_env.is_empty() {
                // One line: sshd keeps the first `SetEnv` only.
                config.push_str("SetEnv ");
                config.push_str(&set_env.join(" "));
                config.push('\n');
            }
            std::fs::write(root.join("sshd_config"), config).expect("sshd_config");
            let log = std::fs::File::create(root.join("sshd.log")).expect("sshd.log");
            let mut command = if options.pid_namespace {
                let mut command = unshare_pid_namespace();
                command.args(["sh", "-c", "\"$0\" -D -e -f \"$1\" & exec sleep 100000"]);
                command.arg(SSHD);
                command
            } else {
                let mut command = Command::new(SSHD);
                command.arg("-D").arg("-e").arg("-f");
                command
            };
            let mut child = command
                .arg(root.join("sshd_config"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("start sshd");
            let deadline = Instant::now() + Duration::from_secs(20);
            let address = SocketAddr::from(([127, 0, 0, 1], port));
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                    let host_key =
                        std::fs::read_to_string(root.join("host_key.pub")).expect("host key");
                    let mut known =
                        std::fs::File::create(root.join("known_hosts")).expect("known_hosts");
                    writeln!(known, "[127.0.0.1]:{port} {}", host_key.trim()).expect("write");
                    std::fs::write(
                        root.join("ssh_config"),
                        "Host *\n  BatchMode yes\n  LogLevel ERROR\n",
                    )
                    .expect("ssh_config");
                    return Self {
                        child: Some(child),
                        dir,
                        port,
                        user,
                    };
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.wait();
            last_log = std::fs::read_to_string(root.join("sshd.log")).unwrap_or_default();
        }
        panic!("sshd did not start: {last_log}");
    }

    /// The TCP port it listens on, on 127.0.0.1.
    #[allow(dead_code, reason = "for the tests of other areas")]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding its keys and files.
    #[allow(dead_code, reason = "for the tests of other areas")]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Where to reach it: the current user at 127.0.0.1 on [`Sshd::port`], with the
    /// throw-away client key, its own `known_hosts` and an `ssh` configuration
    /// file that replaces `~/.ssh/config`.
    pub fn destination(&self) -> SshDestination {
        let mut destination = SshDestination::new(&format!("{}@127.0.0.1", self.user));
        destination.port = Some(self.port);
        destination.config_file = Some(self.dir.path().join("ssh_config"));
        destination.identity_file = Some(self.dir.path().join("client_key"));
        destination.known_hosts_file = Some(self.dir.path().join("known_hosts"));
        destination
    }

    /// [`Sshd::destination`] with an empty `known_hosts`: its host key is unknown.
    pub fn destination_with_unknown_host_key(&self) -> SshDestination {
        let empty = self.dir.path().join("known_hosts.empty");
        std::fs::write(&empty, "").expect("empty known_hosts");
        let mut destination = self.destination();
        destination.known_hosts_file = Some(empty);
        destination
    }

    /// Kills the listening server. Open connections are served by their own
    /// `sshd` processes and stay up.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the listening server and every connection it serves (the `sshd`
    /// processes it forked for them, by PID): clients then see their connections
    /// drop, and any new connection is refused. Processes started in a session and
    /// detached from it (`setsid`) go on.
    #[allow(dead_code, reason = "for the tests of other areas")]
    pub fn kill_with_connections(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // Stopped, it forks no new connection while its children are listed.
        let _ = signal(child.id(), "STOP");
        let children = children_of(child.id());
        let _ = child.kill();
        let _ = child.wait();
        for connection in children {
            let _ = signal(connection, "KILL");
        }
    }

    /// Stops (`SIGSTOP`) every process serving a connection of this server, and the
    /// processes under them, and returns their IDs: the target is wedged, its kernel
    /// still accepts and acknowledges the TCP traffic but nothing answers. The
    /// listening server itself goes on, so new connections are served.
    #[allow(dead_code, reason = "for the tests of other areas")]
    pub fn wedge_connections(&self) -> Vec<u32> {
        let Some(child) = &self.child else {
            return Vec::new();
        };
        let mut stopped = Vec::new();
        let mut pending = children_of(child.id());
        while let Some(pid) = pending.pop() {
            let _ = signal(pid, "STOP");
            stopped.push(pid);
            pending.extend(children_of(pid));
        }
        stopped
    }

    /// The server's log so far, for assertion messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// PIDs of the processes whose parent is `parent`, from `/proc/<pid>/stat` (proc(5):
/// the parent PID is the second field after the parenthesised command name).
fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .collect()
}

/// Sends the signal `name` (`KILL`, `INT`, ...) to the single process `pid`, as
/// `kill -s NAME -- PID` (never `kill -NAME`: procps-ng 4.0.2 reads a negative or odd
/// argument there as options), and says whether `kill` succeeded. Here rather than in
/// `util` because the exec benchmark includes this file alone.
pub fn signal(pid: u32, name: &str) -> bool {
    Command::new("kill")
        .args(["-s", name, "--", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// `unshare --pid --fork --mount-proc --kill-child`, to be given the program that
/// becomes `PID 1` of a new PID namespace; it dies with the returned command's
/// process.
///
/// # Panics
///
/// When `unshare` is missing (the message says to install `util-linux`).
pub fn unshare_pid_namespace() -> Command {
    let mut command = unshare();
    command.args(["--pid", "--fork", "--mount-proc", "--kill-child"]);
    command
}

/// `unshare --mount --propagation private`, to be given the program to run in a new
/// mount namespace whose mounts stay there.
///
/// # Panics
///
/// When `unshare` is missing (the message says to install `util-linux`).
pub fn unshare_mount_namespace() -> Command {
    let mut command = unshare();
    command.args(["--mount", "--propagation", "private"]);
    command
}

/// `unshare`, which must be installed.
fn unshare() -> Command {
    let found = Command::new("sh")
        .args(["-c", "command -v unshare"])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    assert!(
        found,
        "`unshare` is missing: run `apt-get install util-linux`"
    );
    Command::new("unshare")
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "test", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .expect("ssh-keygen: run `apt-get install openssh-client`");
    assert!(status.success(), "ssh-keygen failed");
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

fn current_user() -> String {
    let output = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// Whether `program` is a file in a directory of `PATH`.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
