//! The Dataset view's deletion (TUI-34, TUI-35) as a flow runs it on the blocking pool:
//! the item and its dependents go through [`crate::dataset::delete::delete`], the call
//! the library offers every front end, then `split` runs again through
//! [`crate::pipeline::split::run`], the call `overbrainer split` makes. The TUI holds the
//! project lock (LCK-1, TUI-1) the whole time, the lock every writing command takes.

use std::path::Path;
use std::time::Duration;

use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use crate::config::{EnvSnapshot, Settings};
use crate::dataset::delete::{Target, delete};
use crate::pipeline::Event;

/// What `target` names, in words.
#[must_use]
pub fn describe(target: &Target) -> String {
    match target {
        Target::Topic { topic } => format!("topic `{topic}` (no longer configured)"),
        Target::Subtopic { topic, subtopic } => format!("subtopic `{subtopic}` of topic `{topic}`"),
        Target::Question { id } => format!("question {id}"),
        Target::Answer { id } => format!("the answer of question {id}"),
    }
}

/// Deletes `target` in the project at `root`, then splits again. Returns the status
/// line's text and the split's warnings.
///
/// # Errors
///
/// The status line's text when the deletion or the split failed (naming the file).
pub fn delete_then_split(
    root: &Path,
    settings: &Settings,
    env: &EnvSnapshot,
    target: &Target,
) -> Result<(String, Vec<String>), String> {
    let what = describe(target);
    delete(&crate::dataset::DataFiles::new(&root.join("data")), target)
        .map_err(|error| format!("{what} not deleted: {error}"))?;
    let (split, warnings) = split_again(root, settings, env).map_err(|error| {
        format!("deleted {what}; `split` failed: {error}; run `overbrainer split`")
    })?;
    Ok((format!("deleted {what}; {split}"), warnings))
}

/// Runs `split` again as `overbrainer split` does, after a dataset edit or deletion (TUI-35).
/// Returns `split again: train N · eval M` and the split's warnings.
///
/// # Errors
///
/// The split's error, in words.
pub fn split_again(
    root: &Path,
    settings: &Settings,
    env: &EnvSnapshot,
) -> Result<(String, Vec<String>), String> {
    let (events, mut received) = unbounded_channel();
    let context = super::stages::pipeline_context(
        root,
        settings,
        env,
        events,
        (CancellationToken::new(), Duration::from_secs(1)),
    );
    let report = crate::pipeline::split::run(&context, None);
    let mut warnings = Vec::new();
    while let Ok(event) = received.try_recv() {
        if let Event::Warning(text) = event {
            warnings.push(text);
        }
    }
    if let Some(error) = report.error {
        return Err(error.to_string());
    }
    Ok((
        format!(
            "split again: train {} · eval {}",
            report.total.train, report.total.eval
        ),
        warnings,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANSWER: &str = concat!(
        r#"{"id":"ID","topic":"t","subtopic":"SUB","messages":[{"role":"user","content":"q"},"#,
        r#"{"role":"assistant","content":"a"}],"meta":{"model":"m","input_tokens":1,"#,
        r#""output_tokens":2,"finish_reason":"stop","reasoning_kind":null,"excluded":null}}"#,
        "\n"
    );

    #[test]
    fn a_deleted_subtopic_leaves_the_files_with_its_dependents_and_split_runs_again() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        let files = crate::dataset::DataFiles::new(&data);
        std::fs::write(
            files.subtopics(),
            "{\"topic\":\"t\",\"subtopic\":\"a\"}\n{\"topic\":\"t\",\"subtopic\":\"b\"}\n",
        )
        .unwrap();
        std::fs::write(
            files.questions(),
            "{\"id\":\"1\",\"topic\":\"t\",\"subtopic\":\"a\",\"question\":\"q1\"}\n\
             {\"id\":\"2\",\"topic\":\"t\",\"subtopic\":\"b\",\"question\":\"q2\"}\n",
        )
        .unwrap();
        let answers = ANSWER.replace("ID", "1").replace("SUB", "a")
            + &ANSWER.replace("ID", "2").replace("SUB", "b");
        std::fs::write(files.answers(), &answers).unwrap();
        // A split written before the deletion still holds question 1.
        std::fs::write(files.train(), ANSWER.replace("ID", "1").replace("SUB", "a")).unwrap();
        let settings = Settings {
            topics: vec![crate::config::Topic {
                name: "t".into(),
                description: String::new(),
                subtopics: 2,
                questions_per_subtopic: 1,
            }],
            ..Settings::default()
        };
        let target = Target::Subtopic {
            topic: "t".into(),
            subtopic: "a".into(),
        };
        let (said, _) =
            delete_then_split(dir.path(), &settings, &EnvSnapshot::default(), &target).unwrap();
        assert!(
            said.starts_with("deleted subtopic `a` of topic `t`; split again"),
            "{said}"
        );
        let read = |path: std::path::PathBuf| std::fs::read_to_string(path).unwrap_or_default();
        assert_eq!(
            read(files.subtopics()),
            "{\"topic\":\"t\",\"subtopic\":\"b\"}\n"
        );
        assert!(!read(files.questions()).contains("\"id\":\"1\""));
        assert!(!read(files.answers()).contains("\"id\":\"1\""));
        assert!(read(files.answers()).contains("\"id\":\"2\""));
        let split = read(files.train()) + &read(files.eval());
        assert!(!split.contains("\"id\":\"1\""), "split ran again: {split}");
        assert!(split.contains("\"id\":\"2\""), "split ran again: {split}");
        assert!(read(files.rejected()).contains("\"subtopic\":\"a\""));
    }
}
