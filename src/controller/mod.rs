//! The controller (KRaft, KIP-500/KIP-631): the cluster metadata as a replicated log of
//! records, the image built from it, the decisions that write it, and the quorum that
//! replicates it.
//!
//! - [`records`] and [`image`]: the metadata log's records and the image every node builds by
//!   applying them.
//! - [`quorum`] (the [`Quorum`] trait the rest of the process sees) and [`raft`], the quorum on
//!   openraft: its log and state machine stores, the RPC envelope and the [`RaftTransport`]
//!   trait it is sent through (start-up gives it the TCP one of `net::raft_transport`, the
//!   tests an in-memory [`MemNetwork`]), observers, voter changes (KIP-853).
//! - [`service`]: the active controller (Kafka's `QuorumController`), running the decisions
//!   one at a time and committing their records through the quorum.
//! - The decisions, sans-io: each takes the image and returns the records to propose plus the
//!   reply. [`cluster`] (brokers, heartbeats, fencing), [`topics`], [`partitions`]
//!   (AlterPartition, elections, reassignments), [`directories`] (KIP-858 log dirs of
//!   replicas), [`producer_ids`], [`configs`], [`acls`] (the ACLs and their index),
//!   [`client_quotas`], [`scram`], [`delegation_tokens`] (KIP-48), [`features`] (KIP-584),
//!   with the shared election rules in [`election`], replica placement in [`placement`] and the
//!   controller's own settings in [`controller_config`].
//! - [`metadata`]: the line-based store of earlier single-node versions, read once to import
//!   it into the metadata log.
//!
//! Below `net` and the cluster tasks (tests/layering.rs): it uses `protocol`, `replica` and
//! the leaves, never `net` (the transport comes in as a trait object).
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
pub use raft::{MemNetwork, MemTransport, RaftQuorum, RaftTransport};
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
