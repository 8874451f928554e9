//! Strata: a Kafka-wire-compatible streaming broker.
//!
//! # Layout
//! - [`protocol`]: sans-io wire layer (primitives, headers, response framing, generated
//!   messages, record batches).
//! - [`storage`]: Kafka's on-disk log (segments, indexes, recovery, retention); knows no network.
//! - [`replica`]: partition replicas over the log (leader epoch, high watermark, ISR, producer
//!   state), the follower fetcher (sans-io) and the controller interface (`PartitionChange`).
//! - `sim` (tests only): deterministic simulation of replication with faults and invariants.
//! - [`coordinator`]: the group and transaction coordinators (records, replay) and their
//!   internal topics as logs (`offsets_topic`).
//! - [`controller`]: cluster metadata (records, the image, the Raft quorum, decisions).
//! - [`net`]: outbound connections to other members (the peer client).
//! - [`cluster`]: a broker's membership of a cluster: registration and heartbeats, the channel
//!   to the active controller, forwarding, replica fetcher tasks, and the publisher that
//!   applies each metadata image. Its tasks get the broker's parts (`BrokerParts`), never the
//!   `Broker`.
//! - [`broker`]: the `Broker`, the subsystems a handler sees.
//! - [`handlers`]: one file per API, plus the API table that drives dispatch and ApiVersions.
//! - [`server`]: listeners, connections with ordered pipelining, start-up (the one place that
//!   builds everything) and shutdown.
//! - [`admin`]: the admin HTTP listener (`/metrics`, health probes), above the broker.
//! - [`metrics`]: the registry and the counters the request path updates (a leaf).
//! - [`config`], [`clock`], [`error`]: typed configuration, the only wall clock, error codes.
//! - [`logging`]: log output (text or JSON lines) and log levels changed at runtime.
//!
//! Dependencies point downwards only: server -> admin -> handlers -> broker -> cluster ->
//! {coordinator, controller, replica, net} -> storage -> protocol.
pub mod admin;
pub mod broker;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod controller;
pub mod coordinator;
pub mod error;
pub mod handlers;
pub mod logging;
pub mod metrics;
pub mod net;
pub mod protocol;
pub mod replica;
pub mod security;
pub mod server;
#[cfg(test)]
mod sim;
pub mod storage;
