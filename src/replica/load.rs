//! Rebuilding a partition's producer state when it is opened (Kafka's
//! `UnifiedLog.rebuildProducerState` / `ProducerStateManager.truncateAndReload`): load the
//! newest readable producer snapshot at or below the log end offset, then replay only the
//! batches after it. Replaying an ABORT marker also (re)writes its `.txnindex` entry if the
//! segment's index lacks it, which is how the index of the unflushed tail is rebuilt after a
//! crash. Without a usable snapshot the whole log is replayed.
//!
//! Headers are read in bounded chunks and the log's lock is not held while markers are read.

use crate::protocol::records::batch::BatchHeader;
use crate::protocol::records::control::parse_end_txn_marker_batch;
use crate::storage::{AbortedTxn, PartitionLog};

use super::partition::PartitionError;
use super::producer_state::ProducerStateManager;

/// Headers collected per pass over the log.
const HEADERS_PER_PASS: usize = 4096;

/// How a partition's producer state was obtained at open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProducerStateLoad {
    /// The snapshot loaded, if any.
    pub snapshot_offset: Option<i64>,
    /// Batches replayed after it.
    pub batches_replayed: u64,
}

/// A control batch's marker: (commit, coordinator epoch). Unreadable markers count as
/// commits, so data is never hidden by a marker we cannot read.
fn read_marker(log: &PartitionLog, h: &BatchHeader) -> (bool, i32) {
    match log.read(h.base_offset, h.total_size(), h.last_offset() + 1, true) {
        Ok(data) => match parse_end_txn_marker_batch(
            &data.records[..data.records.len().min(h.total_size())],
        ) {
            Ok(marker) => (marker.commit, marker.coordinator_epoch),
            Err(_) => (true, 0),
        },
        Err(_) => (true, 0),
    }
}

/// Loads the producer state of `log` (snapshot + replay of what follows it).
pub(super) fn load_producer_state(
    log: &PartitionLog,
) -> Result<(ProducerStateManager, ProducerStateLoad), PartitionError> {
    let log_end = log.log_end_offset();
    let (mut producers, mut next, snapshot_offset) = match log.latest_producer_snapshot(log_end)? {
        Some((offset, entries)) => (
            ProducerStateManager::from_snapshot(&entries),
            offset.max(log.log_start_offset()),
            Some(offset),
        ),
        None => (ProducerStateManager::new(), log.log_start_offset(), None),
    };
    if let Some(offset) = snapshot_offset {
        // A snapshot keeps one batch per producer (Kafka's format); the earlier ones of the
        // idempotence window are read back from the segment before the snapshot.
        let bases = log.segment_base_offsets();
        let from = bases
            .iter()
            .rev()
            .find(|&&b| b < offset)
            .copied()
            .unwrap_or(offset)
            .max(log.log_start_offset());
        let mut before = Vec::new();
        log.scan_batches_while(from, &mut |h: &BatchHeader| {
            let go_on = h.base_offset < offset && before.len() < HEADERS_PER_PASS * 4;
            if go_on {
                before.push(*h);
            }
            go_on
        })?;
        producers.backfill_batches(&before);
    }
    let mut stats = ProducerStateLoad {
        snapshot_offset,
        batches_replayed: 0,
    };
    let mut headers = Vec::with_capacity(HEADERS_PER_PASS);
    while next < log_end {
        headers.clear();
        log.scan_batches_while(next, &mut |h: &BatchHeader| {
            headers.push(*h);
            headers.len() < HEADERS_PER_PASS
        })?;
        let Some(last) = headers.last() else { break };
        next = last.last_offset() + 1;
        for h in &headers {
            stats.batches_replayed += 1;
            replay_batch(log, &mut producers, h)?;
        }
    }
    Ok((producers, stats))
}

/// Replays one batch header of `log` into `producers`: a marker's transaction ends, and an
/// ABORT's goes to the `.txnindex` unless it is there already (start-up replay, and a
/// follower's appends of the leader's batches).
pub(super) fn replay_batch(
    log: &PartitionLog,
    producers: &mut ProducerStateManager,
    h: &BatchHeader,
) -> Result<(), PartitionError> {
    if !h.is_control() {
        producers.replay(h, true, 0);
        return Ok(());
    }
    let (commit, coordinator_epoch) = read_marker(log, h);
    if let Some(a) = producers.replay(h, commit, coordinator_epoch) {
        log.index_aborted_txn(&AbortedTxn {
            producer_id: a.producer_id,
            first_offset: a.first_offset,
            last_offset: h.base_offset,
            last_stable_offset: a.other_first_unstable_offset.unwrap_or(h.base_offset + 1),
        })?;
    }
    Ok(())
}
