//! The share partitions this broker leads (Kafka's `SharePartitionManager`): one
//! [`SharePartition`] per (share group, topic, partition), created at a group's first fetch
//! from the partition, and the share sessions of the members reading them.
//!
//! Acquisition reads the partition's log from the share partition's next fetch offset (the
//! first available in-flight record, else its end offset) up to the high watermark, or the
//! last stable offset for `share.isolation.level=read_committed`; transaction markers, and for
//! read_committed the records of aborted transactions, are passed over as gaps and never
//! handed out. The records returned are the whole batches that hold the acquired offsets; the
//! client keeps only the acquired ones.
//!
//! A share partition is kept for the leader epoch it was created in. It is loaded from its
//! durable state (the [`SharePersister`]) by the first fetch in that epoch, or initialized
//! from `share.auto.offset.reset` when it has none; what changed is written before an
//! acknowledgement is answered, so an acknowledged record never comes back after a restart
//! or failover, and an acquired one does (it was never persisted as acquired). Writes of one
//! share partition go out one at a time, each carrying every change made before it.
use std::collections::HashMap;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use parking_lot::Mutex;

use super::partition::{Isolation, Partition};
use super::share_partition::{
    AcknowledgeType, AcquireMode, AcquiredRange, SharePartition, SharePartitionConfig,
};
use super::share_persister::{SharePartitionKey, SharePersister, StateSummary, StateWrite};
use super::share_sessions::ShareSessionCache;
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;

/// Where a new share partition starts (`share.auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareStartAt {
    Earliest,
    Latest,
    /// The first record at or after this timestamp (`by_duration`).
    Timestamp(i64),
}

/// A share group's settings for its share partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareSettings {
    pub record_lock_duration_ms: i64,
    pub delivery_count_limit: u16,
    pub max_record_locks: i64,
    pub start_at: ShareStartAt,
    pub read_committed: bool,
}

/// The records an acknowledgement changed, as they were; empty when it changed nothing.
#[derive(Debug, Default)]
pub struct AckUndo(Vec<(i64, super::share_partition::InFlight)>);

impl AckUndo {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What one fetch acquired from one partition.
#[derive(Debug, Clone, Default)]
pub struct Acquired {
    pub records: Bytes,
    pub ranges: Vec<AcquiredRange>,
}

type Key = (String, Uuid, i32);

/// One share partition's lag (KIP-932: records between the start offset and the high
/// watermark not yet acknowledged or archived) and in-flight window size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareLag {
    pub group_id: String,
    pub topic: String,
    pub partition: i32,
    pub lag: i64,
    pub in_flight: i64,
}

struct Entry {
    partition: Arc<Partition>,
    leader_epoch: i32,
    /// The durable state's epoch (bumped when the offsets are altered).
    state_epoch: i32,
    share: SharePartition,
    /// When a fetch or an acknowledgement last used it.
    last_used_ms: i64,
    /// Held while a write is under way: writes go out in order.
    writing: Arc<tokio::sync::Mutex<()>>,
}

impl Entry {
    fn new(partition: &Arc<Partition>, state_epoch: i32, share: SharePartition) -> Self {
        Entry {
            partition: partition.clone(),
            leader_epoch: partition.leader_epoch(),
            state_epoch,
            share,
            // Kept until its first use (the fetch that loaded it acquires at once).
            last_used_ms: i64::MAX,
            writing: Arc::new(tokio::sync::Mutex::new(())),
        }
    }
}

/// The share partitions and share sessions of this broker.
pub struct SharePartitionManager {
    partitions: Mutex<HashMap<Key, Arc<Mutex<Entry>>>>,
    sessions: Mutex<ShareSessionCache>,
    persister: Arc<dyn SharePersister>,
    /// One load at a time, so two first fetches never both initialize a share partition.
    loading: tokio::sync::Mutex<()>,
    metrics: crate::metrics::ShareGroupMetrics,
}

impl std::fmt::Debug for SharePartitionManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharePartitionManager")
            .field("partitions", &self.partitions.lock().len())
            .finish()
    }
}

/// One batch of a record set: (first offset, last offset, its bytes' range, whether it is a
/// control batch, whether it is transactional, producer id).
struct BatchSpan {
    first: i64,
    last: i64,
    bytes: std::ops::Range<usize>,
    control: bool,
    transactional: bool,
    producer_id: i64,
}

