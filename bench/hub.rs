//! Upload speed of `overbrainer push` against `huggingface_hub`'s `upload_file` (issue 16,
//! "Speed"): one file of 1 GiB (`OB_BENCH_MIB` to change) to the Hub stand-in of the tests
//! on loopback, Xet off, each side against its own fresh stand-in so that neither finds the
//! other's object stored. Run with `cargo bench --bench hub`; needs the pinned
//! `huggingface_hub` (`scripts/hf-hub-env.sh`). It prints, for each side, the time, the
//! throughput and the peak resident memory (`/usr/bin/time`'s maximum RSS), then the ratio
//! (Python's time over ours: the target is at least 0.9), and our memory for a file of a
//! quarter of the size, to show it flat in the file size. Both sides hash the file with
//! sha256 and upload it `multipart` in parts of 16 MiB.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    reason = "a benchmark: failing loudly is the point, figures are approximate, and it runs the client it compares against"
)]

#[path = "../tests/integration/hub_standin.rs"]
mod hub_standin;

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use hub_standin::HubStandin;

const TOKEN: &str = "hf_benchtokenbenchtokenbenchtoken";
const PART: u64 = 16 << 20;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

/// A project holding one succeeded run whose `output/` is one file of `mib` MiB.
fn project(dir: &Path, mib: u64) -> String {
    std::fs::write(
        dir.join("overbrainer.toml"),
        "[project]\nname = \"bench\"\n",
    )
    .unwrap();
    let id = "bench_run";
    let run = dir.join("runs").join(id);
    std::fs::create_dir_all(run.join("output")).unwrap();
    std::fs::write(
        run.join("run.json"),
        format!(
            r#"{{"id":"{id}","created":"2026-01-01T00:00:00Z","target":"local","target_kind":"local","dir":"/nowhere","owner":"bench","state":"succeeded","snapshots":true,"retrieved":true}}"#
        ),
    )
    .unwrap();
    let mut file = std::fs::File::create(run.join("output/model.safetensors")).unwrap();
    let block = hub_standin::noise(1 << 20, 1);
    for i in 0..mib {
        // Each MiB differs, so no two parts are alike.
        let mut b = block.clone();
        b[..8].copy_from_slice(&i.to_le_bytes());
        file.write_all(&b).unwrap();
    }
    id.to_owned()
}

/// Runs `command` under `/usr/bin/time -f %M`; gives its wall time and peak RSS in KiB.
fn timed(command: &Command) -> (Duration, u64) {
    let rss = tempfile::NamedTempFile::new().unwrap();
    let program = command.get_program().to_owned();
    let args: Vec<_> = command.get_args().map(ToOwned::to_owned).collect();
    let envs: Vec<_> = command
        .get_envs()
        .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
        .collect();
    let mut wrapped = Command::new("/usr/bin/time");
    wrapped
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(rss.path())
        .arg(program)
        .args(args);
    for (k, v) in envs {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    let start = Instant::now();
    let output = wrapped.output().unwrap();
    let took = start.elapsed();
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let kib = std::fs::read_to_string(rss.path())
        .unwrap()
        .trim()
        .lines()
        .last()
        .unwrap()
        .parse()
        .unwrap();
    (took, kib)
}

async fn standin() -> HubStandin {
    let hub = HubStandin::start().await;
    hub.set_multipart(PART, PART);
    hub.add_token(TOKEN, "alice", "write", &[]);
    hub
}

async fn ours(mib: u64) -> (Duration, u64) {
    let dir = tempfile::tempdir().unwrap();
    let id = project(dir.path(), mib);
    let hub = standin().await;
    let mut command = Command::new(env!("CARGO_BIN_EXE_overbrainer"));
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("OVERBRAINER_HUB__BASE_URL", hub.uri())
        .env("OVERBRAINER_HF_TOKEN", TOKEN)
        .arg("-C")
        .arg(dir.path())
        .args(["push", &id, "--repo", "alice/ours"]);
    let result = tokio::task::spawn_blocking(move || timed(&command))
        .await
        .unwrap();
    assert!(hub.repo("alice/ours").unwrap().commits.len() == 2);
    result
}

async fn python(mib: u64) -> (Duration, u64) {
    let dir = tempfile::tempdir().unwrap();
    let id = project(dir.path(), mib);
    let hub = standin().await;
    let file = dir
        .path()
        .join("runs")
        .join(id)
        .join("output/model.safetensors");
    let mut command = Command::new(hub_standin::hf_python());
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HF_ENDPOINT", hub.uri())
        .env("HF_TOKEN", TOKEN)
        .env("HF_HUB_DISABLE_XET", "1")
        .env("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        .env("HF_HOME", dir.path().join("hf"))
        .arg("-c")
        .arg("import sys\nfrom huggingface_hub import HfApi\napi = HfApi()\napi.create_repo('alice/python', private=True)\napi.upload_file(path_or_fileobj=sys.argv[1], path_in_repo='model.safetensors', repo_id='alice/python')\n")
        .arg(&file);
    let result = tokio::task::spawn_blocking(move || timed(&command))
        .await
        .unwrap();
    assert!(hub.repo("alice/python").unwrap().commits.len() == 2);
    result
}

async fn run() {
    let mib: u64 = std::env::var("OB_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let mbps = |d: Duration| mib as f64 * 1.048_576 / d.as_secs_f64();
    let (py, py_rss) = python(mib).await;
    let (ob, ob_rss) = ours(mib).await;
    println!(
        "upload {mib} MiB: huggingface_hub {:.2} s ({:.0} MB/s, peak RSS {} MiB), overbrainer push {:.2} s ({:.0} MB/s, peak RSS {} MiB), ratio {:.2} (target >= 0.9)",
        py.as_secs_f64(),
        mbps(py),
        py_rss / 1024,
        ob.as_secs_f64(),
        mbps(ob),
        ob_rss / 1024,
        py.as_secs_f64() / ob.as_secs_f64()
    );
    let quarter = (mib / 4).max(1);
    let (_, small_rss) = ours(quarter).await;
    println!(
        "overbrainer push peak RSS: {} MiB for {quarter} MiB, {} MiB for {mib} MiB (flat in the file size)",
        small_rss / 1024,
        ob_rss / 1024
    );
}
