//! `overbrainer export RUN_ID [--quantize TYPE] [--ollama NAME]`: a trained run to a GGUF
//! with the pinned llama.cpp, on the run's target, then retrieved (see `export`). Takes
//! the project lock (EXP-2); Ctrl-C cancels the export job (EXP-15).

use std::process::ExitCode;

use super::Context;
use crate::export::{ExportEvent, Request};

/// Arguments of `export`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The run to export (succeeded).
    #[arg(value_name = "RUN_ID", add = clap_complete::ArgValueCompleter::new(super::complete::run_ids))]
    pub run_id: String,
    /// Quantization type, over `export.quantize`.
    #[arg(long, value_name = "TYPE")]
    pub quantize: Option<String>,
    /// Ollama model name, over `export.ollama_name`.
    #[arg(long, value_name = "NAME")]
    pub ollama: Option<String>,
}

/// Runs `export`.
///
/// # Errors
///
/// For a bad run ID or type, a held lock, a refusal of the preflight, a failed job or
/// retrieval.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let cancel = super::follow::ctrl_c();
    let (project, loaded) = ctx.load()?;
    let _lock = project.lock()?;
    let (events, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let request = Request {
        run_id: args.run_id.clone(),
        quantize: args.quantize.clone(),
        ollama: args.ollama.clone(),
    };
    let flow = crate::export::export(
        &project,
        &loaded.settings,
        &loaded.env,
        &request,
        &events,
        &cancel,
    );
    let exported =
        crate::pipeline::pump::pump(&mut receiver, Box::pin(flow), |event| match event {
            ExportEvent::Started {
                export_id,
                source,
                quantize,
                target,
            } => errln!("export: {export_id} of {source} to {quantize} on target {target}"),
            ExportEvent::Step(what) => errln!("export: step {what}"),
            ExportEvent::JobLog(line) => tracing::debug!("job.log: {line}"),
            ExportEvent::OllamaMissing { command } => errln!(
                "warning: `ollama` is not on PATH; to make the Ollama model run:\n  {command}"
            ),
        })
        .await?;
    #[allow(clippy::cast_precision_loss, reason = "a size in MB with one decimal")]
    let mb = exported.record.size as f64 / 1_000_000.0;
    outln!(
        "{} ({}, {mb:.1} MB, tensor types {}); Modelfile beside it",
        exported.gguf.display(),
        exported.record.quantize,
        exported.record.tensor_types.join(", ")
    );
    if let Some(name) = &exported.ollama {
        outln!("ollama model {name} created; run it with: ollama run {name}");
    }
    Ok(ExitCode::SUCCESS)
}
