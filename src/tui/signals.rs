//! Signals from outside (TUI-68): SIGTERM, SIGHUP and SIGINT end the TUI like a confirmed
//! quit, without a question. While `$EDITOR` owns the terminal a SIGINT (the editor's own
//! Ctrl-C reaches the whole foreground process group) is ignored: those received meanwhile
//! are forgotten once the TUI has the terminal back; a SIGTERM or SIGHUP then ends the
//! editor first ([`crate::exec::run_editor_until`]).

use futures_util::FutureExt as _;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The signals the TUI answers.
#[derive(Debug)]
pub struct Signals {
    term: Signal,
    hup: Signal,
    int: Signal,
}

impl Signals {
    /// Installs the handlers (from then on these signals no longer end the process at once).
    ///
    /// # Errors
    ///
    /// When a handler cannot be installed.
    pub fn new() -> std::io::Result<Self> {
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The name of the next signal received.
    pub async fn next(&mut self) -> &'static str {
        tokio::select! {
            Some(()) = self.term.recv() => "SIGTERM",
            Some(()) = self.hup.recv() => "SIGHUP",
            Some(()) = self.int.recv() => "SIGINT",
            else => std::future::pending().await,
        }
    }

    /// The name of the next SIGTERM or SIGHUP: what ends the TUI while `$EDITOR` owns
    /// the terminal (a SIGINT then waits, to be forgotten).
    pub async fn next_ending(&mut self) -> &'static str {
        tokio::select! {
            Some(()) = self.term.recv() => "SIGTERM",
            Some(()) = self.hup.recv() => "SIGHUP",
            else => std::future::pending().await,
        }
    }

    /// Forgets the SIGINTs received while the editor owned the terminal.
    pub fn forget_interrupts(&mut self) {
        while let Some(Some(())) = self.int.recv().now_or_never() {}
    }
}
