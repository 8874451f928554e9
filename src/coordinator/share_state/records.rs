//! `__share_group_state` records in Kafka's formats (`ShareCoordinatorRecordHelpers`): the key
//! is its record type (0 ShareSnapshot, 1 ShareUpdate) and then (group, topic id, partition);
//! values are version 0. A share partition's state is deleted with a tombstone on its
//! ShareSnapshot key.
use bytes::{Buf, Bytes};

use super::{SharePartitionKey, StateBatch};
use crate::coordinator::consumer::records::{decode_value, prefixed, value_bytes};
use crate::coordinator::runtime::CoordinatorRecord;
use crate::protocol::codec::{Decode, DecodeError};
use crate::protocol::internal_records::share_snapshot_key::ShareSnapshotKey;
use crate::protocol::internal_records::share_snapshot_value::{
    ShareSnapshotValue, StateBatch as SnapshotBatch,
};
use crate::protocol::internal_records::share_update_key::ShareUpdateKey;
use crate::protocol::internal_records::share_update_value::{
    ShareUpdateValue, StateBatch as UpdateBatch,
};

/// A state batch as another of the generated batch types (they share their four fields).
macro_rules! batch_as {
    ($b:expr, $T:ident { $($rest:tt)* }) => {
        $T {
            first_offset: $b.first_offset,
            last_offset: $b.last_offset,
            delivery_state: $b.delivery_state,
            delivery_count: $b.delivery_count,
            $($rest)*
        }
    };
}

pub const SHARE_SNAPSHOT_KEY_TYPE: i16 = 0;
pub const SHARE_UPDATE_KEY_TYPE: i16 = 1;

/// The whole state of a share partition (Kafka's `ShareGroupOffset`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupOffset {
    pub snapshot_epoch: i32,
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub create_timestamp: i64,
    pub write_timestamp: i64,
    pub state_batches: Vec<StateBatch>,
}

/// A change since the last snapshot; -1 leaves the leader epoch or start offset as it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareUpdate {
    pub snapshot_epoch: i32,
    pub leader_epoch: i32,
    pub start_offset: i64,
    pub delivery_complete_count: i32,
    pub state_batches: Vec<StateBatch>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareStateRecord {
    /// `None`: the tombstone that deletes the share partition's state.
    Snapshot(SharePartitionKey, Option<ShareGroupOffset>),
    Update(SharePartitionKey, ShareUpdate),
}

fn snapshot_key(key: &SharePartitionKey) -> Bytes {
    prefixed(
        SHARE_SNAPSHOT_KEY_TYPE,
        &ShareSnapshotKey {
            group_id: key.group_id.clone(),
            topic_id: key.topic_id,
            partition: key.partition,
            ..Default::default()
        },
    )
}

pub fn snapshot_record(key: &SharePartitionKey, state: &ShareGroupOffset) -> CoordinatorRecord {
    CoordinatorRecord {
        key: snapshot_key(key),
        value: value_bytes(&ShareSnapshotValue {
            snapshot_epoch: state.snapshot_epoch,
            state_epoch: state.state_epoch,
            leader_epoch: state.leader_epoch,
            start_offset: state.start_offset,
            delivery_complete_count: state.delivery_complete_count,
            create_timestamp: state.create_timestamp,
            write_timestamp: state.write_timestamp,
            state_batches: state
                .state_batches
                .iter()
                .map(|b| {
                    batch_as!(
                        b,
                        SnapshotBatch {
                            ..Default::default()
                        }
                    )
                })
                .collect(),
            ..Default::default()
        }),
    }
}

pub fn update_record(key: &SharePartitionKey, update: &ShareUpdate) -> CoordinatorRecord {
    CoordinatorRecord {
        key: prefixed(
            SHARE_UPDATE_KEY_TYPE,
            &ShareUpdateKey {
                group_id: key.group_id.clone(),
                topic_id: key.topic_id,
                partition: key.partition,
                ..Default::default()
            },
        ),
        value: value_bytes(&ShareUpdateValue {
            snapshot_epoch: update.snapshot_epoch,
            leader_epoch: update.leader_epoch,
            start_offset: update.start_offset,
            delivery_complete_count: update.delivery_complete_count,
            state_batches: update
                .state_batches
                .iter()
                .map(|b| {
                    batch_as!(
                        b,
                        UpdateBatch {
                            ..Default::default()
                        }
                    )
                })
                .collect(),
            ..Default::default()
        }),
    }
}

pub fn tombstone(key: &SharePartitionKey) -> CoordinatorRecord {
    CoordinatorRecord {
        key: snapshot_key(key),
        value: None,
    }
}

/// A record of `__share_group_state`; `Ok(None)` for a type this version does not know.
pub fn decode(record: &CoordinatorRecord) -> Result<Option<ShareStateRecord>, DecodeError> {
    let mut key = record.key.clone();
    if key.remaining() < 2 {
        return Err(DecodeError::UnexpectedEof);
    }
    let key_type = key.get_i16();
    Ok(Some(match key_type {
        SHARE_SNAPSHOT_KEY_TYPE => {
            let k = ShareSnapshotKey::decode(&mut key, key_type)?;
            let key = SharePartitionKey {
                group_id: k.group_id,
                topic_id: k.topic_id,
                partition: k.partition,
            };
            let value =
                decode_value::<ShareSnapshotValue>(&record.value)?.map(|v| ShareGroupOffset {
                    snapshot_epoch: v.snapshot_epoch,
                    state_epoch: v.state_epoch,
                    leader_epoch: v.leader_epoch,
                    start_offset: v.start_offset,
                    delivery_complete_count: v.delivery_complete_count,
                    create_timestamp: v.create_timestamp,
                    write_timestamp: v.write_timestamp,
                    state_batches: v
                        .state_batches
                        .iter()
                        .map(|b| batch_as!(b, StateBatch {}))
                        .collect(),
                });
            ShareStateRecord::Snapshot(key, value)
        }
        SHARE_UPDATE_KEY_TYPE => {
            let k = ShareUpdateKey::decode(&mut key, key_type)?;
            let key = SharePartitionKey {
                group_id: k.group_id,
                topic_id: k.topic_id,
                partition: k.partition,
            };
            // An update is never deleted on its own; a null value carries nothing.
            let Some(v) = decode_value::<ShareUpdateValue>(&record.value)? else {
                return Ok(None);
            };
            ShareStateRecord::Update(
                key,
                ShareUpdate {
                    snapshot_epoch: v.snapshot_epoch,
                    leader_epoch: v.leader_epoch,
                    start_offset: v.start_offset,
                    delivery_complete_count: v.delivery_complete_count,
                    state_batches: v
                        .state_batches
                        .iter()
                        .map(|b| batch_as!(b, StateBatch {}))
                        .collect(),
                },
            )
        }
        _ => return Ok(None),
    }))
}
