//! Cluster metadata: topics, partitions, their ids and config overrides, and producer-id
//! allocation. Single-node today: a local metadata log replayed at start-up (a quorum of one);
//! the Raft quorum of the cluster work replaces the log behind the same image.
pub mod metadata;
pub mod quorum;
pub mod raft;

pub use metadata::{MetadataError, MetadataStore, TopicMeta};
pub use quorum::{
    NodeId, Quorum, QuorumConfig, QuorumError, QuorumStatus, ReplicaStatus, ReplicatedState,
};
pub use raft::{MemNetwork, MemTransport, RaftQuorum, RaftTransport, TcpRaftTransport};
