//! Kafka's `TransactionState` and `TransactionMetadata`: the state of one transactional id and
//! the `prepare*` transitions.
//!
//! A transition computes the target metadata and changes nothing; the shard appends the target
//! as a `__transaction_state` record and the state changes when that record is replayed. Because
//! every operation runs to completion under the partition lock, Kafka's `pendingState` (a
//! transition whose append is in flight) is never observable here and is not modelled.
use std::collections::BTreeSet;

use crate::coordinator::txn::error::TxnError;
use crate::coordinator::txn::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID};

/// A partition in a transaction: (topic, partition).
pub type TopicPartition = (String, i32);

/// Kafka's transaction states, with the ids stored in `TransactionLogValue.TransactionStatus`
/// and the names shown by DescribeTransactions and ListTransactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TransactionState {
    /// No transaction in progress (also right after InitProducerId).
    Empty,
    /// A transaction is open: partitions have been added.
    Ongoing,
    /// EndTxn(commit) is durable; markers are being written.
    PrepareCommit,
    /// EndTxn(abort), a timeout or a fencing InitProducerId is durable; markers are being written.
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    /// The id is being expired (never written: expiration writes a tombstone).
    Dead,
    /// Fencing a producer (a transient state in Kafka, never written by transaction version 1).
    PrepareEpochFence,
}

impl TransactionState {
    pub const ALL: [TransactionState; 8] = [
        TransactionState::Empty,
        TransactionState::Ongoing,
        TransactionState::PrepareCommit,
        TransactionState::PrepareAbort,
        TransactionState::CompleteCommit,
        TransactionState::CompleteAbort,
        TransactionState::Dead,
        TransactionState::PrepareEpochFence,
    ];

    /// The id stored in the transaction log.
    pub fn id(self) -> i8 {
        use TransactionState::*;
        match self {
            Empty => 0,
            Ongoing => 1,
            PrepareCommit => 2,
            PrepareAbort => 3,
            CompleteCommit => 4,
            CompleteAbort => 5,
            Dead => 6,
            PrepareEpochFence => 7,
        }
    }

    pub fn from_id(id: i8) -> Option<TransactionState> {
        Self::ALL.iter().copied().find(|s| s.id() == id)
    }

    /// Kafka's state name (DescribeTransactions, ListTransactions filters).
    pub fn name(self) -> &'static str {
        use TransactionState::*;
        match self {
            Empty => "Empty",
            Ongoing => "Ongoing",
            PrepareCommit => "PrepareCommit",
            PrepareAbort => "PrepareAbort",
            CompleteCommit => "CompleteCommit",
            CompleteAbort => "CompleteAbort",
            Dead => "Dead",
            PrepareEpochFence => "PrepareEpochFence",
        }
    }

    pub fn from_name(name: &str) -> Option<TransactionState> {
        Self::ALL.iter().copied().find(|s| s.name() == name)
    }

    /// States in which an idle transactional id may expire.
    pub fn is_expiration_allowed(self) -> bool {
        matches!(
            self,
            TransactionState::Empty
                | TransactionState::CompleteCommit
                | TransactionState::CompleteAbort
        )
    }

    /// PrepareCommit or PrepareAbort: markers still to be written.
    pub fn is_prepared(self) -> bool {
        matches!(
            self,
            TransactionState::PrepareCommit | TransactionState::PrepareAbort
        )
    }
}

/// Kafka's `TransactionMetadata.isEpochExhausted`: the last epochs are kept for fencing.
pub fn is_epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// The state of one transactional id. Also used as the target of a transition (Kafka's
/// `TxnTransitMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionMetadata {
    pub transactional_id: String,
    pub producer_id: i64,
    /// The producer id before the last transition (after a rotation: the previous id). Not in
    /// the v0 record: -1 after a load, as in Kafka.
    pub last_producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last KIP-360 bump, so a retried InitProducerId gets the same answer.
    /// Not in the record: -1 after a load, as in Kafka.
    pub last_producer_epoch: i16,
    pub txn_timeout_ms: i32,
    pub state: TransactionState,
    pub topic_partitions: BTreeSet<TopicPartition>,
    /// When the first partition was added (-1 when no transaction is open).
    pub txn_start_timestamp_ms: i64,
    /// When the metadata last changed; idle ids expire from it.
    pub txn_last_update_timestamp_ms: i64,
    /// The producer id an EndTxn under transaction version 2 handed out because the epoch was
    /// exhausted (KIP-890 part 2): the transaction's markers still go out under the old id, and
    /// completing it moves to this one at epoch 0. -1 otherwise.
    pub next_producer_id: i64,
    /// The transaction version the producer's requests speak (Kafka's `ClientTransactionVersion`):
    /// 2 once it added a partition through a broker (Produce v12+, TxnOffsetCommit v5) or ended
    /// a transaction with EndTxn v5; 0 for the classic protocol. Its markers carry it
    /// (WriteTxnMarkers v2), so partitions apply the strict epoch check of version 2.
    pub client_transaction_version: i16,
}

