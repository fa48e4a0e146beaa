//! Key files other users of the machine could read (issue 22), through the real binary: a
//! `.env` holding a secret at mode 644 is warned about once by every command, with the
//! fix, and `config check` shows it with its problems; `init`'s advice makes it private.

use std::os::unix::fs::PermissionsExt as _;

use crate::util::{TestProject, output_text};

/// A provider key that must never appear in any output.
const KEY: &str = "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";

const CONFIG: &str = r#"[project]
name = "p"

[providers.openrouter]
protocol = "openai"
"#;

fn with_dotenv(config: &str, mode: u32) -> TestProject {
    let project = TestProject::with_config(config);
    project.write(
        ".env",
        &format!("OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY={KEY}\n"),
    );
    set_mode(&project, mode);
    project
}

fn set_mode(project: &TestProject, mode: u32) {
    std::fs::set_permissions(
        project.path().join(".env"),
        std::fs::Permissions::from_mode(mode),
    )
    .unwrap();
}

fn run(project: &TestProject, args: &[&str]) -> (std::process::Output, String) {
    let output = project.cmd().args(args).output().unwrap();
    let text = output_text(&output);
    assert!(!text.contains(KEY), "the key leaked: {text}");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stderr)
}

#[test]
fn regression_a_dotenv_readable_by_others_is_warned_once_by_every_command() {
    let project = with_dotenv(CONFIG, 0o644);
    let path = project.path().join(".env");
    for args in [
        &["config", "check"][..],
        &["history"][..],
        &["runs", "ls"][..],
    ] {
        let (output, stderr) = run(&project, args);
        assert!(output.status.success(), "{args:?}: {stderr}");
        let warning = format!("`{}` holds secrets", path.display());
        assert_eq!(stderr.matches(&warning).count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("(mode 644); run `chmod 600 {}`", path.display())),
            "{args:?}: {stderr}"
        );
    }
    // Only what the group may read counts, and the fix silences it.
    set_mode(&project, 0o640);
    let (_, stderr) = run(&project, &["config", "check"]);
    assert!(
        stderr.contains("the members of its group can read it (mode 640)"),
        "{stderr}"
    );
    set_mode(&project, 0o600);
    let (output, stderr) = run(&project, &["config", "check"]);
    assert!(output.status.success());
    assert!(!stderr.contains("holds secrets"), "{stderr}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn config_check_shows_the_dotenv_mode_with_the_problems_of_an_invalid_config() {
    let project = with_dotenv(&format!("{CONFIG}\n[pipeline]\nconcurrency = 0\n"), 0o604);
    let (output, stderr) = run(&project, &["config", "check"]);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("pipeline.concurrency"), "{stderr}");
    assert!(
        stderr.contains("every other user of this machine"),
        "{stderr}"
    );
    assert!(stderr.contains("chmod 600"), "{stderr}");
}

#[test]
fn a_dotenv_without_secrets_is_not_warned_about() {
    let project = TestProject::with_config(CONFIG);
    project.write(
        ".env",
        "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL=http://127.0.0.1:9\n# OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY=sk-x\n",
    );
    set_mode(&project, 0o644);
    let (output, stderr) = run(&project, &["config", "check"]);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("holds secrets"), "{stderr}");
}

#[test]
fn init_ends_with_the_private_copy_and_the_copy_it_names_is_private() {
    let project = TestProject::empty();
    let output = project.cmd().arg("init").output().unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.contains("`install -m 600 .env.example .env`"),
        "{last}"
    );
    // The command as the user types it, in a shell whose umask would make a copy 666.
    let status = std::process::Command::new("sh")
        .args(["-c", "umask 000 && install -m 600 .env.example .env"])
        .current_dir(project.path())
        .status()
        .expect("sh and coreutils `install` (apt-get install coreutils)");
    assert!(status.success());
    let mode = std::fs::metadata(project.path().join(".env"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(
        readme.contains("install -m 600 .env.example .env"),
        "the README's quickstart makes `.env` readable by others"
    );
}
