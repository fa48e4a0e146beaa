//! `[metrics]`: the Prometheus endpoint, with its rule (spec/config.md, table 2.11).

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::rules::Check;

/// `[metrics]`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// `IP:port` of the Prometheus endpoint; unset turns it off.
    #[serde(default)]
    pub listen: Option<String>,
}

/// The rules of `[metrics]`.
pub(super) fn check(check: &mut Check<'_>, metrics: &Metrics) {
    if let Some(listen) = &metrics.listen {
        if listen.parse::<SocketAddr>().is_err() {
            check.fail(
                "metrics.listen",
                "invalid value: expected an IP address and a port (`127.0.0.1:9464`, `[::1]:9464`)",
            );
        }
    }
}
