//! One conformance suite for every executor, written against `&impl Executor` and
//! run on a `LocalExecutor` and on an `SshExecutor` connected to a real `sshd`
//! started by the test on 127.0.0.1. The SSH target is this very machine, so a test
//! can look at the target's files and processes directly.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use overbrainer::env::TimeScale;
use overbrainer::exec::{
    CANCEL_FILE, CANCELLING_FILE, CLAIM_FILE, Container, EXIT_FILE, ExecError, Executor,
    FileDigest, JOB_LOG, JobCommand, JobId, JobRuntime, JobSpec, JobStatus, LEFTOVERS_FILE,
    LocalExecutor, MAX_CONTROL_PATH, MAX_TAIL_READ, PID_FILE, Pid, RUN_MARKER_VAR, SshError,
    SshExecutor, SshTimeouts, local_manifest,
};
use secrecy::SecretString;

use crate::engines::{TestEngine, container_env, processes_with_env};
use crate::freezer::Frozen;
use crate::sshd::{Options, Sshd};
use crate::util::{poll_async, signal};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// How long a job may take to reach the awaited state.
const DEADLINE: Duration = Duration::from_secs(60);

fn path_str(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

fn local(root: &Path) -> LocalExecutor {
    LocalExecutor::new(&root.join("local-work")).expect("local executor")
}

/// One second of the executors' graces in the tests that wait one out (a job that
/// ignores `SIGTERM`, a process that survives `SIGKILL`): the real rules, a tenth as
/// long.
const FAST: TimeScale = TimeScale::with_second(Duration::from_millis(100));

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
    poll_async(DEADLINE, "the job's status", || async {
        let status = executor.status(job).await.expect("status");
        if done(status) {
            Ok(status)
        } else {
            Err(status)
        }
    })
    .await
}

/// Waits until `path` exists.
async fn wait_file(path: &Path) {
    poll_async(
        DEADLINE,
        &format!("`{}` to appear", path.display()),
        || async {
            if path.exists() {
                Ok(())
            } else {
                Err("missing")
            }
        },
    )
    .await;
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

/// A name that is not UTF-8 (Latin-1 `café`), and one with an invalid byte in a
/// directory's name.
const LATIN1_NAME: &[u8] = b"caf\xe9";
const BAD_DIR_FILE: &[u8] = b"output/bad\xff dir/inner";

fn os(bytes: &[u8]) -> &std::ffi::OsStr {
    std::os::unix::ffi::OsStrExt::from_bytes(bytes)
}

/// A tree with awkward names: spaces, a line break, a leading `-`, non-ASCII
/// letters, names that are not UTF-8, an empty file, an empty directory, symbolic
/// links inside the tree (to a file, to a directory, climbing out of a directory),
/// a skipped entry and an excluded checkpoint.
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
    std::fs::write(root.join("output").join(os(LATIN1_NAME)), "latin-1\n")?;
    std::fs::create_dir_all(root.join(os(BAD_DIR_FILE)).parent().unwrap_or(root))?;
    std::fs::write(root.join(os(BAD_DIR_FILE)), "bad dir\n")?;
    std::os::unix::fs::symlink("checkpoint-3", root.join("output/latest"))?;
    std::os::unix::fs::symlink("../a b.txt", root.join("output/up"))?;
    Ok(())
}

/// The names that are not UTF-8 and the links of [`awkward_tree`] in `manifest`.
fn check_awkward_manifest(manifest: &[FileDigest]) {
    let paths: Vec<&str> = manifest.iter().map(|d| d.path.as_str()).collect();
    let bytes: Vec<&[u8]> = manifest.iter().map(FileDigest::path_bytes).collect();
    let latin1 = [&b"output/"[..], LATIN1_NAME].concat();
    for name in [&latin1[..], BAD_DIR_FILE] {
        assert!(bytes.contains(&name), "{name:?} in {bytes:?}");
    }
    // Links are listed with their target, never followed.
    for (name, target) in [
        ("link", "a b.txt"),
        ("output/latest", "checkpoint-3"),
        ("output/up", "../a b.txt"),
    ] {
        let entry = manifest.iter().find(|d| d.path == name);
        assert_eq!(
            entry.and_then(|d| d.link_target()),
            Some(Path::new(target)),
            "{name}"
        );
    }
    assert!(!paths.contains(&"output/latest/weights"));
}

