//! `kill -9` of `train` on a `runpod` target during the upload and during the retrieval
//! (issue 12, case 2), through the real binary with the stand-in's real pods: a later
//! command (`pod ls`, `train attach`) finds the pod and the run in a state the user can
//! act on, no pod outlives its bound, and nothing half-retrieved is taken as done.
//!
//! The moment is caught on the pod's side: the pods' processes are this machine's
//! processes, so the test watches for the pod's `tar` working in the run's directory
//! (extracting the upload, or archiving the results), and makes the transfer large
//! enough to be caught (a big train file; a big file among the job's outputs).

use std::io::Write as _;

use crate::runpod_train::{
    PodProject, assert_clean, overbrainer, pod_state, text, unmerged_pod_project,
};

/// The demo project on a pod target with a project name of its own.
async fn kill_project(name: &str) -> PodProject {
    let project = unmerged_pod_project(r#"["A"]"#).await;
    let config = project.training.project.read("overbrainer.toml");
    assert!(config.contains("name = \"tiny test\""), "{config}");
    project.training.project.write(
        "overbrainer.toml",
        &config.replacen(
            "name = \"tiny test\"",
            &format!("name = \"pod kill {name}\""),
            1,
        ),
    );
    project
}

/// The run directory on the pod.
fn pod_run_dir(id: &str) -> String {
    format!("{}/{id}", overbrainer::runs::pod::POD_WORKDIR)
}

/// Whether a process of this machine (a pod's too) runs `tar` with `flag` in its
/// arguments, its working directory `cwd` (as its own file system names it).
fn tar_in(cwd: &str, flag: &str) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| {
            let Ok(argv) = std::fs::read(entry.path().join("cmdline")) else {
                return false;
            };
            let argv: Vec<&[u8]> = argv.split(|b| *b == 0).collect();
            argv.first().is_some_and(|a| a.ends_with(b"tar"))
                && argv.contains(&flag.as_bytes())
                && std::fs::read_link(entry.path().join("cwd"))
                    .is_ok_and(|dir| dir == std::path::Path::new(cwd))
        })
}

/// `train` started, killed with `SIGKILL` once a pod's `tar` with `flag` works in the
/// run's directory on the pod; `before` runs on the pod once the job runs, when given.
fn killed_at_tar(project: &PodProject, flag: &str, before: Option<&dyn Fn(&str)>) -> String {
    let mut child = project.training.spawn(&["train", "--target", "pod"]);
    if let Some(before) = before {
        let id = project.training.wait_running(&mut child);
        before(&id);
    }
    // `/proc` read in this process, every 50 ms: the transfer lasts a few seconds.
    let every = std::time::Duration::from_millis(50);
    let id = crate::util::poll_every(every, crate::training::DEADLINE, "the pod's tar", || {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("train ended first ({status})");
        }
        match project.training.run_ids().into_iter().next() {
            Some(id) if tar_in(&pod_run_dir(&id), flag) => Ok(id),
            other => Err(other),
        }
    });
    crate::util::signal(child.id(), "KILL");
    let _ = crate::training::finish(child);
    id
}

fn pod_id(project: &PodProject) -> String {
    pod_state(project).unwrap()["pod_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The size of `file` in the run's directory on the pod, `None` when missing.
fn size_on_pod(project: &PodProject, pod: &str, id: &str, file: &str) -> Option<u64> {
    let out = project
        .standin
        .exec(pod, &format!("stat -c %s '{}/{file}'", pod_run_dir(id)));
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// `pod ls` names the pod with its run.
async fn pod_ls_shows(project: &PodProject, pod: &str, id: &str) {
    let ls = overbrainer(&project.training, &["pod", "ls"]).await;
    let all = text(&ls);
    assert!(ls.status.success(), "{all}");
    assert!(all.contains(pod) && all.contains(id), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_kill_9_during_the_upload_leaves_a_pod_that_pod_ls_shows_and_train_attach_deletes() {
    let project = kill_project("upload").await;
    // A train file of about 100 MB: the upload lasts long enough to be caught.
    let line = project
        .training
        .project
        .read("data/train.jsonl")
        .lines()
        .next()
        .unwrap()
        .to_owned();
    {
        let path = project.training.project.path().join("data/train.jsonl");
        let mut file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        let mut written = 0;
        while written < 100 << 20 {
            writeln!(file, "{line}").unwrap();
            written += line.len() + 1;
        }
    }
    let id = tokio::task::block_in_place(|| killed_at_tar(&project, "-xf", None));
    let pod = pod_id(&project);
    // The upload was cut: the pod holds less of the train file than this machine.
    let local = std::fs::metadata(project.training.runs().join(&id).join("train.jsonl"))
        .unwrap()
        .len();
    let remote = tokio::task::block_in_place(|| size_on_pod(&project, &pod, &id, "train.jsonl"));
    assert!(remote.is_none_or(|r| r < local), "{remote:?} of {local}");
    assert_eq!(project.training.record(&id)["state"], "starting");
    // A later command shows the pod with its run; `train attach` fails the start and
    // deletes the pod.
    pod_ls_shows(&project, &pod, &id).await;
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
async fn runpod_kill_9_during_retrieval_takes_nothing_half_retrieved_as_done_and_attach_completes_it()
 {
    const BLOB: &str = "output/blob.bin";
    let project = kill_project("retrieval").await;
    // A big output (a real model's size, in small): the retrieval lasts long enough.
    let big_output = |id: &str| {
        let pod = pod_id(&project);
        let out = project.standin.exec(
            &pod,
            &format!(
                "mkdir -p '{dir}/output' && head -c 150M /dev/urandom >'{dir}/{BLOB}'",
                dir = pod_run_dir(id)
            ),
        );
        assert!(out.status.success(), "{out:?}");
    };
    let id = tokio::task::block_in_place(|| killed_at_tar(&project, "-cf", Some(&big_output)));
    let pod = pod_id(&project);
    let run = project.training.runs().join(&id);
    // Nothing of the cut download counts: the run is not done, no result is in place.
    let record = project.training.record(&id);
    assert_eq!(record["state"], "running", "{record}");
    assert_eq!(record["retrieved"], false, "{record}");
    assert!(!run.join(BLOB).exists());
    assert!(!run.join("output/adapter_model.safetensors").exists());
    let pod_record = pod_state(&project).unwrap();
    assert_eq!(pod_record["retrieved"], false, "{pod_record}");
    // The pod waits within its retrieve grace: `pod ls` shows it, `train attach`
    // retrieves everything, verified, and deletes it.
    pod_ls_shows(&project, &pod, &id).await;
    let output = overbrainer(&project.training, &["train", "attach", &id]).await;
    let all = text(&output);
    assert!(output.status.success(), "{all}");
    crate::training::assert_trained_run(&project.training, &id);
    assert_eq!(std::fs::metadata(run.join(BLOB)).unwrap().len(), 150 << 20);
    let pod_record = pod_state(&project).unwrap();
    assert_eq!(pod_record["state"], "deleted", "{pod_record}");
    // No staging directory of the cut download is left behind.
    let left: Vec<String> = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".ob-download-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_clean(&project);
}
