//! A real single-node Slurm cluster for tests (issue 19): Debian's `slurm-wlm` 22.05 and
//! `munge`, started once per test process (under nextest, one per test) in a temporary
//! directory of its own: `munged`
//! as the `munge` user on a private socket and key, `slurmctld -D` and
//! `slurmd -D -N localhost` on free ports, with the `slurm.conf` the issue gives
//! (`proctrack/linuxproc`, `task/none`, `select/cons_tres`, no accounting storage,
//! `KillWait=5`, `MinJobAge=3600`, one node `localhost` with 2 CPUs). Every daemon runs
//! under `setpriv --pdeathsig TERM` as a child of a thread that lives as long as the
//! test process, so the cluster goes with it; its directory is removed by the next
//! test binary's start once none of its daemons lives.
//!
//! Clients find it through `SLURM_CONF` ([`Cluster::env`]): the binary's environment,
//! and the `SetEnv` of the test's `sshd` for a login node over SSH. Tests that change
//! the cluster (drain its node, restart its controller) hold [`Cluster::lock`] for
//! their whole run, so the slurm tests of one binary take turns.
//!
//! A missing `slurm-wlm` or `munge` fails the test naming `make test-deps`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// How to install the cluster's programs, for the failure message.
const INSTALL: &str =
    "run `make test-deps` (apt-get install -y --no-install-recommends slurm-wlm munge)";

/// The programs the cluster needs.
const PROGRAMS: &[&str] = &[
    "/usr/sbin/munged",
    "/usr/sbin/slurmctld",
    "/usr/sbin/slurmd",
    "/usr/bin/sbatch",
    "/usr/bin/scontrol",
    "/usr/bin/sinfo",
    "/usr/bin/scancel",
];

/// A test's turn on the cluster ([`Cluster::lock`]).
pub struct Turn<'a> {
    cluster: &'a Cluster,
    _guard: MutexGuard<'a, ()>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.cluster.command("scancel", &["--me"]);
        }));
    }
}

/// The test process's cluster.
pub struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    turn: Mutex<()>,
}

/// The cluster, started on first use.
///
/// # Panics
///
/// When `slurm-wlm` or `munge` is missing (naming [`INSTALL`]), or the cluster does not
/// show its node idle within two minutes.
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(Cluster::start)
}

