//! The transaction coordinator: transactional ids, their producer ids and epochs, and the
//! two-phase end of a transaction, on `__transaction_state`.
//!
//! Mirrors Kafka's `TransactionCoordinator` / `TransactionStateManager` / `TransactionMetadata`
//! (KIP-98, KIP-360, KIP-588, and KIP-890's transaction version 2: partitions added by the
//! brokers a producer writes to, an epoch bump at every end), sans-io and deterministic, in the same records-then-replay pattern as the group coordinator:
//!
//! - [`metadata`]: Kafka's `TransactionState`s and the per-id `TransactionMetadata`, with the
//!   `prepare*` transitions that compute a target without changing anything.
//! - [`records`]: `__transaction_state` keys (type 0 + `TransactionLogKey`) and values
//!   (`TransactionLogValue` v0 or v1, by the finalized `transaction.version`, as Kafka).
//! - [`shard`]: one `__transaction_state` partition. A target is appended through
//!   [`CoordinatorLog`](crate::coordinator::CoordinatorLog) and only then replayed; loading a
//!   partition replays the same records and completes prepared transactions.
//! - [`service`]: [`TransactionCoordinator`], the facade the request handlers call.
//! - [`error`]: [`TxnError`] and its one mapping to Kafka error codes.
//!
//! The broker provides three things: a [`ProducerIdAllocator`], a [`TxnMarkerWriter`] that
//! appends COMMIT/ABORT control batches, and a partition-existence check for AddPartitionsToTxn.
//! Depends on `protocol`, `clock`, `error` and the coordinator runtime only.
pub mod error;
pub mod metadata;
pub mod records;
pub mod service;
pub mod shard;

#[cfg(test)]
mod tests;

pub use crate::protocol::records::control::MarkerSpec;
pub use error::TxnError;
pub use metadata::{TopicPartition, TransactionMetadata, TransactionState};
pub use service::TransactionCoordinator;
pub use shard::{TxnLoadSummary, TxnShard};

/// The `__transaction_state` topic name.
pub const TRANSACTION_STATE_TOPIC_NAME: &str = "__transaction_state";

/// Kafka's `RecordBatch.NO_PRODUCER_ID`.
pub const NO_PRODUCER_ID: i64 = -1;
/// Kafka's `RecordBatch.NO_PRODUCER_EPOCH`.
pub const NO_PRODUCER_EPOCH: i16 = -1;

/// Transaction coordinator configuration (Kafka's `TransactionConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.state.log.num.partitions`.
    pub transaction_state_log_num_partitions: i32,
    /// `transaction.max.timeout.ms`: the largest `transaction.timeout.ms` a producer may ask for.
    pub transaction_max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: an idle transactional id (no transaction in progress)
    /// is removed after this long without an update.
    pub transactional_id_expiration_ms: i64,
    /// TEST-ONLY fault injection: abort the process right after a PrepareCommit/PrepareAbort
    /// record is appended and before any marker is written, so a crash test can restart the
    /// broker in exactly that state. Set by the broker from the environment variable
    /// [`FAULT_AFTER_TXN_PREPARE_ENV`] (`=exit`), read once at start-up; never from a config
    /// file. Always false in production.
    pub fault_exit_after_prepare: bool,
}

/// TEST-ONLY: `STRATA_FAULT_AFTER_TXN_PREPARE=exit` makes the transaction coordinator abort the
/// process between the Prepare record and the markers (see [`TxnConfig::fault_exit_after_prepare`]).
pub const FAULT_AFTER_TXN_PREPARE_ENV: &str = "STRATA_FAULT_AFTER_TXN_PREPARE";

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            transaction_state_log_num_partitions: 50,
            transaction_max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
            fault_exit_after_prepare: false,
        }
    }
}

/// Why no producer id could be allocated (the controller's block is not available yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerIdAllocError(pub String);

/// Hands out producer ids (Kafka's `ProducerIdManager`). Implemented by the broker over the
/// controller's producer-id blocks; ids must never repeat, also across restarts.
pub trait ProducerIdAllocator: Send + Sync {
    fn generate_producer_id(&self) -> Result<i64, ProducerIdAllocError>;
}

/// Why markers could not be written. The transaction stays prepared and
/// [`TransactionCoordinator::tick`] writes them again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkerError {
    /// A partition could not take the marker now (not leader, storage busy, ...).
    Retriable(String),
}

/// Writes transaction markers (Kafka's WriteTxnMarkers, done locally on a single node).
///
/// For each `(topic, partition)` the broker appends a COMMIT or ABORT control batch for the
/// marker's producer, completing its transaction on that partition; on `__consumer_offsets`
/// partitions it also makes the producer's pending transactional offsets visible (commit) or
/// drops them (abort). A partition whose topic no longer exists is skipped and counts as
/// written, as in Kafka. Writing the same markers twice must be harmless (they are re-sent
/// after a failure or a restart).
///
/// Called with the coordinator's partition lock held: it must not call back into the
/// [`TransactionCoordinator`].
pub trait TxnMarkerWriter: Send + Sync {
    fn write_markers(
        &self,
        marker: &MarkerSpec,
        partitions: &[(String, i32)],
    ) -> Result<(), MarkerError>;
}
