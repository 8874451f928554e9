//! KIP-848 consumer-group records on `__consumer_offsets`, in Kafka's formats
//! (`GroupCoordinatorRecordHelpers.newConsumerGroup*Record`): key types 3 (group epoch),
//! 4 (subscription metadata), 5 (member subscription), 6 (target assignment epoch),
//! 7 (member target assignment), 8 (member current assignment); every value is version 0.
//!
//! [`ConsumerGroupRecord`] is the decoded form; [`super::ConsumerGroup::replay`] applies it.
use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::{Assignment, ConsumerGroupMember, MemberState, TopicMetadata};
use crate::coordinator::runtime::CoordinatorRecord;
use crate::protocol::codec::{Decode, DecodeError, Encode};
use crate::protocol::internal_records::consumer_group_current_member_assignment_key::ConsumerGroupCurrentMemberAssignmentKey as CurrentKey;
use crate::protocol::internal_records::consumer_group_current_member_assignment_value::{
    ConsumerGroupCurrentMemberAssignmentValue as CurrentValue, TopicPartitions as CurrentTp,
};
use crate::protocol::internal_records::consumer_group_member_metadata_key::ConsumerGroupMemberMetadataKey as MemberKey;
use crate::protocol::internal_records::consumer_group_member_metadata_value::ConsumerGroupMemberMetadataValue as MemberValue;
use crate::protocol::internal_records::consumer_group_metadata_key::ConsumerGroupMetadataKey as MetadataKey;
use crate::protocol::internal_records::consumer_group_metadata_value::ConsumerGroupMetadataValue as MetadataValue;
use crate::protocol::internal_records::consumer_group_partition_metadata_key::ConsumerGroupPartitionMetadataKey as PartitionKey;
use crate::protocol::internal_records::consumer_group_partition_metadata_value::{
    ConsumerGroupPartitionMetadataValue as PartitionValue, TopicMetadata as TopicMetadataRecord,
};
use crate::protocol::internal_records::consumer_group_target_assignment_member_key::ConsumerGroupTargetAssignmentMemberKey as TargetMemberKey;
use crate::protocol::internal_records::consumer_group_target_assignment_member_value::{
    ConsumerGroupTargetAssignmentMemberValue as TargetMemberValue, TopicPartition as TargetTp,
};
use crate::protocol::internal_records::consumer_group_target_assignment_metadata_key::ConsumerGroupTargetAssignmentMetadataKey as TargetMetadataKey;
use crate::protocol::internal_records::consumer_group_target_assignment_metadata_value::ConsumerGroupTargetAssignmentMetadataValue as TargetMetadataValue;

pub const CONSUMER_GROUP_METADATA_KEY_TYPE: i16 = 3;
pub const CONSUMER_GROUP_PARTITION_METADATA_KEY_TYPE: i16 = 4;
pub const CONSUMER_GROUP_MEMBER_METADATA_KEY_TYPE: i16 = 5;
pub const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_TYPE: i16 = 6;
pub const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_TYPE: i16 = 7;
pub const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE: i16 = 8;

/// A decoded consumer-group record; `None` values are tombstones.
#[derive(Debug, Clone, PartialEq)]
pub enum ConsumerGroupRecord {
    GroupEpoch {
        group_id: String,
        epoch: Option<i32>,
    },
    SubscriptionMetadata {
        group_id: String,
        topics: Option<Vec<TopicMetadata>>,
    },
    MemberSubscription {
        group_id: String,
        member_id: String,
        value: Option<MemberValue>,
    },
    TargetAssignmentEpoch {
        group_id: String,
        epoch: Option<i32>,
    },
    TargetAssignmentMember {
        group_id: String,
        member_id: String,
        partitions: Option<Assignment>,
    },
    CurrentAssignment {
        group_id: String,
        member_id: String,
        value: Option<CurrentValue>,
    },
}

impl ConsumerGroupRecord {
    pub fn group_id(&self) -> &str {
        match self {
            ConsumerGroupRecord::GroupEpoch { group_id, .. }
            | ConsumerGroupRecord::SubscriptionMetadata { group_id, .. }
            | ConsumerGroupRecord::MemberSubscription { group_id, .. }
            | ConsumerGroupRecord::TargetAssignmentEpoch { group_id, .. }
            | ConsumerGroupRecord::TargetAssignmentMember { group_id, .. }
            | ConsumerGroupRecord::CurrentAssignment { group_id, .. } => group_id,
        }
    }