impl Cluster {
    fn start() -> Self {
        for program in PROGRAMS {
            assert!(
                Path::new(program).exists(),
                "{program} is missing: {INSTALL}"
            );
        }
        sweep_stale();
        let dir = tempfile::Builder::new()
            .prefix("ob-slurm-")
            .tempdir()
            .expect("temp dir")
            .keep();
        // Whose cluster this is: `scripts/test-sweep.sh` kills what is left of a cluster
        // whose test process is gone, daemons included.
        std::fs::write(dir.join("owner.pid"), std::process::id().to_string()).expect("owner");
        // munged wants its socket directory open to all (execute), its key private.
        let munge = dir.join("munge");
        std::fs::create_dir_all(&munge).expect("munge dir");
        let key = munge.join("key");
        std::fs::write(&key, random_key()).expect("munge key");
        chown_munge(&munge);
        set_mode(&dir, 0o755);
        set_mode(&munge, 0o755);
        set_mode(&key, 0o400);
        for sub in ["state", "spool", "log"] {
            std::fs::create_dir_all(dir.join(sub)).expect("slurm dir");
        }
        let ctld_port = free_port();
        let slurmd_port = free_port();
        let d = dir.display();
        let conf = dir.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=obtest\nSlurmctldHost=localhost\nSlurmctldPort={ctld_port}\n\
                 SlurmdPort={slurmd_port}\nSlurmUser=root\nSlurmdUser=root\n\
                 AuthType=auth/munge\nAuthInfo=socket={d}/munge/sock\nCredType=cred/munge\n\
                 StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
                 SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
                 SlurmctldLogFile={d}/log/slurmctld.log\nSlurmdLogFile={d}/log/slurmd.log\n\
                 ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
                 SelectType=select/cons_tres\nAccountingStorageType=accounting_storage/none\n\
                 JobCompType=jobcomp/filetxt\nJobCompLoc={d}/log/jobcomp\n\
                 SchedulerParameters=batch_sched_delay=0,sched_min_interval=0\n\
                 KillWait=5\nMinJobAge=3600\nReturnToService=2\n\
                 NodeName=localhost CPUs=2 State=UNKNOWN\n\
                 PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n"
            ),
        )
        .expect("slurm.conf");
        let cluster = Self {
            dir,
            conf,
            turn: Mutex::new(()),
        };
        let sock = munge.join("sock");
        cluster.daemon(
            "munged",
            &[
                "--reuid",
                "munge",
                "--regid",
                "munge",
                "--init-groups",
                "--",
                "/usr/sbin/munged",
                "-F",
                &format!("--socket={}", sock.display()),
                &format!("--key-file={}", key.display()),
                &format!("--pid-file={}", munge.join("pid").display()),
                &format!("--log-file={}", munge.join("log").display()),
                &format!("--seed-file={}", munge.join("seed").display()),
            ],
        );
        crate::util::poll(Duration::from_secs(60), "munged's socket", || {
            if sock.exists() {
                Ok(())
            } else {
                Err(std::fs::read_to_string(munge.join("log")).unwrap_or_default())
            }
        });
        cluster.start_controller();
        cluster.daemon(
            "slurmd",
            &["--", "/usr/sbin/slurmd", "-D", "-N", "localhost"],
        );
        cluster.wait_idle();
        cluster
    }

    /// Starts `program` with `args` under `setpriv --pdeathsig TERM`, as the child of
    /// a thread that lives as long as the test process; its output goes to
    /// `log/<name>.out`.
    fn daemon(&self, name: &str, args: &[&str]) {
        let log = std::fs::File::create(self.dir.join("log").join(format!("{name}.out")))
            .expect("daemon log");
        let args: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        let conf = self.conf.clone();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let child = Command::new("setpriv")
                .arg("--pdeathsig")
                .arg("TERM")
                .args(&args)
                .env("SLURM_CONF", &conf)
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn();
            match child {
                Ok(mut child) => {
                    let _ = sender.send(None);
                    let _ = child.wait();
                    // Keep this thread, the parent-death signal's owner, for the rest.
                    loop {
                        std::thread::park();
                    }
                }
                Err(error) => {
                    let _ = sender.send(Some(error.to_string()));
                }
            }
        });
        if let Ok(Some(error)) = receiver.recv() {
            panic!("cannot start {name} ({error}): {INSTALL}");
        }
    }

    /// Starts `slurmctld -D` (again, after [`Cluster::stop_controller`]).
    pub fn start_controller(&self) {
        self.daemon("slurmctld", &["--", "/usr/sbin/slurmctld", "-D"]);
        crate::util::poll(Duration::from_secs(60), "slurmctld to answer", || {
            let output = self.command("scontrol", &["ping"]);
            if output.contains("is UP") {
                Ok(())
            } else {
                Err(output)
            }
        });
    }

    /// Stops the controller only (`scontrol shutdown slurmctld`) and waits until it no
    /// longer answers; jobs keep running on the node.
    pub fn stop_controller(&self) {
        self.command("scontrol", &["shutdown", "slurmctld"]);
        crate::util::poll(Duration::from_secs(60), "slurmctld to stop", || {
            let output = self.command("scontrol", &["ping"]);
            if output.contains("is UP") {
                Err(output)
            } else {
                Ok(())
            }
        });
    }

    /// Waits until `sinfo` shows the node idle.
    pub fn wait_idle(&self) {
        crate::util::poll(
            Duration::from_secs(120),
            "the Slurm node to be idle",
            || {
                let output = self.command("sinfo", &["-h", "-N", "-o", "%T"]);
                if output.trim() == "idle" {
                    Ok(())
                } else {
                    Err(format!(
                        "{output}\n{}",
                        std::fs::read_to_string(self.dir.join("log/slurmctld.log"))
                            .unwrap_or_default()
                    ))
                }
            },
        );
    }

    /// Runs a Slurm client program against the cluster (at most two minutes) and returns
    /// its output and error output together.
    pub fn command(&self, program: &str, args: &[&str]) -> String {
        let child = Command::new(program)
            .args(args)
            .env("SLURM_CONF", &self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot run {program} ({error}): {INSTALL}"));
        let output = crate::util::wait_output(
            child,
            Duration::from_secs(120),
            &format!("{program} {args:?}"),
        );
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    }

    /// A directory of the client programs (`sbatch`, `scontrol`, `sinfo`, `scancel`,
    /// `squeue`, `srun`), each the real one run with this cluster's `SLURM_CONF`: for a login
    /// node that is this test process, whose own environment the tests do not change.
    pub fn bin(&self) -> PathBuf {
        let bin = self.dir.join("bin");
        if !bin.exists() {
            let staging = self.dir.join("bin.tmp");
            std::fs::create_dir_all(&staging).expect("bin dir");
            for program in ["sbatch", "scontrol", "sinfo", "scancel", "squeue", "srun"] {
                let path = staging.join(program);
                std::fs::write(
                    &path,
                    format!(
                        "#!/bin/sh\nSLURM_CONF={}\nexport SLURM_CONF\nexec /usr/bin/{program} \"$@\"\n",
                        self.conf.display()
                    ),
                )
                .expect("client program");
                set_mode(&path, 0o755);
            }
            let _ = std::fs::rename(&staging, &bin);
        }
        bin
    }

    /// The variables a client needs: `SLURM_CONF`.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![("SLURM_CONF".to_owned(), self.conf.display().to_string())]
    }

    /// Takes this test's turn on the cluster, until the guard drops: cancels what a
    /// failed test before left (`scancel --me`), resumes the node and waits for it to
    /// be idle. The guard cancels the test's jobs again when it drops, passed or
    /// failed: under nextest each test has a cluster of its own, whose daemons go with
    /// the test's process, and a job's step must not outlive them.
    pub fn lock(&self) -> Turn<'_> {
        let guard = self
            .turn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.command("scancel", &["--me"]);
        self.command(
            "scontrol",
            &["update", "nodename=localhost", "state=resume"],
        );
        self.wait_idle();
        Turn {
            cluster: self,
            _guard: guard,
        }
    }

    /// `scontrol -o show job ID`.
    pub fn job(&self, id: u64) -> String {
        self.command("scontrol", &["-o", "show", "job", &id.to_string()])
    }
}

