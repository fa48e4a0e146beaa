//! Executor speed over loopback SSH, against the plain tools doing the same work
//! (issues 3 and 10). Run with `cargo bench --bench exec`; it prints one line per
//! figure: ours against the baseline, and their throughput ratio (baseline time over
//! ours: above 1 means ours is faster).
//!
//! The tree is measured in two halves, each on its own: the big half is one 512 MiB
//! file, the small half 20,000 files of 1 to 64 KiB. For each half:
//!
//! - upload and download, against `tar c | ssh host tar x` (and the reverse)
//!   through the same master connection (target: at least 1.0);
//! - the manifest, against `find ... -print0 | xargs -0 sha256sum` run over `ssh`
//!   (target: at least 1.0);
//! - for the big half, upload and download against the raw channel, `cat FILE |
//!   ssh host 'cat > /dev/null'` and `ssh host 'cat FILE' > /dev/null` over the same
//!   master (target: at least 0.8; the cipher sets this limit), and the upload
//!   against `cat FILE | ssh host 'cat > FILE'`, the raw channel that also writes
//!   the file on the target as an upload must.
//!
//! Then one status poll, against one trivial command (`true`) on the same master
//! connection, alternated one by one; the ratio is the command's time over the
//! poll's (as above, above 1 is better): about 1 means a poll is one round trip.
//!
//! Within a figure the two sides alternate (baseline, ours, baseline, ours) and the
//! better time of each counts (of two rounds; of five for the raw-channel figures,
//! which take under a second each), so a noisy moment hurts both alike.
//!
//! `OB_BENCH_PART=small|big|all` (default `all`) picks the halves;
//! `OB_BENCH_FIGURES=upload,download,manifest,raw,poll` picks figures (all when
//! unset); `OB_BENCH_OURS_ONLY=1` skips the baselines (to profile ours alone, say with
//! `strace -c -f -p`); `OB_BENCH_PAUSE=1` waits for a line on standard input before
//! each half (to attach a profiler); `OB_BENCH_SMALL=1` shrinks the tree to 8 MiB and
//! 500 files for a quick check. `RUST_LOG` (say `overbrainer::exec=debug`) prints the
//! executor's tracing spans on standard error as they close, with their busy and idle
//! time: the phases of a transfer.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    reason = "a benchmark: failing loudly is the point, figures are approximate, and it runs the plain tools it compares against"
)]

#[path = "../tests/integration/sshd.rs"]
#[allow(dead_code, reason = "the harness has more than the bench needs")]
mod sshd;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use overbrainer::exec::{Executor, JobCommand, SshExecutor};

fn main() {
    if let Ok(filter) = std::env::var("RUST_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_writer(std::io::stderr)
            .init();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    let small = std::env::var_os("OB_BENCH_SMALL").is_some();
    let (big, files) = if small {
        (8 << 20, 500)
    } else {
        (512 << 20, 20_000)
    };
    let part = std::env::var("OB_BENCH_PART").unwrap_or_else(|_| "all".to_owned());
    let halves: &[Half] = match part.as_str() {
        "all" => &[Half::Small, Half::Big],
        "small" => &[Half::Small],
        "big" => &[Half::Big],
        other => panic!("OB_BENCH_PART={other}: expected small, big or all"),
    };
    let root = tempfile::tempdir().unwrap();
    let sshd = sshd::Sshd::start();
    let executor = SshExecutor::connect(
        sshd.destination(),
        &root.path().join("work").to_string_lossy(),
    )
    .await
    .unwrap();
    // The baselines use the executor's own master connection, so both sides pay
    // for the transfer only, not for a connection setup.
    let socket = executor.control_socket().await.unwrap();
    let ssh_args = format!("-S {} {}", socket.display(), ssh_args(&sshd));
    let bench = Bench {
        executor,
        ssh_args,
        root: root.path().to_path_buf(),
    };
    for half in halves {
        let source = root.path().join(format!("source-{}", half.name()));
        let (bytes, count) = match half {
            Half::Big => (make_big(&source, big), 1),
            Half::Small => (make_small(&source, files), files),
        };
        println!(
            "{} half: {:.1} MiB in {count} files",
            half.name(),
            bytes as f64 / 1_048_576.0,
        );
        if std::env::var_os("OB_BENCH_PAUSE").is_some() {
            println!(
                "ready: pid {}, send a line on standard input",
                std::process::id()
            );
            std::io::stdout().flush().unwrap();
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).unwrap();
        }
        bench.half(*half, &source, bytes, count).await;
        std::fs::remove_dir_all(&source).unwrap();
    }
    if wanted("poll") {
        status_poll(&bench.executor).await;
    }
}

