//! Strata: a Kafka-wire-compatible streaming broker.
//!
//! # Layout
//! - [`protocol`]: sans-io wire layer (primitives, headers, generated messages, record batches).
//! - [`storage`]: Kafka's on-disk log (segments, indexes, recovery, retention); knows no network.
//! - [`replica`]: partition replicas over the log (leader epoch, high watermark, ISR, producer
//!   state), the follower fetcher (sans-io) and the controller interface (`PartitionChange`).
//! - `sim` (tests only): deterministic simulation of replication with faults and invariants.
//! - [`coordinator`]: the group coordinator on `__consumer_offsets` (records, replay).
//! - [`controller`]: cluster metadata (topics, configs, producer ids) built by replaying records.
//! - [`cluster`]: a broker's membership of a cluster: registration and heartbeats, the channel
//!   to the active controller, and the publisher that applies each metadata image.
//! - [`handlers`]: one file per API, plus the API table that drives dispatch and ApiVersions.
//! - [`server`]: listener, connections with ordered pipelining, start-up and shutdown.
//! - [`config`], [`clock`], [`error`]: typed configuration, the only wall clock, error codes.
//!
//! Dependencies point downwards only: server -> handlers -> replica/controller -> storage ->
//! protocol.
pub mod clock;
pub mod cluster;
pub mod config;
pub mod controller;
pub mod coordinator;
pub mod error;
pub mod handlers;
pub mod protocol;
pub mod replica;
pub mod server;
#[cfg(test)]
mod sim;
pub mod storage;
