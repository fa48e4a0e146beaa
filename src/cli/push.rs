//! `overbrainer push RUN_ID [--repo NAMESPACE/NAME] [--public] [--overwrite-card]
//! [--dry-run]`: a run's model to the Hugging Face Hub in one commit (see `hub`). Takes the
//! project lock; Ctrl-C before the commit commits nothing (HUB-11).

use std::process::ExitCode;

use tokio_util::sync::CancellationToken;

use super::Context;
use crate::config::{EnvSnapshot, Settings};
use crate::hub::after::{AfterOutcome, Skip};
use crate::hub::{self, Event, HubError, Outcome, PushRecord};
use crate::project::Project;
use crate::runs::RunRecord;

/// Arguments of `push`.
#[derive(Debug, clap::Args)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent command-line flags"
)]
pub struct Args {
    /// The run to push.
    #[arg(value_name = "RUN_ID", add = clap_complete::ArgValueCompleter::new(super::complete::run_ids))]
    pub run_id: String,
    /// The repo, `NAMESPACE/NAME` (default: `[hub] repo`, else `<account>/<project name>`).
    #[arg(long, value_name = "NAMESPACE/NAME")]
    pub repo: Option<String>,
    /// Create a repo that does not exist yet public (or push to an existing public one).
    #[arg(long)]
    pub public: bool,
    /// Replace the repo's README.md even without the overbrainer marker.
    #[arg(long)]
    pub overwrite_card: bool,
    /// Show what would be pushed; send nothing, need no token.
    #[arg(long)]
    pub dry_run: bool,
    /// Push even when the newest compare is missing or below `[compare] min_win_or_tie`.
    #[arg(long)]
    pub no_gate: bool,
}

/// Megabytes with one decimal (HUB-9).
#[allow(clippy::cast_precision_loss, reason = "sizes shown to 0.1 MB")]
fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1_000_000.0)
}

fn visibility(private: bool) -> &'static str {
    if private { "private" } else { "public" }
}

fn render(event: &Event) {
    match event {
        Event::RepoExists { repo, private } => {
            errln!("push: {repo} exists; it remains {}", visibility(*private));
        }
        Event::RepoCreated { repo, private } => {
            errln!("push: created {repo} ({})", visibility(*private));
        }
        Event::CardKept => errln!(
            "push: kept the repo's own README.md (it lacks {}); pass --overwrite-card to replace it",
            hub::card::MARKER
        ),
        Event::Uploading { path, size } => errln!("push: uploading {path} ({})", mb(*size)),
        Event::AlreadyUploaded { path } => errln!("push: {path} is on the Hub already, not sent"),
        Event::Retrying { what, why, wait } => {
            errln!(
                "push: {what}: the Hub {why}; trying again in {:.1} s",
                wait.as_secs_f64()
            );
        }
        Event::Committing => errln!("push: committing"),
    }
}

/// Runs `push`.
///
/// # Errors
///
/// For an unknown or ineligible run, a held lock, a missing or refused token, a refused
/// repo, an unreadable file, a Hub error, or a cancel before the commit.
pub async fn run(ctx: &Context, args: &Args) -> anyhow::Result<ExitCode> {
    let (project, loaded) = ctx.load()?;
    let _lock = project.lock()?;
    let request = hub::Request {
        run_id: args.run_id.clone(),
        repo: args.repo.clone(),
        public: args.public,
        overwrite_card: args.overwrite_card,
        dry_run: args.dry_run,
        no_gate: args.no_gate,
    };
    let cancel = super::follow::ctrl_c();
    let outcome = rendered(async |events| {
        hub::push(
            &project,
            &loaded.settings,
            &ctx.env,
            &request,
            events,
            &cancel,
        )
        .await
    })
    .await;
    match outcome? {
        Outcome::DryRun(plan) => {
            outln!(
                "push: {} ({} when created); dry run, nothing is sent",
                plan.repo,
                visibility(plan.private)
            );
            for file in &plan.files {
                outln!("  {}  {}", file.path, mb(file.size));
            }
            let card = plan.card.strip_prefix(project.root()).unwrap_or(&plan.card);
            outln!(
                "{} files, {}; card written to {}",
                plan.files.len(),
                mb(plan.total()),
                card.display()
            );
        }
        Outcome::Pushed { record, total } => pushed_line(&record, total),
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `flow` with a channel whose push events are rendered on stderr.
async fn rendered<T>(flow: impl AsyncFnOnce(&tokio::sync::mpsc::UnboundedSender<Event>) -> T) -> T {
    let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
    let printer = tokio::spawn(async move {
        while let Some(event) = received.recv().await {
            render(&event);
        }
    });
    let output = flow(&events).await;
    drop(events);
    let _ = printer.await;
    output
}

/// HUB-10's last line.
fn pushed_line(record: &PushRecord, total: u64) {
    outln!(
        "pushed {} ({} files, {})",
        record.url,
        record.files,
        mb(total)
    );
}

/// `[hub] after_training` (HUB-14, HUB-15): after `run` ended, push it when it succeeded
/// and came back, saying how that went. A failed push is a warning: the run stays as it
/// ended, and the exit status is the run's. The caller holds the project lock.
pub(crate) async fn after_training(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    run: &RunRecord,
    cancel: &CancellationToken,
) {
    if hub::after::decide(hub::after::facts(project, settings, run)) == hub::after::Decision::Push {
        errln!(
            "push: pushing run {} after training ([hub] after_training)",
            run.id
        );
    }
    let outcome = rendered(async |events| {
        hub::after::after_training(project, settings, env, run, events, cancel).await
    })
    .await;
    let id = &run.id;
    match outcome {
        AfterOutcome::Skipped(Skip::Off | Skip::NotSucceeded | Skip::NotRetrieved) => {}
        AfterOutcome::Skipped(Skip::AlreadyPushed) => errln!(
            "push: run {id} was pushed already (runs/{id}/hub/{}), so not again after training; `overbrainer push {id}` pushes it again",
            hub::PUSH_JSON
        ),
        AfterOutcome::Skipped(Skip::NoToken) => tracing::warn!(
            "the push after training is skipped: {} is not set; push the run later with: overbrainer push {id}",
            hub::TOKEN_VAR
        ),
        AfterOutcome::Pushed { record, total } => pushed_line(&record, total),
        AfterOutcome::Failed(error @ HubError::Cancelled { .. }) => {
            tracing::warn!("{error}");
        }
        AfterOutcome::Failed(HubError::Gate(refusal)) => {
            tracing::warn!("the push after training is refused by the gate: {refusal}");
        }
        AfterOutcome::Failed(error) => tracing::warn!(
            "the push after training failed: {error}; run {id} stays {}; push it with: overbrainer push {id}",
            run.state.name()
        ),
    }
}