    /// Whether replaying it may create the group (tombstones never do).
    pub fn creates_group(&self) -> bool {
        match self {
            ConsumerGroupRecord::GroupEpoch { epoch, .. } => epoch.is_some(),
            ConsumerGroupRecord::SubscriptionMetadata { topics, .. } => topics.is_some(),
            ConsumerGroupRecord::MemberSubscription { value, .. } => value.is_some(),
            ConsumerGroupRecord::TargetAssignmentEpoch { epoch, .. } => epoch.is_some(),
            ConsumerGroupRecord::TargetAssignmentMember { partitions, .. } => partitions.is_some(),
            ConsumerGroupRecord::CurrentAssignment { value, .. } => value.is_some(),
        }
    }
}

/// A version-prefixed key or value body (shared with the share-group records).
pub(crate) fn prefixed(version: i16, body: &dyn Encode) -> Bytes {
    let mut b = BytesMut::with_capacity(64);
    b.put_i16(version);
    body.encode(&mut b, version);
    b.freeze()
}

pub(crate) fn value_bytes(body: &dyn Encode) -> Option<Bytes> {
    Some(prefixed(0, body))
}

fn group_key(key_type: i16, group_id: &str) -> Bytes {
    match key_type {
        CONSUMER_GROUP_METADATA_KEY_TYPE => prefixed(
            key_type,
            &MetadataKey {
                group_id: group_id.to_string(),
                ..Default::default()
            },
        ),
        CONSUMER_GROUP_PARTITION_METADATA_KEY_TYPE => prefixed(
            key_type,
            &PartitionKey {
                group_id: group_id.to_string(),
                ..Default::default()
            },
        ),
        _ => prefixed(
            key_type,
            &TargetMetadataKey {
                group_id: group_id.to_string(),
                ..Default::default()
            },
        ),
    }
}

fn member_key(key_type: i16, group_id: &str, member_id: &str) -> Bytes {
    let (g, m) = (group_id.to_string(), member_id.to_string());
    match key_type {
        CONSUMER_GROUP_MEMBER_METADATA_KEY_TYPE => prefixed(
            key_type,
            &MemberKey {
                group_id: g,
                member_id: m,
                ..Default::default()
            },
        ),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_TYPE => prefixed(
            key_type,
            &TargetMemberKey {
                group_id: g,
                member_id: m,
                ..Default::default()
            },
        ),
        _ => prefixed(
            key_type,
            &CurrentKey {
                group_id: g,
                member_id: m,
                ..Default::default()
            },
        ),
    }
}

/// `newConsumerGroupEpochRecord`.
pub fn group_epoch_record(group_id: &str, epoch: i32) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_key(CONSUMER_GROUP_METADATA_KEY_TYPE, group_id),
        value: value_bytes(&MetadataValue {
            epoch,
            ..Default::default()
        }),
    }
}

pub fn group_epoch_tombstone(group_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_key(CONSUMER_GROUP_METADATA_KEY_TYPE, group_id),
        value: None,
    }
}

/// `newConsumerGroupSubscriptionMetadataRecord`.
pub fn subscription_metadata_record<'a>(
    group_id: &str,
    topics: impl Iterator<Item = &'a TopicMetadata>,
) -> CoordinatorRecord {
    let value = PartitionValue {
        topics: topics
            .map(|t| TopicMetadataRecord {
                topic_id: t.topic_id,
                topic_name: t.topic_name.clone(),
                num_partitions: t.num_partitions,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    CoordinatorRecord {
        key: group_key(CONSUMER_GROUP_PARTITION_METADATA_KEY_TYPE, group_id),
        value: value_bytes(&value),
    }
}

pub fn subscription_metadata_tombstone(group_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_key(CONSUMER_GROUP_PARTITION_METADATA_KEY_TYPE, group_id),
        value: None,
    }
}

/// `newConsumerGroupMemberSubscriptionRecord`.
pub fn member_subscription_record(group_id: &str, m: &ConsumerGroupMember) -> CoordinatorRecord {
    let value = MemberValue {
        instance_id: m.instance_id.clone(),
        rack_id: m.rack_id.clone(),
        client_id: m.client_id.clone(),
        client_host: m.client_host.clone(),
        subscribed_topic_names: m.subscribed_topic_names.clone(),
        subscribed_topic_regex: m.subscribed_topic_regex.clone(),
        rebalance_timeout_ms: m.rebalance_timeout_ms,
        server_assignor: m.server_assignor.clone(),
        ..Default::default()
    };
    CoordinatorRecord {
        key: member_key(
            CONSUMER_GROUP_MEMBER_METADATA_KEY_TYPE,
            group_id,
            &m.member_id,
        ),
        value: value_bytes(&value),
    }
}

pub fn member_subscription_tombstone(group_id: &str, member_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: member_key(CONSUMER_GROUP_MEMBER_METADATA_KEY_TYPE, group_id, member_id),
        value: None,
    }
}

/// `newConsumerGroupTargetAssignmentRecord`.
pub fn target_assignment_record(
    group_id: &str,
    member_id: &str,
    partitions: &Assignment,
) -> CoordinatorRecord {
    let value = TargetMemberValue {
        topic_partitions: partitions
            .iter()
            .filter(|(_, ps)| !ps.is_empty())
            .map(|(t, ps)| TargetTp {
                topic_id: *t,
                partitions: ps.iter().copied().collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    CoordinatorRecord {
        key: member_key(
            CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_TYPE,
            group_id,
            member_id,
        ),
        value: value_bytes(&value),
    }
}

pub fn target_assignment_tombstone(group_id: &str, member_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: member_key(
            CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_TYPE,
            group_id,
            member_id,
        ),
        value: None,
    }
}

/// `newConsumerGroupTargetAssignmentEpochRecord`.
pub fn target_assignment_epoch_record(group_id: &str, epoch: i32) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_key(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_TYPE, group_id),
        value: value_bytes(&TargetMetadataValue {
            assignment_epoch: epoch,
            ..Default::default()
        }),
    }
}

pub fn target_assignment_epoch_tombstone(group_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_key(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_TYPE, group_id),
        value: None,
    }
}

