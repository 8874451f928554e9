//! The one outbound Kafka-protocol client, for every connection this process opens to another
//! cluster member (or to another cluster): the replica fetchers, forwarding to the controller,
//! transaction markers and verification, the share persister, the console's peer reader and
//! the controller quorum's Raft transport.
//!
//! - [`frame`]: the framing (size prefix, request and response headers, size checked before
//!   allocating) and the client's error.
//! - [`peer`]: one connection ([`peer::PeerClient`]) with its timeouts and its re-login before
//!   a SASL session ends (KIP-368), and the connection settings ([`peer::PeerSecurity`]: TLS
//!   and the SASL login), a value each caller passes, so a client of a foreign cluster brings
//!   its own.
//! - [`sasl_client`]: the SASL login (PLAIN, SCRAM) with Kafka's reconnect backoff.
//! - [`connections`]: the connection cache, idle connections kept by peer.
//! - [`raft_transport`]: the Raft RPCs on the peers' controller listeners, implementing the
//!   controller's `RaftTransport`, which start-up hands to the quorum.
//!
//! Above `protocol`, `security` (the TLS client side and SCRAM) and the controller's Raft
//! transport trait; below the cluster tasks, so nothing in it knows handlers or the broker.
pub mod connections;
pub mod frame;
pub mod peer;
pub mod raft_transport;
pub mod sasl_client;
#[cfg(test)]
mod test_peers;
