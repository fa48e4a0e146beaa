//! The Slurm executor against a real single-node Slurm (issue 19, `slurm_cluster`):
//! submission through `sbatch` from this machine and from a login node over the test's
//! `sshd`, the executor's files written by the wrapper on the node, the scheduler's
//! states (pending on a drained node, a time-limit kill), the deadline signal's
//! snapshot request, `scancel` with the markers, and the refusals made before any job.

// Each test holds its turn on the one cluster for its whole run, awaits included; every
// tokio test has a runtime of its own, so the blocking lock stalls no other test's tasks.
#![allow(clippy::await_holding_lock)]

use std::path::Path;
use std::time::Duration;

use overbrainer::exec::{
    AnyExecutor, DeadlineSignal, EXIT_FILE, Executor, JOB_LOG, JobCommand, JobStatus,
    LocalExecutor, Login, RUN_MARKER_VAR, Scheduler, SchedulerState, SlurmExecutor, SlurmOptions,
    SshExecutor,
};

use crate::slurm_cluster::cluster;
use crate::sshd::{Options, Sshd};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Long enough for a job on a loaded machine; the test fails, it never waits longer.
const WAIT: Duration = Duration::from_secs(180);

fn deadline() -> DeadlineSignal {
    DeadlineSignal {
        file: "snapshot.request".into(),
        content: "deadline".into(),
    }
}

fn options() -> SlurmOptions {
    SlurmOptions {
        nodes: 1,
        deadline: Some(deadline()),
        ..SlurmOptions::default()
    }
}

/// A Slurm executor submitting from this machine, its work directory in `root`; the
/// cluster's client programs come first on its `PATH` ([`crate::slurm_cluster::Cluster::bin`]).
fn local(root: &Path, options: SlurmOptions) -> SlurmExecutor {
    let login = LocalExecutor::new(&root.join("work"))
        .expect("work dir")
        .with_path_prefix(&cluster().bin());
    SlurmExecutor::new(Login::Local(login), options)
}

fn job(executor: &SlurmExecutor, name: &str, script: &str) -> JobCommand {
    JobCommand {
        dir: format!("{}/{name}", executor.workdir()),
        script: script.to_owned(),
        secrets: vec![("OB_SLURM_SECRET".into(), canary().into())],
        container: None,
    }
}

/// A long random token that must reach the job's environment and nothing we write.
fn canary() -> String {
    static CANARY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CANARY
        .get_or_init(|| {
            let bytes = std::fs::read("/proc/sys/kernel/random/uuid").expect("uuid");
            let second = std::fs::read("/proc/sys/kernel/random/uuid").expect("uuid");
            format!(
                "slurmcanary{}{}",
                String::from_utf8_lossy(&bytes).trim().replace('-', ""),
                String::from_utf8_lossy(&second).trim().replace('-', "")
            )
        })
        .clone()
}

async fn wait_for(executor: &SlurmExecutor, id: &overbrainer::exec::SlurmJob, want: JobStatus) {
    crate::util::poll_async(WAIT, &format!("the Slurm job to be {want:?}"), || async {
        match executor.status(id).await {
            Ok(status) if status == want => Ok(()),
            other => Err(format!("{other:?} {}", cluster().job(id.slurm_job))),
        }
    })
    .await;
}

/// `scontrol -o show job` once the scheduler ended the job (the wrapper may still be
/// stopping what its command left when its exit code is there).
fn ended(slurm_job: u64) -> String {
    crate::util::poll(WAIT, "the scheduler to end the job", || {
        let shown = cluster().job(slurm_job);
        if [
            "JobState=RUNNING",
            "JobState=COMPLETING",
            "JobState=PENDING",
        ]
        .iter()
        .any(|state| shown.contains(state))
        {
            Err(shown)
        } else {
            Ok(shown)
        }
    })
}

