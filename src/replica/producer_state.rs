//! Idempotent-producer state of one partition (Kafka's ProducerStateManager, KIP-98/KIP-360).
//!
//! For each producer id we keep its epoch and the metadata of its last five batches, so a retry
//! of any of them is answered with its original offsets instead of being written twice, and a
//! gap in sequence numbers is refused. The state is derived from the log only: appends update
//! it, and after a restart it is loaded from the latest producer snapshot (`.snapshot`, see
//! `storage::producer_snapshot`) and the batches after it are replayed.
use std::collections::{HashMap, VecDeque};

use crate::error::ErrorCode;
use crate::protocol::records::batch::BatchHeader;
use crate::storage::{PendingAbort, ProducerSnapshotEntry};

/// Kafka keeps the last five batches per producer (`ProducerStateEntry.NUM_BATCHES_TO_RETAIN`),
/// matching the client's `max.in.flight.requests.per.connection` limit for idempotence.
pub const BATCHES_TO_RETAIN: usize = 5;

pub const NO_PRODUCER_ID: i64 = -1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_seq: i32,
    pub last_seq: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    pub timestamp: i64,
}

#[derive(Debug, Clone, Default)]
pub struct ProducerEntry {
    pub epoch: i16,
    pub batches: VecDeque<BatchMetadata>,
    pub last_timestamp: i64,
    /// First offset of the producer's open transaction, if any.
    pub current_txn_first_offset: Option<i64>,
    pub coordinator_epoch: i32,
}

impl ProducerEntry {
    pub fn last_seq(&self) -> Option<i32> {
        self.batches.back().map(|b| b.last_seq)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerStateError {
    /// The batch carries an epoch older than the producer's current one.
    InvalidProducerEpoch { current: i16, got: i16 },
    /// The batch does not follow the producer's last sequence.
    OutOfOrderSequence { expected: i32, got: i32 },
    /// A marker from a transaction coordinator older than the last one that wrote to this
    /// producer (Kafka's `TransactionCoordinatorFencedException`).
    CoordinatorFenced { current: i32, got: i32 },
    /// A transactional batch that would start a transaction on this partition without the
    /// coordinator having confirmed the partition is in it (KIP-890 part 1).
    TransactionNotVerified,
}

impl From<&ProducerStateError> for ErrorCode {
    fn from(e: &ProducerStateError) -> ErrorCode {
        match e {
            ProducerStateError::InvalidProducerEpoch { .. } => ErrorCode::INVALID_PRODUCER_EPOCH,
            ProducerStateError::OutOfOrderSequence { .. } => {
                ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER
            }
            ProducerStateError::CoordinatorFenced { .. } => {
                ErrorCode::TRANSACTION_COORDINATOR_FENCED
            }
            ProducerStateError::TransactionNotVerified => ErrorCode::INVALID_TXN_STATE,
        }
    }
}

/// What an incoming batch is, given the producer's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// A new batch: append it.
    Append,
    /// A retry of a batch already in the log: answer with its original offsets.
    Duplicate(BatchMetadata),
}

#[derive(Debug, Default, Clone)]
pub struct ProducerStateManager {
    producers: HashMap<i64, ProducerEntry>,
    /// Transaction verifications under way (KIP-890 part 1, see `txn_verification`): the
    /// leader's own bookkeeping, never in the log or a snapshot.
    pub(super) verifications: HashMap<i64, super::txn_verification::VerificationEntry>,
    pub(super) next_guard: u64,
    /// The earliest `current_txn_first_offset` of `producers`, kept up to date by every change
    /// of one (Kafka's `ongoingTxns` serves the same purpose): the last stable offset is
    /// published at each unlock of the partition state, so it must not cost a scan.
    first_unstable: Option<i64>,
}

/// Sequence numbers wrap from i32::MAX to 0.
fn next_seq(seq: i32) -> i32 {
    if seq == i32::MAX {
        0
    } else {
        seq + 1
    }
}

impl ProducerStateManager {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, producer_id: i64) -> Option<&ProducerEntry> {
        self.producers.get(&producer_id)
    }

