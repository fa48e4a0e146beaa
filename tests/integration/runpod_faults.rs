//! `train` on a `runpod` target through the real binary when the Runpod API misbehaves
//! (issue 12, case 3): a 402 stops with no pod; a 429 with `Retry-After` is waited out;
//! a 500 after the pod was made and a create that times out are resolved by adopting
//! the pod (never a second one); a `DELETE` answered 204 while the pod stays listed is
//! retried until the pod is gone, and one that stays listed is reported with its ID and
//! rate at every later command until it is gone (POD-62), and its run's host-key secret
//! is swept once it is (POD-63). The pods are real (Podman containers of the stand-in);
//! each test stops before the job exists (the pod shows `RUNNING` without its SSH
//! endpoint, then Ctrl-C), so the deletion path runs without training.

use std::time::Duration;

use crate::runpod_train::{assert_clean, overbrainer, pod_project, pod_state, text};

/// Requests of `method` on `path` the stand-in received.
fn count(project: &crate::runpod_train::PodProject, method: &str, path: &str) -> usize {
    project
        .standin
        .state()
        .requests
        .iter()
        .filter(|(m, p, _)| m == method && p.starts_with(path))
        .count()
}

/// Starts `train`, waits for `pod.json` to name a pod, interrupts it (Ctrl-C) and
/// returns its output: the run fails before its job existed and the pod is deleted.
pub(crate) fn interrupted_once_the_pod_exists(
    project: &crate::runpod_train::PodProject,
) -> std::process::Output {
    let child = tokio::task::block_in_place(|| {
        let child = project.training.spawn(&["train", "--target", "pod"]);
        crate::util::poll(
            crate::training::DEADLINE,
            "a created pod",
            || match pod_state(project) {
                Some(pod) if pod["pod_id"].is_string() => Ok(()),
                other => Err(other),
            },
        );
        crate::util::signal(child.id(), "INT");
        child
    });
    tokio::task::block_in_place(|| crate::training::finish(child))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_stops_at_402_with_no_pod_and_deletes_its_host_key_secret() {
    let project = pod_project(r#"["A", "B"]"#).await;
    project.standin.state().faults.no_credit = true;
    let output = tokio::task::block_in_place(|| {
        crate::training::finish(project.training.spawn(&["train", "--target", "pod"]))
    });
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(all.contains("HTTP 402"), "{all}");
    assert!(all.contains("no pod was created"), "{all}");
    // 402 stops: the second GPU type is never tried.
    assert_eq!(count(&project, "POST", "/v2/pods"), 1, "{all}");
    assert!(project.standin.state().pods.is_empty());
    let ids = project.training.run_ids();
    let record = project.training.record(&ids[0]);
    assert_eq!(record["state"], "failed", "{record}");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_waits_out_429_adopts_the_pod_a_500_hid_and_retries_a_204_delete_until_gone() {
    let project = pod_project(r#"["A"]"#).await;
    {
        let mut state = project.standin.state();
        state.faults.rate_limited = 1;
        state.faults.retry_after = 1;
        state.faults.error_after_create = 1;
        state.faults.ignored_deletes = 2;
        state.faults.ssh_after_polls = 1000;
    }
    let output = interrupted_once_the_pod_exists(&project);
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(all.contains("rate limited, waiting 1s"), "{all}");
    // The 429, then the create that made the pod and answered 500; the search adopted
    // it: no third create, one pod.
    assert_eq!(count(&project, "POST", "/v2/pods"), 2, "{all}");
    let pods = project.standin.state().pods.clone();
    assert_eq!(pods.len(), 1, "{pods:?}\n{all}");
    let pod = pod_state(&project).unwrap();
    assert_eq!(pod["pod_id"], pods[0].id.as_str(), "{pod}");
    assert_eq!(pod["state"], "deleted", "{pod}");
    // Two 204s left it listed: the delete was sent again until it was gone.
    let deletes = count(&project, "DELETE", &format!("/v2/pods/{}", pods[0].id));
    assert!(deletes >= 3, "{deletes} deletes\n{all}");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_train_adopts_the_pod_of_a_create_that_timed_out_and_never_makes_a_second() {
    let mut project = pod_project(r#"["A", "B"]"#).await;
    // The client's timeout for one API call (60 s) scales, never below 10 s: at 250 ms
    // a second it is 15 s; readiness (15 minutes from the create call) lasts 225 s.
    for (name, value) in &mut project.training.extra_env {
        if name == "OVERBRAINER_TEST_SECOND_MS" {
            "250".clone_into(value);
        }
    }
    {
        let mut state = project.standin.state();
        // Past the client's timeout for one API call (15 s on this scale).
        state.faults.slow_create = Some(Duration::from_secs(30));
        state.faults.ssh_after_polls = 1000;
    }
    let output = interrupted_once_the_pod_exists(&project);
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(all.contains("timed out"), "{all}");
    assert_eq!(count(&project, "POST", "/v2/pods"), 1, "{all}");
    let pods = project.standin.state().pods.clone();
    assert_eq!(pods.len(), 1, "{pods:?}\n{all}");
    let pod = pod_state(&project).unwrap();
    assert_eq!(pod["pod_id"], pods[0].id.as_str(), "{pod}");
    assert_eq!(pod["state"], "deleted", "{pod}");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_a_pod_still_listed_after_its_deletion_is_reported_with_id_and_rate_until_gone() {
    let project = pod_project(r#"["A"]"#).await;
    {
        let mut state = project.standin.state();
        // Every delete answers 204 and leaves the pod listed.
        state.faults.ignored_deletes = u32::MAX;
        state.faults.ssh_after_polls = 1000;
    }
    let output = interrupted_once_the_pod_exists(&project);
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    let pod = project.standin.state().pods[0].id.clone();
    let id = project.training.run_ids().remove(0);
    assert_eq!(project.training.record(&id)["state"], "failed", "{all}");
    let stray = format!("pod {pod} (");
    // Every later command reports it, with its ID and its rate.
    for _ in 0..2 {
        let output = overbrainer(&project.training, &["pod", "ls"]).await;
        let all = text(&output);
        assert!(output.status.success(), "{all}");
        let line = all
            .lines()
            .find(|l| l.contains(&stray))
            .unwrap_or_else(|| panic!("no stray warning\n{all}"));
        assert!(line.contains("USD/h") && line.contains(&id), "{line}");
        assert!(line.contains("still listed though its run ended"), "{line}");
    }
    // Deletes work again: `pod rm` removes it, and then nothing reports it.
    project.standin.state().faults.ignored_deletes = 0;
    let output = overbrainer(&project.training, &["pod", "rm", &id]).await;
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(all.contains(&format!("removed pod {pod}")), "{all}");
    let output = overbrainer(&project.training, &["pod", "ls"]).await;
    let all = text(&output);
    assert!(!all.contains(&stray), "{all}");
    assert_eq!(pod_state(&project).unwrap()["state"], "deleted");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_the_host_key_secret_of_an_ended_run_whose_pod_is_gone_is_swept_by_the_next_command()
{
    let project = pod_project(r#"["A"]"#).await;
    {
        let mut state = project.standin.state();
        state.faults.ignored_deletes = u32::MAX;
        state.faults.ssh_after_polls = 1000;
    }
    let output = interrupted_once_the_pod_exists(&project);
    let all = text(&output);
    assert!(!output.status.success(), "{all}");
    // The pod stayed listed, so its run's host-key secret was kept.
    let live = |project: &crate::runpod_train::PodProject| {
        project
            .standin
            .state()
            .secrets
            .iter()
            .filter(|s| s.deleted.is_none())
            .count()
    };
    assert_eq!(live(&project), 1, "{all}");
    // The pod goes outside overbrainer (the Runpod console).
    project.standin.state().faults.ignored_deletes = 0;
    let pod = project.standin.state().pods[0].id.clone();
    project
        .standin
        .client(Duration::from_secs(30))
        .delete_pod(&pod)
        .await
        .unwrap();
    let output = overbrainer(&project.training, &["pod", "ls"]).await;
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    assert!(!all.contains(&format!("pod {pod} (")), "{all}");
    assert_eq!(live(&project), 0, "{all}");
    assert!(pod_state(&project).unwrap()["host_key_secret_id"].is_null());
    // Swept once: the next command does not delete it again.
    let deletes = count(&project, "DELETE", "/v2/account/secrets");
    let output = overbrainer(&project.training, &["pod", "ls"]).await;
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(count(&project, "DELETE", "/v2/account/secrets"), deletes);
    assert_clean(&project);
}

/// `kill -9` of `train` once `ready` holds on the stand-in; the run's ID.
fn killed_when(
    project: &crate::runpod_train::PodProject,
    what: &str,
    ready: impl Fn(&crate::runpod_train::PodProject) -> bool,
) -> String {
    tokio::task::block_in_place(|| {
        let child = project.training.spawn(&["train", "--target", "pod"]);
        crate::util::poll(crate::training::DEADLINE, what, || {
            if ready(project) { Ok(()) } else { Err(()) }
        });
        crate::util::signal(child.id(), "KILL");
        let _ = crate::training::finish(child);
        project.training.run_ids().remove(0)
    })
}

/// `train attach` of a run whose start was killed: the run fails as ended before its
/// job existed, and nothing is left on the stand-in.
async fn attach_fails_the_start_and_leaves_nothing(
    project: &crate::runpod_train::PodProject,
    id: &str,
) {
    assert_eq!(project.training.record(id)["state"], "starting");
    let output = overbrainer(&project.training, &["train", "attach", id]).await;
    let all = text(&output);
    let record = project.training.record(id);
    assert_eq!(record["state"], "failed", "{record}\n{all}");
    assert!(
        record["message"]
            .as_str()
            .unwrap_or_default()
            .contains("ended before its job existed"),
        "{record}"
    );
    assert_clean(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_kill_9_before_the_create_call_leaves_no_pod_and_train_attach_deletes_the_secret() {
    let project = pod_project(r#"["A"]"#).await;
    {
        let mut state = project.standin.state();
        // The first create answers 429 with a long Retry-After: the binary waits
        // before its next create call, and dies there.
        state.faults.rate_limited = 1;
        state.faults.retry_after = 3600;
    }
    let id = killed_when(&project, "a rate-limited create", |p| {
        p.standin.state().faults.rate_limited == 0
            && pod_state(p).is_some_and(|pod| pod["pod_id"].is_null())
    });
    assert!(project.standin.state().pods.is_empty());
    attach_fails_the_start_and_leaves_nothing(&project, &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_kill_9_while_the_create_call_returns_and_train_attach_finds_and_deletes_the_pod() {
    let project = pod_project(r#"["A"]"#).await;
    // The pod exists, its answer is on its way when the binary dies.
    project.standin.state().faults.slow_create = Some(Duration::from_secs(3600));
    let id = killed_when(&project, "a pod made", |p| {
        !p.standin.state().pods.is_empty()
    });
    assert!(pod_state(&project).is_some_and(|pod| pod["pod_id"].is_null()));
    attach_fails_the_start_and_leaves_nothing(&project, &id).await;
    let pods = project.standin.state().pods.clone();
    assert_eq!(pods.len(), 1, "{pods:?}");
}