#[derive(Clone, Copy)]
enum Half {
    Small,
    Big,
}

impl Half {
    fn name(self) -> &'static str {
        match self {
            Self::Small => "small",
            Self::Big => "big",
        }
    }
}

struct Bench {
    executor: SshExecutor,
    ssh_args: String,
    root: PathBuf,
}

/// Rounds of each side within a figure.
const ROUNDS: usize = 2;

/// Rounds of each side of the raw-channel figures: each takes under a second, so the
/// best of five, not two, keeps one noisy moment from setting the figure.
const RAW_ROUNDS: usize = 5;

impl Bench {
    async fn half(&self, half: Half, source: &Path, bytes: u64, count: usize) {
        let name = half.name();
        let workdir = self.executor.workdir().to_owned();
        // Every run writes a fresh directory, all removed at the end of the half:
        // after a removal of 20,000 files ext4 spends long in `ext4_create` passing
        // over the recently deleted inodes, which would load whichever run came next.
        let mut trees: Vec<PathBuf> = Vec::new();
        let remote = if wanted("upload") {
            self.upload(name, source, bytes, &mut trees).await
        } else {
            let remote = format!("{workdir}/tree-{name}");
            self.executor.upload(source, &remote, &[]).await.unwrap();
            trees.push(remote.clone().into());
            remote
        };
        self.download(name, &remote, bytes, &mut trees).await;
        self.manifest(name, &remote, bytes, count).await;
        if let Half::Big = half {
            self.raw_channel(source, &remote, bytes).await;
        }
        for tree in trees {
            std::fs::remove_dir_all(tree).unwrap();
        }
    }

    /// Upload of `source`; returns the directory of ours' last run.
    async fn upload(
        &self,
        name: &str,
        source: &Path,
        bytes: u64,
        trees: &mut Vec<PathBuf>,
    ) -> String {
        let ssh_args = &self.ssh_args;
        let workdir = self.executor.workdir();
        let mut figure = Figure::default();
        let mut remote = String::new();
        for round in 0..ROUNDS {
            let base_dir = format!("{workdir}/up-base-{name}-{round}");
            figure.base(|| {
                shell(&format!(
                    "tar -cf - -C {src} . | ssh {ssh_args} 'mkdir -p {base_dir} && tar -xf - -C {base_dir}'",
                    src = source.display(),
                ));
            });
            trees.push(base_dir.into());
            remote = format!("{workdir}/up-ours-{name}-{round}");
            let (cpu, started) = (cpu_time().0, Instant::now());
            self.executor.upload(source, &remote, &[]).await.unwrap();
            figure.ours(started, cpu);
            trees.push(remote.clone().into());
        }
        figure.report(&format!("{name} upload"), bytes, "tar c | ssh tar x");
        remote
    }

    /// Download of the tree at `remote`, each run into a fresh directory.
    async fn download(&self, name: &str, remote: &str, bytes: u64, trees: &mut Vec<PathBuf>) {
        let ssh_args = &self.ssh_args;
        if !wanted("download") {
            return;
        }
        let mut figure = Figure::default();
        for round in 0..ROUNDS {
            let back_base = self.root.join(format!("down-base-{name}-{round}"));
            std::fs::create_dir_all(&back_base).unwrap();
            figure.base(|| {
                shell(&format!(
                    "ssh {ssh_args} 'tar -cf - -C {remote} .' | tar -xf - -C {dst}",
                    dst = back_base.display()
                ));
            });
            trees.push(back_base);
            let back_ours = self.root.join(format!("down-ours-{name}-{round}"));
            let (cpu, started) = (cpu_time().0, Instant::now());
            self.executor
                .download(remote, &back_ours, &[".".to_owned()], &[])
                .await
                .unwrap();
            figure.ours(started, cpu);
            trees.push(back_ours);
        }
        figure.report(&format!("{name} download"), bytes, "ssh tar c | tar x");
    }

    /// The manifest of the tree at `remote`, page cache warm for both.
    async fn manifest(&self, name: &str, remote: &str, bytes: u64, count: usize) {
        let ssh_args = &self.ssh_args;
        if !wanted("manifest") {
            return;
        }
        let _ = self
            .executor
            .manifest(remote, &[".".to_owned()], &[])
            .await
            .unwrap();
        let mut figure = Figure::default();
        for _ in 0..ROUNDS {
            figure.base(|| {
                shell(&format!(
                    "ssh {ssh_args} 'cd {remote} && find . -type f -print0 | xargs -0 sha256sum' > /dev/null"
                ));
            });
            let (cpu, started) = (cpu_time().0, Instant::now());
            let digests = self
                .executor
                .manifest(remote, &[".".to_owned()], &[])
                .await
                .unwrap();
            figure.ours(started, cpu);
            assert_eq!(digests.len(), count);
        }
        figure.report(&format!("{name} manifest"), bytes, "find | xargs sha256sum");
    }

