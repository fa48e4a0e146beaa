//! [`SshExecutor`]: jobs on another machine over the system OpenSSH client.
//!
//! One `ControlMaster` connection per target (started as `ssh -M -f -N` by
//! `master.rs`; the `openssh` crate talks to it over its control socket) carries
//! every command (SSH-2). The system `ssh` reads `~/.ssh/config`, the agent and
//! `known_hosts`; a host whose key is not already known is refused
//! (`StrictHostKeyChecking=yes`, SSH-1). Every command is a POSIX shell script run
//! as `sh -c '<script>'` by the remote user's login shell, which must therefore
//! understand POSIX single quotes (sh, bash, dash, zsh do; fish does not).
//!
//! Jobs start under `setsid nohup`, so they survive the connection. Their secrets
//! travel on the standard input of the start command, one value per line, and are
//! exported by the remote shell: they never appear on a command line.
//!
//! The master itself is in `master.rs`, its bounded waits in `timeouts.rs`, its control
//! socket in `socket.rs`.
//! Each call first checks that the master still answers, and starts a fresh one
//! when it does not (a master killed, or ended by its keepalive, leaves its socket
//! behind): the call then goes on over the new master. A master that ends while a
//! command runs fails that command with [`SshError::Lost`], and the next call
//!
//! By concern:
//! - `cipher`: AES-GCM first in the master's cipher list where the configuration
//!   sets none (issue 10);
//! - `timeouts`: the bounds on every wait for a target (SSH-16) and what a configuration
//!   may shorten;
//! - `socket`: where a master's control socket lives (a Unix socket path is short);
//! - `destination`: how to reach a target ([`SshDestination`], [`PodEndpoint`]);
//! - `master`: starting the `ssh -M -f -N` master and reading its log;
//! - `error`: [`SshError`], failures of the connection itself;
//! - `executor`: [`SshExecutor`], the [`Executor`](super::Executor) over that master.

mod cipher;
mod destination;
mod error;
mod executor;
mod master;
mod socket;
mod timeouts;

pub use destination::{PodEndpoint, SshDestination};
pub use error::SshError;
pub use executor::{REQUIRED_TOOLS, SshExecutor};
pub use socket::{MAX_CONTROL_PATH, control_dirs};
pub use timeouts::{CONNECT_TIMEOUT, KEEPALIVE, KEEPALIVE_COUNT, MASTER_IDLE, SshTimeouts};