    pub fn producers(&self) -> impl Iterator<Item = (&i64, &ProducerEntry)> {
        self.producers.iter()
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Checks a batch from an idempotent producer before it is appended.
    pub fn check(&self, h: &BatchHeader) -> Result<SequenceCheck, ProducerStateError> {
        if h.producer_id == NO_PRODUCER_ID || h.is_control() {
            return Ok(SequenceCheck::Append);
        }
        if h.base_sequence < 0 {
            // Coordinator-written transactional batches (TxnOffsetCommit) carry no sequence.
            return match self.producers.get(&h.producer_id) {
                Some(e) if h.producer_epoch < e.epoch => {
                    Err(ProducerStateError::InvalidProducerEpoch {
                        current: e.epoch,
                        got: h.producer_epoch,
                    })
                }
                _ => Ok(SequenceCheck::Append),
            };
        }
        let Some(entry) = self.producers.get(&h.producer_id) else {
            // An unknown producer (new, or its state expired): any sequence starts it (KIP-360).
            return Ok(SequenceCheck::Append);
        };
        if h.producer_epoch < entry.epoch {
            return Err(ProducerStateError::InvalidProducerEpoch {
                current: entry.epoch,
                got: h.producer_epoch,
            });
        }
        let last_seq = h.last_sequence();
        if h.producer_epoch > entry.epoch {
            // A bumped epoch restarts the sequence at zero.
            if h.base_sequence != 0 {
                return Err(ProducerStateError::OutOfOrderSequence {
                    expected: 0,
                    got: h.base_sequence,
                });
            }
            return Ok(SequenceCheck::Append);
        }
        if let Some(dup) = entry
            .batches
            .iter()
            .find(|b| b.first_seq == h.base_sequence && b.last_seq == last_seq)
        {
            return Ok(SequenceCheck::Duplicate(*dup));
        }
        match entry.last_seq() {
            Some(prev) if next_seq(prev) != h.base_sequence => {
                Err(ProducerStateError::OutOfOrderSequence {
                    expected: next_seq(prev),
                    got: h.base_sequence,
                })
            }
            _ => Ok(SequenceCheck::Append),
        }
    }

    /// Records a batch that is now in the log (append, or replay at start-up).
    pub fn update(&mut self, h: &BatchHeader, first_offset: i64, last_offset: i64, timestamp: i64) {
        if h.producer_id == NO_PRODUCER_ID {
            return;
        }
        if h.is_transactional() || h.is_control() {
            // A marker ends what a verification was for; a transactional batch in the log
            // has used it up (the transaction is open now). Except a version 2 producer's
            // verification at the marker's own epoch: it is for the next transaction, which
            // runs under the epoch the marker bumped to (Kafka's `isV2NextTransactionStarted`).
            let next_transaction = h.is_control()
                && self
                    .verifications
                    .get(&h.producer_id)
                    .is_some_and(|v| v.supports_epoch_bump && v.epoch == h.producer_epoch);
            if !next_transaction {
                self.verifications.remove(&h.producer_id);
            }
        }
        let entry = self.producers.entry(h.producer_id).or_default();
        if h.producer_epoch > entry.epoch {
            entry.epoch = h.producer_epoch;
            entry.batches.clear();
        }
        entry.last_timestamp = timestamp;
        if h.is_control() {
            if entry.current_txn_first_offset.take().is_some() {
                self.first_unstable = scan_first_unstable(&self.producers);
            }
            return;
        }
        if h.is_transactional() && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(first_offset);
            self.first_unstable = Some(
                self.first_unstable
                    .map_or(first_offset, |f| f.min(first_offset)),
            );
        }
        if h.base_sequence < 0 {
            return;
        }
        entry.batches.push_back(BatchMetadata {
            first_seq: h.base_sequence,
            last_seq: h.last_sequence(),
            first_offset,
            last_offset,
            timestamp,
        });
        while entry.batches.len() > BATCHES_TO_RETAIN {
            entry.batches.pop_front();
        }
    }

    /// Replays a batch header read from the log (its offsets are in the header). For control
    /// batches `commit` says which marker it is and `coordinator_epoch` is the marker's; an
    /// abort returns what it ended.
    pub fn replay(
        &mut self,
        h: &BatchHeader,
        commit: bool,
        coordinator_epoch: i32,
    ) -> Option<PendingAbort> {
        let aborted = if h.is_control() {
            let a = self.end_txn(h.producer_id, commit);
            if let Some(e) = self.producers.get_mut(&h.producer_id) {
                e.coordinator_epoch = coordinator_epoch;
            }
            a
        } else {
            None
        };
        self.update(h, h.base_offset, h.last_offset(), h.max_timestamp);
        aborted
    }

