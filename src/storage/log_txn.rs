//! The transaction side of a partition log (the parts of Kafka's `UnifiedLog`/`LocalLog` that
//! touch `.txnindex`): appending an end-transaction marker together with its aborted-txn entry,
//! re-indexing aborted transactions found while the producer state is rebuilt, and
//! `collectAbortedTransactions` for read_committed fetches.
//!
//! The marker and its index entry are written under one hold of the log's lock and before the
//! flush policy runs, so the recovery point never passes an ABORT marker whose entry is not
//! on disk: everything below the recovery point is indexed, everything above it is replayed.

use bytes::BytesMut;

use crate::protocol::records::batch::{parse_header, set_base_offset, set_partition_leader_epoch};

use super::config::LogAppendInfo;
use super::error::{Result, StorageError};
use super::log::PartitionLog;
use super::txn_index::AbortedTxn;

/// What an ABORT marker ends, known before the marker's offset is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingAbort {
    pub producer_id: i64,
    /// First offset of the producer's transaction on this partition.
    pub first_offset: i64,
    /// First offset of the earliest other open transaction, if any: the last stable offset
    /// once the marker is written (else the marker's offset + 1), as Kafka's
    /// `ProducerStateManager.lastStableOffset(completedTxn)`.
    pub other_first_unstable_offset: Option<i64>,
}

impl PartitionLog {
    /// Appends one end-transaction marker (a control batch) as leader at the log end offset,
    /// and for an abort its `.txnindex` entry in the segment that holds the marker (Kafka's
    /// `segment.updateTxnIndex` in `UnifiedLog.append`).
    pub fn append_end_txn_marker_as_leader(
        &self,
        mut batch: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
        abort: Option<PendingAbort>,
    ) -> Result<(LogAppendInfo, Option<AbortedTxn>)> {
        self.log_dir.guard(|| {
            let mut inner = self.inner.write();
            let offset = inner.log_end_offset;
            set_base_offset(&mut batch, offset);
            set_partition_leader_epoch(&mut batch, leader_epoch);
            let h = parse_header(&batch)?;
            if !h.is_control() || h.last_offset_delta != 0 {
                return Err(StorageError::InvalidArgument(
                    "an end-transaction marker is one control record",
                ));
            }
            let headers = [(h, 0..batch.len())];
            inner.write_batches(&batch, &headers, now_ms)?;
            let aborted = abort.map(|a| AbortedTxn {
                producer_id: a.producer_id,
                first_offset: a.first_offset,
                last_offset: offset,
                last_stable_offset: a.other_first_unstable_offset.unwrap_or(offset + 1),
            });
            if let Some(txn) = &aborted {
                inner.active_mut().txn_index_mut().append(txn)?;
                inner.note_aborted_txn_indexed();
            }
            inner.maybe_flush(now_ms)?;
            Ok((inner.append_info(batch.len(), &headers, -1), aborted))
        })
    }

    /// Indexes an aborted transaction found while replaying the log (start-up), unless its
    /// segment's index already has it. Entries arrive in marker order, and a segment's index
    /// never has gaps (a damaged tail is cut whole), so "already has it" is "its last entry is
    /// at or past this marker".
    pub fn index_aborted_txn(&self, txn: &AbortedTxn) -> Result<bool> {
        self.log_dir.guard(|| {
            let mut inner = self.inner.write();
            if txn.last_offset < inner.log_start_offset || txn.last_offset >= inner.log_end_offset {
                return Ok(false);
            }
            let Some((_, seg)) = inner.segments.range_mut(..=txn.last_offset).next_back() else {
                return Ok(false);
            };
            let idx = seg.txn_index_mut();
            if idx.last_offset().is_some_and(|l| l >= txn.last_offset) {
                return Ok(false);
            }
            idx.append(txn)?;
            inner.note_aborted_txn_indexed();
            Ok(true)
        })
    }

    /// Kafka's `collectAbortedTransactions(startOffset, upperBoundOffset)`: every aborted
    /// transaction overlapping `[fetch_offset, upper_bound_offset)`, read from the `.txnindex`
    /// of the segment holding `fetch_offset` and the following ones, until an entry's last
    /// stable offset shows no later one can overlap.
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<Vec<AbortedTxn>> {
        if !self.inner.has_aborted_txns() {
            return Ok(Vec::new());
        }
        self.log_dir.guard(|| {
            let inner = self.inner.read();
            let mut out = Vec::new();
            for seg in inner.segments_from(fetch_offset) {
                if seg
                    .txn_index()
                    .collect(fetch_offset, upper_bound_offset, &mut out)?
                {
                    break;
                }
            }
            Ok(out)
        })
    }

    /// Every aborted transaction in the log (the cleaner and tests).
    pub fn all_aborted_txns(&self) -> Result<Vec<AbortedTxn>> {
        self.log_dir.guard(|| {
            let inner = self.inner.read();
            let mut out = Vec::new();
            for seg in inner.segments.values() {
                out.extend(seg.txn_index().all()?);
            }
            Ok(out)
        })
    }

    /// Base offset of the active segment (the replica layer snapshots producer state when an
    /// append rolled a new one).
    pub fn active_segment_base_offset(&self) -> i64 {
        self.inner.read().active().base_offset()
    }
}
