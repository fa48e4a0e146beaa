//! `train` on a `runpod` target through the real binary (issue 12, case 1): the demo
//! trains with real Axolotl on the CPU inside a real pod of the stand-in (a Podman
//! container with the Axolotl venv, its Python and the tiny model mounted read-only);
//! the first GPU type answers the capacity 400 and the second is used; the host key is
//! pinned; the results come back verified; the pod is deleted and confirmed gone and
//! the host-key secret deleted; `pod.json` and `runs ls` show the rate and the spend.
//! The refusals before any pod: no key, a key that cannot manage secrets, `"auto"` with
//! nothing in stock.
//!
//! The binary reaches the stand-in on 127.0.0.1 (a forwarder the test makes: the
//! configuration accepts plain `http` on loopback only), the pods' watchdog on the
//! pods' network gateway, where the stand-in listens
//! (`OVERBRAINER_TEST_RUNPOD_POD_BASE_URL`).

use std::path::PathBuf;
use std::time::Duration;

use crate::engines::container_env;
use crate::runpod_standin::Standin;
use crate::training::{Setup, Training, training_env};

/// A secret the stand-in's pods print in their log (POD-59): it must reach no file and no
/// output.
const LOG_CANARY: &str = "hf_CANARYx7Qm2Wz9Kt4Vb8Lr3Np6Hd1Gs";

/// The lines every stand-in pod's log starts with: one of each source, one a secret.
fn canned_log(project: &PodProject) {
    project.standin.state().canned_log = vec![
        ("system".into(), "Pod is starting".into()),
        ("container".into(), format!("export HF_TOKEN={LOG_CANARY}")),
        (
            "container".into(),
            "\u{1b}]0;title\u{7}bootstrap: ready".into(),
        ),
    ];
}

pub(crate) const KEY: &str = "rpa_CANARY3Zr8Kw5Tq1Vm7Hx4Lb9Nd2Jf6Ps0Gc";

/// One rule second lasts 50 ms: `max_hours = 10` is 30 minutes, readiness 45 s.
const SECOND_MS: &str = "50";

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

/// The demo project with a `pod` target on the stand-in, and the binary's environment.
pub(crate) struct PodProject {
    pub(crate) training: Training,
    pub(crate) standin: Standin,
    _env: tempfile::TempDir,
}

pub(crate) async fn pod_project(gpu_types: &str) -> PodProject {
    pod_project_of(gpu_types, 2).await
}

/// [`pod_project`] without the merge: for the tests whose assertions are about the run's
/// lifecycle, not the merged model (the demo test merges on a pod; issue 31).
pub(crate) async fn unmerged_pod_project(gpu_types: &str) -> PodProject {
    let project = pod_project(gpu_types).await;
    let config = project.training.project.read("overbrainer.toml");
    assert!(config.contains("\nmerge = true\n"), "{config}");
    project.training.project.write(
        "overbrainer.toml",
        &config.replacen("\nmerge = true\n", "\nmerge = false\n", 1),
    );
    project
}