/// The batches of a record set as the log returned it (whole batches, v2 format).
fn batches(records: &Bytes) -> Vec<BatchSpan> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while records.len() - at >= 61 {
        let mut h = &records[at..];
        let first = h.get_i64();
        let length = h.get_i32();
        let end = at + 12 + length.max(0) as usize;
        if length < 49 || end > records.len() {
            break;
        }
        let head = &records[at..];
        let attributes = i16::from_be_bytes([head[21], head[22]]);
        let last_delta = i32::from_be_bytes([head[23], head[24], head[25], head[26]]);
        let producer_id = i64::from_be_bytes(head[43..51].try_into().unwrap_or([0xff; 8]));
        out.push(BatchSpan {
            first,
            last: first + last_delta as i64,
            bytes: at..end,
            control: attributes & 0x20 != 0,
            transactional: attributes & 0x10 != 0,
            producer_id,
        });
        at = end;
    }
    out
}

fn state_key(group_id: &str, topic_id: Uuid, partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group_id: group_id.to_string(),
        topic_id,
        partition,
    }
}

/// Where a share partition with no durable state starts (`share.auto.offset.reset`).
fn reset_offset(partition: &Partition, settings: &ShareSettings) -> i64 {
    match settings.start_at {
        ShareStartAt::Earliest => partition.log_start_offset(),
        ShareStartAt::Latest => {
            if settings.read_committed {
                partition.last_stable_offset()
            } else {
                partition.high_watermark()
            }
        }
        ShareStartAt::Timestamp(ts) => match partition.log.offset_for_timestamp(ts) {
            Ok(Some((offset, _))) => offset,
            _ => partition.high_watermark(),
        },
    }
}

/// A fenced write or read means another leader or an offset reset owns the state now.
fn is_fenced(code: ErrorCode) -> bool {
    code == ErrorCode::FENCED_LEADER_EPOCH || code == ErrorCode::FENCED_STATE_EPOCH
}

impl SharePartitionManager {
    pub fn new(max_sessions: usize, persister: Arc<dyn SharePersister>) -> Self {
        SharePartitionManager {
            partitions: Mutex::new(HashMap::new()),
            sessions: Mutex::new(ShareSessionCache::new(max_sessions)),
            persister,
            loading: tokio::sync::Mutex::new(()),
            metrics: Default::default(),
        }
    }

    pub fn with_metrics(mut self, metrics: crate::metrics::ShareGroupMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// The share sessions (ShareFetch and ShareAcknowledge epochs).
    pub fn sessions(&self) -> parking_lot::MutexGuard<'_, ShareSessionCache> {
        self.sessions.lock()
    }

    /// The share partition of `group_id` on `partition`, if it was loaded in the partition's
    /// current leader epoch.
    fn current(
        &self,
        group_id: &str,
        topic_id: Uuid,
        partition: &Arc<Partition>,
    ) -> Option<Arc<Mutex<Entry>>> {
        let key = (group_id.to_string(), topic_id, partition.index);
        let e = self.partitions.lock().get(&key).cloned()?;
        let fresh = {
            let e = e.lock();
            e.leader_epoch == partition.leader_epoch() && Arc::ptr_eq(&e.partition, partition)
        };
        fresh.then_some(e)
    }

    /// Makes sure `group_id`'s share partition of `partition` is loaded in this leader epoch:
    /// read from its durable state (recording this leader's epoch, which fences the previous
    /// leader), or initialized from `share.auto.offset.reset` when it has none.
    pub async fn load(
        &self,
        group_id: &str,
        topic_id: Uuid,
        partition: &Arc<Partition>,
        settings: &ShareSettings,
    ) -> Result<(), ErrorCode> {
        if self.current(group_id, topic_id, partition).is_some() {
            return Ok(());
        }
        let _one_at_a_time = self.loading.lock().await;
        if self.current(group_id, topic_id, partition).is_some() {
            return Ok(());
        }
        let epoch = partition.leader_epoch();
        let key = state_key(group_id, topic_id, partition.index);
        let (state_epoch, share) = match self.persister.read(key.clone(), epoch).await? {
            Some(state) => (
                state.state_epoch,
                SharePartition::from_state(
                    config_of(settings),
                    state.start_offset,
                    &state.state_batches,
                ),
            ),
            None => {
                let start = reset_offset(partition, settings);
                self.persister.initialize(key, 0, start).await?;
                (0, SharePartition::new(config_of(settings), start))
            }
        };
        self.partitions.lock().insert(
            (group_id.to_string(), topic_id, partition.index),
            Arc::new(Mutex::new(Entry::new(partition, state_epoch, share))),
        );
        Ok(())
    }

