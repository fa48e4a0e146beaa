//! `[hub] after_training` (HUB-14, HUB-15): the push that follows a training run which
//! ended `succeeded` with its results back, whichever command followed it (`train`,
//! `train attach`, `run`). Whether it runs is a pure decision ([`decide`]); the push itself
//! is [`super::push`] with the defaults of `push RUN_ID`. Its failure never touches the
//! run: `run.json` is not written here, and the caller only warns.

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::{Event, HubError, Outcome, PushRecord, Request};
use crate::config::{EnvSnapshot, Settings};
use crate::project::Project;
use crate::runs::{RunRecord, State};

/// Why no push follows a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// `[hub] after_training` is off.
    Off,
    /// The run did not end `succeeded` (a stopped run among them).
    NotSucceeded,
    /// Its results are not here.
    NotRetrieved,
    /// `runs/<run-id>/hub/push.json` exists: it was pushed already.
    AlreadyPushed,
    /// `OVERBRAINER_HF_TOKEN` is unset.
    NoToken,
}

/// Whether a push follows a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Push it.
    Push,
    /// Do not, and why.
    Skip(Skip),
}

/// What [`decide`] looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent yes/no facts of one decision, each its own table column"
)]
pub struct Facts {
    /// `[hub] after_training`.
    pub enabled: bool,
    /// The run's final state.
    pub state: State,
    /// Its results came back.
    pub retrieved: bool,
    /// `runs/<run-id>/hub/push.json` exists.
    pub pushed_before: bool,
    /// A token is configured.
    pub token: bool,
}

/// HUB-14: a push follows a run that ended `succeeded` with its results back, unless the
/// option is off, the run was pushed already, or there is no token (then it is skipped
/// with a line rather than failed).
#[must_use]
pub const fn decide(facts: Facts) -> Decision {
    if !facts.enabled {
        Decision::Skip(Skip::Off)
    } else if !matches!(facts.state, State::Succeeded) {
        Decision::Skip(Skip::NotSucceeded)
    } else if !facts.retrieved {
        Decision::Skip(Skip::NotRetrieved)
    } else if facts.pushed_before {
        Decision::Skip(Skip::AlreadyPushed)
    } else if !facts.token {
        Decision::Skip(Skip::NoToken)
    } else {
        Decision::Push
    }
}

/// How the push after a run ended.
#[derive(Debug)]
pub enum AfterOutcome {
    /// None was made.
    Skipped(Skip),
    /// Committed; `push.json` written.
    Pushed {
        /// The record written.
        record: PushRecord,
        /// Bytes in all.
        total: u64,
    },
    /// It failed (or was cancelled, [`HubError::Cancelled`]); the run is as it was.
    Failed(HubError),
}

/// The facts of `run` under `settings`.
#[must_use]
pub fn facts(project: &Project, settings: &Settings, run: &RunRecord) -> Facts {
    Facts {
        enabled: settings.hub.after_training,
        state: run.state,
        retrieved: run.retrieved,
        pushed_before: project
            .run_dir(&run.id)
            .join(super::HUB_DIR)
            .join(super::PUSH_JSON)
            .exists(),
        token: settings.hf_token.is_some(),
    }
}

/// Pushes `run` when [`decide`] says so, as `push RUN_ID` would (the repo from
/// `[hub] repo` or the token's account, the visibility from `[hub] private`). The caller
/// holds the project lock.
pub async fn after_training(
    project: &Project,
    settings: &Settings,
    env: &EnvSnapshot,
    run: &RunRecord,
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> AfterOutcome {
    if let Decision::Skip(skip) = decide(facts(project, settings, run)) {
        return AfterOutcome::Skipped(skip);
    }
    let request = Request {
        run_id: run.id.clone(),
        ..Request::default()
    };
    match super::push(project, settings, env, &request, events, cancel).await {
        Ok(Outcome::Pushed { record, total }) => AfterOutcome::Pushed { record, total },
        Ok(Outcome::DryRun(_)) => {
            AfterOutcome::Failed(HubError::Protocol("a dry run instead of a push".into()))
        }
        Err(error) => AfterOutcome::Failed(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: Facts = Facts {
        enabled: true,
        state: State::Succeeded,
        retrieved: true,
        pushed_before: false,
        token: true,
    };

    #[test]
    fn decide_pushes_only_a_retrieved_succeeded_run_not_pushed_before_with_a_token() {
        let cases = [
            (GOOD, Decision::Push),
            (
                Facts {
                    enabled: false,
                    ..GOOD
                },
                Decision::Skip(Skip::Off),
            ),
            (
                Facts {
                    state: State::Stopped,
                    ..GOOD
                },
                Decision::Skip(Skip::NotSucceeded),
            ),
            (
                Facts {
                    state: State::MergeFailed,
                    ..GOOD
                },
                Decision::Skip(Skip::NotSucceeded),
            ),
            (
                Facts {
                    state: State::Failed,
                    ..GOOD
                },
                Decision::Skip(Skip::NotSucceeded),
            ),
            (
                Facts {
                    retrieved: false,
                    ..GOOD
                },
                Decision::Skip(Skip::NotRetrieved),
            ),
            (
                Facts {
                    pushed_before: true,
                    ..GOOD
                },
                Decision::Skip(Skip::AlreadyPushed),
            ),
            (
                Facts {
                    token: false,
                    ..GOOD
                },
                Decision::Skip(Skip::NoToken),
            ),
            // Off wins over everything; a pushed run is not a missing-token warning.
            (
                Facts {
                    enabled: false,
                    token: false,
                    ..GOOD
                },
                Decision::Skip(Skip::Off),
            ),
            (
                Facts {
                    pushed_before: true,
                    token: false,
                    ..GOOD
                },
                Decision::Skip(Skip::AlreadyPushed),
            ),
            (
                Facts {
                    state: State::Stopped,
                    token: false,
                    ..GOOD
                },
                Decision::Skip(Skip::NotSucceeded),
            ),
        ];
        for (facts, expected) in cases {
            assert_eq!(decide(facts), expected, "{facts:?}");
        }
    }
}
