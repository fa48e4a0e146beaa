//! Tests of `runpod::bootstrap`: the script, the `args` that start it however Runpod
//! splits them, the job environment's writer and its secrets filter, and the job's
//! sourcing of it, each run by the real bash (or `sh`).

#![allow(clippy::disallowed_methods, reason = "tests run the real bash and sh")]

use std::process::Command;

use super::*;

#[test]
fn the_bootstrap_passes_shellcheck() {
    crate::exec::shellcheck::assert_passes_bash(
        &script("/workspace/runs/r_1 x", "r_1", "/opt/venv"),
        "",
    );
}

#[test]
fn the_watchdog_and_the_job_environment_travel_whole_inside_the_bootstrap() {
    let rendered = script("/workspace/runs/r_1", "r_1", "/opt/venv");
    assert!(rendered.contains(WATCHDOG));
    assert!(rendered.contains(JOB_ENV));
    assert!(rendered.contains(IMAGE_CHECK));
    assert!(rendered.contains("venv='/opt/venv'\n"), "{rendered}");
    assert!(!WATCHDOG.lines().any(|l| l == DELIMITER));
    assert!(
        rendered.contains("run_dir='/workspace/runs/r_1'\n"),
        "{rendered}"
    );
}

#[test]
fn args_are_three_words_however_they_are_split_and_write_the_script_to_run() {
    let run_dir = "/workspace/runs/r_1 it's";
    let args = args(run_dir, "r_1", "/opt/venv");
    // By whitespace, or as a shell splits words: no quote, no backslash, two spaces.
    let words: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(words.len(), 3, "{args}");
    assert_eq!(words[..2], ["bash", "-c"]);
    assert!(
        !args.contains(['\'', '"', '\\', '\n', '\t']) && args.matches(' ').count() == 2,
        "{args}"
    );
    // The word, run by bash with the bootstrap's path moved to a temporary directory
    // and without its last step (running the bootstrap), writes exactly the script.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sub/bootstrap.sh");
    let parent = std::path::Path::new(BOOTSTRAP_FILE).parent().unwrap();
    let word = words[2]
        .replace(&format!("&&exec${{IFS}}bash${{IFS}}{BOOTSTRAP_FILE}"), "")
        .replace(BOOTSTRAP_FILE, &file.display().to_string())
        .replace(
            &parent.display().to_string(),
            &file.parent().unwrap().display().to_string(),
        );
    assert!(!word.contains("/etc/"), "{word}");
    let out = Command::new("bash").args(["-c", &word]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        script(run_dir, "r_1", "/opt/venv")
    );
}

/// This machine's `tool`, when it has one on `PATH`.
fn here(tool: &str) -> Option<String> {
    let found = Command::new("bash")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .unwrap();
    let path = String::from_utf8_lossy(&found.stdout).trim().to_owned();
    path.starts_with('/').then_some(path)
}

/// Runs [`IMAGE_CHECK`]'s `image_lacks venv` with only `tools` (links to this
/// machine's) on `PATH`; what it names, as the client reads the bootstrap's line.
fn image_lacks_with(tools: &[&str], venv: &std::path::Path) -> Option<Vec<String>> {
    let bin = tempfile::tempdir().unwrap();
    for tool in tools {
        std::os::unix::fs::symlink(here(tool).unwrap(), bin.path().join(tool)).unwrap();
    }
    let out = Command::new(here("bash").unwrap())
        .env_clear()
        .env("PATH", bin.path())
        .arg("-c")
        .arg(format!("set -u\n{IMAGE_CHECK}image_lacks \"$1\""))
        .arg("bash")
        .arg(venv)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(line.is_empty() || line.starts_with(IMAGE_LACKS), "{line}");
    image_lacks(&format!("2026-12-05T22:00:00Z bootstrap: {line}"))
}

