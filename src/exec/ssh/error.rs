//! [`SshError`]: failures of the SSH connection itself, beside the commands run over it.

/// Errors of the SSH connection itself.
#[derive(Debug, thiserror::Error)]
pub enum SshError {
    /// `ssh` could not open the master connection: unreachable host, refused or
    /// unknown host key, no accepted key. The source holds `ssh`'s own message.
    #[error("cannot connect to `{destination}`")]
    Connect {
        /// The destination as given.
        destination: String,
        /// Error of the `openssh` crate, with `ssh`'s message.
        #[source]
        source: openssh::Error,
    },
    /// No candidate directory gives a control socket path short enough for a Unix
    /// socket; nothing was started.
    #[error(
        "no directory for the ssh control socket is short enough: {tried} (a control socket path may hold at most {limit} bytes: {sun_path} of a Unix socket path, less its NUL and the 17 bytes OpenSSH appends); set `TMPDIR` or `XDG_RUNTIME_DIR` to a shorter directory"
    )]
    ControlPath {
        /// Each candidate with the length of the path it would give.
        tried: String,
        /// The longest control socket path.
        limit: usize,
        /// Bytes of a Unix socket path on this system, NUL included.
        sun_path: usize,
    },
    /// `ssh` neither connected nor failed within the connect timeout plus the
    /// keepalive window; it was stopped.
    #[error("`{destination}` did not answer within {waited_secs} s")]
    Unresponsive {
        /// The destination as given.
        destination: String,
        /// Seconds waited.
        waited_secs: u64,
    },
    /// The master connection ended while a command ran over it: the target stopped
    /// answering its keepalives, the network dropped, or the master was killed.
    /// `log` is the end of the master's log on one line (OpenSSH writes
    /// `Timeout, server … not responding.` there), empty when there was none.
    #[error("the connection to `{destination}` was lost (ssh log: {})", crate::exec::or_empty(.log))]
    Lost {
        /// The destination as given.
        destination: String,
        /// The end of the master's log.
        log: String,
    },
    /// A command could not be run over an open connection, or the connection broke
    /// while it ran.
    #[error("the connection to `{destination}` failed")]
    Session {
        /// The destination as given.
        destination: String,
        /// Error of the `openssh` crate.
        #[source]
        source: openssh::Error,
    },
}
