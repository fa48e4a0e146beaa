//! Tests of `runs::start`.

use super::*;

#[test]
fn container_names_carry_a_random_suffix_so_equal_run_ids_do_not_collide() {
    let suffixes: std::collections::BTreeSet<String> =
        (0..64).map(|_| container_suffix()).collect();
    assert!(suffixes.len() > 60, "{suffixes:?}");
    for suffix in &suffixes {
        assert!(
            suffix.len() == 8 && suffix.chars().all(|c| c.is_ascii_hexdigit()),
            "{suffix}"
        );
    }
    let mut a = crate::runs::record::fixture("demo_20260922-143005", State::Running);
    let mut b = a.clone();
    a.container_suffix = Some("0a1b2c3d".to_owned());
    b.container_suffix = Some("4e5f6a7b".to_owned());
    let runtime = crate::exec::JobRuntime::Container {
        engine: crate::config::Engine::Docker,
        image: "img".to_owned(),
        tools_cache: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let executor =
        crate::exec::AnyExecutor::Local(crate::exec::LocalExecutor::new(dir.path()).unwrap());
    let name = |record: &RunRecord| {
        crate::runs::target::job_spec(record, &executor, &runtime, &[]).container_name()
    };
    assert_eq!(name(&a), "overbrainer-demo_20260922-143005-0a1b2c3d");
    assert_ne!(name(&a), name(&b));
    // The record keeps the suffix; an older record without one reads as before.
    let text = serde_json::to_string(&a).unwrap();
    assert!(text.contains("\"container_suffix\":\"0a1b2c3d\""), "{text}");
    let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
    old.as_object_mut().unwrap().remove("container_suffix");
    let old: RunRecord = serde_json::from_value(old).unwrap();
    assert_eq!(old.container_suffix, None);
    assert_eq!(name(&old), "overbrainer-demo_20260922-143005");
}

#[test]
fn regression_a_data_file_of_blank_lines_or_a_byte_order_mark_alone_holds_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[u8], bool); 7] = [
        (b"", false),
        (b"\xef\xbb\xbf", false),
        (b"\n\n  \n", false),
        (b"\xef\xbb\xbf\n\t\r\n", false),
        (b"{}", true),
        (b"\xef\xbb\xbf{\"messages\": []}\n", true),
        (b"\n\n{\"messages\": []}", true),
    ];
    for (index, (bytes, holds)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("{index}.jsonl"));
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(non_empty(&path), *holds, "{bytes:?}");
    }
    assert!(!non_empty(&dir.path().join("missing.jsonl")));
    assert!(!non_empty(dir.path()));
}

fn resolved(kind: TargetKind, container: bool) -> Resolved {
    Resolved {
        name: "t".to_owned(),
        kind,
        runtime: if container {
            crate::exec::JobRuntime::Container {
                engine: crate::config::Engine::Docker,
                image: "img".to_owned(),
                tools_cache: None,
            }
        } else {
            crate::exec::JobRuntime::Native { venv: None }
        },
        host: None,
        workdir: None,
        runpod: None,
        slurm: None,
        gpu_count: 1,
    }
}

fn upload_settings(base: &str, upload: bool) -> Settings {
    let text = format!(
        "[project]\nname = \"x\"\n\n[training]\ntarget = \"t\"\nbase_model = \"{base}\"\nadapter = \"lora\"\nupload_base_model = {upload}\n\n[targets.t]\nkind = \"ssh\"\n"
    );
    toml::from_str(&text).unwrap()
}

// Issue 21: `upload_base_model` points `base_model` at the run directory's
// `./base_model`: its copy on a remote target or in a container, a link to the local
// directory itself on a local one without a container (relative, so that Axolotl's
// guess of the model's family from the path sees no directory above it); it is left
// alone when unset; a missing directory or a file is a problem naming both keys and
// the path.
#[test]
fn an_uploaded_base_model_is_the_run_directory_copy_and_must_be_a_local_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("overbrainer.toml"), "").unwrap();
    let project = Project::open(dir.path()).unwrap();
    let env = crate::env::EnvSnapshot::from_pairs([("HOME", "/home/me")]);
    let settings = upload_settings("attempts/mpt-like/tiny", true);
    let training = settings.training.as_ref().unwrap();
    let local = project.root().join("attempts/mpt-like/tiny");
    assert_eq!(
        local_base_model(&project, training, &env),
        Some(local.clone())
    );
    assert_eq!(effective(training).base_model, "./base_model");
    let linked = |kind, container| in_place(&resolved(kind, container));
    assert!(linked(TargetKind::Local, false));
    assert!(!linked(TargetKind::Local, true));
    assert!(!linked(TargetKind::Ssh, false));
    assert!(!linked(TargetKind::Slurm, false));

    let problem = base_model_problem(&project, &settings, &env).unwrap();
    assert!(
        problem.contains(&format!("`training.base_model` (`{}`)", local.display()))
            && problem.contains("`training.upload_base_model` is set"),
        "{problem}"
    );
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    std::fs::write(&local, "x").unwrap();
    let problem = base_model_problem(&project, &settings, &env).unwrap();
    assert!(problem.contains("is not a directory"), "{problem}");
    std::fs::remove_file(&local).unwrap();
    std::fs::create_dir(&local).unwrap();
    // An empty directory (or one without a model's `config.json`) is no model.
    let problem = base_model_problem(&project, &settings, &env).unwrap();
    assert!(problem.contains("has no `config.json`"), "{problem}");
    std::fs::write(local.join("config.json"), "{}").unwrap();
    assert_eq!(base_model_problem(&project, &settings, &env), None);

    // `~/` is the user's home directory, as a shell would read it.
    let home = upload_settings("~/models/tiny", true);
    let training = home.training.as_ref().unwrap();
    assert_eq!(
        local_base_model(&project, training, &env),
        Some(std::path::PathBuf::from("/home/me/models/tiny"))
    );

    let plain = upload_settings("Qwen/Qwen2.5-0.5B", false);
    let training = plain.training.as_ref().unwrap();
    assert_eq!(local_base_model(&project, training, &env), None);
    assert_eq!(effective(training).base_model, "Qwen/Qwen2.5-0.5B");
    assert_eq!(base_model_problem(&project, &plain, &env), None);
}

// A trial found a model directory in the project, named without `upload_base_model`,
// reaching the job as a Hub repo ID and failing there: it is warned about, naming both
// keys; a Hub ID, an absolute path, `~/` and the upload itself are not.
#[test]
fn a_project_model_directory_without_upload_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("overbrainer.toml"), "").unwrap();
    let project = Project::open(dir.path()).unwrap();
    std::fs::create_dir_all(dir.path().join("models/tiny")).unwrap();
    std::fs::write(dir.path().join("models/tiny/config.json"), "{}").unwrap();
    let hint = base_model_hint(&project, &upload_settings("models/tiny", false)).unwrap();
    assert!(
        hint.contains("`training.base_model` (`models/tiny`) is a model directory in the project")
            && hint.contains("set `upload_base_model = true`"),
        "{hint}"
    );
    for (base, upload) in [
        ("models/tiny", true),
        ("Qwen/Qwen2.5-0.5B", false),
        ("/models/tiny", false),
        ("~/models/tiny", false),
        ("models", false),
    ] {
        assert_eq!(
            base_model_hint(&project, &upload_settings(base, upload)),
            None,
            "{base} {upload}"
        );
    }
}
