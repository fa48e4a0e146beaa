//! What the rules of every section share: [`Check`], which collects the problems, and the
//! checks of names, paths and URLs (ENV-8, CFG-9).

use super::error::Problem;

/// Whether `name` is a valid provider or target name, `^[a-z0-9_]+$` (ENV-8).
#[must_use]
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether `value` uses only the shell-safe path characters of CFG-9: letters, digits and
/// `/ . _ - ~ : @ +`, and does not start with `-`, which a program would read as an
/// option (an `image = "--privileged"` would reach `docker run` as a flag).
#[must_use]
pub fn safe_path(value: &str) -> bool {
    !value.is_empty()
        && !value.starts_with('-')
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-~:@+".contains(c))
}

/// Whether `url` is an `http` or `https` URL; with `loopback_http`, `http` only on a
/// loopback host.
pub(super) fn url_problem(url: &str, https_only_except_loopback: bool) -> Option<&'static str> {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return Some("invalid value: expected a URL");
    };
    match parsed.scheme() {
        "https" => None,
        "http" if !https_only_except_loopback => None,
        "http" => {
            let host = parsed.host_str().unwrap_or_default();
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let loopback = host == "localhost"
                || host
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            (!loopback)
                .then_some("invalid value: expected `https`, or `http` only on a loopback host")
        }
        _ => Some("invalid value: expected an `http` or `https` URL"),
    }
}

/// Provider and target names present in the configuration, including entries whose own
/// values failed to type (so a role naming one is not also reported as unknown).
#[derive(Debug, Default)]
pub(crate) struct Declared {
    pub(crate) providers: std::collections::BTreeSet<String>,
    pub(crate) targets: std::collections::BTreeSet<String>,
}

/// The problems found so far, with the helpers every section's rules use.
pub(super) struct Check<'a> {
    problems: &'a mut Vec<Problem>,
    declared: &'a Declared,
}

impl<'a> Check<'a> {
    pub(super) fn new(problems: &'a mut Vec<Problem>, declared: &'a Declared) -> Self {
        Self { problems, declared }
    }

    /// The names the configuration declares.
    pub(super) fn declared(&self) -> &Declared {
        self.declared
    }

    pub(super) fn fail(&mut self, key: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem::new(key, message));
    }

    pub(super) fn at_least(&mut self, key: &str, value: u64, min: u64) {
        if value < min {
            self.fail(key, format!("out of range: must be at least {min}"));
        }
    }

    pub(super) fn unit(&mut self, key: &str, value: f64, upper_open: bool) {
        let ok = value >= 0.0
            && if upper_open {
                value < 1.0
            } else {
                value <= 1.0
            };
        if !ok {
            let range = if upper_open {
                "0 <= v < 1"
            } else {
                "0 <= v <= 1"
            };
            self.fail(key, format!("out of range: must be {range}"));
        }
    }

    pub(super) fn temperature(&mut self, key: &str, value: f64) {
        if !(0.0..=2.0).contains(&value) {
            self.fail(key, "out of range: must be 0 <= t <= 2");
        }
    }

    pub(super) fn non_empty(&mut self, key: &str, value: &str) {
        if value.trim().is_empty() {
            self.fail(key, "must not be empty");
        }
    }

    pub(super) fn safe(&mut self, key: &str, value: &str) {
        if value.trim().is_empty() {
            self.fail(key, "must not be empty");
        } else if !safe_path(value) {
            self.fail(
                key,
                "invalid value: use only letters, digits and `/ . _ - ~ : @ +`, not starting with `-`",
            );
        }
    }
}
