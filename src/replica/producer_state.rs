//! Idempotent-producer state of one partition (Kafka's ProducerStateManager, KIP-98/KIP-360).
//!
//! For each producer id we keep its epoch and the metadata of its last five batches, so a retry
//! of any of them is answered with its original offsets instead of being written twice, and a
//! gap in sequence numbers is refused. The state is derived from the log only: appends update
//! it, and after a restart it is rebuilt by replaying batch headers.
use std::collections::{HashMap, VecDeque};

use crate::protocol::records::batch::BatchHeader;

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

/// A transaction that an ABORT marker ended (Kafka's AbortedTxn, as kept in `.txnindex`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProducerStateError {
    /// The batch carries an epoch older than the producer's current one.
    InvalidProducerEpoch { current: i16, got: i16 },
    /// The batch does not follow the producer's last sequence.
    OutOfOrderSequence { expected: i32, got: i32 },
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
        let entry = self.producers.entry(h.producer_id).or_default();
        if h.producer_epoch > entry.epoch {
            entry.epoch = h.producer_epoch;
            entry.batches.clear();
        }
        entry.last_timestamp = timestamp;
        if h.is_control() {
            entry.current_txn_first_offset = None;
            return;
        }
        if h.is_transactional() && entry.current_txn_first_offset.is_none() {
            entry.current_txn_first_offset = Some(first_offset);
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
    /// batches `commit` says which marker it is; an abort returns the transaction it ended.
    pub fn replay(&mut self, h: &BatchHeader, commit: bool) -> Option<AbortedTxn> {
        let aborted = if h.is_control() {
            self.end_txn(h.producer_id, h.base_offset, commit)
        } else {
            None
        };
        self.update(h, h.base_offset, h.last_offset(), h.max_timestamp);
        aborted
    }

    /// What a COMMIT or ABORT marker at `marker_offset` ends: for an abort, the aborted range.
    /// Call before `update` with the marker batch (which clears the open transaction).
    pub fn end_txn(
        &self,
        producer_id: i64,
        marker_offset: i64,
        commit: bool,
    ) -> Option<AbortedTxn> {
        let first = self.producers.get(&producer_id)?.current_txn_first_offset?;
        if commit {
            None
        } else {
            Some(AbortedTxn {
                producer_id,
                first_offset: first,
                last_offset: marker_offset,
            })
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
    }

    /// First offset of the earliest open transaction (bounds the last stable offset).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.producers
            .values()
            .filter_map(|e| e.current_txn_first_offset)
            .min()
    }
}
