//! The pod driver (`runpod::driver`) performs the lifecycle's effects against the
//! stand-in whose pods are real containers: the capacity 400 moves to the next GPU type,
//! `pod.json`'s record precedes every create call, the handshake accepts only the pinned
//! host key (through the executor's SSH client and the run's `ssh -F` file), the job runs
//! on the pod with its lease written, its results come back verified, and the pod and
//! the host-key secret are deleted and confirmed gone. A pod presenting another host key
//! is deleted before any command runs; a Ctrl-C before the job exists deletes the pod.

use std::path::PathBuf;
use std::time::Duration;

use overbrainer::env::TimeScale;
use overbrainer::exec::{
    Executor as _, JobCommand, JobId, JobStatus, PodEndpoint, SshExecutor, local_manifest,
};
use overbrainer::runpod::api::{RunpodClient, pod_name};
use overbrainer::runpod::body::{PodSpec, create_body};
use overbrainer::runpod::driver::{
    DEADLINE_VAR, Driven, Ending, JobNews, LEASE_FILE, PodHooks, PodJob, PodPlan, RETRIEVED_FILE,
    drive, now,
};
use overbrainer::runpod::keys;
use overbrainer::runpod::lifecycle::{
    AttemptOutcome, Event, Notice, Phase, PodFacts, PodFailure, PodState, Rules,
};
use overbrainer::runpod::record::{PodContext, PodRecord};
use secrecy::ExposeSecret as _;
use tokio_util::sync::CancellationToken;

use crate::runpod::target;
use crate::runpod_containers::{IMAGE_KEYS_BOOT, bash_args};
use crate::runpod_standin::Standin;
use crate::util::poll_async;

const KEY: &str = "rpa_CANARY7Wd3Kq9Zm2Tx6Vb4Nh8Lp1Rs5Jc0Fy";
const RESULT: &str = "RESULT-CANARY-5Gk8Qw2Zx7Mv3Tb9Hn4Lr6Pd1Js";

/// The test-only factor: one rule second lasts 50 ms (readiness's 15 minutes are 45 s,
/// enough for a container's sshd on a loaded machine; a rule minute is 3 s).
fn scale() -> TimeScale {
    TimeScale::with_second(Duration::from_millis(50))
}

/// One run's pod on the stand-in: its keys, its `ssh -F` file, its host-key secret.
struct Setup {
    standin: Standin,
    client: RunpodClient,
    plan: PodPlan,
    run: String,
    host_secret: String,
    _temp: tempfile::TempDir,
    dir: PathBuf,
}

/// With `bootstrap`, the pod runs the real bootstrap and watchdog; without, a pod that
/// starts `sshd` with the image's own host keys.
async fn setup(run: &str, bootstrap: bool) -> Setup {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().to_path_buf();
    std::fs::create_dir(dir.join("env")).unwrap();
    let standin = Standin::with_pods(KEY, dir.join("env")).await;
    let client = standin.client(Duration::from_secs(120));
    let run_dir = dir.join("run");
    std::fs::create_dir(&run_dir).unwrap();
    let keys = keys::create(&run_dir, run).await.unwrap();
    let secret = keys::create_host_secret(&client, run, &keys).await.unwrap();
    let host_secret = keys.host_secret.expose_secret().to_owned();
    let run_dir = format!("/root/runs/{run}");
    let rules = rules();
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
    if !bootstrap {
        body.args = Some(bash_args(IMAGE_KEYS_BOOT));
    }
    let plan = PodPlan {
        body,
        ssh_config: keys.config.clone(),
        workdir: "/root/runs".into(),
        run_dir,
        host_key_secret: Some(secret.id),
        job_poll: scale().scale(Duration::from_secs(5)),
        time_scale: scale(),
        auto: None,
        log_dir: None,
    };
    Setup {
        standin,
        client,
        plan,
        run: run.into(),
        host_secret,
        _temp: temp,
        dir,
    }
}

/// A real job on the pod: metric lines, then a result file; retrieved and checked
/// against the pod's own SHA-256 manifest.
struct ScriptJob {
    run: String,
    run_dir: String,
    local: PathBuf,
    job: Option<JobId>,
    metrics_seen: u64,
    started: bool,
}

impl ScriptJob {
    fn new(setup: &Setup) -> Self {
        Self {
            run: setup.run.clone(),
            run_dir: setup.plan.run_dir.clone(),
            local: setup.dir.join("retrieved"),
            job: None,
            metrics_seen: 0,
            started: false,
        }
    }
}