/// The shared checks of a submitted job: it ran on the node under Slurm with the
/// executor's files, its secret reached its environment only, `run.json`'s handle
/// carries the Slurm job ID and no process ID.
async fn check_a_job_runs(executor: &SlurmExecutor) -> TestResult {
    let started = job(
        executor,
        "r_files",
        "echo \"first line\"\necho \"job $SLURM_JOB_ID secret ${#OB_SLURM_SECRET}\"\nexit 3",
    );
    let id = executor.submit(&started).await?;
    let slurm_job = id.slurm_job;
    let json = serde_json::to_string(&id)?;
    let handle: overbrainer::exec::JobHandle = serde_json::from_str(&json)?;
    assert_eq!((handle.pid(), handle.slurm_job()), (None, Some(slurm_job)));
    assert!(
        json.contains(&format!("\"slurm_job\":{slurm_job}")),
        "{json}"
    );
    wait_for(executor, &id, JobStatus::Exited(3)).await;
    let log = String::from_utf8(
        executor
            .read_from(&format!("{}/{JOB_LOG}", id.dir), 0, 4096)
            .await?,
    )?;
    assert_eq!(
        log,
        format!("first line\njob {slurm_job} secret {}\n", canary().len())
    );
    let exit = executor
        .read_from(&format!("{}/{EXIT_FILE}", id.dir), 0, 64)
        .await?;
    assert_eq!(exit, b"3\n");
    for file in ["job.sbatch", "job.pid", "job.start", "job.log", "slurm.out"] {
        let bytes = executor
            .read_from(&format!("{}/{file}", id.dir), 0, 1 << 20)
            .await?;
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&canary()),
            "{file} holds the secret"
        );
    }
    // The batch shell is the wrapper, which exits 0 once it wrote the job's code.
    let shown = ended(slurm_job);
    assert!(shown.contains("JobState=COMPLETED"), "{shown}");
    // A second cancel of an ended job leaves it as it is.
    executor.cancel(&id).await?;
    assert_eq!(executor.status(&id).await?, JobStatus::Exited(3));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slurm_job_submitted_here_keeps_the_executors_files() -> TestResult {
    let _turn = cluster().lock();
    let root = tempfile::tempdir()?;
    check_a_job_runs(&local(root.path(), options())).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slurm_job_submitted_on_a_login_node_over_ssh_keeps_the_executors_files() -> TestResult {
    let _turn = cluster().lock();
    let sshd = Sshd::start_with(&Options {
        env: cluster().env(),
        ..Options::default()
    });
    let root = tempfile::tempdir()?;
    let work = root.path().join("ssh-work");
    let login = SshExecutor::connect(sshd.destination(), &work.display().to_string()).await?;
    check_a_job_runs(&SlurmExecutor::new(Login::Ssh(login), options())).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_on_a_drained_node_is_pending_with_the_reason_and_starts_on_resume() -> TestResult {
    let _turn = cluster().lock();
    let root = tempfile::tempdir()?;
    let executor = local(root.path(), options());
    cluster().command(
        "scontrol",
        &["update", "nodename=localhost", "state=drain", "reason=test"],
    );
    let id = executor
        .submit(&job(&executor, "r_pending", "echo started"))
        .await?;
    let note = crate::util::poll_async(WAIT, "the scheduler's reason", || async {
        match executor.scheduler(&id).await {
            Ok((Scheduler::Known(job), _))
                if job.state == SchedulerState::Pending && job.reason.is_some() =>
            {
                executor.note(&id).await.map_err(|e| e.to_string())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    let note = note.ok_or("no note")?;
    assert!(note.starts_with("pending on Slurm ("), "{note}");
    assert!(note.len() > "pending on Slurm ()".len(), "{note}");
    // Pending keeps the executor's contract: the job is not finished. The status says
    // it waits in the queue beside it (issue 33), and no longer once it ended.
    assert_eq!(executor.status(&id).await?, JobStatus::Running);
    assert_eq!(executor.last_queued().as_deref(), Some(note.as_str()));
    assert!(!Path::new(&id.dir).join(JOB_LOG).exists());
    cluster().command(
        "scontrol",
        &["update", "nodename=localhost", "state=resume"],
    );
    wait_for(&executor, &id, JobStatus::Exited(0)).await;
    assert_eq!(executor.last_queued(), None);
    assert_eq!(
        std::fs::read_to_string(Path::new(&id.dir).join(JOB_LOG))?,
        "started\n"
    );
    Ok(())
}

/// Processes whose environment holds `needle`, from `/proc` (the node is this machine).
fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'));
        if !zombie
            && environ
                .split(|b| *b == 0)
                .any(|var| var == needle.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_is_scancel_with_the_markers_and_leaves_no_process() -> TestResult {
    let _turn = cluster().lock();
    let root = tempfile::tempdir()?;
    let executor = local(root.path(), options());
    let id = executor
        .submit(&job(
            &executor,
            "r_cancel",
            "sleep 300 &\nsleep 300 &\necho running\nwait",
        ))
        .await?;
    crate::util::poll(WAIT, "the job's first line", || {
        std::fs::read_to_string(Path::new(&id.dir).join(JOB_LOG))
            .ok()
            .filter(|log| log == "running\n")
            .ok_or(())
    });
    let marker = std::fs::read_to_string(Path::new(&id.dir).join("job.marker"))?;
    let needle = format!("{RUN_MARKER_VAR}={}", marker.trim());
    // Both `sleep`s carry the marker (the subshell was forked, not executed, so its
    // `/proc` environment is the wrapper's).
    assert!(processes_with(&needle).len() >= 2, "{needle}");
    assert_eq!(executor.status(&id).await?, JobStatus::Running);
    executor.cancel(&id).await?;
    assert_eq!(executor.status(&id).await?, JobStatus::Cancelled);
    assert!(Path::new(&id.dir).join("cancelled").exists());
    assert!(!Path::new(&id.dir).join(EXIT_FILE).exists());
    assert_eq!(processes_with(&needle), Vec::<u32>::new());
    let slurm_job = id.slurm_job;
    let shown = ended(slurm_job);
    assert!(shown.contains("JobState=CANCELLED"), "{shown}");
    // Again: a no-op.
    executor.cancel(&id).await?;
    assert_eq!(executor.status(&id).await?, JobStatus::Cancelled);
    Ok(())
}

/// A Slurm executor submitting from this machine whose `PATH` has the cluster's
/// clients and the engine shims in one entry: `sbatch --export=ALL` and `srun` carry
/// it to the node.
fn container_executor(root: &Path) -> Result<SlurmExecutor, Box<dyn std::error::Error>> {
    let bin = root.join("bin");
    std::fs::create_dir(&bin)?;
    for dir in [cluster().bin(), crate::engines::container_env().shims()] {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            std::os::unix::fs::symlink(entry.path(), bin.join(entry.file_name()))?;
        }
    }
    let login = LocalExecutor::new(&root.join("work"))?.with_path_prefix(&bin);
    Ok(SlurmExecutor::new(Login::Local(login), options()))
}

/// Submits `exec::container_job` (a container that traps `SIGTERM` and exits 43) in
/// run directory `name` with a fresh canary in the container's environment, and
/// waits for its first line. Returns the job, its directory, container and canary.
async fn container_job_ready(
    executor: &SlurmExecutor,
    engine: crate::engines::TestEngine,
    name: &str,
) -> Result<(overbrainer::exec::SlurmJob, String, String, String), Box<dyn std::error::Error>> {
    let dir = format!("{}/{name}", executor.workdir());
    let canary = crate::engines::canary();
    let container = format!(
        "overbrainer-slurm-{name}-{}-{}",
        engine.name(),
        &canary[6..14]
    );
    let job = crate::exec::container_job(
        &dir,
        engine,
        &container,
        &canary,
        crate::exec::TRAPPING_BODY,
    );
    let id = executor.submit(&job).await?;
    crate::util::poll(WAIT, "the container's first line", || {
        let log = container_log(&dir);
        if log.contains("ready") {
            Ok(())
        } else {
            Err(log)
        }
    });
    Ok((id, dir, container, canary))
}

fn container_log(dir: &str) -> String {
    std::fs::read_to_string(Path::new(dir).join(JOB_LOG)).unwrap_or_default()
}

/// Whether `engine` still knows the container `name` (`ps -a`); removes it if so, so a
/// failed test leaves nothing behind.
fn container_left(engine: crate::engines::TestEngine, name: &str) -> bool {
    let left = engine.containers().iter().any(|c| c == name);
    if left {
        engine.remove(name);
    }
    left
}

// Review of issue 19: a container job's `scancel` signalled the batch shell and the
// engine's client, but the container (under Podman's `conmon`, or Docker's daemon)
// is no child of the job and ran on. The cancel stops and removes it first, on the
// job's node, as the local and ssh cancels do (`exec::a_container_job_is_stopped_first`);
// a container that outlived its client goes when its job ends.
#[tokio::test(flavor = "multi_thread")]
async fn cancel_of_a_container_job_stops_and_removes_its_container_on_the_node() -> TestResult {
    use crate::engines::{TestEngine, processes_with_env};
    let _turn = cluster().lock();
    for engine in TestEngine::ALL {
        engine.start();
        let root = tempfile::tempdir()?;
        let executor = container_executor(root.path())?;
        let (id, dir, name, canary) = container_job_ready(&executor, engine, "cancel").await?;
        assert!(
            engine.is_running(&name),
            "{engine:?}: {}",
            container_log(&dir)
        );
        executor.cancel(&id).await?;
        assert!(
            !container_left(engine, &name),
            "{engine:?}: the container is left after cancel: {}",
            container_log(&dir)
        );
        assert_eq!(processes_with_env(&canary), Vec::<u32>::new(), "{engine:?}");
        assert_eq!(
            executor.status(&id).await?,
            JobStatus::Cancelled,
            "{engine:?}"
        );
        let text = container_log(&dir);
        assert!(
            text.contains("engine client ended 43"),
            "{engine:?}: {text}"
        );
        assert!(!text.contains("script got TERM"), "{engine:?}: {text}");
        ended(id.slurm_job);

        // A container that outlived its engine client (killed with SIGKILL): once the
        // job has ended no step can reach its node, so the job's own shell stops and
        // removes the container as it ends; a later cancel leaves the job as it was.
        let (id, dir, name, canary) = container_job_ready(&executor, engine, "orphan").await?;
        let client = std::fs::read_to_string(Path::new(&dir).join("client.pid"))?;
        let killed = std::process::Command::new("kill")
            .args(["-s", "KILL", client.trim()])
            .status()?;
        assert!(killed.success());
        wait_for(&executor, &id, JobStatus::Exited(0)).await;
        let text = container_log(&dir);
        assert!(text.contains("engine client ended 137"), "{text}");
        assert!(
            !container_left(engine, &name),
            "{engine:?}: the orphaned container outlived its job: {text}"
        );
        assert_eq!(processes_with_env(&canary), Vec::<u32>::new(), "{engine:?}");
        executor.cancel(&id).await?;
        assert_eq!(executor.status(&id).await?, JobStatus::Exited(0));
        assert!(
            !Path::new(&dir)
                .join(overbrainer::exec::CANCEL_FILE)
                .exists()
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deadline_signal_places_the_snapshot_request_before_the_time_limit() -> TestResult {
    let _turn = cluster().lock();
    let root = tempfile::tempdir()?;
    // One minute: the signal comes 30 s before the limit (Slurm may send it up to a
    // minute early, never late), and the job ends by itself once it sees the request.
    let executor = local(
        root.path(),
        SlurmOptions {
            max_hours: Some(1.0 / 60.0),
            ..options()
        },
    );
    let id = executor
        .submit(&job(
            &executor,
            "r_deadline",
            "while [ ! -e snapshot.request ]; do sleep 0.2; done\ncat snapshot.request\nexit 0",
        ))
        .await?;
    wait_for(&executor, &id, JobStatus::Exited(0)).await;
    assert_eq!(
        std::fs::read_to_string(Path::new(&id.dir).join(JOB_LOG))?,
        "deadline\n"
    );
    let slurm_job = id.slurm_job;
    let shown = ended(slurm_job);
    assert!(shown.contains("JobState=COMPLETED"), "{shown}");
    assert!(shown.contains("TimeLimit=00:01:00"), "{shown}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_killed_at_its_time_limit_reads_lost_with_the_schedulers_note() -> TestResult {
    let _turn = cluster().lock();
    let root = tempfile::tempdir()?;
    let executor = local(
        root.path(),
        SlurmOptions {
            max_hours: Some(1.0 / 60.0),
            deadline: None,
            ..options()
        },
    );
    let id = executor
        .submit(&job(&executor, "r_timeout", "echo working\nsleep 600"))
        .await?;
    wait_for(&executor, &id, JobStatus::Lost).await;
    let note = executor.note(&id).await?.ok_or("no note")?;
    assert!(note.contains("time limit"), "{note}");
    assert!(!Path::new(&id.dir).join("snapshot.request").exists());
    assert!(!Path::new(&id.dir).join(EXIT_FILE).exists());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_clusters_partitions_are_read_from_sinfo() -> TestResult {
    let _turn = cluster().lock();
    let root = tempfile::tempdir()?;
    let executor = local(root.path(), options());
    assert_eq!(executor.partitions().await?, ["debug"]);
    let any = AnyExecutor::Slurm(Box::new(executor));
    assert!(any.workdir().ends_with("/work"));
    Ok(())
}
