//! How to reach an SSH target: [`SshDestination`], and [`PodEndpoint`] for a Runpod pod.

use std::path::PathBuf;

use super::SshTimeouts;
use super::socket::control_dirs;

/// Where a Runpod pod's `sshd` listens, as the Runpod API reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodEndpoint {
    /// Public IP address or host name.
    pub host: String,
    /// Public TCP port mapped to the pod's port 22.
    pub port: u16,
}

impl PodEndpoint {
    /// The destination of this pod: `root@host` on `port`, with the run's own
    /// `ssh` configuration file `config_file` (`ssh -F`, which bypasses
    /// `~/.ssh/config`), and the keepalive defaults of SSH-16 always applied.
    #[must_use]
    pub fn destination(&self, config_file: PathBuf) -> SshDestination {
        SshDestination {
            host: format!("root@{}", self.host),
            port: Some(self.port),
            config_file: Some(config_file),
            identity_file: None,
            known_hosts_file: None,
            always_default_keepalive: true,
            timeouts: SshTimeouts::default(),
            control_dirs: control_dirs(None, None),
        }
    }
}

/// How to reach an SSH target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshDestination {
    /// `user@host`, `host`, or a `Host` alias of the configuration.
    pub host: String,
    /// Port (`ssh -p`); `None` leaves it to the configuration (default 22).
    pub port: Option<u16>,
    /// Configuration file used instead of `~/.ssh/config` (`ssh -F`).
    pub config_file: Option<PathBuf>,
    /// The only private key to offer (`ssh -i` with `IdentitiesOnly=yes`); `None`
    /// leaves keys to the agent and the configuration.
    pub identity_file: Option<PathBuf>,
    /// Known hosts file used instead of `~/.ssh/known_hosts`
    /// (`UserKnownHostsFile`).
    pub known_hosts_file: Option<PathBuf>,
    /// Apply [`SshDestination::timeouts`] as they are, without asking the
    /// configuration for shorter ones (Runpod pods, SSH-16).
    pub always_default_keepalive: bool,
    /// The bounds on every wait for the target, passed with `-o` so that no
    /// configuration file lengthens them (issue 8); defaults of SSH-16.
    pub timeouts: SshTimeouts,
    /// Directories to try, in order, for the master's control socket (see
    /// [`control_dirs`](super::control_dirs)); the first one short enough for a Unix
    /// socket path is used.
    pub control_dirs: Vec<PathBuf>,
}

impl SshDestination {
    /// A destination with only `host` set: everything else comes from
    /// `~/.ssh/config`, the bounds are those of SSH-16 and the control socket goes
    /// under `/tmp` (the CLI adds `XDG_RUNTIME_DIR` and `TMPDIR` in front).
    #[must_use]
    pub fn new(host: &str) -> Self {
        Self {
            host: host.to_owned(),
            port: None,
            config_file: None,
            identity_file: None,
            known_hosts_file: None,
            always_default_keepalive: false,
            timeouts: SshTimeouts::default(),
            control_dirs: control_dirs(None, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_destination_always_uses_the_keepalive_defaults() {
        let pod = PodEndpoint {
            host: "203.0.113.7".into(),
            port: 40022,
        };
        let destination = pod.destination(PathBuf::from("runs/r1/ssh/config"));
        assert_eq!(destination.host, "root@203.0.113.7");
        assert_eq!(destination.port, Some(40022));
        assert!(destination.always_default_keepalive);
    }
}
