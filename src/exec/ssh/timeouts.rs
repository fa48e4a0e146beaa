//! The bounds on waiting for an SSH target (SSH-16, issue 8).
//!
//! Bounded waits (SSH-16, issue 8). `ServerAliveInterval`, `ServerAliveCountMax`
//! and `ConnectTimeout` are always passed with `-o` on the master's command line,
//! which beats every configuration file. A configuration can shorten them (the
//! smaller value wins), never lengthen them: Debian's OpenSSH turns `BatchMode yes`
//! into `ServerAliveInterval 300`, which would otherwise let a wedged target hang a
//! call for 15 minutes. Every command runs over the master, so with the defaults a
//! target that stops answering ends the master, and the call waiting on it, within
//! 45 seconds (15 s × 3) of its last answer; a master that cannot even finish
//! connecting is given up after the connect timeout plus that window.

use std::time::Duration;

/// Keepalive interval of an SSH connection (SSH-16): 15 seconds. A configuration
/// may set a shorter `ServerAliveInterval`, never a longer one (see `master.rs`).
pub const KEEPALIVE: Duration = Duration::from_secs(15);
/// Unanswered keepalives before the master gives up (SSH-16): 3, so a target that
/// stops answering is given up 45 seconds after its last answer.
pub const KEEPALIVE_COUNT: u32 = 3;
/// Connect timeout (SSH-16): 30 seconds; a configuration may set a shorter one.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// An idle master exits after this long without any command, so a master left
/// behind by a killed overbrainer does not live for ever: 10 minutes.
pub const MASTER_IDLE: Duration = Duration::from_secs(600);

/// The bounds on waiting for a target (SSH-16). The defaults are [`KEEPALIVE`],
/// [`KEEPALIVE_COUNT`] and [`CONNECT_TIMEOUT`]; tests shorten them to see a wedged
/// target reported in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SshTimeouts {
    /// `ServerAliveInterval`: a keepalive after this long without data from the
    /// target. Whole seconds, at least one.
    pub alive_interval: Duration,
    /// `ServerAliveCountMax`: unanswered keepalives before the master gives up.
    pub alive_count_max: u32,
    /// `ConnectTimeout`: for the TCP connection and the server's greeting.
    pub connect: Duration,
}

impl Default for SshTimeouts {
    fn default() -> Self {
        Self {
            alive_interval: KEEPALIVE,
            alive_count_max: KEEPALIVE_COUNT,
            connect: CONNECT_TIMEOUT,
        }
    }
}

impl SshTimeouts {
    /// How long a connected target may stay silent before the master ends:
    /// interval × count.
    #[must_use]
    pub fn silence_limit(&self) -> Duration {
        Duration::from_secs(secs(self.alive_interval) * u64::from(self.alive_count_max.max(1)))
    }

    /// These bounds, each lowered to the value `configured` sets, if smaller.
    pub(super) fn capped_by(self, configured: Configured) -> Self {
        let cap = |ours: Duration, theirs: Option<u64>| match theirs {
            Some(theirs) if theirs > 0 && theirs < secs(ours) => Duration::from_secs(theirs),
            _ => ours,
        };
        Self {
            alive_interval: cap(self.alive_interval, configured.alive_interval),
            alive_count_max: match configured.alive_count_max {
                Some(theirs) if theirs > 0 => self
                    .alive_count_max
                    .min(u32::try_from(theirs).unwrap_or(u32::MAX)),
                _ => self.alive_count_max,
            },
            connect: cap(self.connect, configured.connect),
        }
    }

    /// The `-o` options passing these bounds.
    pub(super) fn options(&self) -> [String; 3] {
        [
            format!("ServerAliveInterval={}", secs(self.alive_interval)),
            format!("ServerAliveCountMax={}", self.alive_count_max.max(1)),
            format!("ConnectTimeout={}", secs(self.connect)),
        ]
    }
}

/// Whole seconds of `duration`, at least one (OpenSSH reads `0` as "never").
fn secs(duration: Duration) -> u64 {
    duration.as_secs().max(1)
}

/// What the configuration sets for the bounds, as `ssh -G` prints it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Configured {
    alive_interval: Option<u64>,
    alive_count_max: Option<u64>,
    connect: Option<u64>,
}

/// Reads the output of `ssh -G` (`serveraliveinterval 0` and `connecttimeout none`
/// when unset; `serveralivecountmax` is always printed).
pub(super) fn parse_resolved(text: &str) -> Configured {
    let mut configured = Configured::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else {
            continue;
        };
        let value = value.trim().parse::<u64>().ok();
        match key {
            "serveraliveinterval" => configured.alive_interval = value,
            "serveralivecountmax" => configured.alive_count_max = value,
            "connecttimeout" => configured.connect = value,
            _ => {}
        }
    }
    configured
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_batch_mode_keepalive_does_not_lengthen_the_bounds() {
        // `ssh -G` with `BatchMode yes` on Debian, and nothing else set.
        let resolved =
            "batchmode yes\nserveraliveinterval 300\nserveralivecountmax 3\nconnecttimeout none\n";
        let capped = SshTimeouts::default().capped_by(parse_resolved(resolved));
        assert_eq!(capped, SshTimeouts::default());
        assert_eq!(capped.silence_limit(), Duration::from_secs(45));
        let options = capped.options();
        assert_eq!(
            options,
            [
                "ServerAliveInterval=15",
                "ServerAliveCountMax=3",
                "ConnectTimeout=30"
            ]
        );
    }

    #[test]
    fn a_configuration_can_shorten_the_bounds() {
        let resolved = "serveraliveinterval 5\nserveralivecountmax 2\nconnecttimeout 10\n";
        let capped = SshTimeouts::default().capped_by(parse_resolved(resolved));
        assert_eq!(capped.alive_interval, Duration::from_secs(5));
        assert_eq!(capped.alive_count_max, 2);
        assert_eq!(capped.connect, Duration::from_secs(10));
        let unset = "serveraliveinterval 0\nserveralivecountmax 0\nconnecttimeout none\n";
        let kept = SshTimeouts::default().capped_by(parse_resolved(unset));
        assert_eq!(kept, SshTimeouts::default());
    }
}
