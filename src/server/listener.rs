//! Accepts connections on every configured listener, bounded by `max.connections`, until
//! shutdown is requested.
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::connection::Connection;
use crate::broker::Broker;
use crate::config::SecurityProtocol;
use crate::handlers::{ConnectionContext, ListenerScope};

/// What a bound socket serves: its listener's name, security protocol and API scope.
#[derive(Debug, Clone)]
pub struct BoundListener {
    pub name: String,
    pub security_protocol: SecurityProtocol,
    pub scope: ListenerScope,
}

/// Serves the given bound listeners until `shutdown` fires, then waits for open connections to
/// finish the requests they already read.
/// Serves `listeners`; those marked unlimited (the controller listeners) take no
/// `max.connections` slot, so a busy broker can still reach its controller (Kafka likewise
/// exempts the listeners its brokers and controllers talk on).
pub async fn serve(
    broker: Arc<Broker>,
    listeners: Vec<(TcpListener, BoundListener)>,
    shutdown: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(broker.limits.max_connections));
    let tracker = TaskTracker::new();
    for (listener, bound) in listeners {
        let unlimited = bound.scope == ListenerScope::Controller;
        let broker = broker.clone();
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
                        let _ = stream.set_nodelay(true);
                        let context = Arc::new(ConnectionContext {
                            listener_name: bound.name.clone(),
                            security_protocol: bound.security_protocol,
                            scope: bound.scope,
                            peer,
                        });
                        let conn = Connection::new(broker.clone(), stream, context, shutdown.clone());
                        tracker2.spawn(async move {
                            conn.run().await;
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
