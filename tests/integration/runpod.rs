//! The Runpod REST v2 client against the wire-faithful stand-in (`runpod_standin`): the
//! key only in the `Authorization` header, the retry table of `POST /v2/pods` driven by
//! the real pod lifecycle (capacity and 403 move on, 402 stops with no pod, 429 is waited
//! out, a 500 after the create and a create that times out are adopted, never a second
//! pod), readiness waiting for `ssh.direct`, and deletion until gone (a 204 that leaves
//! the pod listed is retried). Every test ends asserting that no pod outlived its bound
//! and no pod or secret is left.
//!
//! The driver here performs the lifecycle's effects with the client, up to the SSH
//! handshake (the next step of issue 12 gives the stand-in real pods to shake hands
//! with); it stands in for the library driver still to be written.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use overbrainer::config::{ListOrAuto, RunpodTarget, SshClient};
use overbrainer::env::TimeScale;
use overbrainer::llm::Redactor;
use overbrainer::runpod::api::{
    CreatePod, GpuRequest, RunpodClient, host_key_secret, pod_name, secret_reference,
};
use overbrainer::runpod::lifecycle::{
    Effect, Event, Handshake, Notice, PodFailure, PodState, Rules, handle,
};
use secrecy::SecretString;

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
            ("OVERBRAINER_RUN_MARKER".to_owned(), RUN.to_owned()),
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
    handshakes: u32,
    /// What the machine's `Done` said (it must say it).
    failure: Option<PodFailure>,
}

/// Performs `state`'s effects with `client` until it is done. At the first handshake,
/// `at_handshake` is fed (the test's choice: Ctrl-C, or a host key).
async fn drive(
    state: &mut PodState,
    client: &RunpodClient,
    secret_id: &str,
    at_handshake: impl Fn() -> Vec<Event>,
) -> Drive {
    let mut seen = Drive::default();
    let mut queue: std::collections::VecDeque<Effect> =
        handle(state, Event::Began { at: now() }).into();
    let pod = |state: &PodState| state.facts.pod.clone().unwrap_or_default();
    while let Some(effect) = queue.pop_front() {
        let events = match effect {
            Effect::Notice(notice) => {
                seen.notices.push(notice);
                Vec::new()
            }
            Effect::Record => Vec::new(),
            Effect::Create(gpu) => vec![match client.create_pod(&body(&gpu)).await {
                Ok(pod) => Event::Created {
                    at: now(),
                    pod: pod.view(),
                },
                Err(error) => Event::CreateFailed {
                    at: now(),
                    refusal: error.refusal(),
                },
            }],
            Effect::Search => vec![Event::Searched {
                at: now(),
                found: client
                    .pods_named(&pod_name(RUN))
                    .await
                    .map(|pods| {
                        pods.iter()
                            .map(overbrainer::runpod::api::Pod::view)
                            .collect()
                    })
                    .map_err(|e| e.to_string()),
            }],
            Effect::Poll => vec![Event::Polled {
                at: now(),
                pod: client
                    .get_pod(&pod(state))
                    .await
                    .map(|p| p.map(|p| p.view()))
                    .map_err(|e| e.to_string()),
            }],
            Effect::Handshake(endpoint) => {
                assert_eq!(endpoint.host, "127.0.0.1");
                seen.handshakes += 1;
                at_handshake()
            }
            Effect::Delete(id) => vec![Event::DeleteAnswered {
                at: now(),
                result: client.delete_pod(&id).await.map_err(|e| e.to_string()),
            }],
            Effect::CheckGone(id) => vec![Event::GoneChecked {
                at: now(),
                seen: client.gone(&id).await.map_err(|e| e.to_string()),
            }],
            Effect::DeleteSecret => {
                client.delete_secret(secret_id).await.unwrap();
                Vec::new()
            }
            Effect::Wait(pause) => {
                // The machine's own (scaled) pause, not a synchronization.
                tokio::time::sleep(pause).await;
                vec![Event::Tick { at: now() }]
            }
            Effect::Done(outcome) => {
                seen.failure = outcome;
                return seen;
            }
            other => panic!("no such effect before the handshake: {other:?}"),
        };
        for event in events {
            queue.extend(handle(state, event));
        }
    }
    panic!("the machine stopped without saying it was done: {seen:?}");
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

fn interrupt() -> Vec<Event> {
    vec![Event::Interrupted { at: now() }]
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
    let mut pod = PodState::new(standin_rules(), types());
    let seen = drive(&mut pod, &client, &secret, interrupt).await;
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
    let mut pod = PodState::new(standin_rules(), types());
    let seen = drive(&mut pod, &client, &secret, interrupt).await;
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
    let mut pod = PodState::new(standin_rules(), types());
    let seen = drive(&mut pod, &client, &secret, interrupt).await;
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
    let mut pod = PodState::new(standin_rules(), types());
    let seen = drive(&mut pod, &client, &secret, interrupt).await;
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
async fn runpod_running_without_ssh_direct_is_not_ready() {
    let standin = Standin::start(KEY).await;
    standin.state().faults.ssh_after_polls = 3;
    let client = client(&standin, Duration::from_secs(10));
    let secret = host_key(&client).await;
    let mut pod = PodState::new(standin_rules(), types());
    let seen = drive(&mut pod, &client, &secret, || {
        vec![Event::Handshook {
            at: now(),
            result: Handshake::OtherKey("SHA256:not-the-pinned-key".into()),
        }]
    })
    .await;
    assert_eq!(seen.handshakes, 1);
    // A pod presenting another host key is deleted and the run stops.
    assert_eq!(
        seen.failure,
        Some(PodFailure::OtherHostKey("SHA256:not-the-pinned-key".into()))
    );
    let state = standin.state();
    // The create answer and three polls showed RUNNING without `ssh.direct`.
    assert_eq!(state.pods[0].polls, 4);
    drop(state);
    assert_clean(&standin, &standin_rules());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_delete_204_while_still_listed_is_retried_until_gone() {
    let standin = Standin::start(KEY).await;
    standin.state().faults.ignored_deletes = 2;
    let client = client(&standin, Duration::from_secs(10));
    let secret = host_key(&client).await;
    let mut pod = PodState::new(standin_rules(), types());
    let seen = drive(&mut pod, &client, &secret, interrupt).await;
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