    /// Drops `group_id`'s share partition here if its durable state moved on without it (a
    /// new state epoch: AlterShareGroupOffsets; or no state: deleted), so the next fetch loads
    /// what the state says. A share partition with records in flight is kept (the group is
    /// not empty, so its offsets cannot have been altered).
    pub async fn revalidate(&self, group_id: &str, topic_id: Uuid, partition: i32) {
        let key = (group_id.to_string(), topic_id, partition);
        let Some(entry) = self.partitions.lock().get(&key).cloned() else {
            return;
        };
        let (state_epoch, busy) = {
            let e = entry.lock();
            (
                e.state_epoch,
                e.share.has_acquired() || e.share.has_changes(),
            )
        };
        if busy {
            return;
        }
        let stale = match self
            .persister
            .read_summary(state_key(group_id, topic_id, partition))
            .await
        {
            Ok(Some(s)) => s.state_epoch != state_epoch,
            Ok(None) => true,
            Err(_) => false,
        };
        if stale {
            let mut map = self.partitions.lock();
            if map.get(&key).is_some_and(|e| Arc::ptr_eq(e, &entry)) {
                map.remove(&key);
            }
        }
    }

    /// Writes what changed in `group_id`'s share partition up to now, and returns once it is
    /// durable (at once if nothing is pending). A fenced write drops the share partition, so
    /// the next fetch loads it again from the state that fenced it.
    pub async fn persist(
        &self,
        group_id: &str,
        topic_id: Uuid,
        partition: i32,
    ) -> Result<(), ErrorCode> {
        let key = (group_id.to_string(), topic_id, partition);
        let Some(entry) = self.partitions.lock().get(&key).cloned() else {
            return Ok(());
        };
        let writing = entry.lock().writing.clone();
        // Whatever an earlier write took is durable once it returns, or given back.
        let _in_order = writing.lock().await;
        let (write, changes) = {
            let mut e = entry.lock();
            if !e.share.has_changes() {
                return Ok(());
            }
            let changes = e.share.take_changes();
            let write = StateWrite {
                key: state_key(group_id, topic_id, partition),
                state_epoch: e.state_epoch,
                leader_epoch: e.leader_epoch,
                start_offset: changes.start_offset,
                delivery_complete_count: e.share.delivery_complete_count(),
                state_batches: changes.state_batches.clone(),
            };
            (write, changes)
        };
        match self.persister.write(write).await {
            Ok(()) => Ok(()),
            Err(code) => {
                entry.lock().share.restore_changes(changes);
                if is_fenced(code) {
                    let mut map = self.partitions.lock();
                    if map.get(&key).is_some_and(|e| Arc::ptr_eq(e, &entry)) {
                        map.remove(&key);
                    }
                }
                Err(code)
            }
        }
    }

    /// Forgets share partitions no one used for `idle_ms` that hold nothing in flight, have
    /// nothing left to write and no lag: their state is durable, and a later fetch loads it
    /// again. One with lag stays, so the lag metric still shows a group whose consumers
    /// stopped.
    pub fn evict_idle(&self, now_ms: i64, idle_ms: i64) -> usize {
        let mut map = self.partitions.lock();
        let before = map.len();
        map.retain(|_, e| {
            let e = e.lock();
            now_ms.saturating_sub(e.last_used_ms) < idle_ms
                || e.share.has_acquired()
                || e.share.has_changes()
                || e.share.lag(e.partition.high_watermark()) > 0
        });
        before - map.len()
    }

