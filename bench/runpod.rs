//! Speed of a `runpod` target (issue 12, "Speed"), against the tests' Runpod v2 stand-in
//! whose pods are real Podman containers (the Axolotl venv and the tiny model mounted):
//!
//! 1. Time from `overbrainer train` to the job's first training step, split into
//!    create (the create call, the pod's container started by the stand-in), readiness
//!    (polls until the SSH endpoint and a handshake with the pinned host key), upload and
//!    start (claim, upload, the job's spawn: until the wrapper's `job.start` on the pod),
//!    and first step (Axolotl's own start, the same by hand). Against the same steps
//!    done by hand: the create through `curl`, polls of `GET /v2/pods/{id}` once a second,
//!    `ssh` until it connects, `tar | ssh` of the run's start files, `ssh` starting
//!    `axolotl train` with `nohup`. The figure is overbrainer's time to the first step
//!    over the hand's, and the same without Axolotl's start (target: at most 1.2).
//! 2. The follow loop's cost: CPU time (user + system) of the `train` process, its
//!    waited-for children and every live process of the run's SSH access (the `ssh`
//!    master), over 60 s of following the training job (status, lease, log stream),
//!    as a share of one core (target: under 2%).
//!
//! The rules run on real time (no test time factor). Run with `cargo bench --bench
//! runpod`; needs Podman and the pod image (`scripts/container-env.sh`) and the Axolotl
//! venv (`scripts/training-env.sh`), as the tests do.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::disallowed_methods,
    reason = "a benchmark: failing loudly is the point, figures are approximate, and it runs the tools it compares against"
)]

#[allow(unused_imports)]
#[path = "../tests/integration/engines.rs"]
mod engines;
#[allow(dead_code, unused_imports)]
#[path = "../tests/integration/freezer.rs"]
mod freezer;
#[allow(dead_code, unused_imports)]
#[path = "../tests/integration/runpod_pods.rs"]
mod runpod_pods;
#[allow(dead_code, unused_imports)]
#[path = "../tests/integration/runpod_standin.rs"]
mod runpod_standin;
#[allow(dead_code, unused_imports)]
#[path = "../tests/integration/sshd.rs"]
mod sshd;
#[allow(dead_code, unused_imports)]
#[path = "../tests/integration/training.rs"]
mod training;
#[allow(unused_imports)]
#[path = "../tests/integration/util.rs"]
mod util;

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use runpod_standin::Standin;

const KEY: &str = "rpa_BENCH4Lq8Zr2Kw6Tx1Vm9Hb3Nd7Jf5Ps0Gc";
/// How long the follow loop is measured.
const FOLLOW: Duration = Duration::from_secs(60);
/// A pacing of polls, not a synchronization.
const PAUSE: Duration = Duration::from_millis(200);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

/// Forwards connections on 127.0.0.1 to `to` (the stand-in on the pods' gateway).
async fn forwarder(to: std::net::SocketAddr) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    at
}

fn seconds(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn unix(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The `ts` of the first training line of `metrics`, when there is one.
fn first_step(metrics: &str) -> Option<f64> {
    metrics
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|l| l["kind"] == "train")
        .and_then(|l| l["ts"].as_f64())
}

/// Waits for `check` to give a value, at most ten minutes.
fn wait<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + Duration::from_secs(600);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < until,
            "bench: no {what} within ten minutes"
        );
        std::thread::sleep(PAUSE);
    }
}

/// Clock ticks of user and system time of process `pid` (its own, and with
/// `children` its waited-for children's), or 0 once it is gone.
fn ticks(pid: &str, children: bool) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    let fields: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let own = fields.first().unwrap_or(&0) + fields.get(1).unwrap_or(&0);
    if children {
        own + fields.get(2).unwrap_or(&0) + fields.get(3).unwrap_or(&0)
    } else {
        own
    }
}

/// The follow loop's CPU now: `train` with its waited-for children, plus every live
/// process whose command line names the run's SSH directory (the `ssh` master and any
/// running client).
fn follow_ticks(pid: u32, ssh_dir: &str) -> u64 {
    let mut total = ticks(&pid.to_string(), true);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == pid.to_string() || !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(argv) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&argv).contains(ssh_dir) {
            total += ticks(&name, false);
        }
    }
    total
}