    /// The big file alone against the bare channel of the same master, both ways.
    async fn raw_channel(&self, source: &Path, remote: &str, bytes: u64) {
        let ssh_args = &self.ssh_args;
        if !wanted("raw") {
            return;
        }
        let file = source.join("model.bin");
        let mut figure = Figure::default();
        let up = format!("{}/up-raw", self.executor.workdir());
        for _ in 0..RAW_ROUNDS {
            figure.base(|| {
                shell(&format!(
                    "cat {file} | ssh {ssh_args} 'cat > /dev/null'",
                    file = file.display()
                ));
            });
            remove(&up);
            let (cpu, started) = (cpu_time().0, Instant::now());
            self.executor.upload(source, &up, &[]).await.unwrap();
            figure.ours(started, cpu);
        }
        remove(&up);
        figure.report(
            "big upload, raw",
            bytes,
            "raw channel cat | ssh 'cat > /dev/null'",
        );
        // The same channel with the file written on the target, as an upload does.
        let mut figure = Figure::default();
        let raw_file = format!("{}/up-raw-file", self.executor.workdir());
        for _ in 0..RAW_ROUNDS {
            figure.base(|| {
                shell(&format!(
                    "cat {file} | ssh {ssh_args} 'cat > {raw_file}'",
                    file = file.display()
                ));
            });
            let _ = std::fs::remove_file(&raw_file);
            remove(&up);
            let (cpu, started) = (cpu_time().0, Instant::now());
            self.executor.upload(source, &up, &[]).await.unwrap();
            figure.ours(started, cpu);
        }
        let _ = std::fs::remove_file(&raw_file);
        remove(&up);
        figure.report(
            "big upload, raw to a file",
            bytes,
            "raw channel cat | ssh 'cat > FILE'",
        );
        let mut figure = Figure::default();
        let back = self.root.join("down-raw");
        for _ in 0..RAW_ROUNDS {
            figure.base(|| {
                shell(&format!(
                    "ssh {ssh_args} 'cat {remote}/model.bin' > /dev/null"
                ));
            });
            let (cpu, started) = (cpu_time().0, Instant::now());
            self.executor
                .download(remote, &back, &[".".to_owned()], &[])
                .await
                .unwrap();
            figure.ours(started, cpu);
            remove(&back);
        }
        figure.report(
            "big download, raw",
            bytes,
            "raw channel ssh 'cat' > /dev/null",
        );
    }
}

/// The best time of each side of one figure, with the CPU time this machine spent
/// on that run (ours: this process; the baseline: the local commands it ran).
#[derive(Default)]
struct Figure {
    ours: Option<(Duration, Duration)>,
    base: Option<(Duration, Duration)>,
}

impl Figure {
    /// Records a run of ours that started at `started` with the CPU time `cpu`.
    fn ours(&mut self, started: Instant, cpu: Duration) {
        let run = (started.elapsed(), cpu_time().0.saturating_sub(cpu));
        self.ours = Some(self.ours.map_or(run, |best| best.min(run)));
    }

    fn base(&mut self, work: impl FnOnce()) {
        if std::env::var_os("OB_BENCH_OURS_ONLY").is_some() {
            self.base = Some((Duration::ZERO, Duration::ZERO));
            return;
        }
        let cpu = cpu_time().1;
        let started = Instant::now();
        work();
        let run = (started.elapsed(), cpu_time().1.saturating_sub(cpu));
        self.base = Some(self.base.map_or(run, |best| best.min(run)));
    }

    fn report(&self, what: &str, bytes: u64, baseline: &str) {
        let (Some((ours, ours_cpu)), Some((base, base_cpu))) = (self.ours, self.base) else {
            return;
        };
        let mib = bytes as f64 / 1_048_576.0;
        println!(
            "{what}: ours {:.2} s ({:.0} MiB/s, cpu {:.2} s), {baseline} {:.2} s ({:.0} MiB/s, cpu {:.2} s), ratio {:.2}",
            ours.as_secs_f64(),
            mib / ours.as_secs_f64(),
            ours_cpu.as_secs_f64(),
            base.as_secs_f64(),
            mib / base.as_secs_f64(),
            base_cpu.as_secs_f64(),
            base.as_secs_f64() / ours.as_secs_f64()
        );
    }
}

