//! Uploads through the blob cache over loopback SSH (issue 21, "Speed"), against the
//! plain tools doing the same work through the executor's own master connection. Run
//! it with `bench/blobs.sh` (which installs `rsync` when missing) or `cargo bench
//! --bench blobs`; it prints one line per figure.
//!
//! The tree is model-like random data under the system's temporary directory: two
//! shards of about half the size each and a few small JSON files, 1 GiB in all
//! (`OB_BENCH_MIB` sets another size). Figures:
//!
//! - the first upload (cold local digest cache, empty blob cache on the target: hash
//!   the small files, send the big ones while hashing them, verify on the target,
//!   rename, link) against `tar c | ssh tar x`, alternately for `OB_BENCH_ROUNDS`
//!   rounds (5), each round's figures and the medians (target: a ratio of at least
//!   1.0, baseline time over ours), with the processor time of the whole machine;
//! - the re-upload of the unchanged tree into a second run directory (the digest cache
//!   reloaded from its file, as the next `train` reads it) against `rsync -a` of the
//!   unchanged tree onto its earlier copy: wall time and the bytes moved (ours: the
//!   bytes of the blobs handed to the transfer; rsync: its `--stats` bytes sent and
//!   received), and for both the bytes seen on the loopback interface meanwhile
//!   (`/proc/net/dev`, received side; other traffic on the machine counts too).
//!
//! The re-upload is one round.

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
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use overbrainer::exec::SshExecutor;
use overbrainer::exec::blobs::{
    BLOBS_DIR, ChangingScripts as _, DigestCache, check_script, digest_tree, upload_tree,
};

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run());
}

