//! `overbrainer export RUN_ID [--quantize TYPE] [--ollama NAME] [--target NAME]`: a
//! trained run (or a stopped one's partial model) to a GGUF with the pinned llama.cpp,
//! on the run's target or `--target`'s, then retrieved (see `export`); `overbrainer export attach EXPORT_ID` follows
//! an export's job again when the process that started it is gone. Takes the project
//! lock (EXP-2); Ctrl-C, `SIGTERM` and `SIGHUP` cancel the export job (EXP-15).

use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use super::Context;
use crate::export::{ExportEvent, Exported, Request};

/// Arguments of `export`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    /// `attach EXPORT_ID`.
    #[command(subcommand)]
    pub action: Option<Action>,
    /// The run to export (succeeded, or stopped with a snapshot: its partial model).
    #[arg(value_name = "RUN_ID", required = true, add = clap_complete::ArgValueCompleter::new(super::complete::run_ids))]
    pub run_id: Option<String>,
    /// Quantization type, over `export.quantize`.
    #[arg(long, value_name = "TYPE")]
    pub quantize: Option<String>,
    /// Ollama model name, over `export.ollama_name`.
    #[arg(long, value_name = "NAME")]
    pub ollama: Option<String>,
    /// The target the export runs on, over the run's own (the one `local` target for
    /// a run whose pod is gone).
    #[arg(long, value_name = "NAME", add = clap_complete::ArgValueCompleter::new(super::complete::targets))]
    pub target: Option<String>,
}

/// `export`'s subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Follow an export's job again (its process ended without cancelling it) and
    /// collect its GGUF as `export` would.
    Attach {
        /// `export_<YYYYMMDD>-<HHMMSS>`, or `RUN_ID/EXPORT_ID` when several runs have it.
        #[arg(value_name = "EXPORT_ID")]
        export_id: String,
    },
}

/// A token cancelled by Ctrl-C, `SIGTERM` or `SIGHUP`: an export job is never left
/// running because its follower was told to end (EXP-15).
fn interrupted() -> CancellationToken {
    let token = CancellationToken::new();
    let on_signal = token.clone();
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
        on_signal.cancel();
    });
    token
}

/// Runs `export`.
///
/// # Errors
///
/// For a bad run ID or type, a held lock, a refusal of the preflight, a failed job or
/// retrieval.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let cancel = interrupted();
    let (project, loaded) = ctx.load()?;
    let _lock = project.lock()?;
    let (events, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let flow: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>> = match &args.action {
        Some(Action::Attach { export_id }) => Box::pin(crate::export::attach(
            &project,
            &loaded.settings,
            &loaded.env,
            export_id,
            &events,
            &cancel,
        )),
        None => {
            let request = Request {
                run_id: args.run_id.clone().unwrap_or_default(),
                quantize: args.quantize.clone(),
                ollama: args.ollama.clone(),
                target: args.target.clone(),
            };
            Box::pin(async move {
                crate::export::export(
                    &project,
                    &loaded.settings,
                    &loaded.env,
                    &request,
                    &events,
                    &cancel,
                )
                .await
            })
        }
    };
    let exported = crate::pipeline::pump::pump(&mut receiver, flow, render).await?;
    result(&exported);
    Ok(ExitCode::SUCCESS)
}

fn render(event: ExportEvent) {
    match event {
        ExportEvent::Started {
            export_id,
            source,
            quantize,
            target,
            partial_step,
        } => {
            errln!("export: {export_id} of {source} to {quantize} on target {target}");
            if let Some(step) = partial_step {
                errln!(
                    "export: the run stopped at a snapshot: this is its partial model, from step {step}"
                );
            }
        }
        ExportEvent::Attached {
            export_id,
            run_id,
            target,
        } => errln!("export: following {export_id} of run {run_id} on target {target} again"),
        ExportEvent::Reuploaded { files } => errln!(
            "export: the run directory on the target had lost its model: sent this machine's copy back ({files} files, checked)"
        ),
        ExportEvent::Step(what) => errln!("export: step {what}"),
        ExportEvent::JobLog(line) => tracing::debug!("job.log: {line}"),
        ExportEvent::OllamaMissing { command } => {
            errln!("warning: `ollama` is not on PATH; to make the Ollama model run:\n  {command}");
        }
    }
}

fn result(exported: &Exported) {
    #[allow(clippy::cast_precision_loss, reason = "a size in MB with one decimal")]
    let mb = exported.record.size as f64 / 1_000_000.0;
    let partial = exported
        .record
        .partial_step
        .map_or_else(String::new, |step| {
            format!("; a partial model, from step {step} of a stopped run")
        });
    let modelfile = exported
        .gguf
        .parent()
        .and_then(|dir| std::fs::read_to_string(dir.join("Modelfile")).ok());
    let file_name = exported
        .gguf
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    outln!(
        "{} ({}, {mb:.1} MB, tensor types {}); {}{partial}",
        exported.gguf.display(),
        exported.record.quantize,
        exported.record.tensor_types.join(", "),
        modelfile_note(&file_name, modelfile.as_deref())
    );
    if let Some(name) = &exported.ollama {
        outln!("ollama model {name} created; run it with: ollama run {name}");
    }
}

/// What the `Modelfile` in the GGUF's folder says of GGUF `file_name`: one `Modelfile`
/// serves the folder, so a later export of another quantization rewrites it.
fn modelfile_note(file_name: &str, modelfile: Option<&str>) -> String {
    let Some(text) = modelfile else {
        return "no Modelfile beside it".to_owned();
    };
    let from = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("FROM "))
        .map(str::trim);
    match from {
        Some(from) if from.trim_start_matches("./") == file_name => {
            "Modelfile beside it".to_owned()
        }
        Some(from) => format!(
            "the Modelfile beside it now names `{from}` (a later export); export this quantization again to point it here"
        ),
        None => "a Modelfile beside it without a FROM line".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modelfile_note_says_when_a_later_export_took_the_modelfile() {
        let mine = "r-Q8_0.gguf";
        assert_eq!(
            modelfile_note(mine, Some("FROM ./r-Q8_0.gguf\nPARAMETER num_ctx 256\n")),
            "Modelfile beside it"
        );
        assert!(
            modelfile_note(mine, Some("FROM ./r-Q4_K_M.gguf\n"))
                .contains("now names `./r-Q4_K_M.gguf`")
        );
        assert_eq!(modelfile_note(mine, None), "no Modelfile beside it");
        assert!(modelfile_note(mine, Some("PARAMETER x\n")).contains("without a FROM"));
    }
}