fn current_tps(a: &Assignment) -> Vec<CurrentTp> {
    a.iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(t, ps)| CurrentTp {
            topic_id: *t,
            partitions: ps.iter().copied().collect(),
            ..Default::default()
        })
        .collect()
}

/// `newConsumerGroupCurrentAssignmentRecord`.
pub fn current_assignment_record(group_id: &str, m: &ConsumerGroupMember) -> CoordinatorRecord {
    let value = CurrentValue {
        member_epoch: m.member_epoch,
        previous_member_epoch: m.previous_member_epoch,
        state: m.state.value(),
        assigned_partitions: current_tps(&m.assigned_partitions),
        partitions_pending_revocation: current_tps(&m.partitions_pending_revocation),
        ..Default::default()
    };
    CoordinatorRecord {
        key: member_key(
            CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE,
            group_id,
            &m.member_id,
        ),
        value: value_bytes(&value),
    }
}

pub fn current_assignment_tombstone(group_id: &str, member_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: member_key(
            CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE,
            group_id,
            member_id,
        ),
        value: None,
    }
}

/// Decodes a value: an `int16` version (only 0 is known) and the struct.
pub(crate) fn decode_value<T: Decode>(value: &Option<Bytes>) -> Result<Option<T>, DecodeError> {
    let Some(v) = value else { return Ok(None) };
    let mut buf = v.clone();
    if buf.remaining() < 2 {
        return Err(DecodeError::UnexpectedEof);
    }
    let version = buf.get_i16();
    if version != 0 {
        return Err(DecodeError::UnsupportedVersion {
            api_key: -1,
            version,
        });
    }
    T::decode(&mut buf, 0).map(Some)
}