#[allow(
    clippy::too_many_lines,
    reason = "one sequence of figures, read top to bottom"
)]
async fn run() {
    let mib: u64 = std::env::var("OB_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let root = tempfile::tempdir().unwrap();
    let source = root.path().join("model");
    let (bytes, files) = make_tree(&source, mib << 20);
    println!(
        "tree: {:.1} MiB in {files} files under {}",
        bytes as f64 / 1_048_576.0,
        root.path().display()
    );
    let sshd = sshd::Sshd::start();
    let workdir = root.path().join("work");
    let executor = SshExecutor::connect(sshd.destination(), &workdir.to_string_lossy())
        .await
        .unwrap();
    // The baselines use the executor's own master connection, so both sides pay for
    // the transfer only, not for a connection setup.
    let socket = executor.control_socket().await.unwrap();
    let (options, host) = ssh_options(&sshd);
    let ssh = format!("ssh -S {} {options}", socket.display());
    let work = workdir.display();
    shell(&format!("{ssh} {host} 'mkdir -p {work}'"));

    // The first upload against `tar c | ssh tar x`, alternately, several rounds (on a
    // small machine one round's figures swing by a third): each round on an empty blob
    // cache and a cold digest cache.
    let rounds: usize = std::env::var("OB_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let digests = root.path().join("digests.json");
    let mut figures = Vec::new();
    let mut first = None;
    for round in 0..rounds {
        shell(&format!(
            "{ssh} {host} 'rm -rf {work}/tar {work}/r1 {work}/{BLOBS_DIR}'"
        ));
        settle();
        let traffic = loopback();
        let busy = cpu_busy();
        let started = Instant::now();
        shell(&format!(
            "tar -cf - -C {src} . | {ssh} {host} 'mkdir -p {work}/tar && tar -xf - -C {work}/tar'",
            src = source.display()
        ));
        let tar = (started.elapsed(), loopback() - traffic, cpu_busy() - busy);

        settle();
        let mut cache = DigestCache::default();
        let traffic = loopback();
        let busy = cpu_busy();
        let started = Instant::now();
        let uploaded = upload_tree(
            &executor,
            &source,
            &format!("{work}/r1/base_model"),
            &mut cache,
            |_| {},
        )
        .await
        .unwrap();
        let ours = (started.elapsed(), loopback() - traffic, cpu_busy() - busy);
        println!(
            "first upload, round {}: ours {:.2} s ({:.0} MiB/s, {} MiB staged, {} MiB on loopback, {:.2} s of processor time), tar c | ssh tar x {:.2} s ({:.0} MiB/s, {} MiB on loopback, {:.2} s of processor time), ratio {:.2}",
            round + 1,
            secs(ours.0),
            rate(bytes, ours.0),
            uploaded.staged_bytes >> 20,
            ours.1 >> 20,
            ours.2,
            secs(tar.0),
            rate(bytes, tar.0),
            tar.1 >> 20,
            tar.2,
            secs(tar.0) / secs(ours.0),
        );
        figures.push((secs(ours.0), secs(tar.0)));
        cache.save(&digests).unwrap();
        first = Some(uploaded);
    }
    let first = first.expect("at least one round");
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!(
        "first upload, median of {rounds} rounds (processor time counts every process, both ends, on {} processors): ours {:.2} s, tar c | ssh tar x {:.2} s, ratio {:.2} (median of the rounds' ratios)",
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        median(figures.iter().map(|f| f.0).collect()),
        median(figures.iter().map(|f| f.1).collect()),
        median(figures.iter().map(|f| f.1 / f.0).collect()),
    );

    // Where the first upload's time goes: the local hashing alone (a cold digest cache,
    // the tree in the page cache as for the upload), the target's verification alone
    // (the check reading every blob, its records of verified blobs removed first, the
    // blobs in the target's page cache as when they just arrived); the rest is the
    // staging, the transfer and the round trips.
    let started = Instant::now();
    let local = digest_tree(&source, &mut DigestCache::default()).unwrap();
    let hashing = started.elapsed();
    let mut digests_sent: Vec<&str> = local.iter().map(|blob| blob.sha256.as_str()).collect();
    digests_sent.sort_unstable();
    digests_sent.dedup();
    shell(&format!(
        "{ssh} {host} 'rm -rf {work}/{BLOBS_DIR}/verified'"
    ));
    let started = Instant::now();
    executor
        .run_changing(
            "check blobs",
            &check_script(&work.to_string(), &digests_sent).unwrap(),
        )
        .await
        .unwrap();
    let verifying = started.elapsed();
    println!(
        "first upload's parts, apart (last round's tree): local hashing {:.2} s, target verification {:.2} s",
        secs(hashing),
        secs(verifying),
    );

    // rsync's own first copy, so that its re-upload finds the tree there.
    let rsync = |dest: &str| {
        let started = Instant::now();
        let output = Command::new("rsync")
            .args(["-a", "--stats", "-e", &ssh])
            .arg(format!("{}/", source.display()))
            .arg(format!("{host}:{work}/{dest}/"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "rsync: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        (
            started.elapsed(),
            stat(&output.stdout, "Total bytes sent") + stat(&output.stdout, "Total bytes received"),
        )
    };
    settle();
    let (rsync_first, _) = rsync("rsync");
    println!(
        "rsync -a first copy (for reference): {:.2} s ({:.0} MiB/s)",
        secs(rsync_first),
        rate(bytes, rsync_first)
    );

    // The re-upload of the unchanged tree against `rsync -a` of it.
    settle();
    let traffic = loopback();
    let (rsync_again, rsync_bytes) = rsync("rsync");
    let rsync_traffic = loopback() - traffic;

    settle();
    let mut cache = DigestCache::load(&digests);
    let traffic = loopback();
    let started = Instant::now();
    let second = upload_tree(
        &executor,
        &source,
        &format!("{work}/r2/base_model"),
        &mut cache,
        |_| {},
    )
    .await
    .unwrap();
    let again = (started.elapsed(), loopback() - traffic);
    assert_eq!(cache.hashed(), 0, "an unchanged tree was hashed again");
    println!(
        "re-upload of the unchanged tree: ours {:.3} s ({} bytes staged, {} KiB on loopback), rsync -a {:.3} s ({rsync_bytes} bytes by its --stats, {} KiB on loopback), ratio {:.2}",
        secs(again.0),
        second.staged_bytes,
        again.1 >> 10,
        secs(rsync_again),
        rsync_traffic >> 10,
        secs(rsync_again) / secs(again.0),
    );
    println!(
        "second run over first: {:.4}% of the bytes staged",
        second.staged_bytes as f64 * 100.0 / first.staged_bytes.max(1) as f64
    );
}

/// Writes a model-like tree of `size` bytes of pseudo-random data under `root`: two
/// shards and small JSON files; returns its bytes and file count.
fn make_tree(root: &Path, size: u64) -> (u64, usize) {
    std::fs::create_dir_all(root).unwrap();
    let mut next = words();
    let mut total = 0;
    let small = [
        ("config.json", 700),
        ("generation_config.json", 200),
        ("tokenizer_config.json", 40_000),
        ("tokenizer.json", 2_000_000),
        ("special_tokens_map.json", 600),
        ("model.safetensors.index.json", 30_000),
    ];
    let small_bytes: u64 = small.iter().map(|(_, n)| n).sum();
    let shard = size.saturating_sub(small_bytes) / 2;
    let mut block = vec![0_u8; 1 << 20];
    let mut write = |name: &str, bytes: u64| {
        let mut file = std::fs::File::create(root.join(name)).unwrap();
        let mut left = bytes;
        while left > 0 {
            for chunk in block.chunks_mut(8) {
                chunk.copy_from_slice(&next().to_le_bytes()[..chunk.len()]);
            }
            let n = usize::try_from(left.min(block.len() as u64)).unwrap();
            file.write_all(&block[..n]).unwrap();
            left -= n as u64;
        }
        total += bytes;
    };
    for (name, bytes) in small {
        write(name, bytes);
    }
    write("model-00001-of-00002.safetensors", shard);
    write("model-00002-of-00002.safetensors", shard);
    (total, small.len() + 2)
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

/// The number after `label: ` in rsync's `--stats` output (commas dropped).
fn stat(output: &[u8], label: &str) -> u64 {
    let text = String::from_utf8_lossy(output);
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{label}: ")))
        .and_then(|rest| rest.split_whitespace().next())
        .map_or(0, |n| n.replace(',', "").parse().unwrap_or(0))
}

/// Seconds of processor time spent so far by the whole machine, every processor
/// (`/proc/stat`: all but idle and I/O wait).
fn cpu_busy() -> f64 {
    let text = std::fs::read_to_string("/proc/stat").unwrap();
    let fields: Vec<f64> = text
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .skip(1)
        .filter_map(|n| n.parse().ok())
        .collect();
    let busy: f64 = fields
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4 && *i < 8)
        .map(|(_, n)| n)
        .sum();
    busy / 100.0
}

/// Bytes received on the loopback interface so far.
fn loopback() -> u64 {
    let text = std::fs::read_to_string("/proc/net/dev").unwrap();
    text.lines()
        .find_map(|line| line.trim_start().strip_prefix("lo:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Writes every dirty block out, so the next figure does not share the disk with an
/// earlier one's writeback.
fn settle() {
    rustix::fs::sync();
}

fn ssh_options(sshd: &sshd::Sshd) -> (String, String) {
    let destination = sshd.destination();
    (
        format!(
            "-F {} -i {} -o IdentitiesOnly=yes -o UserKnownHostsFile={} -o StrictHostKeyChecking=yes -p {}",
            destination.config_file.unwrap().display(),
            destination.identity_file.unwrap().display(),
            destination.known_hosts_file.unwrap().display(),
            destination.port.unwrap(),
        ),
        destination.host,
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

fn secs(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

fn rate(bytes: u64, duration: Duration) -> f64 {
    bytes as f64 / 1_048_576.0 / duration.as_secs_f64()
}
