//! Security: who a connection is (TLS principals, SASL mechanisms), what it may do (the
//! authorizer, with the semantics of Kafka's `StandardAuthorizer`) and how fast (client
//! quotas). Server side only; the client side of TLS and SASL, used by the peer client for
//! inter-broker and controller traffic, lives in `net` (the TLS client configuration is in
//! `tls::client`, which the JWKS fetcher of `sasl` uses too). ACLs, SCRAM credentials and
//! client quotas are metadata records, so every broker agrees on them and they survive
//! restarts.
pub mod authorizer;
pub mod principal;
pub mod quotas;
pub mod read_ahead;
pub mod sasl;
pub mod stream;
pub mod tls;

pub use authorizer::Authorizer;
pub use principal::KafkaPrincipal;
pub use stream::SecuredStream;
