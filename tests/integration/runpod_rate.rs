//! A 429 with `Retry-After` on `GET /v2/pods`, `GET /v2/pods/{id}` and `DELETE
//! /v2/pods/{id}` (issue 34): the client waits it out as the create retry table does
//! (`Retry-After` as given), sends the call again and answers as if nothing happened;
//! it gives up with the 429 once the waits would pass the policy's deadline (an hour's
//! window is not waited at all) or after ten 429s in a row. Against the stand-in, in
//! real time (one `Retry-After` second is a second); and through the binary, whose
//! client takes the policy on its test time factor (`pod ls`, `pod rm`).

use std::time::{Duration, Instant};

use overbrainer::runpod::api::{ApiError, CreatePod, RunpodClient};

use crate::runpod_standin::{DELETE_POD, GET_POD, LIST_PODS, Standin};

const KEY: &str = "rpa_CANARY6Wd1Qs8Lv3Jx5Tn9Hb2Zk7Mf4Rc0Pg";

fn body() -> CreatePod {
    crate::runpod_standin::bare_body("r_20261204-230000-ra34")
}

/// The stand-in with one pod, and a client of it.
async fn with_pod() -> (Standin, RunpodClient, String) {
    let standin = Standin::start(KEY).await;
    let client = standin.client(Duration::from_secs(10));
    let pod = client.create_pod(&body()).await.unwrap().id;
    (standin, client, pod)
}

/// The next `times` answers of `route` are 429 with `Retry-After: retry_after`.
fn limit(standin: &Standin, route: &'static str, times: u32, retry_after: u64) {
    let mut state = standin.state();
    state.faults.retry_after = retry_after;
    state.faults.limited.insert(route, times);
}

/// Requests of `method` to `path` the stand-in answered.
fn sent(standin: &Standin, method: &str, path: &str) -> usize {
    standin
        .state()
        .requests
        .iter()
        .filter(|(m, p, _)| m == method && p == path)
        .count()
}

/// At least `waits` seconds passed since `began` (each a `Retry-After: 1` waited out),
/// and not the minutes of a wait that ignored `Retry-After`.
fn waited(began: Instant, waits: u64) {
    let elapsed = began.elapsed();
    assert!(elapsed >= Duration::from_secs(waits), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(waits + 8), "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_429_on_a_pod_listing_is_waited_out() {
    let (standin, client, pod) = with_pod().await;
    limit(&standin, LIST_PODS, 2, 1);
    let began = Instant::now();
    let pods = client.list_pods().await.unwrap();
    waited(began, 2);
    assert_eq!(pods.iter().map(|p| &p.id).collect::<Vec<_>>(), [&pod]);
    assert_eq!(sent(&standin, "GET", "/v2/pods"), 3);
    client.delete_pod(&pod).await.unwrap();
    standin.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_429_on_a_pod_get_is_waited_out() {
    let (standin, client, pod) = with_pod().await;
    limit(&standin, GET_POD, 2, 1);
    let began = Instant::now();
    let got = client.get_pod(&pod).await.unwrap().expect("the pod");
    waited(began, 2);
    assert_eq!(got.id, pod);
    assert_eq!(sent(&standin, "GET", &format!("/v2/pods/{pod}")), 3);
    client.delete_pod(&pod).await.unwrap();
    standin.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_429_on_a_pod_delete_is_waited_out_and_the_pod_goes() {
    let (standin, client, pod) = with_pod().await;
    limit(&standin, DELETE_POD, 2, 1);
    let began = Instant::now();
    client.delete_pod(&pod).await.unwrap();
    waited(began, 2);
    assert_eq!(sent(&standin, "DELETE", &format!("/v2/pods/{pod}")), 3);
    assert_eq!(client.gone(&pod).await.unwrap(), (false, false));
    standin.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_429_past_the_deadline_or_ten_times_in_a_row_gives_up_with_the_429() {
    let (standin, client, pod) = with_pod().await;
    // An hour's window: past the deadline at once, so not waited at all.
    limit(&standin, DELETE_POD, 1, 3600);
    let began = Instant::now();
    let error = client.delete_pod(&pod).await.unwrap_err();
    assert!(
        began.elapsed() < Duration::from_secs(8),
        "{:?}",
        began.elapsed()
    );
    assert!(
        matches!(
            error,
            ApiError::RateLimited {
                retry_after: Some(d),
                ..
            } if d == Duration::from_secs(3600)
        ),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains(&format!("DELETE /pods/{pod}"))
            && text.contains("rate limited (retry after 3600s)"),
        "{text}"
    );
    assert_eq!(sent(&standin, "DELETE", &format!("/v2/pods/{pod}")), 1);
    // Always limited, even with nothing to wait: ten waits, then the 429.
    limit(&standin, GET_POD, u32::MAX, 0);
    let error = client.get_pod(&pod).await.unwrap_err();
    assert_eq!(error.status(), Some(429), "{error}");
    assert_eq!(sent(&standin, "GET", &format!("/v2/pods/{pod}")), 11);
    standin.state().faults.limited.clear();
    client.delete_pod(&pod).await.unwrap();
    standin.assert_nothing_left();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_pod_ls_and_pod_rm_wait_out_429s_through_the_binary() {
    use crate::runpod_train::{assert_clean, foreign_pod, overbrainer, pod_project, text};
    let project = pod_project(r#"["A"]"#).await;
    let run = "other_20261204-235000";
    let now = overbrainer::runpod::driver::now().as_secs();
    let pod = foreign_pod(&project, run, now + 3600, false).await;
    // The project's scale makes the deadline 6 s: two waits of 1 s fit.
    limit(&project.standin, LIST_PODS, 2, 1);
    let began = Instant::now();
    let output = overbrainer(&project.training, &["pod", "ls"]).await;
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(all.contains(&pod), "{all}");
    assert!(began.elapsed() >= Duration::from_secs(2), "{all}");
    assert_eq!(project.standin.state().faults.limited[LIST_PODS], 0);
    limit(&project.standin, DELETE_POD, 1, 1);
    limit(&project.standin, GET_POD, 1, 1);
    let output = overbrainer(&project.training, &["pod", "rm", run, "--force"]).await;
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(all.contains(&format!("removed pod {pod}")), "{all}");
    assert_eq!(
        sent(&project.standin, "DELETE", &format!("/v2/pods/{pod}")),
        2,
        "{all}"
    );
    assert_clean(&project);
}
