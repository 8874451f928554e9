//! Accepts connections on every configured listener until shutdown is requested, bounded by
//! `max.connections` (a full broker stops accepting, as Kafka's acceptor waits for a slot) and
//! by `max.connections.per.ip` (a connection over its address's limit is accepted and closed,
//! with a rate-limited log line, as Kafka's `ConnectionQuotas` refuses it). Each connection
//! gets a [`ConnectionContext`] naming its listener, which decides the APIs it is served.
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::connection::Connection;
use super::connection_quotas::ConnectionQuotas;
use super::memory_pool::MemoryPool;
use crate::broker::Broker;
use crate::config::{BrokerConfig, SecurityProtocol};
use crate::handlers::{ConnectionContext, ListenerScope};

/// What a bound socket serves: its listener's name, security protocol and API scope.
#[derive(Debug, Clone)]
pub struct BoundListener {
    pub name: String,
    pub security_protocol: SecurityProtocol,
    pub scope: ListenerScope,
}

/// The limits every connection shares (Kafka's `SocketServer` settings).
pub struct NetworkState {
    /// Memory for frames being read (`queued.max.request.bytes`).
    pub memory_pool: Arc<MemoryPool>,
    /// Requests read but not yet handed to their handler (`queued.max.requests`).
    pub request_queue: Arc<Semaphore>,
    pub connection_quotas: Arc<ConnectionQuotas>,
    /// `connections.max.idle.ms`; None when negative (never).
    pub connections_max_idle: Option<Duration>,
    /// `strata.request.read.timeout.ms`.
    pub request_read_timeout: Duration,
    /// The settings of each SASL listener (issue 13, sasl slice).
    pub sasl: super::sasl_gate::SaslListeners,
}

impl NetworkState {
    pub fn from_config(config: &BrokerConfig) -> Result<Arc<NetworkState>, String> {
        Ok(Arc::new(NetworkState {
            memory_pool: MemoryPool::new(config.queued_max_request_bytes),
            request_queue: Arc::new(Semaphore::new(config.queued_max_requests.max(1) as usize)),
            connection_quotas: ConnectionQuotas::new(
                config.max_connections_per_ip,
                &config.max_connections_per_ip_overrides,
            )?,
            connections_max_idle: u64::try_from(config.connections_max_idle_ms)
                .ok()
                .map(Duration::from_millis),
            request_read_timeout: Duration::from_millis(
                config.request_read_timeout_ms.max(1) as u64
            ),
            sasl: super::sasl_gate::listeners(config),
        }))
    }
}

/// Serves `listeners` until `shutdown` fires, then waits for open connections to finish the
/// requests they already read. Controller listeners take no `max.connections` slot, so a busy
/// broker can still reach its controller (Kafka likewise exempts the listeners its brokers and
/// controllers talk on).
pub async fn serve(
    broker: Arc<Broker>,
    network: Arc<NetworkState>,
    listeners: Vec<(TcpListener, BoundListener)>,
    shutdown: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(broker.limits.max_connections));
    let tracker = TaskTracker::new();
    for (listener, bound) in listeners {
        let unlimited = bound.scope == ListenerScope::Controller;
        let broker = broker.clone();
        let network = network.clone();
        let permits = permits.clone();
        let shutdown = shutdown.clone();
        let tracker2 = tracker.clone();
        tracker.spawn(async move {
            loop {
                let permit = if unlimited {
                    None
                } else {
                    tokio::select! {
                        _ = shutdown.cancelled() => break,
                        p = permits.clone().acquire_owned() => match p { Ok(p) => Some(p), Err(_) => break },
                    }
                };
                let accepted = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    a = listener.accept() => a,
                };
                match accepted {
                    Ok((stream, peer)) => {
                        let ip_slot = match network.connection_quotas.try_acquire(peer.ip()) {
                            Ok(slot) => slot,
                            Err(too_many) => {
                                network
                                    .connection_quotas
                                    .log_rejected(peer, &bound.name, &too_many);
                                // Dropping the stream closes it; the permit is given back.
                                continue;
                            }
                        };
                        let _ = stream.set_nodelay(true);
                        let context = Arc::new(ConnectionContext::new(
                            bound.name.clone(),
                            bound.security_protocol,
                            bound.scope,
                            peer,
                        ));
                        let conn = Connection::new(
                            broker.clone(),
                            network.clone(),
                            stream,
                            context,
                            shutdown.clone(),
                        );
                        tracker2.spawn(async move {
                            conn.run().await;
                            drop(ip_slot);
                            drop(permit);
                        });
                    }
                    Err(e) => {
                        // Typically EMFILE: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
        });
    }
    shutdown.cancelled().await;
    tracker.close();
    tracker.wait().await;
}
