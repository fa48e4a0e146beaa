//! Dynamic completion as a user's shell drives it (CLI-12): the bash script calls the binary
//! back with `COMPLETE=bash`, the words of the line after `--` and the index of the word
//! being completed in `_CLAP_COMPLETE_INDEX`; candidates come back one per line. And
//! `--help` claims only the commands this build has.

use crate::util::TestProject;

/// The candidates for word `index` of `words` (`words[0]` is the program), run in `cwd`.
fn complete(
    project: &TestProject,
    cwd: &std::path::Path,
    words: &[&str],
    index: usize,
) -> Vec<String> {
    let output = crate::util::overbrainer(&project.home())
        .current_dir(cwd)
        .env("COMPLETE", "bash")
        .env("_CLAP_IFS", "\n")
        .env("_CLAP_COMPLETE_INDEX", index.to_string())
        .arg("--")
        .args(words)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        crate::util::output_text(&output)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn project() -> TestProject {
    let project = TestProject::init();
    let mut config = project.read("overbrainer.toml");
    config.push_str(
        "\n[[topics]]\nname = \"second_topic\"\nsubtopics = 1\nquestions_per_subtopic = 1\n\n[targets.gpu_box]\nkind = \"local\"\n",
    );
    project.write("overbrainer.toml", &config);
    project.write(
        "runs/20260101-000000-abcd/run.json",
        "{\"state\": \"succeeded\", \"target\": \"gpu_box\"}",
    );
    project
}

#[test]
fn topic_arguments_complete_topic_names_in_the_current_directory() {
    let project = project();
    for command in ["subtopics", "questions", "answers", "split"] {
        let words = ["overbrainer", command, "--topic", ""];
        let names = complete(&project, project.path(), &words, 3);
        assert!(
            names.iter().any(|n| n == "rust_ownership"),
            "{command}: {names:?}"
        );
        assert!(
            names.iter().any(|n| n == "second_topic"),
            "{command}: {names:?}"
        );
    }
    let names = complete(
        &project,
        project.path(),
        &["overbrainer", "subtopics", "--topic", "sec"],
        3,
    );
    assert_eq!(names, ["second_topic"]);
}

#[test]
fn completion_reads_the_project_of_a_typed_dash_c() {
    let project = project();
    let elsewhere = project.home();
    let dir = project.path().to_str().unwrap();
    let names = complete(
        &project,
        &elsewhere,
        &["overbrainer", "-C", dir, "subtopics", "--topic", ""],
        5,
    );
    assert!(names.iter().any(|n| n == "second_topic"), "{names:?}");
    // Without `-C`, the other directory has no project: nothing to offer.
    let names = complete(
        &project,
        &elsewhere,
        &["overbrainer", "subtopics", "--topic", ""],
        3,
    );
    assert!(!names.iter().any(|n| n == "second_topic"), "{names:?}");
}

#[test]
fn targets_and_run_ids_complete_from_the_project() {
    let project = project();
    let targets = complete(
        &project,
        project.path(),
        &["overbrainer", "train", "--target", ""],
        3,
    );
    assert!(targets.iter().any(|t| t == "gpu_box"), "{targets:?}");
    for words in [
        &["overbrainer", "train", "attach", ""][..],
        &["overbrainer", "train", "stop", ""][..],
        &["overbrainer", "train", "cancel", ""][..],
        &["overbrainer", "runs", "logs", ""][..],
    ] {
        let ids = complete(&project, project.path(), words, 3);
        assert!(
            ids.iter().any(|i| i == "20260101-000000-abcd"),
            "{words:?}: {ids:?}"
        );
    }
    let ids = complete(
        &project,
        project.path(),
        &["overbrainer", "train", "--resume-from", ""],
        3,
    );
    assert!(ids.iter().any(|i| i == "20260101-000000-abcd"), "{ids:?}");
}

#[test]
fn train_merge_completes_only_the_runs_whose_merge_failed() {
    let project = project();
    project.write(
        "runs/20260102-000000-beef/run.json",
        "{\"state\": \"merge_failed\", \"target\": \"gpu_box\"}",
    );
    let ids = complete(
        &project,
        project.path(),
        &["overbrainer", "train", "merge", ""],
        3,
    );
    let runs = |ids: Vec<String>| -> Vec<String> {
        ids.into_iter().filter(|i| !i.starts_with('-')).collect()
    };
    assert_eq!(runs(ids), ["20260102-000000-beef"]);
    let all = complete(
        &project,
        project.path(),
        &["overbrainer", "train", "attach", ""],
        3,
    );
    assert_eq!(runs(all).len(), 2);
}

#[test]
fn help_claims_only_what_this_build_does() {
    let project = TestProject::empty();
    let output = crate::util::overbrainer(&project.home())
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    // No Slurm target yet (issue 19).
    assert!(!help.to_lowercase().contains("slurm"), "Slurm in:\n{help}");
    // `export` landed with issue 14, `push` with issue 16, `pod` with issue 12,
    // `compare` with issue 15, `tui` with issue 17.
    for present in ["export ", "push ", "pod ", "compare ", "tui "] {
        assert!(help.contains(present), "no `{present}` in:\n{help}");
    }
}

// Tester defect 4: `run --help` and the command list say that `run` trains when
// `[training]` is set, after the dataset stages.
#[test]
fn regression_run_help_says_it_trains_when_training_is_set() {
    let project = TestProject::empty();
    for args in [&["run", "--help"][..], &["--help"][..]] {
        let output = crate::util::overbrainer(&project.home())
            .args(args)
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{help}");
        assert!(
            help.contains("then, when `[training]` is set, train the child"),
            "{args:?}:\n{help}"
        );
    }
}
