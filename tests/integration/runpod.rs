//! The Runpod REST v2 client against the wire-faithful stand-in (`runpod_standin`): the
//! key only in the `Authorization` header, the retry table of `POST /v2/pods` driven by
//! the real pod lifecycle (capacity and 403 move on, 402 stops with no pod, 429 is waited
//! out, a 500 after the create and a create that times out are adopted, never a second
//! pod), readiness waiting for `ssh.direct`, and deletion until gone (a 204 that leaves
//! the pod listed is retried). Every test ends asserting that no pod outlived its bound
//! and no pod or secret is left.
//!
//! The library driver (`runpod::driver::drive`) performs the lifecycle's effects with
//! the client; each test ends with a Ctrl-C once the pod exists (before any job), or
//! at a real `sshd` presenting another host key than the run's pinned one.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use overbrainer::config::{ListOrAuto, RunpodTarget, SshClient};
use overbrainer::env::TimeScale;
use overbrainer::exec::SshExecutor;
use overbrainer::llm::Redactor;
use overbrainer::runpod::api::{
    CreatePod, GpuRequest, RunpodClient, host_key_secret, pod_name, secret_reference,
};
use overbrainer::runpod::body::RUN_ID_VAR;
use overbrainer::runpod::driver::{Ending, JobNews, PodHooks, PodJob, PodPlan};
use overbrainer::runpod::keys;
use overbrainer::runpod::lifecycle::{Event, Notice, PodFailure, PodState, Rules};
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;

use crate::runpod_standin::{CAPACITY, Standin};

/// A canary key: long, random, checked whole and in parts.
const KEY: &str = "rpa_CANARY4Tq8Vn2Lx6Hs9Jd3Wk7Zb5Mc1Pf0Rg";
/// A canary host private key.
const HOST_KEY: &str = "HOSTKEY-CANARY-8Jw3Nq6Tz1Vb4Xm7Kd2Rs9Lf5Hc0Pg";
const RUN: &str = "r_20261201-120000-ab12";

/// The test-only factor: one rule second lasts 5 ms (15 minutes are 4.5 s).
fn scale() -> TimeScale {
    TimeScale::with_second(Duration::from_millis(5))
}

/// A target of three GPU types, one hour, no cost cap.
pub fn target() -> RunpodTarget {
    RunpodTarget {
        gpu_types: ListOrAuto::List(vec!["A".into(), "B".into(), "C".into()]),
        min_vram_gb: None,
        max_price_per_hour: None,
        max_hours: 1.0,
        max_cost_usd: None,
        gpu_count: 1,
        image: "overbrainer-pod:test".into(),
        venv: "/workspace/axolotl-venv".into(),
        container_disk_gb: 20,
        boot_grace_minutes: 30,
        retrieve_grace_minutes: 60,
        data_center_ids: None,
        network_volume_id: None,
        max_volume_gb: None,
        ssh_client: SshClient::default(),
    }
}

fn now() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

fn client(standin: &Standin, timeout: Duration) -> RunpodClient {
    RunpodClient::new(
        &standin.base(),
        SecretString::from(KEY),
        Redactor::new(),
        timeout,
    )
    .unwrap()
}

fn body(gpu: &str) -> CreatePod {
    CreatePod {
        name: pod_name(RUN),
        image: "overbrainer-pod:test".into(),
        gpu: GpuRequest {
            id: gpu.into(),
            count: 1,
        },
        cloud: "SECURE".into(),
        data_center_ids: Vec::new(),
        disk: 20,
        env: [
            (RUN_ID_VAR.to_owned(), RUN.to_owned()),
            (
                "OVERBRAINER_HOST_KEY".to_owned(),
                secret_reference(&host_key_secret(RUN)),
            ),
        ]
        .into(),
        ports: vec!["22/tcp".into()],
        mounts: None,
        args: Some("bash -c 'sleep infinity'".into()),
    }
}

/// What a drive saw.
#[derive(Debug, Default)]
struct Drive {
    notices: Vec<Notice>,
    /// What the machine's `Done` said (it must say it).
    failure: Option<PodFailure>,
}

/// No job in these tests: each ends before one could start.
struct NoJob;

