//! One `__share_group_state` partition: the state of the share partitions that hash to it.
//! Each operation checks its request against the state and computes records; the state
//! changes only in [`ShareStateShard::replay`], live and at load alike.
use std::collections::HashMap;

use super::records::{self, ShareGroupOffset, ShareStateRecord, ShareUpdate};
use super::{SharePartitionKey, ShareStateError};
use crate::coordinator::runtime::CoordinatorRecord;
use crate::replica::share_persister::{combine_batches, PersistedState, StateSummary, StateWrite};

const WRITE_UNINITIALIZED: &str = "Write operation on uninitialized share partition not allowed.";
const READ_UNINITIALIZED: &str = "Read operation on uninitialized share partition not allowed.";

#[derive(Debug, Clone)]
struct KeyState {
    offset: ShareGroupOffset,
    /// The highest leader and state epochs seen (fencing).
    leader_epoch: i32,
    state_epoch: i32,
    /// Updates since the last snapshot.
    updates: i32,
    /// Where the last snapshot is in the log: nothing of this key before it is needed.
    snapshot_offset: i64,
}

#[derive(Debug, Default)]
pub struct ShareStateShard {
    states: HashMap<SharePartitionKey, KeyState>,
}

impl ShareStateShard {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Applies one record found at `offset` of the partition.
    pub fn replay(&mut self, offset: i64, record: &CoordinatorRecord) {
        let decoded = match records::decode(record) {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(offset, error = %e, "skipping an undecodable share state record");
                return;
            }
        };
        match decoded {
            ShareStateRecord::Snapshot(key, None) => {
                self.states.remove(&key);
            }
            ShareStateRecord::Snapshot(key, Some(value)) => {
                let (leader_epoch, state_epoch) = match self.states.get(&key) {
                    Some(s) => (
                        s.leader_epoch.max(value.leader_epoch),
                        s.state_epoch.max(value.state_epoch),
                    ),
                    None => (value.leader_epoch, value.state_epoch),
                };
                self.states.insert(
                    key,
                    KeyState {
                        offset: value,
                        leader_epoch,
                        state_epoch,
                        updates: 0,
                        snapshot_offset: offset,
                    },
                );
            }
            ShareStateRecord::Update(key, update) => {
                let Some(s) = self.states.get_mut(&key) else {
                    // An update with no snapshot before it (pruned or foreign): nothing to
                    // apply it to.
                    return;
                };
                let start_offset = if update.start_offset == -1 {
                    s.offset.start_offset
                } else {
                    update.start_offset
                };
                s.offset.state_batches =
                    combine_batches(&s.offset.state_batches, &update.state_batches, start_offset);
                s.offset.start_offset = start_offset;
                if update.leader_epoch != -1 {
                    s.offset.leader_epoch = update.leader_epoch;
                    s.leader_epoch = s.leader_epoch.max(update.leader_epoch);
                }
                if update.delivery_complete_count != -1 {
                    s.offset.delivery_complete_count = update.delivery_complete_count;
                }
                s.updates += 1;
            }
        }
    }

    /// Initialize: a fresh snapshot at `start_offset`, nothing in flight.
    pub fn initialize(
        &self,
        key: &SharePartitionKey,
        state_epoch: i32,
        start_offset: i64,
        now_ms: i64,
    ) -> Result<Vec<CoordinatorRecord>, ShareStateError> {
        check_key(key)?;
        let current = self.states.get(key);
        if state_epoch != -1 && current.is_some_and(|s| s.state_epoch > state_epoch) {
            return Err(ShareStateError::FencedStateEpoch);
        }
        let state = ShareGroupOffset {
            snapshot_epoch: current.map_or(0, |s| s.offset.snapshot_epoch + 1),
            state_epoch,
            leader_epoch: -1,
            start_offset,
            delivery_complete_count: 0,
            create_timestamp: now_ms,
            write_timestamp: now_ms,
            state_batches: Vec::new(),
        };
        Ok(vec![records::snapshot_record(key, &state)])
    }

    /// Read: the state, and an update recording `leader_epoch` when it is newer.
    pub fn read(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
    ) -> Result<(PersistedState, Vec<CoordinatorRecord>), ShareStateError> {
        check_key(key)?;
        let s = self
            .states
            .get(key)
            .ok_or(ShareStateError::Uninitialized(READ_UNINITIALIZED))?;
        if s.leader_epoch > leader_epoch {
            return Err(ShareStateError::FencedLeaderEpoch);
        }
        let state = PersistedState {
            state_epoch: s.offset.state_epoch,
            start_offset: s.offset.start_offset,
            state_batches: s.offset.state_batches.clone(),
        };
        let records = if leader_epoch == -1 || s.leader_epoch == leader_epoch {
            Vec::new()
        } else {
            vec![records::update_record(
                key,
                &ShareUpdate {
                    snapshot_epoch: s.offset.snapshot_epoch,
                    leader_epoch,
                    start_offset: -1,
                    delivery_complete_count: -1,
                    state_batches: Vec::new(),
                },
            )]
        };
        Ok((state, records))
    }

    pub fn read_summary(&self, key: &SharePartitionKey) -> Result<StateSummary, ShareStateError> {
        check_key(key)?;
        let s = self
            .states
            .get(key)
            .ok_or(ShareStateError::Uninitialized(READ_UNINITIALIZED))?;
        Ok(StateSummary {
            state_epoch: s.offset.state_epoch,
            leader_epoch: s.offset.leader_epoch,
            start_offset: s.offset.start_offset,
            delivery_complete_count: s.offset.delivery_complete_count,
        })
    }

    /// Write: an update, or a snapshot of the merged state once `updates_per_snapshot`
    /// updates followed the last one.
    pub fn write(
        &self,
        write: &StateWrite,
        updates_per_snapshot: i32,
        now_ms: i64,
    ) -> Result<Vec<CoordinatorRecord>, ShareStateError> {
        let key = &write.key;
        check_key(key)?;
        let s = self
            .states
            .get(key)
            .ok_or(ShareStateError::Uninitialized(WRITE_UNINITIALIZED))?;
        if write.leader_epoch != -1 && s.leader_epoch > write.leader_epoch {
            return Err(ShareStateError::FencedLeaderEpoch);
        }
        if write.state_epoch != -1 && s.state_epoch > write.state_epoch {
            return Err(ShareStateError::FencedStateEpoch);
        }
        let leader_epoch = if write.leader_epoch == -1 {
            s.offset.leader_epoch
        } else {
            write.leader_epoch
        };
        // In the order given: a later batch wins where two overlap.
        let batches = &write.state_batches;
        if s.updates >= updates_per_snapshot {
            let start_offset = if write.start_offset == -1 {
                s.offset.start_offset
            } else {
                write.start_offset
            };
            let state = ShareGroupOffset {
                snapshot_epoch: s.offset.snapshot_epoch + 1,
                state_epoch: s.offset.state_epoch,
                leader_epoch,
                start_offset,
                delivery_complete_count: write.delivery_complete_count,
                create_timestamp: now_ms,
                write_timestamp: now_ms,
                state_batches: combine_batches(&s.offset.state_batches, batches, start_offset),
            };
            return Ok(vec![records::snapshot_record(key, &state)]);
        }
        Ok(vec![records::update_record(
            key,
            &ShareUpdate {
                snapshot_epoch: s.offset.snapshot_epoch,
                leader_epoch,
                start_offset: write.start_offset,
                delivery_complete_count: write.delivery_complete_count,
                state_batches: combine_batches(&[], batches, write.start_offset.max(0)),
            },
        )])
    }

    /// Delete: a tombstone for each key that has state.
    pub fn delete(&self, keys: &[SharePartitionKey]) -> Vec<CoordinatorRecord> {
        keys.iter()
            .filter(|k| self.states.contains_key(*k))
            .map(records::tombstone)
            .collect()
    }

    /// The offset below which this partition's log holds nothing the state needs: the
    /// oldest of the keys' last snapshots, or `end_offset` when no key is left.
    pub fn redundant_offset(&self, end_offset: i64) -> i64 {
        self.states
            .values()
            .map(|s| s.snapshot_offset)
            .min()
            .unwrap_or(end_offset)
    }
}

fn check_key(key: &SharePartitionKey) -> Result<(), ShareStateError> {
    if key.partition < 0 {
        return Err(ShareStateError::InvalidRequest(
            "The partition id cannot be a negative number.".to_string(),
        ));
    }
    Ok(())
}
