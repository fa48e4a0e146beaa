//! The flows as a front end other than the command line drives them: a pipeline session
//! and the `run` sequence through library calls only (stand-in providers, the real Axolotl
//! and the tiny model), and the chat template check of a run start reading the run's
//! actual template from the real Axolotl venv and the tiny model (issue 9).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use overbrainer::config::EnvSnapshot;
use overbrainer::pipeline::sequence::{self, Ended, FlowEvent};
use overbrainer::pipeline::{Event, Stage, session};
use overbrainer::runs::follow::Outcome;
use overbrainer::runs::{RunEvent, State};
use overbrainer::train::template::Decision;
use wiremock::MockServer;

use super::pipeline::{KEY, config, mount_generator, mount_parent, project};
use super::training::{Setup, Training, training_env};
use super::util::output_text;

/// A venv whose `axolotl` is the real one, run as the training tests run it (on the CPU,
/// the Hub offline): a job started by this test process inherits its environment.
fn offline_venv(dir: &Path) -> PathBuf {
    let real = training_env().venv.join("bin");
    let venv = dir.join("offline-venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    let program = venv.join("bin/axolotl");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\nPATH='{real}':\"$PATH\" HF_HUB_OFFLINE=1 CUDA_VISIBLE_DEVICES= exec '{real}/axolotl' \"$@\"\n",
            real = real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    venv
}

fn training_section(model: &Path, venv: &Path) -> String {
    format!(
        r#"
[training]
target = "here"
base_model = "{model}"
adapter = "lora"
epochs = 1
learning_rate = 1e-3
lora_r = 4
lora_alpha = 8
sequence_len = 256
micro_batch_size = 8
gradient_accumulation_steps = 1
optimizer = "adamw_torch"
sample_packing = false
evals_per_epoch = 1
saves_per_epoch = 1
merge = false

[training.axolotl_extra]
max_steps = 2
# A data set of a few hundred examples: one process prepares it faster than a pool.
dataset_num_proc = 1
bf16 = false
fp16 = false
tf32 = false
lora_mlp_kernel = false
lora_qkv_kernel = false
lora_o_kernel = false

[targets.here]
kind = "local"
venv = "{venv}"
"#,
        model = model.display(),
        venv = venv.display()
    )
}

/// The run's events: followed, trained, and no warning about the template, which renders
/// the reasoning the data holds (the demo's false warning).
fn assert_run_events(seen: &[FlowEvent]) {
    let runs: Vec<&RunEvent> = seen
        .iter()
        .filter_map(|e| match e {
            FlowEvent::Run(event) => Some(event),
            _ => None,
        })
        .collect();
    assert!(runs.iter().any(|e| matches!(e, RunEvent::Following { .. })));
    assert!(runs.iter().any(|e| matches!(e, RunEvent::Train(_))));
    let warnings: Vec<&overbrainer::runs::RunWarning> = runs
        .iter()
        .filter_map(|e| match e {
            RunEvent::Warning(warning) => Some(warning),
            _ => None,
        })
        .collect();
    assert!(
        !warnings
            .iter()
            .any(|w| matches!(w, overbrainer::runs::RunWarning::TemplateDropsReasoning(_))),
        "{warnings:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_front_end_drives_the_stages_and_a_training_run_through_library_calls() {
    let server = MockServer::start().await;
    mount_generator(&server, Duration::ZERO).await;
    mount_parent(&server).await;
    let project = project(&config("openai", "parent-model", true, ""));
    let venv = offline_venv(&project.home());
    let text = project.read("overbrainer.toml") + &training_section(&training_env().model, &venv);
    project.write("overbrainer.toml", &text);
    let env = EnvSnapshot::from_pairs([
        ("OVERBRAINER_PROVIDERS__STAND__BASE_URL", server.uri()),
        ("OVERBRAINER_PROVIDERS__STAND__API_KEY", KEY.to_owned()),
        ("OVERBRAINER_PROVIDERS__OTHER__BASE_URL", server.uri()),
        ("OVERBRAINER_PROVIDERS__OTHER__API_KEY", KEY.to_owned()),
        ("OVERBRAINER_TEST_SECOND_MS", "10".to_owned()),
    ]);

    let (mut session, mut stage_events) = session::open(project.path(), &env).unwrap();
    // A second session on the same project is refused while this one holds the lock.
    let held = session::open(project.path(), &env).unwrap_err();
    assert!(matches!(held, session::SessionError::Lock(_)), "{held}");
    let (out, mut events) = tokio::sync::mpsc::unbounded_channel();
    let ended = sequence::run(&mut session, &mut stage_events, &out)
        .await
        .unwrap();
    drop(out);
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        seen.push(event);
    }

    // The stages reported in order, each its own events before its report.
    let reports: Vec<String> = seen
        .iter()
        .filter_map(|event| match event {
            FlowEvent::StageEnded(report) => {
                assert!(report.succeeded(), "{report:?}");
                Some(report.stage.name().to_owned())
            }
            FlowEvent::SplitEnded(report) => {
                assert!(report.succeeded(), "{report:?}");
                assert_eq!((report.total.train, report.total.eval), (5, 1));
                Some("split".to_owned())
            }
            _ => None,
        })
        .collect();
    assert_eq!(reports, ["subtopics", "questions", "answers", "split"]);
    let answers_started = seen
        .iter()
        .position(|e| {
            matches!(
                e,
                FlowEvent::Stage(Event::Started {
                    stage: Stage::Answers,
                    ..
                })
            )
        })
        .expect("answers started");
    let answers_ended = seen
        .iter()
        .position(|e| matches!(e, FlowEvent::StageEnded(r) if r.stage == Stage::Answers))
        .unwrap();
    assert!(answers_started < answers_ended);
    let first_run_event = seen
        .iter()
        .position(|e| matches!(e, FlowEvent::Run(_)))
        .expect("run events");
    let split_ended = seen
        .iter()
        .position(|e| matches!(e, FlowEvent::SplitEnded(_)))
        .unwrap();
    assert!(split_ended < first_run_event);

    assert_run_events(&seen);
    let train = project.read("data/train.jsonl");
    assert!(train.contains("\"reasoning_content\""), "{train}");
    let Ended::Trained(outcome) = ended else {
        panic!("{ended:?}")
    };
    let Outcome::Ended(record) = *outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(record.state, State::Succeeded, "{record:?}");
    assert!(
        project
            .path()
            .join("runs")
            .join(&record.id)
            .join("output/adapter_config.json")
            .is_file()
    );
}

/// The decision of a run start on a `local` target with the real Axolotl venv, training
/// on the demo data (which holds reasoning).
async fn decision(base_model: Option<&str>, extra: &str) -> Decision {
    let training = Training::new(&Setup {
        base_model,
        extra,
        ..Setup::default()
    });
    let root = training.project.path();
    let loaded = overbrainer::check::load(root, &EnvSnapshot::default()).unwrap();
    let settings = loaded.settings;
    let target = overbrainer::runs::target::resolve(&settings, "local").unwrap();
    let runs_dir = root.join("runs");
    std::fs::create_dir_all(&runs_dir).unwrap();
    let executor = overbrainer::runs::target::connect(&target, &runs_dir, &EnvSnapshot::default())
        .await
        .unwrap();
    overbrainer::runs::template::check(
        &executor,
        &target,
        settings.training.as_ref().unwrap(),
        false,
        &root.join("data/train.jsonl"),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_run_start_renders_the_runs_actual_template_from_the_venv_and_the_model() {
    // The tiny model's own template renders the reasoning: nothing to say.
    assert_eq!(decision(None, "").await, Decision::Fine);
    // Axolotl's qwen3, read from the venv, renders it after the last user turn, which is
    // where the single-turn demo data has it.
    assert_eq!(
        decision(None, "chat_template = \"qwen3\"\n").await,
        Decision::Fine
    );
    // Axolotl's chatml drops it: the data holds reasoning, so the start is refused with
    // the fix.
    match decision(None, "chat_template = \"chatml\"\n").await {
        Decision::Refuse(text) => {
            assert!(text.contains("the chat template `chatml`"), "{text}");
            assert!(
                text.contains("training.axolotl_extra.chat_template"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    // A Hub model ID cannot be read: TGT-12's rule by name, saying so.
    match decision(Some("meta-llama/Llama-3.2-1B"), "").await {
        Decision::Warn(text) => assert!(text.contains("checked by name only"), "{text}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(decision(Some("Qwen/Qwen3-0.6B"), "").await, Decision::Fine);
}

#[test]
fn train_refuses_a_template_that_drops_the_datas_reasoning_before_a_run_exists() {
    let training = Training::new(&Setup {
        extra: "chat_template = \"chatml\"\n",
        ..Setup::default()
    });
    let output = training.cmd().arg("train").output().unwrap();
    let text = output_text(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("the chat template `chatml` drops the `reasoning_content`"),
        "{text}"
    );
    assert!(training.run_ids().is_empty(), "{text}");
}

/// `template` rendered on `messages` by the venv's Python `jinja2` as `transformers`
/// renders chat templates (a sandboxed environment with `trim_blocks`, `lstrip_blocks`
/// and loop controls).
fn jinja2_render(template: &str, messages: &serde_json::Value) -> String {
    const SCRIPT: &str = "import json, sys\nfrom jinja2.sandbox import ImmutableSandboxedEnvironment\nfrom jinja2.ext import loopcontrols\nargs = json.load(sys.stdin)\nenv = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])\nmessages = args['messages']\nsys.stdout.write(env.from_string(args['template']).render(messages=messages, add_generation_prompt=False, real_last_index=len(messages) - 1, bos_token='', eos_token=''))\n";
    let python = training_env().venv.join("bin/python3");
    let mut child = std::process::Command::new(&python)
        .args(["-c", SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e}; `make test` installs the Axolotl venv",
                python.display()
            )
        });
    let input = serde_json::json!({"template": template, "messages": messages});
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), input.to_string().as_bytes()).unwrap();
    drop(child.stdin.take());
    let output =
        crate::util::wait_output(child, std::time::Duration::from_secs(120), "python3 jinja2");
    assert!(output.status.success(), "jinja2 failed");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn minijinja_renders_the_probe_exactly_as_transformers_jinja2_does() {
    use overbrainer::dataset::Message;
    use overbrainer::train::template::{Template, probe, render};
    let templates = training_env()
        .venv
        .join("lib/python3.11/site-packages/axolotl/utils/chat_templates/templates");
    let message = |role: &str| Message {
        role: role.to_owned(),
        content: String::new(),
        reasoning_content: None,
    };
    let multi_turn = [
        message("system"),
        message("user"),
        message("assistant"),
        message("user"),
        message("assistant"),
    ];
    for path in [
        templates.join("chatml.jinja"),
        templates.join("qwen3.jinja"),
        training_env().model.join("chat_template.jinja"),
    ] {
        let source = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; `make test` installs it", path.display()));
        let template = Template {
            source: source.clone(),
            ..Template::default()
        };
        for shape in [None, Some(&multi_turn[..])] {
            let messages = probe(shape);
            let ours = render(&template, &messages).unwrap();
            let theirs = jinja2_render(&source, &serde_json::to_value(&messages).unwrap());
            assert_eq!(ours, theirs, "{}", path.display());
        }
    }
}
