//! What an export starts from (EXP-1, EXP-4 step 1): whether the run can be exported,
//! and which model of its run directory (a merged model, an adapter to merge, a full
//! fine-tune's, or a stopped run's partial one), found on the target or in this
//! machine's copy.

use std::fmt::Write as _;

use super::ExportError;
use super::script::Source;
use crate::exec::{AnyExecutor, Executor as _, quote};
use crate::runs::RunError;
use crate::runs::record::{RunRecord, State};
use crate::train::axolotl::{AXOLOTL_YAML, MERGED_DIR, OUTPUT_DIR};

/// A top-level `key: value` of an `axolotl.yaml` overbrainer wrote (values are JSON
/// scalars there).
pub(crate) fn yaml_value(yaml: &str, key: &str) -> Option<serde_json::Value> {
    yaml.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?.trim();
        serde_json::from_str(rest)
            .ok()
            .or_else(|| Some(serde_json::Value::String(rest.to_owned())))
    })
}

/// The snapshot's step when `record` is a stopped run with a snapshot (a partial
/// model), `None` when it succeeded.
///
/// # Errors
///
/// [`ExportError::NotExportable`] for any other state (EXP-1).
pub(super) fn exportable(
    record: &RunRecord,
) -> Result<Option<&crate::runs::record::Snapshot>, ExportError> {
    match (record.state, &record.snapshot) {
        (State::Succeeded, _) => Ok(None),
        (State::Stopped, Some(snapshot)) => Ok(Some(snapshot)),
        (state, _) => Err(ExportError::NotExportable {
            run_id: record.id.clone(),
            state: state.name(),
        }),
    }
}

/// The files whose presence decides the model, relative to the run directory, in the
/// order they are tried, each with what it means: for a succeeded run
/// `output/merged/`, an adapter in `output/`, a full fine-tune's `output/`; for a
/// stopped one (EXP-1) what Axolotl saved in `output/` when it stopped, else the
/// snapshot's `checkpoint`.
fn candidates(checkpoint: Option<&str>) -> Vec<(String, bool)> {
    let mut dirs = Vec::new();
    if checkpoint.is_none() {
        dirs.push((format!("{OUTPUT_DIR}/{MERGED_DIR}"), false));
    }
    dirs.push((OUTPUT_DIR.to_owned(), true));
    if let Some(checkpoint) = checkpoint {
        dirs.push((format!("{OUTPUT_DIR}/{checkpoint}"), true));
    }
    let mut files = Vec::new();
    for (dir, adapter) in dirs {
        if adapter {
            files.push((format!("{dir}/adapter_config.json"), true));
        }
        files.push((format!("{dir}/config.json"), false));
    }
    files
}

/// The model from the candidate files present (`found`, relative to the run
/// directory): the first in [`candidates`]' order.
fn pick(
    run_dir: &str,
    checkpoint: Option<&str>,
    found: &[&str],
    yaml: &str,
    run_id: &str,
) -> Result<Option<Source>, ExportError> {
    for (file, adapter) in candidates(checkpoint) {
        if !found.contains(&file.as_str()) {
            continue;
        }
        let dir = file.rsplit_once('/').map_or("", |(dir, _)| dir);
        let dir = format!("{run_dir}/{dir}");
        if !adapter {
            return Ok(Some(Source::Model(dir)));
        }
        let Some(serde_json::Value::String(base_model)) = yaml_value(yaml, "base_model") else {
            return Err(ExportError::NoModel {
                run_id: run_id.to_owned(),
                reason: format!("`{AXOLOTL_YAML}` names no `base_model` to merge the adapter into"),
            });
        };
        return Ok(Some(Source::Adapter {
            base_model: crate::train::axolotl::resolve_in_run_dir(run_dir, &base_model),
            adapter: dir,
        }));
    }
    Ok(None)
}

/// The model to export, as the target holds it (EXP-4 step 1, EXP-1); see
/// [`candidates`].
pub(super) async fn model_source(
    executor: &AnyExecutor,
    record: &RunRecord,
    yaml: &str,
    checkpoint: Option<&str>,
) -> Result<Source, ExportError> {
    let run_dir = record.dir.trim_end_matches('/');
    let mut script = format!("cd {} 2>/dev/null || exit 0\n", quote(run_dir));
    script.push_str("[ -f axolotl.yaml ] || exit 0\n");
    for (file, _) in candidates(checkpoint) {
        let file = quote(&file);
        let _ = writeln!(script, "[ -f {file} ] && printf '%s\\n' {file}");
    }
    script.push_str("exit 0\n");
    let answer = executor
        .probe(&script)
        .await
        .map_err(|source| RunError::Exec {
            target: record.target.clone(),
            source: Box::new(source),
        })?;
    let answer = String::from_utf8_lossy(&answer);
    let found: Vec<&str> = answer.lines().collect();
    pick(run_dir, checkpoint, &found, yaml, &record.id)?.ok_or_else(|| ExportError::NoModel {
        run_id: record.id.clone(),
        reason: match checkpoint {
            None => format!(
                "neither `{OUTPUT_DIR}/{MERGED_DIR}/`, an adapter nor a full model in `{OUTPUT_DIR}/` on target `{}`",
                record.target
            ),
            Some(checkpoint) => format!(
                "neither an adapter nor a model in `{OUTPUT_DIR}/` or `{OUTPUT_DIR}/{checkpoint}/` on target `{}`",
                record.target
            ),
        },
    })
}

/// Checks that this machine's copy of the run holds a model to send back (EXP-11).
pub(super) fn local_model(
    local_dir: &std::path::Path,
    record: &RunRecord,
    checkpoint: Option<&str>,
) -> Result<(), ExportError> {
    let found: Vec<String> = candidates(checkpoint)
        .into_iter()
        .map(|(file, _)| file)
        .filter(|file| local_dir.join(file).is_file())
        .collect();
    if found.is_empty() || !local_dir.join(AXOLOTL_YAML).is_file() {
        return Err(ExportError::NoModel {
            run_id: record.id.clone(),
            reason: format!(
                "the run directory on target `{}` has lost its model and `{}` holds none to send back",
                record.target,
                local_dir.display()
            ),
        });
    }
    Ok(())
}
