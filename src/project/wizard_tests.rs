use std::os::unix::fs::PermissionsExt as _;

use super::*;
use crate::config::Settings;

const CANARY: &str = "sk-or-v1-WIZARDCANARY-7f3c9a1e5b2d4f6a8c0e2b4d6f8a1c3e5b7d9f0a";

fn answers(training: Training) -> Answers {
    Answers {
        name: "my child".to_owned(),
        provider: Provider {
            name: "openrouter".to_owned(),
            protocol: "openai".to_owned(),
            base_url: PRESETS[0].base_url.to_owned(),
            key: Key::Typed(SecretString::from(CANARY)),
        },
        generator: "openai/gpt-4o-mini".to_owned(),
        parent: "deepseek/deepseek-r1".to_owned(),
        reasoning: true,
        embedder: None,
        topics: vec![
            Topic {
                name: "sql_joins".to_owned(),
                description: "Joins in \"SQL\"".to_owned(),
                subtopics: 3,
                questions: 7,
            },
            Topic {
                name: "rust".to_owned(),
                description: "Rust".to_owned(),
                subtopics: 1,
                questions: 2,
            },
        ],
        training,
        base_model: "Qwen/Qwen2.5-0.5B-Instruct".to_owned(),
        adapter: "qlora".to_owned(),
    }
}

fn build(dir: &Path, answers: &Answers) -> Result<Files, WizardError> {
    files(
        dir,
        answers,
        &EnvSnapshot::from_pairs([("HOME", "/root")]),
        crate::check::RULES,
    )
}

/// Loads the written project as `config check` does.
fn load(dir: &Path, files: &Files) -> Settings {
    std::fs::write(dir.join("overbrainer.toml"), &files.config).unwrap();
    std::fs::write(dir.join(".env"), &files.env).unwrap();
    crate::check::load(dir, &EnvSnapshot::from_pairs([("HOME", "/root")]))
        .unwrap()
        .settings
}

#[test]
fn the_template_is_filled_in_with_its_comments_kept_and_loads() {
    let dir = tempfile::tempdir().unwrap();
    let built = build(dir.path(), &answers(Training::Skip)).unwrap();
    let text = &built.config;
    // The template's comments stay, beside the values they describe.
    for comment in [
        "# What the child should learn. One [[topics]] table per topic.",
        "subtopics = 3                 # subtopics to generate (>= 1)",
        "questions_per_subtopic = 7   # questions to keep per subtopic (>= 1)",
        "# LLM providers. `protocol` is `openai`",
        "# [training]",
        "# embedder = { provider = \"local_llm\"",
    ] {
        assert!(text.contains(comment), "{comment} missing from:\n{text}");
    }
    assert!(!text.contains("[providers.local_llm]"), "{text}");
    assert!(!text.contains("rust_ownership"), "{text}");
    assert!(!text.contains(CANARY));
    assert!(!text.contains("\n[training]"), "{text}");
    let settings = load(dir.path(), &built);
    assert_eq!(settings.project.name, "my child");
    let topics: Vec<_> = settings
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.description.as_str(),
                t.subtopics,
                t.questions_per_subtopic,
            )
        })
        .collect();
    assert_eq!(
        topics,
        [
            ("sql_joins", "Joins in \"SQL\"", 3, 7),
            ("rust", "Rust", 1, 2)
        ]
    );
    assert_eq!(
        settings.roles.parent.as_ref().unwrap().model,
        "deepseek/deepseek-r1"
    );
    assert_eq!(
        settings.roles.generator.as_ref().unwrap().provider,
        "openrouter"
    );
    assert!(settings.training.is_none());
}

#[test]
fn each_kind_of_training_writes_its_target_and_loads() {
    let cases = [
        (
            Training::Local { docker: true },
            "this_machine",
            "runtime = \"docker\"",
        ),
        (
            Training::Ssh {
                host: "me@gpu.example".to_owned(),
                docker: false,
            },
            "gpu_box",
            "runtime = \"native\"",
        ),
        (
            Training::Runpod {
                key: Key::Later,
                gpu_types: None,
            },
            "gpu_cloud",
            "gpu_types = \"auto\"",
        ),
        (
            Training::Runpod {
                key: Key::Vault("vault:secret/runpod#key".to_owned()),
                gpu_types: Some(vec!["NVIDIA GeForce RTX 4090".to_owned()]),
            },
            "gpu_cloud",
            "gpu_types = [\"NVIDIA GeForce RTX 4090\"]",
        ),
    ];
    for (training, target, line) in cases {
        let dir = tempfile::tempdir().unwrap();
        let built = build(dir.path(), &answers(training.clone())).unwrap();
        assert!(built.config.contains(line), "{line}:\n{}", built.config);
        assert!(built.config.contains(&format!("[targets.{target}]")));
        let settings = load(dir.path(), &built);
        let training_settings = settings.training.expect("[training]");
        assert_eq!(training_settings.target, target);
        assert_eq!(training_settings.base_model, "Qwen/Qwen2.5-0.5B-Instruct");
        assert!(settings.targets.contains_key(target), "{training:?}");
        match training {
            Training::Ssh { .. } => {
                assert!(
                    built
                        .env
                        .contains("OVERBRAINER_TARGETS__GPU_BOX__HOST=me@gpu.example\n")
                );
                assert!(
                    built
                        .env_example
                        .contains("OVERBRAINER_TARGETS__GPU_BOX__HOST=me@gpu.example\n")
                );
            }
            Training::Runpod {
                key: Key::Later, ..
            } => {
                assert!(built.env.contains("OVERBRAINER_RUNPOD__API_KEY=\n"));
            }
            Training::Runpod { .. } => {
                assert!(
                    built
                        .env
                        .contains("OVERBRAINER_RUNPOD__API_KEY='vault:secret/runpod#key'\n")
                );
                assert!(built.env_example.contains("OVERBRAINER_RUNPOD__API_KEY=\n"));
            }
            _ => {}
        }
    }
}

