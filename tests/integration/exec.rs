//! One conformance suite for every executor, written against `&impl Executor` and
//! run on a `LocalExecutor` and on an `SshExecutor` connected to a real `sshd`
//! started by the test on 127.0.0.1. The SSH target is this very machine, so a test
//! can look at the target's files and processes directly.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use overbrainer::exec::{
    CANCEL_FILE, CANCELLING_FILE, CLAIM_FILE, Container, EXIT_FILE, ExecError, Executor, JOB_LOG,
    JobCommand, JobId, JobStatus, LocalExecutor, MAX_TAIL_READ, PID_FILE, Pid, SshExecutor,
    local_manifest,
};
use secrecy::SecretString;

use crate::engines::{TestEngine, container_env, processes_with_env};
use crate::sshd::{Options, Sshd};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// How long a job may take to reach the awaited state.
const DEADLINE: Duration = Duration::from_secs(60);

fn path_str(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn local(root: &Path) -> LocalExecutor {
    LocalExecutor::new(&root.join("local-work")).expect("local executor")
}

async fn ssh(sshd: &Sshd, root: &Path) -> SshExecutor {
    SshExecutor::connect(sshd.destination(), &path_str(&root.join("ssh-work")))
        .await
        .unwrap_or_else(|error| panic!("connect: {error:?}\n{}", sshd.log()))
}

/// Polls the status of `job` until `done` accepts it.
async fn wait_status(
    executor: &impl Executor,
    job: &JobId,
    done: impl Fn(JobStatus) -> bool,
) -> JobStatus {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let status = executor.status(job).await.expect("status");
        if done(status) {
            return status;
        }
        assert!(Instant::now() < deadline, "job still {status:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until `path` exists.
async fn wait_file(path: &Path) {
    let deadline = Instant::now() + DEADLINE;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn job(dir: &str, script: &str) -> JobCommand {
    JobCommand {
        dir: dir.to_owned(),
        script: script.to_owned(),
        secrets: Vec::new(),
        container: None,
    }
}

// ---------------------------------------------------------------- claim

async fn check_claim(executor: &impl Executor) -> TestResult {
    let dir = format!("{}/claimed/run 1", executor.workdir());
    assert!(executor.claim(&dir, "owner-a").await?);
    assert!(executor.claim(&dir, "owner-a").await?, "same owner again");
    assert!(!executor.claim(&dir, "owner-b").await?, "another owner");
    let held = std::fs::read_to_string(Path::new(&dir).join(CLAIM_FILE))?;
    assert_eq!(held, "owner-a\n");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_claim(&local(root.path())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_claim(&ssh(&sshd, root.path()).await).await
}

// ---------------------------------------------------------------- transfers

/// A tree with awkward names: spaces, a line break, a leading `-`, non-ASCII
/// letters, an empty file, an empty directory, a symbolic link, a skipped entry
/// and an excluded checkpoint.
fn awkward_tree(root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root.join("empty dir"))?;
    std::fs::create_dir_all(root.join("output/checkpoint-3"))?;
    std::fs::create_dir_all(root.join("skipped"))?;
    std::fs::write(root.join("a b.txt"), "spaces\n")?;
    std::fs::write(root.join("new\nline"), "line break\n")?;
    std::fs::write(root.join("-leading"), "dash\n")?;
    std::fs::write(root.join("héllo wörld ü"), "non-ascii\n")?;
    std::fs::write(root.join("empty"), "")?;
    std::fs::write(root.join("skipped/secret.txt"), "never leaves")?;
    std::fs::write(root.join("output/checkpoint-3/weights"), "ckpt")?;
    let big: Vec<u8> = (0..300_000_u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("output/adapter.bin"), big)?;
    std::os::unix::fs::symlink("a b.txt", root.join("link"))?;
    Ok(())
}

async fn check_transfers(executor: &impl Executor, scratch: &Path) -> TestResult {
    let source = scratch.join("source");
    awkward_tree(&source)?;
    let remote = format!("{}/run-transfer", executor.workdir());
    executor
        .upload(&source, &remote, &["skipped".to_owned()])
        .await?;
    let remote_path = Path::new(&remote);
    assert!(remote_path.join("empty dir").is_dir());
    assert!(!remote_path.join("skipped").exists());
    assert_eq!(
        std::fs::read_link(remote_path.join("link"))?,
        Path::new("a b.txt")
    );

    let all = vec![".".to_owned()];
    let remote_manifest = executor.manifest(&remote, &all, &[]).await?;
    let mut expected = local_manifest(&source, &all, &[])?;
    expected.retain(|digest| !digest.path.starts_with("skipped/"));
    assert_eq!(remote_manifest, expected);
    let paths: Vec<&str> = remote_manifest.iter().map(|d| d.path.as_str()).collect();
    for name in ["a b.txt", "new\nline", "-leading", "héllo wörld ü", "empty"] {
        assert!(paths.contains(&name), "{name:?} in {paths:?}");
    }
    assert!(!paths.contains(&"link"), "symbolic links are not followed");

    let back = scratch.join("back");
    let exclude = vec!["checkpoint-*".to_owned()];
    let entries = vec![
        "output".to_owned(),
        "a b.txt".to_owned(),
        "new\nline".to_owned(),
        "-leading".to_owned(),
        "héllo wörld ü".to_owned(),
        "empty".to_owned(),
        "empty dir".to_owned(),
        "link".to_owned(),
        "missing".to_owned(),
    ];
    executor
        .download(&remote, &back, &entries, &exclude)
        .await?;
    let downloaded = local_manifest(&back, &all, &[])?;
    let wanted = executor.manifest(&remote, &entries, &exclude).await?;
    assert_eq!(downloaded, wanted);
    assert!(!back.join("output/checkpoint-3").exists());
    assert!(back.join("output/adapter.bin").exists());
    assert!(back.join("empty dir").is_dir());
    assert_eq!(std::fs::read_link(back.join("link"))?, Path::new("a b.txt"));

    let nothing = scratch.join("nothing");
    executor
        .download(&remote, &nothing, &["missing".to_owned()], &[])
        .await?;
    assert!(!nothing.exists(), "no entry, no directory");

    let gone = format!("{}/no such run", executor.workdir());
    let error = executor
        .download(&gone, &scratch.join("gone"), &all, &[])
        .await
        .expect_err("missing remote");
    assert!(
        matches!(&error, ExecError::Command { action: "download", message } if message.contains("does not exist")),
        "{error:?}"
    );
    let error = executor
        .manifest(&gone, &all, &[])
        .await
        .expect_err("missing");
    assert!(
        matches!(&error, ExecError::Command { message, .. } if message.contains("does not exist")),
        "{error:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_transfers(&local(root.path()), root.path()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_transfers(&ssh(&sshd, root.path()).await, root.path()).await
}

// ---------------------------------------------------------------- jobs and files

async fn check_job_files(executor: &impl Executor) -> TestResult {
    let dir = format!("{}/run-job", executor.workdir());
    let started = executor
        .spawn(&job(
            &dir,
            "echo first; printf 'second\\npartial'; echo ' done' >&2; exit 3",
        ))
        .await?;
    let status = wait_status(executor, &started, JobStatus::is_finished).await;
    assert_eq!(status, JobStatus::Exited(3));
    let pid: u32 = std::fs::read_to_string(Path::new(&dir).join(PID_FILE))?
        .trim()
        .parse()?;
    assert_eq!(pid, started.pid.get());
    let log = format!("{dir}/{JOB_LOG}");
    assert_eq!(executor.read_from(&log, 6, 6).await?, b"second");
    assert_eq!(executor.read_from(&log, 1000, 10).await?, b"");
    assert_eq!(
        executor.read_from(&format!("{dir}/none"), 0, 10).await?,
        b""
    );
    let mut tail = executor.tail(&log, 0);
    let lines = tail.poll().await?;
    assert_eq!(lines, ["first", "second", "partial done"]);
    assert!(tail.poll().await?.is_empty());

    let put = format!("{dir}/.pod/snapshot.request");
    executor.put_file(&put, "requested\n").await?;
    executor.put_file(&put, "cost").await?;
    assert_eq!(std::fs::read_to_string(&put)?, "cost");
    executor.put_file(&put, "").await?;
    assert_eq!(std::fs::read_to_string(&put)?, "");

    let output = executor
        .probe(&overbrainer::system::probe_script(&dir))
        .await?;
    let sample = overbrainer::system::parse(
        &String::from_utf8_lossy(&output),
        std::time::SystemTime::now(),
        None,
    );
    assert!(
        sample.run_disk().is_some_and(|disk| disk.size_bytes > 0),
        "{sample:?}"
    );
    assert!(sample.memory.is_some(), "{sample:?}");
    let failed = executor.probe("echo oops >&2; exit 2").await;
    assert!(
        matches!(&failed, Err(ExecError::Command { action: "probe", message }) if message == "oops"),
        "{failed:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_files_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_job_files(&local(root.path())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_files_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_job_files(&ssh(&sshd, root.path()).await).await
}

/// Whether the process group `pgid` has a live (non-zombie) member on this machine.
fn group_has_live_member(pgid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.len() >= 3 && fields[0] != "Z" && fields[2] == pgid.to_string()
    })
}

/// A job whose main command exits while a background child it started still
/// sleeps: the wrapper stops the leftover child, so once the job reads as exited
/// its process group empties, and the status stays `Exited` meanwhile.
async fn check_leftovers_stopped(executor: &impl Executor) -> TestResult {
    let dir = format!("{}/run-leftover", executor.workdir());
    let started = executor
        .spawn(&job(&dir, "sleep 300 &\necho $! > child.pid\nexit 4"))
        .await?;
    let status = wait_status(executor, &started, JobStatus::is_finished).await;
    assert_eq!(status, JobStatus::Exited(4));
    let child: u32 = std::fs::read_to_string(Path::new(&dir).join("child.pid"))?
        .trim()
        .parse()?;
    let pgid = started.pid.get();
    let deadline = Instant::now() + DEADLINE;
    while group_has_live_member(pgid) {
        assert_eq!(executor.status(&started).await?, JobStatus::Exited(4));
        assert!(
            Instant::now() < deadline,
            "process group {pgid} (child {child}) still has live members"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(executor.status(&started).await?, JobStatus::Exited(4));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_stopped_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_leftovers_stopped(&local(root.path())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_stopped_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_leftovers_stopped(&ssh(&sshd, root.path()).await).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_longer_than_the_read_bound_never_stalls_the_tail() -> TestResult {
    let root = tempfile::tempdir()?;
    let executor = local(root.path());
    let file = root.path().join("long.log");
    let long = "x".repeat(usize::try_from(MAX_TAIL_READ)? + 10);
    std::fs::write(&file, format!("{long}\nnext\n"))?;
    let mut tail = executor.tail(&path_str(&file), 0);
    let first = tail.poll().await?;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].len(), usize::try_from(MAX_TAIL_READ)?);
    let rest = tail.poll().await?;
    assert_eq!(rest, ["x".repeat(10), "next".to_owned()]);
    Ok(())
}

// ---------------------------------------------------------------- secrets

/// The part of the secret searched for everywhere.
const SECRET: &str = "ob-secret-7f3a9c1e-DISTINCTIVE";
/// The whole value: blanks at both ends, a backslash, a quote and a `$` must all
/// reach the job unchanged.
const SECRET_VALUE: &str = "  ob-secret-7f3a9c1e-DISTINCTIVE \\n 'q' $HOME\t ";

async fn check_secrets(executor: &impl Executor) -> TestResult {
    let dir = format!("{}/run-secret", executor.workdir());
    let go = Path::new(&dir).join("go");
    let mut command = job(
        &dir,
        "echo started\ni=0; while [ ! -e go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n\
         printf %s \"$HF_TOKEN\" | sha256sum",
    );
    command.secrets = vec![("HF_TOKEN".to_owned(), SecretString::from(SECRET_VALUE))];
    let started = executor.spawn(&command).await?;
    wait_file(&Path::new(&dir).join(JOB_LOG)).await;
    for entry in std::fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            assert!(
                !String::from_utf8_lossy(&cmdline).contains(SECRET),
                "secret on the command line of {}",
                entry.path().display()
            );
        }
    }
    std::fs::write(&go, "")?;
    let status = wait_status(executor, &started, JobStatus::is_finished).await;
    assert_eq!(status, JobStatus::Exited(0));
    let log = std::fs::read_to_string(Path::new(&dir).join(JOB_LOG))?;
    let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
        SECRET_VALUE.as_bytes(),
    ));
    assert!(log.contains(&hash), "the job got its secret: {log}");
    for file in walk(Path::new(&dir)) {
        let content = std::fs::read(&file).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&content).contains(SECRET),
            "secret in {}",
            file.display()
        );
    }

    for (name, value) in [
        ("1BAD", "x"),
        ("BAD-NAME", "x"),
        ("", "x"),
        ("GOOD", "a\nb"),
    ] {
        let refused_dir = format!("{}/refused-{}", executor.workdir(), name.len());
        let mut command = job(&refused_dir, "echo never");
        command.secrets = vec![(name.to_owned(), SecretString::from(value))];
        let error = executor.spawn(&command).await.expect_err("refused");
        match &error {
            ExecError::InvalidSecret(named) => assert_eq!(named, name),
            other => panic!("{other:?}"),
        }
        assert!(!format!("{error}").contains(value) || value == "x");
        assert!(!Path::new(&refused_dir).exists(), "nothing starts");
    }
    Ok(())
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                files.extend(walk(&path));
            } else {
                files.push(path);
            }
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_secrets(&local(root.path())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_secrets(&ssh(&sshd, root.path()).await).await
}

