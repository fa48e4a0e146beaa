//! `runs logs RUN_ID --pod` (POD-60): the kept logs of a run's pod (bootstrap log,
//! watchdog log, then the copy of the pod's log), then the lines Runpod has after the
//! kept ones while the pod exists. It only reads: the copy belongs to the process that
//! follows the run, and no lock is taken. Every line is redacted (POD-59) and its
//! terminal controls removed before it is handed over to be printed.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::copy::{CopyError, LOG_FILE, LogEvent, order, read_checked};
use super::read::ReadError;
use super::redact::redact;
use crate::llm::Redactor;
use crate::runpod::api::RunpodClient;
use crate::runpod::api::logs::{LogSource, LogsOpen, LogsQuery, MAX_TAIL, event_time};
use crate::runpod::catalog::sanitize::sanitize;

/// The bootstrap log copied from the pod (POD-56).
pub const BOOTSTRAP_LOG: &str = ".pod/bootstrap.log";
/// The watchdog log copied from the pod (POD-56).
pub const WATCHDOG_LOG: &str = ".pod/watchdog.log";

/// Without `--follow`, the live read ends once the stream gave nothing for this long.
const QUIET: Duration = Duration::from_secs(2);

/// What `runs logs --pod` shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShowOptions {
    /// One source of the pod's log, or both.
    pub source: Option<LogSource>,
    /// The last N lines of each log.
    pub tail: Option<usize>,
    /// Keep printing new lines until stopped.
    pub follow: bool,
}

/// A line ready to print: redacted, terminal controls removed.
fn printable(line: &str, known: &Redactor) -> String {
    sanitize(&redact(line, known))
}

fn event_line(event: &LogEvent, known: &Redactor) -> String {
    printable(
        &format!("{} {} {}", event.ts, event.source, event.line),
        known,
    )
}

fn last(mut lines: Vec<String>, tail: Option<usize>) -> Vec<String> {
    if let Some(tail) = tail {
        let skip = lines.len().saturating_sub(tail);
        lines.drain(..skip);
    }
    lines
}

/// The kept logs of the run in `run_dir`, ready to print, and the last event ID of the
/// copy (from which the live lines go on).
///
/// # Errors
/// A link under `.pod/` (POD-58), or the file system's refusal.
pub fn kept(
    run_dir: &Path,
    options: &ShowOptions,
    known: &Redactor,
) -> Result<(Vec<String>, Option<String>), CopyError> {
    let mut out = Vec::new();
    for file in [BOOTSTRAP_LOG, WATCHDOG_LOG] {
        if let Some(text) = read_checked(&run_dir.join(file))? {
            let lines = text.lines().map(|l| printable(l, known)).collect();
            out.extend(last(lines, options.tail));
        }
    }
    let mut cursor = None;
    if let Some(text) = read_checked(&run_dir.join(LOG_FILE))? {
        let lines = text
            .lines()
            .filter_map(|l| serde_json::from_str::<LogEvent>(l).ok())
            .filter(|e| options.source.is_none_or(|s| s.name() == e.source))
            .map(|e| event_line(&e, known))
            .collect();
        out.extend(last(lines, options.tail));
    }
    if let Some(text) = read_checked(&run_dir.join(super::copy::CURSOR_FILE))? {
        cursor = Some(text.trim().to_owned()).filter(|c| !c.is_empty());
    }
    Ok((out, cursor))
}

