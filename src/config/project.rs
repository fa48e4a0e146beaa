//! `[project]` and `[[topics]]`: what the project is called and what it is about, with
//! their rules (spec/config.md, tables 2.1 and 2.2).

use serde::{Deserialize, Serialize};

use super::rules::Check;

/// `[project]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProjectSettings {
    /// Project name, used for run IDs and the default Hub repository. Required.
    #[serde(default)]
    pub name: String,
}

/// One `[[topics]]` entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Topic {
    /// Unique name of the topic.
    pub name: String,
    /// Free text handed to the prompt templates.
    #[serde(default)]
    pub description: String,
    /// Number of subtopics to generate, at least 1.
    pub subtopics: u32,
    /// Number of questions to keep per subtopic, at least 1.
    pub questions_per_subtopic: u32,
}

/// The rules of `[project]` and `[[topics]]`: a name, unique topic names, counts of at
/// least 1.
pub(super) fn check(check: &mut Check<'_>, project: &ProjectSettings, topics: &[Topic]) {
    check.non_empty("project.name", &project.name);

    let mut seen = std::collections::BTreeSet::new();
    for (i, topic) in topics.iter().enumerate() {
        let key = |k: &str| format!("topics.{i}.{k}");
        check.non_empty(&key("name"), &topic.name);
        if !seen.insert(topic.name.as_str()) {
            check.fail(
                key("name"),
                format!("topic `{}` is declared twice", topic.name),
            );
        }
        check.at_least(&key("subtopics"), topic.subtopics.into(), 1);
        check.at_least(
            &key("questions_per_subtopic"),
            topic.questions_per_subtopic.into(),
            1,
        );
    }
}
