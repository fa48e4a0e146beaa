//! Prompt templates (TPL-1..TPL-4): minijinja templates read from `prompts/`, falling
//! back to the built-in defaults (`init` writes the same text); an undefined variable is
//! an error.

use std::path::Path;

use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

/// Built-in `prompts/subtopics.txt`.
pub const DEFAULT_SUBTOPICS: &str = "\
You are helping build a training dataset about the topic \"{{ topic }}\".
{% if description %}Topic description: {{ description }}
{% endif %}
List {{ count }} distinct subtopics of this topic that together cover it well.
Answer with a JSON array of strings only, one subtopic name per string, and nothing else.
";

/// Built-in `prompts/questions.txt`.
pub const DEFAULT_QUESTIONS: &str = "\
You are helping build a training dataset about the topic \"{{ topic }}\".
{% if description %}Topic description: {{ description }}
{% endif %}Subtopic: {{ subtopic }}

Write {{ count }} new, self-contained questions about this subtopic that an expert could
answer in depth. Vary their difficulty and form.
{% if accepted %}Do not repeat or rephrase any of these existing questions:
{% for question in accepted %}- {{ question }}
{% endfor %}{% endif %}
Answer with a JSON array of strings only, one question per string, and nothing else.
";

/// Built-in `prompts/answer_system.txt`.
pub const DEFAULT_ANSWER_SYSTEM: &str = "\
You are a leading expert on {{ topic }}.{% if description %} {{ description }}{% endif %}
Answer the user's question accurately and thoroughly, as an expert would, explaining your
reasoning where it helps.
";

/// Built-in `prompts/judge.txt` (used by `compare`).
pub const DEFAULT_JUDGE: &str = "\
You are judging two answers to the same question.

Question:
{{ question }}

Answer A:
{{ answer_a }}

Answer B:
{{ answer_b }}

Which answer is better: more correct, more complete and clearer? Reply with a JSON object
only: {\"verdict\": \"A\" | \"B\" | \"tie\", \"reason\": \"<one sentence>\"}.
";

/// The four templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Template {
    /// `prompts/subtopics.txt`.
    Subtopics,
    /// `prompts/questions.txt`.
    Questions,
    /// `prompts/answer_system.txt`.
    AnswerSystem,
    /// `prompts/judge.txt`.
    Judge,
}

impl Template {
    /// Every template, in the order `init` writes them.
    pub const ALL: [Self; 4] = [
        Self::Subtopics,
        Self::Questions,
        Self::AnswerSystem,
        Self::Judge,
    ];

    /// The prompt files of a new project: every template's file name and built-in text
    /// (TPL-3), for `project::init::create`.
    #[must_use]
    pub fn init_files() -> [(&'static str, &'static str); 4] {
        Self::ALL.map(|t| (t.file_name(), t.default_text()))
    }

    /// The file name under `prompts/`.
    #[must_use]
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Subtopics => "subtopics.txt",
            Self::Questions => "questions.txt",
            Self::AnswerSystem => "answer_system.txt",
            Self::Judge => "judge.txt",
        }
    }

    /// The built-in text, the one `init` writes (TPL-3).
    #[must_use]
    pub fn default_text(self) -> &'static str {
        match self {
            Self::Subtopics => DEFAULT_SUBTOPICS,
            Self::Questions => DEFAULT_QUESTIONS,
            Self::AnswerSystem => DEFAULT_ANSWER_SYSTEM,
            Self::Judge => DEFAULT_JUDGE,
        }
    }
}

/// A template that cannot be read or rendered. Fatal for the stage (TPL-1).
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The file exists but cannot be read.
    #[error("cannot read the template `{}`", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Syntax error or undefined variable.
    #[error("template `prompts/{name}` cannot be rendered: {source}")]
    Render {
        /// The file name.
        name: &'static str,
        /// The cause, with the line.
        #[source]
        source: minijinja::Error,
    },
}

/// One template's source, loaded from `prompts/` or built in.
#[derive(Debug, Clone)]
pub struct Prompt {
    template: Template,
    source: String,
}

impl Prompt {
    /// Loads `template` from `prompts_dir`, or the built-in text when the file is absent
    /// (TPL-3).
    ///
    /// # Errors
    ///
    /// [`TemplateError::Read`] when the file exists but cannot be read.
    pub fn load(prompts_dir: &Path, template: Template) -> Result<Self, TemplateError> {
        let path = prompts_dir.join(template.file_name());
        let source = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                template.default_text().to_owned()
            }
            Err(source) => return Err(TemplateError::Read { path, source }),
        };
        Ok(Self { template, source })
    }

    /// The template's text, as loaded (compare keys its verdicts by it, CMP-18).
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders with `context`, strictly: an undefined variable is an error (TPL-1).
    ///
    /// # Errors
    ///
    /// [`TemplateError::Render`] on a syntax error or an undefined variable.
    pub fn render<C: Serialize>(&self, context: C) -> Result<String, TemplateError> {
        let name = self.template.file_name();
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(true);
        let render = || -> Result<String, minijinja::Error> {
            env.add_template(name, &self.source)?;
            env.get_template(name)?.render(context)
        };
        render().map_err(|source| TemplateError::Render { name, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;

    #[test]
    fn defaults_render_with_their_variables() {
        let dir = tempfile::tempdir().unwrap();
        let sub = Prompt::load(dir.path(), Template::Subtopics).unwrap();
        let text = sub
            .render(context! { topic => "Rust", description => "", count => 3 })
            .unwrap();
        assert!(text.contains("List 3 distinct subtopics") && text.contains("JSON array"));
        let q = Prompt::load(dir.path(), Template::Questions).unwrap();
        let text = q
            .render(context! { topic => "Rust", description => "d", subtopic => "s", count => 2, accepted => vec!["old?"] })
            .unwrap();
        assert!(text.contains("- old?"));
        let a = Prompt::load(dir.path(), Template::AnswerSystem).unwrap();
        assert!(
            a.render(context! { topic => "Rust", description => "" })
                .unwrap()
                .contains("expert on Rust")
        );
        let j = Prompt::load(dir.path(), Template::Judge).unwrap();
        assert!(
            j.render(context! { question => "q", answer_a => "a", answer_b => "b" })
                .unwrap()
                .contains("verdict")
        );
    }

    #[test]
    fn files_override_and_undefined_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("subtopics.txt"),
            "Give {{ count }} for {{ topic }} {{ nope }}",
        )
        .unwrap();
        let sub = Prompt::load(dir.path(), Template::Subtopics).unwrap();
        let error = sub
            .render(context! { topic => "Rust", description => "", count => 3 })
            .unwrap_err();
        assert!(
            error.to_string().contains("prompts/subtopics.txt"),
            "{error}"
        );
        std::fs::write(
            dir.path().join("subtopics.txt"),
            "Give {{ count }} for {{ topic }}",
        )
        .unwrap();
        let sub = Prompt::load(dir.path(), Template::Subtopics).unwrap();
        assert_eq!(
            sub.render(context! { topic => "Rust", description => "", count => 3 })
                .unwrap(),
            "Give 3 for Rust"
        );
    }
}