// ---------------------------------------------------------------- status table

/// A process in a group of its own, killed when dropped.
struct Group(std::process::Child);

impl Group {
    fn start() -> Self {
        let child = std::process::Command::new("sleep")
            .arg("120")
            .process_group(0)
            .spawn()
            .expect("sleep");
        Self(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A process ID that no process has now.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().expect("true");
    let pid = child.id();
    child.wait().expect("wait");
    pid
}

/// The precedence of the contract, written independently of the scripts.
fn expected(exit: Option<i32>, cancelling: bool, cancelled: bool, alive: bool) -> JobStatus {
    if cancelled {
        return JobStatus::Cancelled;
    }
    if cancelling {
        return if alive {
            JobStatus::Running
        } else {
            exit.map_or(JobStatus::Cancelled, JobStatus::Exited)
        };
    }
    match (exit, alive) {
        (Some(code), _) => JobStatus::Exited(code),
        (None, true) => JobStatus::Running,
        (None, false) => JobStatus::Lost,
    }
}

async fn check_status_table(executor: &impl Executor) -> TestResult {
    let group = Group::start();
    let dead = dead_pid();
    let mut case = 0;
    for exit in [None, Some(0), Some(7)] {
        for cancelling in [false, true] {
            for cancelled in [false, true] {
                for alive in [false, true] {
                    case += 1;
                    let dir = format!("{}/table/{case}", executor.workdir());
                    let path = Path::new(&dir);
                    std::fs::create_dir_all(path)?;
                    if let Some(code) = exit {
                        std::fs::write(path.join(EXIT_FILE), format!("{code}\n"))?;
                    }
                    if cancelling {
                        std::fs::write(path.join(CANCELLING_FILE), "")?;
                    }
                    if cancelled {
                        std::fs::write(path.join(CANCEL_FILE), "")?;
                    }
                    let pid = if alive { group.pid() } else { dead };
                    let id = JobId {
                        dir: dir.clone(),
                        pid: Pid::new(pid)?,
                        container: None,
                    };
                    let status = executor.status(&id).await?;
                    assert_eq!(
                        status,
                        expected(exit, cancelling, cancelled, alive),
                        "exit {exit:?} cancelling {cancelling} cancelled {cancelled} alive {alive}"
                    );
                }
            }
        }
    }
    let missing = JobId {
        dir: format!("{}/table/missing", executor.workdir()),
        pid: Pid::new(group.pid())?,
        container: None,
    };
    assert_eq!(executor.status(&missing).await?, JobStatus::Lost);

    // A live process group that is not the job: its start time differs from the
    // job's recorded one.
    let recycled_dir = format!("{}/table/recycled", executor.workdir());
    std::fs::create_dir_all(&recycled_dir)?;
    std::fs::write(Path::new(&recycled_dir).join("job.start"), "1\n")?;
    std::fs::write(
        Path::new(&recycled_dir).join(PID_FILE),
        format!("{}\n", group.pid()),
    )?;
    let recycled = JobId {
        dir: recycled_dir.clone(),
        pid: Pid::new(group.pid())?,
        container: None,
    };
    assert_eq!(executor.status(&recycled).await?, JobStatus::Lost);
    std::fs::write(Path::new(&recycled_dir).join(CANCELLING_FILE), "")?;
    assert_eq!(executor.status(&recycled).await?, JobStatus::Cancelled);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_table_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_status_table(&local(root.path())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_table_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_status_table(&ssh(&sshd, root.path()).await).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recycled_pid_of_a_real_job_is_not_running() -> TestResult {
    let root = tempfile::tempdir()?;
    let executor = local(root.path());
    let dir = format!("{}/run-recycled", executor.workdir());
    // The job is killed without writing its exit code: its start time stays.
    let started = executor.spawn(&job(&dir, "kill -KILL $$")).await?;
    let status = wait_status(&executor, &started, JobStatus::is_finished).await;
    assert_eq!(status, JobStatus::Lost);
    let other = Group::start();
    std::fs::write(Path::new(&dir).join(PID_FILE), format!("{}\n", other.pid()))?;
    let recycled = JobId {
        pid: Pid::new(other.pid())?,
        ..started
    };
    assert_eq!(executor.status(&recycled).await?, JobStatus::Lost);
    Ok(())
}

// ---------------------------------------------------------------- cancel

async fn check_cancel(executor: &impl Executor) -> TestResult {
    // A job that ignores SIGTERM is killed after the grace period.
    let dir = format!("{}/run-stubborn", executor.workdir());
    let started = executor
        .spawn(&job(
            &dir,
            "trap 'echo got TERM' TERM\necho ready\ni=0; while [ $i -lt 120 ]; do sleep 1; i=$((i+1)); done",
        ))
        .await?;
    wait_for_log(executor, &dir, "ready").await;
    assert_eq!(executor.status(&started).await?, JobStatus::Running);
    executor.cancel(&started).await?;
    assert_eq!(executor.status(&started).await?, JobStatus::Cancelled);
    assert!(Path::new(&dir).join(CANCEL_FILE).exists());
    let log = std::fs::read_to_string(Path::new(&dir).join(JOB_LOG))?;
    assert!(log.contains("got TERM"), "SIGTERM came first: {log}");
    // Twice changes nothing.
    let marker = std::fs::metadata(Path::new(&dir).join(CANCEL_FILE))?.modified()?;
    executor.cancel(&started).await?;
    assert_eq!(executor.status(&started).await?, JobStatus::Cancelled);
    assert_eq!(
        std::fs::metadata(Path::new(&dir).join(CANCEL_FILE))?.modified()?,
        marker
    );

    // A job that exits by itself is never marked cancelled.
    let dir = format!("{}/run-done", executor.workdir());
    let done = executor.spawn(&job(&dir, "exit 4")).await?;
    wait_status(executor, &done, JobStatus::is_finished).await;
    executor.cancel(&done).await?;
    assert_eq!(executor.status(&done).await?, JobStatus::Exited(4));
    assert!(!Path::new(&dir).join(CANCEL_FILE).exists());
    assert!(!Path::new(&dir).join(CANCELLING_FILE).exists());

    Ok(())
}

async fn wait_for_log(executor: &impl Executor, dir: &str, text: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let log = executor
            .read_from(&format!("{dir}/{JOB_LOG}"), 0, 1 << 16)
            .await
            .expect("read log");
        if String::from_utf8_lossy(&log).contains(text) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "`{text}` never logged in {dir}/{JOB_LOG}: {}",
            String::from_utf8_lossy(&log)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_cancel(&local(root.path())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_cancel(&ssh(&sshd, root.path()).await).await
}

// ---------------------------------------------------------------- containers

/// A job whose script runs `body` in a container `name` of the shell image on
/// `engine` (the engine's client in the background, its process ID in `client.pid`),
/// with `OB_CANARY=<canary>` in the container's environment. The script traps
/// `SIGTERM` and says so; it says how the engine's client ended.
fn container_job(
    dir: &str,
    engine: TestEngine,
    name: &str,
    canary: &str,
    body: &str,
) -> JobCommand {
    let script = format!(
        "trap 'echo script got TERM' TERM\n\
         {engine} run --rm --name {name} -e OB_CANARY={canary} {image} sh -c {body} &\n\
         echo $! > client.pid\n\
         wait $!\n\
         echo \"engine client ended $?\"\n",
        engine = engine.name(),
        image = container_env().shell_image(),
        body = overbrainer::exec::quote(body),
    );
    JobCommand {
        dir: dir.to_owned(),
        script,
        secrets: Vec::new(),
        container: Some(Container {
            engine: engine.config(),
            name: name.to_owned(),
        }),
    }
}

/// A container body that says `ready`, then waits until it gets `SIGTERM`.
const TRAPPING_BODY: &str =
    "trap 'echo container got TERM; exit 0' TERM; echo ready; while :; do sleep 1; done";

// Issue 11, on real engines (was a stand-in `docker` that recorded its calls).
async fn check_container_cancel(
    executor: &impl Executor,
    engine: TestEngine,
    tag: &str,
) -> TestResult {
    engine.start();
    let log = |dir: &str| std::fs::read_to_string(Path::new(dir).join(JOB_LOG));

    // The engine's `stop` comes first, while the group lives: the container gets
    // SIGTERM, its client ends by itself, and the script never sees a signal.
    let dir = format!("{}/run-container", executor.workdir());
    let name = format!("overbrainer-exec-{tag}-{}", engine.name());
    let canary = crate::engines::canary();
    let job_id = executor
        .spawn(&container_job(&dir, engine, &name, &canary, TRAPPING_BODY))
        .await?;
    wait_for_log(executor, &dir, "ready").await;
    assert!(engine.is_running(&name), "{engine:?}: {}", log(&dir)?);
    assert!(!processes_with_env(&canary).is_empty(), "{engine:?}");
    executor.cancel(&job_id).await?;
    assert_eq!(executor.status(&job_id).await?, JobStatus::Cancelled);
    let text = log(&dir)?;
    assert!(text.contains("container got TERM"), "{engine:?}: {text}");
    assert!(text.contains("engine client ended 0"), "{engine:?}: {text}");
    assert!(!text.contains("script got TERM"), "{engine:?}: {text}");
    assert!(
        !engine.containers().contains(&name),
        "{engine:?}: the container is left after cancel"
    );
    assert_eq!(processes_with_env(&canary), Vec::<u32>::new(), "{engine:?}");
    assert!(!group_alive(job_id.pid.get()), "{engine:?}");

    // A container that outlived its engine client (killed with SIGKILL, as a logout
    // might): the job ends by itself with the client, the container runs on, and
    // cancel finds it by name and stops it, leaving the job's status as it was.
    let dir = format!("{}/run-orphan", executor.workdir());
    let name = format!("overbrainer-exec-orphan-{tag}-{}", engine.name());
    let canary = crate::engines::canary();
    let job_id = executor
        .spawn(&container_job(&dir, engine, &name, &canary, TRAPPING_BODY))
        .await?;
    wait_for_log(executor, &dir, "ready").await;
    let client: u32 = std::fs::read_to_string(Path::new(&dir).join("client.pid"))?
        .trim()
        .parse()?;
    let killed = std::process::Command::new("kill")
        .args(["-s", "KILL", &client.to_string()])
        .status()?;
    assert!(killed.success());
    let status = wait_status(executor, &job_id, JobStatus::is_finished).await;
    assert_eq!(status, JobStatus::Exited(0), "{engine:?}: {}", log(&dir)?);
    assert!(
        log(&dir)?.contains("engine client ended 137"),
        "{}",
        log(&dir)?
    );
    // The wrapper stops what is left of its group once the exit code is written.
    let deadline = Instant::now() + DEADLINE;
    while group_alive(job_id.pid.get()) {
        assert!(
            Instant::now() < deadline,
            "{engine:?}: the group outlived its job"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        engine.is_running(&name),
        "{engine:?}: the container ended with its client"
    );
    assert!(!processes_with_env(&canary).is_empty(), "{engine:?}");
    executor.cancel(&job_id).await?;
    assert!(
        !engine.containers().contains(&name),
        "{engine:?}: cancel left the orphaned container"
    );
    assert_eq!(processes_with_env(&canary), Vec::<u32>::new(), "{engine:?}");
    assert_eq!(executor.status(&job_id).await?, JobStatus::Exited(0));
    assert!(!Path::new(&dir).join(CANCEL_FILE).exists());
    Ok(())
}

/// Whether the process group `pgid` has a member.
fn group_alive(pgid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-s", "0", "--", &format!("-{pgid}")])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_job_is_stopped_first_and_an_orphaned_container_is_found_by_cancel_local()
-> TestResult {
    for engine in TestEngine::ALL {
        let root = tempfile::tempdir()?;
        let executor = local(root.path()).with_path_prefix(&container_env().shims());
        check_container_cancel(&executor, engine, "local").await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_job_is_stopped_first_and_an_orphaned_container_is_found_by_cancel_ssh()
-> TestResult {
    for engine in TestEngine::ALL {
        let root = tempfile::tempdir()?;
        let sshd = Sshd::start_with(&Options {
            path_prefix: Some(container_env().shims()),
        });
        check_container_cancel(&ssh(&sshd, root.path()).await, engine, "ssh").await?;
    }
    Ok(())
}

// Stand-in engine: a real engine cannot be made to hang on `stop`. The cancel cuts the
// call short, still stops the job's group, records the job cancelled, and fails naming
// the engine command (the container may still run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stand_in_engine_whose_stop_hangs_cannot_hold_the_cancel_local() -> TestResult {
    let root = tempfile::tempdir()?;
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin)?;
    let calls = root.path().join("calls");
    let podman = bin.join("podman");
    std::fs::write(
        &podman,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\n[ \"$1\" = stop ] || exit 1\nwhile :; do sleep 1; done\n",
            calls.display()
        ),
    )?;
    std::fs::set_permissions(&podman, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let executor = local(root.path()).with_path_prefix(&bin);
    let dir = format!("{}/run-hung", executor.workdir());
    let mut command = job(&dir, "echo ready\nsleep 300");
    command.container = Some(Container {
        engine: overbrainer::config::Engine::Podman,
        name: "overbrainer-run-hung".to_owned(),
    });
    let started = executor.spawn(&command).await?;
    wait_for_log(&executor, &dir, "ready").await;
    let result = executor.cancel(&started).await;
    let Err(ExecError::Command { action, message }) = result else {
        panic!("a hung engine went unreported: {result:?}");
    };
    assert_eq!(action, "cancel");
    assert!(
        message
            .contains("`podman stop -t 30 overbrainer-run-hung` did not return within 45 seconds"),
        "{message}"
    );
    assert!(message.contains("may still run"), "{message}");
    assert!(!group_alive(started.pid.get()));
    assert_eq!(executor.status(&started).await?, JobStatus::Cancelled);
    // One stop, and no engine call after it ran out.
    assert_eq!(
        std::fs::read_to_string(&calls)?,
        "stop -t 30 overbrainer-run-hung\n"
    );
    Ok(())
}

// ---------------------------------------------------------------- SSH only

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_host_key_is_refused() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    let result = SshExecutor::connect(
        sshd.destination_with_unknown_host_key(),
        &path_str(root.path()),
    )
    .await;
    assert!(
        matches!(result, Err(ExecError::Ssh(_))),
        "{:?}",
        result.map(|_| ())
    );
    Ok(())
}

/// The process ID of the master behind `executor`, from `ssh -O check`.
async fn master_pid(executor: &SshExecutor) -> u32 {
    let socket = executor.control_socket().await.expect("a master is open");
    let output = std::process::Command::new("ssh")
        .arg("-S")
        .arg(&socket)
        .args(["-O", "check", "unused"])
        .output()
        .expect("ssh -O check");
    let text = String::from_utf8_lossy(&output.stderr);
    let pid = text
        .split("pid=")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok());
    pid.unwrap_or_else(|| panic!("no pid in `{text}`"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ssh_job_survives_its_master_and_its_executor() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    let executor = ssh(&sshd, root.path()).await;
    let dir = format!("{}/run-survivor", executor.workdir());
    let go = Path::new(&dir).join("go");
    let started = executor
        .spawn(&job(
            &dir,
            "echo waiting\ni=0; while [ ! -e go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\necho finished\nexit 5",
        ))
        .await?;
    wait_for_log(&executor, &dir, "waiting").await;
    let pid = master_pid(&executor).await;
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()?;
    assert!(killed.success());
    // The old executor reconnects on a later call.
    let deadline = Instant::now() + DEADLINE;
    loop {
        match executor.status(&started).await {
            Ok(status) => {
                assert_eq!(status, JobStatus::Running);
                break;
            }
            Err(error) => assert!(Instant::now() < deadline, "no reconnect: {error:?}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_ne!(master_pid(&executor).await, pid, "a new master");
    // Drop the executor's connection altogether; the job goes on.
    executor.disconnect().await;
    drop(executor);
    std::fs::write(&go, "")?;
    let fresh = ssh(&sshd, root.path()).await;
    let status = wait_status(&fresh, &started, JobStatus::is_finished).await;
    assert_eq!(status, JobStatus::Exited(5));
    let log = fresh
        .read_from(&format!("{dir}/{JOB_LOG}"), 0, 1000)
        .await?;
    assert_eq!(String::from_utf8_lossy(&log), "waiting\nfinished\n");
    Ok(())
}

// ---------------------------------------------------------------- hostile streams

/// A tar stream with one 4-byte file at the raw member name `name`.
fn hostile_stream(name: &[u8]) -> Vec<u8> {
    let mut header = tar::Header::new_gnu();
    header.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name);
    header.set_size(4);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    let mut out = header.as_bytes().to_vec();
    let mut data = b"evil".to_vec();
    data.resize(512, 0);
    out.extend_from_slice(&data);
    out.extend_from_slice(&[0; 1024]);
    out
}

/// A stand-in `tar` that answers every archive request with the stream in `stream`.
fn hostile_tar(bin: &Path, stream: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(bin)?;
    let path = bin.join("tar");
    std::fs::write(
        &path,
        format!("#!/bin/sh\ncat > /dev/null\ncat '{}'\n", stream.display()),
    )?;
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
}

async fn check_hostile_streams(executor: &impl Executor, scratch: &Path) -> TestResult {
    let remote = format!("{}/run-hostile", executor.workdir());
    std::fs::create_dir_all(&remote)?;
    std::fs::write(Path::new(&remote).join("file"), "x")?;
    let escaped = scratch.join("escaped");
    let escaped_name = format!("../escaped/{}", "x");
    let absolute_name = path_str(&scratch.join("absolute-escape"));
    for name in [escaped_name.as_str(), absolute_name.as_str()] {
        std::fs::write(scratch.join("stream.tar"), hostile_stream(name.as_bytes()))?;
        let dest = scratch.join("dest");
        let result = executor
            .download(&remote, &dest, &["file".to_owned()], &[])
            .await;
        assert!(
            matches!(&result, Err(ExecError::Protocol(message)) if message.contains("outside")),
            "{name}: {result:?}"
        );
        assert!(!escaped.exists(), "{name}");
        assert!(!scratch.join("absolute-escape").exists(), "{name}");
        assert!(!Path::new("/absolute-escape").exists());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_streams_local() -> TestResult {
    let root = tempfile::tempdir()?;
    let bin = root.path().join("bin");
    hostile_tar(&bin, &root.path().join("stream.tar"))?;
    let executor = local(root.path()).with_path_prefix(&bin);
    check_hostile_streams(&executor, root.path()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_streams_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let bin = root.path().join("bin");
    hostile_tar(&bin, &root.path().join("stream.tar"))?;
    let sshd = Sshd::start_with(&Options {
        path_prefix: Some(bin.clone()),
    });
    check_hostile_streams(&ssh(&sshd, root.path()).await, root.path()).await
}
