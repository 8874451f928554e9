//! Cluster metadata: topics, partitions, their ids and config overrides, and producer-id
//! allocation.
//!
//! - [`metadata`]: the single-node store (a local line-based log replayed at start-up) the
//!   broker uses today.
//! - [`records`] and [`image`]: the KRaft-style metadata log records and the image built by
//!   applying them, which the Raft quorum replicates.
//! - The controller's decisions, sans-io: each takes the image and returns the records to
//!   propose plus the reply; the caller commits the records through the quorum and applies
//!   them. [`cluster`] (brokers, heartbeats, fencing), [`topics`], [`partitions`]
//!   (AlterPartition, elections, reassignments), [`directories`] (KIP-858 log dirs of
//!   replicas), [`producer_ids`], [`configs`], [`acls`] (the ACLs and their index),
//!   [`client_quotas`], [`delegation_tokens`] (KIP-48), with the shared election rules in [`election`] and replica placement
//!   in [`placement`].
pub mod acls;
pub mod client_quotas;
pub mod cluster;
pub mod configs;
pub mod controller_config;
pub mod delegation_tokens;
pub mod directories;
pub mod election;
pub mod features;
pub mod image;
pub mod metadata;
pub mod partitions;
pub mod placement;
pub mod producer_ids;
pub mod quorum;
pub mod raft;
pub mod records;
pub mod scram;
pub mod service;
pub mod topics;

pub use cluster::{
    broker_heartbeat, fence_expired_brokers, register_broker, unregister_broker,
    BrokerHeartbeatReply, BrokerHeartbeatRequest, BrokerHeartbeats, RegisterBrokerRequest,
};
pub use configs::{incremental_alter_configs, AlterConfigOp, AlterConfigsResource};
pub use controller_config::ControllerConfig;
pub use directories::{
    assign_replicas_to_dirs, AssignReplicasToDirsRequest, AssignReplicasToDirsResult, DirAssignment,
};
pub use image::{BrokerRegistration, MetadataImage, PartitionRegistration, TopicImage};
pub use metadata::{MetadataError, MetadataStore, TopicMeta};
pub use partitions::{
    alter_partition, alter_partition_reassignments, elect_leaders, list_partition_reassignments,
    ElectionType, ReassignmentListing, ReassignmentRequest,
};
pub use producer_ids::{allocate_producer_ids, ProducerIdBlock, PRODUCER_ID_BLOCK_SIZE};
pub use quorum::{
    NodeId, Quorum, QuorumConfig, QuorumError, QuorumStatus, ReplicaStatus, ReplicatedState,
    VoterChangeError,
};
pub use raft::{MemNetwork, MemTransport, RaftQuorum, RaftTransport, TcpRaftTransport};
pub use records::{
    BrokerEndpoint, MetadataRecord, NO_LEADER, RESOURCE_BROKER, RESOURCE_CLIENT_METRICS,
    RESOURCE_GROUP, RESOURCE_TOPIC,
};
pub use topics::{
    create_partitions, create_topics, delete_topics, CreatePartitionsSpec, CreateTopicResult,
    CreateTopicSpec,
};

#[cfg(test)]
mod tests;
