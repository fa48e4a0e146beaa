//! The real bootstrap on both kinds of image a pod may run (issue 34), through the
//! stand-in, whose pods do with `args` what v2 does (they replace the image's `CMD`
//! and run under its `ENTRYPOINT`): a runpod/pytorch-like image (an entrypoint ending
//! in `exec "$@"`, `CMD ["/start.sh"]`) and a plain one (no entrypoint). On both the
//! bootstrap becomes the pod's first process instead of `/start.sh`, `sshd` answers
//! with the run's pinned host key only, and `/etc/overbrainer/job.env` holds what the
//! image (and its entrypoint) set, never a secret of the pod, while a command over SSH
//! starts without it. A training job through the binary keeps that environment.

use std::time::Duration;

use overbrainer::exec::{Executor as _, SshExecutor};
use overbrainer::runpod::api::RunpodClient;
use overbrainer::runpod::body::{PodSpec, create_body};
use overbrainer::runpod::bootstrap::{BOOTSTRAP_FILE, JOB_ENV_FILE};
use overbrainer::runpod::driver::now;
use overbrainer::runpod::keys;
use overbrainer::runpod::lifecycle::Rules;
use secrecy::ExposeSecret as _;

use crate::engines::container_env;
use crate::runpod::target;
use crate::runpod_standin::{POD_KEY, Standin};
use crate::util::poll_async;

const KEY: &str = "rpa_CANARY5Jt2Wq8Zn4Xm7Kv1Rb9Ld3Hs6Pc0Fg";

/// Boots run `run`'s pod from `image` with the real bootstrap, reaches it with the
/// pinned host key; the pod's first process, its `job.env` and the host key secret's
/// value. The pod and its secret are deleted before this returns.
async fn boot(standin: &Standin, client: &RunpodClient, run: &str, image: &str) -> Booted {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys::create(dir.path(), run).await.unwrap();
    let secret = keys::create_host_secret(client, run, &keys).await.unwrap();
    let rules = Rules::new(&target(), false, overbrainer::env::TimeScale::REAL);
    let run_dir = format!("/root/runs/{run}");
    let (mut body, _) = create_body(&PodSpec {
        chosen: None,
        target: &target(),
        run_id: run,
        run_dir: &run_dir,
        api_base: &standin.base(),
        keys: &keys,
        rules: &rules,
        now: now(),
        volume_gb: None,
    })
    .unwrap();
    image.clone_into(&mut body.image);
    let pod = client.create_pod(&body).await.unwrap();
    let endpoint = pod.view().ssh.expect("ssh.direct");
    let destination = endpoint.destination(keys.config.clone());
    let ssh = poll_async(Duration::from_secs(90), "sshd with the pinned key", || {
        let destination = destination.clone();
        async move {
            SshExecutor::connect(destination, "/root/runs")
                .await
                .map_err(|e| e.to_string())
        }
    })
    .await;
    let job_env = ssh.read_from(JOB_ENV_FILE, 0, 1 << 16).await.unwrap();
    ssh.disconnect().await;
    // A command over SSH starts from sshd's environment, not the image's: what the
    // job's launch restores from `job.env`.
    let session = crate::runpod_containers::tool(
        std::process::Command::new("ssh")
            .arg("-F")
            .arg(&keys.config)
            .args(["-o", "BatchMode=yes", "-p", &endpoint.port.to_string()])
            .arg(format!("root@{}", endpoint.host))
            .arg("env"),
    );
    assert!(
        session.status.success(),
        "{}",
        String::from_utf8_lossy(&session.stderr)
    );
    let session = String::from_utf8_lossy(&session.stdout).into_owned();
    assert!(
        !session.contains("OB_IMAGE_CANARY") && session.contains("PATH="),
        "{session}"
    );
    let first = standin.exec(&pod.id, "tr '\\0' ' ' </proc/1/cmdline; echo; ps -eo args 2>/dev/null || cat /proc/[0-9]*/cmdline | tr '\\0' ' '");
    client.delete_pod(&pod.id).await.unwrap();
    client.delete_secret(&secret.id).await.unwrap();
    Booted {
        processes: String::from_utf8_lossy(&first.stdout).into_owned(),
        job_env: String::from_utf8_lossy(&job_env).into_owned(),
        host_secret: keys.host_secret.expose_secret().to_owned(),
    }
}

struct Booted {
    /// The pod's first process, then every process's arguments.
    processes: String,
    job_env: String,
    host_secret: String,
}

