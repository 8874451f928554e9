//! `__consumer_offsets` keys and values in Kafka's own formats (`GroupCoordinatorRecordHelpers`,
//! `CoordinatorRecordSerde`): the key is an `int16` record type followed by the key struct, the
//! value an `int16` version followed by the value struct, and a tombstone has no value.
//!
//! Written versions follow Kafka 4: `OffsetCommitKey` type 1, `OffsetCommitValue` v3 (v1 when
//! the commit carries an expire timestamp), `GroupMetadataKey` type 2, `GroupMetadataValue` v3.
use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::coordinator::runtime::CoordinatorRecord;
use crate::protocol::codec::{Decode, DecodeError, Encode};
use crate::protocol::internal_records::group_metadata_key::GroupMetadataKey;
use crate::protocol::internal_records::group_metadata_value::GroupMetadataValue;
use crate::protocol::internal_records::offset_commit_key::OffsetCommitKey;
use crate::protocol::internal_records::offset_commit_value::OffsetCommitValue;

/// Record type of the legacy offset commit key (same schema as type 1).
pub const LEGACY_OFFSET_COMMIT_KEY_TYPE: i16 = 0;
/// Record type Kafka 4 writes for offset commits.
pub const OFFSET_COMMIT_KEY_TYPE: i16 = 1;
/// Record type of classic group metadata.
pub const GROUP_METADATA_KEY_TYPE: i16 = 2;
/// `GroupMetadataValue` version Kafka 4 writes.
pub const GROUP_METADATA_VALUE_VERSION: i16 = 3;

/// A committed offset as the coordinator keeps it (Kafka's `OffsetAndMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    pub committed_offset: i64,
    /// `None` is Kafka's `RecordBatch.NO_PARTITION_LEADER_EPOCH` (-1).
    pub leader_epoch: Option<i32>,
    pub metadata: String,
    pub commit_timestamp_ms: i64,
    /// Only set by OffsetCommit v2-4 with an explicit retention time.
    pub expire_timestamp_ms: Option<i64>,
}

/// A decoded `__consumer_offsets` record.
#[derive(Debug, Clone, PartialEq)]
pub enum GroupRecord {
    OffsetCommit {
        key: OffsetCommitKey,
        value: Option<OffsetCommitValue>,
    },
    GroupMetadata {
        key: GroupMetadataKey,
        value: Option<GroupMetadataValue>,
    },
    /// A KIP-848 consumer group record (key types 3-8).
    Consumer(crate::coordinator::consumer::records::ConsumerGroupRecord),
    /// A KIP-932 share group record (key types 10-15).
    Share(crate::coordinator::share::records::ShareGroupRecord),
    /// A record type this coordinator does not handle (streams groups).
    Other { key_type: i16 },
}

fn prefixed(version: i16, body: &dyn Encode, body_version: i16) -> Bytes {
    let mut b = BytesMut::with_capacity(64);
    b.put_i16(version);
    body.encode(&mut b, body_version);
    b.freeze()
}

/// An offset commit record (`newOffsetCommitRecord`).
pub fn offset_commit_record(
    group: &str,
    topic: &str,
    partition: i32,
    offset: &OffsetAndMetadata,
) -> CoordinatorRecord {
    let version = if offset.expire_timestamp_ms.is_some() {
        1
    } else {
        3
    };
    let value = OffsetCommitValue {
        offset: offset.committed_offset,
        leader_epoch: offset.leader_epoch.unwrap_or(-1),
        metadata: offset.metadata.clone(),
        commit_timestamp: offset.commit_timestamp_ms,
        expire_timestamp: offset.expire_timestamp_ms.unwrap_or(-1),
        ..Default::default()
    };
    CoordinatorRecord {
        key: offset_commit_key(group, topic, partition),
        value: Some(prefixed(version, &value, version)),
    }
}

/// An offset commit tombstone.
pub fn offset_commit_tombstone(group: &str, topic: &str, partition: i32) -> CoordinatorRecord {
    CoordinatorRecord {
        key: offset_commit_key(group, topic, partition),
        value: None,
    }
}

fn offset_commit_key(group: &str, topic: &str, partition: i32) -> Bytes {
    let key = OffsetCommitKey {
        group: group.to_string(),
        topic: topic.to_string(),
        partition,
    };
    prefixed(OFFSET_COMMIT_KEY_TYPE, &key, OFFSET_COMMIT_KEY_TYPE)
}

fn group_metadata_key(group: &str) -> Bytes {
    let key = GroupMetadataKey {
        group: group.to_string(),
    };
    prefixed(GROUP_METADATA_KEY_TYPE, &key, GROUP_METADATA_KEY_TYPE)
}

/// A group metadata record (`newGroupMetadataRecord` / `newEmptyGroupMetadataRecord`).
pub fn group_metadata_record(group: &str, value: &GroupMetadataValue) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_metadata_key(group),
        value: Some(prefixed(
            GROUP_METADATA_VALUE_VERSION,
            value,
            GROUP_METADATA_VALUE_VERSION,
        )),
    }
}

/// A group metadata tombstone: the group is deleted.
pub fn group_metadata_tombstone(group: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_metadata_key(group),
        value: None,
    }
}

fn read_prefix(buf: &mut Bytes) -> Result<i16, DecodeError> {
    if buf.remaining() < 2 {
        return Err(DecodeError::UnexpectedEof);
    }
    Ok(buf.get_i16())
}

fn decode_value<T: Decode>(value: &Option<Bytes>, max: i16) -> Result<Option<T>, DecodeError> {
    let Some(v) = value else { return Ok(None) };
    let mut buf = v.clone();
    let version = read_prefix(&mut buf)?;
    if !(0..=max).contains(&version) {
        return Err(DecodeError::UnsupportedVersion {
            api_key: -1,
            version,
        });
    }
    T::decode(&mut buf, version).map(Some)
}

/// Decodes a record read from `__consumer_offsets`.
pub fn decode(record: &CoordinatorRecord) -> Result<GroupRecord, DecodeError> {
    let mut key = record.key.clone();
    let key_type = read_prefix(&mut key)?;
    match key_type {
        LEGACY_OFFSET_COMMIT_KEY_TYPE | OFFSET_COMMIT_KEY_TYPE => Ok(GroupRecord::OffsetCommit {
            key: OffsetCommitKey::decode(&mut key, key_type)?,
            value: decode_value(&record.value, OffsetCommitValue::MAX_VERSION)?,
        }),
        GROUP_METADATA_KEY_TYPE => Ok(GroupRecord::GroupMetadata {
            key: GroupMetadataKey::decode(&mut key, key_type)?,
            value: decode_value(&record.value, GroupMetadataValue::MAX_VERSION)?,
        }),
        other => {
            if let Some(r) =
                crate::coordinator::consumer::records::decode(other, &mut key, &record.value)?
            {
                return Ok(GroupRecord::Consumer(r));
            }
            Ok(
                match crate::coordinator::share::records::decode(other, &mut key, &record.value)? {
                    Some(r) => GroupRecord::Share(r),
                    None => GroupRecord::Other { key_type: other },
                },
            )
        }
    }
}

impl From<&OffsetCommitValue> for OffsetAndMetadata {
    fn from(v: &OffsetCommitValue) -> Self {
        OffsetAndMetadata {
            committed_offset: v.offset,
            leader_epoch: (v.leader_epoch >= 0).then_some(v.leader_epoch),
            metadata: v.metadata.clone(),
            commit_timestamp_ms: v.commit_timestamp,
            expire_timestamp_ms: (v.expire_timestamp >= 0).then_some(v.expire_timestamp),
        }
    }
}
