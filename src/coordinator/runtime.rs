//! The coordinator runtime contract (Kafka 4's `CoordinatorRuntime`, reduced to what one node
//! needs): records, the log they are appended to, and how delayed responses come back.
//!
//! An operation computes records and a response. The records are appended to the group's
//! `__consumer_offsets` partition through [`CoordinatorLog::append`]; only once that succeeds
//! are they replayed into the in-memory state and the response released. Loading a partition
//! at start-up replays the same records, so the live state and a rebuilt state agree.
use std::collections::BTreeMap;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::error::ErrorCode;
use crate::protocol::messages::join_group_response::JoinGroupResponse;
use crate::protocol::messages::sync_group_response::SyncGroupResponse;

/// One record of `__consumer_offsets`: Kafka's version-prefixed key and value bytes. A `None`
/// value is a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorRecord {
    pub key: Bytes,
    pub value: Option<Bytes>,
}

/// Why an append to a coordinator partition failed, mapped to Kafka error codes below: every
/// coordinator (group, transaction, share) answers a failed append the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinatorLogError {
    /// This node no longer leads the partition (Kafka: NOT_LEADER_OR_FOLLOWER).
    NotLeader,
    /// The write could not be made durable now (Kafka: NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT).
    NotAvailable,
    /// The batch is larger than the partition accepts (Kafka: MESSAGE_TOO_LARGE).
    RecordTooLarge,
    /// The log directory failed (Kafka: KAFKA_STORAGE_ERROR).
    Storage(String),
}

impl From<&CoordinatorLogError> for ErrorCode {
    /// A failed append to a coordinator's internal partition, as all three of Kafka's
    /// coordinators answer it (`appendGroupMetadataErrorToResponseError`,
    /// `appendTransactionToLog`, and the share coordinator's
    /// `CoordinatorOperationExceptionHelper.handleOperationException`): a lost leadership or a
    /// failed log directory sends the client to find the coordinator again (NOT_COORDINATOR).
    fn from(e: &CoordinatorLogError) -> ErrorCode {
        match e {
            CoordinatorLogError::NotAvailable => ErrorCode::COORDINATOR_NOT_AVAILABLE,
            CoordinatorLogError::NotLeader | CoordinatorLogError::Storage(_) => {
                ErrorCode::NOT_COORDINATOR
            }
            CoordinatorLogError::RecordTooLarge => ErrorCode::UNKNOWN_SERVER_ERROR,
        }
    }
}

/// Where coordinator records go. The broker implements it over the `__consumer_offsets`
/// partitions; an append returns once the records are committed (all or none of them).
pub trait CoordinatorLog: Send + Sync {
    fn append(
        &self,
        partition: i32,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), CoordinatorLogError>;

    /// Appends records inside a producer's transaction (TxnOffsetCommit): a transactional
    /// batch carrying the producer id and epoch, resolved later by a COMMIT or ABORT marker.
    fn append_transactional(
        &self,
        partition: i32,
        producer_id: i64,
        producer_epoch: i16,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), CoordinatorLogError> {
        let _ = (producer_id, producer_epoch);
        self.append(partition, records)
    }

    /// The offset the next append to `partition` gets (its log end offset): everything
    /// appended so far lies below it.
    fn end_offset(&self, partition: i32) -> i64 {
        let _ = partition;
        0
    }

    /// Whether everything below `end_offset` in `partition` is replicated to the ISR (below
    /// the high watermark) while this node still leads it. Always true where appends are
    /// committed as they are made (one node, the in-memory log).
    fn is_replicated(&self, partition: i32, end_offset: i64) -> bool {
        let _ = (partition, end_offset);
        true
    }
}

/// A [`CoordinatorLog`] kept in memory, for tests and tools. `fail_with` makes the next
/// appends fail, to exercise the error paths.
#[derive(Debug, Default)]
pub struct InMemoryCoordinatorLog {
    partitions: Mutex<BTreeMap<i32, Vec<CoordinatorRecord>>>,
    failure: Mutex<Option<CoordinatorLogError>>,
}

impl InMemoryCoordinatorLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every record appended to `partition`, in order.
    pub fn records(&self, partition: i32) -> Vec<CoordinatorRecord> {
        self.partitions
            .lock()
            .get(&partition)
            .cloned()
            .unwrap_or_default()
    }

    /// Makes appends fail with `error` until called again with `None`.
    pub fn fail_with(&self, error: Option<CoordinatorLogError>) {
        *self.failure.lock() = error;
    }
}

impl CoordinatorLog for InMemoryCoordinatorLog {
    fn append(
        &self,
        partition: i32,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), CoordinatorLogError> {
        if let Some(e) = self.failure.lock().clone() {
            return Err(e);
        }
        self.partitions
            .lock()
            .entry(partition)
            .or_default()
            .extend(records);
        Ok(())
    }

    fn end_offset(&self, partition: i32) -> i64 {
        self.partitions
            .lock()
            .get(&partition)
            .map_or(0, |r| r.len() as i64)
    }
}

/// Names one delayed JoinGroup or SyncGroup response. Allocated by the caller, unique per
/// coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResponseId(pub u64);

/// A JoinGroup or SyncGroup response that is ready. JoinGroup and SyncGroup always answer
/// through completions, whether at once or when the rebalance reaches the right point.
#[derive(Debug, Clone, PartialEq)]
pub enum Completion {
    Join {
        id: ResponseId,
        response: JoinGroupResponse,
    },
    Sync {
        id: ResponseId,
        response: SyncGroupResponse,
    },
}

impl Completion {
    pub fn id(&self) -> ResponseId {
        match self {
            Completion::Join { id, .. } | Completion::Sync { id, .. } => *id,
        }
    }
}
