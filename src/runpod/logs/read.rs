//! Reading a pod's log stream into its copy (POD-55, POD-57): the first read asks for
//! the last [`MAX_TAIL`] lines, every later one resumes after the copy's cursor; when
//! Runpod refuses that event ID the read restarts once from the event's time (the copy
//! skips what it already holds). [`follow`] reconnects after a drop until stopped;
//! [`drain`] reads what is left for a bounded time before the pod is deleted.

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::copy::{CopyError, ImageWatch, PodLogCopy};
use crate::llm::Redactor;
use crate::runpod::api::logs::{LogsOpen, LogsQuery, MAX_TAIL, event_time};
use crate::runpod::api::{ApiError, RunpodClient};

/// How long the remaining stream is read before a deletion (POD-57), before scaling.
pub const DRAIN: Duration = Duration::from_secs(5);

/// How one read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadEnd {
    /// The stream closed or broke: read again to go on.
    Ended,
    /// The deadline passed or the read was stopped.
    Stopped,
    /// The pod is gone (404).
    Gone,
}

/// Why a read failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Runpod's answer.
    #[error("cannot read the pod's log stream")]
    Api(#[source] ApiError),
    /// The copy.
    #[error("cannot keep the pod's log")]
    Copy(#[source] CopyError),
    /// The resumed event ID was refused, and the restart from its time too.
    #[error("Runpod refused to resume the pod's log stream: {0}")]
    Refused(String),
}

/// The query that goes on from `cursor`.
fn resume(cursor: Option<&str>) -> LogsQuery {
    match cursor {
        Some(id) => LogsQuery {
            last_event_id: Some(id.to_owned()),
            ..LogsQuery::default()
        },
        None => LogsQuery {
            tail: Some(MAX_TAIL),
            ..LogsQuery::default()
        },
    }
}

/// One read of pod `pod`'s stream into `copy`, until it ends, `until` passes or `stop`
/// is cancelled; every event goes through `known` and the secret shapes before it is
/// written ([`super::redact`]).
///
/// # Errors
/// See [`ReadError`].
pub async fn read_once(
    client: &RunpodClient,
    pod: &str,
    copy: &mut PodLogCopy,
    known: &Redactor,
    until: Option<Instant>,
    stop: &CancellationToken,
) -> Result<ReadEnd, ReadError> {
    let mut query = resume(copy.cursor());
    let mut restarted = false;
    let mut stream = loop {
        let opened = tokio::select! {
            () = stop.cancelled() => return Ok(ReadEnd::Stopped),
            () = sleep_until(until) => return Ok(ReadEnd::Stopped),
            opened = client.pod_logs(pod, &query) => opened.map_err(ReadError::Api)?,
        };
        match opened {
            LogsOpen::Stream(stream) => break stream,
            LogsOpen::Gone => return Ok(ReadEnd::Gone),
            LogsOpen::Refused(problem) => {
                let cursor = query.last_event_id.take().unwrap_or_default();
                if restarted || cursor.is_empty() {
                    return Err(ReadError::Refused(problem.reason()));
                }
                tracing::info!(
                    "Runpod no longer resumes the pod's log after `{cursor}`: reading from its time"
                );
                restarted = true;
                query.since = Some(event_time(&cursor).to_owned());
            }
        }
    };
    loop {
        let next = tokio::select! {
            () = stop.cancelled() => return Ok(ReadEnd::Stopped),
            () = sleep_until(until) => return Ok(ReadEnd::Stopped),
            next = stream.next() => next,
        };
        match next {
            Ok(Some(event)) => copy.append(&[event], known).map_err(ReadError::Copy)?,
            Ok(None) => return Ok(ReadEnd::Ended),
            Err(error) => {
                tracing::debug!("the pod's log stream broke: {error}");
                return Ok(ReadEnd::Ended);
            }
        }
    }
}

async fn sleep_until(until: Option<Instant>) {
    match until {
        Some(until) => tokio::time::sleep_until(until).await,
        None => std::future::pending().await,
    }
}

/// Follows pod `pod`'s stream into the copy of the run in `run_dir` until `stop` is
/// cancelled or the pod is gone, reconnecting after each drop (`pause` apart) without
/// writing a line twice; every new line is shown to `watch` when given (POD-74).
///
/// # Errors
/// The copy cannot be opened or written (a link under `.pod/`, POD-58).
pub async fn follow(
    client: &RunpodClient,
    pod: &str,
    run_dir: &Path,
    known: &Redactor,
    pause: Duration,
    stop: &CancellationToken,
    watch: Option<&ImageWatch>,
) -> Result<(), ReadError> {
    let mut copy = PodLogCopy::open(run_dir)
        .map_err(ReadError::Copy)?
        .watching(watch);
    loop {
        match read_once(client, pod, &mut copy, known, None, stop).await {
            Ok(ReadEnd::Gone | ReadEnd::Stopped) => return Ok(()),
            Ok(ReadEnd::Ended) => {}
            Err(ReadError::Copy(error)) => return Err(ReadError::Copy(error)),
            Err(error) => {
                let cause = std::error::Error::source(&error).map(ToString::to_string);
                tracing::warn!("{error}: {}", cause.unwrap_or_default());
            }
        }
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// POD-57: what is left of pod `pod`'s stream, read into the run's copy for at most
/// `limit`, reconnecting after a drop meanwhile; every new line is shown to `watch`
/// when given (POD-74).
///
/// # Errors
/// See [`ReadError`].
pub async fn drain(
    client: &RunpodClient,
    pod: &str,
    run_dir: &Path,
    known: &Redactor,
    limit: Duration,
    watch: Option<&ImageWatch>,
) -> Result<(), ReadError> {
    let until = Instant::now() + limit;
    let mut copy = PodLogCopy::open(run_dir)
        .map_err(ReadError::Copy)?
        .watching(watch);
    let never = CancellationToken::new();
    while Instant::now() < until {
        let before = copy.cursor().map(str::to_owned);
        match read_once(client, pod, &mut copy, known, Some(until), &never).await? {
            // A stream that closed without anything new has nothing left.
            ReadEnd::Ended if copy.cursor() == before.as_deref() => return Ok(()),
            ReadEnd::Ended => {}
            ReadEnd::Gone | ReadEnd::Stopped => return Ok(()),
        }
    }
    Ok(())
}
