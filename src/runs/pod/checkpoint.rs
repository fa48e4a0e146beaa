//! A snapshot's checkpoint checked on its pod before the pod is deleted (issue 12,
//! "beyond the spec"): `trainer_state.json` holds the expected `global_step`, and the
//! optimizer, scheduler and RNG state and the weights (adapter or full model) are
//! present, non-empty and load, read by the job's own Python (the target's venv), so a
//! half-written checkpoint is found while the pod still holds the job's disk (Axolotl
//! #554, #1631, #2634; Transformers #35782). The local layout check after retrieval is
//! `train::checkpoint`; this one also loads what it finds. Layouts of several devices
//! (FSDP's `optimizer_0/`, `DeepSpeed`'s `global_step<N>/`) are checked for presence only.

use crate::exec::{Executor as _, SshExecutor, quote, shell_path};

/// The check, in Python: prints one line per problem, nothing when complete.
pub const CHECK_PY: &str = r#"import json, os, sys
d, step = sys.argv[1], int(sys.argv[2])
problems = []
names = os.listdir(d) if os.path.isdir(d) else []
if not names:
    print(f"`{d}` is missing or empty")
    sys.exit(0)
def usable(name):
    path = os.path.join(d, name)
    if not os.path.isfile(path):
        problems.append(f"`{name}` is missing")
        return None
    if os.path.getsize(path) == 0:
        problems.append(f"`{name}` is empty")
        return None
    return path
try:
    import torch
except Exception as e:
    torch = None
    problems.append(f"torch cannot be imported here ({type(e).__name__})")
def load_torch(name):
    path = usable(name)
    if path and torch is not None:
        try:
            torch.load(path, map_location="cpu", weights_only=False)
        except Exception as e:
            problems.append(f"`{name}` does not load ({type(e).__name__})")
def load_safetensors(name):
    path = usable(name)
    if path:
        try:
            from safetensors import safe_open
            with safe_open(path, framework="pt") as f:
                for key in f.keys():
                    f.get_slice(key)
        except Exception as e:
            problems.append(f"`{name}` does not load ({type(e).__name__})")
path = usable("trainer_state.json")
if path:
    try:
        with open(path) as f:
            found = json.load(f).get("global_step")
        if found != step:
            problems.append(f"`trainer_state.json` has global_step {found}, expected {step}")
    except Exception as e:
        problems.append(f"`trainer_state.json` does not load ({type(e).__name__})")
sharded = any(n.startswith("optimizer_") and os.path.isdir(os.path.join(d, n)) for n in names) or \
    any(n.startswith("global_step") and os.path.isdir(os.path.join(d, n)) for n in names)
if not sharded:
    load_torch("optimizer.pt")
    load_torch("scheduler.pt")
rng = sorted(n for n in names if n.startswith("rng_state") and n.endswith(".pth"))
if not rng:
    problems.append("`rng_state.pth` is missing")
for name in rng:
    load_torch(name)
if "adapter_config.json" in names or "adapter_model.safetensors" in names or "adapter_model.bin" in names:
    usable("adapter_config.json")
    if "adapter_model.bin" in names and "adapter_model.safetensors" not in names:
        load_torch("adapter_model.bin")
    else:
        load_safetensors("adapter_model.safetensors")
elif "model.safetensors.index.json" in names:
    with open(os.path.join(d, "model.safetensors.index.json")) as f:
        for name in sorted(set(json.load(f).get("weight_map", {}).values())):
            load_safetensors(name)
elif "model.safetensors" in names:
    load_safetensors("model.safetensors")
elif not any(n.startswith("pytorch_model") for n in names):
    problems.append("no weights (`adapter_model.safetensors` or `model.safetensors`)")
for problem in problems:
    print(problem)
"#;

/// The shell command that runs [`CHECK_PY`] on `dir` for `step` with the venv's Python
/// (`python3` on `PATH` without a venv).
#[must_use]
pub fn command(dir: &str, step: u64, venv: Option<&str>) -> String {
    let python = venv.map_or_else(
        || "python3".to_owned(),
        |v| format!("{}/bin/python", shell_path(v.trim_end_matches('/'))),
    );
    format!(
        "{python} -c {} {} {step} 2>&1",
        quote(CHECK_PY),
        shell_path(dir)
    )
}

/// Checks `output/<checkpoint>` of the run directory `run_dir` on `pod`: the problems
/// found, none when complete.
///
/// # Errors
/// Why the check could not run (the pod did not answer).
pub async fn check_on(
    pod: &SshExecutor,
    run_dir: &str,
    checkpoint: &str,
    step: u64,
    venv: Option<&str>,
) -> Result<Vec<String>, String> {
    let dir = format!(
        "{}/{}/{checkpoint}",
        run_dir.trim_end_matches('/'),
        crate::train::axolotl::OUTPUT_DIR
    );
    let output = pod
        .probe(&command(&dir, step, venv))
        .await
        .map_err(|e| crate::runs::start::error_chain(&e))?;
    Ok(String::from_utf8_lossy(&output)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the check with this machine's `python3` on a checkpoint made here: the
    /// Python itself is what runs on the pod.
    #[allow(
        clippy::disallowed_methods,
        reason = "test code runs the check directly"
    )]
    fn run(dir: &std::path::Path, step: u64) -> Vec<String> {
        let found = std::process::Command::new("python3")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(found, "python3 is missing: apt-get install -y python3");
        let output = std::process::Command::new("bash")
            .arg("-c")
            .arg(command(&dir.to_string_lossy(), step, None))
            .output()
            .expect("bash and python3 (apt-get install -y python3)");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn regression_a_checkpoint_with_the_wrong_step_or_empty_files_is_named_on_the_pod() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("checkpoint-9");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("trainer_state.json"), r#"{"global_step": 8}"#).unwrap();
        std::fs::write(dir.join("optimizer.pt"), b"").unwrap();
        std::fs::write(dir.join("adapter_config.json"), b"{}").unwrap();
        let problems = run(&dir, 9).join("\n");
        assert!(problems.contains("global_step 8, expected 9"), "{problems}");
        assert!(problems.contains("`optimizer.pt` is empty"), "{problems}");
        assert!(problems.contains("`scheduler.pt` is missing"), "{problems}");
        assert!(
            problems.contains("`rng_state.pth` is missing"),
            "{problems}"
        );
        assert!(
            problems.contains("`adapter_model.safetensors` is missing"),
            "{problems}"
        );
    }

    #[test]
    fn regression_a_missing_checkpoint_directory_is_named() {
        let temp = tempfile::tempdir().unwrap();
        let problems = run(&temp.path().join("checkpoint-3"), 3);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("is missing or empty"), "{problems:?}");
    }
}