    /// Lag and in-flight window of every share partition this broker leads and has loaded,
    /// sorted by group, topic and partition (the scrape's share-lag series).
    pub fn lags(&self) -> Vec<ShareLag> {
        let entries: Vec<(Key, Arc<Mutex<Entry>>)> = self
            .partitions
            .lock()
            .iter()
            .map(|(k, e)| (k.clone(), e.clone()))
            .collect();
        let mut out: Vec<ShareLag> = entries
            .into_iter()
            .filter_map(|((group_id, _, partition), entry)| {
                let e = entry.lock();
                let p = &e.partition;
                if !p.is_leader() || p.leader_epoch() != e.leader_epoch {
                    return None;
                }
                Some(ShareLag {
                    group_id,
                    topic: p.topic.clone(),
                    partition,
                    lag: e.share.lag(p.high_watermark()),
                    in_flight: e.share.in_flight_count() as i64,
                })
            })
            .collect();
        out.sort_by(|a, b| {
            (&a.group_id, &a.topic, a.partition).cmp(&(&b.group_id, &b.topic, b.partition))
        });
        out
    }

    /// Writes every share partition with changes no request waits on (lock expiries,
    /// releases, deliveries), so they survive a failover too.
    pub async fn persist_all(&self) {
        let pending: Vec<Key> = self
            .partitions
            .lock()
            .iter()
            .filter(|(_, e)| e.lock().share.has_changes())
            .map(|(k, _)| k.clone())
            .collect();
        for (group_id, topic_id, partition) in pending {
            if let Err(code) = self.persist(&group_id, topic_id, partition).await {
                tracing::debug!(%group_id, partition, ?code, "share partition state not written");
            }
        }
    }

    /// Acquires records of `partition` for `member_id`: at most about `max_records` (exactly,
    /// in `RecordLimit` mode) and `max_bytes` (the first batch whole, as Fetch does).
    #[allow(clippy::too_many_arguments)]
    pub fn acquire(
        &self,
        group_id: &str,
        member_id: &str,
        topic_id: Uuid,
        partition: &Arc<Partition>,
        settings: &ShareSettings,
        max_records: i64,
        mode: AcquireMode,
        max_bytes: usize,
        now_ms: i64,
    ) -> Result<Acquired, ErrorCode> {
        let Some(entry) = self.current(group_id, topic_id, partition) else {
            // Not loaded (yet, or fenced meanwhile): the fetch loads it first.
            return Ok(Acquired::default());
        };
        let mut e = entry.lock();
        e.last_used_ms = now_ms;
        e.share.set_config(config_of(settings));
        e.share
            .update_log_start_offset(partition.log_start_offset());
        let expired = e.share.expire_locks(now_ms);
        self.metrics.lock_expirations.inc_by(expired as i64);
        self.count_limit_archived(&mut e.share);
        let Some(from) = e.share.next_fetch_offset() else {
            return Ok(Acquired::default());
        };
        let isolation = if settings.read_committed {
            Isolation::ReadCommitted
        } else {
            Isolation::ReadUncommitted
        };
        let data = match partition.read(from, max_bytes, isolation, true) {
            Ok(d) => d,
            Err(super::PartitionError::OffsetOutOfRange { .. }) => return Ok(Acquired::default()),
            Err(e) => return Err(ErrorCode::from(&e)),
        };
        let spans = batches(&data.records);
        let aborted = if settings.read_committed && spans.iter().any(|b| b.transactional) {
            let upper = spans.last().map_or(from, |b| b.last + 1);
            partition.aborted_transactions(from, upper)
        } else {
            Vec::new()
        };
        let mut ranges: Vec<AcquiredRange> = Vec::new();
        let mut kept: Option<std::ops::Range<usize>> = None;
        let mut taken: i64 = 0;
        let mut cursor = from;
        for b in &spans {
            if b.first > cursor {
                // Offsets the log no longer holds (compacted away) inside the window.
                e.share.gap(cursor, b.first - 1);
            }
            cursor = cursor.max(b.last + 1);
            let is_aborted = b.transactional
                && aborted.iter().any(|a| {
                    a.producer_id == b.producer_id
                        && a.first_offset <= b.first
                        && b.last < a.last_offset
                });
            if b.control || is_aborted {
                e.share.skip(b.first, b.last);
                continue;
            }
            if taken >= max_records {
                break;
            }
            let got = e.share.acquire(
                member_id,
                &[(b.first, b.last)],
                max_records - taken,
                mode,
                now_ms,
            );
            if got.is_empty() {
                continue;
            }
            taken += got
                .iter()
                .map(|r| r.last_offset - r.first_offset + 1)
                .sum::<i64>();
            kept = Some(match kept {
                None => b.bytes.clone(),
                Some(k) => k.start..b.bytes.end,
            });
            for r in &got {
                let n = r.last_offset - r.first_offset + 1;
                self.metrics.records_acquired.inc_by(n);
                if r.delivery_count > 1 {
                    self.metrics.records_redelivered.inc_by(n);
                }
            }
            merge_ranges(&mut ranges, got);
        }
        Ok(Acquired {
            records: kept.map_or_else(Bytes::new, |k| data.records.slice(k)),
            ranges,
        })
    }

