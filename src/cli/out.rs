//! Checked writes to stdout and stderr for every command.
//!
//! `println!` panics (exit 101) when stdout is a closed pipe (`overbrainer history --all |
//! head -1`) or a full disk (`>/dev/full`). Commands print their results with [`outln!`] and
//! [`out!`] instead: the first failed write is remembered and every later write is skipped,
//! so the command finishes what it does (closing its files and records) without printing.
//! [`finish`] flushes stdout at the end of `cli::main` and turns the remembered failure into
//! the exit status: quiet on a closed pipe (what users of `head` expect), an `error:` line and
//! a failure status on any other write error. Messages on stderr go through [`errln!`], which
//! never panics (a full or closed stderr loses the message, nothing else).

use std::fmt;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Mutex;

/// The first failed stdout write of this process: its kind and message.
static FAILED: Mutex<Option<(std::io::ErrorKind, String)>> = Mutex::new(None);

/// Writes `args` to stdout and flushes; after a failed write, does nothing. Use through
/// [`outln!`] / [`out!`].
pub fn write_stdout(args: fmt::Arguments<'_>) {
    let Ok(mut failed) = FAILED.lock() else {
        return;
    };
    if failed.is_some() {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        *failed = Some((error.kind(), error.to_string()));
    }
}

/// Writes `args` to stderr, ignoring failures (there is nowhere left to report them). Use
/// through [`errln!`].
pub fn write_stderr(args: fmt::Arguments<'_>) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_fmt(args).and_then(|()| stderr.flush());
}

/// The exit status once the command returned `code`: `code` when every stdout write
/// succeeded or stdout was a closed pipe (quietly), else an `error:` line on stderr and a
/// failure.
#[must_use]
pub fn finish(code: ExitCode) -> ExitCode {
    write_stdout(format_args!(""));
    let failed = FAILED.lock().ok().and_then(|mut f| f.take());
    match failed {
        None | Some((std::io::ErrorKind::BrokenPipe, _)) => code,
        Some((_, message)) => {
            write_stderr(format_args!("error: cannot write to stdout: {message}\n"));
            ExitCode::FAILURE
        }
    }
}

/// `println!` for results on stdout that never panics (see the module doc).
macro_rules! outln {
    () => {
        $crate::cli::out::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::out::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for results on stdout that never panics (see the module doc).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::write_stdout(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics (see the module doc).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::out::write_stderr(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// An error and its causes on one line.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    joined(std::iter::successors(Some(error), |e| e.source()).map(ToString::to_string))
}

/// [`chain`] of a command's error and its contexts.
pub(crate) fn chain_of(error: &anyhow::Error) -> String {
    joined(error.chain().map(ToString::to_string))
}

/// The messages joined by `: `, each cause once: a cause that a message before it already
/// quotes (`…: {source}` with `#[source]`) is not repeated.
fn joined(messages: impl Iterator<Item = String>) -> String {
    let mut text = String::new();
    for message in messages {
        if text.contains(&message) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&message);
    }
    text
}

#[cfg(test)]
mod chain_tests {
    use super::{chain, chain_of};

    #[derive(Debug, thiserror::Error)]
    enum Inner {
        #[error("connection refused")]
        Refused,
    }

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("the judge failed on question `q1`: {source}")]
        Quoting {
            #[source]
            source: Inner,
        },
        #[error("the judge failed on question `q1`")]
        Wrapping {
            #[source]
            source: Inner,
        },
    }

    #[test]
    fn a_cause_is_printed_once_whether_or_not_its_error_quotes_it() {
        let quoting = Outer::Quoting {
            source: Inner::Refused,
        };
        let wrapping = Outer::Wrapping {
            source: Inner::Refused,
        };
        let expected = "the judge failed on question `q1`: connection refused";
        assert_eq!(chain(&quoting), expected);
        assert_eq!(chain(&wrapping), expected);
        let with_context = anyhow::Error::new(quoting).context("compare `c1`");
        assert_eq!(chain_of(&with_context), format!("compare `c1`: {expected}"));
    }
}
