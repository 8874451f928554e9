//! The share-partition state machine of KIP-932 (share groups), kept by a partition's leader
//! for each share group reading it: the share-partition start and end offsets, and between
//! them the in-flight records, each AVAILABLE, ACQUIRED (by one member, until its
//! acquisition lock expires), ACKNOWLEDGED or ARCHIVED, with its delivery count.
//!
//! It follows Kafka's `SharePartition` in behaviour, one record at a time (Kafka keeps
//! batches and splits them on demand; the answers are the same):
//! - A fetch acquires AVAILABLE in-flight records again first, then records past the end
//!   offset, never more than `max_in_flight` (`group.share.partition.max.record.locks`)
//!   records between the start and the end offset, and (record-limit mode, ShareFetch v2)
//!   never more than the fetch's record limit.
//! - Every acquisition counts a delivery. A released record, or one whose lock expired, is
//!   AVAILABLE again until it has been delivered `delivery_count_limit` times; then ARCHIVED.
//! - Only the member holding a record may acknowledge it (ACCEPT, RELEASE, REJECT, or RENEW,
//!   which restarts its lock, KIP-1222); anything else is INVALID_RECORD_STATE and changes
//!   nothing. GAP archives offsets that hold no record (compacted or aborted away).
//! - The start offset moves past every leading ACKNOWLEDGED or ARCHIVED record, and past the
//!   log start offset when retention or DeleteRecords moves it.
//!
//! It is sans-io and clock-free: the caller passes the time, so locks expire under a manual
//! clock in tests and in the deterministic simulation.
use std::collections::{BTreeMap, BTreeSet};

use super::share_persister::{
    StateBatch, DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_ARCHIVED, DELIVERY_STATE_AVAILABLE,
};
use crate::error::ErrorCode;

/// Kafka's `RecordState` ids (as `__share_group_state` stores them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    Available = 0,
    Acquired = 1,
    Acknowledged = 2,
    Archived = 4,
}

/// ShareFetch/ShareAcknowledge acknowledgement types (KIP-932; RENEW from KIP-1222).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcknowledgeType {
    Gap = 0,
    Accept = 1,
    Release = 2,
    Reject = 3,
    Renew = 4,
}

impl AcknowledgeType {
    pub fn from_id(id: i8) -> Option<AcknowledgeType> {
        Some(match id {
            0 => AcknowledgeType::Gap,
            1 => AcknowledgeType::Accept,
            2 => AcknowledgeType::Release,
            3 => AcknowledgeType::Reject,
            4 => AcknowledgeType::Renew,
            _ => return None,
        })
    }
}

/// The group configs a share partition follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartitionConfig {
    /// `share.record.lock.duration.ms`.
    pub record_lock_duration_ms: i64,
    /// `share.delivery.count.limit`.
    pub delivery_count_limit: u16,
    /// `share.partition.max.record.locks`: in-flight records at most.
    pub max_in_flight: i64,
}

impl Default for SharePartitionConfig {
    fn default() -> Self {
        SharePartitionConfig {
            record_lock_duration_ms: 30_000,
            delivery_count_limit: 5,
            max_in_flight: 2_000,
        }
    }
}

/// One in-flight record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub state: RecordState,
    pub delivery_count: u16,
    /// The member holding it while ACQUIRED.
    pub member_id: Option<String>,
    /// When its acquisition lock expires, while ACQUIRED.
    pub lock_deadline_ms: Option<i64>,
}

/// A run of acquired offsets handed to a member, with their delivery count (what ShareFetch
/// answers as `AcquiredRecords`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquiredRange {
    pub first_offset: i64,
    pub last_offset: i64,
    pub delivery_count: u16,
}

/// How a fetch may exceed its record limit (ShareFetch v2's `ShareAcquireMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcquireMode {
    /// Whole batches while under the limit (v1's behaviour): a batch that starts under the
    /// limit is acquired whole.
    BatchOptimized,
    /// Exactly the record limit at most.
    RecordLimit,
}

/// One share group's view of one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartition {
    config: SharePartitionConfig,
    /// The share-partition start offset (SPSO): every record below it is done with.
    start_offset: i64,
    /// The first offset never acquired (SPEO).
    end_offset: i64,
    in_flight: BTreeMap<i64, InFlight>,
    /// Offsets whose state changed since the last [`Self::take_changes`].
    dirty: BTreeSet<i64>,
    /// Whether the start offset moved since the last [`Self::take_changes`].
    start_moved: bool,
    /// Records archived at the delivery limit since the last [`Self::take_limit_archived`].
    limit_archived: u64,
}

