//! A training run from its start to its end, as `train` and the `run` sequence make it
//! (RUN-10..RUN-21): [`super::start::start`], then [`super::follow::follow`] on the
//! executor the start connected.

use tokio_util::sync::CancellationToken;

use super::follow::{Outcome, follow};
use super::start::{StartOptions, start};
use super::{Events, RunError};
use crate::config::{EnvSnapshot, Provenance, Settings};
use crate::project::Project;

/// Starts a run of `project` with `options` and follows it until it ends or the follower
/// detaches (a Ctrl-C cancels `cancel`, RUN-16); the caller holds the project lock.
/// `provenance` is where each of `settings` came from (a set `evals_per_epoch` needs
/// eval data, its default does not).
///
/// # Errors
///
/// [`RunError`] when the run cannot start (a refusal creates nothing) or its following
/// fails.
pub async fn train(
    project: &Project,
    settings: &Settings,
    provenance: &Provenance,
    env: &EnvSnapshot,
    options: &StartOptions,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    if super::start::is_runpod(settings, options) {
        return Box::pin(super::pod::train(
            project, settings, provenance, env, options, events, cancel,
        ))
        .await;
    }
    let started = Box::pin(start(project, settings, provenance, env, options, events)).await?;
    let stall = crate::train::stall::Policy::of(settings.training.as_ref());
    follow(
        project,
        &started.executor,
        started.record,
        &stall,
        events,
        cancel,
        false,
    )
    .await
}
