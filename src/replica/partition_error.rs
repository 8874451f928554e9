//! Why an operation on a partition replica failed ([`PartitionError`]), the words a client
//! reads for it, and its mapping to Kafka error codes: a wrapped record, producer-state or
//! storage error keeps the code of its own type's mapping.
use super::producer_state::ProducerStateError;
use crate::error::ErrorCode;
use crate::protocol::records::batch;
use crate::protocol::records::validator::RecordFailure;
use crate::storage::StorageError;

#[derive(Debug)]
pub enum PartitionError {
    Record(batch::BatchError),
    MessageTooLarge {
        size: usize,
        max: usize,
    },
    Producer(ProducerStateError),
    Storage(StorageError),
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    FencedLeaderEpoch {
        current: i32,
        got: i32,
    },
    UnknownLeaderEpoch {
        current: i32,
        got: i32,
    },
    /// This broker does not lead the partition (or, for a follower fetch, the fetching broker
    /// is not one of its replicas).
    NotLeaderOrFollower,
    /// acks=all with fewer in-sync replicas than `min.insync.replicas`: nothing was written.
    NotEnoughReplicas {
        isr: usize,
        min_insync_replicas: i32,
    },
    /// acks=all: written and replicated, but the ISR shrank below `min.insync.replicas`.
    NotEnoughReplicasAfterAppend {
        isr: usize,
        min_insync_replicas: i32,
    },
}

impl PartitionError {
    /// The Kafka error code (the mapping below).
    pub fn code(&self) -> ErrorCode {
        ErrorCode::from(self)
    }

    /// The `error_message` a client reads: what went wrong in words, never Rust debug text,
    /// and for a failed log directory no server path.
    pub fn message(&self) -> String {
        match self {
            PartitionError::Record(e) => e.to_string(),
            PartitionError::MessageTooLarge { size, max } => {
                format!("record batch of {size} bytes is larger than max.message.bytes ({max})")
            }
            PartitionError::Producer(ProducerStateError::InvalidProducerEpoch { current, got }) => {
                format!("producer epoch {got} is older than the current epoch {current}")
            }
            PartitionError::Producer(ProducerStateError::OutOfOrderSequence { expected, got }) => {
                format!("out of order sequence number {got}, expected {expected}")
            }
            PartitionError::Producer(ProducerStateError::CoordinatorFenced { current, got }) => {
                format!("transaction coordinator epoch {got} is older than {current}")
            }
            PartitionError::Producer(ProducerStateError::TransactionNotVerified) => {
                "Record was not part of an ongoing transaction".to_string()
            }
            PartitionError::Storage(_) if self.code() == ErrorCode::KAFKA_STORAGE_ERROR => {
                "the partition's log directory failed".to_string()
            }
            PartitionError::Storage(e) => e.to_string(),
            PartitionError::OffsetOutOfRange {
                offset,
                log_start_offset,
                log_end_offset,
            } => format!(
                "offset {offset} is outside the log's range [{log_start_offset}, {log_end_offset}]"
            ),
            PartitionError::FencedLeaderEpoch { current, got } => {
                format!("leader epoch {got} is older than the current epoch {current}")
            }
            PartitionError::UnknownLeaderEpoch { current, got } => {
                format!("leader epoch {got} is newer than the current epoch {current}")
            }
            PartitionError::NotLeaderOrFollower => {
                "this broker is not the partition's leader".to_string()
            }
            PartitionError::NotEnoughReplicas {
                isr,
                min_insync_replicas,
            } => format!(
                "{isr} in-sync replicas, fewer than min.insync.replicas ({min_insync_replicas})"
            ),
            PartitionError::NotEnoughReplicasAfterAppend {
                isr,
                min_insync_replicas,
            } => format!(
                "written, but the in-sync replicas fell to {isr}, below min.insync.replicas \
                 ({min_insync_replicas})"
            ),
        }
    }

    /// KIP-467: for a batch refused because of particular records, Kafka's message for the
    /// partition and the refused records (`error_message` and `record_errors` of Produce v8+).
    pub fn record_errors(&self) -> Option<(&str, &[RecordFailure])> {
        match self {
            PartitionError::Record(batch::BatchError::RecordErrors {
                message, records, ..
            }) => Some((message, records)),
            _ => None,
        }
    }
}

impl From<StorageError> for PartitionError {
    fn from(e: StorageError) -> Self {
        PartitionError::Storage(e)
    }
}

impl From<&PartitionError> for ErrorCode {
    fn from(e: &PartitionError) -> ErrorCode {
        match e {
            PartitionError::Record(e) => ErrorCode::from(e),
            PartitionError::MessageTooLarge { .. } => ErrorCode::MESSAGE_TOO_LARGE,
            PartitionError::Producer(e) => ErrorCode::from(e),
            // Each storage error keeps its own code: only an I/O-class failure is
            // KAFKA_STORAGE_ERROR (a batch over `segment.bytes` is RECORD_LIST_TOO_LARGE).
            PartitionError::Storage(e) => ErrorCode::from(e),
            PartitionError::OffsetOutOfRange { .. } => ErrorCode::OFFSET_OUT_OF_RANGE,
            PartitionError::FencedLeaderEpoch { .. } => ErrorCode::FENCED_LEADER_EPOCH,
            PartitionError::UnknownLeaderEpoch { .. } => ErrorCode::UNKNOWN_LEADER_EPOCH,
            PartitionError::NotLeaderOrFollower => ErrorCode::NOT_LEADER_OR_FOLLOWER,
            PartitionError::NotEnoughReplicas { .. } => ErrorCode::NOT_ENOUGH_REPLICAS,
            PartitionError::NotEnoughReplicasAfterAppend { .. } => {
                ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND
            }
        }
    }
}