pub(crate) async fn pod_project_of(gpu_types: &str, max_steps: u32) -> PodProject {
    let env = training_env();
    let python = std::fs::read_to_string(env.venv.join("pyvenv.cfg"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("home = ").map(|h| PathBuf::from(h.trim())))
        .expect("home in pyvenv.cfg");
    let python = python.parent().unwrap().to_path_buf();
    let mounts = vec![env.venv.clone(), env.model.clone(), python];
    let env_dir = tempfile::tempdir().unwrap();
    let standin = Standin::with_pods_mounting(KEY, env_dir.path().to_path_buf(), mounts).await;
    let gateway = *standin.server.address();
    let local = forwarder(gateway).await;
    let mut training = Training::new(&Setup {
        max_steps,
        ..Setup::default()
    });
    let config = training.project.read("overbrainer.toml");
    training.project.write(
        "overbrainer.toml",
        &format!(
            "{config}\n[targets.pod]\nkind = \"runpod\"\ngpu_types = {gpu_types}\nmax_hours = 10\nimage = \"{image}\"\nvenv = \"{venv}\"\ncontainer_disk_gb = 20\n",
            image = container_env().get("POD_IMAGE"),
            venv = env.venv.display(),
        ),
    );
    for (name, value) in [
        ("OVERBRAINER_RUNPOD__API_KEY", KEY.to_owned()),
        ("OVERBRAINER_RUNPOD__BASE_URL", format!("http://{local}/v2")),
        ("OVERBRAINER_TEST_RUNPOD_POD_BASE_URL", standin.base()),
        ("OVERBRAINER_TEST_SECOND_MS", SECOND_MS.to_owned()),
    ] {
        training.extra_env.push((name.to_owned(), value));
    }
    PodProject {
        training,
        standin,
        _env: env_dir,
    }
}

/// Runs the binary off the runtime's threads (the stand-in answers on them).
pub(crate) async fn overbrainer(project: &Training, args: &[&str]) -> std::process::Output {
    let mut cmd = project.cmd();
    cmd.args(args);
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

pub(crate) fn text(output: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Every pod deleted within its bound and nothing left; the key and the host private
/// key in no request but their own.
pub(crate) fn assert_clean(project: &PodProject) {
    project.standin.assert_nothing_left();
    let state = project.standin.state();
    for pod in &state.pods {
        let deleted = pod.deleted.expect("every pod deleted");
        let lived = deleted.duration_since(pod.created).unwrap_or_default();
        assert!(
            lived < Duration::from_secs(30 * 60),
            "pod {} lived {lived:?}",
            pod.id
        );
    }
    for (method, path, body) in &state.requests {
        assert!(
            !body.contains(&KEY[4..24]) && !path.contains(&KEY[4..24]),
            "{method} {path}"
        );
    }
}

/// The fragments of every secret of the run: the key's and each host private key's
/// (base64, as its account secret holds it).
pub(crate) fn secret_fragments(project: &PodProject) -> Vec<String> {
    let mut fragments = vec![KEY[4..24].to_owned()];
    for secret in &project.standin.state().secrets {
        fragments.push(secret.value[40..80].to_owned());
    }
    fragments
}

/// No file the binary wrote holds the key or a host private key, and no request but
/// the secret's own create body carries a host private key.
pub(crate) fn assert_key_in_no_file(project: &PodProject) {
    let fragments = secret_fragments(project);
    assert!(fragments.len() > 1, "no host-key secret was made");
    for entry in walk(project.training.project.path()) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        for fragment in &fragments {
            assert!(!text.contains(fragment.as_str()), "{}", entry.display());
        }
    }
    for (method, path, body) in &project.standin.state().requests {
        if fragments[1..].iter().any(|f| body.contains(f.as_str())) {
            assert_eq!(
                (method.as_str(), path.as_str()),
                ("POST", "/v2/account/secrets")
            );
        }
    }
}

/// Runs `cmd` while sampling the command line of every process of this machine (the
/// pods' processes are this kernel's too) for the key and the host private keys; the
/// output and every command line that held one.
fn with_argv_sampler(
    project: &PodProject,
    mut cmd: assert_cmd::Command,
) -> (std::process::Output, Vec<String>) {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut found = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let fragments = secret_fragments(project);
                for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                    let Ok(argv) = std::fs::read(entry.path().join("cmdline")) else {
                        continue;
                    };
                    let argv = String::from_utf8_lossy(&argv).replace('\0', " ");
                    if fragments.iter().any(|f| argv.contains(f.as_str())) {
                        found.push(argv);
                    }
                }
                // Pacing of the sampler, not a synchronization.
                std::thread::sleep(Duration::from_millis(20));
            }
            found
        });
        let output = cmd.output().unwrap();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (output, sampler.join().unwrap())
    })
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else if path.is_file() {
            files.push(path);
        }
    }
    files
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_runs_the_demo_on_the_next_gpu_type_verifies_it_and_confirms_the_pod_gone() {
    let project = pod_project(r#"["A", "B"]"#).await;
    project.standin.state().faults.capacity.insert("A".into());
    let mut cmd = project.training.cmd();
    cmd.args(["train", "--target", "pod"]);
    let (output, argvs) = tokio::task::block_in_place(|| with_argv_sampler(&project, cmd));
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(argvs.is_empty(), "secrets in argv: {argvs:?}");
    assert!(all.contains("GPU type A refused"), "{all}");
    assert!(all.contains("is ready (pinned host key)"), "{all}");
    assert!(all.contains("is gone"), "{all}");
    let ids = project.training.run_ids();
    assert_eq!(ids.len(), 1, "{all}");
    let record = project.training.record(&ids[0]);
    assert_eq!(record["state"], "succeeded", "{record}");
    assert_eq!(record["retrieved"], true, "{record}");
    let run_dir = project.training.runs().join(&ids[0]);
    crate::training::assert_file(&run_dir.join("output/adapter_model.safetensors"));
    crate::training::assert_file(&run_dir.join("output/merged/config.json"));
    // POD-56: the pod's bootstrap log was copied at the end, mode 600.
    let boot = run_dir.join(".pod/bootstrap.log");
    let boot_text = std::fs::read_to_string(&boot).expect("the bootstrap log copied");
    assert!(!boot_text.is_empty());
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&boot).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let pod: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("pod.json")).unwrap()).unwrap();
    assert_eq!(pod["gpu_type"], "B", "{pod}");
    assert_eq!(pod["state"], "deleted", "{pod}");
    assert_eq!(pod["retrieved"], true, "{pod}");
    assert!(pod["rate_usd_per_hour"].as_f64().is_some(), "{pod}");
    assert!(pod["deleted"]["cost_usd"].as_f64().is_some(), "{pod}");
    let attempts: Vec<&str> = pod["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["gpu_type"].as_str().unwrap())
        .collect();
    assert_eq!(attempts, ["A", "B"], "{pod}");
    let ls = overbrainer(&project.training, &["runs", "ls"]).await;
    let ls_text = String::from_utf8_lossy(&ls.stdout);
    assert!(
        ls_text.contains("deleted by client, spent USD"),
        "{ls_text}"
    );
    // The secret's create body is the only request holding the host key; none is left.
    assert_clean(&project);
    assert!(
        project
            .standin
            .state()
            .secrets
            .iter()
            .all(|s| s.deleted.is_some())
    );
    assert_key_in_no_file(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_refuses_before_any_pod_without_key_without_secrets_access_or_with_auto() {
    let project = pod_project(r#"["A"]"#).await;
    // No key: refused naming the variable.
    let mut cmd = project.training.cmd();
    cmd.args(["train", "--target", "pod"])
        .env_remove("OVERBRAINER_RUNPOD__API_KEY");
    let output = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(all.contains("OVERBRAINER_RUNPOD__API_KEY"), "{all}");
    // A key that cannot manage secrets (POD-21).
    project.standin.state().faults.secrets_forbidden = true;
    let output = overbrainer(&project.training, &["train", "--target", "pod"]).await;
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(all.contains("cannot manage account secrets"), "{all}");
    assert!(!all.contains(&KEY[4..24]), "{all}");
    project.standin.state().faults.secrets_forbidden = false;
    // `"auto"` with nothing in the catalog: refused naming the request (issue 13).
    let config = project.training.project.read("overbrainer.toml");
    project.training.project.write(
        "overbrainer.toml",
        &config.replace(r#"gpu_types = ["A"]"#, r#"gpu_types = "auto""#),
    );
    let output = overbrainer(&project.training, &["train", "--target", "pod"]).await;
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(
        all.contains(
            "target `pod`: no Secure Cloud GPU type in stock matches `gpu_types = \"auto\"`"
        ),
        "{all}"
    );
    // Nothing was made: no pod, no run directory.
    assert!(project.standin.state().pods.is_empty());
    assert!(
        project.training.run_ids().is_empty(),
        "{:?}",
        project.training.run_ids()
    );
    assert_clean(&project);
}

/// The pod's state in `pod.json` of the only run, once there is one.
/// POD-54, POD-59, POD-60: the copy of the kept pod's log, and `runs logs --pod`.
async fn pod_logs_while_the_pod_exists(project: &PodProject, id: &str, pod_id: &str) {
    let copy = std::fs::read_to_string(
        project
            .training
            .runs()
            .join(id)
            .join(overbrainer::runpod::logs::copy::LOG_FILE),
    )
    .expect("the pod's log copied while followed");
    assert!(copy.contains("Pod is starting"), "{copy}");
    assert!(copy.contains("HF_TOKEN=***"), "{copy}");
    assert!(!copy.contains(&LOG_CANARY[8..24]), "{copy}");
    project.standin.state().log(
        pod_id,
        "2100-01-01T00:00:00Z",
        "container",
        &format!("a live line, token {LOG_CANARY}"),
    );
    let all = overbrainer(&project.training, &["runs", "logs", id, "--pod"]).await;
    let out = text(&all);
    assert!(all.status.success(), "{out}");
    assert_eq!(out.matches("Pod is starting").count(), 1, "{out}");
    assert_eq!(out.matches("a live line, token ***").count(), 1, "{out}");
    assert!(
        out.contains("bootstrap: ready") && !out.contains('\u{1b}'),
        "{out}"
    );
    assert!(!out.contains(&LOG_CANARY[8..24]), "{out}");
    // It only reads: the copy is the following process's.
    let copy_now = std::fs::read_to_string(
        project
            .training
            .runs()
            .join(id)
            .join(overbrainer::runpod::logs::copy::LOG_FILE),
    )
    .unwrap();
    assert_eq!(copy_now, copy);
    let one = overbrainer(
        &project.training,
        &[
            "runs",
            "logs",
            id,
            "--pod",
            "--source",
            "container",
            "--tail",
            "1",
        ],
    )
    .await;
    let out = text(&one);
    assert!(one.status.success(), "{out}");
    assert!(!out.contains("Pod is starting"), "{out}");
    assert!(!out.contains("HF_TOKEN"), "{out}");
    assert!(out.contains("bootstrap: ready"), "{out}");
    assert!(out.contains("a live line"), "{out}");
    let bad = overbrainer(
        &project.training,
        &["runs", "logs", id, "--pod", "--source", "disk"],
    )
    .await;
    assert!(!bad.status.success());
    assert!(text(&bad).contains("--source"), "{}", text(&bad));
    tokio::task::block_in_place(|| follow_prints_new_lines(project, id, pod_id));
    let none = overbrainer(&project.training, &["runs", "logs", "r_nope", "--pod"]).await;
    assert!(!none.status.success());
    assert!(text(&none).contains("r_nope"), "{}", text(&none));
}

/// `runs logs --pod --follow` prints a line Runpod has later, once, until Ctrl-C.
fn follow_prints_new_lines(project: &PodProject, id: &str, pod_id: &str) {
    use std::io::BufRead as _;
    let mut child = project
        .training
        .spawn(&["runs", "logs", id, "--pod", "--follow"]);
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut wait_for = |want: &str| {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(want);
                    seen.push(line);
                    if found {
                        return;
                    }
                }
                Err(error) => panic!("no `{want}` within 30 s ({error}): {seen:?}"),
            }
        }
    };
    wait_for("a live line");
    project
        .standin
        .state()
        .log(pod_id, "2100-01-01T00:00:01Z", "system", "a followed line");
    wait_for("a followed line");
    crate::util::signal(child.id(), "INT");
    let output = crate::training::finish(child);
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(
        seen.iter().filter(|l| l.contains("a live line")).count(),
        1,
        "{seen:?}"
    );
}

pub(crate) fn pod_state(project: &PodProject) -> Option<serde_json::Value> {
    let id = project.training.run_ids().into_iter().next()?;
    let text = std::fs::read_to_string(project.training.runs().join(&id).join("pod.json")).ok()?;
    serde_json::from_str(&text).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_ctrl_c_before_the_job_exists_deletes_the_pod_and_fails_the_run() {
    let project = pod_project(r#"["A"]"#).await;
    // The pod shows RUNNING for a while before its SSH endpoint exists: Ctrl-C then.
    project.standin.state().faults.ssh_after_polls = 1000;
    let child = tokio::task::block_in_place(|| {
        let child = project.training.spawn(&["train", "--target", "pod"]);
        crate::util::poll(
            crate::training::DEADLINE,
            "a created pod",
            || match pod_state(&project) {
                Some(pod) if pod["pod_id"].is_string() => Ok(()),
                other => Err(other),
            },
        );
        crate::util::signal(child.id(), "INT");
        child
    });
    let output = tokio::task::block_in_place(|| crate::training::finish(child));
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    let ids = project.training.run_ids();
    let record = project.training.record(&ids[0]);
    assert_eq!(record["state"], "failed", "{record}");
    assert!(
        record["message"]
            .as_str()
            .unwrap_or_default()
            .contains("interrupted"),
        "{record}"
    );
    let pod = pod_state(&project).unwrap();
    assert_eq!(pod["state"], "deleted", "{pod}");
    assert!(pod["job_started_at"].is_null(), "{pod}");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_ctrl_c_after_the_job_exists_detaches_and_train_attach_collects_and_deletes_the_pod()
 {
    let project = unmerged_pod_project(r#"["A"]"#).await;
    canned_log(&project);
    let id = tokio::task::block_in_place(|| {
        let mut child = project.training.spawn(&["train", "--target", "pod"]);
        let id = project.training.wait_running(&mut child);
        crate::util::signal(child.id(), "INT");
        let output = crate::training::finish(child);
        // A follower stopped by Ctrl-C exits as interrupted.
        assert_eq!(output.status.code(), Some(130), "{}", text(&output));
        id
    });
    // Following stopped; the pod runs on under its watchdog.
    let record = project.training.record(&id);
    assert_eq!(record["state"], "running", "{record}");
    assert_eq!(
        project
            .standin
            .state()
            .pods
            .iter()
            .filter(|p| p.deleted.is_none())
            .count(),
        1
    );
    // The log copied until the detach; a line written meanwhile comes with the attach,
    // which goes on from the cursor: no line twice (POD-55).
    let copy_path = project
        .training
        .runs()
        .join(&id)
        .join(overbrainer::runpod::logs::copy::LOG_FILE);
    let copy = std::fs::read_to_string(&copy_path).expect("the copy made while followed");
    assert_eq!(copy.matches("Pod is starting").count(), 1, "{copy}");
    let pod_id = pod_state(&project).unwrap()["pod_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reads_before = project.standin.state().log_reads.len();
    project.standin.state().log(
        &pod_id,
        "2100-01-01T00:00:00Z",
        "container",
        "written while nobody followed",
    );
    let output = overbrainer(&project.training, &["train", "attach", &id]).await;
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    crate::training::assert_trained_run(&project.training, &id);
    let copy = std::fs::read_to_string(&copy_path).unwrap();
    assert_eq!(copy.matches("Pod is starting").count(), 1, "{copy}");
    assert_eq!(
        copy.matches("written while nobody followed").count(),
        1,
        "{copy}"
    );
    assert!(!copy.contains(&LOG_CANARY[8..24]), "{copy}");
    let reads = project.standin.state().log_reads.clone();
    assert!(
        reads[reads_before..].iter().all(|(_, last)| last.is_some()),
        "{reads:?}"
    );
    let pod = pod_state(&project).unwrap();
    assert_eq!(pod["state"], "deleted", "{pod}");
    assert_eq!(pod["retrieved"], true, "{pod}");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_keep_pod_prints_a_working_ssh_command_and_pod_ls_and_pod_rm_find_and_remove_it()
 {
    let project = unmerged_pod_project(r#"["A"]"#).await;
    canned_log(&project);
    let output = overbrainer(
        &project.training,
        &["train", "--target", "pod", "--keep-pod"],
    )
    .await;
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(!all.contains(&LOG_CANARY[8..24]), "{all}");
    let id = project.training.run_ids().remove(0);
    crate::training::assert_trained_run(&project.training, &id);
    let pod = pod_state(&project).unwrap();
    assert_eq!(pod["state"], "kept", "{pod}");
    assert_eq!(pod["keep_pod"], true, "{pod}");
    let pod_id = pod["pod_id"].as_str().unwrap().to_owned();
    // The printed command reaches the pod with the run's pinned host key.
    let command = all
        .lines()
        .find_map(|l| l.split_once("reach it with: ").map(|(_, c)| c.to_owned()))
        .unwrap_or_else(|| panic!("no ssh command in {all}"));
    assert!(command.starts_with("ssh -F "), "{command}");
    let reached = tokio::task::block_in_place(|| {
        crate::runpod_containers::tool(std::process::Command::new("bash").arg("-c").arg(format!(
            "{command} -o BatchMode=yes cat /proc/1/cmdline >/dev/null && echo reached"
        )))
    });
    assert!(
        String::from_utf8_lossy(&reached.stdout).contains("reached"),
        "{}",
        String::from_utf8_lossy(&reached.stderr)
    );
    // No rule removed it: it is still listed, and `pod ls` shows it with its run.
    assert_eq!(
        project
            .standin
            .state()
            .pods
            .iter()
            .filter(|p| p.deleted.is_none())
            .count(),
        1
    );
    let ls = overbrainer(&project.training, &["pod", "ls"]).await;
    let ls_text = text(&ls);
    assert!(ls.status.success(), "{ls_text}");
    assert!(
        ls_text.contains(&pod_id) && ls_text.contains(&id),
        "{ls_text}"
    );
    pod_logs_while_the_pod_exists(&project, &id, &pod_id).await;
    // `pod rm` deletes it, confirms it gone, deletes the secret, records the deletion.
    let rm = overbrainer(&project.training, &["pod", "rm", &id]).await;
    let rm_text = text(&rm);
    assert!(rm.status.success(), "{rm_text}");
    assert!(
        rm_text.contains(&format!("removed pod {pod_id}")),
        "{rm_text}"
    );
    let pod = pod_state(&project).unwrap();
    assert_eq!(pod["state"], "deleted", "{pod}");
    assert!(pod["deleted"]["cost_usd"].as_f64().is_some(), "{pod}");
    // POD-57: `pod rm` read the rest of the stream into the copy before deleting.
    let copy = std::fs::read_to_string(
        project
            .training
            .runs()
            .join(&id)
            .join(overbrainer::runpod::logs::copy::LOG_FILE),
    )
    .unwrap();
    assert_eq!(copy.matches("a live line, token ***").count(), 1, "{copy}");
    assert!(!copy.contains(&LOG_CANARY[8..24]), "{copy}");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_stop_collects_a_snapshot_checked_on_the_pod_and_deletes_the_pod() {
    // Steps enough to be still training when the stop comes.
    let mut project = pod_project_of(r#"["A"]"#, 6000).await;
    // A rule second of 200 ms: the snapshot has its 30 minutes (6 min here) to come
    // even on a loaded machine; this test waits for no rule time.
    for (key, value) in &mut project.training.extra_env {
        if key == "OVERBRAINER_TEST_SECOND_MS" {
            *value = "200".to_owned();
        }
    }
    let (id, output) = tokio::task::block_in_place(|| {
        let mut follower = project.training.spawn(&["train", "--target", "pod"]);
        let id = project.training.wait_running(&mut follower);
        // Stopped once it trains: a stop before the first step has only the snapshot
        // deadline (30 minutes, 90 s on this test's scale) for Axolotl's start, which a
        // loaded machine can pass; the run is then cancelled, as it should be.
        crate::util::poll(crate::training::DEADLINE, "a first step", || {
            if let Ok(Some(status)) = follower.try_wait() {
                panic!("train ended first ({status})");
            }
            let record = project.training.record(&id);
            if record["last_step"].as_u64().is_some_and(|s| s >= 1) {
                Ok(())
            } else {
                Err(record)
            }
        });
        // The follower holds the project: `train stop` only places the request (RUN-33).
        let stop = project
            .training
            .cmd()
            .args(["train", "stop", &id])
            .output()
            .unwrap();
        assert!(stop.status.success(), "{}", text(&stop));
        (id, crate::training::finish(follower))
    });
    let all = text(&output);
    let record = project.training.record(&id);
    assert_eq!(record["state"], "stopped", "{record}\n{all}");
    let checkpoint = record["snapshot"]["checkpoint"]
        .as_str()
        .unwrap()
        .to_owned();
    let run = project.training.runs().join(&id);
    crate::training::assert_file(&run.join(format!("output/{checkpoint}/optimizer.pt")));
    // The checkpoint passed the check on the pod (the job's Python loaded it): only
    // then was the pod marked retrieved and deleted.
    let pod = pod_state(&project).unwrap();
    assert_eq!(pod["retrieved"], true, "{pod}\n{all}");
    assert_eq!(pod["state"], "deleted", "{pod}\n{all}");
    assert_clean(&project);
    // Resumable: the follower offers the resume. A resume starting at the step after a
    // retrieved checkpoint is proven once, by the Slurm deadline test (issue 31).
    assert!(all.contains(&format!("train --resume-from {id}")), "{all}");
}

/// A pod made straight on the stand-in, as another project's overbrainer made it:
/// named for `run`, its marker, its deadline `deadline` (UNIX seconds), kept or not.
pub(crate) async fn foreign_pod(
    project: &PodProject,
    run: &str,
    deadline: u64,
    kept: bool,
) -> String {
    use overbrainer::runpod::api::CreatePod;
    let body = CreatePod {
        image: container_env().get("POD_IMAGE").to_owned(),
        env: [
            ("OVERBRAINER_RUN_ID".to_owned(), run.to_owned()),
            ("OVERBRAINER_DEADLINE_AT".to_owned(), deadline.to_string()),
            (
                "OVERBRAINER_KEEP_POD".to_owned(),
                u8::from(kept).to_string(),
            ),
        ]
        .into(),
        args: Some("sleep infinity".into()),
        ..crate::runpod_standin::bare_body(run)
    };
    let client = project.standin.client(Duration::from_secs(60));
    client.create_pod(&body).await.unwrap().id
}

/// Issue 34: a pod of another project past its first deadline may be held by a lease
/// this project cannot read, so `pod ls` leaves it to its owner, and reports it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_pod_ls_leaves_other_projects_pods_to_their_owner_and_reports_them() {
    let project = pod_project(r#"["A"]"#).await;
    let now = overbrainer::runpod::driver::now().as_secs();
    // One rule hour is 180 s at this scale; the grace is 20 rule minutes (60 s).
    let past = foreign_pod(&project, "other_20260101-000000", now - 600, false).await;
    let kept = foreign_pod(&project, "other_20260101-000001", now - 600, true).await;
    let within = foreign_pod(&project, "other_20260101-000002", now + 600, false).await;
    let ls = overbrainer(&project.training, &["pod", "ls"]).await;
    let all = text(&ls);
    assert!(ls.status.success(), "{all}");
    assert!(!all.contains("was past its bound"), "{all}");
    let live: Vec<String> = project
        .standin
        .state()
        .pods
        .iter()
        .filter(|p| p.deleted.is_none())
        .map(|p| p.id.clone())
        .collect();
    assert_eq!(live, [past.clone(), kept.clone(), within.clone()], "{all}");
    // Listed, marked as not this project's, each with the command that deletes it.
    assert!(all.contains("(not in this project)"), "{all}");
    let warning = all
        .lines()
        .find(|line| line.contains(&format!("pod {past} (")))
        .unwrap_or_else(|| panic!("no warning of {past}:\n{all}"));
    assert!(
        warning.ends_with(
            "of run `other_20260101-000000`, not in this project's runs/, is still listed; `overbrainer pod rm other_20260101-000000 --force` deletes it"
        ),
        "{all}"
    );
    let client = project.standin.client(Duration::from_secs(60));
    for pod in [past, kept, within] {
        client.delete_pod(&pod).await.unwrap();
    }
    assert_clean(&project);
}

/// Starts `train` on `project`'s pod target, whose pod never answers SSH, and kills it
/// with `SIGKILL` once the pod exists: the run is left `starting` with its pod. Returns
/// the run ID.
pub(crate) fn killed_while_its_pod_boots(project: &PodProject) -> String {
    project.standin.state().faults.ssh_after_polls = 1000;
    let id = tokio::task::block_in_place(|| {
        let child = project.training.spawn(&["train", "--target", "pod"]);
        crate::util::poll(
            crate::training::DEADLINE,
            "a created pod",
            || match pod_state(project) {
                Some(pod) if pod["pod_id"].is_string() => Ok(()),
                other => Err(other),
            },
        );
        crate::util::signal(child.id(), "KILL");
        let _ = crate::training::finish(child);
        project.training.run_ids().remove(0)
    });
    assert_eq!(project.training.record(&id)["state"], "starting");
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_kill_9_during_readiness_leaves_the_pod_to_the_next_command_which_deletes_it() {
    let project = pod_project(r#"["A"]"#).await;
    let id = killed_while_its_pod_boots(&project);
    let output = overbrainer(&project.training, &["train", "attach", &id]).await;
    let all = text(&output);
    let record = project.training.record(&id);
    assert_eq!(record["state"], "failed", "{record}\n{all}");
    assert!(
        record["message"]
            .as_str()
            .unwrap_or_default()
            .contains("ended before its job existed"),
        "{record}"
    );
    assert_eq!(pod_state(&project).unwrap()["state"], "deleted");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_kill_9_while_the_job_runs_and_train_attach_recovers_the_run_and_deletes_the_pod() {
    let project = unmerged_pod_project(r#"["A"]"#).await;
    canned_log(&project);
    let id = tokio::task::block_in_place(|| {
        let mut child = project.training.spawn(&["train", "--target", "pod"]);
        let id = project.training.wait_running(&mut child);
        crate::util::signal(child.id(), "KILL");
        let _ = crate::training::finish(child);
        id
    });
    // The log copied until the detach; a line written meanwhile comes with the attach,
    // which goes on from the cursor: no line twice (POD-55).
    let copy_path = project
        .training
        .runs()
        .join(&id)
        .join(overbrainer::runpod::logs::copy::LOG_FILE);
    let copy = std::fs::read_to_string(&copy_path).expect("the copy made while followed");
    assert_eq!(copy.matches("Pod is starting").count(), 1, "{copy}");
    let pod_id = pod_state(&project).unwrap()["pod_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reads_before = project.standin.state().log_reads.len();
    project.standin.state().log(
        &pod_id,
        "2100-01-01T00:00:00Z",
        "container",
        "written while nobody followed",
    );
    let output = overbrainer(&project.training, &["train", "attach", &id]).await;
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    crate::training::assert_trained_run(&project.training, &id);
    let copy = std::fs::read_to_string(&copy_path).unwrap();
    assert_eq!(copy.matches("Pod is starting").count(), 1, "{copy}");
    assert_eq!(
        copy.matches("written while nobody followed").count(),
        1,
        "{copy}"
    );
    assert!(!copy.contains(&LOG_CANARY[8..24]), "{copy}");
    let reads = project.standin.state().log_reads.clone();
    assert!(
        reads[reads_before..].iter().all(|(_, last)| last.is_some()),
        "{reads:?}"
    );
    let pod = pod_state(&project).unwrap();
    assert_eq!(pod["state"], "deleted", "{pod}");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_refuses_bad_bounds_a_lone_volume_and_an_unknown_gpu_type_naming_the_key() {
    let project = pod_project(r#"["NOPE"]"#).await;
    let config = project.training.project.read("overbrainer.toml");
    let refused = async |toml: String, expected: &str| {
        project.training.project.write("overbrainer.toml", &toml);
        let output = overbrainer(&project.training, &["train", "--target", "pod"]).await;
        let all = text(&output);
        assert!(!output.status.success(), "{all}");
        assert!(all.contains(expected), "{expected}: {all}");
    };
    refused(
        config.replace("max_hours = 10", "max_hours = 0"),
        "targets.pod.max_hours",
    )
    .await;
    refused(
        config.replace("max_hours = 10", "max_hours = 721"),
        "targets.pod.max_hours",
    )
    .await;
    refused(
        format!("{config}network_volume_id = \"vol1\"\n"),
        "targets.pod.network_volume_id",
    )
    .await;
    assert!(project.training.run_ids().is_empty());
    // Runpod's own answer: an ID it does not know is a rule violation, not capacity.
    project
        .standin
        .state()
        .faults
        .unknown_gpu
        .insert("NOPE".into());
    refused(config.clone(), "targets.pod.gpu_types").await;
    assert!(project.standin.state().pods.is_empty());
    let id = project.training.run_ids().remove(0);
    assert_eq!(project.training.record(&id)["state"], "failed");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_attach_of_a_run_whose_pod_is_gone_fails_it_as_lost_and_deletes_its_secret() {
    let project = pod_project(r#"["A"]"#).await;
    let id = tokio::task::block_in_place(|| {
        let mut child = project.training.spawn(&["train", "--target", "pod"]);
        let id = project.training.wait_running(&mut child);
        crate::util::signal(child.id(), "INT");
        let _ = crate::training::finish(child);
        id
    });
    // Its watchdog, or someone in the console, deletes the pod meanwhile.
    let pod = pod_state(&project).unwrap()["pod_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let client = project.standin.client(Duration::from_secs(60));
    client.delete_pod(&pod).await.unwrap();
    let output = overbrainer(&project.training, &["train", "attach", &id]).await;
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    let record = project.training.record(&id);
    assert_eq!(record["state"], "failed", "{record}");
    assert!(
        record["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("its pod {pod} is gone")),
        "{record}"
    );
    assert_eq!(pod_state(&project).unwrap()["state"], "deleted");
    assert_clean(&project);
}