/// CPU time (user and system) of this process, and of its children waited for,
/// from `/proc/self/stat`.
fn cpu_time() -> (Duration, Duration) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The fields after the command name, which is in parentheses.
    let fields: Vec<u64> = stat[stat.rfind(')').unwrap() + 2..]
        .split(' ')
        .map(|field| field.parse().unwrap_or(0))
        .collect();
    // utime, stime, cutime, cstime are fields 14 to 17; the slice starts at field 3.
    let tick = |n: u64| Duration::from_millis(n * 10);
    (tick(fields[11] + fields[12]), tick(fields[13] + fields[14]))
}

/// One status poll against one trivial command on the same master.
async fn status_poll(executor: &SshExecutor) {
    let job = executor
        .spawn(&JobCommand {
            dir: format!("{}/job", executor.workdir()),
            script: "sleep 60".to_owned(),
            secrets: Vec::new(),
            container: None,
        })
        .await
        .unwrap();
    // Alternated one by one, so a noisy moment hurts both alike.
    let rounds = 50_u32;
    let (mut status, mut trivial) = (Duration::ZERO, Duration::ZERO);
    for _ in 0..rounds {
        let started = Instant::now();
        executor.probe("true").await.unwrap();
        trivial += started.elapsed();
        let started = Instant::now();
        executor.status(&job).await.unwrap();
        status += started.elapsed();
    }
    let (status, trivial) = (status / rounds, trivial / rounds);
    println!(
        "status poll: {:.2} ms per poll, one trivial command on the same master: {:.2} ms, ratio {:.2}",
        ms(status),
        ms(trivial),
        trivial.as_secs_f64() / status.as_secs_f64()
    );
    executor.cancel(&job).await.unwrap();
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn ssh_args(sshd: &sshd::Sshd) -> String {
    let destination = sshd.destination();
    format!(
        "-F {} -i {} -o IdentitiesOnly=yes -o UserKnownHostsFile={} -o StrictHostKeyChecking=yes -p {} {}",
        destination.config_file.unwrap().display(),
        destination.identity_file.unwrap().display(),
        destination.known_hosts_file.unwrap().display(),
        destination.port.unwrap(),
        destination.host
    )
}

fn shell(script: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

/// Removes the one-file tree at `path` if it is there, and writes every dirty block
/// out, so the next run does not share the disk with that writeback.
fn remove(path: impl AsRef<Path>) {
    let _ = std::fs::remove_dir_all(path);
    rustix::fs::sync();
}

/// Whether `figure` (`upload`, `download`, `manifest`, `raw`, `poll`) is among those
/// `OB_BENCH_FIGURES` names (a comma-separated list; all when unset).
fn wanted(figure: &str) -> bool {
    std::env::var("OB_BENCH_FIGURES").map_or(true, |figures| {
        figures.split(',').any(|name| name == figure)
    })
}

/// A generator of pseudo-random words, the same on every run.
fn words() -> impl FnMut() -> u64 {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Writes the big half, one file of `big` bytes, and returns its size in bytes.
fn make_big(root: &Path, big: usize) -> u64 {
    let mut next = words();
    std::fs::create_dir_all(root).unwrap();
    let mut block = vec![0_u8; 1 << 20];
    let mut file = std::fs::File::create(root.join("model.bin")).unwrap();
    let mut left = big;
    while left > 0 {
        for chunk in block.chunks_mut(8) {
            chunk.copy_from_slice(&next().to_le_bytes()[..chunk.len()]);
        }
        let n = left.min(block.len());
        file.write_all(&block[..n]).unwrap();
        left -= n;
    }
    big as u64
}

/// Writes the small half, `files` files of 1 to 64 KiB in 200 directories, and
/// returns their size in bytes.
fn make_small(root: &Path, files: usize) -> u64 {
    let mut next = words();
    let mut block = vec![0_u8; 64 * 1024];
    let mut total = 0_u64;
    for i in 0..files {
        let dir = root.join(format!("d{:03}", i % 200));
        std::fs::create_dir_all(&dir).unwrap();
        let size = 1024 + (next() % (63 * 1024 + 1)) as usize;
        for chunk in block[..size].chunks_mut(8) {
            chunk.copy_from_slice(&next().to_le_bytes()[..chunk.len()]);
        }
        std::fs::write(dir.join(format!("f{i}.bin")), &block[..size]).unwrap();
        total += size as u64;
    }
    total
}
