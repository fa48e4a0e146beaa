//! Settings end to end through the real binary: `init`, `config check`, the fixtures under
//! `tests/fixtures/config/`, environment layering, masked secrets and `vault:` references
//! resolved against a stand-in KV v2 server (spec/config.md).

use std::path::{Path, PathBuf};

use predicates::prelude::*;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::util::{TestProject, output_text};

/// A value that must never appear in any output.
const CANARY: &str = "ECHO_CANARY_Vb4Nq8Xr2Tz6Mk9Pw3";
const SECRET: &str = "sk-live-H2vN9qX4mT7kR3wZ8pB5";

fn fixtures(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/config")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", dir.display());
    files
}

#[test]
fn init_then_config_check_works_in_an_empty_folder() {
    let project = TestProject::empty();
    project
        .cmd()
        .arg("init")
        .assert()
        .success()
        .stdout(predicate::str::contains("created project `project`"));
    for file in [
        "overbrainer.toml",
        ".env.example",
        "prompts/subtopics.txt",
        "prompts/questions.txt",
        "prompts/answer_system.txt",
        "prompts/judge.txt",
        ".gitignore",
    ] {
        assert!(project.path().join(file).is_file(), "{file} missing");
    }
    let output = project.cmd().args(["config", "check"]).output().unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("project.name = \"project\"  (file)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pipeline.concurrency = 8  (file)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("providers.openrouter.base_url = (unset)  (default)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("providers.openrouter.api_key = (unset)  (default)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("compare.max_tokens = 2048  (default)"),
        "{stdout}"
    );
    assert!(
        !project.path().join(".overbrainer").exists(),
        "config check took the lock"
    );
}

#[test]
fn init_writes_the_pipeline_built_in_templates_verbatim() {
    use overbrainer::pipeline::templates::Template;
    let project = TestProject::init();
    for template in [
        Template::Subtopics,
        Template::Questions,
        Template::AnswerSystem,
        Template::Judge,
    ] {
        let written = project.read(&format!("prompts/{}", template.file_name()));
        assert_eq!(written, template.default_text(), "{}", template.file_name());
    }
}

#[test]
fn init_creates_a_missing_directory_and_never_overwrites() {
    let project = TestProject::empty();
    project
        .cmd()
        .args(["init", "nested/child"])
        .assert()
        .success();
    let child = project.path().join("nested/child");
    let config = std::fs::read_to_string(child.join("overbrainer.toml")).unwrap();
    assert!(config.contains("name = \"child\""));

    project.write("again/prompts/judge.txt", "mine");
    project.write("again/.gitignore", "target\n.overbrainer\n");
    project
        .cmd()
        .args(["init", "again"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("prompts/judge.txt")
                .and(predicate::str::contains("already exists")),
        );
    assert!(!project.path().join("again/overbrainer.toml").exists());
    assert_eq!(project.read("again/prompts/judge.txt"), "mine");
    assert_eq!(project.read("again/.gitignore"), "target\n.overbrainer\n");
}

#[test]
fn init_merges_an_existing_gitignore() {
    let project = TestProject::empty();
    project.write(".gitignore", "target\n/.overbrainer");
    project.cmd().arg("init").assert().success();
    assert_eq!(project.read(".gitignore"), "target\n/.overbrainer\n.env\n");
}

#[test]
fn valid_fixtures_load() {
    for file in fixtures("valid") {
        let text = std::fs::read_to_string(&file).unwrap();
        let project = TestProject::with_config(&text);
        let mut cmd = project.cmd();
        // `# env: NAME=value` lines: what the environment sets (an ssh target's `host`).
        for (name, value) in text
            .lines()
            .filter_map(|l| l.strip_prefix("# env: "))
            .filter_map(|l| l.split_once('='))
        {
            cmd.env(name, value);
        }
        let output = cmd.args(["config", "check"]).output().unwrap();
        assert!(
            output.status.success(),
            "{}: {}",
            file.display(),
            output_text(&output)
        );
    }
}

#[test]
fn invalid_fixtures_fail_with_every_expected_message_and_echo_no_value() {
    for file in fixtures("invalid") {
        let text = std::fs::read_to_string(&file).unwrap();
        let expected: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .collect();
        assert!(
            !expected.is_empty(),
            "{} has no `# expect:` line",
            file.display()
        );
        let project = TestProject::with_config(&text);
        let output = project.cmd().args(["config", "check"]).output().unwrap();
        let all = output_text(&output);
        assert!(!output.status.success(), "{} loaded: {all}", file.display());
        assert!(output.stdout.is_empty(), "{}: {all}", file.display());
        for message in expected {
            assert!(
                all.contains(message),
                "{}: missing `{message}` in:\n{all}",
                file.display()
            );
        }
        assert!(
            !all.contains(CANARY),
            "{} echoed a value:\n{all}",
            file.display()
        );
    }
}

// Issue 21: the stall settings, their defaults (the adaptive bound in words) and a
// value from the environment, as `config check` shows them.
#[test]
fn config_check_shows_the_stall_settings_with_their_defaults_and_sources() {
    let project = TestProject::with_config(
        "[project]\nname = \"x\"\n\n[training]\ntarget = \"local\"\nbase_model = \"/m\"\nadapter = \"lora\"\n\n[targets.local]\nkind = \"local\"\n",
    );
    let output = project
        .cmd()
        .env("OVERBRAINER_TRAINING__ON_STALL", "cancel")
        .args(["config", "check"])
        .output()
        .unwrap();
    let all = output_text(&output);
    assert!(output.status.success(), "{all}");
    let line = |key: &str| {
        all.lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no `{key}` in:\n{all}"))
            .to_owned()
    };
    assert!(
        line("training.stall_minutes")
            .contains("(unset: the larger of 10 and 20 x the median step time)"),
        "{all}"
    );
    assert!(
        line("training.stall_first_step_minutes").contains("= 30"),
        "{all}"
    );
    let on_stall = line("training.on_stall");
    assert!(
        on_stall.contains("\"cancel\"") && on_stall.contains("(env)"),
        "{all}"
    );
}

#[test]
fn the_process_environment_wins_over_dotenv_and_shows_its_source() {
    let project = TestProject::init();
    project.write(
        ".env",
        "# comment\nOVERBRAINER_PIPELINE__CONCURRENCY=3\nOVERBRAINER_PIPELINE__SEED=\"11\"\nOVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL=https://${HOST_FOR_TEST}/v1\n",
    );
    let output = project
        .cmd()
        .args(["config", "check"])
        .env("OVERBRAINER_PIPELINE__CONCURRENCY", "5")
        .env("OVERBRAINER_PIPELINE__EVAL_RATIO", "0.25")
        .env("OVERBRAINER_PIPELINE__INCLUDE_SYSTEM_PROMPT", "true")
        .env("HOST_FOR_TEST", "llm.example")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", output_text(&output));
    assert!(
        stdout.contains("pipeline.concurrency = 5  (env)"),
        "{stdout}"
    );
    assert!(stdout.contains("pipeline.seed = 11  (.env)"), "{stdout}");
    assert!(
        stdout.contains("pipeline.eval_ratio = 0.25  (env)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("pipeline.include_system_prompt = true  (env)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("providers.openrouter.base_url = \"https://llm.example/v1\"  (.env)"),
        "{stdout}"
    );
}

#[test]
fn environment_values_of_the_wrong_type_name_the_variable_not_the_value() {
    let project = TestProject::init();
    project
        .cmd()
        .args(["config", "check"])
        .env("OVERBRAINER_PIPELINE__CONCURRENCY", CANARY)
        .assert()
        .failure()
        .stderr(
            predicate::str::contains(
                "`pipeline.concurrency`: wrong type: expected a non-negative integer",
            )
            .and(predicate::str::contains(
                "OVERBRAINER_PIPELINE__CONCURRENCY",
            ))
            .and(predicate::str::contains(CANARY).not()),
        );
}

#[test]
fn unknown_variables_are_refused_and_reserved_ones_ignored() {
    let project = TestProject::init();
    project
        .cmd()
        .args(["config", "check"])
        .env("OVERBRAINER_PIPELINE__CONCURENCY", "3")
        .env("OVERBRAINER_NOPE", "1")
        .env("OVERBRAINER_TEST_ANYTHING", "1")
        .env("OVERBRAINER_TUI_COLOR", "never")
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("`pipeline.concurency`: unknown field")
                .and(predicate::str::contains("OVERBRAINER_PIPELINE__CONCURENCY"))
                .and(predicate::str::contains(
                    "`OVERBRAINER_NOPE`: unknown field",
                ))
                .and(predicate::str::contains("TEST_ANYTHING").not())
                .and(predicate::str::contains("TUI_COLOR").not()),
        );
    project
        .cmd()
        .args(["config", "check"])
        .env(
            "OVERBRAINER_PROVIDERS__GHOST__BASE_URL",
            "https://x.example",
        )
        .assert()
        .failure()
        .stderr(predicate::str::contains("names provider `ghost`"));
}

#[test]
fn axolotl_extra_values_from_the_environment_are_typed_per_env_9() {
    let project = TestProject::init();
    let config = project.read("overbrainer.toml")
        + "\n[training]\ntarget = \"here\"\nbase_model = \"b\"\nadapter = \"lora\"\n\n[targets.here]\nkind = \"local\"\n";
    project.write("overbrainer.toml", &config);
    let output = project
        .cmd()
        .args(["config", "check"])
        .env("OVERBRAINER_TRAINING__AXOLOTL_EXTRA__WARMUP_STEPS", "012")
        .env("OVERBRAINER_TRAINING__AXOLOTL_EXTRA__SEED", "+5")
        .env(
            "OVERBRAINER_TRAINING__AXOLOTL_EXTRA__MAX_STEPS",
            "99999999999999999999",
        )
        .env("OVERBRAINER_TRAINING__AXOLOTL_EXTRA__EVAL_STEPS", "20")
        .env("OVERBRAINER_TRAINING__AXOLOTL_EXTRA__WEIGHT_DECAY", "0.01")
        .env(
            "OVERBRAINER_TRAINING__AXOLOTL_EXTRA__FLASH_ATTENTION",
            "false",
        )
        .env("OVERBRAINER_TRAINING__EPOCHS", "2")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", output_text(&output));
    for line in [
        "training.axolotl_extra.warmup_steps = \"012\"  (env)",
        "training.axolotl_extra.seed = \"+5\"  (env)",
        "training.axolotl_extra.max_steps = \"99999999999999999999\"  (env)",
        "training.axolotl_extra.eval_steps = 20  (env)",
        "training.axolotl_extra.weight_decay = 0.01  (env)",
        "training.axolotl_extra.flash_attention = false  (env)",
        "training.epochs = 2  (env)",
    ] {
        assert!(stdout.contains(line), "missing `{line}` in:\n{stdout}");
    }
}

#[test]
fn secrets_show_masked_and_never_in_any_output() {
    let project = TestProject::init();
    project.write(".env", &format!("OVERBRAINER_HF_TOKEN={SECRET}\n"));
    let output = project
        .cmd()
        .args(["config", "check"])
        .env("OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY", SECRET)
        .env(
            "OVERBRAINER_RUNPOD__API_KEY",
            "vault:secret/overbrainer/runpod#key",
        )
        .env("OVERBRAINER_LOG", "trace")
        .output()
        .unwrap();
    let all = output_text(&output);
    assert!(output.status.success(), "{all}");
    assert!(
        all.contains("providers.openrouter.api_key = set  (env)"),
        "{all}"
    );
    assert!(all.contains("hf_token = set  (.env)"), "{all}");
    assert!(
        all.contains("runpod.api_key = vault ref vault:secret/overbrainer/runpod#key  (env)"),
        "{all}"
    );
    assert!(!all.contains(SECRET), "secret leaked:\n{all}");
}

#[test]
fn a_dotenv_syntax_error_gives_the_line_only() {
    let project = TestProject::init();
    project.write(
        ".env",
        "OVERBRAINER_LOG=info\n\nOVERBRAINER_HF_TOKEN=\"ECHO_CANARY_Vb4Nq8Xr2Tz6Mk9Pw3\n",
    );
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains(".env` cannot be parsed: error at line 3")
                .and(predicate::str::contains(CANARY).not()),
        );
}

#[test]
fn an_unreadable_settings_file_and_a_missing_project_are_reported() {
    let project = TestProject::empty();
    // A directory in its place cannot be read, even by root.
    std::fs::create_dir(project.path().join("overbrainer.toml")).unwrap();
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("cannot read")
                .and(predicate::str::contains("overbrainer.toml")),
        );

    let empty = TestProject::empty();
    empty
        .cmd()
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("no `overbrainer.toml` found"));
    let missing = empty.path().join("absent");
    crate::util::overbrainer(&empty.home())
        .arg("-C")
        .arg(&missing)
        .args(["config", "check"])
        .assert()
        .failure();
    assert!(!missing.exists(), "-C DIR was created");
}

