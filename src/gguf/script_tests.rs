//! The export script's unit tests (see `script.rs`).

use super::*;
use crate::exec::JobRuntime;

fn plan(source: Source, quantize: &str) -> Plan {
    Plan {
        run_id: "r_1".into(),
        run_dir: "/w/r_1".into(),
        job_dir: "/w/r_1/exports/export_1".into(),
        quantize: quantize.into(),
        llama: Llama::Prebuilt {
            dir: "/opt/llama.cpp/".into(),
            key: "targets.local.llama_cpp_dir".into(),
        },
        source,
        pre_tokenizer: Some("gpt-2".into()),
        num_ctx: 256,
        export_json: "/w/r_1/exports/export_1/export.json".into(),
        partial_step: None,
    }
}

fn spec() -> JobSpec {
    JobSpec {
        run_id: "r_1".into(),
        container_suffix: None,
        run_dir: "/w/r_1".into(),
        hf_home: "/w/.hf-cache".into(),
        runtime: JobRuntime::Native {
            venv: Some("/venv".into()),
        },
        secret_names: Vec::new(),
        env: crate::train::job::environment(),
    }
}

#[test]
fn the_preflight_comes_before_the_merge_and_the_merge_before_the_conversion() {
    let plan = plan(
        Source::Adapter {
            base_model: "/m".into(),
            adapter: "/w/r_1/output".into(),
        },
        "Q8_0",
    );
    let full = plan.script(&spec());
    // The steps come after the embedded tool's text.
    let script = &full[full.rfind("OB_EXPORT_TOOL").unwrap()..];
    let at = |what: &str| {
        script
            .find(what)
            .unwrap_or_else(|| panic!("{what}: {script}"))
    };
    // The target's Python is checked before the llama.cpp step, which may build for minutes.
    assert!(at("export_tool.py' 'python'") < at("1/6 llama.cpp"));
    assert!(at(" 'preflight' ") < at("'merge-lora'"));
    assert!(at("'merge-lora'") < at(" 'convert' "));
    assert!(at(" 'convert' ") < at("llama-quantize' '"));
    assert!(at("llama-quantize' '") < at(" 'check' "));
    // After the merge, one Python process converts, quantizes and checks.
    let last = script.lines().find(|l| l.contains(" 'convert' ")).unwrap();
    for part in [
        "' 'step' '4/6 convert to a 16-bit GGUF' ':::' 'convert' ",
        "':::' 'quantize' ",
        "':::' 'check' ",
    ] {
        assert!(last.contains(part), "{part}: {last}");
    }
    assert!(script.contains("'--merge'"), "{script}");
    assert!(
        script.contains("'--lora-model-dir=/w/r_1/output'"),
        "{script}"
    );
    assert!(script.contains("'--pre-tokenizer' 'gpt-2'"), "{script}");
    assert!(
        full.contains("trap 'rm -rf '\\''/w/r_1/exports/export_1/export-work'\\'''"),
        "{script}"
    );
    assert!(script.contains("'/venv'/bin/'python3'"), "{script}");
    crate::exec::shellcheck::assert_passes(&spec().job(&full, Vec::new()).script, "SC2016");
}

#[test]
fn f16_and_bf16_skip_the_quantizer_and_a_merged_model_skips_the_merge() {
    for quantize in ["F16", "BF16"] {
        let script = plan(Source::Model("/w/r_1/output/merged".into()), quantize).script(&spec());
        assert!(!script.contains("llama-quantize' '"), "{script}");
        assert!(!script.contains("merge-lora"), "{script}");
        assert!(
            script.contains(&format!("'--outtype' '{}'", quantize.to_lowercase())),
            "{script}"
        );
    }
}

/// In a container runtime every program runs through the engine with the paths the
/// container sees (the run directory at `/workspace/run`, llama.cpp at
/// `/workspace/cache`), while the script's own shell steps keep the target's.
#[test]
fn a_container_job_runs_each_program_in_the_image_with_the_container_paths() {
    let mut plan = plan(
        Source::Adapter {
            base_model: "/m".into(),
            adapter: "/w/r_1/output/checkpoint-2".into(),
        },
        "Q8_0",
    );
    plan.partial_step = Some(2);
    let spec = JobSpec {
        runtime: JobRuntime::Container {
            engine: crate::config::Engine::Podman,
            image: "img".into(),
            tools_cache: Some("/opt/llama.cpp".into()),
        },
        ..spec()
    };
    let full = plan.script(&spec);
    let script = &full[full.rfind("OB_EXPORT_TOOL").unwrap()..];
    for (program, args) in [
        (
            "python3",
            "'/workspace/run/exports/export_1/export_tool.py' 'preflight' '--tree' '/workspace/cache' '--model' '/m' '--tokenizer' '/workspace/run/output/checkpoint-2'",
        ),
        (
            "axolotl",
            "'merge-lora' 'axolotl.yaml' '--lora-model-dir=/workspace/run/output/checkpoint-2' '--output-dir=/workspace/run/exports/export_1/export-work'",
        ),
        (
            "python3",
            "'/workspace/run/exports/export_1/export_tool.py' 'step' '4/6 convert to a 16-bit GGUF' ':::' 'convert'",
        ),
    ] {
        assert!(
            script.contains(&format!("'img' '{program}' {args}")),
            "{program}: {script}"
        );
    }
    // The quantizer runs from the tool's process, in the image, on the image's paths.
    assert!(
        script.contains("'quantize' '--bin' '/workspace/cache/build/bin/llama-quantize' '--src' '/workspace/run/exports/export_1/export-work/r_1-16bit.gguf'"),
        "{script}"
    );
    assert!(
        script.contains("'/workspace/cache/build/bin/llama-server' '--version'"),
        "{script}"
    );
    assert!(
        script.contains("'--source' 'output/checkpoint-2' '--partial-step' '2'"),
        "{script}"
    );
    // The results move on the target itself.
    assert!(
        script.contains(
            "mv '/w/r_1/exports/export_1/export-work/r_1-Q8_0.gguf' '/w/r_1/output/gguf'/"
        ),
        "{script}"
    );
    assert!(
        !script.contains("'/opt/llama.cpp/build/bin/llama-quantize' '"),
        "{script}"
    );
    crate::exec::shellcheck::assert_passes(&spec.job(&full, Vec::new()).script, "SC2016");
}

#[test]
fn the_trap_removes_the_work_directory_when_a_step_fails() {
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job");
    std::fs::create_dir_all(job.join(WORK_DIR)).unwrap();
    let mut plan = plan(Source::Model("/nowhere".into()), "Q8_0");
    plan.job_dir = job.to_string_lossy().into_owned();
    // A venv whose Python answers every check: the llama.cpp step is the one that fails.
    let venv = dir.path().join("venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::fs::write(venv.join("bin/python3"), "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(
        venv.join("bin/python3"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let mut spec = spec();
    spec.runtime = JobRuntime::Native {
        venv: Some(venv.to_string_lossy().into_owned()),
    };
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(plan.script(&spec))
        .current_dir(&job)
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(REFUSED_STATUS));
    let log = String::from_utf8_lossy(&status.stderr);
    assert!(
        refusal(&log)
            .unwrap()
            .contains("`targets.local.llama_cpp_dir` = `/opt/llama.cpp/`"),
        "{log}"
    );
    assert!(!job.join(WORK_DIR).exists());
}
