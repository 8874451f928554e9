//! Cluster metadata: topics, partitions, their ids and config overrides, and producer-id
//! allocation.
//!
//! - [`metadata`]: the single-node store (a local line-based log replayed at start-up) the
//!   broker uses today.
//! - [`records`] and [`image`]: the KRaft-style metadata log records and the image built by
//!   applying them, which the Raft quorum replicates.
pub mod image;
pub mod metadata;
pub mod quorum;
pub mod raft;
pub mod records;

pub use image::{BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage};
pub use metadata::{MetadataError, MetadataStore, TopicMeta};
pub use quorum::{
    NodeId, Quorum, QuorumConfig, QuorumError, QuorumStatus, ReplicaStatus, ReplicatedState,
};
pub use raft::{MemNetwork, MemTransport, RaftQuorum, RaftTransport, TcpRaftTransport};
pub use records::{BrokerEndpoint, MetadataRecord, NO_LEADER, RESOURCE_BROKER, RESOURCE_TOPIC};

#[cfg(test)]
mod tests;