#[test]
fn deprecated_and_ignored_keys_are_warned_about_on_stderr() {
    let project = TestProject::init();
    let config = project.read("overbrainer.toml")
        + "\n[training]\ntarget = \"here\"\nbase_model = \"b\"\nadapter = \"lora\"\nhub_model_id = \"me/old\"\n\n[targets.here]\nkind = \"local\"\nruntime = \"docker\"\nvenv = \"/opt/v\"\n\n[targets.box]\nkind = \"ssh\"\n";
    project.write("overbrainer.toml", &config);
    let output = project
        .cmd()
        .args(["config", "check"])
        .env("OVERBRAINER_SSH_CLIENT", "builtin")
        .env("OVERBRAINER_TARGETS__BOX__HOST", "me@box")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("`training.hub_model_id` is deprecated"),
        "{stderr}"
    );
    assert!(
        stderr.contains("`targets.here.venv` is ignored with `runtime = \"docker\"`"),
        "{stderr}"
    );
    assert!(
        stdout.contains("targets.box.ssh_client = \"builtin\"  (env)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("targets.box.host = \"me@box\"  (env)"),
        "{stdout}"
    );
}

// Tester defect 3: `config check` passed an SSH target without `host`, which every
// run on it is refused for; it names the key and the variable that sets it, for
// each such target, and prints no setting.
#[test]
fn regression_config_check_refuses_ssh_targets_without_host_naming_the_key() {
    let project = TestProject::init();
    let config = project.read("overbrainer.toml")
        + "\n[targets.box]\nkind = \"ssh\"\n\n[targets.far]\nkind = \"ssh\"\n\n[targets.near]\nkind = \"ssh\"\n";
    project.write("overbrainer.toml", &config);
    let output = project
        .cmd()
        .args(["config", "check"])
        .env("OVERBRAINER_TARGETS__NEAR__HOST", "me@near")
        .output()
        .unwrap();
    let all = output_text(&output);
    assert!(!output.status.success(), "{all}");
    assert!(output.stdout.is_empty(), "{all}");
    for name in ["box", "far"] {
        assert!(
            all.contains(&format!(
                "`targets.{name}.host` is missing: an ssh target needs `user@host` or a `~/.ssh/config` alias; set `OVERBRAINER_TARGETS__{}__HOST`",
                name.to_uppercase()
            )),
            "{all}"
        );
    }
    assert!(!all.contains("targets.near.host"), "{all}");
}

