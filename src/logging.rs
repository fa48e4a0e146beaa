//! Log lines on stderr through `tracing` (LOG-1..LOG-4).
//!
//! The filter comes from `OVERBRAINER_LOG` in `target=level` directive syntax; without it
//! overbrainer's own messages show from `info` up and dependencies' from `warn` up.
//! Secrets never reach a log line because they are held in `secrecy` types whose `Debug`
//! is redacted, and provider error bodies are logged at `debug` only.

use tracing_subscriber::EnvFilter;

/// The filter used when `OVERBRAINER_LOG` is unset (LOG-2).
pub const DEFAULT_FILTER: &str = "warn,overbrainer=info";

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    /// `OVERBRAINER_LOG` is not valid directive syntax.
    #[error(
        "`OVERBRAINER_LOG` is not a valid log filter; use e.g. `debug` or `overbrainer=trace,reqwest=info`"
    )]
    Filter(#[source] tracing_subscriber::filter::ParseError),
    /// A global subscriber was already installed (a second call).
    #[error("logging is already set up")]
    AlreadySet,
}

/// Parses a filter, or the default when `filter` is `None`.
///
/// # Errors
///
/// [`LoggingError::Filter`] for invalid syntax.
pub fn filter(filter: Option<&str>) -> Result<EnvFilter, LoggingError> {
    EnvFilter::try_new(filter.unwrap_or(DEFAULT_FILTER)).map_err(LoggingError::Filter)
}

/// Installs the global subscriber: log lines on stderr, colored unless `no_color` or
/// stderr is not a terminal (LOG-3).
///
/// # Errors
///
/// [`LoggingError::Filter`] for an invalid filter; [`LoggingError::AlreadySet`] when called
/// twice.
pub fn init(filter_text: Option<&str>, no_color: bool) -> Result<(), LoggingError> {
    use std::io::IsTerminal as _;
    let ansi = !no_color && std::io::stderr().is_terminal();
    tracing_subscriber::fmt()
        .with_env_filter(filter(filter_text)?)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .without_time()
        .try_init()
        .map_err(|_| LoggingError::AlreadySet)
}

/// Log lines captured for the TUI's Logs view (TUI-2), waiting for [`take_captured`].
static CAPTURED: std::sync::Mutex<Option<Captured>> = std::sync::Mutex::new(None);

/// The receiving end of captured log lines: level and text.
pub type Captured = tokio::sync::mpsc::UnboundedReceiver<(tracing::Level, String)>;

/// Installs the global subscriber for the TUI: log lines passing the filter go to a
/// channel instead of stderr; [`take_captured`] hands over its receiving end.
///
/// # Errors
///
/// As [`init`].
pub fn init_captured(filter_text: Option<&str>) -> Result<(), LoggingError> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tracing_subscriber::registry()
        .with(filter(filter_text)?)
        .with(Capture(sender))
        .try_init()
        .map_err(|_| LoggingError::AlreadySet)?;
    if let Ok(mut captured) = CAPTURED.lock() {
        *captured = Some(receiver);
    }
    Ok(())
}

/// The captured log lines of [`init_captured`], once.
#[must_use]
pub fn take_captured() -> Option<Captured> {
    CAPTURED.lock().ok().and_then(|mut c| c.take())
}

struct Capture(tokio::sync::mpsc::UnboundedSender<(tracing::Level, String)>);

/// The message of an event, then its other fields as `name=value`.
#[derive(Default)]
struct Text(String);

impl tracing::field::Visit for Text {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write as _;
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, "{}={value:?}", field.name());
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Capture {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut text = Text::default();
        event.record(&mut text);
        let _ = self.0.send((*event.metadata().level(), text.0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_and_bad_syntax_is_refused() {
        filter(None).unwrap();
        filter(Some("overbrainer=trace,reqwest=info")).unwrap();
        assert!(matches!(
            filter(Some("overbrainer=loud")),
            Err(LoggingError::Filter(_))
        ));
    }
}
