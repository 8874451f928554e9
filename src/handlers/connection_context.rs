//! What a handler knows about the connection a request came on: the listener it was accepted
//! on (name and security protocol, which decide the APIs it serves, as Kafka's per-listener
//! `ApiVersionManager`), the peer address, and the principal the connection authenticated as
//! (which the authorizer and quotas read; it may change when a SASL client re-authenticates,
//! KIP-368).
use std::net::SocketAddr;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::config::SecurityProtocol;
use crate::security::KafkaPrincipal;

/// Which of Kafka's listener scopes (`"listeners"` in the request schemas) a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenerScope {
    /// A listener named in `controller.listener.names`: the controller-scoped APIs only.
    Controller,
    /// Any other listener: the broker-scoped APIs.
    Broker,
}

/// One accepted connection's identity, built by the listener and shared by its requests.
#[derive(Debug)]
pub struct ConnectionContext {
    /// The listener's name as configured (upper-cased), e.g. `PLAINTEXT`, `CONTROLLER`.
    pub listener_name: String,
    pub security_protocol: SecurityProtocol,
    pub scope: ListenerScope,
    pub peer: SocketAddr,
    principal: RwLock<Arc<KafkaPrincipal>>,
}

impl ConnectionContext {
    /// A connection accepted on a listener, not yet authenticated (`User:ANONYMOUS`).
    pub fn new(
        listener_name: String,
        security_protocol: SecurityProtocol,
        scope: ListenerScope,
        peer: SocketAddr,
    ) -> ConnectionContext {
        ConnectionContext {
            listener_name,
            security_protocol,
            scope,
            peer,
            principal: RwLock::new(Arc::new(KafkaPrincipal::anonymous())),
        }
    }

    /// A plaintext broker-listener connection from `peer`, for in-process callers and tests.
    pub fn plaintext_broker(peer: SocketAddr) -> ConnectionContext {
        ConnectionContext::new(
            "PLAINTEXT".into(),
            SecurityProtocol::Plaintext,
            ListenerScope::Broker,
            peer,
        )
    }

    /// The principal requests on this connection act as.
    pub fn principal(&self) -> Arc<KafkaPrincipal> {
        self.principal.read().clone()
    }

    /// Called by the connection once the TLS handshake or a SASL exchange has established who
    /// the peer is (and again on re-authentication).
    pub fn set_principal(&self, principal: KafkaPrincipal) {
        *self.principal.write() = Arc::new(principal);
    }
}
