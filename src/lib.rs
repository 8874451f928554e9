//! Strata: a Kafka-wire-compatible streaming broker.
//!
//! # Layout
//! From the bottom up; a module may use the ones above it in this list, never one below
//! (`tests/layering.rs` checks every file, leaves included, and `docs/layout.md` has the picture).
//!
//! Leaves, usable from anywhere:
//! - [`error`]: Kafka's `ErrorCode` only; it imports nothing of ours. Each subsystem maps its
//!   own typed error to it beside that type.
//! - [`clock`]: the only wall clock (system and manual). [`logging`]: log output and levels
//!   changed at runtime. Both import nothing of ours.
//! - [`config`]: typed broker, topic and group configuration and the `server.properties`
//!   reader; uses `error` only.
//! - [`metrics`]: the registry and the counters every layer updates; uses `error` only.
//!
//! Layers:
//! - [`protocol`]: sans-io wire layer (primitives, headers, framing, generated messages,
//!   record batches, Kafka's ACL wire values).
//! - [`storage`]: Kafka's on-disk log (segments, indexes, recovery, retention, cleaner); knows
//!   no network.
//! - [`replica`]: partition replicas over the log (leader epoch, high watermark, ISR, producer
//!   state), waits for acks=all and long polls, the sans-io follower fetcher.
//! - [`controller`]: cluster metadata (records, the image, the Raft quorum behind the `Quorum`
//!   trait, the active controller's decisions); its Raft transport is a trait it is given.
//! - [`security`]: the server side of TLS and SASL, principals, the authorizer, client quotas.
//! - [`coordinator`]: the group (classic, KIP-848 consumer and KIP-932 share groups),
//!   transaction and share-state coordinators: records and replay, and their internal topics.
//! - [`net`]: the one outbound Kafka-protocol client (framing, connection cache, TLS and SASL
//!   client side, re-authentication) and the Raft transport built on it.
//! - [`cluster`]: a broker's membership of a cluster: registration and heartbeats, the channel
//!   to the active controller, forwarding, replica fetcher tasks, markers, and the publisher
//!   that applies each metadata image. Its tasks get the broker's parts (`BrokerParts`), never
//!   the `Broker`.
//! - [`broker`]: the `Broker`, the subsystems a handler sees.
//! - [`handlers`]: one file per API (the folder listing is the API table), the table that
//!   drives dispatch and ApiVersions, and shared helpers in `handlers/common/`.
//! - [`admin`]: the admin HTTP listener (`/metrics`, health probes, web console), above the
//!   broker.
//! - [`server`]: listeners, connections with ordered pipelining, start-up (the one place that
//!   builds everything) and shutdown.
//! - `sim` (tests only): deterministic simulation of replication with faults and invariants.
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
