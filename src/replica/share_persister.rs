//! The durable state of share partitions, as their leader sees it (Kafka's `Persister`,
//! KIP-932): a share partition reads its state when it is created on a leader, initializes it
//! when none exists, and writes what changed before an acknowledgement is answered. Where the
//! state lives (the share coordinator on `__share_group_state`, here or on another broker) is
//! the implementor's business; this layer knows only the contract.
//!
//! Epochs fence stale writers, as Kafka's share coordinator does: a write or read with a
//! leader epoch below the last one recorded is FENCED_LEADER_EPOCH (a deposed leader), and a
//! state epoch below the recorded one is FENCED_STATE_EPOCH (the offsets were altered).
use std::future::Future;
use std::pin::Pin;

use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;

/// `__share_group_state` delivery states (Kafka's `RecordState` ids).
pub const DELIVERY_STATE_AVAILABLE: i8 = 0;
pub const DELIVERY_STATE_ACKNOWLEDGED: i8 = 2;
pub const DELIVERY_STATE_ARCHIVED: i8 = 4;

/// One run of offsets in the same state with the same delivery count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub delivery_state: i8,
    pub delivery_count: i16,
}

/// Names one share partition: (group, topic id, partition).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharePartitionKey {
    pub group_id: String,
    pub topic_id: Uuid,
    pub partition: i32,
}

/// What a read returns for an initialized share partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersistedState {
    pub state_epoch: i32,
    pub start_offset: i64,
    pub state_batches: Vec<StateBatch>,
}

/// What a read-summary returns (DescribeShareGroupOffsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateSummary {
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    /// Offsets at or past the start offset whose delivery is complete; -1 unknown.
    pub delivery_complete_count: i32,
}

/// One write: the new start offset and the batches that changed since the last write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateWrite {
    pub key: SharePartitionKey,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub state_batches: Vec<StateBatch>,
}

pub type PersisterFuture<T> = Pin<Box<dyn Future<Output = Result<T, ErrorCode>> + Send>>;

/// Where share-partition state is kept.
pub trait SharePersister: Send + Sync {
    /// Starts (or starts again, at a higher state epoch) a share partition at `start_offset`
    /// with nothing in flight.
    fn initialize(
        &self,
        key: SharePartitionKey,
        state_epoch: i32,
        start_offset: i64,
    ) -> PersisterFuture<()>;

    /// The state of a share partition, `None` when it was never initialized. Records the
    /// reader's leader epoch, fencing older leaders.
    fn read(
        &self,
        key: SharePartitionKey,
        leader_epoch: i32,
    ) -> PersisterFuture<Option<PersistedState>>;

    /// The start offset and epochs of a share partition, `None` when never initialized.
    fn read_summary(&self, key: SharePartitionKey) -> PersisterFuture<Option<StateSummary>>;

    fn write(&self, write: StateWrite) -> PersisterFuture<()>;

    /// Forgets the state of the share partitions (the group or its offsets were deleted).
    fn delete(&self, keys: Vec<SharePartitionKey>) -> PersisterFuture<()>;
}

/// Keeps nothing: every share partition starts afresh (unit tests, tools).
#[derive(Debug, Default)]
pub struct NoPersister;

impl SharePersister for NoPersister {
    fn initialize(&self, _: SharePartitionKey, _: i32, _: i64) -> PersisterFuture<()> {
        Box::pin(async { Ok(()) })
    }
    fn read(&self, _: SharePartitionKey, _: i32) -> PersisterFuture<Option<PersistedState>> {
        Box::pin(async { Ok(None) })
    }
    fn read_summary(&self, _: SharePartitionKey) -> PersisterFuture<Option<StateSummary>> {
        Box::pin(async { Ok(None) })
    }
    fn write(&self, _: StateWrite) -> PersisterFuture<()> {
        Box::pin(async { Ok(()) })
    }
    fn delete(&self, _: Vec<SharePartitionKey>) -> PersisterFuture<()> {
        Box::pin(async { Ok(()) })
    }
}

/// Sorted, non-overlapping `batches` with `newer` laid over them (a newer state wins where
/// they overlap), without anything below `start_offset`, adjacent runs of one state and count
/// joined: how the share coordinator folds a write into its state (Kafka's
/// `PersisterStateBatchCombiner`), and how a leader folds its own writes.
pub fn combine_batches(
    batches: &[StateBatch],
    newer: &[StateBatch],
    start_offset: i64,
) -> Vec<StateBatch> {
    let mut out: Vec<StateBatch> = batches
        .iter()
        .filter(|b| b.first_offset <= b.last_offset)
        .copied()
        .collect();
    out.sort_by_key(|b| b.first_offset);
    for n in newer.iter().filter(|b| b.first_offset <= b.last_offset) {
        let mut next = Vec::with_capacity(out.len() + 2);
        for b in out {
            if b.last_offset < n.first_offset || b.first_offset > n.last_offset {
                next.push(b);
                continue;
            }
            if b.first_offset < n.first_offset {
                next.push(StateBatch {
                    last_offset: n.first_offset - 1,
                    ..b
                });
            }
            if b.last_offset > n.last_offset {
                next.push(StateBatch {
                    first_offset: n.last_offset + 1,
                    ..b
                });
            }
        }
        next.push(*n);
        next.sort_by_key(|b| b.first_offset);
        out = next;
    }
    let mut joined: Vec<StateBatch> = Vec::with_capacity(out.len());
    for mut b in out {
        if b.last_offset < start_offset {
            continue;
        }
        b.first_offset = b.first_offset.max(start_offset);
        match joined.last_mut() {
            Some(l)
                if l.last_offset + 1 == b.first_offset
                    && l.delivery_state == b.delivery_state
                    && l.delivery_count == b.delivery_count =>
            {
                l.last_offset = b.last_offset
            }
            _ => joined.push(b),
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(first: i64, last: i64, state: i8, count: i16) -> StateBatch {
        StateBatch {
            first_offset: first,
            last_offset: last,
            delivery_state: state,
            delivery_count: count,
        }
    }

    #[test]
    fn newer_batches_win_where_they_overlap_and_the_start_offset_trims() {
        let old = [b(0, 9, 0, 1), b(10, 19, 2, 1)];
        let newer = [b(5, 12, 4, 2)];
        assert_eq!(
            combine_batches(&old, &newer, 0),
            vec![b(0, 4, 0, 1), b(5, 12, 4, 2), b(13, 19, 2, 1)]
        );
        assert_eq!(
            combine_batches(&old, &newer, 7),
            vec![b(7, 12, 4, 2), b(13, 19, 2, 1)]
        );
        // Adjacent runs of one state and count join; a newer one inside an older one splits it.
        assert_eq!(
            combine_batches(&[b(0, 9, 2, 1)], &[b(3, 3, 0, 2), b(3, 3, 2, 1)], 0),
            vec![b(0, 9, 2, 1)]
        );
        assert_eq!(combine_batches(&old, &[], 30), vec![]);
    }
}