/// Removes the directories of clusters whose test process is gone: the daemons went
/// with it (their parent-death signal), so none of the process IDs they recorded is
/// alive any more, and the directory is ten minutes old.
fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        // A cluster another test process is starting has no process IDs yet: only
        // directories untouched for ten minutes are looked at.
        let old = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(600));
        if !old || !entry.file_name().to_string_lossy().starts_with("ob-slurm-") {
            continue;
        }
        let alive = ["slurmctld.pid", "slurmd.pid", "munge/pid"]
            .iter()
            .any(|file| {
                std::fs::read_to_string(path.join(file))
                    .ok()
                    .and_then(|pid| pid.trim().parse::<u32>().ok())
                    .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists())
            });
        if !alive {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// 1024 random bytes for munge's key.
fn random_key() -> Vec<u8> {
    let mut key = vec![0_u8; 1024];
    let mut urandom = std::fs::File::open("/dev/urandom").expect("/dev/urandom");
    std::io::Read::read_exact(&mut urandom, &mut key).expect("random key");
    key
}

fn chown_munge(dir: &Path) {
    let status = Command::new("chown")
        .args(["-R", "munge:munge"])
        .arg(dir)
        .status()
        .expect("chown");
    assert!(status.success(), "chown munge {}: {INSTALL}", dir.display());
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A TCP port free on 127.0.0.1 now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("free port")
}