/// overbrainer's figures: (create, readiness, upload and start, first step) in seconds,
/// the follow loop's share of one core, and the run's directory.
async fn with_overbrainer(
    standin: &Standin,
    project: &training::Training,
) -> ([f64; 4], f64, PathBuf) {
    let mut child = project.spawn(&["train", "--target", "pod"]);
    let began = (Instant::now(), SystemTime::now());
    let marks: Arc<Mutex<Vec<(Instant, String)>>> = Arc::default();
    let stderr = child.stderr.take().unwrap();
    let reader = {
        let marks = Arc::clone(&marks);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                marks.lock().unwrap().push((Instant::now(), line));
            }
        })
    };
    let mark = |text: &str| {
        let text = text.to_owned();
        let marks = Arc::clone(&marks);
        tokio::task::block_in_place(move || {
            wait(&text.clone(), || {
                marks
                    .lock()
                    .unwrap()
                    .iter()
                    .find(|(_, l)| l.contains(&text))
                    .map(|(at, _)| *at)
            })
        })
    };
    let creating = mark("creating a pod");
    let created = mark("created pod");
    let ready = mark("is ready (pinned host key)");
    let id = project.run_ids().remove(0);
    let dir = format!("{}/{id}", overbrainer::runs::pod::POD_WORKDIR);
    let pod_json = project.runs().join(&id).join("pod.json");
    let pod: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(pod_json).unwrap()).unwrap();
    let pod = pod["pod_id"].as_str().unwrap().to_owned();
    let on_pod = |script: String| {
        let out = standin.exec(&pod, &script);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let job_start = tokio::task::block_in_place(|| {
        wait("job.start on the pod", || {
            on_pod(format!("date -r '{dir}/job.start' +%s.%N 2>/dev/null"))
                .trim()
                .parse::<f64>()
                .ok()
        })
    });
    let step = tokio::task::block_in_place(|| {
        wait("a first step on the pod", || {
            first_step(&on_pod(format!("cat '{dir}/metrics.jsonl' 2>/dev/null")))
        })
    });
    let at = |t: Instant| seconds(t - began.0);
    let start_at = job_start - unix(began.1);
    let figures = [
        at(created) - at(creating),
        at(ready) - at(created),
        start_at - at(ready),
        step - job_start,
    ];
    // The follow loop, measured while the job trains.
    let ssh_dir = project
        .runs()
        .join(&id)
        .join("ssh")
        .to_string_lossy()
        .into_owned();
    let pid = child.id();
    let (cpu0, wall0) = (follow_ticks(pid, &ssh_dir), Instant::now());
    tokio::time::sleep(FOLLOW).await;
    let (cpu1, wall1) = (follow_ticks(pid, &ssh_dir), Instant::now());
    // /proc counts in clock ticks of 1/100 s (USER_HZ on Linux).
    let share = (cpu1.saturating_sub(cpu0)) as f64 / 100.0 / seconds(wall1 - wall0);
    let cancel = project
        .cmd()
        .args(["train", "cancel", &id])
        .output()
        .unwrap();
    assert!(
        cancel.status.success(),
        "{}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    let _ = tokio::task::block_in_place(|| child.wait());
    let _ = reader.join();
    (figures, share, project.runs().join(id))
}

fn run_tool(command: &mut Command) -> std::process::Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("bench: cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "bench: {command:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The same steps by hand: (create, readiness, upload and start, first step).
fn by_hand(api: &str, run: &Path, venv: &Path, work: &Path) -> [f64; 4] {
    let key = work.join("hand_key");
    run_tool(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&key),
    );
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let body = serde_json::json!({
        "name": "by-hand", "image": engines::container_env().get("POD_IMAGE"),
        "gpu": {"id": "A", "count": 1}, "cloud": "SECURE", "disk": 20,
        "env": {"OVERBRAINER_AUTHORIZED_KEY": public.trim()}, "ports": ["22/tcp"],
        // v2's `args` replace the image's CMD, split as shell words (issue 34).
        "args": r#"bash -c 'set -eu; mkdir -p /run/sshd /root/.ssh; printf "%s\n" "$OVERBRAINER_AUTHORIZED_KEY" > /root/.ssh/authorized_keys; exec /usr/sbin/sshd -D -e -o PasswordAuthentication=no'"#,
    });
    let auth = format!("Authorization: Bearer {KEY}");
    let curl = |args: &[&str]| {
        let out = run_tool(
            Command::new("curl")
                .args(["-sS", "-H", &auth, "-H", "Content-Type: application/json"])
                .args(args),
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default()
    };
    let began = (Instant::now(), SystemTime::now());
    let pod = curl(&[
        "-X",
        "POST",
        &format!("{api}/pods"),
        "-d",
        &body.to_string(),
    ]);
    let created = Instant::now();
    let id = pod["id"].as_str().unwrap().to_owned();
    let port = wait("the pod's SSH endpoint", || {
        let pod = curl(&[&format!("{api}/pods/{id}")]);
        let port = pod["ssh"]["direct"]["port"].as_u64();
        if port.is_none() {
            std::thread::sleep(Duration::from_secs(1));
        }
        port
    });
    let ssh = |remote: &str| {
        let mut command = Command::new("ssh");
        command
            .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"])
            .args([
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "LogLevel=ERROR",
                "-i",
            ])
            .arg(&key)
            .args(["-p", &port.to_string(), "root@127.0.0.1", remote]);
        command
    };
    wait("ssh to the pod", || {
        ssh("true")
            .stdin(Stdio::null())
            .status()
            .ok()
            .filter(std::process::ExitStatus::success)
    });
    let ready = Instant::now();
    let files = [
        "axolotl.yaml",
        "train.jsonl",
        "eval.jsonl",
        "overbrainer_metrics.py",
    ];
    run_tool(Command::new("bash").arg("-c").arg(format!(
        "tar -C '{}' -cf - {} | {}",
        run.display(),
        files.join(" "),
        shell_words(&ssh(
            "mkdir -p /workspace/hand && cd /workspace/hand && tar -xf -"
        ))
    )));
    run_tool(&mut ssh(&format!(
        "cd /workspace/hand || exit 1; PATH='{venv}/bin':$PATH PYTHONPATH=/workspace/hand HF_HOME=/workspace/hand/.hf PYTHONUNBUFFERED=1 AXOLOTL_DO_NOT_TRACK=1 HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_OFFLINE=1 CUDA_VISIBLE_DEVICES= nohup axolotl train axolotl.yaml >job.log 2>&1 </dev/null & echo started",
        venv = venv.display()
    )));
    let started = Instant::now();
    let step = wait("a first step by hand", || {
        let out = ssh("cat /workspace/hand/metrics.jsonl 2>/dev/null")
            .stdin(Stdio::null())
            .output()
            .ok()?;
        first_step(&String::from_utf8_lossy(&out.stdout))
    });
    let _ = curl(&["-X", "DELETE", &format!("{api}/pods/{id}")]);
    let at = |t: Instant| seconds(t - began.0);
    [
        at(created),
        at(ready) - at(created),
        at(started) - at(ready),
        step - unix(began.1) - at(started),
    ]
}

/// A command as one line of shell words.
fn shell_words(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| format!("'{}'", a.to_string_lossy().replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

async fn run() {
    let env = training::training_env();
    let python = std::fs::read_to_string(env.venv.join("pyvenv.cfg"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("home = ").map(|h| PathBuf::from(h.trim())))
        .expect("home in pyvenv.cfg");
    let mounts = vec![
        env.venv.clone(),
        env.model.clone(),
        python.parent().unwrap().to_path_buf(),
    ];
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(work.path().join("env")).unwrap();
    let standin = Standin::with_pods_mounting(KEY, work.path().join("env"), mounts).await;
    let local = forwarder(*standin.server.address()).await;
    // A job long enough to be followed for a minute.
    let mut project = training::Training::new(&training::Setup {
        max_steps: 100_000,
        ..training::Setup::default()
    });
    let config = project.project.read("overbrainer.toml");
    project.project.write(
        "overbrainer.toml",
        &format!(
            "{}\n[targets.pod]\nkind = \"runpod\"\ngpu_types = [\"A\"]\nmax_hours = 10\nimage = \"{image}\"\nvenv = \"{venv}\"\ncontainer_disk_gb = 20\n",
            config
                .replacen("name = \"tiny test\"", "name = \"pod bench\"", 1)
                .replacen("[training.axolotl_extra]\n", "[training.axolotl_extra]\nsave_total_limit = 1\n", 1),
            image = engines::container_env().get("POD_IMAGE"),
            venv = env.venv.display(),
        ),
    );
    for (name, value) in [
        ("OVERBRAINER_RUNPOD__API_KEY", KEY.to_owned()),
        ("OVERBRAINER_RUNPOD__BASE_URL", format!("http://{local}/v2")),
        ("OVERBRAINER_TEST_RUNPOD_POD_BASE_URL", standin.base()),
    ] {
        project.extra_env.push((name.to_owned(), value));
    }
    let (ours, share, run) = with_overbrainer(&standin, &project).await;
    println!(
        "overbrainer: {ours:.2?} s, follow loop {:.2}% of one core",
        share * 100.0
    );
    let hand =
        tokio::task::block_in_place(|| by_hand(&standin.base(), &run, &env.venv, work.path()));
    let names = [
        "create",
        "readiness",
        "upload and start",
        "first step (Axolotl)",
    ];
    for (i, name) in names.iter().enumerate() {
        println!(
            "{name:<22} overbrainer {:>7.2} s   by hand {:>7.2} s",
            ours[i], hand[i]
        );
    }
    let total = |f: &[f64; 4], n: usize| f[..n].iter().sum::<f64>();
    println!(
        "to the first step:     overbrainer {:>7.2} s   by hand {:>7.2} s   ratio {:.3}",
        total(&ours, 4),
        total(&hand, 4),
        total(&ours, 4) / total(&hand, 4)
    );
    println!(
        "without Axolotl:       overbrainer {:>7.2} s   by hand {:>7.2} s   ratio {:.3}",
        total(&ours, 3),
        total(&hand, 3),
        total(&ours, 3) / total(&hand, 3)
    );
    println!(
        "follow loop: {:.2}% of one core over {} s",
        share * 100.0,
        FOLLOW.as_secs()
    );
}
