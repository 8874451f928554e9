//! Partition replicas over the log: leader epoch, high watermark, last stable offset, producer
//! state, ISR and follower states, the replica fetcher, and the waits of delayed operations
//! (long-poll fetch, acks=all produce: one wake-up per partition, `wait.rs`). Kafka's `Partition`, `ReplicaManager` and
//! `ReplicaFetcherThread`. On a single node every partition is led here with an ISR of one, so
//! the high watermark follows the log end offset. Nothing here reads the wall clock or opens a
//! socket: callers pass `now_ms`, and the fetcher is driven by whoever owns the transport (the
//! simulation in `sim/`, or a network task).
pub mod change;
pub mod durable_ack;
pub mod fetcher;
pub mod follower;
mod high_watermark_checkpoint;
pub mod ids;
pub mod leader;
pub mod leader_state;
mod load;
mod log_dir_failure;
pub mod manager;
pub mod partition;
mod partition_config;
mod partition_error;
mod partition_txn;
pub mod producer_state;
pub mod share_manager;
pub mod share_partition;
pub mod share_persister;
pub mod share_sessions;
mod state_lock;
pub mod txn_verification;
pub mod wait;

pub use change::{AlterPartition, AlterPartitionError, IsrMember, PartitionChange};
pub use ids::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch};
pub use leader::{ChangeOutcome, FollowerFetch, FollowerFetchResult};
pub use load::ProducerStateLoad;
pub use log_dir_failure::LogDirFailures;
pub use manager::ReplicaManager;
pub use partition::{AppendOutcome, Partition, PartitionConfig, PartitionError};

#[cfg(test)]
mod log_dir_tests;
#[cfg(test)]
mod replication_tests;
#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod tests;