impl PodJob for ScriptJob {
    async fn start(&mut self, pod: &SshExecutor) -> Result<(), String> {
        self.started = true;
        if !pod
            .claim(&self.run_dir, &self.run)
            .await
            .map_err(|e| e.to_string())?
        {
            return Err("the run directory belongs to another run".into());
        }
        let script = format!(
            "set -e; mkdir -p output; for i in 1 2 3; do printf '{{\"step\":%d}}\\n' \"$i\" \
             >> metrics.jsonl; sleep 1; done; printf '%s\\n' {RESULT} > output/result.txt"
        );
        let job = pod
            .spawn(&JobCommand {
                dir: self.run_dir.clone(),
                script,
                secrets: Vec::new(),
                container: None,
            })
            .await
            .map_err(|e| e.to_string())?;
        self.job = Some(job);
        Ok(())
    }

    async fn watch(&mut self, pod: &SshExecutor) -> Result<JobNews, String> {
        let job = self.job.as_ref().ok_or("no job")?;
        let status = pod.status(job).await.map_err(|e| e.to_string())?;
        let path = format!("{}/metrics.jsonl", self.run_dir);
        let new = pod
            .read_from(&path, self.metrics_seen, 4096)
            .await
            .map_err(|e| e.to_string())?;
        self.metrics_seen += new.len() as u64;
        Ok(match status {
            JobStatus::Running if new.is_empty() => JobNews::Quiet,
            JobStatus::Running => JobNews::Progress,
            _ => JobNews::Ended,
        })
    }

    async fn retrieve(&mut self, pod: &SshExecutor) -> Result<(), String> {
        // `.pod/` comes back for its logs, but only the results are verified: the
        // watchdog goes on appending to its log while the download runs.
        let entries = ["output".to_owned(), ".pod".to_owned()];
        pod.download(&self.run_dir, &self.local, &entries, &[])
            .await
            .map_err(|e| e.to_string())?;
        let entries = ["output".to_owned()];
        let remote = pod
            .manifest(&self.run_dir, &entries, &[])
            .await
            .map_err(|e| e.to_string())?;
        let local = local_manifest(&self.local, &entries, &[]).map_err(|e| e.to_string())?;
        if remote.is_empty() || remote != local {
            return Err(format!("not verified: pod {remote:?}, here {local:?}"));
        }
        Ok(())
    }
}

/// Collects notices and every `pod.json` record; cancels at [`Notice::Ready`] when
/// asked to (a Ctrl-C before the job exists).
#[derive(Default)]
struct Hooks {
    notices: Vec<Notice>,
    records: Vec<PodFacts>,
    cancel_at_ready: Option<CancellationToken>,
    /// Cancels once the job runs (a Ctrl-C after the job exists).
    cancel_when_running: Option<CancellationToken>,
    /// Where `pod.json` is written, when it is.
    run_dir: Option<(PathBuf, PodContext)>,
}

impl PodHooks for Hooks {
    fn notice(&mut self, notice: &Notice) {
        if matches!(notice, Notice::Ready { .. }) {
            if let Some(cancel) = &self.cancel_at_ready {
                cancel.cancel();
            }
        }
        self.notices.push(notice.clone());
    }