/// What changed in a share partition since its last write: the start offset and the runs of
/// offsets at or past it whose state changed, as `__share_group_state` keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateChanges {
    pub start_offset: i64,
    pub state_batches: Vec<StateBatch>,
    pub dirty: Vec<i64>,
}

impl SharePartition {
    /// A share partition starting at `start_offset` (from `share.auto.offset.reset`, or the
    /// durable state) with nothing in flight.
    pub fn new(config: SharePartitionConfig, start_offset: i64) -> Self {
        SharePartition {
            config,
            start_offset,
            end_offset: start_offset,
            in_flight: BTreeMap::new(),
            dirty: BTreeSet::new(),
            start_moved: false,
            limit_archived: 0,
        }
    }

    /// A share partition as its durable state left it: records in the persisted batches keep
    /// their state and delivery count; offsets between the start offset and the last batch
    /// that no batch names were never settled, so they are AVAILABLE again (acquired records
    /// are not persisted as such: a new leader hands them out again, as Kafka's does).
    pub fn from_state(
        config: SharePartitionConfig,
        start_offset: i64,
        batches: &[StateBatch],
    ) -> Self {
        let mut share = SharePartition::new(config, start_offset);
        let end = batches
            .iter()
            .map(|b| b.last_offset + 1)
            .max()
            .unwrap_or(start_offset)
            .max(start_offset);
        for offset in start_offset..end {
            share.in_flight.insert(offset, available(0));
        }
        for b in batches {
            for offset in b.first_offset.max(start_offset)..=b.last_offset {
                let count = b.delivery_count.max(0) as u16;
                let r = match b.delivery_state {
                    DELIVERY_STATE_ACKNOWLEDGED => InFlight {
                        state: RecordState::Acknowledged,
                        ..available(count)
                    },
                    DELIVERY_STATE_ARCHIVED => archived(count),
                    _ => available(count),
                };
                share.in_flight.insert(offset, r);
            }
        }
        share.end_offset = end;
        share.advance_start();
        share.start_moved = false;
        share
    }

    /// Whether anything changed since the last [`Self::take_changes`].
    pub fn has_changes(&self) -> bool {
        self.start_moved || !self.dirty.is_empty()
    }

    /// The changes to persist, and forgets them (give them back with
    /// [`Self::restore_changes`] when the write fails). An acquired record is written as
    /// AVAILABLE with its delivery count: it comes back after a failover.
    pub fn take_changes(&mut self) -> StateChanges {
        let dirty: Vec<i64> = std::mem::take(&mut self.dirty).into_iter().collect();
        self.start_moved = false;
        let mut state_batches: Vec<StateBatch> = Vec::new();
        for &offset in dirty.iter().filter(|o| **o >= self.start_offset) {
            let Some(r) = self.in_flight.get(&offset) else {
                continue;
            };
            let delivery_state = match r.state {
                RecordState::Acknowledged => DELIVERY_STATE_ACKNOWLEDGED,
                RecordState::Archived => DELIVERY_STATE_ARCHIVED,
                RecordState::Available | RecordState::Acquired => DELIVERY_STATE_AVAILABLE,
            };
            let delivery_count = r.delivery_count.min(i16::MAX as u16) as i16;
            match state_batches.last_mut() {
                Some(l)
                    if l.last_offset + 1 == offset
                        && l.delivery_state == delivery_state
                        && l.delivery_count == delivery_count =>
                {
                    l.last_offset = offset
                }
                _ => state_batches.push(StateBatch {
                    first_offset: offset,
                    last_offset: offset,
                    delivery_state,
                    delivery_count,
                }),
            }
        }
        StateChanges {
            start_offset: self.start_offset,
            state_batches,
            dirty,
        }
    }

    /// A write of `changes` failed: they are written again with the next changes.
    pub fn restore_changes(&mut self, changes: StateChanges) {
        self.dirty.extend(changes.dirty);
        self.start_moved = true;
    }

