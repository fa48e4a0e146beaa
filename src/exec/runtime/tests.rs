//! Tests of the runtime: native prelude and commands, container command lines, GPU
//! flags, secrets on standard input.
#![allow(
    clippy::disallowed_methods,
    reason = "tests run real programs and read the test environment"
)]

use super::*;

fn spec(runtime: JobRuntime) -> JobSpec {
    JobSpec {
        run_id: "r1".into(),
        container_suffix: None,
        run_dir: "/w/r1".into(),
        hf_home: "~/ob/.hf-cache".into(),
        runtime,
        secret_names: vec!["HF_TOKEN".into()],
        env: vec![("FIXED_SETTING".into(), "on 1".into())],
    }
}

#[test]
fn shell_path_expands_home_only() {
    assert_eq!(shell_path("~/a b"), "\"$HOME\"/'a b'");
    assert_eq!(shell_path("~"), "\"$HOME\"");
    assert_eq!(shell_path("/x"), "'/x'");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("printf %s {}", shell_path("~/a b")))
        .env("HOME", "/home/u")
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"/home/u/a b");
}

#[test]
fn native_uses_the_venv_and_the_prelude_sets_the_environment() {
    let native = spec(JobRuntime::Native {
        venv: Some("/opt/venv/".into()),
    });
    let command = stage_command(&native, "tool", &["train", "job.yaml"]);
    assert_eq!(command, "'/opt/venv'/bin/'tool' 'train' 'job.yaml'");
    let prelude = native.prelude();
    assert!(
        prelude.starts_with("PATH='/opt/venv'/bin:\"$PATH\"; export PATH\n"),
        "{prelude}"
    );
    for part in [
        "HF_HOME=\"$HOME\"/'ob/.hf-cache'; export HF_HOME\n",
        "PYTHONPATH='/w/r1'\"${PYTHONPATH:+:$PYTHONPATH}\"; export PYTHONPATH\n",
        "FIXED_SETTING='on 1'; export FIXED_SETTING\n",
    ] {
        assert!(prelude.contains(part), "{part} in {prelude}");
    }
    let from_path = spec(JobRuntime::Native { venv: None });
    assert_eq!(
        stage_command(&from_path, "tool", &["train"]),
        "'tool' 'train'"
    );
    assert!(
        !from_path
            .prelude()
            .lines()
            .any(|line| line.starts_with("PATH=")),
        "{}",
        from_path.prelude()
    );
}

/// The native prelude, run by `sh` with `HOME` and `PYTHONPATH` set: the values
/// the job's programs see.
#[test]
fn the_native_prelude_exports_what_the_programs_read() {
    let native = spec(JobRuntime::Native {
        venv: Some("~/venv".into()),
    });
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{}printenv PATH PYTHONPATH HF_HOME FIXED_SETTING",
            native.prelude()
        ))
        .env("HOME", "/home/u")
        .env("PYTHONPATH", "/old")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("/home/u/venv/bin:"), "{text}");
    assert_eq!(
        lines[1..],
        ["/w/r1:/old", "/home/u/ob/.hf-cache", "on 1"],
        "{text}"
    );
}

/// Runs `script` under `sh` with a stand-in engine (shell functions `docker` and
/// `podman`, which win over `PATH`) that prints its arguments and exits with
/// `exit`, and with `/dev/nvidia*` as this machine has it. Returns (exit code,
/// output).
fn run_with_engine(script: &str, exit: u8) -> (i32, String) {
    let engines = format!(
        "docker() {{ printf '%s|' \"$@\"; echo; return {exit}; }}\npodman() {{ docker \"$@\"; }}\n"
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{engines}{script}"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn has_nvidia_device() -> bool {
    std::fs::read_dir("/dev").is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("nvidia")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
    })
}

// Issue 11: both engines refuse the GPU flags on a machine without an NVIDIA
// device, so they are passed only where one exists; an engine failure with them
// says what the engine needs.
#[test]
fn gpu_flags_only_where_an_nvidia_device_exists_and_engine_failures_say_why() {
    let gpu = has_nvidia_device();
    for (engine, flags) in [
        (Engine::Docker, "--gpus|all|"),
        (Engine::Podman, "--device|nvidia.com/gpu=all|"),
    ] {
        let mut spec = spec(JobRuntime::Container {
            engine,
            image: "img".into(),
            tools_cache: None,
        });
        spec.secret_names.clear();
        let script = format!(
            "{}{}",
            container_prelude(engine),
            stage_command(&spec, "tool", &["train", "job.yaml"])
        );
        let (code, text) = run_with_engine(&script, 0);
        assert_eq!(code, 0, "{text}");
        assert!(
            text.starts_with("run|--rm|--name|overbrainer-r1|"),
            "{text}"
        );
        assert_eq!(text.contains(flags), gpu, "{engine:?}: {text}");
        assert!(text.contains("|img|tool|train|job.yaml|"), "{text}");
        // The job's own exit code passes through, without a word from us.
        let (code, text) = run_with_engine(&script, 3);
        assert_eq!(code, 3, "{text}");
        assert!(!text.contains("overbrainer:"), "{text}");
        // The engine's own failure: explained only when GPUs were asked for.
        let (code, text) = run_with_engine(&script, 125);
        assert_eq!(code, 125, "{text}");
        assert_eq!(
            text.contains("could not start the container"),
            gpu,
            "{text}"
        );
        // With a device forced: the flags, and the explanation.
        let forced = script.replace("/dev/nvidia[0-9]*", "/dev/null");
        let (code, text) = run_with_engine(&forced, 125);
        assert_eq!(code, 125, "{text}");
        assert!(text.contains(flags), "{text}");
        let needs = match engine {
            Engine::Docker => "NVIDIA Container Toolkit",
            Engine::Podman => "CDI spec",
        };
        assert!(text.contains(needs), "{text}");
    }
}