// Issue 32: a set `training.evals_per_epoch` (from the environment or the file) with no
// eval data is refused by `config check`, naming the key and every other key that needs
// eval data, and printing no setting; its default is not, nor the same settings once
// eval records exist.
#[test]
fn config_check_refuses_a_set_evals_per_epoch_without_eval_data_naming_the_keys() {
    let config = "[project]\nname = \"x\"\n\n[training]\ntarget = \"local\"\nbase_model = \"/m\"\nadapter = \"lora\"\n\n[targets.local]\nkind = \"local\"\n";
    let project = TestProject::with_config(config);
    let record = "{\"messages\": [{\"role\": \"user\", \"content\": \"2+2?\"}, {\"role\": \"assistant\", \"content\": \"4\"}]}\n";
    project.write("data/train.jsonl", record);
    project.write("data/eval.jsonl", "");
    let check = |env: &[(&str, &str)]| {
        let mut cmd = project.cmd();
        cmd.args(["config", "check"]);
        for (name, value) in env {
            cmd.env(name, value);
        }
        let output = cmd.output().unwrap();
        let all = output_text(&output);
        (output, all)
    };
    let (output, all) = check(&[]);
    assert!(output.status.success(), "the default: {all}");

    let (output, all) = check(&[("OVERBRAINER_TRAINING__EVALS_PER_EPOCH", "2")]);
    assert!(!output.status.success(), "{all}");
    assert!(output.stdout.is_empty(), "{all}");
    assert!(
        all.contains(
            "`training.evals_per_epoch` needs eval data, and `data/eval.jsonl` is missing or empty"
        ),
        "{all}"
    );

    project.write(
        "overbrainer.toml",
        &config.replace(
            "adapter = \"lora\"\n",
            "adapter = \"lora\"\nevals_per_epoch = 2\n\n[training.axolotl_extra]\neval_strategy = \"steps\"\n",
        ),
    );
    let (output, all) = check(&[]);
    assert!(!output.status.success(), "{all}");
    assert!(output.stdout.is_empty(), "{all}");
    assert!(
        all.contains("`training.evals_per_epoch` and `training.axolotl_extra.eval_strategy` need eval data, and `data/eval.jsonl`"),
        "{all}"
    );

    project.write("data/eval.jsonl", record);
    let (output, all) = check(&[]);
    assert!(output.status.success(), "with eval data: {all}");
}

