//! `train` with `training.upload_base_model` on the SSH target of a real `sshd`, real
//! Axolotl on the CPU (issue 21): the first run uploads the tiny model from the project
//! into `<run dir>/base_model/` through the target's blob cache and trains on it; a
//! second run sends under 1% of the first's bytes, hard-linking the cached blobs.

use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

use crate::sshd::Options;
use crate::training::{Setup, Training, assert_trained_run, finish, training_env};
use crate::util::output_text;

/// Copies the regular files of `from` into `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The byte counts of the `train: uploading the base model: ...` line of `text`:
/// the tree's bytes, those already on the target, those sent.
pub(crate) fn summary(text: &str) -> (u64, u64, u64) {
    let line = text
        .lines()
        .find(|l| l.contains("train: uploading the base model: "))
        .unwrap_or_else(|| panic!("no upload summary in:\n{text}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    // files, bytes, present, sending
    assert_eq!(numbers.len(), 4, "{line}");
    (numbers[1], numbers[2], numbers[3])
}

/// Bytes of the regular files under `dir` with their inode numbers, by relative path.
fn inodes(dir: &Path, prefix: &Path, out: &mut Vec<(std::path::PathBuf, u64, u64)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        let relative = prefix.join(entry.file_name());
        if meta.is_dir() {
            inodes(&entry.path(), &relative, out);
        } else {
            out.push((relative, meta.ino(), meta.nlink()));
        }
    }
}

/// Copies the tiny model into the project's `models/tiny` (its `base_model` in a
/// [`Setup`] with `base_model: Some("models/tiny")`) and sets `upload_base_model`.
pub(crate) fn upload_tiny_model(training: &Training) {
    upload_tiny_model_at(training, "models/tiny");
}

/// [`upload_tiny_model`] with the copy at `dir` in the project (the project's
/// `base_model`).
fn upload_tiny_model_at(training: &Training, dir: &str) {
    copy_tree(&training_env().model, &training.project.path().join(dir));
    let config = training.project.read("overbrainer.toml").replace(
        "merge = false\n",
        "merge = false\nupload_base_model = true\n",
    );
    training.project.write("overbrainer.toml", &config);
}

/// A training project with the SSH target whose base model is a copy of the tiny model
/// in the project's `models/tiny`, uploaded (`upload_base_model`), `max_steps` steps.
fn uploading(max_steps: u32) -> Training {
    let training = Training::new(&Setup {
        max_steps,
        merge: false,
        base_model: Some("models/tiny"),
        ssh: Some(Options::default()),
        ..Setup::default()
    });
    upload_tiny_model(&training);
    training
}

#[test]
fn a_second_ssh_run_with_an_uploaded_base_model_sends_under_one_percent_and_links_the_blobs() {
    let training = uploading(2);
    let workdir = training.project.home().join("remote-work");

    let train = || {
        let output = training
            .cmd()
            .args(["train", "--target", "remote"])
            .output()
            .unwrap();
        let text = output_text(&output);
        assert!(output.status.success(), "{text}");
        text
    };
    let first = train();
    let (bytes, present, sent) = summary(&first);
    assert!(bytes > 100_000, "{first}");
    assert_eq!(present, 0, "{first}");
    assert!(sent > 100_000, "{first}");
    // The summary comes before the job runs.
    let at = |needle: &str| first.find(needle).unwrap_or(usize::MAX);
    assert!(
        at("train: uploading the base model: ") < at("train: step "),
        "{first}"
    );

    let second = train();
    let (bytes2, present2, sent2) = summary(&second);
    assert_eq!(bytes2, bytes, "{second}");
    assert_eq!(present2, bytes, "{second}");
    assert!(sent2 * 100 < sent, "{second}");

    let ids = training.run_ids();
    assert_eq!(ids.len(), 2, "{ids:?}");
    for id in &ids {
        assert_trained_run(&training, id);
        // The job trained on the upload: `base_model` names the run's own copy.
        let yaml = std::fs::read_to_string(training.runs().join(id).join("axolotl.yaml")).unwrap();
        assert!(yaml.contains("base_model: \"./base_model\""), "{yaml}");
        assert!(workdir.join(id).join("base_model/config.json").is_file());
    }
    // Both runs' files are hard links of one cached blob each, equal to the model.
    let mut one = Vec::new();
    let mut two = Vec::new();
    inodes(
        &workdir.join(&ids[0]).join("base_model"),
        Path::new(""),
        &mut one,
    );
    inodes(
        &workdir.join(&ids[1]).join("base_model"),
        Path::new(""),
        &mut two,
    );
    one.sort();
    two.sort();
    assert!(!one.is_empty());
    assert_eq!(one.len(), two.len());
    for ((path, inode, links), (path2, inode2, _)) in one.iter().zip(&two) {
        assert_eq!(path, path2);
        assert_eq!(inode, inode2, "{} is not linked", path.display());
        assert!(*links >= 3, "{} has {links} links", path.display());
        assert_eq!(
            std::fs::read(workdir.join(&ids[1]).join("base_model").join(path)).unwrap(),
            std::fs::read(training_env().model.join(path)).unwrap()
        );
    }
    // The digests of the project's model are kept for the next run.
    assert!(
        training
            .project
            .path()
            .join(".overbrainer/digests.json")
            .is_file()
    );
}

// A run stopped on the SSH target resumes there: the resume's settings equal the stopped
// run's though its `base_model` names the stopped run's own upload, and the new run
// gets its base model from the blob cache (nothing sent) in its own directory.
#[test]
fn a_stopped_run_with_an_uploaded_base_model_resumes_on_the_ssh_target() {
    let training = uploading(6);
    let workdir = training.project.home().join("remote-work");
    let mut follower = training.spawn(&["train", "--target", "remote"]);
    let id = training.wait_running(&mut follower);
    let stop = training
        .cmd()
        .args(["train", "stop", &id])
        .output()
        .unwrap();
    assert!(stop.status.success(), "{}", output_text(&stop));
    let output = finish(follower);
    let text = output_text(&output);
    let record = training.record(&id);
    assert_eq!(record["state"], "stopped", "{record}\n{text}");

    let resumed = training
        .cmd()
        .args(["train", "--resume-from", &id, "--target", "remote"])
        .output()
        .unwrap();
    let text = output_text(&resumed);
    assert!(resumed.status.success(), "{text}");
    let (bytes, present, sent) = summary(&text);
    assert_eq!((present, sent), (bytes, 0), "{text}");
    let new_id = training.run_ids().into_iter().find(|i| *i != id).unwrap();
    assert_trained_run(&training, &new_id);
    assert_eq!(training.record(&new_id)["resumed_from"], id.as_str());
    let yaml = std::fs::read_to_string(training.runs().join(&new_id).join("axolotl.yaml")).unwrap();
    assert!(yaml.contains("base_model: \"./base_model\""), "{yaml}");
    assert!(
        workdir
            .join(&new_id)
            .join("base_model/config.json")
            .is_file()
    );
}

// On a local target the project's model directory is used where it is: nothing is
// uploaded, and the run directory's `base_model` is a symbolic link to it, which
// `base_model` names relatively. Axolotl 0.19 guesses a model's family from the text
// of `base_model` (`mpt` in it refuses gradient checkpointing): the model's own
// directory here is `mpt-attempts/tiny`, which an absolute path would show it.
#[test]
fn a_local_run_with_upload_base_model_uses_the_directory_in_place() {
    let training = Training::new(&Setup {
        max_steps: 2,
        merge: false,
        base_model: Some("mpt-attempts/tiny"),
        ..Setup::default()
    });
    upload_tiny_model_at(&training, "mpt-attempts/tiny");
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(!text.contains("uploading the base model"), "{text}");
    let id = &training.run_ids()[0];
    assert_trained_run(&training, id);
    let run = training.runs().join(id);
    let yaml = std::fs::read_to_string(run.join("axolotl.yaml")).unwrap();
    assert!(yaml.contains("base_model: \"./base_model\""), "{yaml}");
    let model = std::path::absolute(training.project.path().join("mpt-attempts/tiny")).unwrap();
    assert_eq!(std::fs::read_link(run.join("base_model")).unwrap(), model);
}