/// Decodes a consumer-group record whose key type (already read off `key`) is 3-8;
/// `Ok(None)` for any other type.
pub fn decode(
    key_type: i16,
    key: &mut Bytes,
    value: &Option<Bytes>,
) -> Result<Option<ConsumerGroupRecord>, DecodeError> {
    let rec = match key_type {
        CONSUMER_GROUP_METADATA_KEY_TYPE => {
            let k = MetadataKey::decode(key, key_type)?;
            ConsumerGroupRecord::GroupEpoch {
                group_id: k.group_id,
                epoch: decode_value::<MetadataValue>(value)?.map(|v| v.epoch),
            }
        }
        CONSUMER_GROUP_PARTITION_METADATA_KEY_TYPE => {
            let k = PartitionKey::decode(key, key_type)?;
            ConsumerGroupRecord::SubscriptionMetadata {
                group_id: k.group_id,
                topics: decode_value::<PartitionValue>(value)?.map(|v| {
                    v.topics
                        .into_iter()
                        .map(|t| TopicMetadata {
                            topic_id: t.topic_id,
                            topic_name: t.topic_name,
                            num_partitions: t.num_partitions,
                        })
                        .collect()
                }),
            }
        }
        CONSUMER_GROUP_MEMBER_METADATA_KEY_TYPE => {
            let k = MemberKey::decode(key, key_type)?;
            ConsumerGroupRecord::MemberSubscription {
                group_id: k.group_id,
                member_id: k.member_id,
                value: decode_value(value)?,
            }
        }
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_TYPE => {
            let k = TargetMetadataKey::decode(key, key_type)?;
            ConsumerGroupRecord::TargetAssignmentEpoch {
                group_id: k.group_id,
                epoch: decode_value::<TargetMetadataValue>(value)?.map(|v| v.assignment_epoch),
            }
        }
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_TYPE => {
            let k = TargetMemberKey::decode(key, key_type)?;
            ConsumerGroupRecord::TargetAssignmentMember {
                group_id: k.group_id,
                member_id: k.member_id,
                partitions: decode_value::<TargetMemberValue>(value)?.map(|v| {
                    super::assignment_from(
                        v.topic_partitions
                            .iter()
                            .map(|tp| (tp.topic_id, tp.partitions.as_slice())),
                    )
                }),
            }
        }
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE => {
            let k = CurrentKey::decode(key, key_type)?;
            ConsumerGroupRecord::CurrentAssignment {
                group_id: k.group_id,
                member_id: k.member_id,
                value: decode_value(value)?,
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(rec))
}

/// Applies a member subscription value to a member.
pub(crate) fn apply_member_value(m: &mut ConsumerGroupMember, v: &MemberValue) {
    m.instance_id = v.instance_id.clone();
    m.rack_id = v.rack_id.clone();
    m.client_id = v.client_id.clone();
    m.client_host = v.client_host.clone();
    m.subscribed_topic_names = v.subscribed_topic_names.clone();
    m.subscribed_topic_regex = v.subscribed_topic_regex.clone();
    m.rebalance_timeout_ms = v.rebalance_timeout_ms;
    m.server_assignor = v.server_assignor.clone();
}

/// Applies a current assignment value (or its tombstone) to a member.
pub(crate) fn apply_current_value(m: &mut ConsumerGroupMember, v: Option<&CurrentValue>) {
    match v {
        Some(v) => {
            m.member_epoch = v.member_epoch;
            m.previous_member_epoch = v.previous_member_epoch;
            m.state = MemberState::from_value(v.state);
            m.assigned_partitions = super::assignment_from(
                v.assigned_partitions
                    .iter()
                    .map(|tp| (tp.topic_id, tp.partitions.as_slice())),
            );
            m.partitions_pending_revocation = super::assignment_from(
                v.partitions_pending_revocation
                    .iter()
                    .map(|tp| (tp.topic_id, tp.partitions.as_slice())),
            );
        }
        None => {
            // Kafka's replay of the tombstone: the member leaves with nothing.
            m.member_epoch = super::LEAVE_GROUP_MEMBER_EPOCH;
            m.previous_member_epoch = super::LEAVE_GROUP_MEMBER_EPOCH;
            m.state = MemberState::Stable;
            m.assigned_partitions.clear();
            m.partitions_pending_revocation.clear();
        }
    }
}

impl super::ConsumerGroup {
    /// Applies one record of this group. The only way its durable state changes.
    pub fn replay(&mut self, record: &ConsumerGroupRecord) {
        match record {
            ConsumerGroupRecord::GroupEpoch { epoch, .. } => {
                self.group_epoch = epoch.unwrap_or(0);
            }
            ConsumerGroupRecord::SubscriptionMetadata { topics, .. } => {
                self.subscription_metadata = topics
                    .iter()
                    .flatten()
                    .map(|t| (t.topic_name.clone(), t.clone()))
                    .collect();
            }
            ConsumerGroupRecord::MemberSubscription {
                member_id, value, ..
            } => match value {
                Some(v) => {
                    let m = self
                        .members
                        .entry(member_id.clone())
                        .or_insert_with(|| ConsumerGroupMember::new(member_id));
                    apply_member_value(m, v);
                }
                None => {
                    self.members.remove(member_id);
                }
            },
            ConsumerGroupRecord::TargetAssignmentEpoch { epoch, .. } => {
                self.assignment_epoch = epoch.unwrap_or(0);
            }
            ConsumerGroupRecord::TargetAssignmentMember {
                member_id,
                partitions,
                ..
            } => match partitions {
                Some(p) => {
                    self.target_assignment.insert(member_id.clone(), p.clone());
                }
                None => {
                    self.target_assignment.remove(member_id);
                }
            },
            ConsumerGroupRecord::CurrentAssignment {
                member_id, value, ..
            } => match value {
                Some(v) => {
                    let m = self
                        .members
                        .entry(member_id.clone())
                        .or_insert_with(|| ConsumerGroupMember::new(member_id));
                    apply_current_value(m, Some(v));
                }
                None => {
                    if let Some(m) = self.members.get_mut(member_id) {
                        apply_current_value(m, None);
                    }
                }
            },
        }
        self.rebuild_indexes();
    }
}
