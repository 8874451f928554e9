//! Deterministic simulation of replication (DESIGN.md §7): brokers, the network between them
//! and the real controller decisions (`controller::`, over a committed metadata log without
//! Raft) in one process, one seed and a manual clock, faults injected at
//! random, invariants checked after every step. A failing seed is printed with the trace of its
//! run and becomes a named regression test in `tests.rs`.
//!
//! Test-only: it drives the sans-io replica layer (`replica::ReplicaManager`'s fetch requests
//! and responses, `Partition` changes) and the controller's sans-io decisions directly,
//! without sockets or tokio.
pub mod cluster;
pub mod controller;
pub mod invariants;
pub mod network;
pub mod rng;

#[cfg(test)]
mod tests;