    /// Applies `member_id`'s acknowledgements to its records of one partition: each batch
    /// (first offset, last offset, types) all or nothing, the first failure answered.
    pub fn acknowledge(
        &self,
        group_id: &str,
        member_id: &str,
        topic_id: Uuid,
        partition_index: i32,
        batches: &[(i64, i64, Vec<AcknowledgeType>)],
        now_ms: i64,
    ) -> (Result<(), ErrorCode>, AckUndo) {
        let key = (group_id.to_string(), topic_id, partition_index);
        let Some(entry) = self.partitions.lock().get(&key).cloned() else {
            // Nothing was ever acquired here: no record can be held by the member.
            return (Err(ErrorCode::INVALID_RECORD_STATE), AckUndo::default());
        };
        let mut e = entry.lock();
        e.last_used_ms = now_ms;
        let start_before = e.share.start_offset();
        let mut result = Ok(());
        let mut released = false;
        let mut undo = AckUndo::default();
        for (first, last, types) in batches {
            match e
                .share
                .acknowledge_undoable(member_id, *first, *last, types, now_ms)
            {
                Ok(before) => {
                    for (offset, _) in &before {
                        let kind = if types.len() == 1 {
                            types[0]
                        } else {
                            types[(offset - first) as usize]
                        };
                        match kind {
                            AcknowledgeType::Accept => self.metrics.records_accepted.inc(),
                            AcknowledgeType::Release => self.metrics.records_released.inc(),
                            AcknowledgeType::Reject => self.metrics.records_rejected.inc(),
                            AcknowledgeType::Gap | AcknowledgeType::Renew => 0,
                        };
                    }
                    undo.0.extend(before)
                }
                Err(code) => {
                    if result.is_ok() {
                        result = Err(code);
                    }
                    continue;
                }
            }
            released |= types.contains(&AcknowledgeType::Release);
        }
        self.count_limit_archived(&mut e.share);
        if released || e.share.start_offset() != start_before {
            // Members parked on this partition may now get the released records, or records
            // past a window that had reached `max_record_locks` (Kafka completes its delayed
            // share fetches when the start offset moves). Without this a member that acked
            // took the freed room itself on its next fetch while the others slept out their
            // max wait.
            e.partition.wake_waiters();
        }
        (result, undo)
    }

    fn count_limit_archived(&self, share: &mut SharePartition) {
        let n = share.take_limit_archived();
        if n > 0 {
            self.metrics.records_archived_at_limit.inc_by(n as i64);
        }
    }

    /// Takes back acknowledgements whose write failed (see [`SharePartition::undo`]).
    pub fn undo(&self, group_id: &str, topic_id: Uuid, partition: i32, undo: AckUndo) {
        let key = (group_id.to_string(), topic_id, partition);
        if let Some(entry) = self.partitions.lock().get(&key).cloned() {
            entry.lock().share.undo(undo.0);
        }
    }

    /// Releases what `member_id` of `group_id` holds on every partition (the member left, or
    /// closed its session).
    pub fn release_member(&self, group_id: &str, member_id: &str) {
        let entries: Vec<Arc<Mutex<Entry>>> = self
            .partitions
            .lock()
            .iter()
            .filter(|((g, _, _), _)| g == group_id)
            .map(|(_, e)| e.clone())
            .collect();
        for entry in entries {
            let mut e = entry.lock();
            if e.share.acquired_by(member_id) > 0 {
                e.share.release_member(member_id);
                self.count_limit_archived(&mut e.share);
                e.partition.wake_waiters();
            }
        }
    }

    /// A connection closed: the sessions it carried end and their members' records are
    /// released (Kafka's share-session disconnect listener), so a killed consumer's records
    /// go to the others at once rather than at their lock timeout.
    pub fn connection_closed(&self, connection_id: u64) {
        let gone = self.sessions.lock().remove_connection(connection_id);
        for (group_id, member_id) in gone {
            self.release_member(&group_id, &member_id);
        }
    }