/// A stand-in Vault: KV v2 reads of `secret/overbrainer/openrouter` with token `TOKEN`.
async fn vault() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/v1/secret/data/overbrainer/openrouter"))
        .and(header("X-Vault-Token", "test-token-4411"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "data": {"data": {"api_key": SECRET}, "metadata": {"version": 1}}
        })))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(403)
                .set_body_json(serde_json::json!({"errors": ["permission denied"]})),
        )
        .mount(&server)
        .await;
    server
}

#[tokio::test(flavor = "multi_thread")]
async fn a_vault_reference_resolves_with_resolve_and_its_value_appears_nowhere() {
    let server = vault().await;
    let project = TestProject::init();
    let run = |token: &'static str, reference: &'static str, resolve: bool| {
        let mut cmd = project.cmd();
        cmd.args(["config", "check"])
            .env("VAULT_ADDR", server.uri())
            .env("VAULT_TOKEN", token)
            .env("OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY", reference)
            .env("OVERBRAINER_LOG", "trace");
        if resolve {
            cmd.arg("--resolve");
        }
        cmd.output().unwrap()
    };
    let good = "vault:secret/overbrainer/openrouter#api_key";

    let output = run("test-token-4411", good, true);
    let all = output_text(&output);
    assert!(output.status.success(), "{all}");
    assert!(
        all.contains("providers.openrouter.api_key = vault ref vault:secret/overbrainer/openrouter#api_key  (env, resolved)"),
        "{all}"
    );
    assert!(!all.contains(SECRET), "{all}");

    // Without --resolve, Vault is never contacted.
    let before = server.received_requests().await.unwrap_or_default().len();
    let output = run("wrong", good, false);
    assert!(output.status.success(), "{}", output_text(&output));
    assert_eq!(
        server.received_requests().await.unwrap_or_default().len(),
        before
    );

    let output = run("wrong-token-8", good, true);
    let all = output_text(&output);
    assert!(!output.status.success());
    assert!(all.contains("providers.openrouter.api_key"), "{all}");
    assert!(all.contains("permission denied"), "{all}");
    assert!(
        !all.contains("wrong-token-8") && !all.contains(SECRET),
        "{all}"
    );

    let output = run(
        "test-token-4411",
        "vault:secret/overbrainer/openrouter#nope",
        true,
    );
    let all = output_text(&output);
    assert!(!output.status.success());
    assert!(all.contains("no text field `nope`"), "{all}");
}

