//! The share coordinator (KIP-932): the durable state of every share partition, kept on
//! `__share_group_state` as ShareSnapshot (record type 0, the whole state) and ShareUpdate
//! (type 1, a change since the last snapshot) records, in Kafka's formats so either broker
//! reads the other's log.
//!
//! Mirrors Kafka's `ShareCoordinatorShard`/`ShareCoordinatorService` in the records-then-replay
//! pattern of the other coordinators:
//! - [`records`]: the keys and values.
//! - [`shard`]: one `__share_group_state` partition. Initialize, Read (which records a newer
//!   leader epoch), Write (an update, or a snapshot every
//!   `share.coordinator.snapshot.update.records.per.snapshot` updates), ReadSummary and
//!   Delete compute records; the state changes only by replaying them.
//! - [`service`]: [`ShareStateCoordinator`], what the state RPCs (83-87) and the local
//!   persister call; it also says how far each partition's log is redundant, so the broker
//!   prunes it (the topic is not compacted: a compacted log would keep only the newest update
//!   of a share partition, as Kafka's design notes).
//!
//! The key of a share partition is `group:topicId:partition` (Kafka's
//! `SharePartitionKey.asCoordinatorKey`), hashed as Java hashes strings to pick its partition.
pub mod records;
pub mod service;
pub mod shard;

pub use crate::replica::share_persister::{SharePartitionKey, StateBatch};
pub use service::ShareStateCoordinator;

use crate::coordinator::runtime::CoordinatorLogError;
use crate::error::ErrorCode;

/// The `__share_group_state` topic name.
pub const SHARE_STATE_TOPIC_NAME: &str = "__share_group_state";

/// Share coordinator configuration (Kafka's `ShareCoordinatorConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareStateConfig {
    /// `share.coordinator.state.topic.num.partitions`.
    pub num_partitions: i32,
    /// `share.coordinator.snapshot.update.records.per.snapshot`.
    pub updates_per_snapshot: i32,
}

impl Default for ShareStateConfig {
    fn default() -> Self {
        ShareStateConfig {
            num_partitions: 50,
            updates_per_snapshot: 500,
        }
    }
}

/// Kafka's coordinator key of a share partition.
pub fn coordinator_key(key: &SharePartitionKey) -> String {
    format!("{}:{}:{}", key.group_id, key.topic_id, key.partition)
}

/// Why a state operation failed; mapped to Kafka codes below.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareStateError {
    /// This broker does not lead the key's `__share_group_state` partition.
    NotCoordinator,
    /// Read or written before any Initialize (Kafka answers INVALID_REQUEST).
    Uninitialized(&'static str),
    /// A leader epoch below the last one recorded.
    FencedLeaderEpoch,
    /// A state epoch below the last one recorded.
    FencedStateEpoch,
    InvalidRequest(String),
    Log(CoordinatorLogError),
}

impl From<&ShareStateError> for ErrorCode {
    fn from(e: &ShareStateError) -> ErrorCode {
        match e {
            ShareStateError::NotCoordinator => ErrorCode::NOT_COORDINATOR,
            ShareStateError::Uninitialized(_) | ShareStateError::InvalidRequest(_) => {
                ErrorCode::INVALID_REQUEST
            }
            ShareStateError::FencedLeaderEpoch => ErrorCode::FENCED_LEADER_EPOCH,
            ShareStateError::FencedStateEpoch => ErrorCode::FENCED_STATE_EPOCH,
            // A failed append answers as in the group and transaction coordinators: Kafka's
            // share coordinator maps a write's NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR
            // to NOT_COORDINATOR and MESSAGE_TOO_LARGE to UNKNOWN_SERVER_ERROR
            // (`CoordinatorOperationExceptionHelper.handleOperationException`).
            ShareStateError::Log(e) => ErrorCode::from(e),
        }
    }
}

impl ShareStateError {
    /// The Kafka error code (the mapping above).
    pub fn code(&self) -> ErrorCode {
        ErrorCode::from(self)
    }

    pub fn message(&self) -> Option<String> {
        match self {
            ShareStateError::Uninitialized(m) => Some(m.to_string()),
            ShareStateError::InvalidRequest(m) => Some(m.clone()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