    /// What a COMMIT or ABORT marker ends: for an abort, the transaction's first offset and
    /// the earliest other open transaction (the `.txnindex` entry's last stable offset). Call
    /// before `update` with the marker batch (which clears the open transaction).
    pub fn end_txn(&self, producer_id: i64, commit: bool) -> Option<PendingAbort> {
        let first = self.producers.get(&producer_id)?.current_txn_first_offset?;
        if commit {
            return None;
        }
        Some(PendingAbort {
            producer_id,
            first_offset: first,
            other_first_unstable_offset: self
                .producers
                .iter()
                .filter(|(id, _)| **id != producer_id)
                .filter_map(|(_, e)| e.current_txn_first_offset)
                .min(),
        })
    }

    /// Kafka's marker checks (`ProducerAppendInfo.appendEndTxnMarker`): the marker's producer
    /// epoch may not be older than the producer's, nor its coordinator epoch older than the
    /// last coordinator's that wrote a marker for it. Under transaction version 2 a marker
    /// carries the epoch bumped at the end of its transaction, so one at the producer's current
    /// epoch while a transaction is open belongs to the transaction before it (late, or sent
    /// twice) and would end the wrong one; the same marker with no transaction open is a retry
    /// and harmless (KIP-890 part 2, KIP-1228, KAFKA-19999).
    pub fn check_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        transaction_version: i16,
    ) -> Result<(), ProducerStateError> {
        let Some(e) = self.producers.get(&producer_id) else {
            return Ok(());
        };
        let stale_v2 = transaction_version >= 2
            && producer_epoch == e.epoch
            && e.current_txn_first_offset.is_some();
        if producer_epoch < e.epoch || stale_v2 {
            return Err(ProducerStateError::InvalidProducerEpoch {
                current: e.epoch,
                got: producer_epoch,
            });
        }
        if coordinator_epoch < e.coordinator_epoch {
            return Err(ProducerStateError::CoordinatorFenced {
                current: e.coordinator_epoch,
                got: coordinator_epoch,
            });
        }
        Ok(())
    }

    /// Remembers the coordinator epoch of a marker just written for `producer_id`.
    pub fn set_coordinator_epoch(&mut self, producer_id: i64, coordinator_epoch: i32) {
        if let Some(e) = self.producers.get_mut(&producer_id) {
            e.coordinator_epoch = coordinator_epoch;
        }
    }

    /// Puts back, in front of each producer's last batch (all a snapshot holds), its earlier
    /// batches of the same epoch found just before the snapshot, so that retries of any of the
    /// last five batches are still recognised after a restart. `h` are headers in log order.
    pub fn backfill_batches(&mut self, headers: &[BatchHeader]) {
        let mut found: HashMap<i64, VecDeque<BatchMetadata>> = HashMap::new();
        for h in headers {
            let Some(e) = self.producers.get(&h.producer_id) else {
                continue;
            };
            let Some(first_known) = e.batches.front() else {
                continue;
            };
            if h.is_control()
                || h.base_sequence < 0
                || h.producer_epoch != e.epoch
                || h.last_offset() >= first_known.first_offset
            {
                continue;
            }
            let q = found.entry(h.producer_id).or_default();
            q.push_back(BatchMetadata {
                first_seq: h.base_sequence,
                last_seq: h.last_sequence(),
                first_offset: h.base_offset,
                last_offset: h.last_offset(),
                timestamp: h.max_timestamp,
            });
            while q.len() >= BATCHES_TO_RETAIN {
                q.pop_front();
            }
        }
        for (pid, older) in found {
            if let Some(e) = self.producers.get_mut(&pid) {
                for b in older.into_iter().rev() {
                    if e.batches.len() >= BATCHES_TO_RETAIN {
                        break;
                    }
                    e.batches.push_front(b);
                }
            }
        }
    }

    /// The state as snapshot entries (Kafka's `writeSnapshot`: the last batch per producer).
    pub fn to_snapshot(&self) -> Vec<ProducerSnapshotEntry> {
        let mut out: Vec<ProducerSnapshotEntry> = self
            .producers
            .iter()
            .map(|(&producer_id, e)| {
                let last = e.batches.back();
                ProducerSnapshotEntry {
                    producer_id,
                    producer_epoch: e.epoch,
                    last_sequence: last.map_or(-1, |b| b.last_seq),
                    last_offset: last.map_or(-1, |b| b.last_offset),
                    offset_delta: last.map_or(0, |b| (b.last_offset - b.first_offset) as i32),
                    timestamp: e.last_timestamp,
                    coordinator_epoch: e.coordinator_epoch,
                    current_txn_first_offset: e.current_txn_first_offset.unwrap_or(-1),
                }
            })
            .collect();
        out.sort_by_key(|e| e.producer_id);
        out
    }

    /// The state a snapshot holds (Kafka's `readSnapshot` + `loadProducerEntry`). Entries with
    /// a negative producer id or nonsensical offsets are skipped.
    pub fn from_snapshot(entries: &[ProducerSnapshotEntry]) -> Self {
        let mut producers = HashMap::with_capacity(entries.len());
        for s in entries {
            if s.producer_id < 0 {
                continue;
            }
            let mut batches = VecDeque::new();
            if s.last_offset >= 0 && s.last_sequence >= 0 && s.offset_delta >= 0 {
                batches.push_back(BatchMetadata {
                    first_seq: s.last_sequence.wrapping_sub(s.offset_delta).max(0),
                    last_seq: s.last_sequence,
                    first_offset: s.last_offset - s.offset_delta as i64,
                    last_offset: s.last_offset,
                    timestamp: s.timestamp,
                });
            }
            producers.insert(
                s.producer_id,
                ProducerEntry {
                    epoch: s.producer_epoch,
                    batches,
                    last_timestamp: s.timestamp,
                    current_txn_first_offset: (s.current_txn_first_offset >= 0)
                        .then_some(s.current_txn_first_offset),
                    coordinator_epoch: s.coordinator_epoch,
                },
            );
        }
        ProducerStateManager {
            first_unstable: scan_first_unstable(&producers),
            producers,
            ..Default::default()
        }
    }

    /// Whether a producer has a transaction open on this partition.
    pub fn has_open_txn(&self, producer_id: i64) -> bool {
        self.producers
            .get(&producer_id)
            .is_some_and(|e| e.current_txn_first_offset.is_some())
    }

    /// Forgets producers idle for longer than `expiration_ms` (`producer.id.expiration.ms`),
    /// unless they have an open transaction.
    pub fn expire(&mut self, now_ms: i64, expiration_ms: i64) {
        self.producers.retain(|_, e| {
            e.current_txn_first_offset.is_some() || now_ms - e.last_timestamp < expiration_ms
        });
        self.verifications
            .retain(|_, v| now_ms - v.started_ms < expiration_ms);
    }

    /// First offset of the earliest open transaction (bounds the last stable offset).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.first_unstable
    }
}