#[test]
fn env_holds_the_key_read_back_unchanged_and_the_example_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    for key in [CANARY, "a b'c\"d$e\\f", "pl#a'in", "x y"] {
        let mut answers = answers(Training::Skip);
        answers.provider.key = Key::Typed(SecretString::from(key));
        let built = build(dir.path(), &answers).unwrap();
        let read: Vec<(String, String)> = dotenvy::from_read_iter(built.env.as_bytes())
            .map(Result::unwrap)
            .collect();
        assert_eq!(
            read,
            [
                (
                    "OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL".to_owned(),
                    "https://openrouter.ai/api/v1".to_owned()
                ),
                (
                    "OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY".to_owned(),
                    key.to_owned()
                ),
            ]
        );
        assert!(!built.env_example.contains(key));
        assert!(
            built
                .env_example
                .contains("OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY=\n")
        );
        assert!(!built.config.contains(key));
    }
}

#[test]
fn a_custom_provider_and_an_embedder_are_named_in_every_role() {
    let dir = tempfile::tempdir().unwrap();
    let mut answers = answers(Training::Skip);
    answers.provider = Provider {
        name: "my_llm".to_owned(),
        protocol: "anthropic".to_owned(),
        base_url: "http://127.0.0.1:9/v1".to_owned(),
        key: Key::Later,
    };
    answers.reasoning = false;
    answers.embedder = Some("nomic-embed-text".to_owned());
    // Embeddings need the OpenAI protocol: refused, naming the role.
    let error = build(dir.path(), &answers).err().expect("refused");
    assert!(
        error_chain(&error).contains("roles.embedder.provider"),
        "{error:?}"
    );
    answers.provider.protocol = "openai".to_owned();
    let built = build(dir.path(), &answers).unwrap();
    assert!(
        built
            .config
            .contains("[providers.my_llm]\nprotocol = \"openai\""),
        "{}",
        built.config
    );
    assert!(!built.config.contains("[providers.openrouter]"));
    assert!(
        built
            .env
            .contains("OVERBRAINER_PROVIDERS__MY_LLM__API_KEY=\n")
    );
    let settings = load(dir.path(), &built);
    assert_eq!(settings.roles.parent.as_ref().unwrap().provider, "my_llm");
    assert_eq!(
        settings.roles.embedder.as_ref().map(|r| r.model.as_str()),
        Some("nomic-embed-text")
    );
}

#[test]
fn invalid_answers_are_refused_naming_the_key_and_never_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let mut duplicate = answers(Training::Skip);
    duplicate.topics[1].name = "sql_joins".to_owned();
    let error = build(dir.path(), &duplicate).err().expect("refused");
    let text = format!("{error}: {}", error_chain(&error));
    assert!(text.contains("topics"), "{text}");

    let mut broken = answers(Training::Skip);
    broken.provider.key = Key::Typed(SecretString::from(format!("{CANARY}\nX=1")));
    let error = build(dir.path(), &broken).err().expect("refused");
    let text = format!("{error:?} {error}");
    assert!(
        text.contains("OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY"),
        "{text}"
    );
    assert!(!text.contains(CANARY));
    assert!(!format!("{broken:?}").contains(CANARY));
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = String::new();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[test]
fn a_write_failing_midway_removes_what_it_created() {
    let dir = tempfile::tempdir().unwrap();
    // `blocker` is a file where a directory must go: the second file cannot be created.
    std::fs::write(dir.path().join("blocker"), "").unwrap();
    let files = vec![
        ("overbrainer.toml".to_owned(), "x".to_owned()),
        ("new/deep/a.txt".to_owned(), "a".to_owned()),
        ("blocker/b.txt".to_owned(), "b".to_owned()),
    ];
    let private = vec![(".env".to_owned(), "K=v\n".to_owned())];
    let error = super::super::init::write_new(dir.path(), "p", &files, &private).unwrap_err();
    assert!(error.to_string().contains("blocker/b.txt"), "{error}");
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["blocker"]);

    // A complete write: `.env` private, the rest as usual, `.gitignore` entries added.
    let files = vec![("overbrainer.toml".to_owned(), "x".to_owned())];
    let report = super::super::init::write_new(dir.path(), "p", &files, &private).unwrap();
    assert_eq!(report.written, ["overbrainer.toml", ".env"]);
    assert_eq!(report.gitignore_added, 2);
    let mode = |name: &str| {
        std::fs::metadata(dir.path().join(name))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode(".env"), 0o600);
    // Nothing is ever replaced: the same write again names the first file there.
    let error = super::super::init::write_new(dir.path(), "p", &files, &private).unwrap_err();
    assert!(
        matches!(error, super::super::init::InitError::Exists { .. }),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".env")).unwrap(),
        "K=v\n"
    );
}
