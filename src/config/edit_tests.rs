use std::os::unix::fs::PermissionsExt as _;

use super::*;
use crate::config::{Problem, Provenance, Settings};

const TEXT: &str = r#"# The project.
[project]
name = "demo"   # kept

[[topics]]
name = "rust"
# Three of them.
subtopics = 3
questions_per_subtopic = 2

[providers.local]
protocol = "openai"

[roles]
generator = { provider = "local", model = "m" }
parent = { provider = "local", model = "m" }
embedder = { provider = "local", model = "e" }

[pipeline]
concurrency = 8 # how many at once
"#;

fn no_rules(_: &Settings, _: &Provenance, _: &mut Vec<Problem>) {}

fn edited(changes: &[Change]) -> String {
    apply(Path::new("overbrainer.toml"), TEXT, changes).unwrap()
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, TEXT).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    dir
}

#[test]
fn a_set_value_keeps_every_comment_and_the_untouched_bytes() {
    let after = edited(&[Change::Set("pipeline.concurrency".into(), Value::from(16))]);
    assert_eq!(
        after,
        TEXT.replace("concurrency = 8 # how", "concurrency = 16 # how")
    );
    let after = edited(&[Change::Set("project.name".into(), Value::from("other"))]);
    assert_eq!(
        after,
        TEXT.replace("\"demo\"   # kept", "\"other\"   # kept")
    );
}

#[test]
fn keys_reach_arrays_of_tables_inline_tables_and_new_tables() {
    let after = edited(&[
        Change::Set("topics.0.subtopics".into(), Value::from(5)),
        Change::Set("roles.parent.model".into(), Value::from("big")),
        Change::Set("training.epochs".into(), Value::from(2)),
        Change::Set("targets.box.kind".into(), Value::from("ssh")),
        Change::Unset("topics.0.questions_per_subtopic".into()),
    ]);
    assert!(
        after.contains("# Three of them.\nsubtopics = 5\n"),
        "{after}"
    );
    assert!(!after.contains("questions_per_subtopic"), "{after}");
    assert!(
        after.contains(r#"parent = { provider = "local", model = "big" }"#),
        "{after}"
    );
    assert!(after.contains("[training]\nepochs = 2\n"), "{after}");
    assert!(after.contains("[targets.box]\nkind = \"ssh\"\n"), "{after}");
    assert!(!after.contains("[targets]\n"), "an implicit table: {after}");
}

#[test]
fn env_only_keys_and_keys_through_values_are_refused_by_name() {
    let fail = |change: Change| apply(Path::new("overbrainer.toml"), TEXT, &[change]).unwrap_err();
    let error = fail(Change::Set(
        "providers.local.api_key".into(),
        Value::from("x"),
    ));
    assert_eq!(
        error.to_string(),
        "`providers.local.api_key` may only be set in the environment or `.env` \
         (`OVERBRAINER_PROVIDERS__LOCAL__API_KEY`); change it there"
    );
    let error = fail(Change::Set("topics.3.name".into(), Value::from("x")));
    assert_eq!(error.to_string(), "`topics.3.name`: there is no item 3");
    // A number under a table is a key: a target may be named `4090`.
    let after = edited(&[Change::Set(
        "targets.4090.kind".into(),
        Value::from("local"),
    )]);
    assert!(
        after.contains("[targets.4090]\nkind = \"local\"\n"),
        "{after}"
    );
    let after = apply(
        Path::new("overbrainer.toml"),
        &after,
        &[Change::Unset("targets.4090".into())],
    )
    .unwrap();
    assert!(!after.contains("kind"), "{after}");
    let error = fail(Change::Set("pipeline.concurrency.x".into(), Value::from(1)));
    assert_eq!(
        error.to_string(),
        "`pipeline.concurrency.x`: `x` is under a value that is not a table"
    );
    let error = fail(Change::Unset("compare.max_tokens".into()));
    assert_eq!(
        error.to_string(),
        "`compare.max_tokens`: there is no `compare`"
    );
    let broken = apply(Path::new("overbrainer.toml"), "[project\n", &[]).unwrap_err();
    assert!(matches!(broken, EditError::Syntax { .. }), "{broken}");
}

#[test]
fn a_save_writes_the_valid_change_keeping_the_mode_and_undo_restores_it() {
    let dir = project();
    let path = dir.path().join(FILE_NAME);
    let env = EnvSnapshot::default();
    let saved = save(
        dir.path(),
        TEXT,
        &[Change::Set("pipeline.concurrency".into(), Value::from(4))],
        &env,
        no_rules,
    )
    .unwrap();
    assert_eq!(saved.loaded.settings.pipeline.concurrency, 4);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), saved.after);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    let loaded = undo(dir.path(), &saved.before, &saved.after, &env, no_rules).unwrap();
    assert_eq!(loaded.settings.pipeline.concurrency, 8);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), TEXT);
    // The undo point is spent: the file no longer holds what it wrote.
    let again = undo(dir.path(), &saved.before, &saved.after, &env, no_rules).unwrap_err();
    assert!(matches!(again, EditError::Changed { .. }), "{again}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, [FILE_NAME], "no temporary is left");
}

