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
