//! A training run from its start to its end, as `train` and the `run` sequence make it
//! (RUN-10..RUN-21): [`super::start::start`], then [`super::follow::follow`] on the
//! executor the start connected.

use tokio_util::sync::CancellationToken;

use super::follow::{Outcome, follow};
use super::start::{StartOptions, start};
use super::{Events, RunError};
use crate::config::{EnvSnapshot, Settings};
use crate::project::Project;

/// Starts a run of `project` with `options` and follows it until it ends or the follower
/// detaches (a Ctrl-C cancels `cancel`, RUN-16); the caller holds the project lock.
///
/// # Errors
///
/// [`RunError`] when the run cannot start (a refusal creates nothing) or its following
/// fails.
pub async fn train(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    options: &StartOptions,
    events: &Events,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    if super::start::is_runpod(settings, options) {
        return Box::pin(super::pod::train(
            project, settings, env, options, events, cancel,
        ))
        .await;
    }
    let started = start(project, settings, env, options, events).await?;
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
