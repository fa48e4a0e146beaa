//! The Prometheus / OpenMetrics endpoint (spec/metrics.md, MET-1..MET-20), encoded with
//! the `prometheus-client` crate:
//!
//! - [`families`]: the registry of families, their names, types, units and labels;
//! - [`collector`]: [`Metrics`], fed by the flows' typed events (the same the front ends
//!   render), counters seeded from the history;
//! - [`spend`]: the Runpod spend, computed at each scrape from the runs' `pod.json`;
//! - [`server`]: `GET /metrics` over HTTP/1.1 (hyper), bound only where `metrics.listen`
//!   says.
//!
//! [`start`] does it all for a command; the front end logs what it returns (the URL, a
//! warning for a non-loopback address, MET-5, or for a failed bind, MET-6).

pub mod collector;
pub mod families;
pub mod server;
pub mod spend;

use std::net::SocketAddr;
use std::sync::Arc;

pub use collector::{Follower, Metrics};
pub use server::Endpoint;

use crate::env::TimeScale;
use crate::project::Project;

/// An endpoint serving, and what it serves.
#[derive(Debug)]
pub struct Serving {
    /// What the events feed.
    pub metrics: Arc<Metrics>,
    /// The bound server; dropping it stops serving.
    pub endpoint: Endpoint,
    /// The history could not be read: the counters start from zero (the reason).
    pub history_unread: Option<String>,
}

/// Why the endpoint does not serve; the command goes on without it (MET-6).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Binding the address failed (the port is taken, the address is not this machine's).
    #[error("the metrics endpoint is off: cannot listen on `{address}` (`metrics.listen`)")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// `metrics.listen` as an address, when set and valid (validation refuses any other).
#[must_use]
pub fn listen_address(settings: &crate::config::Settings) -> Option<SocketAddr> {
    settings.metrics.listen.as_deref()?.parse().ok()
}

/// Whether `address` reaches beyond this machine (MET-5 warns then).
#[must_use]
pub fn is_exposed(address: SocketAddr) -> bool {
    // A v4-mapped loopback (`[::ffff:127.0.0.1]`) is loopback too.
    !address.ip().to_canonical().is_loopback()
}

/// The metrics of `project`: families registered, counters seeded from every
/// line of `.overbrainer/history.jsonl` (MET-7), the spend of `runs/` (MET-12). Returns
/// why the history could not be read, when it could not.
#[must_use]
pub fn project_metrics(project: &Project, scale: TimeScale) -> (Metrics, Option<String>) {
    let spend = spend::Spend::new(
        project.runs_dir(),
        scale.scale(std::time::Duration::from_secs(3600)),
    );
    let metrics = Metrics::new(env!("CARGO_PKG_VERSION"), Some(spend));
    let unread = match crate::history::read(&project.history_path()) {
        Ok((lines, _skipped)) => {
            metrics.seed(&lines);
            None
        }
        Err(error) => Some(error.to_string()),
    };
    (metrics, unread)
}

/// Serves the metrics of `project` on `address` for as long as the returned
/// [`Serving`] lives, on the current Tokio runtime.
///
/// # Errors
///
/// [`ServeError::Bind`] when the address cannot be bound.
pub async fn start(
    project: &Project,
    address: SocketAddr,
    scale: TimeScale,
) -> Result<Serving, ServeError> {
    let (metrics, history_unread) = project_metrics(project, scale);
    let metrics = Arc::new(metrics);
    let endpoint = server::bind(address, Arc::clone(&metrics))
        .await
        .map_err(|source| ServeError::Bind { address, source })?;
    Ok(Serving {
        metrics,
        endpoint,
        history_unread,
    })
}

#[cfg(test)]
mod tests {
    use super::is_exposed;

    #[test]
    fn only_addresses_beyond_this_machine_are_exposed_a_mapped_loopback_is_not() {
        for (address, exposed) in [
            ("127.0.0.1:9464", false),
            ("[::1]:9464", false),
            ("[::ffff:127.0.0.1]:9464", false),
            ("0.0.0.0:9464", true),
            ("[::]:9464", true),
            ("192.168.1.5:9464", true),
            ("[::ffff:10.0.0.1]:9464", true),
        ] {
            assert_eq!(is_exposed(address.parse().unwrap()), exposed, "{address}");
        }
    }
}
