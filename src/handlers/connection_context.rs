//! What a handler knows about the connection a request came on: the listener it was accepted
//! on (name and security protocol, which decide the APIs it serves, as Kafka's per-listener
//! `ApiVersionManager`) and the peer address. Issue 13 adds the authenticated principal here.
use std::net::SocketAddr;

use crate::config::SecurityProtocol;

/// Which of Kafka's listener scopes (`"listeners"` in the request schemas) a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenerScope {
    /// A listener named in `controller.listener.names`: the controller-scoped APIs only.
    Controller,
    /// Any other listener: the broker-scoped APIs.
    Broker,
}

/// One accepted connection's identity, built by the listener and shared by its requests.
#[derive(Debug, Clone)]
pub struct ConnectionContext {
    /// The listener's name as configured (upper-cased), e.g. `PLAINTEXT`, `CONTROLLER`.
    pub listener_name: String,
    pub security_protocol: SecurityProtocol,
    pub scope: ListenerScope,
    pub peer: SocketAddr,
}

impl ConnectionContext {
    /// A plaintext broker-listener connection from `peer`, for in-process callers and tests.
    pub fn plaintext_broker(peer: SocketAddr) -> ConnectionContext {
        ConnectionContext {
            listener_name: "PLAINTEXT".into(),
            security_protocol: SecurityProtocol::Plaintext,
            scope: ListenerScope::Broker,
            peer,
        }
    }
}