impl TransactionMetadata {
    /// A transactional id seen for the first time, before its first epoch (Kafka creates it with
    /// `NO_PRODUCER_EPOCH` so the first bump yields epoch 0).
    pub fn new(transactional_id: &str, producer_id: i64, txn_timeout_ms: i32, now_ms: i64) -> Self {
        TransactionMetadata {
            transactional_id: transactional_id.to_string(),
            producer_id,
            last_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms,
            state: TransactionState::Empty,
            topic_partitions: BTreeSet::new(),
            txn_start_timestamp_ms: -1,
            txn_last_update_timestamp_ms: now_ms,
            next_producer_id: NO_PRODUCER_ID,
            client_transaction_version: 0,
        }
    }

    /// Whether this id's transactions bump the epoch at every end (transaction version 2).
    pub fn supports_epoch_bump(&self) -> bool {
        self.client_transaction_version >= 2
    }

    #[allow(clippy::too_many_arguments)]
    fn transition(
        &self,
        state: TransactionState,
        producer_id: i64,
        producer_epoch: i16,
        last_producer_epoch: i16,
        txn_timeout_ms: i32,
        topic_partitions: BTreeSet<TopicPartition>,
        txn_start_timestamp_ms: i64,
        txn_last_update_timestamp_ms: i64,
    ) -> TransactionMetadata {
        TransactionMetadata {
            transactional_id: self.transactional_id.clone(),
            producer_id,
            last_producer_id: self.producer_id,
            producer_epoch,
            last_producer_epoch,
            txn_timeout_ms,
            state,
            topic_partitions,
            txn_start_timestamp_ms,
            txn_last_update_timestamp_ms,
            next_producer_id: self.next_producer_id,
            client_transaction_version: self.client_transaction_version,
        }
    }

    /// The epoch bump of a fencing abort (`prepareFenceProducerEpoch`): the open transaction is
    /// aborted under `epoch + 1`, so the old producer is fenced on every partition.
    pub fn prepare_fence_abort(&self, now_ms: i64) -> Result<TransactionMetadata, TxnError> {
        if self.producer_epoch == i16::MAX {
            return Err(TxnError::EpochOverflow);
        }
        Ok(self.transition(
            TransactionState::PrepareAbort,
            self.producer_id,
            self.producer_epoch + 1,
            NO_PRODUCER_EPOCH,
            self.txn_timeout_ms,
            self.topic_partitions.clone(),
            self.txn_start_timestamp_ms,
            now_ms,
        ))
    }

    /// `prepareIncrementProducerEpoch`: InitProducerId with the same producer id. With a KIP-360
    /// expected epoch, a retry of a successful bump returns the current epoch unchanged and any
    /// other epoch is fenced.
    pub fn prepare_increment_producer_epoch(
        &self,
        new_txn_timeout_ms: i32,
        expected_epoch: Option<i16>,
        now_ms: i64,
    ) -> Result<TransactionMetadata, TxnError> {
        if is_epoch_exhausted(self.producer_epoch) {
            return Err(TxnError::EpochOverflow);
        }
        let bumped = self.producer_epoch + 1;
        let (epoch, last_epoch) = match expected_epoch {
            None => (bumped, NO_PRODUCER_EPOCH),
            Some(e) if self.producer_epoch == NO_PRODUCER_EPOCH || e == self.producer_epoch => {
                (bumped, self.producer_epoch)
            }
            Some(e) if e == self.last_producer_epoch => {
                (self.producer_epoch, self.last_producer_epoch)
            }
            Some(_) => return Err(TxnError::ProducerFenced),
        };
        Ok(self.transition(
            TransactionState::Empty,
            self.producer_id,
            epoch,
            last_epoch,
            new_txn_timeout_ms,
            BTreeSet::new(),
            -1,
            now_ms,
        ))
    }

