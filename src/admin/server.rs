//! The admin HTTP listener (`strata.admin.listeners`): `/metrics`, `/health/live`,
//! `/health/ready` and the web console ([`super::console`]) over HTTP/1.1, served by hyper.
//!
//! Bounded like the Kafka listeners: at most [`MAX_CONNECTIONS`] connections at once (more
//! wait to be accepted), request headers must arrive within [`HEADER_READ_TIMEOUT`] and fit
//! in [`MAX_REQUEST_HEADER_BYTES`] (hyper answers 431 past it), request bodies are never read
//! (every route is a GET), and a connection lives at most [`CONNECTION_MAX_LIFETIME`].
//! Unknown paths get 404, methods other than GET (and HEAD) 405. It binds with the Kafka
//! listeners at start-up, and a port in use stops start-up only when `strata.admin.listeners`
//! was set: the default address is skipped with a warning ([`bind_at_start_up`]).
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::peers::PeerView;
use super::sampler::Sampler;
use crate::broker::Broker;
use crate::config::admin::{AdminListener, ADMIN_LISTENERS};
use crate::config::BrokerConfig;

/// Admin connections served at once; scrapers and probes need a handful.
pub const MAX_CONNECTIONS: usize = 64;
/// How long a client may take to send its request headers.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest request head (request line and headers) accepted.
pub const MAX_REQUEST_HEADER_BYTES: usize = 16 * 1024;
/// A keep-alive connection is closed after this long, whatever it does.
pub const CONNECTION_MAX_LIFETIME: Duration = Duration::from_secs(300);

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Binds every admin listener; a bad address or a port in use is an error naming it.
pub async fn bind(
    listeners: &[AdminListener],
) -> Result<Vec<TcpListener>, (String, std::io::Error)> {
    let mut bound = Vec::with_capacity(listeners.len());
    for l in listeners {
        let address = l.bind_address();
        match TcpListener::bind(&address).await {
            Ok(listener) => bound.push(listener),
            Err(e) => return Err((format!("http://{address} ({ADMIN_LISTENERS})"), e)),
        }
    }
    Ok(bound)
}

/// Binds the admin listeners at start-up. A `strata.admin.listeners` set in the configuration
/// (empty included) must bind or start-up stops; the default one, used when the key is left
/// out as Kafka's own per-node configs leave it, is skipped with a warning instead, so several
/// nodes started on one host from Kafka's files do not all stop for 127.0.0.1:9644.
pub async fn bind_at_start_up(
    config: &BrokerConfig,
) -> Result<Vec<TcpListener>, (String, std::io::Error)> {
    let explicit = config.static_configs.contains_key(ADMIN_LISTENERS);
    match bind(&config.admin_listeners).await {
        Err((listener, error)) if !explicit => {
            tracing::warn!(
                key = ADMIN_LISTENERS,
                listener = %listener,
                %error,
                "the default admin listener cannot be bound; the broker runs without it (no \
                 /metrics, health probes or console): set {ADMIN_LISTENERS} to a free address, \
                 or to empty to turn it off"
            );
            Ok(Vec::new())
        }
        bound => bound,
    }
}

