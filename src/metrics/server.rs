//! The HTTP side (MET-1, MET-4): `GET /metrics` answers the OpenMetrics text, anything
//! else 404; HTTP/1.1 through hyper (already in the tree under reqwest). The endpoint
//! serves until its [`Endpoint`] is dropped.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use super::Metrics;

/// The content type of the answer (MET-4).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A bound endpoint; dropping it stops the server and its connections.
#[derive(Debug)]
pub struct Endpoint {
    address: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Endpoint {
    /// The address bound (the actual port when `listen` asked for port 0).
    #[must_use]
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The URL Prometheus scrapes (MET-2).
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}/metrics", self.address)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds `address` and serves `metrics` there on the current Tokio runtime.
///
/// # Errors
///
/// The bind's error (the port is taken, the address is not this machine's).
pub async fn bind(address: SocketAddr, metrics: Arc<Metrics>) -> std::io::Result<Endpoint> {
    let listener = TcpListener::bind(address).await?;
    let address = listener.local_addr()?;
    let task = tokio::spawn(accept(listener, metrics));
    Ok(Endpoint { address, task })
}

async fn accept(listener: TcpListener, metrics: Arc<Metrics>) {
    // Dropped with this task: aborts every connection still open.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let metrics = Arc::clone(&metrics);
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let metrics = Arc::clone(&metrics);
                        async move { Ok::<_, Infallible>(answer(&request, &metrics)) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// The answer to one request: the metrics for `GET /metrics`, 404 for anything else.
fn answer(request: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    respond(request.method(), request.uri().path(), metrics)
}

fn respond(method: &Method, path: &str, metrics: &Metrics) -> Response<Full<Bytes>> {
    let mut response = if method == Method::GET && path == "/metrics" {
        let mut response = Response::new(Full::new(Bytes::from(metrics.encode())));
        if let Ok(value) = hyper::header::HeaderValue::from_str(CONTENT_TYPE) {
            response
                .headers_mut()
                .insert(hyper::header::CONTENT_TYPE, value);
        }
        response
    } else {
        let mut response = Response::new(Full::new(Bytes::from_static(b"not found\n")));
        *response.status_mut() = StatusCode::NOT_FOUND;
        response
    };
    response.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_of_the_metrics_path_answers_200_with_the_openmetrics_type() {
        let metrics = Metrics::new("1.2.3", None);
        let ok = respond(&Method::GET, "/metrics", &metrics);
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(ok.headers()[hyper::header::CONTENT_TYPE], CONTENT_TYPE);
        for (method, path) in [
            (Method::POST, "/metrics"),
            (Method::HEAD, "/metrics"),
            (Method::GET, "/"),
            (Method::GET, "/metrics/x"),
        ] {
            assert_eq!(
                respond(&method, path, &metrics).status(),
                StatusCode::NOT_FOUND,
                "{method} {path}"
            );
        }
    }

    #[tokio::test]
    async fn a_taken_port_is_an_error_and_port_zero_binds_a_free_one() {
        let metrics = Arc::new(Metrics::new("1.2.3", None));
        let first = bind("127.0.0.1:0".parse().unwrap(), Arc::clone(&metrics))
            .await
            .unwrap();
        assert_ne!(first.address().port(), 0);
        assert!(bind(first.address(), metrics).await.is_err());
        assert_eq!(first.url(), format!("http://{}/metrics", first.address()));
    }

    #[tokio::test]
    async fn the_endpoint_serves_over_a_real_socket_until_it_is_dropped() {
        let metrics = Arc::new(Metrics::new("1.2.3", None));
        let endpoint = bind("127.0.0.1:0".parse().unwrap(), metrics).await.unwrap();
        let client = reqwest::Client::new();
        let ok = client.get(endpoint.url()).send().await.unwrap();
        assert_eq!(ok.status(), reqwest::StatusCode::OK);
        assert_eq!(ok.headers()[reqwest::header::CONTENT_TYPE], CONTENT_TYPE);
        let body = ok.text().await.unwrap();
        assert!(body.ends_with("# EOF\n"), "{body}");
        assert!(
            body.contains("overbrainer_build_info{version=\"1.2.3\"} 1\n"),
            "{body}"
        );
        let other = format!("http://{}/other", endpoint.address());
        let missing = client.get(other).send().await.unwrap();
        assert_eq!(missing.status(), reqwest::StatusCode::NOT_FOUND);
        let address = endpoint.address();
        drop(endpoint);
        // The listener closes once the runtime drops the aborted task: the port is free.
        let mut freed = false;
        for _ in 0..1000 {
            if tokio::net::TcpListener::bind(address).await.is_ok() {
                freed = true;
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(freed, "still listening after the drop");
    }
}