impl PodJob for NoJob {
    async fn start(&mut self, _pod: &SshExecutor) -> Result<(), String> {
        Err("these tests start no job".into())
    }
    async fn watch(&mut self, _pod: &SshExecutor) -> Result<JobNews, String> {
        Ok(JobNews::Ended)
    }
    async fn retrieve(&mut self, _pod: &SshExecutor) -> Result<(), String> {
        Err("these tests retrieve nothing".into())
    }
}

/// Collects the notices; a Ctrl-C once the pod exists, when asked.
struct Hooks {
    notices: Vec<Notice>,
    cancel_at_created: Option<CancellationToken>,
}

impl PodHooks for Hooks {
    fn notice(&mut self, notice: &Notice) {
        if matches!(notice, Notice::Created { .. }) {
            if let Some(cancel) = &self.cancel_at_created {
                cancel.cancel();
            }
        }
        self.notices.push(notice.clone());
    }
    fn record(&mut self, _state: &PodState) -> Result<(), String> {
        Ok(())
    }
}

/// Drives `state` with the library driver (`runpod::driver::drive`) and `client` until
/// it is done; with `interrupt`, a Ctrl-C once the pod exists (before any job). The
/// handshake is the driver's own, with the run's `ssh -F` file: these pods have no real
/// `sshd` unless the test points the stand-in's endpoint at one.
async fn drive(state: PodState, client: &RunpodClient, secret_id: &str, interrupt: bool) -> Drive {
    let temp = tempfile::tempdir().unwrap();
    let keys = keys::create(temp.path(), RUN).await.unwrap();
    let plan = PodPlan {
        body: body("A"),
        ssh_config: keys.config.clone(),
        workdir: "/root/runs".into(),
        run_dir: format!("/root/runs/{RUN}"),
        host_key_secret: Some(secret_id.to_owned()),
        job_poll: scale().scale(Duration::from_secs(5)),
        time_scale: scale(),
        auto: None,
        log_dir: None,
    };
    let cancel = CancellationToken::new();
    let mut hooks = Hooks {
        notices: Vec::new(),
        cancel_at_created: interrupt.then(|| cancel.clone()),
    };
    let driven = overbrainer::runpod::driver::drive(
        client,
        &plan,
        state,
        Event::Began { at: now() },
        &mut NoJob,
        &mut hooks,
        &cancel,
    )
    .await
    .unwrap();
    let Ending::Done(failure) = driven.ending else {
        panic!("the pod's life did not end: {:?}", hooks.notices);
    };
    assert_eq!(driven.secret_left, None);
    Drive {
        notices: hooks.notices,
        failure,
    }
}

/// The run's host-key secret, as `train` creates it before the first create call.
async fn host_key(client: &RunpodClient) -> String {
    client
        .create_secret(
            &host_key_secret(RUN),
            &SecretString::from(HOST_KEY),
            Some("overbrainer host key"),
        )
        .await
        .unwrap()
        .id
}

/// The end of every test: no pod outlived its bound, nothing is left, and neither canary
/// is anywhere but where it belongs (the key in no request body or path; the host key
/// only in the secret's create body).
fn assert_clean(standin: &Standin, rules: &Rules) {
    standin.assert_nothing_left();
    let state = standin.state();
    for pod in &state.pods {
        let deleted = pod.deleted.expect("every pod deleted");
        let lived = deleted.duration_since(pod.created).unwrap_or_default();
        assert!(lived < rules.deadline, "pod {} lived {lived:?}", pod.id);
    }
    for (method, path, body) in &state.requests {
        for canary in [KEY, &KEY[4..16], &KEY[20..32]] {
            assert!(
                !body.contains(canary) && !path.contains(canary),
                "{method} {path}"
            );
        }
        if body.contains(&HOST_KEY[8..24]) {
            assert_eq!(
                (method.as_str(), path.as_str()),
                ("POST", "/v2/account/secrets")
            );
        }
    }
}

fn standin_rules() -> Rules {
    Rules::new(&target(), false, scale())
}

