//! What a handler knows about the connection a request came on: the listener it was accepted
//! on (name and security protocol, which decide the APIs it serves, as Kafka's per-listener
//! `ApiVersionManager`), the peer address, and the principal the connection authenticated as
//! (which the authorizer and quotas read; it may change when a SASL client re-authenticates,
//! KIP-368), and until when a throttled client's connection is muted (KIP-219). A request
//! unwrapped from an Envelope gets a context of its own naming the original client.
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
    /// A request a broker forwarded in an Envelope (KIP-590): `peer` and the principal are
    /// the client's, and this controller charges the client's mutation quota.
    pub forwarded: bool,
    /// Unique among this process's connections: share sessions remember the connection that
    /// uses them, and end with it (KIP-932).
    pub id: u64,
    principal: RwLock<Arc<KafkaPrincipal>>,
    /// Whether the principal authenticated with a delegation token (Kafka's
    /// `KafkaPrincipal.tokenAuthenticated`): such a connection may not manage tokens.
    token_authenticated: std::sync::atomic::AtomicBool,
    /// Until when the connection reads no further request: a quota throttle (KIP-219).
    muted_until: parking_lot::Mutex<Option<tokio::time::Instant>>,
}

static NEXT_CONNECTION_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

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
            forwarded: false,
            id: NEXT_CONNECTION_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            principal: RwLock::new(Arc::new(KafkaPrincipal::anonymous())),
            token_authenticated: std::sync::atomic::AtomicBool::new(false),
            muted_until: parking_lot::Mutex::new(None),
        }
    }

    /// The context of a request unwrapped from an Envelope that arrived on `self`: the same
    /// listener, the client's principal and address.
    pub fn forwarded_for(
        &self,
        principal: KafkaPrincipal,
        client: SocketAddr,
    ) -> ConnectionContext {
        let mut ctx = ConnectionContext::new(
            self.listener_name.clone(),
            self.security_protocol,
            self.scope,
            client,
        );
        ctx.forwarded = true;
        ctx.set_principal(principal);
        ctx
    }

    /// The client a request on this connection acts for, as an Envelope names it.
    pub fn client(&self, client_id: Option<&str>) -> crate::cluster::envelope::ForwardedFor {
        crate::cluster::envelope::ForwardedFor {
            principal: (*self.principal()).clone(),
            client_id: client_id.map(str::to_string),
            client_host: self.peer.ip(),
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

    /// Whether the principal logged in with a delegation token.
    pub fn token_authenticated(&self) -> bool {
        self.token_authenticated
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Set with the principal after each SASL exchange.
    pub fn set_token_authenticated(&self, token: bool) {
        self.token_authenticated
            .store(token, std::sync::atomic::Ordering::Release);
    }

    /// Kafka's `KafkaApis.allowTokenRequests`: delegation tokens are created, renewed,
    /// expired and described only over an authenticated connection (SASL, or TLS with a
    /// client certificate) that did not itself log in with a token. A request a broker
    /// forwarded in an Envelope was judged by that broker.
    pub fn may_manage_tokens(&self) -> bool {
        if self.forwarded {
            return true;
        }
        let anonymous_tls =
            self.security_protocol == SecurityProtocol::Ssl && self.principal().is_anonymous();
        !(self.token_authenticated()
            || self.security_protocol == SecurityProtocol::Plaintext
            || anonymous_tls)
    }

    /// Mutes the connection for `throttle_time_ms` from now (a quota throttle whose response
    /// goes out at once; KIP-219). A longer mute already in force stays.
    pub fn throttle(&self, throttle_time_ms: i64) {
        if throttle_time_ms <= 0 {
            return;
        }
        let until =
            tokio::time::Instant::now() + std::time::Duration::from_millis(throttle_time_ms as u64);
        let mut muted = self.muted_until.lock();
        if muted.map_or(true, |m| m < until) {
            *muted = Some(until);
        }
    }

    /// When the current mute ends, if the connection is muted.
    pub fn muted_until(&self) -> Option<tokio::time::Instant> {
        let muted = *self.muted_until.lock();
        muted.filter(|m| *m > tokio::time::Instant::now())
    }
}