    /// `prepareProducerIdRotation`: the epoch is exhausted, continue under a new producer id.
    pub fn prepare_producer_id_rotation(
        &self,
        new_producer_id: i64,
        new_txn_timeout_ms: i32,
        now_ms: i64,
        record_last_epoch: bool,
    ) -> TransactionMetadata {
        let last_epoch = if record_last_epoch {
            self.producer_epoch
        } else {
            NO_PRODUCER_EPOCH
        };
        self.transition(
            TransactionState::Empty,
            new_producer_id,
            0,
            last_epoch,
            new_txn_timeout_ms,
            BTreeSet::new(),
            -1,
            now_ms,
        )
    }

    /// `prepareAddPartitions`: the transaction starts (or continues) with more partitions, in
    /// the transaction version of the request that added them.
    pub fn prepare_add_partitions(
        &self,
        added: &BTreeSet<TopicPartition>,
        client_transaction_version: i16,
        now_ms: i64,
    ) -> TransactionMetadata {
        let start = match self.state {
            TransactionState::Empty
            | TransactionState::CompleteAbort
            | TransactionState::CompleteCommit => now_ms,
            _ => self.txn_start_timestamp_ms,
        };
        let mut partitions = self.topic_partitions.clone();
        partitions.extend(added.iter().cloned());
        let mut target = self.transition(
            TransactionState::Ongoing,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            partitions,
            start,
            now_ms,
        );
        target.client_transaction_version = client_transaction_version;
        target
    }

    /// `prepareAbortOrCommit`: Ongoing -> PrepareCommit / PrepareAbort.
    pub fn prepare_abort_or_commit(&self, commit: bool, now_ms: i64) -> TransactionMetadata {
        let state = if commit {
            TransactionState::PrepareCommit
        } else {
            TransactionState::PrepareAbort
        };
        self.transition(
            state,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            self.topic_partitions.clone(),
            self.txn_start_timestamp_ms,
            now_ms,
        )
    }

    /// `prepareAbortOrCommit` of transaction version 2 (KIP-890 part 2): every end bumps the
    /// epoch, so a producer of the ended transaction (a zombie, a late retry) is fenced on every
    /// partition by the markers, which carry the bumped epoch. An exhausted epoch continues under
    /// `next_producer_id` once the transaction completes. `empty` is an abort of a transaction
    /// no partition joined (the producer cannot know whether one did): it starts now.
    pub fn prepare_end_with_epoch_bump(
        &self,
        commit: bool,
        next_producer_id: i64,
        empty: bool,
        now_ms: i64,
    ) -> Result<TransactionMetadata, TxnError> {
        if self.producer_epoch == i16::MAX {
            return Err(TxnError::EpochOverflow);
        }
        let mut target = self.prepare_abort_or_commit(commit, now_ms);
        target.producer_epoch = self.producer_epoch + 1;
        target.last_producer_epoch = self.producer_epoch;
        target.next_producer_id = next_producer_id;
        target.client_transaction_version = 2;
        if empty {
            target.txn_start_timestamp_ms = now_ms;
        }
        Ok(target)
    }

    /// The producer id and epoch the producer continues with once this prepared transaction
    /// completes (what EndTxn v5 answers).
    pub fn completed_producer(&self) -> (i64, i16) {
        if self.next_producer_id != NO_PRODUCER_ID {
            (self.next_producer_id, 0)
        } else {
            (self.producer_id, self.producer_epoch)
        }
    }

    /// `prepareComplete`: markers written, PrepareX -> CompleteX with no partitions; under
    /// transaction version 2 an exhausted epoch moves to the next producer id here.
    pub fn prepare_complete(&self, now_ms: i64) -> TransactionMetadata {
        let state = if self.state == TransactionState::PrepareCommit {
            TransactionState::CompleteCommit
        } else {
            TransactionState::CompleteAbort
        };
        let (producer_id, producer_epoch) = self.completed_producer();
        let mut target = self.transition(
            state,
            producer_id,
            producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            BTreeSet::new(),
            self.txn_start_timestamp_ms,
            now_ms,
        );
        target.next_producer_id = NO_PRODUCER_ID;
        target
    }

    /// The partitions as the marker writer takes them.
    pub fn partition_list(&self) -> Vec<(String, i32)> {
        self.topic_partitions.iter().cloned().collect()
    }

    /// The durable part: what replaying the record of this metadata reproduces. Value version
    /// 0 has no previous or next producer id and no client transaction version.
    pub fn durable(&self, value_version: i16) -> TransactionMetadata {
        if value_version >= 1 {
            return TransactionMetadata {
                last_producer_epoch: NO_PRODUCER_EPOCH,
                ..self.clone()
            };
        }
        TransactionMetadata {
            last_producer_id: NO_PRODUCER_ID,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            next_producer_id: NO_PRODUCER_ID,
            client_transaction_version: 0,
            ..self.clone()
        }
    }
}
