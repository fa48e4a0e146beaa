//! `GET /v2/pods/{id}/logs` (wire-facts A.4): a pod's log as server-sent events, one
//! event per line, `id: <ts>/<seq>` and `data: {"ts", "source", "line"}`. Query `source`
//! (`container` or `system`, both when left out), `tail` (0 to 5000 lines of backfill),
//! `since` (RFC 3339); the `Last-Event-ID` header resumes after an event.
//!
//! The framing is read by [`SseParser`], the event-stream algorithm of the HTML
//! standard (section 9.2.6): lines end in LF, CRLF or CR; `data:` lines of one event
//! join with LF; `id:` sets the last event ID, which carries over to later events;
//! `:` lines are comments; a blank line dispatches; an event cut off by the end of the
//! stream is dropped. Wire-facts leaves open what Runpod answers to an event ID it no
//! longer keeps \[design\]: any 4xx but 401, 403, 404 and 429 to a resumed read is read
//! as that refusal ([`LogsOpen::Refused`]), and the caller restarts from the event's
//! time.

use std::time::Duration;

use reqwest::Method;

use super::{ApiError, Problem, RunpodClient, path_id};
use crate::runpod::logs::copy::LogEvent;

/// The most lines of backfill Runpod sends (`tail`).
pub const MAX_TAIL: u32 = 5000;

/// How long one read of the stream may stay open before it is closed and resumed from
/// its last event: the client's own timeout is for whole answers.
const STREAM_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// One of the two log sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogSource {
    /// The container's output.
    Container,
    /// Runpod's own lines about the pod.
    System,
}

impl LogSource {
    /// The name on the wire and in the copy.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Container => "container",
            Self::System => "system",
        }
    }
}

/// Where a read of the stream starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogsQuery {
    /// One source, or both.
    pub source: Option<LogSource>,
    /// Lines of backfill.
    pub tail: Option<u32>,
    /// RFC 3339 time to start from.
    pub since: Option<String>,
    /// Resume after this event (`Last-Event-ID`).
    pub last_event_id: Option<String>,
}

/// One raw server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The last event ID when it was dispatched.
    pub id: Option<String>,
    /// `event:`, empty for the default `message`.
    pub event: String,
    /// The `data:` lines joined with LF.
    pub data: String,
}

/// The event-stream parser (HTML standard 9.2.6), fed bytes as they come.
#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
    /// The previous chunk ended in CR: a LF at the start of the next one belongs to it.
    after_cr: bool,
    last_id: Option<String>,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// A parser at the start of a stream, whose last event ID is `last_id`.
    #[must_use]
    pub fn new(last_id: Option<String>) -> Self {
        Self {
            last_id,
            ..Self::default()
        }
    }

    /// The events completed by `bytes`.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut bytes = bytes;
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = &bytes[1..];
        }
        self.after_cr = false;
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b == b'\n' || b == b'\r' {
                self.pending.extend_from_slice(&bytes[start..i]);
                let line = std::mem::take(&mut self.pending);
                if let Some(event) = self.line(&String::from_utf8_lossy(&line)) {
                    events.push(event);
                }
                if b == b'\r' {
                    if i + 1 == bytes.len() {
                        self.after_cr = true;
                    } else if bytes[i + 1] == b'\n' {
                        i += 1;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        self.pending.extend_from_slice(&bytes[start..]);
        events
    }

    /// The last event ID seen.
    #[must_use]
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let event = std::mem::take(&mut self.event);
            if !self.has_data {
                return None;
            }
            self.has_data = false;
            let mut data = std::mem::take(&mut self.data);
            if data.ends_with('\n') {
                data.pop();
            }
            return Some(SseEvent {
                id: self.last_id.clone(),
                event,
                data,
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "event" => value.clone_into(&mut self.event),
            "id" if !value.contains('\0') => {
                self.last_id = (!value.is_empty()).then(|| value.to_owned());
            }
            _ => {}
        }
        None
    }
}

/// A log event from a server-sent event: `None` for another event type, or data that
/// is no log object.
#[must_use]
pub fn log_event(sse: SseEvent) -> Option<LogEvent> {
    if !matches!(sse.event.as_str(), "" | "message" | "log") {
        return None;
    }
    let mut event: LogEvent = serde_json::from_str(&sse.data).ok()?;
    event.id = sse.id;
    Some(event)
}

/// The time of an event ID `<ts>/<seq>`.
#[must_use]
pub fn event_time(id: &str) -> &str {
    id.rsplit_once('/').map_or(id, |(ts, _)| ts)
}

/// The answer to opening the stream.
#[derive(Debug)]
pub enum LogsOpen {
    /// The stream, open.
    Stream(LogStream),
    /// Runpod no longer accepts the event ID the read resumed from.
    Refused(Problem),
    /// The pod is gone (404).
    Gone,
}

/// An open log stream.
pub struct LogStream {
    response: reqwest::Response,
    parser: SseParser,
    ready: std::collections::VecDeque<LogEvent>,
}

impl LogStream {
    /// The next log event; `None` when the stream ended (closed or cut off: an event
    /// cut off is dropped, to be read again from the last ID).
    ///
    /// # Errors
    /// [`ApiError::Connect`] when the connection broke.
    pub async fn next(&mut self) -> Result<Option<LogEvent>, ApiError> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            match self.response.chunk().await {
                Ok(None) => return Ok(None),
                Err(error) => {
                    return Err(ApiError::Connect {
                        what: "the pod's log stream".to_owned(),
                        source: error.without_url(),
                    });
                }
                Ok(Some(chunk)) => {
                    let events = self.parser.feed(&chunk);
                    self.ready.extend(events.into_iter().filter_map(log_event));
                }
            }
        }
    }

    /// The last event ID the stream gave.
    #[must_use]
    pub fn last_id(&self) -> Option<&str> {
        self.parser.last_id()
    }
}

