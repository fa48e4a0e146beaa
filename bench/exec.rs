//! Executor speed over loopback SSH, against the plain tools doing the same work
//! (issue 3). Run with `cargo bench --bench exec`; it prints one line per figure.
//!
//! - upload and download of a tree of one 512 MiB file and 20,000 files of 1 to
//!   64 KiB, against `tar c | ssh host tar x` (and the reverse) through the same
//!   master connection, as a throughput ratio (target: at least 0.9);
//! - the manifest of that tree against `find ... -print0 | xargs -0 sha256sum`
//!   run over `ssh`, as a ratio (target: at least 0.9);
//! - one status poll, against one trivial command (`true`) on the same master
//!   connection: equal costs mean a poll is one round trip.
//!
//! `OB_BENCH_SMALL=1` shrinks the tree to 8 MiB and 500 files for a quick check.

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

use overbrainer::exec::{Executor, JobCommand, SshExecutor};

fn main() {
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
    let root = tempfile::tempdir().unwrap();
    let source = root.path().join("source");
    let bytes = make_tree(&source, big, files);
    println!(
        "tree: {:.1} MiB in {} files",
        bytes as f64 / 1_048_576.0,
        files + 1
    );
    let sshd = sshd::Sshd::start();
    let destination = sshd.destination();
    let executor = SshExecutor::connect(
        destination.clone(),
        &root.path().join("work").to_string_lossy(),
    )
    .await
    .unwrap();
    // The baseline uses the executor's own master connection, so both sides pay
    // for the transfer only, not for a connection setup.
    let socket = executor.control_socket().await.unwrap();
    let ssh_args = format!("-S {} {}", socket.display(), ssh_args(&sshd));

    // Upload.
    let ours_dir = format!("{}/up-ours", executor.workdir());
    let started = Instant::now();
    executor.upload(&source, &ours_dir, &[]).await.unwrap();
    let ours = started.elapsed();
    let base_dir = format!("{}/up-base", executor.workdir());
    let started = Instant::now();
    shell(&format!(
        "tar -cf - -C {src} . | ssh {ssh_args} 'mkdir -p {dst} && tar -xf - -C {dst}'",
        src = source.display(),
        dst = base_dir
    ));
    let base = started.elapsed();
    report("upload", bytes, ours, base);
    std::fs::remove_dir_all(&base_dir).unwrap();

    // Download.
    let back_ours = root.path().join("down-ours");
    let started = Instant::now();
    executor
        .download(&ours_dir, &back_ours, &[".".to_owned()], &[])
        .await
        .unwrap();
    let ours = started.elapsed();
    let back_base = root.path().join("down-base");
    std::fs::create_dir_all(&back_base).unwrap();
    let started = Instant::now();
    shell(&format!(
        "ssh {ssh_args} 'tar -cf - -C {src} .' | tar -xf - -C {dst}",
        src = ours_dir,
        dst = back_base.display()
    ));
    let base = started.elapsed();
    report("download", bytes, ours, base);
    std::fs::remove_dir_all(&back_ours).unwrap();
    std::fs::remove_dir_all(&back_base).unwrap();

    // Manifest, page cache warm for both.
    let _ = executor
        .manifest(&ours_dir, &[".".to_owned()], &[])
        .await
        .unwrap();
    let started = Instant::now();
    let digests = executor
        .manifest(&ours_dir, &[".".to_owned()], &[])
        .await
        .unwrap();
    let ours = started.elapsed();
    assert_eq!(digests.len(), files + 1);
    let started = Instant::now();
    shell(&format!(
        "ssh {ssh_args} 'cd {ours_dir} && find . -type f -print0 | xargs -0 sha256sum' > /dev/null"
    ));
    let base = started.elapsed();
    report("manifest", bytes, ours, base);

    status_poll(&executor).await;
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
    let rounds = 50_u32;
    let started = Instant::now();
    for _ in 0..rounds {
        executor.status(&job).await.unwrap();
    }
    let status = started.elapsed() / rounds;
    let started = Instant::now();
    for _ in 0..rounds {
        executor.probe("true").await.unwrap();
    }
    let trivial = started.elapsed() / rounds;
    println!(
        "status poll: {:.2} ms per poll, one trivial command on the same master: {:.2} ms (ratio {:.2})",
        ms(status),
        ms(trivial),
        status.as_secs_f64() / trivial.as_secs_f64()
    );
    executor.cancel(&job).await.unwrap();
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn report(what: &str, bytes: u64, ours: Duration, base: Duration) {
    let mib = bytes as f64 / 1_048_576.0;
    println!(
        "{what}: ours {:.2} s ({:.0} MiB/s), baseline {:.2} s ({:.0} MiB/s), throughput ratio {:.2}",
        ours.as_secs_f64(),
        mib / ours.as_secs_f64(),
        base.as_secs_f64(),
        mib / base.as_secs_f64(),
        base.as_secs_f64() / ours.as_secs_f64()
    );
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

/// Writes the tree and returns its size in bytes.
fn make_tree(root: &Path, big: usize, files: usize) -> u64 {
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    std::fs::create_dir_all(root).unwrap();
    let mut total = 0_u64;
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
    total += big as u64;
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