/// What every image's pod shows: the bootstrap first and `/start.sh` never run; the
/// image's environment in `job.env`, no secret.
fn assert_booted(booted: &Booted) {
    let first = booted.processes.lines().next().unwrap_or_default();
    assert_eq!(
        first.trim(),
        format!("bash {BOOTSTRAP_FILE}"),
        "{}",
        booted.processes
    );
    assert!(
        !booted.processes.contains("sleep infinity") && !booted.processes.contains("start.sh"),
        "{}",
        booted.processes
    );
    let env = &booted.job_env;
    let canary = container_env().get("POD_IMAGE_CANARY");
    for line in [
        format!("export OB_IMAGE_CANARY='{canary}'"),
        "export LD_LIBRARY_PATH='/usr/local/nvidia/lib64:/usr/local/cuda/lib64'".to_owned(),
        "export CUDA_VERSION='12.8.1'".to_owned(),
        "export PATH='/opt/image-tools/bin:".to_owned(),
    ] {
        assert!(env.contains(&line), "{line} not in:\n{env}");
    }
    for secret in [&POD_KEY[4..24], &KEY[4..24], &booted.host_secret[40..80]] {
        assert!(!env.contains(secret), "a secret in job.env:\n{env}");
    }
    assert!(!env.contains("OVERBRAINER_"), "{env}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_the_bootstrap_runs_under_a_runpod_style_entrypoint_and_on_a_plain_image() {
    let temp = tempfile::tempdir().unwrap();
    let standin = Standin::with_pods(KEY, temp.path().to_path_buf()).await;
    let client = standin.client(Duration::from_secs(60));
    let images = container_env();
    let entrypoint = format!(
        "export OB_ENTRYPOINT_CANARY='{}'",
        images.get("POD_ENTRYPOINT_CANARY")
    );
    // runpod/pytorch-like: `args` ran under the entrypoint, whose export the jobs keep.
    let styled = boot(
        &standin,
        &client,
        "r_20261204-233000-im01",
        images.get("POD_IMAGE"),
    )
    .await;
    assert_booted(&styled);
    assert!(styled.job_env.contains(&entrypoint), "{}", styled.job_env);
    // Plain: `args` is the command itself; no entrypoint exported anything.
    let plain = boot(
        &standin,
        &client,
        "r_20261204-233000-im02",
        images.get("POD_PLAIN_IMAGE"),
    )
    .await;
    assert_booted(&plain);
    assert!(
        !plain.job_env.contains("OB_ENTRYPOINT_CANARY"),
        "{}",
        plain.job_env
    );
    standin.assert_nothing_left();
}

/// The environment of the Axolotl process of run `id` on a pod, as this machine's
/// `/proc` shows it (the pods' processes are this kernel's): its argv names the venv's
/// `bin/axolotl`, its working directory is the run's directory on the pod.
fn trainer_environ(id: &str) -> Option<String> {
    let run_dir = format!("{}/{id}", overbrainer::runs::pod::POD_WORKDIR);
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let argv = std::fs::read(entry.path().join("cmdline")).ok()?;
            let trains = argv
                .split(|b| *b == 0)
                .any(|arg| arg.ends_with(b"bin/axolotl"));
            let here = std::fs::read_link(entry.path().join("cwd"))
                .is_ok_and(|cwd| cwd == std::path::Path::new(&run_dir));
            (trains && here)
                .then(|| std::fs::read(entry.path().join("environ")).ok())
                .flatten()
                .map(|env| String::from_utf8_lossy(&env).replace('\0', "\n"))
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_job_keeps_the_images_environment_and_gets_no_secret_of_the_pod() {
    use crate::runpod_train::{assert_clean, overbrainer, pod_project_of, text};
    // Steps enough to be still training when its environment is read.
    let project = pod_project_of(r#"["A"]"#, 6000).await;
    let (id, environ) = tokio::task::block_in_place(|| {
        let mut child = project.training.spawn(&["train", "--target", "pod"]);
        let id = project.training.wait_running(&mut child);
        let environ =
            crate::util::poll(crate::training::DEADLINE, "the trainer on the pod", || {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!("train ended first ({status})");
                }
                trainer_environ(&id).ok_or("not yet")
            });
        // Detached: the pod trains on under its watchdog until the cancel below.
        crate::util::signal(child.id(), "INT");
        let _ = crate::training::finish(child);
        (id, environ)
    });
    let images = container_env();
    let venv = crate::training::training_env().venv.display().to_string();
    for line in [
        format!("OB_IMAGE_CANARY={}", images.get("POD_IMAGE_CANARY")),
        format!(
            "OB_ENTRYPOINT_CANARY={}",
            images.get("POD_ENTRYPOINT_CANARY")
        ),
        "LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/usr/local/cuda/lib64".to_owned(),
        "CUDA_VERSION=12.8.1".to_owned(),
        // The job's own prelude after the image's: the venv first, then the image's PATH.
        format!("PATH={venv}/bin:/opt/image-tools/bin:"),
        format!("HF_HOME={}/.hf-cache", overbrainer::runs::pod::POD_WORKDIR),
    ] {
        assert!(
            environ.lines().any(|l| l.starts_with(&line)),
            "{line} not in the trainer's environment:\n{environ}"
        );
    }
    let host_key = project
        .standin
        .state()
        .secrets
        .iter()
        .map(|s| s.value[40..80].to_owned())
        .next()
        .expect("the run's host-key secret");
    for secret in [&POD_KEY[4..24], &crate::runpod_train::KEY[4..24], &host_key] {
        assert!(
            !environ.contains(secret),
            "a secret of the pod in the job:\n{environ}"
        );
    }
    assert!(!environ.contains("OVERBRAINER_HOST_KEY"), "{environ}");
    let output = overbrainer(&project.training, &["train", "cancel", &id]).await;
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert_eq!(project.training.record(&id)["state"], "cancelled", "{all}");
    assert_clean(&project);
}
