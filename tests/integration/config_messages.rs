//! Regression tests of configuration messages and values found by a tester: empty secrets,
//! `.env` errors with their line, a byte order mark, sources named per problem.

use predicates::prelude::*;

use crate::util::TestProject;

#[test]
fn an_empty_api_key_is_unset() {
    let project = TestProject::init();
    project
        .cmd()
        .env("OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY", "")
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "providers.openrouter.api_key = (unset)",
        ));
    project.write(".env", "OVERBRAINER_RUNPOD__API_KEY=\n");
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains("runpod.api_key = (unset)"));
}

#[test]
fn a_broken_substitution_in_dotenv_names_its_line() {
    let project = TestProject::init();
    project.write(".env", "# comment\nA=1\nC=${x\n");
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("line 3"));
}

#[test]
fn a_byte_order_mark_at_the_start_of_dotenv_is_skipped() {
    let project = TestProject::init();
    project.write(
        ".env",
        "\u{feff}OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL=http://bom.test\n",
    );
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains("http://bom.test"));
}

#[test]
fn problems_from_variables_name_the_variable_not_the_file() {
    let project = TestProject::init();
    project
        .cmd()
        .env("OVERBRAINER_FOO", "1")
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("invalid configuration:")
                .and(predicate::str::contains("`OVERBRAINER_FOO`"))
                .and(predicate::str::contains("(in the environment)"))
                .and(predicate::str::contains("overbrainer.toml").not()),
        );
    // A range error on a key set by a variable names the variable, as type errors do.
    project
        .cmd()
        .env("OVERBRAINER_PIPELINE__CONCURRENCY", "0")
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("`pipeline.concurrency`")
                .and(predicate::str::contains(
                    "(set by `OVERBRAINER_PIPELINE__CONCURRENCY`)",
                ))
                .and(predicate::str::contains("overbrainer.toml").not()),
        );
    // From `.env`: the variable and its line.
    project.write(
        ".env",
        "# mine\nOVERBRAINER_PIPELINE__CONCURRENCY=0\nOVERBRAINER_BAR=1\n",
    );
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains(
                "(set by `OVERBRAINER_PIPELINE__CONCURRENCY` in `.env` line 2)",
            )
            .and(predicate::str::contains("`OVERBRAINER_BAR`"))
            .and(predicate::str::contains("(in `.env` line 3)")),
        );
}

#[test]
fn a_variable_with_an_invalid_provider_name_does_not_suggest_that_name() {
    let project = TestProject::init();
    project
        .cmd()
        .env("OVERBRAINER_PROVIDERS__MY-P__PROTOCOL", "openai")
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("`OVERBRAINER_PROVIDERS__MY-P__PROTOCOL`")
                .and(predicate::str::contains(
                    "lowercase letters, digits and `_`",
                ))
                .and(predicate::str::contains("[providers.my-p]").not()),
        );
}

#[test]
fn config_check_shows_unset_keys_effective_reasoning_and_runtime_ignored_keys() {
    let project = TestProject::init();
    let mut config = project.read("overbrainer.toml");
    config.push_str(
        "\n[targets.pod]\nkind = \"runpod\"\ngpu_types = \"auto\"\nmax_hours = 1\n\n[targets.box]\nkind = \"local\"\n",
    );
    project.write("overbrainer.toml", &config);
    let output = project.cmd().args(["config", "check"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        crate::util::output_text(&output)
    );
    for line in [
        "hub.repo = (unset)  (default)",
        "export.ollama_name = (unset)  (default)",
        "compare.parent_price_in = (unset)  (default)",
        "compare.child_price_per_hour = (unset)  (default)",
        "targets.pod.max_price_per_hour = (unset)  (default)",
        "targets.pod.max_cost_usd = (unset)  (default)",
        // The template's parent: openai protocol with `reasoning = true`.
        "roles.parent.reasoning_effort = \"medium\"  (default)",
        "targets.box.venv = (unset)  (default)",
        "(ignored under runtime native)",
    ] {
        assert!(stdout.contains(line), "missing `{line}` in:\n{stdout}");
    }
    assert!(
        stdout.contains("targets.box.engine = \"docker\"  (ignored under runtime native)"),
        "{stdout}"
    );
}

#[test]
fn host_under_a_local_target_says_host_is_only_for_ssh_targets() {
    let project = TestProject::init();
    let mut config = project.read("overbrainer.toml");
    config.push_str("\n[targets.box]\nkind = \"local\"\nhost = \"h\"\n");
    project.write("overbrainer.toml", &config);
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("`targets.box.host`: `host` is only for ssh targets")
                .and(predicate::str::contains("OVERBRAINER_TARGETS__BOX__HOST").not()),
        );
    config.push_str("\n[targets.other]\nkind = \"local\"\n");
    let config = config.replace("host = \"h\"\n", "");
    project.write("overbrainer.toml", &config);
    project
        .cmd()
        .env("OVERBRAINER_TARGETS__OTHER__HOST", "h")
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "`targets.other.host`: `host` is only for ssh targets (`kind = \"ssh\"`) (set by `OVERBRAINER_TARGETS__OTHER__HOST`)",
        ));
}