/// The lines pod `pod` has after event `after` (the kept ones), each handed to `print`
/// as it comes; with `follow`, reconnecting until `stop` is cancelled or the pod is
/// gone, else until the stream is quiet.
///
/// # Errors
/// Runpod's refusal (the event ID and the restart from its time both refused), or a
/// read that failed.
pub async fn live(
    client: &RunpodClient,
    pod: &str,
    mut after: Option<String>,
    options: &ShowOptions,
    stop: &CancellationToken,
    mut print: impl FnMut(String),
) -> Result<(), ReadError> {
    let known = client.redactor().clone();
    loop {
        let mut query = LogsQuery {
            source: options.source,
            ..LogsQuery::default()
        };
        if let Some(id) = &after {
            query.last_event_id = Some(id.clone());
        } else {
            let tail = options.tail.unwrap_or(MAX_TAIL as usize);
            query.tail = Some(u32::try_from(tail).unwrap_or(MAX_TAIL).min(MAX_TAIL));
        }
        let mut stream = match client.pod_logs(pod, &query).await.map_err(ReadError::Api)? {
            LogsOpen::Stream(stream) => stream,
            LogsOpen::Gone => return Ok(()),
            LogsOpen::Refused(problem) => {
                let since = after.as_deref().map(event_time).map(str::to_owned);
                query.last_event_id = None;
                query.since = since;
                match client.pod_logs(pod, &query).await.map_err(ReadError::Api)? {
                    LogsOpen::Stream(stream) => stream,
                    LogsOpen::Gone => return Ok(()),
                    LogsOpen::Refused(_) => return Err(ReadError::Refused(problem.reason())),
                }
            }
        };
        loop {
            let next = tokio::select! {
                () = stop.cancelled() => return Ok(()),
                next = tokio::time::timeout(QUIET, stream.next()) => next,
            };
            let event = match next {
                Err(_) if !options.follow => return Ok(()),
                Err(_) => continue,
                Ok(Ok(Some(event))) => event,
                Ok(Ok(None) | Err(_)) => break,
            };
            if let (Some(id), Some(seen)) = (&event.id, &after) {
                if order(id) <= order(seen) {
                    continue;
                }
            }
            if let Some(id) = &event.id {
                after = Some(id.clone());
            }
            print(event_line(&event, &known));
        }
        if !options.follow {
            return Ok(());
        }
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runpod::logs::copy::CURSOR_FILE;

    fn run_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".pod")).unwrap();
        std::fs::write(
            dir.path().join(BOOTSTRAP_LOG),
            "boot 1\nboot 2 HF_TOKEN=CANARY-Qz7Wk2Xp9\n",
        )
        .unwrap();
        std::fs::write(dir.path().join(WATCHDOG_LOG), "dog 1\n\u{1b}[31mdog 2\n").unwrap();
        let line = |ts: &str, source: &str, line: &str| {
            serde_json::json!({"ts": ts, "source": source, "line": line}).to_string() + "\n"
        };
        let copy = [
            line("t1", "system", "pod up"),
            line("t2", "container", "step 1"),
            line("t3", "container", "step 2"),
        ]
        .concat();
        std::fs::write(dir.path().join(LOG_FILE), copy).unwrap();
        std::fs::write(dir.path().join(CURSOR_FILE), "t3/9\n").unwrap();
        dir
    }

    #[test]
    fn the_kept_logs_come_in_order_redacted_without_controls_and_cut_per_log() {
        let dir = run_dir();
        let known = Redactor::new();
        let (lines, cursor) = kept(dir.path(), &ShowOptions::default(), &known).unwrap();
        assert_eq!(
            lines,
            [
                "boot 1",
                "boot 2 HF_TOKEN=***",
                "dog 1",
                "dog 2",
                "t1 system pod up",
                "t2 container step 1",
                "t3 container step 2",
            ]
        );
        assert_eq!(cursor.as_deref(), Some("t3/9"));
        let options = ShowOptions {
            source: Some(LogSource::Container),
            tail: Some(1),
            follow: false,
        };
        let (lines, _) = kept(dir.path(), &options, &known).unwrap();
        assert_eq!(
            lines,
            ["boot 2 HF_TOKEN=***", "dog 2", "t3 container step 2"]
        );
    }

    #[test]
    fn a_link_among_the_kept_logs_is_refused() {
        let dir = run_dir();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "not a pod log").unwrap();
        std::fs::remove_file(dir.path().join(WATCHDOG_LOG)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join(WATCHDOG_LOG)).unwrap();
        let error = kept(dir.path(), &ShowOptions::default(), &Redactor::new()).unwrap_err();
        assert!(matches!(error, CopyError::Link(_)), "{error}");
    }
}
