//! Accepts connections on every configured listener until shutdown is requested, bounded by
//! `max.connections` (a full broker stops accepting, as Kafka's acceptor waits for a slot) and
//! by `max.connections.per.ip` (a connection over its address's limit is accepted and closed,
//! with a rate-limited log line, as Kafka's `ConnectionQuotas` refuses it). Each connection
//! gets a [`ConnectionContext`] naming its listener, which decides the APIs it is served.
//! On SSL and SASL_SSL listeners the connection's task first completes the TLS handshake
//! (under its deadline; a failure is logged once and closes the connection), and on SSL
//! listeners takes the principal from the client certificate. `max.connections` and the
//! per-IP limits follow the dynamic broker configs (Kafka applies them without a restart):
//! a lower limit refuses new connections and leaves open ones alone.
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
use crate::security::tls::ServerTls;
use crate::security::SecuredStream;

/// What a bound socket serves: its listener's name, security protocol and API scope.
#[derive(Debug, Clone)]
pub struct BoundListener {
    pub name: String,
    pub security_protocol: SecurityProtocol,
    pub scope: ListenerScope,
    /// Present on SSL and SASL_SSL listeners.
    pub tls: Option<Arc<ServerTls>>,
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
    /// `socket.send.buffer.bytes`.
    pub socket_send_buffer_bytes: i32,
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
            sasl: super::sasl_gate::listeners(config)?,
            socket_send_buffer_bytes: config.socket_send_buffer_bytes,
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
    clients_open: tokio::sync::watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(broker.limits.max_connections));
    let tracker = TaskTracker::new();
    tracker.spawn(follow_connection_limits(
        broker.clone(),
        network.clone(),
        permits.clone(),
        shutdown.clone(),
    ));
    for (listener, bound) in listeners {
        if let Some(tls) = &bound.tls {
            tracker.spawn(tls.clone().watch(shutdown.clone()));
        }
        let unlimited = bound.scope == ListenerScope::Controller;
        let send_buffer_bytes = network.socket_send_buffer_bytes;
        let counters = broker.metrics.listener(&bound.name);
        let broker = broker.clone();
        let network = network.clone();
        let permits = permits.clone();
        let shutdown = shutdown.clone();
        let tracker2 = tracker.clone();
        let mut clients_open = clients_open.clone();
        tracker.spawn(async move {
            // A client listener accepts only once the broker can answer for itself (a single
            // node: registered, unfenced, partitions open), as Kafka enables request processing
            // only after its broker has caught up. Earlier, Metadata would list no broker and
            // librdkafka would stall on it; meanwhile connections wait in the backlog.
            if !unlimited {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    open = clients_open.wait_for(|open| *open) => if open.is_err() { return },
                }
            }
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
                        configure_accepted(&stream, send_buffer_bytes);
                        let counted = counters.opened();
                        let context = Arc::new(ConnectionContext::new(
                            bound.name.clone(),
                            bound.security_protocol,
                            bound.scope,
                            peer,
                        ));
                        let (broker, network, shutdown) =
                            (broker.clone(), network.clone(), shutdown.clone());
                        let tls = bound.tls.clone();
                        tracker2.spawn(async move {
                            let stream = match tls {
                                None => Some(SecuredStream::Plain(stream)),
                                Some(tls) => tls_handshake(&tls, stream, &context).await,
                            };
                            if let Some(stream) = stream {
                                Connection::new(broker.clone(), network, stream, context.clone(), shutdown)
                                    .run()
                                    .await;
                                broker.shares.connection_closed(context.id);
                            }
                            drop(ip_slot);
                            drop(permit);
                            drop(counted);
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

/// Applies `max.connections` and the per-IP limits of the effective config whenever the
/// dynamic broker configs change it, until shutdown.
async fn follow_connection_limits(
    broker: Arc<Broker>,
    network: Arc<NetworkState>,
    permits: Arc<Semaphore>,
    shutdown: CancellationToken,
) {
    let mut configs = broker.dynamic.subscribe();
    let mut max_connections = broker.limits.max_connections;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            changed = configs.changed() => if changed.is_err() { return },
        }
        let config = configs.borrow_and_update().clone();
        let wanted = config.max_connections.max(1) as usize;
        resize_permits(&permits, max_connections, wanted);
        if wanted != max_connections {
            tracing::info!(max_connections = wanted, "max.connections changed");
            max_connections = wanted;
        }
        let quotas = network.connection_quotas.clone();
        let (per_ip, overrides) = (
            config.max_connections_per_ip,
            config.max_connections_per_ip_overrides.clone(),
        );
        // Override host names are resolved: off the async workers.
        let applied =
            tokio::task::spawn_blocking(move || quotas.reconfigure(per_ip, &overrides)).await;
        if let Ok(Err(e)) = applied {
            tracing::error!(error = %e, "per-IP connection limits not changed");
        }
    }
}

/// Moves the semaphore's capacity from `from` to `to` permits. Permits held by open
/// connections cannot be taken back: the shortfall is taken as those connections close.
fn resize_permits(permits: &Arc<Semaphore>, from: usize, to: usize) {
    if to > from {
        permits.add_permits(to - from);
    } else if to < from {
        let owed = from - to;
        let taken = permits.forget_permits(owed);
        if taken < owed {
            let permits = permits.clone();
            let rest = u32::try_from(owed - taken).unwrap_or(u32::MAX);
            tokio::spawn(async move {
                if let Ok(p) = permits.acquire_many_owned(rest).await {
                    p.forget();
                }
            });
        }
    }
}

/// The TLS handshake of a connection on an SSL or SASL_SSL listener; None (the connection is
/// closed, logged once) when it fails or does not finish within its deadline.
async fn tls_handshake(
    tls: &ServerTls,
    stream: tokio::net::TcpStream,
    context: &ConnectionContext,
) -> Option<SecuredStream> {
    let principal_from_certificate = context.security_protocol == SecurityProtocol::Ssl;
    match tls.accept(stream, principal_from_certificate).await {
        Ok((stream, principal)) => {
            if let Some(principal) = principal {
                context.set_principal(principal);
            }
            Some(SecuredStream::Tls(Box::new(stream.into())))
        }
        Err(e) => {
            let kind = crate::logging::LineKind::FailedTlsHandshake;
            if let Some(suppressed) = crate::logging::admit_line(kind, context.peer.ip()) {
                tracing::info!(peer = %context.peer, listener = %context.listener_name, reason = %e, suppressed_since_last_line = suppressed, "closing a connection whose TLS handshake failed");
            }
            None
        }
    }
}

/// Binds a listening socket for `address` (`host:port`, resolved), with SO_RCVBUF set before
/// `listen` so accepted connections inherit it and offer the matching window scale, as
/// Kafka's acceptor opens its server socket with `socket.receive.buffer.bytes`; -1 keeps the
/// OS's autotuned buffer.
pub async fn bind(address: &str, receive_buffer_bytes: i32) -> std::io::Result<TcpListener> {
    let mut last_error = None;
    for addr in tokio::net::lookup_host(address).await? {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        if receive_buffer_bytes >= 0 {
            socket.set_recv_buffer_size(receive_buffer_bytes as u32)?;
        }
        match socket.bind(addr) {
            Ok(()) => return socket.listen(LISTEN_BACKLOG),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, "no address to bind")
    }))
}