impl std::fmt::Debug for LogStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStream")
            .field("last_id", &self.parser.last_id())
            .finish_non_exhaustive()
    }
}

impl RunpodClient {
    /// `GET /v2/pods/{id}/logs`: opens the pod's log stream as `query` says.
    ///
    /// # Errors
    /// Any failure to connect, or an answer that is neither the stream, a refusal of
    /// the resumed event ID nor a 404.
    pub async fn pod_logs(&self, id: &str, query: &LogsQuery) -> Result<LogsOpen, ApiError> {
        let path = format!("/pods/{}/logs", path_id(id)?);
        let what = format!("GET {path}");
        let mut params: Vec<(&str, String)> = Vec::new();
        if let Some(source) = query.source {
            params.push(("source", source.name().to_owned()));
        }
        if let Some(tail) = query.tail {
            params.push(("tail", tail.min(MAX_TAIL).to_string()));
        }
        if let Some(since) = &query.since {
            params.push(("since", since.clone()));
        }
        let build = || {
            let mut builder = self
                .request(Method::GET, &path)
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .query(&params)
                .timeout(STREAM_TIMEOUT);
            if let Some(last) = &query.last_event_id {
                builder = builder.header("Last-Event-ID", last);
            }
            builder
        };
        let open = || async {
            let response = build().send().await.map_err(|error| ApiError::Connect {
                what: format!("{what}` at `{}", self.origin()),
                source: error.without_url(),
            })?;
            let status = response.status().as_u16();
            if (200..300).contains(&status) {
                return Ok(LogsOpen::Stream(LogStream {
                    response,
                    parser: SseParser::new(query.last_event_id.clone()),
                    ready: std::collections::VecDeque::new(),
                }));
            }
            let retry_after = super::retry_after(response.headers());
            let body = response.bytes().await.unwrap_or_default();
            let problem = Problem::parse(status, &body, &self.redactor);
            match status {
                404 => Ok(LogsOpen::Gone),
                429 => Err(ApiError::RateLimited {
                    what: what.clone(),
                    retry_after,
                }),
                400..=499 if status != 401 && status != 403 && query.last_event_id.is_some() => {
                    Ok(LogsOpen::Refused(problem))
                }
                _ => Err(ApiError::Problem {
                    what: what.clone(),
                    problem,
                }),
            }
        };
        self.waiting_out_rate_limits(open).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(parser: &mut SseParser, chunks: &[&str]) -> Vec<SseEvent> {
        chunks
            .iter()
            .flat_map(|c| parser.feed(c.as_bytes()))
            .collect()
    }

    fn ev(id: Option<&str>, event: &str, data: &str) -> SseEvent {
        SseEvent {
            id: id.map(str::to_owned),
            event: event.to_owned(),
            data: data.to_owned(),
        }
    }

    #[test]
    fn the_framing_of_the_html_standard_is_read_whatever_the_chunks() {
        let stream = ": hello\r\nid: 1\r\ndata: a\r\ndata:b\r\n\r\nevent: ping\rdata\r\rdata: c\n\nid\ndata: d\n\n";
        let want = vec![
            ev(Some("1"), "", "a\nb"),
            ev(Some("1"), "ping", ""),
            ev(Some("1"), "", "c"),
            ev(None, "", "d"),
        ];
        assert_eq!(all(&mut SseParser::new(None), &[stream]), want);
        // Every split of the same bytes, CR and LF of one CRLF apart included.
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(
                all(&mut SseParser::new(None), &[a, b]),
                want,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn an_event_cut_off_by_the_end_of_the_stream_is_dropped() {
        let mut parser = SseParser::new(Some("0".into()));
        let got = all(&mut parser, &["id: 1\ndata: a\n\nid: 2\ndata: b\n"]);
        assert_eq!(got, vec![ev(Some("1"), "", "a")]);
        // Its ID was read, but the copy goes on from the last event it was given.
        assert_eq!(parser.last_id(), Some("2"));
    }

    #[test]
    fn log_events_are_the_data_objects_with_their_ids() {
        let data = r#"{"ts":"2026-06-01T12:02:03Z","source":"container","line":"Model loaded."}"#;
        let event = log_event(ev(Some("2026-06-01T12:02:03Z/7"), "", data)).unwrap();
        assert_eq!(event.id.as_deref(), Some("2026-06-01T12:02:03Z/7"));
        assert_eq!(event.line, "Model loaded.");
        assert_eq!(event.source, "container");
        assert!(log_event(ev(None, "ping", data)).is_none());
        assert!(log_event(ev(None, "", "not json")).is_none());
        assert_eq!(event_time("2026-06-01T12:02:03Z/7"), "2026-06-01T12:02:03Z");
    }
}