fn types() -> Vec<String> {
    vec!["A".into(), "B".into(), "C".into()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_client_round_trip_keeps_secrets_out_of_the_pod_description() {
    let standin = Standin::start(KEY).await;
    let client = client(&standin, Duration::from_secs(10));
    let secret = host_key(&client).await;
    // The value travels in the secret's create body and nowhere else.
    assert_eq!(standin.state().secrets[0].value, HOST_KEY);
    let pod = client.create_pod(&body("A")).await.unwrap();
    let mut other = body("A");
    other.name = pod_name("r_other");
    let stranger = client.create_pod(&other).await.unwrap();
    // No name filter on the wire: the client filters.
    let named = client.pods_named(&pod_name(RUN)).await.unwrap();
    assert_eq!(named.iter().map(|p| &p.id).collect::<Vec<_>>(), [&pod.id]);
    let got = client.get_pod(&pod.id).await.unwrap().unwrap();
    assert_eq!(
        got.env["OVERBRAINER_HOST_KEY"],
        "{{ RUNPOD_SECRET_overbrainer_host_key_r_20261201-120000-ab12 }}"
    );
    assert!(!serde_json::to_string(&got.env).unwrap().contains(HOST_KEY));
    for id in [&pod.id, &stranger.id] {
        client.delete_pod(id).await.unwrap();
        assert_eq!(client.gone(id).await.unwrap(), (false, false));
    }
    // 404 counts as deleted.
    client.delete_pod(&pod.id).await.unwrap();
    assert!(client.get_pod(&pod.id).await.unwrap().is_none());
    client.delete_secret(&secret).await.unwrap();
    // Another key is refused and never echoed.
    let wrong = RunpodClient::new(
        &standin.base(),
        SecretString::from("rpa_WRONG9Kd2Lm7Qx4Tv8Hb3Nc6Zs1Wf5Jg0"),
        Redactor::new(),
        Duration::from_secs(10),
    )
    .unwrap();
    let error = wrong.list_pods().await.unwrap_err();
    assert_eq!(error.status(), Some(401));
    assert!(!error.to_string().contains("Kd2Lm7Qx4Tv8"), "{error}");
    assert_clean(&standin, &standin_rules());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_capacity_and_403_move_to_the_next_type_and_ctrl_c_deletes_the_pod() {
    let standin = Standin::start(KEY).await;
    {
        let mut state = standin.state();
        state.faults.capacity.insert("A".into());
        state.faults.forbidden.insert("B".into());
    }
    let client = client(&standin, Duration::from_secs(10));
    let secret = host_key(&client).await;
    let pod = PodState::new(standin_rules(), types());
    let seen = drive(pod, &client, &secret, true).await;
    assert_eq!(seen.failure, Some(PodFailure::Interrupted));
    let next: Vec<_> = seen
        .notices
        .iter()
        .filter_map(|n| match n {
            Notice::NextType { gpu_type, reason } => Some((gpu_type.as_str(), reason.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(next, [("A", CAPACITY), ("B", "access denied")]);
    let state = standin.state();
    assert_eq!(state.pods.len(), 1);
    assert_eq!(state.pods[0].request["gpu"]["id"], "C");
    drop(state);
    assert_clean(&standin, &standin_rules());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_402_stops_with_no_pod_and_no_secret_left() {
    let standin = Standin::start(KEY).await;
    standin.state().faults.no_credit = true;
    let client = client(&standin, Duration::from_secs(10));
    let secret = host_key(&client).await;
    let pod = PodState::new(standin_rules(), types());
    let seen = drive(pod, &client, &secret, true).await;
    assert_eq!(
        seen.failure,
        Some(PodFailure::Refused {
            status: Some(402),
            detail: "insufficient balance".into()
        })
    );
    assert!(standin.state().pods.is_empty());
    assert_clean(&standin, &standin_rules());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_429_with_retry_after_is_waited_out() {
    let standin = Standin::start(KEY).await;
    {
        let mut state = standin.state();
        state.faults.rate_limited = 2;
        state.faults.retry_after = 1;
    }
    let client = client(&standin, Duration::from_secs(10));
    let secret = host_key(&client).await;
    let pod = PodState::new(standin_rules(), types());
    let seen = drive(pod, &client, &secret, true).await;
    assert_eq!(seen.failure, Some(PodFailure::Interrupted));
    let waits: Vec<_> = seen
        .notices
        .iter()
        .filter(|n| **n == Notice::RateLimited(Duration::from_secs(1)))
        .collect();
    assert_eq!(waits.len(), 2);
    let state = standin.state();
    let creates = state
        .requests
        .iter()
        .filter(|(m, p, _)| m == "POST" && p == "/v2/pods")
        .count();
    assert_eq!((creates, state.pods.len()), (3, 1));
    assert_eq!(state.pods[0].request["gpu"]["id"], "A");
    drop(state);
    assert_clean(&standin, &standin_rules());
}

/// The ambiguous outcomes: the pod exists, the answer says nothing (500) or never comes
/// (timeout). The pod is found by its name and adopted: one pod, one create call.
async fn adopted_after(standin: Standin, timeout: Duration) {
    let client = client(&standin, timeout);
    let secret = host_key(&client).await;
    let pod = PodState::new(standin_rules(), types());
    let seen = drive(pod, &client, &secret, true).await;
    assert_eq!(seen.failure, Some(PodFailure::Interrupted));
    assert!(
        seen.notices
            .iter()
            .any(|n| matches!(n, Notice::Searching(_))),
        "{:?}",
        seen.notices
    );
    let state = standin.state();
    let adopted = state.pods.first().map(|p| p.id.clone()).unwrap_or_default();
    assert!(
        seen.notices.contains(&Notice::Created {
            pod: adopted,
            adopted: true
        }),
        "{:?}",
        seen.notices
    );
    let creates = state
        .requests
        .iter()
        .filter(|(m, p, _)| m == "POST" && p == "/v2/pods")
        .count();
    assert_eq!((creates, state.pods.len()), (1, 1), "never a second pod");
    drop(state);
    assert_clean(&standin, &standin_rules());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_500_after_the_create_is_resolved_by_adoption() {
    let standin = Standin::start(KEY).await;
    standin.state().faults.error_after_create = 1;
    adopted_after(standin, Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_create_that_times_out_is_resolved_by_adoption() {
    let standin = Standin::start(KEY).await;
    standin.state().faults.slow_create = Some(Duration::from_secs(5));
    adopted_after(standin, Duration::from_millis(500)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_running_without_ssh_direct_is_not_ready_and_another_host_key_is_refused() {
    let standin = Standin::start(KEY).await;
    // Once `ssh.direct` exists it leads to a real sshd presenting its own host key,
    // not the run's pinned one.
    let sshd = crate::sshd::Sshd::start();
    {
        let mut state = standin.state();
        state.faults.ssh_after_polls = 3;
        state.ssh = ("127.0.0.1".into(), sshd.port());
    }
    let client = client(&standin, Duration::from_secs(10));
    let secret = host_key(&client).await;
    let pod = PodState::new(standin_rules(), types());
    let seen = drive(pod, &client, &secret, false).await;
    // A pod presenting another host key is deleted and the run stops.
    assert!(
        matches!(seen.failure, Some(PodFailure::OtherHostKey(_))),
        "{:?}",
        seen.failure
    );
    let state = standin.state();
    // The create answer and three polls showed RUNNING without `ssh.direct`; only the
    // fourth poll gave the endpoint the handshake was tried on.
    assert_eq!(state.pods.len(), 1);
    assert!(state.pods[0].polls >= 4, "{}", state.pods[0].polls);
    drop(state);
    assert_clean(&standin, &standin_rules());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_delete_204_while_still_listed_is_retried_until_gone() {
    let standin = Standin::start(KEY).await;
    standin.state().faults.ignored_deletes = 2;
    let client = client(&standin, Duration::from_secs(10));
    let secret = host_key(&client).await;
    let pod = PodState::new(standin_rules(), types());
    let seen = drive(pod, &client, &secret, true).await;
    assert_eq!(seen.failure, Some(PodFailure::Interrupted));
    let still: Vec<_> = seen
        .notices
        .iter()
        .filter(|n| matches!(n, Notice::StillListed { .. }))
        .collect();
    assert_eq!(still.len(), 2, "{:?}", seen.notices);
    let state = standin.state();
    let deletes = state
        .requests
        .iter()
        .filter(|(m, p, _)| m == "DELETE" && p.starts_with("/v2/pods/"))
        .count();
    assert_eq!(deletes, 3);
    drop(state);
    assert_clean(&standin, &standin_rules());
}
