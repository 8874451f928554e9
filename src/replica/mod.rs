//! Partition replicas over the log: leader epoch, high watermark, last stable offset, producer
//! state, and the waits of delayed operations (long-poll fetch). Kafka's `Partition` and
//! `ReplicaManager`. On a single node every partition is led here with an ISR of one, so the
//! high watermark follows the log end offset.
mod load;
pub mod manager;
pub mod partition;
pub mod producer_state;

pub use load::ProducerStateLoad;
pub use manager::ReplicaManager;
pub use partition::{AppendOutcome, Partition, PartitionConfig, PartitionError};

#[cfg(test)]
mod snapshot_tests;
#[cfg(test)]
mod tests;