    /// Offsets in the in-flight window at or past `first`, up to `last`, that a log read
    /// showed hold no record (compacted away): archived, never delivered.
    pub fn gap(&mut self, first: i64, last: i64) {
        let last = last.min(self.end_offset - 1);
        if first > last {
            return;
        }
        let mut changed = false;
        for (offset, r) in self.in_flight.range_mut(first..=last) {
            if r.state == RecordState::Available {
                settle(r, RecordState::Archived);
                self.dirty.insert(*offset);
                changed = true;
            }
        }
        if changed {
            self.advance_start();
        }
    }

    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }

    pub fn end_offset(&self) -> i64 {
        self.end_offset
    }

    pub fn record(&self, offset: i64) -> Option<&InFlight> {
        self.in_flight.get(&offset)
    }

    pub fn set_config(&mut self, config: SharePartitionConfig) {
        self.config = config;
    }

    /// Acquires records for `member_id` out of the fetched `batches` (each the first and last
    /// offset of a batch the log returned, in order), as Kafka's `SharePartition.acquire`.
    pub fn acquire(
        &mut self,
        member_id: &str,
        batches: &[(i64, i64)],
        max_records: i64,
        mode: AcquireMode,
        now_ms: i64,
    ) -> Vec<AcquiredRange> {
        self.expire_locks(now_ms);
        let mut taken: Vec<(i64, u16)> = Vec::new();
        'batches: for &(first, last) in batches {
            let batch_start_count = taken.len() as i64;
            if batch_start_count >= max_records {
                break;
            }
            for offset in first.max(self.start_offset)..=last {
                let count = taken.len() as i64;
                let over_limit = match mode {
                    AcquireMode::RecordLimit => count >= max_records,
                    // A batch begun under the limit is taken whole.
                    AcquireMode::BatchOptimized => batch_start_count >= max_records,
                };
                if over_limit {
                    break 'batches;
                }
                if offset > self.end_offset && self.in_flight.is_empty() {
                    // Nothing in flight: a gap before this batch (compaction, markers) is
                    // passed over whole, without an entry per offset.
                    self.start_offset = offset;
                    self.end_offset = offset;
                    self.start_moved = true;
                }
                if offset >= self.end_offset {
                    if offset - self.start_offset >= self.config.max_in_flight {
                        break 'batches;
                    }
                    // Offsets skipped between the end offset and this batch held no
                    // record for this fetch (they are gaps): archived, never delivered.
                    for gap in self.end_offset..offset {
                        self.in_flight.insert(gap, archived(0));
                        self.dirty.insert(gap);
                    }
                    self.in_flight.insert(offset, available(0));
                    self.end_offset = offset + 1;
                }
                let Some(r) = self.in_flight.get_mut(&offset) else {
                    continue;
                };
                if r.state != RecordState::Available {
                    continue;
                }
                r.state = RecordState::Acquired;
                r.delivery_count = r.delivery_count.saturating_add(1);
                r.member_id = Some(member_id.to_string());
                r.lock_deadline_ms =
                    Some(now_ms.saturating_add(self.config.record_lock_duration_ms));
                taken.push((offset, r.delivery_count));
                self.dirty.insert(offset);
            }
        }
        self.advance_start();
        ranges(&taken)
    }

    /// Where the next fetch reads from: the first AVAILABLE in-flight record, else the end
    /// offset; `None` when the in-flight window is full and nothing in it is available.
    pub fn next_fetch_offset(&self) -> Option<i64> {
        if let Some((offset, _)) = self
            .in_flight
            .iter()
            .find(|(_, r)| r.state == RecordState::Available)
        {
            return Some(*offset);
        }
        (self.end_offset - self.start_offset < self.config.max_in_flight).then_some(self.end_offset)
    }

    /// Offsets `first..=last` hold nothing a member may get (a transaction marker, records of
    /// an aborted transaction): the end offset passes over them as archived gaps.
    pub fn skip(&mut self, first: i64, last: i64) {
        // Inside the window (a state read back after a failover): never delivered either.
        self.gap(first, last);
        if last < self.end_offset || first > self.end_offset {
            return;
        }
        if self.in_flight.is_empty() {
            self.start_offset = last + 1;
            self.end_offset = last + 1;
            self.start_moved = true;
            return;
        }
        if last - self.start_offset >= self.config.max_in_flight {
            return;
        }
        for offset in self.end_offset..=last {
            self.in_flight.insert(offset, archived(0));
            self.dirty.insert(offset);
        }
        self.end_offset = last + 1;
        self.advance_start();
    }

    /// Offsets at or past the start offset whose delivery is complete (KIP-1226's
    /// `deliveryCompleteCount`).
    pub fn delivery_complete_count(&self) -> i32 {
        self.in_flight
            .values()
            .filter(|r| matches!(r.state, RecordState::Acknowledged | RecordState::Archived))
            .count()
            .min(i32::MAX as usize) as i32
    }

    /// How many records were archived at the delivery limit since the last call.
    pub fn take_limit_archived(&mut self) -> u64 {
        std::mem::take(&mut self.limit_archived)
    }

    /// Records in the in-flight window, between the start and end offsets, whatever their
    /// state (Kafka's `InFlightMessageCount`).
    pub fn in_flight_count(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether any record is acquired.
    pub fn has_acquired(&self) -> bool {
        self.in_flight
            .values()
            .any(|r| r.state == RecordState::Acquired)
    }

    /// How many records `member_id` holds.
    pub fn acquired_by(&self, member_id: &str) -> usize {
        self.in_flight
            .values()
            .filter(|r| {
                r.state == RecordState::Acquired && r.member_id.as_deref() == Some(member_id)
            })
            .count()
    }

    /// Records between the start offset and `upto` (exclusive) a member may still get or
    /// holds: KIP-932's share-partition lag at `upto` (the high watermark).
    pub fn lag(&self, upto: i64) -> i64 {
        let settled = self
            .in_flight
            .range(..upto)
            .filter(|(_, r)| matches!(r.state, RecordState::Acknowledged | RecordState::Archived))
            .count() as i64;
        (upto - self.start_offset - settled).max(0)
    }

    /// Applies one acknowledgement batch of `member_id` over `first..=last`: `types` holds one
    /// type for the whole range, or one per offset. All or nothing: any offset not ACQUIRED
    /// by the member (GAP aside) makes it INVALID_RECORD_STATE and changes nothing.
    pub fn acknowledge(
        &mut self,
        member_id: &str,
        first: i64,
        last: i64,
        types: &[AcknowledgeType],
        now_ms: i64,
    ) -> Result<(), ErrorCode> {
        self.acknowledge_undoable(member_id, first, last, types, now_ms)
            .map(|_| ())
    }

    /// [`Self::acknowledge`], returning the records as they were before, for [`Self::undo`]
    /// when the acknowledgement could not be made durable.
    pub fn acknowledge_undoable(
        &mut self,
        member_id: &str,
        first: i64,
        last: i64,
        types: &[AcknowledgeType],
        now_ms: i64,
    ) -> Result<Vec<(i64, InFlight)>, ErrorCode> {
        let len = last - first + 1;
        if len <= 0 || !(types.len() == 1 || types.len() as i64 == len) {
            return Err(ErrorCode::INVALID_REQUEST);
        }
        let type_of = |offset: i64| {
            if types.len() == 1 {
                types[0]
            } else {
                types[(offset - first) as usize]
            }
        };
        self.expire_locks(now_ms);
        for offset in first..=last {
            let held = self.in_flight.get(&offset).is_some_and(|r| {
                r.state == RecordState::Acquired && r.member_id.as_deref() == Some(member_id)
            });
            if !held {
                return Err(ErrorCode::INVALID_RECORD_STATE);
            }
        }
        let mut before = Vec::with_capacity(len as usize);
        for offset in first..=last {
            let limit = self.config.delivery_count_limit;
            let lock_ms = self.config.record_lock_duration_ms;
            let Some(r) = self.in_flight.get_mut(&offset) else {
                continue;
            };
            before.push((offset, r.clone()));
            self.dirty.insert(offset);
            match type_of(offset) {
                AcknowledgeType::Accept => settle(r, RecordState::Acknowledged),
                AcknowledgeType::Reject | AcknowledgeType::Gap => settle(r, RecordState::Archived),
                AcknowledgeType::Release => self.limit_archived += release(r, limit) as u64,
                AcknowledgeType::Renew => r.lock_deadline_ms = Some(now_ms.saturating_add(lock_ms)),
            }
        }
        self.advance_start();
        Ok(before)
    }

    /// Puts back records an acknowledgement changed, as they were (`before`, from
    /// [`Self::acknowledge_undoable`]), where no other member acquired them since: its write
    /// failed, so the member still holds them and may acknowledge them again, as Kafka rolls
    /// back an acknowledgement its persister refused. The start offset moves back under them
    /// if it had passed them; records it passes again are settled.
    pub fn undo(&mut self, before: Vec<(i64, InFlight)>) {
        let Some(lowest) = before.iter().map(|(o, _)| *o).min() else {
            return;
        };
        if lowest < self.start_offset {
            for offset in lowest..self.start_offset {
                self.in_flight.entry(offset).or_insert_with(|| archived(0));
            }
            self.start_offset = lowest;
            self.start_moved = true;
        }
        for (offset, was) in before {
            if let Some(r) = self.in_flight.get_mut(&offset) {
                if r.state != RecordState::Acquired {
                    *r = was;
                    self.dirty.insert(offset);
                }
            }
        }
        self.advance_start();
    }

    /// Releases every record `member_id` holds (the member left or its share session
    /// closed), as Kafka's `releaseAcquiredRecords`.
    pub fn release_member(&mut self, member_id: &str) {
        let limit = self.config.delivery_count_limit;
        for (offset, r) in self.in_flight.iter_mut() {
            if r.state == RecordState::Acquired && r.member_id.as_deref() == Some(member_id) {
                self.limit_archived += release(r, limit) as u64;
                self.dirty.insert(*offset);
            }
        }
        self.advance_start();
    }

    /// Makes every record whose acquisition lock expired by `now_ms` AVAILABLE again (or
    /// ARCHIVED at the delivery limit); how many expired.
    pub fn expire_locks(&mut self, now_ms: i64) -> usize {
        let limit = self.config.delivery_count_limit;
        let mut expired = 0;
        for (offset, r) in self.in_flight.iter_mut() {
            if r.state == RecordState::Acquired && r.lock_deadline_ms.is_some_and(|d| d <= now_ms) {
                self.limit_archived += release(r, limit) as u64;
                self.dirty.insert(*offset);
                expired += 1;
            }
        }
        if expired > 0 {
            self.advance_start();
        }
        expired
    }

    /// The earliest lock deadline, so a caller knows when to call [`Self::expire_locks`].
    pub fn next_lock_deadline_ms(&self) -> Option<i64> {
        self.in_flight
            .values()
            .filter(|r| r.state == RecordState::Acquired)
            .filter_map(|r| r.lock_deadline_ms)
            .min()
    }

    /// The log start offset moved (retention, DeleteRecords, compaction): records below it
    /// are gone, whatever their state, and the start offset follows.
    pub fn update_log_start_offset(&mut self, log_start_offset: i64) {
        if log_start_offset <= self.start_offset {
            return;
        }
        self.in_flight = self.in_flight.split_off(&log_start_offset);
        self.start_offset = log_start_offset;
        self.start_moved = true;
        self.end_offset = self.end_offset.max(log_start_offset);
        self.advance_start();
    }

    /// Moves the start offset past the leading records no one will get again.
    fn advance_start(&mut self) {
        let before = self.start_offset;
        while let Some(entry) = self.in_flight.first_entry() {
            if !matches!(
                entry.get().state,
                RecordState::Acknowledged | RecordState::Archived
            ) {
                break;
            }
            let offset = *entry.key();
            entry.remove();
            self.start_offset = offset + 1;
        }
        if self.in_flight.is_empty() {
            self.start_offset = self.start_offset.max(self.end_offset);
        }
        self.start_moved |= self.start_offset != before;
    }
}