/// No staging directory of a download is left in `dir`.
fn assert_no_staging_left(dir: &Path) {
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .expect("read dir")
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(".ob-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
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
    check_awkward_manifest(&remote_manifest);

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
    assert_eq!(
        std::fs::read_link(back.join("output/latest"))?,
        Path::new("checkpoint-3")
    );
    assert_eq!(
        std::fs::read(back.join(os(BAD_DIR_FILE)))?,
        b"bad dir\n",
        "a name that is not UTF-8 downloads"
    );
    assert!(
        overbrainer::runs::retrieve::verify(&back, &wanted).is_ok(),
        "the download verifies against the target's manifest"
    );
    assert_no_staging_left(scratch);

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

/// A run directory holding a link that leaves it: the manifest refuses it by name,
/// and a download leaves nothing of its archive, in a new destination or in one
/// that already holds files.
async fn check_escaping_links(executor: &impl Executor, scratch: &Path) -> TestResult {
    let remote = format!("{}/run-escaping", executor.workdir());
    let out = Path::new(&remote).join("output");
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("adapter.bin"), "weights")?;
    std::fs::write(out.join("z-last"), "after the link")?;
    std::os::unix::fs::symlink("../../outside", out.join("escape"))?;
    let entries = vec!["output".to_owned()];
    let error = executor
        .manifest(&remote, &entries, &[])
        .await
        .expect_err("an escaping link");
    assert!(
        error
            .to_string()
            .contains("point outside the tree: `output/escape` -> `../../outside`"),
        "{error}"
    );
    let fresh = scratch.join("fresh");
    let error = executor
        .download(&remote, &fresh, &entries, &[])
        .await
        .expect_err("an escaping link");
    assert!(
        matches!(&error, ExecError::EscapingLinks(links) if links.iter().any(|l| l.contains("output/escape"))),
        "{error:?}"
    );
    assert!(!fresh.exists(), "nothing of the refused archive");
    let existing = scratch.join("existing");
    std::fs::create_dir_all(&existing)?;
    std::fs::write(existing.join("kept"), "kept")?;
    executor
        .download(&remote, &existing, &entries, &[])
        .await
        .expect_err("an escaping link");
    let names: Vec<_> = std::fs::read_dir(&existing)?
        .map(|entry| entry.map(|entry| entry.file_name()))
        .collect::<Result<_, _>>()?;
    assert_eq!(names, ["kept"], "nothing of the refused archive");
    assert_no_staging_left(scratch);
    // An absolute target is refused the same way.
    std::fs::remove_file(out.join("escape"))?;
    std::os::unix::fs::symlink("/etc", out.join("escape"))?;
    assert!(executor.manifest(&remote, &entries, &[]).await.is_err());
    assert!(
        executor
            .download(&remote, &fresh, &entries, &[])
            .await
            .is_err()
    );
    assert!(!fresh.exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaping_links_are_refused_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_escaping_links(&local(root.path()), root.path()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaping_links_are_refused_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_escaping_links(&ssh(&sshd, root.path()).await, root.path()).await
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
    // Defect 1: a write that fails (here onto a directory) is an error and leaves no
    // staged temporary behind.
    let occupied = format!("{dir}/.pod/occupied");
    std::fs::create_dir_all(Path::new(&occupied).join("inside"))?;
    assert!(executor.put_file(&occupied, "x").await.is_err());
    let staged: Vec<String> = std::fs::read_dir(Path::new(&dir).join(".pod"))?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    assert!(
        staged.iter().all(|name| !name.contains(".tmp")),
        "{staged:?}"
    );
    assert!(std::fs::read_dir(&occupied)?.count() == 1);

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

/// The fields of `/proc/<pid>/stat` after the command name, from the state on.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Whether process `pid` lives on this machine; a zombie does not.
fn alive(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|fields| fields.first().is_some_and(|s| s != "Z" && s != "X"))
}

/// The process group of `pid` on this machine.
fn pgid_of(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(2)?.parse().ok()
}

/// The process ID a job wrote to `path`, once it is there.
async fn read_pid(path: &Path) -> u32 {
    poll_async(
        DEADLINE,
        &format!("a process ID in `{}`", path.display()),
        || async {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.trim().parse::<u32>().map_err(|_| text)
        },
    )
    .await
}

/// The identity line of `job.start` for process `pid` of this machine: boot ID and
/// start time in clock ticks (field 22 of `/proc/<pid>/stat`), or a line that names
/// no process when `pid` has none.
fn identity_of(pid: u32) -> String {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map_or_else(|_| "-".to_owned(), |text| text.trim().to_owned());
    let start = stat_fields(pid)
        .and_then(|fields| fields.get(19).cloned())
        .unwrap_or_else(|| "1".to_owned());
    format!("proc {boot} {start}\n")
}

/// A job whose main command exits while a background child it started still
/// sleeps: the wrapper stops the leftover child, so once the job reads as exited
/// its process group empties, and the status stays `Exited` meanwhile.
async fn check_leftovers_stopped(executor: &impl Executor) -> TestResult {
    let dir = format!("{}/run-leftover", executor.workdir());
    let started = executor
        .spawn(&job(
            &dir,
            // The escaped worker writes its own process ID once `setsid` made it a
            // session of its own, and the job ends only after reading its line: the
            // job never exits while the worker is still in its group.
            "sleep 300 &\necho $! > child.pid\nmkfifo escaped.ready\nsetsid sh -c 'echo $$ > escaped.pid; echo > escaped.ready; exec sleep 300' &\nread -r _ < escaped.ready\nexit 4",
        ))
        .await?;
    let status = wait_status(executor, &started, JobStatus::is_finished).await;
    assert_eq!(status, JobStatus::Exited(4));
    let child: u32 = std::fs::read_to_string(Path::new(&dir).join("child.pid"))?
        .trim()
        .parse()?;
    let escaped = read_pid(&Path::new(&dir).join("escaped.pid")).await;
    assert_ne!(
        pgid_of(escaped),
        Some(started.pid.get()),
        "it left the group"
    );
    let pgid = started.pid.get();
    poll_async(
        DEADLINE,
        &format!("process group {pgid} (child {child}) and the escaped worker to end"),
        || async {
            assert_eq!(
                executor.status(&started).await.expect("status"),
                JobStatus::Exited(4)
            );
            if group_has_live_member(pgid) || alive(escaped) {
                Err("alive")
            } else {
                Ok(())
            }
        },
    )
    .await;
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
const SECRET: &str = "ob-secret-W3pZ8kQ5vN2xR7mT4hJ9";
/// The whole value: blanks at both ends, a backslash, a quote and a `$` must all
/// reach the job unchanged.
const SECRET_VALUE: &str = "  ob-secret-W3pZ8kQ5vN2xR7mT4hJ9 \\n 'q' $HOME\t ";

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

/// Set in the environment of this test binary when it runs again with [`OURS`] in
/// its own environment.
const WITH_CANARIES: &str = "OVERBRAINER_TEST_JOB_ENV_CANARIES";

/// Variables of overbrainer's own environment that no local job may see: long random
/// canaries, searched for in the whole of the job's environment.
const OURS: [(&str, &str); 4] = [
    (
        "OVERBRAINER_HF_TOKEN",
        "ob-canary-hf-R8tK2mW6qZ4xN9vB3pL7sJ5d",
    ),
    (
        "OVERBRAINER_PROVIDERS__X__API_KEY",
        "ob-canary-api-F3nQ8wX5kT1zM7rV9cH2yG6b",
    ),
    ("VAULT_TOKEN", "ob-canary-vault-P4jS9dL2vN7xK3mQ8tW5rZ1c"),
    ("VAULT_ADDR", "ob-canary-addr-H6bY1fC8gU3nE5wA9kT2pV4m"),
];

/// Variables of overbrainer's own environment that a local job inherits as they are.
const KEPT: [(&str, &str); 2] = [
    ("OB_TEST_KEPT", "ob-canary-kept-M2cX7vB4nZ9qW1eR5tY8uI3o"),
    ("MY_VAULT_TOKEN", "ob-canary-mine-L5kJ8hG2fD6sA9pO3iU7yT1r"),
];

/// The job's secrets: one named like a stripped variable, whose value must be the
/// secret's and not overbrainer's.
const JOB_SECRETS: [(&str, &str); 2] = [
    ("HF_TOKEN", "ob-canary-secret-Z9xC3vB7nM1qW5eR8tY2uI4o"),
    (
        "VAULT_TOKEN",
        "ob-canary-job-vault-K7jH3gF9dS1aQ5wE8rT2yU6i",
    ),
];

/// The seed's `spawn` contract (TGT-7): a local job inherits overbrainer's
/// environment minus every variable whose name starts with `OVERBRAINER_` or
/// `VAULT_`, then its secrets on top; its run marker is named outside both
/// prefixes. Checked on the environment the job itself writes out, with this test
/// binary run again holding some variables of each prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_jobs_environment_holds_no_overbrainer_or_vault_variable_but_its_secrets()
-> TestResult {
    let name =
        "exec::a_local_jobs_environment_holds_no_overbrainer_or_vault_variable_but_its_secrets";
    if std::env::var_os(WITH_CANARIES).is_none() {
        let output = std::process::Command::new(std::env::current_exe()?)
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(WITH_CANARIES, "1")
            .envs(OURS)
            .envs(KEPT)
            .output()?;
        let text = crate::util::output_text(&output);
        assert!(output.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
        return Ok(());
    }
    for (name, value) in OURS.iter().chain(&KEPT) {
        assert_eq!(std::env::var(name)?, *value, "overbrainer's own {name}");
    }
    let root = tempfile::tempdir()?;
    let executor = local(root.path());
    let dir = format!("{}/run-env", executor.workdir());
    let mut command = job(&dir, "env -0 > job.env");
    command.secrets = JOB_SECRETS
        .iter()
        .map(|(name, value)| ((*name).to_owned(), SecretString::from(*value)))
        .collect();
    let started = executor.spawn(&command).await?;
    let status = wait_status(&executor, &started, JobStatus::is_finished).await;
    assert_eq!(status, JobStatus::Exited(0));
    let written = std::fs::read(Path::new(&dir).join("job.env"))?;
    let text = String::from_utf8_lossy(&written);
    let vars: Vec<(&str, &str)> = text
        .split('\0')
        .filter(|entry| !entry.is_empty())
        .map(|entry| entry.split_once('=').unwrap_or((entry, "")))
        .collect();
    let mut prefixed: Vec<(&str, &str)> = vars
        .iter()
        .copied()
        .filter(|(name, _)| name.starts_with("OVERBRAINER_") || name.starts_with("VAULT_"))
        .collect();
    prefixed.sort_unstable();
    assert_eq!(
        prefixed,
        [JOB_SECRETS[1]],
        "only its own secret: {prefixed:?}"
    );
    for (name, value) in OURS {
        assert!(
            !text.contains(value),
            "overbrainer's {name} reached the job"
        );
    }
    for pair in KEPT.iter().chain(&JOB_SECRETS[..1]) {
        assert!(vars.contains(pair), "{} missing: {vars:?}", pair.0);
    }
    let marker = std::fs::read_to_string(Path::new(&dir).join("job.marker"))?;
    assert!(
        vars.contains(&(RUN_MARKER_VAR, marker.trim())),
        "the run marker: {vars:?}"
    );
    Ok(())
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
                    // The job's identity is recorded, as the wrapper does.
                    std::fs::write(path.join("job.start"), identity_of(pid))?;
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
    let started = executor.spawn(&job(&dir, "kill -s KILL -- $$")).await?;
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
    poll_async(DEADLINE, &format!("`{text}` in the job's log"), || async {
        let log = executor
            .read_from(&format!("{dir}/{JOB_LOG}"), 0, 1 << 16)
            .await
            .expect("read log");
        let log = String::from_utf8_lossy(&log).into_owned();
        if log.contains(text) { Ok(()) } else { Err(log) }
    })
    .await;
}

/// The cancel checks' scale: the 10 s grace becomes 3 s, room for the stubborn job's
/// trap to write its line to `job.log` on a machine whose disk is saturated (a full run
/// failed the check at [`FAST`]'s 1 s).
const CANCEL_SCALE: TimeScale = TimeScale::with_second(Duration::from_millis(300));

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_cancel(&local(root.path()).with_time_scale(CANCEL_SCALE)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_cancel(&ssh(&sshd, root.path()).await.with_time_scale(CANCEL_SCALE)).await
}

// ---------------------------------------------------------------- containers

/// A job whose script runs `body` in a container `name` of the shell image on
/// `engine` (the engine's client in the background, its process ID in `client.pid`;
/// the container's ID recorded in the job's `job.container` with `--cidfile`, as
/// `exec::stage_command` does),
/// with `OB_CANARY=<canary>` in the container's environment. The script traps
/// `SIGTERM` and says so; it says how the engine's client ended.
pub(crate) fn container_job(
    dir: &str,
    engine: TestEngine,
    name: &str,
    canary: &str,
    body: &str,
) -> JobCommand {
    let script = format!(
        "trap 'echo script got TERM' TERM\n\
         {engine} run --rm --name {name} --cidfile {id_file} -e OB_CANARY={canary} {image} sh -c {body} &\n\
         echo $! > client.pid\n\
         wait $!\n\
         echo \"engine client ended $?\"\n",
        engine = engine.name(),
        image = container_env().shell_image(),
        body = overbrainer::exec::quote(body),
        id_file = overbrainer::exec::CONTAINER_ID_FILE,
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

/// A container body that says `ready`, then waits until it gets `SIGTERM` and exits
/// 43 from its trap: the engine client's exit code 43 proves the container got the
/// signal (its last output line can be lost by the engine's attach under load, so the
/// printed line alone is no proof).
pub(crate) const TRAPPING_BODY: &str =
    "trap 'echo container got TERM; exit 43' TERM; echo ready; while :; do sleep 1; done";

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
    assert!(
        text.contains("engine client ended 43"),
        "{engine:?}: {text}"
    );
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
    crate::util::poll(DEADLINE, "the group to end with its job", || {
        if group_alive(job_id.pid.get()) {
            Err(job_id.pid.get())
        } else {
            Ok(())
        }
    });
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

/// Whether the process group `pgid` has a live member; zombies, which wait for their
/// parent or `init` to reap them, do not count (as the executor's scripts count them).
fn group_alive(pgid: u32) -> bool {
    crate::training::group_alive(pgid)
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
            ..Options::default()
        });
        check_container_cancel(&ssh(&sshd, root.path()).await, engine, "ssh").await?;
    }
    Ok(())
}

// Tester defect 2: `train cancel` from a shell whose engine configuration differs
// from the job's start (another `CONTAINERS_CONF`, `DOCKER_HOST`) read the job's
// container as gone and left it running. The job starts through one real `sshd`
// whose sessions have the test's engine, the cancel comes through another whose
// sessions point elsewhere, on the same target directory; the container outlived its
// client, so only the engine can stop it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_cancel_with_another_engine_environment_stops_the_jobs_container() -> TestResult
{
    for engine in TestEngine::ALL {
        engine.start();
        let root = tempfile::tempdir()?;
        let starting = Sshd::start_with(&Options {
            env: engine.env(),
            ..Options::default()
        });
        let cancelling = Sshd::start_with(&Options {
            env: engine.env_elsewhere(&root.path().join("other-engine")),
            ..Options::default()
        });
        let start = ssh(&starting, root.path()).await;
        let cancel = ssh(&cancelling, root.path()).await;
        assert_eq!(start.workdir(), cancel.workdir());
        let dir = format!("{}/run-other-env", start.workdir());
        let name = format!("overbrainer-exec-other-env-{}", engine.name());
        let canary = crate::engines::canary();
        let job_id = start
            .spawn(&container_job(&dir, engine, &name, &canary, TRAPPING_BODY))
            .await?;
        wait_for_log(&start, &dir, "ready").await;
        let client: u32 = std::fs::read_to_string(Path::new(&dir).join("client.pid"))?
            .trim()
            .parse()?;
        assert!(signal(client, "KILL"));
        let status = wait_status(&start, &job_id, JobStatus::is_finished).await;
        assert_eq!(status, JobStatus::Exited(0), "{engine:?}");
        assert!(engine.is_running(&name), "{engine:?}: the container ended");
        let result = cancel.cancel(&job_id).await;
        let left = engine.containers().contains(&name);
        engine.remove(&name);
        result?;
        assert!(
            !left,
            "{engine:?}: the cancel read the running container as gone and left it"
        );
        assert_eq!(processes_with_env(&canary), Vec::<u32>::new(), "{engine:?}");
        let recorded = Path::new(&dir).join(overbrainer::exec::ENGINE_ENV_DIR);
        for (name, value) in engine.env() {
            assert_eq!(std::fs::read_to_string(recorded.join(&name))?, value);
        }
    }
    Ok(())
}

/// The real job of `run_id` in `dir` on `engine`: `exec::stage_command` of the
/// image's `sh` running `body` in the shell image, after the runtime's prelude.
fn stage_job(
    executor: &impl Executor,
    engine: TestEngine,
    run_id: &str,
    dir: &str,
    body: &str,
) -> JobCommand {
    let spec = JobSpec {
        run_id: run_id.to_owned(),
        container_suffix: None,
        run_dir: dir.to_owned(),
        hf_home: format!("{}/.hf-cache", executor.workdir()),
        runtime: JobRuntime::Container {
            engine: engine.config(),
            image: container_env().shell_image().to_owned(),
            tools_cache: None,
        },
        secret_names: Vec::new(),
        env: Vec::new(),
    };
    let script = format!(
        "set -e\n{}\n",
        overbrainer::exec::stage_command(&spec, "sh", &["-c", body])
    );
    spec.job(&script, Vec::new())
}

// Defect 2, on real engines: a cancel stops only the container its job started (the
// ID the engine wrote to `job.container`), never one it finds by the job's name.
async fn check_cancel_stops_only_its_own_container(
    executor: &impl Executor,
    engine: TestEngine,
    tag: &str,
) -> TestResult {
    engine.start();
    let log = |dir: &str| std::fs::read_to_string(Path::new(dir).join(JOB_LOG)).unwrap_or_default();

    // A container named `overbrainer-<run-id>` started by hand: the job's own `run`
    // is refused (the name is taken), the job ends, and the cancel leaves it running.
    let run_id = format!("foreign-{tag}-{}", engine.name());
    let name = format!("overbrainer-{run_id}");
    engine.remove(&name);
    let started = engine
        .command()
        .args([
            "run",
            "-d",
            "--name",
            &name,
            container_env().shell_image(),
            "sleep",
            "300",
        ])
        .output()?;
    assert!(started.status.success(), "{engine:?}: {started:?}");
    engine.wait_running(&name, DEADLINE);
    let dir = format!("{}/run-{run_id}", executor.workdir());
    let job_id = executor
        .spawn(&stage_job(
            executor,
            engine,
            &run_id,
            &dir,
            "echo inside-the-job-container; sleep 300",
        ))
        .await?;
    let status = wait_status(executor, &job_id, JobStatus::is_finished).await;
    assert!(
        matches!(status, JobStatus::Exited(code) if code != 0),
        "{engine:?}: {status:?} {}",
        log(&dir)
    );
    assert!(
        !log(&dir).contains("inside-the-job-container"),
        "{engine:?}: {}",
        log(&dir)
    );
    let cancelled = executor.cancel(&job_id).await;
    let still_running = engine.is_running(&name);
    engine.remove(&name);
    cancelled?;
    assert!(
        still_running,
        "{engine:?}: cancel removed a container the job never started"
    );

    // The job's own container: recorded by ID, stopped and removed by the cancel.
    let run_id = format!("own-{tag}-{}", engine.name());
    let name = format!("overbrainer-{run_id}");
    let dir = format!("{}/run-{run_id}", executor.workdir());
    let job_id = executor
        .spawn(&stage_job(
            executor,
            engine,
            &run_id,
            &dir,
            "trap 'exit 0' INT TERM; echo ready; while :; do sleep 1; done",
        ))
        .await?;
    wait_for_log(executor, &dir, "ready").await;
    engine.wait_running(&name, DEADLINE);
    let id = std::fs::read_to_string(Path::new(&dir).join(overbrainer::exec::CONTAINER_ID_FILE))?;
    assert!(
        id.trim().len() == 64 && id.trim().bytes().all(|b| b.is_ascii_hexdigit()),
        "{engine:?}: {id:?}"
    );
    let cancelled = executor.cancel(&job_id).await;
    let left = engine.containers().contains(&name);
    engine.remove(&name);
    cancelled?;
    assert!(
        !left,
        "{engine:?}: the job's own container is left after cancel"
    );
    assert_eq!(executor.status(&job_id).await?, JobStatus::Cancelled);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_cancel_stops_only_the_container_its_job_started_local() -> TestResult {
    for engine in TestEngine::ALL {
        let root = tempfile::tempdir()?;
        let executor = local(root.path())
            .with_path_prefix(&container_env().shims())
            .with_time_scale(FAST);
        check_cancel_stops_only_its_own_container(&executor, engine, "local").await?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_cancel_stops_only_the_container_its_job_started_ssh() -> TestResult {
    for engine in TestEngine::ALL {
        let root = tempfile::tempdir()?;
        let sshd = Sshd::start_with(&Options {
            path_prefix: Some(container_env().shims()),
            ..Options::default()
        });
        let executor = ssh(&sshd, root.path()).await.with_time_scale(FAST);
        check_cancel_stops_only_its_own_container(&executor, engine, "ssh").await?;
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
    // The container ID the job recorded, as `podman run --cidfile` writes it.
    let id = "9e1f0c2b3a4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f";
    let mut command = job(
        &dir,
        &format!(
            "printf %s {id} > {}\necho ready\nsleep 300",
            overbrainer::exec::CONTAINER_ID_FILE
        ),
    );
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
        message.contains(&format!(
            "`podman stop -t 30 {id}` did not return within 45 seconds"
        )),
        "{message}"
    );
    assert!(message.contains("may still run"), "{message}");
    assert!(!group_alive(started.pid.get()));
    assert_eq!(executor.status(&started).await?, JobStatus::Cancelled);
    // One stop, and no engine call after it ran out.
    assert_eq!(
        std::fs::read_to_string(&calls)?,
        format!("stop -t 30 {id}\n")
    );
    Ok(())
}

// ---------------------------------------------------------------- processes

/// A job whose worker leaves the job's process group with `setsid`, as some data
/// loaders and launchers do: the cancel finds it by the run marker in its
/// environment and stops it too, and the cancel is clean.
async fn check_escaped_children(executor: &impl Executor) -> TestResult {
    let dir = format!("{}/run-escaped", executor.workdir());
    let started = executor
        .spawn(&job(
            &dir,
            "setsid sh -c 'echo $$ > worker.pid; exec sleep 300' &\necho ready\nsleep 300",
        ))
        .await?;
    wait_for_log(executor, &dir, "ready").await;
    let worker = read_pid(&Path::new(&dir).join("worker.pid")).await;
    assert!(alive(worker));
    assert_ne!(
        pgid_of(worker),
        Some(started.pid.get()),
        "it left the group"
    );
    let environ = std::fs::read(format!("/proc/{worker}/environ"))?;
    assert!(
        environ
            .split(|byte| *byte == 0)
            .any(|entry| entry.starts_with(format!("{RUN_MARKER_VAR}=").as_bytes())),
        "the worker carries the run marker"
    );
    executor.cancel(&started).await?;
    assert!(
        !alive(worker),
        "the escaped worker {worker} outlived the cancel"
    );
    assert!(!group_has_live_member(started.pid.get()));
    assert_eq!(executor.status(&started).await?, JobStatus::Cancelled);
    assert!(executor.leftovers(&started).await?.is_empty());
    assert!(!Path::new(&dir).join(LEFTOVERS_FILE).exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaped_children_are_cancelled_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_escaped_children(&local(root.path())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaped_children_are_cancelled_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_escaped_children(&ssh(&sshd, root.path()).await).await
}

/// A process of the job that survives `SIGKILL` is reported, never a clean cancel:
/// the cancel fails with its ID, `cancel.leftovers` names it, and a later cancel
/// once it can die is clean and removes the file.
async fn check_leftovers_reported(executor: &impl Executor) -> TestResult {
    let dir = format!("{}/run-stuck", executor.workdir());
    let started = executor
        .spawn(&job(
            &dir,
            "setsid sh -c 'echo $$ > worker.pid; exec sleep 300' &\necho ready\nsleep 300",
        ))
        .await?;
    wait_for_log(executor, &dir, "ready").await;
    let worker = read_pid(&Path::new(&dir).join("worker.pid")).await;
    let frozen = Frozen::freeze(worker);
    let error = executor
        .cancel(&started)
        .await
        .expect_err("a frozen worker survives");
    assert!(
        matches!(&error, ExecError::Leftovers { pids } if pids == &[worker]),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!("cancelled with leftovers: {worker}")
    );
    assert!(alive(worker));
    assert!(
        !group_has_live_member(started.pid.get()),
        "the group is gone"
    );
    assert_eq!(executor.status(&started).await?, JobStatus::Cancelled);
    assert_eq!(executor.leftovers(&started).await?, vec![worker]);

    frozen.thaw();
    executor.cancel(&started).await?;
    assert!(!alive(worker));
    assert!(executor.leftovers(&started).await?.is_empty());
    assert!(!Path::new(&dir).join(LEFTOVERS_FILE).exists());
    assert_eq!(executor.status(&started).await?, JobStatus::Cancelled);
    drop(frozen);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_of_a_cancel_are_reported_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_leftovers_reported(&local(root.path()).with_time_scale(FAST)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_of_a_cancel_are_reported_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_leftovers_reported(&ssh(&sshd, root.path()).await.with_time_scale(FAST)).await
}

/// Without a recorded identity (`job.start` missing, as on a target without `/proc`
/// before this layout, or naming another process) a live process at the recorded
/// PID is not the job: the status is `lost` and a cancel signals nothing.
async fn check_identity(executor: &impl Executor) -> TestResult {
    // A real job whose identity record and run marker are gone.
    let dir = format!("{}/run-identity", executor.workdir());
    let started = executor.spawn(&job(&dir, "echo ready\nsleep 300")).await?;
    wait_for_log(executor, &dir, "ready").await;
    let start = Path::new(&dir).join("job.start");
    let recorded = std::fs::read_to_string(&start)?;
    assert_eq!(
        recorded,
        identity_of(started.pid.get()),
        "the recorded form"
    );
    assert!(Path::new(&dir).join("job.marker").exists());
    assert_eq!(executor.status(&started).await?, JobStatus::Running);
    std::fs::remove_file(Path::new(&dir).join("job.marker"))?;
    assert_eq!(executor.status(&started).await?, JobStatus::Running);
    std::fs::remove_file(&start)?;
    assert_eq!(executor.status(&started).await?, JobStatus::Lost);
    // Another boot, same start time.
    let ticks = recorded.trim_end().rsplit(' ').next().unwrap_or_default();
    std::fs::write(
        &start,
        format!("proc 00000000-0000-4000-8000-000000000000 {ticks}\n"),
    )?;
    assert_eq!(executor.status(&started).await?, JobStatus::Lost);
    // The older layout's bare start time still identifies it.
    std::fs::write(&start, format!("{ticks}\n"))?;
    assert_eq!(executor.status(&started).await?, JobStatus::Running);
    std::fs::write(&start, &recorded)?;
    executor.cancel(&started).await?;
    assert!(!group_has_live_member(started.pid.get()));

    // An unrelated process at the recorded PID, with no identity or another one.
    let other = Group::start();
    for (case, identity) in [
        ("none", None),
        ("another start", Some("proc - 1\n".to_owned())),
        (
            "another form",
            Some("ps Thu Jan  1 00:00:00 1970\n".to_owned()),
        ),
        ("legacy", Some("1\n".to_owned())),
    ] {
        let dir = format!(
            "{}/unrelated-{}",
            executor.workdir(),
            case.replace(' ', "-")
        );
        std::fs::create_dir_all(&dir)?;
        std::fs::write(Path::new(&dir).join(PID_FILE), format!("{}\n", other.pid()))?;
        if let Some(identity) = identity {
            std::fs::write(Path::new(&dir).join("job.start"), identity)?;
        }
        let id = JobId {
            dir: dir.clone(),
            pid: Pid::new(other.pid())?,
            container: None,
        };
        assert_eq!(executor.status(&id).await?, JobStatus::Lost, "{case}");
        executor.cancel(&id).await?;
        assert!(
            alive(other.pid()),
            "{case}: the cancel signalled another process"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pid_without_the_jobs_identity_is_lost_and_never_signalled_local() -> TestResult {
    let root = tempfile::tempdir()?;
    check_identity(&local(root.path())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pid_without_the_jobs_identity_is_lost_and_never_signalled_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    check_identity(&ssh(&sshd, root.path()).await).await
}

/// The states of the members of process group `pgid` on the target, through the
/// executor (the target may be in a PID namespace of its own).
async fn member_states(executor: &impl Executor, pgid: u32) -> Vec<String> {
    let script = format!(
        r#"for f in /proc/[0-9]*/stat; do
  {{ IFS= read -r s < "$f"; }} 2>/dev/null || continue
  s=${{s##*) }}
  set -- $s
  [ "$3" = {pgid} ] && echo "$1"
done
exit 0"#
    );
    let output = executor.probe(&script).await.expect("probe");
    String::from_utf8_lossy(&output)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Under a `PID 1` that never reaps orphans, a job's dead processes stay as
/// zombies in its process group: the job is still gone for status and cancel.
async fn check_zombies(executor: &impl Executor) -> TestResult {
    let script = "sleep 300 &\nsleep 300 &\necho ready\nwait";
    // Killed from outside: lost, not running.
    let dir = format!("{}/run-zombie-lost", executor.workdir());
    let started = executor.spawn(&job(&dir, script)).await?;
    wait_for_log(executor, &dir, "ready").await;
    let pgid = started.pid.get();
    executor.probe(&format!("kill -s KILL -- -{pgid}")).await?;
    let status = wait_status(executor, &started, JobStatus::is_finished).await;
    assert_eq!(status, JobStatus::Lost);
    let members = member_states(executor, pgid).await;
    assert!(
        !members.is_empty() && members.iter().all(|state| state == "Z"),
        "the group holds zombies only: {members:?}"
    );
    // Cancelled: its processes die as zombies, and the cancel is clean.
    let dir = format!("{}/run-zombie-cancel", executor.workdir());
    let started = executor.spawn(&job(&dir, script)).await?;
    wait_for_log(executor, &dir, "ready").await;
    executor.cancel(&started).await?;
    assert_eq!(executor.status(&started).await?, JobStatus::Cancelled);
    let members = member_states(executor, started.pid.get()).await;
    assert!(
        !members.is_empty() && members.iter().all(|state| state == "Z"),
        "the group holds zombies only: {members:?}"
    );
    Ok(())
}

/// Set in the environment of this test binary when it runs again as `PID 1` of a
/// PID namespace of its own.
const INSIDE_PID_NAMESPACE: &str = "OVERBRAINER_TEST_INSIDE_PID_NAMESPACE";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zombies_are_not_alive_local() -> TestResult {
    let name = "exec::zombies_are_not_alive_local";
    if std::env::var_os(INSIDE_PID_NAMESPACE).is_none() {
        // This very test again, as PID 1 of a new PID namespace: the test binary
        // never reaps orphans.
        let output = crate::sshd::unshare_pid_namespace()
            .arg(std::env::current_exe()?)
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(INSIDE_PID_NAMESPACE, "1")
            .output()?;
        let text = crate::util::output_text(&output);
        assert!(output.status.success(), "{text}");
        assert!(text.contains("1 passed"), "{text}");
        return Ok(());
    }
    assert_eq!(std::process::id(), 1, "PID 1 of its namespace");
    let root = tempfile::tempdir()?;
    check_zombies(&local(root.path())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zombies_are_not_alive_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start_with(&Options {
        pid_namespace: true,
        ..Options::default()
    });
    check_zombies(&ssh(&sshd, root.path()).await).await
}

/// Where `/proc` is missing (macOS, the BSDs) the shell functions read `ps`: the
/// leader's identity is its `ps -o lstart=` start time and a group's zombies (state
/// `Z`) do not count. Checked here in a mount namespace whose `/proc` is an empty
/// directory, with a `ps` in front of `PATH` that answers as a BSD `ps` would for
/// one real process.
#[test]
fn without_proc_the_identity_and_the_members_come_from_ps() -> TestResult {
    let scratch = tempfile::tempdir()?;
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin)?;
    let other = Group::start();
    let pid = other.pid();
    let dead = dead_pid();
    std::fs::write(
        bin.join("ps"),
        format!(
            "#!/bin/sh\ncase \"$*\" in\n\
             '-o lstart= -p {pid}') echo 'Tue Dec  1 09:36:33 2026' ;;\n\
             '-o lstart= -p '*) exit 1 ;;\n\
             '-A -o pid= -o pgid= -o stat=') printf '%s\\n' '  {pid}  {pid} Ss' ' 77 {pid} Z+' ' 78 5 S' ;;\n\
             esac\n"
        ),
    )?;
    std::fs::set_permissions(
        bin.join("ps"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    let body = format!(
        r#"mount -t tmpfs none /proc || exit 9
[ -d /proc/self ] && exit 8
PATH={bin}:$PATH
cd {dir} || exit 7
echo "identity $(ob_identity {pid})"
ob_identity {dead} || echo "no identity for the dead"
echo 'ps Tue Dec 1 09:36:33 2026' > job.start
ob_leader . {pid}; echo "matching $?"
echo 'ps Wed Dec 2 09:36:33 2026' > job.start
ob_leader . {pid}; echo "other $?"
ob_leader . {dead}; echo "gone $?"
echo "members $(ob_members {pid} | tr '\n' ' ')"
"#,
        bin = bin.display(),
        dir = scratch.path().display(),
    );
    let output = crate::sshd::unshare_mount_namespace()
        .args(["sh", "-c"])
        .arg(format!("{}{body}", overbrainer::exec::GROUP_SIGNAL))
        .output()?;
    let text = crate::util::output_text(&output);
    assert!(output.status.success(), "{text}");
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "identity ps Tue Dec 1 09:36:33 2026",
            "no identity for the dead",
            "matching 0",
            "other 1",
            "gone 2",
            &format!("members {pid} "),
        ],
        "{text}"
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

/// A user configuration that would stretch every wait: Debian's `BatchMode yes`
/// (which makes it report `ServerAliveInterval 300`) and long values set outright.
const STRETCHING_CONFIG: &str = "Host *\n  BatchMode yes\n  ServerAliveInterval 300\n  \
    ServerAliveCountMax 10\n  ConnectTimeout 600\n  LogLevel INFO\n";

/// The command line of process `pid`, its arguments joined with spaces.
fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wedged_target_is_reported_whatever_the_user_config_says() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    let config = root.path().join("ssh_config");
    std::fs::write(&config, STRETCHING_CONFIG)?;
    let mut destination = sshd.destination();
    destination.config_file = Some(config);
    // The 15 s × 3 of SSH-16, scaled down so the test takes seconds.
    destination.timeouts = SshTimeouts {
        alive_interval: Duration::from_secs(1),
        alive_count_max: 2,
        connect: Duration::from_secs(5),
    };
    let executor = SshExecutor::connect(destination, &path_str(&root.path().join("work")))
        .await
        .unwrap_or_else(|error| panic!("connect: {error:?}\n{}", sshd.log()));
    let master = cmdline(master_pid(&executor).await);
    for option in [
        "ServerAliveInterval=1",
        "ServerAliveCountMax=2",
        "ConnectTimeout=5",
    ] {
        assert!(
            master.contains(&format!("-o {option}")),
            "{option} in `{master}`"
        );
    }
    assert_eq!(executor.probe("echo up").await?, b"up\n");
    let stopped = sshd.wedge_connections();
    assert!(!stopped.is_empty(), "no connection process to stop");
    // Without the bounds on the master's command line this call would wait for
    // 300 s × 10; the guard only turns such a hang into a failure.
    let result = tokio::time::timeout(DEADLINE, executor.probe("echo up")).await;
    for pid in &stopped {
        let _ = signal(*pid, "CONT");
    }
    let error = result
        .map_err(|_| format!("still waiting after {DEADLINE:?} on a wedged target"))?
        .expect_err("a wedged target answers nothing");
    let message = format!("{error}: {}", error_chain(&error));
    assert!(
        matches!(&error, ExecError::Ssh(SshError::Lost { .. })),
        "{message}"
    );
    assert!(
        message.contains("@127.0.0.1"),
        "names the target: {message}"
    );
    assert!(message.contains("not responding"), "{message}");
    Ok(())
}

/// Every message of `error`'s chain of sources.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut parts = Vec::new();
    let mut source = error.source();
    while let Some(cause) = source {
        parts.push(cause.to_string());
        source = cause.source();
    }
    parts.join(": ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_master_is_replaced_within_the_same_call() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    let executor = ssh(&sshd, root.path()).await;
    let socket = executor.control_socket().await.expect("a master is open");
    let pid = master_pid(&executor).await;
    assert!(signal(pid, "KILL"));
    // Dead once its socket refuses connections; the socket file stays behind.
    poll_async(DEADLINE, &format!("the master {pid} to die"), || async {
        match std::os::unix::net::UnixStream::connect(&socket) {
            Ok(_) => Err("the socket still answers"),
            Err(_) => Ok(()),
        }
    })
    .await;
    assert!(socket.exists(), "the dead master left its socket");
    // The very next call reconnects and succeeds.
    assert_eq!(executor.probe("echo again").await?, b"again\n");
    assert_ne!(master_pid(&executor).await, pid, "a new master");
    Ok(())
}

/// A new directory under `/tmp` whose path is exactly `len` bytes long.
fn dir_of_len(len: usize) -> std::io::Result<PathBuf> {
    let head = format!("/tmp/ob-len-{}-{len}-", std::process::id());
    assert!(head.len() < len, "{head} is already {} bytes", head.len());
    let dir = PathBuf::from(format!("{head}{}", "d".repeat(len - head.len())));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_tmpdir_gives_way_to_a_short_control_directory() -> TestResult {
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    let long = root.path().join("t".repeat(120));
    std::fs::create_dir_all(&long)?;
    let mut destination = sshd.destination();
    destination.control_dirs = overbrainer::exec::control_dirs(None, Some(&path_str(&long)));
    let executor = SshExecutor::connect(destination, &path_str(&root.path().join("work"))).await?;
    let socket = executor.control_socket().await.expect("a master is open");
    assert!(socket.starts_with("/tmp"), "{}", socket.display());
    assert!(socket.as_os_str().len() <= MAX_CONTROL_PATH);
    assert_eq!(executor.probe("echo short").await?, b"short\n");

    // The longest directory that fits works with the real `ssh`.
    let exact = dir_of_len(MAX_CONTROL_PATH - "/ob-XXXXXX/master".len())?;
    let mut destination = sshd.destination();
    destination.control_dirs = vec![exact.clone()];
    let executor = SshExecutor::connect(destination, &path_str(&root.path().join("work"))).await;
    let socket = match &executor {
        Ok(executor) => executor.control_socket().await,
        Err(_) => None,
    };
    drop(executor);
    let _ = std::fs::remove_dir_all(&exact);
    let socket = socket.expect("a master in the longest directory that fits");
    assert_eq!(socket.as_os_str().len(), MAX_CONTROL_PATH);

    // No candidate fits: refused before `ssh` runs, naming the limit.
    let mut destination = sshd.destination();
    destination.port = Some(1);
    destination.control_dirs = vec![long.clone()];
    let error = SshExecutor::connect(destination, &path_str(&root.path().join("work")))
        .await
        .map(|_| ())
        .expect_err("no control directory fits");
    let message = format!("{error}: {}", error_chain(&error));
    assert!(
        matches!(&error, ExecError::Ssh(SshError::ControlPath { .. })),
        "{message}"
    );
    assert!(
        message.contains(&format!("at most {MAX_CONTROL_PATH} bytes")),
        "{message}"
    );
    assert!(message.contains(&path_str(&long)), "{message}");
    Ok(())
}

/// The `Ciphers=` option on the command line of the master behind `executor`, if any.
async fn master_ciphers(executor: &SshExecutor) -> Option<String> {
    let pid = master_pid(executor).await;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("the master's cmdline");
    cmdline
        .split(|b| *b == 0)
        .map(String::from_utf8_lossy)
        .find_map(|arg| arg.strip_prefix("Ciphers=").map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_the_master_prefers_aes_gcm_unless_the_configuration_sets_ciphers() -> TestResult
{
    let root = tempfile::tempdir()?;
    let sshd = Sshd::start();
    // The harness's configuration sets no ciphers: AES-GCM first, and it connects.
    let executor = ssh(&sshd, root.path()).await;
    let ciphers = master_ciphers(&executor).await.expect("a Ciphers option");
    assert!(ciphers.starts_with("aes128-gcm@openssh.com,"), "{ciphers}");
    assert!(
        ciphers.contains("chacha20-poly1305@openssh.com"),
        "{ciphers}"
    );
    assert_eq!(executor.probe("echo fast").await?, b"fast\n");
    // A configuration that chooses its ciphers keeps them: nothing on the command line.
    let mut destination = sshd.destination();
    let config = root.path().join("chacha_config");
    let mut text = std::fs::read_to_string(destination.config_file.as_ref().unwrap())?;
    text.insert_str(0, "Ciphers chacha20-poly1305@openssh.com\n");
    std::fs::write(&config, text)?;
    destination.config_file = Some(config);
    let chosen = SshExecutor::connect(destination, &path_str(&root.path().join("w2")))
        .await
        .unwrap_or_else(|error| panic!("connect: {error:?}\n{}", sshd.log()));
    assert_eq!(master_ciphers(&chosen).await, None);
    assert_eq!(chosen.probe("echo chosen").await?, b"chosen\n");
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
    assert!(signal(pid, "KILL"));
    // The old executor reconnects on a later call.
    let status = poll_async(DEADLINE, "a reconnect", || executor.status(&started)).await;
    assert_eq!(status, JobStatus::Running);
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
        ..Options::default()
    });
    check_hostile_streams(&ssh(&sshd, root.path()).await, root.path()).await
}

/// The system's own `tar`, which the stand-in of [`failing_tar`] runs.
fn real_tar() -> &'static str {
    ["/usr/bin/tar", "/bin/tar"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("GNU tar is missing: run `apt-get install tar`")
}

/// A stand-in `tar` in `bin` that runs the real one, so the whole, well-formed
/// archive is sent, then fails as GNU `tar` does after a file it could not read (exit
/// 2, the reason on standard error): the one thing a real `tar` run as root cannot be
/// made to do on demand.
fn failing_tar(bin: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(bin)?;
    let path = bin.join("tar");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh
{} \"$@\" || exit
echo 'tar: ./output/adapter.bin: Cannot open: Input/output error' >&2
exit 2
",
            real_tar()
        ),
    )?;
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
}

/// A download whose target `tar` exits non-zero after sending its archive replaces
/// nothing: an existing destination keeps its files, a new one is not created, and
/// no staging directory is left.
async fn check_failed_sender(executor: &impl Executor, scratch: &Path) -> TestResult {
    let remote = format!("{}/run-failed-tar", executor.workdir());
    let out = Path::new(&remote).join("output");
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("adapter.bin"), "new weights")?;
    std::fs::write(out.join("added"), "new file")?;
    let entries = vec!["output".to_owned()];
    let existing = scratch.join("existing");
    std::fs::create_dir_all(existing.join("output"))?;
    std::fs::write(existing.join("output/adapter.bin"), "old weights")?;
    let error = executor
        .download(&remote, &existing, &entries, &[])
        .await
        .expect_err("the target's tar failed");
    assert!(
        matches!(&error, ExecError::Command { action: "download", message } if message.contains("Cannot open")),
        "{error:?}"
    );
    assert_eq!(
        std::fs::read_to_string(existing.join("output/adapter.bin"))?,
        "old weights"
    );
    assert!(
        !existing.join("output/added").exists(),
        "nothing was merged"
    );
    let fresh = scratch.join("fresh");
    executor
        .download(&remote, &fresh, &entries, &[])
        .await
        .expect_err("the target's tar failed");
    assert!(!fresh.exists(), "nothing of the failed transfer");
    assert_no_staging_left(scratch);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_remote_tar_replaces_nothing_local() -> TestResult {
    let root = tempfile::tempdir()?;
    let bin = root.path().join("bin");
    failing_tar(&bin)?;
    let executor = local(root.path()).with_path_prefix(&bin);
    check_failed_sender(&executor, root.path()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_remote_tar_replaces_nothing_ssh() -> TestResult {
    let root = tempfile::tempdir()?;
    let bin = root.path().join("bin");
    failing_tar(&bin)?;
    let sshd = Sshd::start_with(&Options {
        path_prefix: Some(bin.clone()),
        ..Options::default()
    });
    check_failed_sender(&ssh(&sshd, root.path()).await, root.path()).await
}

// Defect 4: a control directory left behind by a process killed with SIGKILL (it could
// not remove it) is removed by the next connect, and only what is provably dead: never
// a live master's, one whose maker is still connecting (its lock held), another user's,
// or one holding anything else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_the_next_connect_removes_control_directories_killed_processes_left()
-> TestResult {
    use std::os::unix::fs::PermissionsExt as _;
    let root = tempfile::tempdir()?;
    let base = tempfile::Builder::new()
        .prefix("obsweep")
        .tempdir_in("/tmp")?;
    let sshd = Sshd::start();
    let work = path_str(&root.path().join("work"));
    let connect = || {
        let mut destination = sshd.destination();
        destination.control_dirs = vec![base.path().to_path_buf()];
        SshExecutor::connect(destination, &work)
    };
    let dir_of = |socket: &Path| socket.parent().expect("socket dir").to_path_buf();

    // A live executor: its master answers, its directory stays, and it keeps working.
    let live = connect().await?;
    let live_dir = dir_of(&live.control_socket().await.expect("master"));

    // A process killed with SIGKILL: its executor never dropped (as a killed process
    // never drops it) and its master killed too: the socket stays and refuses.
    let killed = connect().await?;
    let killed_dir = dir_of(&killed.control_socket().await.expect("master"));
    let master = master_pid(&killed).await;
    assert!(signal(master, "KILL"));
    crate::util::poll(DEADLINE, "the killed master's socket to refuse", || {
        match std::os::unix::net::UnixStream::connect(killed_dir.join("master")) {
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    std::mem::forget(killed);

    // A killed process whose master ended since (its idle time ran out): the log and
    // the lock file are left, no socket.
    let ended = base.path().join("ob-Ended1");
    std::fs::create_dir(&ended)?;
    std::fs::write(ended.join("log"), "")?;
    std::fs::write(ended.join("lock"), "")?;
    // Killed before it could make its lock file, long ago.
    let old = base.path().join("ob-0ld0ne");
    std::fs::create_dir(&old)?;
    std::fs::File::open(&old)?
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))?;

    // Kept: a maker still connecting (its lock held, no socket yet), a maker that has
    // not made its lock file yet (young), another user's dead directory, one holding
    // a file of someone else's, and names that are not ours.
    let connecting = base.path().join("ob-Conn01");
    std::fs::create_dir(&connecting)?;
    let held = std::fs::File::create(connecting.join("lock"))?;
    rustix::fs::flock(&held, rustix::fs::FlockOperation::NonBlockingLockExclusive)?;
    let young = base.path().join("ob-Young1");
    std::fs::create_dir(&young)?;
    let other = base.path().join("ob-0ther1");
    std::fs::create_dir(&other)?;
    std::fs::write(other.join("lock"), "")?;
    rustix::fs::chown(&other, Some(rustix::process::Uid::from_raw(65534)), None)?;
    let precious = base.path().join("ob-Keep01");
    std::fs::create_dir(&precious)?;
    std::fs::write(precious.join("lock"), "")?;
    std::fs::write(precious.join("notes.txt"), "mine")?;
    let misnamed = base.path().join("ob-toolong1");
    std::fs::create_dir(&misnamed)?;
    let link = base.path().join("ob-Link01");
    std::os::unix::fs::symlink(&ended, &link)?;
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755))?;

    let next = connect().await?;
    let next_dir = dir_of(&next.control_socket().await.expect("master"));
    for gone in [&killed_dir, &ended, &old] {
        assert!(!gone.exists(), "{} is left", gone.display());
    }
    for kept in [
        &live_dir,
        &next_dir,
        &connecting,
        &young,
        &other,
        &precious,
        &misnamed,
    ] {
        assert!(kept.is_dir(), "{} was removed", kept.display());
    }
    assert!(precious.join("notes.txt").exists());
    assert!(std::fs::symlink_metadata(&link)?.file_type().is_symlink());
    assert_eq!(live.probe("echo alive").await?, b"alive\n");
    assert_eq!(next.probe("echo next").await?, b"next\n");
    drop(held);
    Ok(())
}