#[test]
fn container_job_scripts_pass_shellcheck() {
    for engine in [Engine::Docker, Engine::Podman] {
        let spec = spec(JobRuntime::Container {
            engine,
            image: "img".into(),
            tools_cache: Some("/w/.cache".into()),
        });
        let script = format!(
            "set -e\n{}\n{}\n",
            stage_command(&spec, "tool", &["train", "job.yaml"]),
            stage_command(&spec, "tool", &[])
        );
        let job = spec.job(&script, Vec::new());
        let container = job.container.clone().unwrap();
        assert_eq!(container.name, "overbrainer-r1");
        for script in [job.script, super::super::engine::container_stop(&container)] {
            crate::exec::shellcheck::assert_passes(&script, "SC2016");
        }
    }
}

// Issue 11: a secret reaches the container's main process through its standard
// input and `sh` in the image, whatever its characters, and no command line.
#[test]
fn secrets_reach_the_container_on_its_standard_input() {
    let spec = spec(JobRuntime::Container {
        engine: Engine::Podman,
        image: "img".into(),
        tools_cache: None,
    });
    let command = stage_command(&spec, "printenv", &["HF_TOKEN"]);
    let value = "s3cr3t 'with' \"quotes\" $HOME `x` \\n end";
    // A stand-in engine that runs what follows the image: the real `sh` and
    // `printenv` of this machine.
    let engine = r#"podman() {
  while [ "$1" != img ]; do shift; done; shift
  [ "$1" = sh ] && [ "$2" = -c ] || return 9
  shift
  sh -c "$@"
}
"#;
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{}{engine}{command}",
            container_prelude(Engine::Podman)
        ))
        .env("HF_TOKEN", value)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{value}\n"));
    assert!(!command.contains("-e 'HF_TOKEN'"), "{command}");
    assert!(!command.contains("-e HF_TOKEN"), "{command}");
}

#[test]
fn container_has_gpus_ipc_mounts_env_and_secret_names() {
    for (engine, gpus) in [
        (Engine::Docker, "--gpus all"),
        (Engine::Podman, "--device nvidia.com/gpu=all"),
    ] {
        let spec = spec(JobRuntime::Container {
            engine,
            image: "img@sha256:1".into(),
            tools_cache: Some("/w/.cache".into()),
        });
        let command = stage_command(&spec, "tool", &["train", "job.yaml"]);
        assert!(
            command.starts_with(&format!(
                "rm -f -- \"$ob_cid\"; printf '%s\\n' \"${{HF_TOKEN}}\" | {} run ",
                engine.program()
            )),
            "{command}"
        );
        assert!(
            container_prelude(engine).contains(&format!(
                "ob_gpu_flag='{}'; ob_gpu_value='{}'",
                gpus.split(' ').next().unwrap_or_default(),
                gpus.split(' ').nth(1).unwrap_or_default()
            )),
            "{engine:?}"
        );
        for part in [
            "${ob_gpu_flag:+\"$ob_gpu_flag\" \"$ob_gpu_value\"}",
            "--name 'overbrainer-r1' --cidfile \"$ob_cid\" --stop-signal SIGINT ",
            "--ipc host",
            "-v '/w/r1':/workspace/run -w /workspace/run",
            "-e HF_HOME=/workspace/hf-cache",
            "-v '/w/.cache':/workspace/cache",
            "-e PYTHONPATH=/workspace/run",
            "-e FIXED_SETTING='on 1'",
            "printf '%s\\n' \"${HF_TOKEN}\" | ",
            " -i 'img@sha256:1' sh -c 'IFS= read -r HF_TOKEN && export HF_TOKEN && exec \"$@\"' sh 'tool' 'train' 'job.yaml'",
        ] {
            assert!(command.contains(part), "{part} in {command}");
        }
        let prelude = spec.prelude();
        // The container's ID goes to the job directory's `job.container` (defect 2).
        assert!(
            prelude.starts_with("ob_cid=\"$PWD\"/job.container\n"),
            "{prelude}"
        );
        assert!(
            prelude.ends_with("mkdir -p \"$HOME\"/'ob/.hf-cache' '/w/.cache'\n"),
            "{prelude}"
        );
        assert_eq!(
            spec.container().map(|c| c.name),
            Some("overbrainer-r1".to_owned())
        );
    }
}
