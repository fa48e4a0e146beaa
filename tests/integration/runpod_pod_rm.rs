//! `pod rm` through the real binary, its pods real containers of the stand-in (spec
//! POD-65, POD-66; issue 34): a pod ID is refused, with or without `--force`, naming the
//! pod's run; a run absent from this project's `runs/` and a run still starting its pod
//! are refused without `--force` and their pods removed with it; for a run in progress,
//! `pod rm` removes the run's other pods, leaves its training pod and exits non-zero
//! listing both, and `--force` removes the training pod too and fails the run. Nothing
//! is deleted by a refusal; nothing is left at the end.

use crate::runpod_train::{
    PodProject, assert_clean, foreign_pod, overbrainer, pod_project, pod_project_of, pod_state,
    text,
};

/// The pods the stand-in still lists.
fn live(project: &PodProject) -> Vec<String> {
    project
        .standin
        .state()
        .pods
        .iter()
        .filter(|p| p.deleted.is_none())
        .map(|p| p.id.clone())
        .collect()
}

/// `pod rm ARGS`: its output, failing the test unless it `succeeds` as expected.
async fn pod_rm(project: &PodProject, args: &[&str], succeeds: bool) -> String {
    let mut all_args = vec!["pod", "rm"];
    all_args.extend_from_slice(args);
    let output = overbrainer(&project.training, &all_args).await;
    let all = text(&output);
    assert_eq!(output.status.success(), succeeds, "pod rm {args:?}: {all}");
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_pod_rm_refuses_a_pod_id_a_run_not_here_and_a_starting_run_and_force_removes_them() {
    let project = pod_project(r#"["A"]"#).await;
    let now = overbrainer::runpod::driver::now().as_secs();
    let other = "other_20261204-234500";
    let foreign = foreign_pod(&project, other, now + 3600, false).await;
    // A pod ID: refused, with or without --force, naming the pod's run.
    for force in [&[][..], &["--force"][..]] {
        let mut args = vec![foreign.as_str()];
        args.extend_from_slice(force);
        let all = pod_rm(&project, &args, false).await;
        assert!(
            all.contains(&format!("`{foreign}` is a pod ID"))
                && all.contains(&format!("(`{other}`)"))
                && all.contains("nothing was deleted"),
            "{all}"
        );
        assert_eq!(live(&project), std::slice::from_ref(&foreign), "{all}");
    }
    // A run absent from this project's runs/: another checkout may own it.
    let all = pod_rm(&project, &[other], false).await;
    assert!(
        all.contains(&format!("no run `{other}` in this project's `runs/`"))
            && all.contains(&format!("overbrainer pod rm {other} --force")),
        "{all}"
    );
    assert_eq!(live(&project), std::slice::from_ref(&foreign), "{all}");
    let all = pod_rm(&project, &[other, "--force"], true).await;
    assert!(all.contains(&format!("removed pod {foreign}")), "{all}");
    assert!(live(&project).is_empty(), "{all}");
    // A run still starting its pod: its `train` killed while the pod boots.
    let id = crate::runpod_train::killed_while_its_pod_boots(&project);
    let pod = pod_state(&project).unwrap()["pod_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let all = pod_rm(&project, &[&id], false).await;
    assert!(
        all.contains(&format!("run `{id}` is still starting its pod"))
            && all.contains(&format!("overbrainer pod rm {id} --force")),
        "{all}"
    );
    assert_eq!(live(&project), std::slice::from_ref(&pod), "{all}");
    assert_eq!(project.training.record(&id)["state"], "starting");
    let all = pod_rm(&project, &[&id, "--force"], true).await;
    assert!(
        all.contains(&format!("removed pod {pod}"))
            && all.contains(&format!("run `{id}` is marked failed")),
        "{all}"
    );
    assert_eq!(project.training.record(&id)["state"], "failed");
    assert_eq!(pod_state(&project).unwrap()["state"], "deleted");
    assert_clean(&project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_pod_rm_of_a_run_in_progress_leaves_its_training_pod_and_force_removes_it_and_fails_the_run()
 {
    // Steps enough to be still training through both removals.
    let project = pod_project_of(r#"["A"]"#, 6000).await;
    let id = tokio::task::block_in_place(|| {
        let mut child = project.training.spawn(&["train", "--target", "pod"]);
        let id = project.training.wait_running(&mut child);
        // Detached: the run is in progress, its pod under its watchdog.
        crate::util::signal(child.id(), "INT");
        let _ = crate::training::finish(child);
        id
    });
    assert_eq!(project.training.record(&id)["state"], "running");
    let training = pod_state(&project).unwrap()["pod_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A second pod of the same run, as an ambiguous create leaves one.
    let now = overbrainer::runpod::driver::now().as_secs();
    let stray = foreign_pod(&project, &id, now + 3600, false).await;
    let all = pod_rm(&project, &[&id], false).await;
    assert!(all.contains(&format!("removed pod {stray}")), "{all}");
    assert!(
        all.contains(&format!(
            "left the training pod {training} of run `{id}` in progress"
        )) && all.contains(&format!("overbrainer pod rm {id} --force")),
        "{all}"
    );
    assert_eq!(live(&project), std::slice::from_ref(&training), "{all}");
    assert_eq!(project.training.record(&id)["state"], "running");
    // The run's host-key secret lives while its training pod does (POD-31).
    assert!(
        project
            .standin
            .state()
            .secrets
            .iter()
            .any(|s| s.deleted.is_none()),
        "{all}"
    );
    let all = pod_rm(&project, &[&id, "--force"], true).await;
    assert!(
        all.contains(&format!("removed pod {training}"))
            && all.contains(&format!("run `{id}` is marked failed")),
        "{all}"
    );
    let record = project.training.record(&id);
    assert_eq!(record["state"], "failed", "{record}");
    assert!(
        record["message"]
            .as_str()
            .unwrap_or_default()
            .contains("pod rm --force"),
        "{record}"
    );
    assert_eq!(pod_state(&project).unwrap()["state"], "deleted");
    assert_clean(&project);
}