#[test]
fn the_image_check_names_every_missing_tool_and_axolotl_in_the_venv_as_the_client_reads_it() {
    crate::exec::shellcheck::assert_passes_bash(IMAGE_CHECK, "");
    let venv = tempfile::tempdir().unwrap();
    let in_venv = format!("axolotl in {}", venv.path().display());
    // sshd counts when it is at /usr/sbin/sshd, whatever PATH says.
    let sshd_fixed = std::path::Path::new("/usr/sbin/sshd").is_file();
    let counts = |t: &str, on_path: &[&str]| on_path.contains(&t) || (t == "sshd" && sshd_fixed);
    let all: Vec<&str> = REQUIRED_TOOLS
        .iter()
        .copied()
        .filter(|t| here(t).is_some())
        .collect();
    let missing = |on_path: &[&str], axolotl: bool| -> Option<Vec<String>> {
        let mut names: Vec<String> = REQUIRED_TOOLS
            .iter()
            .filter(|t| !counts(t, on_path))
            .map(|t| (*t).to_owned())
            .collect();
        if !axolotl {
            names.push(in_venv.clone());
        }
        (!names.is_empty()).then_some(names)
    };
    // No bin/axolotl: Axolotl is named with the venv, after the tools.
    assert_eq!(image_lacks_with(&all, venv.path()), missing(&all, false));
    std::fs::create_dir(venv.path().join("bin")).unwrap();
    let axolotl = venv.path().join("bin/axolotl");
    std::fs::write(&axolotl, "#!/bin/sh\n").unwrap();
    // Not executable: still missing.
    assert_eq!(image_lacks_with(&all, venv.path()), missing(&all, false));
    std::fs::set_permissions(
        &axolotl,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    assert_eq!(image_lacks_with(&all, venv.path()), missing(&all, true));
    // Without curl and tar.
    let fewer: Vec<&str> = all
        .iter()
        .copied()
        .filter(|t| !["curl", "tar"].contains(t))
        .collect();
    let named = image_lacks_with(&fewer, venv.path()).expect("curl and tar named");
    assert!(
        named.contains(&"curl".to_owned()) && named.contains(&"tar".to_owned()),
        "{named:?}"
    );
    assert_eq!(Some(named), missing(&fewer, true));
}

#[test]
fn only_the_bootstraps_line_names_missing_items_and_only_known_ones() {
    let line = |rest: &str| format!("2026-12-05T22:00:00Z bootstrap: {IMAGE_LACKS}{rest}");
    assert_eq!(
        image_lacks(&line("sshd, axolotl in /opt/venv\n")),
        Some(vec!["sshd".to_owned(), "axolotl in /opt/venv".to_owned()])
    );
    assert_eq!(
        image_lacks(&line(
            "rm -rf /, sshd, axolotl in relative, axolotl in /a b"
        )),
        Some(vec!["sshd".to_owned()])
    );
    assert_eq!(image_lacks(&line("nothing known")), None);
    assert_eq!(image_lacks(&format!("{IMAGE_LACKS}sshd")), None);
    assert_eq!(
        image_lacks("bootstrap: starting sshd with the pinned host key"),
        None
    );
}

/// The pod's environment: what the image and Runpod set, the secrets among them.
const POD_ENV: &[(&str, &str)] = &[
    ("PATH", "/opt/image/bin:/usr/local/bin:/usr/bin:/bin"),
    (
        "LD_LIBRARY_PATH",
        "/usr/local/cuda/lib64:/usr/local/nvidia/lib64",
    ),
    ("CUDA_VERSION", "12.8.1"),
    ("HF_HOME", "/workspace/.cache/huggingface"),
    ("OB_ODD", "it's \"quoted\" $HOME `x`\nand a second line\\"),
    ("RUNPOD_POD_ID", "sp000000000001"),
    ("RUNPOD_API_KEY", "rpp_CANARY1Qz8Wm4Xv7Kt2Rb5Nd9Lc3Hf6Js0Gp"),
    (
        "OVERBRAINER_HOST_KEY",
        "LS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZ",
    ),
    ("OVERBRAINER_RUN_ID", "r_1"),
    ("HF_TOKEN", "hf_CANARYt5Yq2Wn8Zr4Xm1Vk7Lb3Hd9Pc6Js"),
    ("wandb_api_key", "CANARYwb6Tq1Zm8Xr3Vn5Kd2Lh9Pf4Jc7Gs"),
    ("JUPYTER_PASSWORD", "CANARYjp3Wq7Zx2Kt9Vm5Lb1Nd8Hr4Pf6Js"),
    ("MY_COPY", "Bearer rpp_CANARY1Qz8Wm4Xv7Kt2Rb5Nd9Lc3Hf6Js0Gp"),
    ("SHORT_KEY", "1"),
];

/// The secrets of [`POD_ENV`]: none may be written.
const SECRETS: &[&str] = &[
    "rpp_CANARY1Qz8Wm4",
    "LS0tLS1CRUdJTiBP",
    "hf_CANARYt5Yq2",
    "CANARYwb6Tq1Zm8",
    "CANARYjp3Wq7Zx2",
];

#[test]
fn the_job_environment_keeps_the_images_variables_and_never_a_secret() {
    crate::exec::shellcheck::assert_passes_bash(JOB_ENV, "");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job.env");
    let out = Command::new("/bin/bash")
        .env_clear()
        .envs(POD_ENV.iter().copied())
        .arg("-c")
        .arg(format!("set -u\n{JOB_ENV}write_job_env \"$1\""))
        .arg("bash")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(&file).unwrap();
    for secret in SECRETS {
        assert!(!written.contains(secret), "{secret} in:\n{written}");
    }
    for name in [
        "OVERBRAINER_RUN_ID=",
        "MY_COPY=",
        "SHORT_KEY=",
        "PWD=",
        "SHLVL=",
    ] {
        assert!(
            !written.contains(&format!("export {name}")),
            "{name} in:\n{written}"
        );
    }
    // Sourced by POSIX sh from nothing, it gives back every kept value exactly.
    let out = Command::new("sh")
        .env_clear()
        .arg("-c")
        .arg(". \"$1\" && env")
        .arg("sh")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = String::from_utf8_lossy(&out.stdout);
    for (name, value) in &POD_ENV[..6] {
        assert!(env.contains(&format!("{name}={value}\n")), "{name}:\n{env}");
    }
}

#[test]
fn a_job_sources_the_environment_and_without_it_ends_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job.env");
    let line = source_job_env().replace(JOB_ENV_FILE, &file.display().to_string());
    // SC1091: the file is written on the pod, not here.
    crate::exec::shellcheck::assert_passes(&line, "SC1091");
    let run = || {
        Command::new("sh")
            .env_clear()
            .arg("-c")
            .arg(format!("{line}echo \"$OB_IMAGE_CANARY\""))
            .output()
            .unwrap()
    };
    let out = run();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("which the pod's bootstrap writes"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(&file, "export OB_IMAGE_CANARY='from the image'\n").unwrap();
    let out = run();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from the image\n");
}
