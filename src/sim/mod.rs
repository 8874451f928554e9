//! Deterministic simulation of replication (DESIGN.md §7): brokers, the network between them
//! and the real controller decisions (`controller::`, over a committed metadata log without
//! Raft) in one process, one seed and a manual clock, faults and controller operations
//! (controlled shutdown, reassignment, preferred election, failover) injected at random,
//! invariants checked after every step. A failing seed is replayed with its trace, printed,
//! and becomes a named regression test in `tests.rs`.
//!
//! Test-only: it drives the sans-io replica layer (`replica::ReplicaManager`'s fetch requests
//! and responses, `Partition` changes) and the controller's sans-io decisions directly,
//! without sockets or tokio.

/// Adds a line to a simulation's trace, formatting it only when the run keeps one.
macro_rules! trace {
    ($sim:expr, $($arg:tt)*) => {
        if $sim.config.trace {
            let line = format!($($arg)*);
            $sim.push_trace(line);
        }
    };
}

pub mod admin;
pub mod clients;
pub mod cluster;
pub mod config;
pub mod controller;
pub mod invariants;
pub mod log_dirs;
pub mod network;
pub mod rng;

#[cfg(test)]
mod tests;