#[test]
fn a_vault_reference_fails_clearly_when_the_server_is_down() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let project = TestProject::init();
    // `VAULT_ADDR` may come from `.env` too.
    project.write(".env", &format!("VAULT_ADDR={addr}\n"));
    project
        .cmd()
        .args(["config", "check", "--resolve"])
        .env("VAULT_TOKEN", "vault-token-M9qX4vT7kW2nR8zB5h")
        .env("OVERBRAINER_HF_TOKEN", "vault:secret/hf#token")
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("cannot resolve `hf_token` from `vault:secret/hf#token`")
                .and(predicate::str::contains("could not be reached"))
                .and(predicate::str::contains("vault-token-M9qX4vT7kW2nR8zB5h").not()),
        );
}

#[test]
fn completion_scripts_are_printed_for_each_shell() {
    let project = TestProject::empty();
    for shell in ["bash", "zsh", "fish"] {
        let output = crate::util::overbrainer(&project.home())
            .env("COMPLETE", shell)
            .output()
            .unwrap();
        assert!(output.status.success(), "{shell}: {}", output_text(&output));
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(script.contains("overbrainer"), "{shell}: {script}");
    }
}

// Issue 21: with `training.upload_base_model`, `base_model` is a local directory;
// `config check` refuses a missing one and a file, naming both keys and the path,
// and printing no setting; a directory (relative to the project) passes, and a runpod
// target is refused by its key.
#[test]
fn config_check_refuses_an_upload_base_model_that_is_not_a_local_directory() {
    let config = |base: &str, kind: &str| {
        format!(
            "[project]\nname = \"x\"\n\n[training]\ntarget = \"t\"\nbase_model = \"{base}\"\nadapter = \"lora\"\nupload_base_model = true\n\n[targets.t]\nkind = \"{kind}\"\n"
        )
    };
    let project = TestProject::with_config(&config("models/tiny", "local"));
    let check = || {
        let output = project.cmd().args(["config", "check"]).output().unwrap();
        let all = output_text(&output);
        (output, all)
    };
    let (output, all) = check();
    assert!(!output.status.success(), "{all}");
    assert!(output.stdout.is_empty(), "{all}");
    let missing = project.path().join("models/tiny");
    assert!(
        all.contains(&format!(
            "`training.base_model` (`{}`) cannot be read",
            missing.display()
        )) && all.contains("but `training.upload_base_model` is set"),
        "{all}"
    );

    project.write("models/tiny", "not a directory");
    let (output, all) = check();
    assert!(!output.status.success(), "{all}");
    assert!(
        all.contains(&format!(
            "`training.base_model` (`{}`) is not a directory, but `training.upload_base_model` is set",
            missing.display()
        )),
        "{all}"
    );

    std::fs::remove_file(&missing).unwrap();
    project.write("models/tiny/config.json", "{}");
    let (output, all) = check();
    assert!(output.status.success(), "{all}");
    assert!(all.contains("training.upload_base_model = true"), "{all}");

    project.write(
        "overbrainer.toml",
        &config(
            "models/tiny",
            "runpod\"\ngpu_types = [\"NVIDIA A40\"]\nmax_hours = 0.5\ndata_center_ids = \"auto",
        ),
    );
    let (output, all) = check();
    assert!(!output.status.success(), "{all}");
    assert!(
        all.contains("training.upload_base_model")
            && all.contains("not supported on the runpod target `t`"),
        "{all}"
    );
}