fn available(delivery_count: u16) -> InFlight {
    InFlight {
        state: RecordState::Available,
        delivery_count,
        member_id: None,
        lock_deadline_ms: None,
    }
}

fn archived(delivery_count: u16) -> InFlight {
    InFlight {
        state: RecordState::Archived,
        ..available(delivery_count)
    }
}

fn settle(r: &mut InFlight, state: RecordState) {
    r.state = state;
    r.member_id = None;
    r.lock_deadline_ms = None;
}

/// Back to AVAILABLE, or ARCHIVED once delivered `limit` times (then true).
fn release(r: &mut InFlight, limit: u16) -> bool {
    let at_limit = r.delivery_count >= limit;
    let state = if at_limit {
        RecordState::Archived
    } else {
        RecordState::Available
    };
    settle(r, state);
    at_limit
}

/// Consecutive offsets with one delivery count, as ranges.
fn ranges(taken: &[(i64, u16)]) -> Vec<AcquiredRange> {
    let mut out: Vec<AcquiredRange> = Vec::new();
    for &(offset, delivery_count) in taken {
        match out.last_mut() {
            Some(r) if r.last_offset + 1 == offset && r.delivery_count == delivery_count => {
                r.last_offset = offset
            }
            _ => out.push(AcquiredRange {
                first_offset: offset,
                last_offset: offset,
                delivery_count,
            }),
        }
    }
    out
}

#[cfg(test)]
#[path = "share_partition_tests.rs"]
mod tests;
