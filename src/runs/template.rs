//! The chat template check of a run start (TGT-12, decided by rendering \[design\]): reads
//! the template Axolotl will use from the target (the base model's `chat_template.jinja`
//! or `tokenizer_config.json`, Axolotl's own template file in the venv, or
//! `chat_template_jinja`), renders it on a probe conversation shaped like the training
//! data ([`crate::train::template`]) and says whether to start quietly, warn or refuse.
//! When the template cannot be read (a Hub model ID, a container runtime) TGT-12's rule
//! by name decides, and the warning says so.

use std::io::BufRead as _;
use std::path::Path;

use super::RunError;
use super::target::Resolved;
use crate::config::Training;
use crate::dataset::Message;
use crate::exec::{AnyExecutor, Executor as _, JobRuntime, shell_path};
use crate::train::template::{self, Choice, Decision, Template};

/// The most bytes read of one tokenizer or template file.
const READ_LIMIT: u64 = 32 << 20;

/// Where Axolotl keeps its templates, under a Python prefix.
const AXOLOTL_TEMPLATES: &str = "site-packages/axolotl/utils/chat_templates/templates";

/// The first conversation of `train` with reasoning, or else its first conversation.
fn data_shape(train: &Path) -> Result<(Option<Vec<Message>>, bool), RunError> {
    #[derive(serde::Deserialize)]
    struct Line {
        messages: Vec<Message>,
    }
    let io = |source| RunError::Io {
        path: train.to_owned(),
        source,
    };
    let file = std::fs::File::open(train).map_err(io)?;
    let mut first = None;
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(io)?;
        let Ok(Line { messages }) = serde_json::from_str(line.trim_start_matches('\u{feff}'))
        else {
            continue;
        };
        if template::has_reasoning(&messages) {
            return Ok((Some(messages), true));
        }
        first.get_or_insert(messages);
    }
    Ok((first, false))
}

/// A target file's text; `None` when it is missing or empty.
async fn read(
    executor: &AnyExecutor,
    target: &str,
    path: &str,
) -> Result<Option<String>, RunError> {
    let bytes = executor
        .read_from(path, 0, READ_LIMIT)
        .await
        .map_err(|source| RunError::Exec {
            target: target.to_owned(),
            source: Box::new(source),
        })?;
    Ok((!bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes).into_owned()))
}

/// A base model file's text, from the target or, with `here`, from this machine (a
/// base model still to upload, `training.upload_base_model`); `None` when it is
/// missing or empty.
async fn read_base(
    executor: &AnyExecutor,
    target: &str,
    here: bool,
    path: &str,
) -> Result<Option<String>, RunError> {
    use std::io::Read as _;
    if !here {
        return read(executor, target, path).await;
    }
    let mut bytes = Vec::new();
    match std::fs::File::open(path) {
        Ok(file) => {
            file.take(READ_LIMIT)
                .read_to_end(&mut bytes)
                .map_err(|source| RunError::Io {
                    path: path.into(),
                    source,
                })?;
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(RunError::Io {
                path: path.into(),
                source,
            });
        }
    }
    Ok((!bytes.is_empty()).then(|| String::from_utf8_lossy(&bytes).into_owned()))
}

/// Axolotl's template `name` from its installation on the target; `Err` says why it
/// cannot be read.
async fn named(executor: &AnyExecutor, target: &Resolved, name: &str) -> Result<Template, String> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("`{name}` is not an Axolotl template name"));
    }
    let prefix = match &target.runtime {
        JobRuntime::Native { venv: Some(venv) } => shell_path(venv.trim_end_matches('/')),
        JobRuntime::Native { venv: None } => {
            "\"$(p=$(command -v axolotl) && dirname \"$(dirname \"$p\")\")\"".to_owned()
        }
        JobRuntime::Container { .. } => {
            return Err("Axolotl's templates are inside the container image".to_owned());
        }
    };
    let script = format!(
        "for f in {prefix}/lib/python3*/{AXOLOTL_TEMPLATES}/{name}.jinja; do if [ -f \"$f\" ]; then cat \"$f\"; exit 0; fi; done; exit 1"
    );
    match executor.probe(&script).await {
        Ok(bytes) if !bytes.is_empty() => Ok(Template {
            source: String::from_utf8_lossy(&bytes).into_owned(),
            ..Template::default()
        }),
        _ => Err(format!(
            "Axolotl's template `{name}` was not found on target `{}`",
            target.name
        )),
    }
}

