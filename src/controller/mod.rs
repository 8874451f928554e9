//! Cluster metadata: topics, partitions, their ids and config overrides, and producer-id
//! allocation. Single-node today: a local metadata log replayed at start-up (a quorum of one);
//! the Raft quorum of the cluster work replaces the log behind the same image.
pub mod metadata;

pub use metadata::{MetadataError, MetadataStore, TopicMeta};