/// Serves the bound admin listeners until `shutdown`.
pub async fn serve(broker: Arc<Broker>, listeners: Vec<TcpListener>, shutdown: CancellationToken) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let tracker = TaskTracker::new();
    // The console's throughput history is sampled only while a listener serves it.
    let sampler = Arc::new(Sampler::default());
    // What other brokers of a cluster hold, read only while somebody reads the console.
    let peers = Arc::new(PeerView::default());
    if !listeners.is_empty() {
        tracker.spawn(sampler.clone().run(broker.clone(), shutdown.clone()));
        tracker.spawn(peers.clone().run(broker.clone(), shutdown.clone()));
    }
    for listener in listeners {
        let (sampler, peers) = (sampler.clone(), peers.clone());
        let (broker, permits, shutdown, connections) = (
            broker.clone(),
            permits.clone(),
            shutdown.clone(),
            tracker.clone(),
        );
        tracker.spawn(async move {
            loop {
                let permit = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return },
                };
                let (stream, peer) = tokio::select! {
                    _ = shutdown.cancelled() => return,
                    a = listener.accept() => match a {
                        Ok(a) => a,
                        Err(e) => {
                            tracing::warn!(error = %e, "admin listener accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                };
                let (broker, sampler, peers, shutdown) = (
                    broker.clone(),
                    sampler.clone(),
                    peers.clone(),
                    shutdown.clone(),
                );
                connections.spawn(async move {
                    serve_connection(broker, sampler, peers, stream, peer, shutdown).await;
                    drop(permit);
                });
            }
        });
    }
    shutdown.cancelled().await;
    tracker.close();
    tracker.wait().await;
}

async fn serve_connection(
    broker: Arc<Broker>,
    sampler: Arc<Sampler>,
    peers: Arc<PeerView>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    shutdown: CancellationToken,
) {
    let service = hyper::service::service_fn(move |req| {
        let (broker, sampler, peers) = (broker.clone(), sampler.clone(), peers.clone());
        async move { Ok::<_, std::convert::Infallible>(route(&broker, &sampler, &peers, &req)) }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_REQUEST_HEADER_BYTES)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        r = &mut connection => if let Err(e) = r {
            tracing::debug!(%peer, error = %e, "admin connection ended with an error");
        },
        _ = tokio::time::sleep(CONNECTION_MAX_LIFETIME) => {}
        _ = shutdown.cancelled() => {}
    }
}

fn respond(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Answers one request (the body, if any, is never read).
fn route(
    broker: &Broker,
    sampler: &Sampler,
    peers: &PeerView,
    req: &Request<Incoming>,
) -> Response<Full<Bytes>> {
    if let Some(r) = super::console::route(broker, sampler, peers, req.method(), req.uri()) {
        return r;
    }
    let path = req.uri().path();
    let known = matches!(path, "/metrics" | "/health/live" | "/health/ready");
    if !known {
        return respond(StatusCode::NOT_FOUND, "text/plain", "not found\n".into());
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = respond(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "method not allowed\n".into(),
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    match path {
        "/health/live" => respond(
            StatusCode::OK,
            "application/json",
            "{\"status\":\"live\"}\n".into(),
        ),
        "/health/ready" => {
            let (status, body) = super::health::ready(broker);
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            respond(status, "application/json", body)
        }
        _ => {
            let openmetrics = req
                .headers()
                .get_all(ACCEPT)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .any(|v| v.contains("application/openmetrics-text"));
            match encode_metrics(broker, openmetrics) {
                Ok(body) => respond(
                    StatusCode::OK,
                    if openmetrics {
                        OPENMETRICS
                    } else {
                        prometheus_client::encoding::prometheus_text::CONTENT_TYPE
                    },
                    body,
                ),
                Err(_) => respond(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "text/plain",
                    "metrics could not be encoded\n".into(),
                ),
            }
        }
    }
}

/// The broker's registry and the scrape-time gauges, in the Prometheus text format (0.0.4) or
/// OpenMetrics text.
pub fn encode_metrics(broker: &Broker, openmetrics: bool) -> Result<String, std::fmt::Error> {
    use prometheus_client::encoding::{prometheus_text, text};
    let scraped = super::scrape::collect(broker);
    let mut out = String::with_capacity(64 * 1024);
    if openmetrics {
        text::encode_registry(&mut out, broker.metrics.registry())?;
        text::encode_registry(&mut out, &scraped)?;
        text::encode_eof(&mut out)?;
    } else {
        prometheus_text::encode(&mut out, broker.metrics.registry())?;
        prometheus_text::encode(&mut out, &scraped)?;
    }
    Ok(out)
}