/// The run's template and what to call it in messages; `Err` says why it cannot be read.
async fn find(
    executor: &AnyExecutor,
    target: &Resolved,
    training: &Training,
    here: bool,
) -> Result<Result<(Template, String), String>, RunError> {
    match template::choice(training) {
        Choice::Named(name) => Ok(named(executor, target, &name)
            .await
            .map(|t| (t, format!("the chat template `{name}`")))),
        Choice::Jinja(None) => Ok(Err("`chat_template_jinja` is not set".to_owned())),
        Choice::Jinja(Some(text)) => {
            let source = if text.contains("{{") || text.contains("{%") {
                Some(text)
            } else {
                read(executor, &target.name, &text).await?
            };
            Ok(source
                .map(|source| {
                    let template = Template {
                        source,
                        ..Template::default()
                    };
                    (
                        template,
                        "the chat template of `chat_template_jinja`".to_owned(),
                    )
                })
                .ok_or_else(|| "the file of `chat_template_jinja` cannot be read".to_owned()))
        }
        Choice::Tokenizer { fallback } => {
            let base = training.base_model.trim_end_matches('/');
            if !(base.starts_with('/') || base.starts_with("~/")) {
                return Ok(Err(format!(
                    "the base model `{base}` is not a directory, so its template was not read"
                )));
            }
            let jinja = read_base(
                executor,
                &target.name,
                here,
                &format!("{base}/chat_template.jinja"),
            )
            .await?;
            let config = read_base(
                executor,
                &target.name,
                here,
                &format!("{base}/tokenizer_config.json"),
            )
            .await?;
            match template::tokenizer_template(jinja.as_deref(), config.as_deref()) {
                Err(reason) => Ok(Err(format!("`{base}`: {reason}"))),
                Ok(Some(found)) => Ok(Ok((
                    found,
                    format!("the chat template of the base model `{base}`"),
                ))),
                Ok(None) => match fallback {
                    Some(name) => Ok(named(executor, target, &name)
                        .await
                        .map(|t| (t, format!("the fallback chat template `{name}`")))),
                    None => Ok(Err(format!(
                        "target `{}` has neither `{base}/chat_template.jinja` nor a `chat_template` in `{base}/tokenizer_config.json`",
                        target.name
                    ))),
                },
            }
        }
    }
}

/// The chat template decision by name alone (TGT-12's rule), for a target that cannot
/// be read before the run exists (a Runpod pod is made for the run): `reason` says why.
///
/// # Errors
///
/// [`RunError::Io`] when `train` cannot be read.
pub fn check_by_name(
    training: &Training,
    train: &Path,
    reason: &str,
) -> Result<Decision, RunError> {
    let (_, has_reasoning) = data_shape(train)?;
    Ok(template::decide_by_name(training, reason, has_reasoning))
}

/// The chat template decision of a run on `target` training on `train` (a local file).
/// With `here`, `training.base_model` is a directory on this machine still to upload,
/// read here.
///
/// # Errors
///
/// [`RunError::Io`] when `train` cannot be read, [`RunError::Exec`] when the target
/// cannot be read from.
pub async fn check(
    executor: &AnyExecutor,
    target: &Resolved,
    training: &Training,
    here: bool,
    train: &Path,
) -> Result<Decision, RunError> {
    let (shape, has_reasoning) = data_shape(train)?;
    let unchecked = |reason: String| template::decide_by_name(training, &reason, has_reasoning);
    Ok(match find(executor, target, training, here).await? {
        Err(reason) => unchecked(reason),
        Ok((found, what)) => match template::verdict(&found, shape.as_deref()) {
            Ok(verdict) => template::decide(&what, &verdict, has_reasoning),
            Err(error) => unchecked(format!("{what} cannot be rendered here: {error}")),
        },
    })
}