#[test]
fn regression_two_settings_that_cannot_work_together_each_name_their_own_source() {
    let project = TestProject::init();
    let mut config = project.read("overbrainer.toml");
    config.push_str(
        "\n[training]\ntarget = \"here\"\nbase_model = \"b\"\nadapter = \"lora\"\n\n\
         [training.axolotl_extra]\neval_steps = 5\n\n[targets.here]\nkind = \"local\"\n",
    );
    project.write("overbrainer.toml", &config);
    project
        .cmd()
        .env("OVERBRAINER_TRAINING__EVALS_PER_EPOCH", "2")
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "cannot be used with `training.evals_per_epoch`: Axolotl refuses both together; remove one of them (`training.axolotl_extra.eval_steps` in `overbrainer.toml`; `training.evals_per_epoch` set by `OVERBRAINER_TRAINING__EVALS_PER_EPOCH`)",
        ));
    project.write(
        ".env",
        "# tuning\nOVERBRAINER_TRAINING__AXOLOTL_EXTRA__WARMUP_RATIO=0.1\n",
    );
    let mut config = config.replace("eval_steps = 5\n", "warmup_steps = 3\n");
    config.push('\n');
    project.write("overbrainer.toml", &config);
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "(`training.axolotl_extra.warmup_steps` in `overbrainer.toml`; `training.axolotl_extra.warmup_ratio` set by `OVERBRAINER_TRAINING__AXOLOTL_EXTRA__WARMUP_RATIO` in `.env` line 2)",
        ));
}

// Defect 3: an empty image variable never reaches an engine as an empty image name: the
// configuration is refused, naming the variable and its key, for local, SSH and
// Runpod targets alike.
#[test]
fn regression_an_empty_image_variable_is_refused_naming_it() {
    let project = TestProject::with_config(
        "[project]\nname = \"p\"\n\n[targets.box]\nkind = \"local\"\nruntime = \"docker\"\n\n\
         [targets.far]\nkind = \"ssh\"\nhost = \"h\"\nruntime = \"docker\"\n\n\
         [targets.pod]\nkind = \"runpod\"\n",
    );
    for (var, key) in [
        ("OVERBRAINER_TARGETS__BOX__IMAGE", "targets.box.image"),
        ("OVERBRAINER_TARGETS__FAR__IMAGE", "targets.far.image"),
        ("OVERBRAINER_TARGETS__POD__IMAGE", "targets.pod.image"),
    ] {
        project
            .cmd()
            .env(var, "")
            .args(["config", "check"])
            .assert()
            .failure()
            .stderr(predicate::str::contains(format!("`{key}`")))
            .stderr(predicate::str::contains(format!("`{var}`")));
    }
}

// Tester defect 4: an empty image name got the charset message; it is refused as empty,
// naming the key and, when a variable set it, the variable.
#[test]
fn regression_an_empty_image_is_refused_as_empty_naming_its_key_and_variable() {
    let project = TestProject::init();
    let mut config = project.read("overbrainer.toml");
    config.push_str(
        "\n[targets.here]\nkind = \"local\"\nruntime = \"docker\"\nimage = \"\"\n\n\
         [targets.far]\nkind = \"ssh\"\nruntime = \"docker\"\n",
    );
    project.write("overbrainer.toml", &config);
    let output = project
        .cmd()
        .env("OVERBRAINER_TARGETS__FAR__IMAGE", " ")
        .env("OVERBRAINER_TARGETS__FAR__HOST", "me@far")
        .args(["config", "check"])
        .output()
        .unwrap();
    let text = crate::util::output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("`targets.here.image`: must not be empty (in `overbrainer.toml`"),
        "{text}"
    );
    assert!(
        text.contains(
            "`targets.far.image`: must not be empty (set by `OVERBRAINER_TARGETS__FAR__IMAGE`)"
        ),
        "{text}"
    );
    assert!(!text.contains("use only letters"), "{text}");
}

/// `config check` of the template plus `extra` fails, its error holding each of `said`
/// and none of `unsaid`.
fn config_check_refuses(extra: &str, said: &[&str], unsaid: &[&str]) {
    let project = TestProject::init();
    let config = project.read("overbrainer.toml") + extra;
    project.write("overbrainer.toml", &config);
    let output = project.cmd().args(["config", "check"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    for text in said {
        assert!(stderr.contains(text), "`{text}` missing in: {stderr}");
    }
    for text in unsaid {
        assert!(!stderr.contains(text), "`{text}` in: {stderr}");
    }
}

#[test]
fn auto_inside_a_gpu_types_list_is_refused_naming_the_key() {
    config_check_refuses(
        "\n[targets.pod]\nkind = \"runpod\"\ngpu_types = [\"auto\"]\nmax_hours = 1\n",
        &["targets.pod.gpu_types", "not a GPU type ID"],
        &[],
    );
}

#[test]
fn a_pre_tokenizer_llama_cpp_does_not_know_is_refused_by_config_check_without_its_value() {
    config_check_refuses(
        "\n[export]\npre_tokenizer = \"gtp-2-zx7qw9\"\n",
        &[
            "export.pre_tokenizer",
            "not a pre-tokenizer llama.cpp b11434 knows",
        ],
        &["zx7qw9"],
    );
}

// POD-3: the old key `gpu_type` is refused as an unknown field, pointing at `gpu_types`.
#[test]
fn the_old_gpu_type_key_is_refused_pointing_at_gpu_types() {
    config_check_refuses(
        "\n[targets.pod]\nkind = \"runpod\"\ngpu_type = \"NVIDIA A40\"\nmax_hours = 1\n",
        &[
            "targets.pod.gpu_type",
            "unknown field: not a known key here; did you mean `gpu_types`?",
        ],
        &[],
    );
}