#[test]
fn an_invalid_change_a_changed_file_and_a_link_write_nothing() {
    let dir = project();
    let path = dir.path().join(FILE_NAME);
    let env = EnvSnapshot::default();
    let change = [Change::Set("pipeline.concurrency".into(), Value::from(0))];
    let error = save(dir.path(), TEXT, &change, &env, no_rules).unwrap_err();
    let EditError::Invalid(ConfigError::Invalid { problems, .. }) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(problems[0].key, "pipeline.concurrency", "{problems:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), TEXT);

    let wrong_type = [Change::Set(
        "pipeline.concurrency".into(),
        Value::from("many"),
    )];
    let error = save(dir.path(), TEXT, &wrong_type, &env, no_rules).unwrap_err();
    assert!(matches!(error, EditError::Invalid(_)), "{error}");

    let changed = TEXT.replace("8 #", "9 #");
    std::fs::write(&path, &changed).unwrap();
    let ok = [Change::Set("pipeline.concurrency".into(), Value::from(4))];
    let error = save(dir.path(), TEXT, &ok, &env, no_rules).unwrap_err();
    assert!(matches!(error, EditError::Changed { .. }), "{error}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), changed);

    let real = dir.path().join("real.toml");
    std::fs::rename(&path, &real).unwrap();
    std::os::unix::fs::symlink(&real, &path).unwrap();
    let error = save(dir.path(), &changed, &ok, &env, no_rules).unwrap_err();
    assert!(matches!(error, EditError::Link { .. }), "{error}");
    assert_eq!(std::fs::read_to_string(&real).unwrap(), changed);
}

/// A value shown, what is typed, what it stands for.
type Case<'a> = (&'a str, &'a str, Result<Option<&'a str>, &'a str>);

#[test]
fn typed_input_is_read_by_the_kind_of_the_value_shown() {
    let parsed = |shown: &str, input: &str| {
        parse_input(shown, input).map(|v| v.map(|v| v.to_string().trim().to_owned()))
    };
    let cases: &[Case<'_>] = &[
        ("\"demo\"", "other name", Ok(Some("\"other name\""))),
        ("\"demo\"", "\"quoted\"", Ok(Some("\"quoted\""))),
        ("\"demo\"", "true", Ok(Some("\"true\""))),
        ("\"demo\"", "  ", Ok(None)),
        ("8", "16", Ok(Some("16"))),
        ("8", "1_000", Ok(Some("1000"))),
        ("8", "2.5", Ok(Some("2.5"))),
        ("8", "many", Err("`many` is not a number")),
        ("8", "inf", Err("`inf` is not a number")),
        ("0.0002", "3", Ok(Some("3.0"))),
        ("0.0002", "1e-5", Ok(Some("1e-5"))),
        ("true", "false", Ok(Some("false"))),
        ("true", "yes", Err("`yes` is not true or false")),
        (
            "[\"NVIDIA A40\"]",
            "NVIDIA A40, NVIDIA L40S",
            Ok(Some("[\"NVIDIA A40\", \"NVIDIA L40S\"]")),
        ),
        ("[1]", "[2, 3]", Ok(Some("[2, 3]"))),
        ("(unset)", "12", Ok(Some("12"))),
        ("(unset)", "some text", Ok(Some("\"some text\""))),
        ("(unset)", "a, b", Ok(Some("[\"a\", \"b\"]"))),
    ];
    for (shown, input, want) in cases {
        let want = want.map(|v| v.map(str::to_owned)).map_err(str::to_owned);
        assert_eq!(parsed(shown, input), want, "{shown} <- {input}");
    }
}

#[test]
fn a_choice_cycles_through_its_values_and_unset_when_optional() {
    let next = |key: &str, shown: &str| {
        next_choice(key, shown).map(|v| v.map(|v| v.as_str().unwrap_or_default().to_owned()))
    };
    assert_eq!(
        next("training.adapter", "\"lora\""),
        Some(Some("qlora".into()))
    );
    assert_eq!(
        next("training.adapter", "\"full\""),
        Some(Some("lora".into()))
    );
    assert_eq!(next("training.on_stall", "\"cancel\""), Some(None));
    assert_eq!(
        next("training.on_stall", "(unset)"),
        Some(Some("warn".into()))
    );
    assert_eq!(
        next("providers.x.protocol", "\"openai\""),
        Some(Some("anthropic".into()))
    );
    assert_eq!(next("training.epochs", "1"), None);
}

#[test]
fn tables_are_added_and_removed_whole_and_topics_by_index() {
    let after = edited(&[
        Change::Table(
            "targets.gpu".into(),
            vec![
                ("kind".into(), Value::from("runpod")),
                ("gpu_types".into(), Value::from("auto")),
            ],
        ),
        Change::Push(
            "topics".into(),
            vec![
                ("name".into(), Value::from("go")),
                ("subtopics".into(), Value::from(5)),
            ],
        ),
        Change::Unset("providers.local".into()),
    ]);
    assert!(
        after.contains("[targets.gpu]\nkind = \"runpod\"\ngpu_types = \"auto\"\n"),
        "{after}"
    );
    assert!(
        after.contains("[[topics]]\nname = \"go\"\nsubtopics = 5\n"),
        "{after}"
    );
    assert!(!after.contains("providers"), "{after}");
    assert!(
        after.contains("# Three of them."),
        "the first topic is kept: {after}"
    );
    let after = apply(
        Path::new("overbrainer.toml"),
        &after,
        &[Change::Unset("topics.0".into())],
    )
    .unwrap();
    assert!(!after.contains("rust"), "{after}");
    assert!(after.contains("name = \"go\""), "{after}");
    let exists = apply(
        Path::new("overbrainer.toml"),
        TEXT,
        &[Change::Table("providers.local".into(), Vec::new())],
    )
    .unwrap_err();
    assert_eq!(exists.to_string(), "`providers.local`: it exists already");
    let missing = apply(
        Path::new("overbrainer.toml"),
        TEXT,
        &[Change::Unset("topics.4".into())],
    )
    .unwrap_err();
    assert_eq!(missing.to_string(), "`topics.4`: there is no item 4");
}

#[test]
fn gpu_types_and_data_centers_take_auto_or_a_list() {
    let parsed = |key: &str, input: &str| {
        parse_field(key, "\"auto\"", input).map(|v| v.map(|v| v.to_string().trim().to_owned()))
    };
    let gpu = "targets.gpu.gpu_types";
    assert_eq!(parsed(gpu, "auto"), Ok(Some("\"auto\"".into())));
    assert_eq!(
        parsed(gpu, "NVIDIA A40"),
        Ok(Some("[\"NVIDIA A40\"]".into()))
    );
    assert_eq!(
        parsed("targets.gpu.data_center_ids", "EU-RO-1, US-TX-3"),
        Ok(Some("[\"EU-RO-1\", \"US-TX-3\"]".into()))
    );
    assert_eq!(parsed(gpu, ""), Ok(None));
    assert_eq!(parsed("project.name", "auto"), Ok(Some("\"auto\"".into())));
}
