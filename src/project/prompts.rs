//! The built-in prompt templates (TPL-3, TPL-4): what `init` writes to `prompts/` and what
//! the stages use when a file there is absent. They are minijinja templates; the variables
//! each one receives are listed in spec/pipeline.md, TPL-2.

/// One built-in template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prompt {
    /// File name under `prompts/` (`subtopics.txt`).
    pub file_name: &'static str,
    /// The template text.
    pub text: &'static str,
    /// Variables the template receives (TPL-2).
    pub variables: &'static [&'static str],
}

/// `prompts/subtopics.txt`: asks the generator for a JSON array of subtopic names.
pub const SUBTOPICS: Prompt = Prompt {
    file_name: "subtopics.txt",
    text: include_str!("prompts/subtopics.txt"),
    variables: &["topic", "description", "count"],
};

/// `prompts/questions.txt`: asks the generator for a JSON array of questions.
pub const QUESTIONS: Prompt = Prompt {
    file_name: "questions.txt",
    text: include_str!("prompts/questions.txt"),
    variables: &["topic", "description", "subtopic", "count", "accepted"],
};

/// `prompts/answer_system.txt`: the parent's system prompt.
pub const ANSWER_SYSTEM: Prompt = Prompt {
    file_name: "answer_system.txt",
    text: include_str!("prompts/answer_system.txt"),
    variables: &["topic", "description"],
};

/// `prompts/judge.txt`: asks the judge for `{"verdict": "A"|"B"|"tie", "reason": ...}`.
pub const JUDGE: Prompt = Prompt {
    file_name: "judge.txt",
    text: include_str!("prompts/judge.txt"),
    variables: &["question", "answer_a", "answer_b"],
};

/// Every built-in template, in the order `init` writes them.
pub const ALL: [Prompt; 4] = [SUBTOPICS, QUESTIONS, ANSWER_SYSTEM, JUDGE];

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(name: &str) -> minijinja::Value {
        match name {
            "accepted" => minijinja::Value::from(vec!["Why?", "How?"]),
            "count" => minijinja::Value::from(3),
            other => minijinja::Value::from(format!("<{other}>")),
        }
    }

    #[test]
    fn every_template_renders_with_exactly_its_variables_under_strict_undefined() {
        for prompt in ALL {
            let mut env = minijinja::Environment::new();
            env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
            env.add_template(prompt.file_name, prompt.text).unwrap();
            let template = env.get_template(prompt.file_name).unwrap();
            let context: std::collections::BTreeMap<&str, minijinja::Value> =
                prompt.variables.iter().map(|v| (*v, sample(v))).collect();
            let text = template.render(&context).unwrap();
            for variable in prompt.variables {
                if *variable != "accepted" && *variable != "count" {
                    assert!(
                        text.contains(&format!("<{variable}>")),
                        "{} lacks {variable}",
                        prompt.file_name
                    );
                }
            }
            // Missing any variable other than an optional description fails (TPL-1).
            for missing in prompt.variables.iter().filter(|v| **v != "description") {
                let partial: std::collections::BTreeMap<&str, minijinja::Value> = prompt
                    .variables
                    .iter()
                    .filter(|v| *v != missing)
                    .map(|v| (*v, sample(v)))
                    .collect();
                assert!(
                    template.render(&partial).is_err(),
                    "{} without {missing}",
                    prompt.file_name
                );
            }
        }
    }
}