    /// The member left its group: its session goes and its records are released.
    pub fn member_left(&self, group_id: &str, member_id: &str) {
        self.sessions.lock().remove(group_id, member_id);
        self.release_member(group_id, member_id);
    }

    /// The earliest acquisition-lock deadline among `group_id`'s share partitions of
    /// `partitions`, so a waiting fetch wakes when records come back.
    pub fn next_lock_deadline_ms(&self, group_id: &str, partitions: &[(Uuid, i32)]) -> Option<i64> {
        let map = self.partitions.lock();
        partitions
            .iter()
            .filter_map(|(t, p)| map.get(&(group_id.to_string(), *t, *p)))
            .filter_map(|e| e.lock().share.next_lock_deadline_ms())
            .min()
    }

    /// (start offset, lag at the high watermark) of a group's share partition, if it exists.
    pub fn describe(&self, group_id: &str, topic_id: Uuid, partition: i32) -> Option<(i64, i64)> {
        let entry = self
            .partitions
            .lock()
            .get(&(group_id.to_string(), topic_id, partition))
            .cloned()?;
        let e = entry.lock();
        let hw = e.partition.high_watermark();
        Some((e.share.start_offset(), e.share.lag(hw)))
    }

    /// The (topic id, partition) of every share partition `group_id` has here.
    pub fn group_partitions(&self, group_id: &str) -> Vec<(Uuid, i32)> {
        let mut out: Vec<(Uuid, i32)> = self
            .partitions
            .lock()
            .keys()
            .filter(|(g, _, _)| g == group_id)
            .map(|(_, t, p)| (*t, *p))
            .collect();
        out.sort();
        out
    }

    /// AlterShareGroupOffsets: the durable state starts again at `start_offset`, nothing in
    /// flight, at a new state epoch that fences a leader still writing the old one; a share
    /// partition loaded here is dropped, so its next fetch reads the new state.
    pub async fn alter_start_offset(
        &self,
        group_id: &str,
        topic_id: Uuid,
        partition: i32,
        start_offset: i64,
    ) -> Result<(), ErrorCode> {
        let key = state_key(group_id, topic_id, partition);
        let state_epoch = match self.persister.read_summary(key.clone()).await? {
            Some(s) => s.state_epoch.saturating_add(1),
            None => 0,
        };
        self.persister
            .initialize(key, state_epoch, start_offset)
            .await?;
        self.partitions
            .lock()
            .remove(&(group_id.to_string(), topic_id, partition));
        Ok(())
    }

    /// DeleteShareGroupOffsets, DeleteGroups, or a reset to the policy: the durable state of
    /// `group_id`'s share partitions of `partitions` goes, and so do those loaded here; the
    /// next fetch starts them from `share.auto.offset.reset`.
    pub async fn delete_state(
        &self,
        group_id: &str,
        partitions: &[(Uuid, i32)],
    ) -> Result<(), ErrorCode> {
        {
            let mut map = self.partitions.lock();
            for (t, p) in partitions {
                map.remove(&(group_id.to_string(), *t, *p));
            }
        }
        let keys = partitions
            .iter()
            .map(|(t, p)| state_key(group_id, *t, *p))
            .collect();
        self.persister.delete(keys).await
    }

    /// The durable start offset and epochs of a share partition, wherever it is led.
    pub async fn summary(
        &self,
        group_id: &str,
        topic_id: Uuid,
        partition: i32,
    ) -> Result<Option<StateSummary>, ErrorCode> {
        self.persister
            .read_summary(state_key(group_id, topic_id, partition))
            .await
    }
}

fn config_of(s: &ShareSettings) -> SharePartitionConfig {
    SharePartitionConfig {
        record_lock_duration_ms: s.record_lock_duration_ms,
        delivery_count_limit: s.delivery_count_limit,
        max_in_flight: s.max_record_locks,
    }
}

/// Appends `got` to `ranges`, joining a range that continues the last one.
fn merge_ranges(ranges: &mut Vec<AcquiredRange>, got: Vec<AcquiredRange>) {
    for r in got {
        match ranges.last_mut() {
            Some(l)
                if l.last_offset + 1 == r.first_offset && l.delivery_count == r.delivery_count =>
            {
                l.last_offset = r.last_offset;
            }
            _ => ranges.push(r),
        }
    }
}