    fn record(&mut self, state: &PodState) -> Result<(), String> {
        if state.phase == Phase::Running {
            if let Some(cancel) = &self.cancel_when_running {
                cancel.cancel();
            }
        }
        self.records.push(state.facts.clone());
        match &self.run_dir {
            Some((dir, context)) => PodRecord::new(context, state)
                .save(dir)
                .map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}

/// The end of every test: every pod deleted within its bound, nothing left, the key in
/// no request, the host key only in its secret's create body.
fn assert_clean(setup: &Setup, rules: &Rules) {
    setup.standin.assert_nothing_left();
    let state = setup.standin.state();
    for pod in &state.pods {
        let deleted = pod.deleted.expect("every pod deleted");
        let lived = deleted.duration_since(pod.created).unwrap_or_default();
        assert!(lived < rules.deadline, "pod {} lived {lived:?}", pod.id);
    }
    for (method, path, body) in &state.requests {
        assert!(
            !body.contains(&KEY[4..24]) && !path.contains(&KEY[4..24]),
            "{method} {path}"
        );
        if body.contains(&setup.host_secret[40..80]) {
            assert_eq!(path, "/v2/account/secrets", "{method}");
        }
    }
}

/// The pod rules of these tests.
fn rules() -> Rules {
    Rules::new(&target(), false, scale())
}

/// Drives a pod trying `types` from its beginning with the setup's client and plan, and
/// the script job; what came of it, and the job.
async fn run_pod(
    setup: &Setup,
    types: &[&str],
    hooks: &mut Hooks,
    cancel: &CancellationToken,
) -> (Driven, ScriptJob) {
    let state = PodState::new(rules(), types.iter().map(|t| (*t).to_owned()).collect());
    let mut job = ScriptJob::new(setup);
    let began = Event::Began { at: now() };
    let driven = drive(
        &setup.client,
        &setup.plan,
        state,
        began,
        &mut job,
        hooks,
        cancel,
    )
    .await
    .unwrap();
    (driven, job)
}

fn gone(notices: &[Notice]) -> bool {
    notices.iter().any(|n| matches!(n, Notice::Gone { .. }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_driver_runs_a_job_on_the_next_gpu_type_retrieves_it_and_confirms_the_pod_gone() {
    let run = "r_20261201-140000-dr01";
    let setup = setup(run, true).await;
    setup.standin.state().faults.capacity.insert("A".into());
    let rules = rules();
    let types: &[&str] = &["A", "B"];
    let local_run = setup.dir.join("run");
    let context = PodContext {
        run_id: run.into(),
        pod_name: pod_name(run),
        ..PodContext::default()
    };
    let mut hooks = Hooks {
        run_dir: Some((local_run.clone(), context)),
        ..Hooks::default()
    };
    let cancel = CancellationToken::new();
    let began = now();
    let (driven, job) = run_pod(&setup, types, &mut hooks, &cancel).await;
    assert_eq!(driven.ending, Ending::Done(None), "{:?}", hooks.notices);
    assert_eq!(driven.secret_left, None);
    let facts = &driven.state.facts;
    assert_eq!(facts.gpu_type.as_deref(), Some("B"));
    assert!(facts.retrieved);
    let outcomes: Vec<_> = facts
        .attempts
        .iter()
        .map(|a| (a.gpu_type.as_str(), &a.outcome))
        .collect();
    assert!(
        matches!(
            outcomes[..],
            [
                ("A", AttemptOutcome::Refused(_)),
                ("B", AttemptOutcome::Created(_))
            ]
        ),
        "{outcomes:?}"
    );
    // POD-24: each create call was recorded as sent before it went out.
    for gpu in ["A", "B"] {
        assert!(
            hooks.records.iter().any(|f| f
                .attempts
                .last()
                .is_some_and(|a| a.gpu_type == gpu && a.outcome == AttemptOutcome::Sent)),
            "{gpu}: {:?}",
            hooks.records
        );
    }
    assert!(
        hooks
            .notices
            .iter()
            .any(|n| matches!(n, Notice::NextType { gpu_type, .. } if gpu_type == "A"))
    );
    assert!(gone(&hooks.notices), "{:?}", hooks.notices);
    // Every pod carried its bound: `max_hours` from its create call.
    for pod in &setup.standin.state().pods {
        let bound: u64 = pod.request["env"][DEADLINE_VAR]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let created = pod.created.duration_since(std::time::UNIX_EPOCH).unwrap();
        assert!(bound <= (created + rules.deadline).as_secs() && bound >= began.as_secs());
    }
    // The job ran on the pod; its results and the lease the driver wrote came back.
    let result = std::fs::read_to_string(job.local.join("output/result.txt")).unwrap();
    assert_eq!(result.trim(), RESULT);
    let lease: u64 = std::fs::read_to_string(job.local.join(LEASE_FILE))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(lease >= began.as_secs() && lease <= now().as_secs());
    // The pod booted through the bootstrap and its watchdog, whose logs came back.
    let boot = std::fs::read_to_string(job.local.join(".pod/bootstrap.log")).unwrap();
    assert!(
        boot.contains("starting sshd with the pinned host key"),
        "{boot}"
    );
    let watch = std::fs::read_to_string(job.local.join(".pod/watchdog.log")).unwrap();
    assert!(watch.contains("self-check passed"), "{watch}");
    for text in [&boot, &watch] {
        assert!(!text.contains(&KEY[4..24]) && !text.contains(&setup.host_secret[40..80]));
    }
    // pod.json tells the same story, read back.
    let record = PodRecord::read(&local_run).unwrap().unwrap();
    assert_eq!(record.facts().unwrap(), *facts);
    assert_eq!(record.state, "deleted");
    assert_eq!(record.gpu_type.as_deref(), Some("B"));
    assert_eq!(
        record.deleted.as_ref().map(|d| d.by.as_str()),
        Some("client")
    );
    assert!(record.job_started_at.is_some() && record.retrieved);
    let text = std::fs::read_to_string(local_run.join("pod.json")).unwrap();
    assert!(!text.contains(&KEY[4..24]) && !text.contains(&setup.host_secret[40..80]));
    assert_clean(&setup, &rules);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_driver_deletes_a_pod_presenting_another_host_key_before_any_command() {
    let run = "r_20261201-140000-dr02";
    let setup = setup(run, false).await;
    let rules = rules();
    let types: &[&str] = &["A"];
    let mut hooks = Hooks::default();
    let (driven, job) = run_pod(&setup, types, &mut hooks, &CancellationToken::new()).await;
    assert!(
        matches!(
            driven.ending,
            Ending::Done(Some(PodFailure::OtherHostKey(_)))
        ),
        "{:?}",
        driven.ending
    );
    assert!(!job.started);
    assert!(gone(&hooks.notices), "{:?}", hooks.notices);
    assert_clean(&setup, &rules);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_driver_deletes_the_pod_at_a_ctrl_c_before_the_job_exists() {
    let run = "r_20261201-140000-dr03";
    let setup = setup(run, true).await;
    let cancel = CancellationToken::new();
    let mut hooks = Hooks {
        cancel_at_ready: Some(cancel.clone()),
        ..Hooks::default()
    };
    let (driven, job) = run_pod(&setup, &["A"], &mut hooks, &cancel).await;
    assert_eq!(
        driven.ending,
        Ending::Done(Some(PodFailure::Interrupted)),
        "{:?}",
        hooks.notices
    );
    assert!(job.job.is_none());
    assert!(gone(&hooks.notices), "{:?}", hooks.notices);
    assert_clean(&setup, &rules());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_a_key_without_access_to_secrets_is_refused_before_any_pod() {
    let run = "r_20261201-140000-dr04";
    let standin = Standin::start(KEY).await;
    standin.state().faults.secrets_forbidden = true;
    let client = standin.client(Duration::from_secs(30));
    let run_dir = tempfile::tempdir().unwrap();
    let keys = keys::create(run_dir.path(), run).await.unwrap();
    let error = keys::create_host_secret(&client, run, &keys)
        .await
        .unwrap_err();
    assert!(
        matches!(error, keys::KeyError::NoSecretsAccess { status: 403 }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains("OVERBRAINER_RUNPOD__API_KEY") && text.contains("no pod"),
        "{text}"
    );
    assert!(!text.contains(&KEY[4..24]), "{text}");
    assert!(standin.state().pods.is_empty());
    standin.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_a_ctrl_c_after_the_job_exists_leaves_the_pod_to_its_watchdog_which_deletes_it() {
    let run = "r_20261201-140000-dr05";
    let setup = setup(run, true).await;
    let cancel = CancellationToken::new();
    let mut hooks = Hooks {
        cancel_when_running: Some(cancel.clone()),
        ..Hooks::default()
    };
    let (driven, _job) = run_pod(&setup, &["A"], &mut hooks, &cancel).await;
    assert_eq!(driven.ending, Ending::Detached, "{:?}", hooks.notices);
    let id = driven.state.facts.pod.clone().unwrap();
    // Following stopped; the pod runs on under its watchdog.
    assert_eq!(setup.client.gone(&id).await.unwrap(), (true, true));
    // A later process collects the results and marks them retrieved: the watchdog
    // deletes its own pod.
    let (host, port) = setup.standin.state().pods[0].ssh.clone().unwrap();
    let endpoint = PodEndpoint { host, port };
    let pod = SshExecutor::connect(
        endpoint.destination(setup.plan.ssh_config.clone()),
        "/root/runs",
    )
    .await
    .unwrap();
    let path = format!("{}/{RETRIEVED_FILE}", setup.plan.run_dir);
    pod.put_file(&path, "1\n").await.unwrap();
    pod.disconnect().await;
    poll_async(
        Duration::from_secs(120),
        "the watchdog's deletion",
        || async {
            match setup.client.gone(&id).await {
                Ok((false, false)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    // The run's secret goes with its last pod, once a later command finds it gone.
    setup
        .client
        .delete_secret(setup.plan.host_key_secret.as_deref().unwrap())
        .await
        .unwrap();
    assert_clean(&setup, &rules());
}
