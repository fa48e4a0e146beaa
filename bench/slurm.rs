//! The Slurm target's speed on the tests' single-node cluster (issue 19). Run with
//! `cargo bench --bench slurm`; it prints one line per figure.
//!
//! - Submission to the job's first line: `SlurmExecutor::spawn` of a job whose first
//!   command prints a line, until that line is in `job.log`, against `sbatch --wrap`
//!   of the same `echo` by hand until it is in the job's output file. The rounds
//!   alternate (by hand, ours); the median of each side counts, and their ratio (ours
//!   over by hand: 1 means no overhead; Slurm's own scheduling dominates both). Each
//!   side starts on an idle node.
//! - The follow loop's CPU: what a follower does each second while a job runs (the
//!   status probe, `scontrol` included, and the reads of `metrics.jsonl` and
//!   `job.log`) for `OB_BENCH_FOLLOW_SECONDS` (default 30), as this process's CPU time
//!   and its children's over the wall time, in percent of one core (target: under 2%).
//!
//! `OB_BENCH_ROUNDS` (default 5) sets the rounds of the first figure.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    dead_code,
    unused_imports,
    clippy::await_holding_lock,
    reason = "a benchmark: failing loudly is the point, figures are approximate, it runs sbatch by hand to compare, and it holds its turn on the cluster throughout"
)]

#[path = "../tests/integration/slurm_cluster.rs"]
mod slurm_cluster;
#[path = "../tests/integration/sshd.rs"]
mod sshd;
#[path = "../tests/integration/util.rs"]
mod util;

use std::path::Path;
use std::time::{Duration, Instant};

use overbrainer::exec::{
    AnyExecutor, Executor, JOB_LOG, JobCommand, JobStatus, LocalExecutor, Login, SlurmExecutor,
    SlurmOptions,
};

/// How often the bench looks for the first line: well below Slurm's own delays.
const LOOK_EVERY: Duration = Duration::from_millis(5);

fn first_line(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.starts_with("first\n"))
}

fn wait_line(path: &Path, since: Instant) -> Duration {
    let deadline = since + Duration::from_secs(120);
    while !first_line(path) {
        assert!(
            Instant::now() < deadline,
            "no first line in {}",
            path.display()
        );
        std::thread::sleep(LOOK_EVERY);
    }
    since.elapsed()
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// CPU time of this process and its reaped children, from `/proc/self/stat`.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = stat.rsplit_once(") ").unwrap().1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime, stime, cutime, cstime: fields 14..17 of stat(5), 12..15 after the name.
    let ticks: u64 = fields[11..15]
        .iter()
        .map(|f| f.parse::<u64>().unwrap())
        .sum();
    let per_second = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(100);
    Duration::from_millis(ticks * 1000 / per_second)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    let cluster = slurm_cluster::cluster();
    let _turn = cluster.lock();
    let root = tempfile::tempdir().unwrap();
    let login = LocalExecutor::new(&root.path().join("work"))
        .unwrap()
        .with_path_prefix(&cluster.bin());
    let executor = AnyExecutor::Slurm(Box::new(SlurmExecutor::new(
        Login::Local(login),
        SlurmOptions {
            nodes: 1,
            ..SlurmOptions::default()
        },
    )));
    let rounds: usize = std::env::var("OB_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let sbatch = cluster.bin().join("sbatch");
    let (mut by_hand, mut ours) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let out = root.path().join(format!("hand-{round}.out"));
        let began = Instant::now();
        let status = std::process::Command::new(&sbatch)
            .args(["--parsable", "--wrap", "echo first; sleep 1"])
            .arg(format!("--output={}", out.display()))
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        by_hand.push(wait_line(&out, began));
        // The node's memory is one job's (the test cluster declares none): each side
        // starts on an idle node, or it would wait for the other's job to end.
        cluster.wait_idle();

        let job = JobCommand {
            dir: format!("{}/ours-{round}", executor.workdir()),
            script: "echo first\nsleep 1".into(),
            secrets: Vec::new(),
            container: None,
        };
        let began = Instant::now();
        let id = executor.spawn_job(&job).await.unwrap();
        ours.push(wait_line(&Path::new(id.dir()).join(JOB_LOG), began));
        cluster.wait_idle();
    }
    let (hand, mine) = (median(by_hand.clone()), median(ours.clone()));
    println!(
        "submission to the first line: ours {:.0} ms, sbatch --wrap by hand {:.0} ms, ratio {:.2} (rounds: ours {:?}, by hand {:?})",
        mine.as_secs_f64() * 1000.0,
        hand.as_secs_f64() * 1000.0,
        mine.as_secs_f64() / hand.as_secs_f64(),
        ours.iter().map(Duration::as_millis).collect::<Vec<_>>(),
        by_hand.iter().map(Duration::as_millis).collect::<Vec<_>>(),
    );

    let seconds: u64 = std::env::var("OB_BENCH_FOLLOW_SECONDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30);
    let job = JobCommand {
        dir: format!("{}/follow", executor.workdir()),
        script: format!("echo first\nsleep {}", seconds + 60),
        secrets: Vec::new(),
        container: None,
    };
    let id = executor.spawn_job(&job).await.unwrap();
    wait_line(&Path::new(id.dir()).join(JOB_LOG), Instant::now());
    let mut metrics = executor.tail(&format!("{}/metrics.jsonl", id.dir()), 0);
    let mut log = executor.tail(&format!("{}/{JOB_LOG}", id.dir()), 0);
    let cpu_before = cpu_time();
    let began = Instant::now();
    let mut polls = 0_u32;
    while began.elapsed() < Duration::from_secs(seconds) {
        let _ = metrics.poll().await.unwrap();
        let _ = log.poll().await.unwrap();
        assert_eq!(executor.job_status(&id).await.unwrap(), JobStatus::Running);
        polls += 1;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let wall = began.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_before);
    executor.cancel_job(&id).await.unwrap();
    println!(
        "follow loop: {polls} polls in {:.1} s, CPU {:.0} ms = {:.2}% of one core (scontrol included; target under 2%)",
        wall.as_secs_f64(),
        cpu.as_secs_f64() * 1000.0,
        cpu.as_secs_f64() / wall.as_secs_f64() * 100.0
    );
}
