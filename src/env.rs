//! The process environment, read once at start (STYLE: read the environment in one place).
//! A ground module of its own, below `config` and `secrets`, which both read it.
//!
//! Every setting, the Vault address and token, `NO_COLOR` and the log filter are looked up
//! in an [`EnvSnapshot`] rather than in `std::env`, so tests can hand in their own and a
//! reload (RLD-5) can layer a new `.env` over the same start-up environment.

use std::collections::BTreeMap;
use std::time::Duration;

/// Test-only knob (ENV-5 reserves `OVERBRAINER_TEST_*`): how many milliseconds one second
/// of every lifecycle rule lasts (retry waits, graces, leases, deadlines, polls). The test
/// suite sets it so the real rules run in a fraction of the time; users never set it.
pub const SECOND_MS_VAR: &str = "OVERBRAINER_TEST_SECOND_MS";

/// The one test-only factor by which lifecycle durations scale ([`SECOND_MS_VAR`]).
/// [`TimeScale::REAL`] (a second is a second) unless the test suite set the variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeScale {
    second: Duration,
}

impl TimeScale {
    /// Real time: one second of a rule is one second.
    pub const REAL: Self = Self {
        second: Duration::from_secs(1),
    };

    /// One second of a rule lasts `second` (tests).
    #[must_use]
    pub const fn with_second(second: Duration) -> Self {
        Self { second }
    }

    /// The scale [`SECOND_MS_VAR`] sets in `env`; [`TimeScale::REAL`] when it is unset or
    /// not a whole number of milliseconds.
    #[must_use]
    pub fn from_env(env: &EnvSnapshot) -> Self {
        env.get(SECOND_MS_VAR)
            .and_then(|ms| ms.trim().parse::<u64>().ok())
            .map_or(Self::REAL, |ms| {
                Self::with_second(Duration::from_millis(ms))
            })
    }

    /// How long one second of a rule lasts.
    #[must_use]
    pub const fn second(self) -> Duration {
        self.second
    }

    /// `rule` on this scale: `rule` seconds of rule time, each lasting [`Self::second`].
    #[must_use]
    pub fn scale(self, rule: Duration) -> Duration {
        self.second.mul_f64(rule.as_secs_f64())
    }

    /// How often to look at something that `every` paces in rule time (a poll, a sample,
    /// a retry): `every` on this scale, but never more often than every
    /// [`MIN_SCALED_POLL`] (or `every` itself when that is shorter). A poll is a process
    /// or a round trip; the test suite's fast scales would otherwise run hundreds a
    /// second and leave the machine's cores to them (issue 31). Real time is unchanged.
    #[must_use]
    pub fn poll(self, every: Duration) -> Duration {
        self.scale(every).max(every.min(MIN_SCALED_POLL))
    }
}

/// The shortest pause between two polls on a fast test scale ([`TimeScale::poll`]).
pub const MIN_SCALED_POLL: Duration = Duration::from_millis(200);

/// A copy of environment variables, by name. Variables whose name or value is not valid
/// UTF-8 are left out.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct EnvSnapshot {
    vars: BTreeMap<String, String>,
}

impl EnvSnapshot {
    /// The environment of this process, now.
    #[must_use]
    #[allow(
        clippy::disallowed_methods,
        reason = "the one place that reads the environment"
    )]
    pub fn capture() -> Self {
        Self {
            vars: std::env::vars_os()
                .filter_map(|(name, value)| {
                    Some((name.into_string().ok()?, value.into_string().ok()?))
                })
                .collect(),
        }
    }

    /// A snapshot holding exactly `pairs` (for tests and for layering `.env`).
    #[must_use]
    pub fn from_pairs<I, K, V>(pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `name`, if set.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Whether `name` is set (possibly empty).
    #[must_use]
    pub fn contains(&self, name: &str) -> bool {
        self.vars.contains_key(name)
    }

    /// Every variable, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// This snapshot with `extra` added where a name is not set yet (the process
    /// environment wins over `.env`, ENV-2).
    #[must_use]
    pub fn with_fallbacks<'a>(&self, extra: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut vars = self.vars.clone();
        for (name, value) in extra {
            vars.entry(name.to_owned())
                .or_insert_with(|| value.to_owned());
        }
        Self { vars }
    }

    /// `NO_COLOR` set to a non-empty value (LOG-3).
    #[must_use]
    pub fn no_color(&self) -> bool {
        self.get("NO_COLOR").is_some_and(|v| !v.is_empty())
    }

    /// The log filter from `OVERBRAINER_LOG` (LOG-2).
    #[must_use]
    pub fn log_filter(&self) -> Option<&str> {
        self.get("OVERBRAINER_LOG").filter(|v| !v.is_empty())
    }
}

impl std::fmt::Debug for EnvSnapshot {
    /// Lists names only: values may be secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_values_win_over_fallbacks_and_debug_hides_values() {
        let env = EnvSnapshot::from_pairs([("A", "process"), ("KEY", "s3cr3t-Z5kW9qM2xV7nT4rB8h")]);
        let merged = env.with_fallbacks([("A", "dotenv"), ("B", "dotenv")]);
        assert_eq!(merged.get("A"), Some("process"));
        assert_eq!(merged.get("B"), Some("dotenv"));
        assert!(!format!("{merged:?}").contains("s3cr3t-Z5kW9qM2xV7nT4rB8h"));
    }

    #[test]
    fn the_time_scale_is_real_unless_the_test_variable_sets_whole_milliseconds() {
        let none = EnvSnapshot::from_pairs::<[(&str, &str); 0], _, _>([]);
        assert_eq!(TimeScale::from_env(&none), TimeScale::REAL);
        let bad = EnvSnapshot::from_pairs([(SECOND_MS_VAR, "fast")]);
        assert_eq!(TimeScale::from_env(&bad), TimeScale::REAL);
        let fast = TimeScale::from_env(&EnvSnapshot::from_pairs([(SECOND_MS_VAR, "10")]));
        assert_eq!(fast.second(), Duration::from_millis(10));
        assert_eq!(
            fast.scale(Duration::from_secs(30)),
            Duration::from_millis(300)
        );
        assert_eq!(
            TimeScale::REAL.scale(Duration::from_millis(1500)),
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn a_poll_on_a_fast_scale_keeps_a_floor_and_real_time_polls_are_unchanged() {
        let fast = TimeScale::with_second(Duration::from_millis(10));
        let cases = [
            // (every, on the fast scale, in real time)
            (
                Duration::from_secs(1),
                MIN_SCALED_POLL,
                Duration::from_secs(1),
            ),
            (
                Duration::from_secs(60),
                Duration::from_millis(600),
                Duration::from_secs(60),
            ),
            (
                Duration::from_millis(50),
                Duration::from_millis(50),
                Duration::from_millis(50),
            ),
            (
                Duration::from_millis(250),
                MIN_SCALED_POLL,
                Duration::from_millis(250),
            ),
        ];
        for (every, on_fast, real) in cases {
            assert_eq!(fast.poll(every), on_fast, "{every:?}");
            assert_eq!(TimeScale::REAL.poll(every), real, "{every:?}");
        }
    }
}
