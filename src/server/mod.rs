//! The network front: TCP listeners, connections with ordered pipelining, and shutdown.
//!
//! Mirrors Kafka's SocketServer in behaviour (size-prefixed frames, a cap on request size
//! checked before allocating, a bounded number of connections) but not in structure: one tokio
//! task reads a connection and one writes it, with a bounded queue of in-flight requests
//! between them.
pub mod connection;
pub mod connection_quotas;
pub mod listener;
pub mod log_cleaner;
pub mod memory_pool;
pub mod sasl_gate;
pub mod startup;

pub use listener::serve;
