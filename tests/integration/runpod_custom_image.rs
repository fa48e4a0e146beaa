//! A custom `image` that lacks what POD-74 requires (issue 13), through `train` on the
//! stand-in whose pods are real containers: images built here from the local pod image,
//! one without `sshd` and one whose venv holds no Axolotl. The pod's bootstrap names
//! what is missing in its log, overbrainer reads it there while it waits for the pod,
//! deletes the pod and fails the run naming the image and every missing item, without
//! trying the next GPU type (the image lacks the same on every one) and without waiting
//! out the readiness bound. No secret reaches the error.

use crate::engines::container_env;
use crate::runpod_standin::POD_KEY;
use crate::runpod_train::{
    PodProject, assert_clean, assert_key_in_no_file, pod_project, secret_fragments, text,
};

/// The local pod image with `steps` run on top (`RUN` lines of a Containerfile), built
/// once per content: its tag is the hash of the base and the steps.
fn derived_image(name: &str, steps: &[&str]) -> String {
    let base = container_env().get("POD_IMAGE").to_owned();
    let containerfile = format!("FROM {base}\n{}\n", steps.join("\n"));
    let key = {
        use sha2::Digest as _;
        let digest = sha2::Sha256::digest(containerfile.as_bytes());
        digest.iter().take(6).fold(String::new(), |mut hex, b| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{b:02x}");
            hex
        })
    };
    let image = format!("localhost/overbrainer-test/{name}:{key}");
    let podman = container_env().shims().join("podman");
    let exists = crate::util::output_within(
        std::process::Command::new(&podman).args(["image", "exists", &image]),
        std::time::Duration::from_secs(120),
    )
    .expect("podman image exists");
    if exists.status.success() {
        return image;
    }
    let context = tempfile::tempdir().unwrap();
    std::fs::write(context.path().join("Containerfile"), &containerfile).unwrap();
    let built = crate::util::output_within(
        std::process::Command::new(&podman)
            .args([
                "build",
                "--pull=never",
                "--network=none",
                "-q",
                "-t",
                &image,
            ])
            .arg("-f")
            .arg(context.path().join("Containerfile"))
            .arg(context.path()),
        std::time::Duration::from_secs(300),
    )
    .expect("podman build");
    assert!(
        built.status.success(),
        "podman build of {image}: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    image
}

/// `train` on a `pod` target with two GPU types whose pods run `image` (and whose
/// `venv` is `venv` when given): the project and the command's output, within
/// [`crate::training::DEADLINE`].
async fn train_on(image: &str, venv: Option<&str>) -> (PodProject, std::process::Output) {
    let mut project = pod_project(r#"["A", "B"]"#).await;
    // A rule second of 200 ms: the watchdog's tick (12 s), after which it deletes the
    // failed pod itself, leaves a loaded machine time to read the bootstrap's line
    // first; the readiness bound (3 minutes) is never waited out when it is read.
    for (name, value) in &mut project.training.extra_env {
        if name == "OVERBRAINER_TEST_SECOND_MS" {
            "200".clone_into(value);
        }
    }
    {
        let mut state = project.standin.state();
        state.container_output = true;
        state
            .runner
            .as_mut()
            .expect("a stand-in with real pods")
            .images
            .push(image.to_owned());
    }
    let config = project.training.project.read("overbrainer.toml");
    // The pod target comes last; other targets may name the same venv.
    let (head, pod) = config
        .split_once("[targets.pod]\n")
        .unwrap_or_else(|| panic!("no pod target in:\n{config}"));
    let stock = format!("image = \"{}\"\n", container_env().get("POD_IMAGE"));
    assert!(pod.contains(&stock), "{config}");
    let mut pod = pod.replacen(&stock, &format!("image = \"{image}\"\n"), 1);
    if let Some(venv) = venv {
        let stock = format!(
            "venv = \"{}\"\n",
            crate::training::training_env().venv.display()
        );
        assert!(pod.contains(&stock), "{config}");
        pod = pod.replacen(&stock, &format!("venv = \"{venv}\"\n"), 1);
    }
    let config = format!("{head}[targets.pod]\n{pod}");
    project.training.project.write("overbrainer.toml", &config);
    let output = tokio::task::block_in_place(|| {
        let child = project.training.spawn(&["train", "--target", "pod"]);
        crate::training::finish(child)
    });
    (project, output)
}

/// The run failed naming `image` and `lacks`, one pod was created and deleted, the
/// second GPU type was never tried, nothing is left and no secret is in the output.
fn assert_refused(project: &PodProject, output: &std::process::Output, image: &str, lacks: &str) {
    let all = text(output);
    assert!(!output.status.success(), "{all}");
    for part in [
        format!("the image `{image}` of `targets.pod.image` lacks {lacks}:"),
        "exec \"$@\"".to_owned(),
        "the pod was deleted and no other GPU type was tried".to_owned(),
    ] {
        assert!(all.contains(&part), "{part} not in:\n{all}");
    }
    {
        let state = project.standin.state();
        let creates: Vec<&str> = state
            .requests
            .iter()
            .filter(|(method, path, _)| method == "POST" && path == "/v2/pods")
            .map(|(_, _, body)| body.as_str())
            .collect();
        assert_eq!(creates.len(), 1, "{creates:?}");
        assert!(creates[0].contains("\"id\":\"A\""), "{}", creates[0]);
        assert_eq!(state.pods.len(), 1);
        assert!(state.pods[0].deleted.is_some(), "the pod was not deleted");
    }
    let ids = project.training.run_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let record = project.training.record(&ids[0]);
    assert_eq!(record["state"], "failed", "{record}");
    // The bootstrap's line came through the pod's log stream into its copy.
    let copy = std::fs::read_to_string(
        project
            .training
            .runs()
            .join(&ids[0])
            .join(overbrainer::runpod::logs::copy::LOG_FILE),
    )
    .expect("the pod's log copied while it booted");
    assert!(
        copy.contains(overbrainer::runpod::bootstrap::IMAGE_LACKS),
        "{copy}"
    );
    let mut secrets = secret_fragments(project);
    secrets.push(POD_KEY[4..24].to_owned());
    for secret in &secrets {
        assert!(
            !all.contains(secret.as_str()),
            "a secret in the output:\n{all}"
        );
    }
    assert_key_in_no_file(project);
    assert_clean(project);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_custom_image_without_sshd_is_refused_with_its_pod_deleted() {
    let image = derived_image("pod-no-sshd", &["RUN rm -f /usr/sbin/sshd"]);
    let (project, output) = train_on(&image, None).await;
    assert_refused(&project, &output, &image, "`sshd`");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runpod_custom_image_without_axolotl_in_its_venv_is_refused_with_its_pod_deleted() {
    // A venv with its Python and no Axolotl.
    let image = derived_image(
        "pod-no-axolotl",
        &["RUN mkdir -p /opt/venv/bin && ln -s /usr/bin/python3 /opt/venv/bin/python"],
    );
    let (project, output) = train_on(&image, Some("/opt/venv")).await;
    assert_refused(&project, &output, &image, "Axolotl in `/opt/venv`");
}