/// The accept backlog: std's and tokio's own, above Kafka's `socket.listen.backlog.size`
/// default of 50, so a thousand clients connecting at once are not dropped.
const LISTEN_BACKLOG: u32 = 1024;

/// Kafka's `configureAcceptedSocketChannel`: no Nagle, keep-alive, and SO_SNDBUF from
/// `socket.send.buffer.bytes` unless -1. Failures leave the OS's settings (best effort, as a
/// socket that is already closing can refuse them).
fn configure_accepted(stream: &tokio::net::TcpStream, send_buffer_bytes: i32) {
    let _ = stream.set_nodelay(true);
    let socket = socket2::SockRef::from(stream);
    let _ = socket.set_keepalive(true);
    if send_buffer_bytes >= 0 {
        let _ = socket.set_send_buffer_size(send_buffer_bytes as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux reports twice the size asked for (the kernel's bookkeeping share).
    fn asked(reported: usize) -> usize {
        reported / 2
    }

    #[tokio::test]
    async fn buffers_follow_the_socket_settings_and_minus_one_leaves_the_os_its_own() {
        let listener = bind("127.0.0.1:0", 65_536).await.expect("bind");
        assert_eq!(
            asked(
                socket2::SockRef::from(&listener)
                    .recv_buffer_size()
                    .unwrap()
            ),
            65_536
        );
        let addr = listener.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        // Inherited from the listening socket.
        let socket = socket2::SockRef::from(&accepted);
        assert_eq!(asked(socket.recv_buffer_size().unwrap()), 65_536);
        let before = socket.send_buffer_size().unwrap();
        configure_accepted(&accepted, -1);
        assert_eq!(socket.send_buffer_size().unwrap(), before);
        assert!(socket.keepalive().unwrap());
        assert!(accepted.nodelay().unwrap());
        configure_accepted(&accepted, 102_400);
        assert_eq!(asked(socket.send_buffer_size().unwrap()), 102_400);

        let own = bind("127.0.0.1:0", -1).await.expect("bind");
        let fresh = tokio::net::TcpSocket::new_v4().unwrap();
        assert_eq!(
            socket2::SockRef::from(&own).recv_buffer_size().unwrap(),
            socket2::SockRef::from(&fresh).recv_buffer_size().unwrap()
        );
        assert!(bind("no-such-host.invalid:0", -1).await.is_err());
    }
}
