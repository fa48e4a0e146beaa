//! When a preupload or LFS call is tried again (wire-facts B.6): on 429 and 5xx, and on
//! a failed connection, with exponential backoff, honouring `Retry-After`. The commit is
//! never retried by this rule (`super::client` checks the repo head instead).

use std::time::Duration;

/// Tries in all, the first included.
pub const ATTEMPTS: u32 = 6;

/// The first backoff; each later one doubles, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// The longest backoff, and the longest `Retry-After` honoured as given.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What to do after a failed try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Wait this long (in rule seconds, before the time scale), then try again.
    Wait(Duration),
    /// Give up: the error is final.
    GiveUp,
}

/// What failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure<'a> {
    /// The server answered this status with this `Retry-After` header, if any.
    Status(u16, Option<&'a str>),
    /// No answer (connection refused or reset, timeout).
    Transport,
}

/// The decision after try number `attempt` (1 = the first) failed with `failure`.
#[must_use]
pub fn next(attempt: u32, failure: Failure<'_>) -> Next {
    if attempt >= ATTEMPTS {
        return Next::GiveUp;
    }
    let backoff = FIRST_BACKOFF
        .saturating_mul(1 << (attempt - 1).min(16))
        .min(MAX_BACKOFF);
    match failure {
        Failure::Transport => Next::Wait(backoff),
        Failure::Status(status, retry_after) if status == 429 || (500..600).contains(&status) => {
            let asked = retry_after
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            Next::Wait(asked.map_or(backoff, |a| a.min(MAX_BACKOFF)))
        }
        Failure::Status(..) => Next::GiveUp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_retries_429_and_5xx_honouring_retry_after_and_gives_up_on_the_rest() {
        let s = Duration::from_secs;
        let table: [(u32, Failure<'_>, Next); 11] = [
            (1, Failure::Status(429, Some("7")), Next::Wait(s(7))),
            (1, Failure::Status(429, None), Next::Wait(s(1))),
            (2, Failure::Status(503, None), Next::Wait(s(2))),
            (3, Failure::Status(500, Some("x")), Next::Wait(s(4))),
            (4, Failure::Transport, Next::Wait(s(8))),
            (
                5,
                Failure::Status(429, Some("3600")),
                Next::Wait(MAX_BACKOFF),
            ),
            (ATTEMPTS, Failure::Status(429, Some("1")), Next::GiveUp),
            (1, Failure::Status(400, None), Next::GiveUp),
            (1, Failure::Status(401, None), Next::GiveUp),
            (1, Failure::Status(403, Some("1")), Next::GiveUp),
            (1, Failure::Status(404, None), Next::GiveUp),
        ];
        for (attempt, failure, expected) in table {
            assert_eq!(next(attempt, failure), expected, "{attempt} {failure:?}");
        }
    }
}