fn scan_first_unstable(producers: &HashMap<i64, ProducerEntry>) -> Option<i64> {
    producers
        .values()
        .filter_map(|e| e.current_txn_first_offset)
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn batch(producer_id: i64, transactional: bool, control: bool, offset: i64) -> BatchHeader {
        BatchHeader {
            base_offset: offset,
            batch_length: 0,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: if control {
                0x30
            } else if transactional {
                0x10
            } else {
                0
            },
            last_offset_delta: 0,
            base_timestamp: 0,
            max_timestamp: offset,
            producer_id,
            producer_epoch: 0,
            base_sequence: if control { -1 } else { 0 },
            records_count: 1,
        }
    }

    proptest! {
        /// The kept earliest open transaction is the one a scan of every producer finds, after
        /// any mix of transactional writes, markers, plain writes, expiry and a snapshot reload.
        #[test]
        fn first_unstable_offset_is_the_earliest_open_transaction(
            ops in proptest::collection::vec((0i64..4, 0u8..5), 1..60)
        ) {
            let mut state = ProducerStateManager::new();
            for (offset, (pid, op)) in ops.into_iter().enumerate() {
                let offset = offset as i64;
                match op {
                    0 | 1 => state.update(&batch(pid, true, false, offset), offset, offset, offset),
                    2 => state.update(&batch(pid, false, true, offset), offset, offset, offset),
                    3 => state.update(&batch(pid, false, false, offset), offset, offset, offset),
                    _ => {
                        state.expire(offset, 3);
                        state = ProducerStateManager::from_snapshot(&state.to_snapshot());
                    }
                }
                prop_assert_eq!(state.first_unstable_offset(), scan_first_unstable(&state.producers));
            }
        }
    }
}
