//! Share-group records on `__consumer_offsets`, in Kafka's formats
//! (`GroupCoordinatorRecordHelpers.newShareGroup*Record`): key types 10 (member subscription),
//! 11 (group epoch and metadata hash), 12 (target assignment epoch), 13 (member target
//! assignment), 14 (member current assignment) and 15 (the share partitions whose state is
//! initialized, read and kept so Kafka's log loads here unchanged); every value is version 0.
use bytes::Bytes;

use super::{ShareGroup, ShareGroupMember};
use crate::coordinator::consumer::records::{decode_value, prefixed, value_bytes};
use crate::coordinator::consumer::{assignment_from, Assignment};
use crate::coordinator::runtime::CoordinatorRecord;
use crate::protocol::codec::{Decode, DecodeError};
use crate::protocol::internal_records::share_group_current_member_assignment_key::ShareGroupCurrentMemberAssignmentKey as CurrentKey;
use crate::protocol::internal_records::share_group_current_member_assignment_value::{
    ShareGroupCurrentMemberAssignmentValue as CurrentValue, TopicPartitions as CurrentTp,
};
use crate::protocol::internal_records::share_group_member_metadata_key::ShareGroupMemberMetadataKey as MemberKey;
use crate::protocol::internal_records::share_group_member_metadata_value::ShareGroupMemberMetadataValue as MemberValue;
use crate::protocol::internal_records::share_group_metadata_key::ShareGroupMetadataKey as MetadataKey;
use crate::protocol::internal_records::share_group_metadata_value::ShareGroupMetadataValue as MetadataValue;
use crate::protocol::internal_records::share_group_target_assignment_member_key::ShareGroupTargetAssignmentMemberKey as TargetMemberKey;
use crate::protocol::internal_records::share_group_target_assignment_member_value::{
    ShareGroupTargetAssignmentMemberValue as TargetMemberValue, TopicPartition as TargetTp,
};
use crate::protocol::internal_records::share_group_target_assignment_metadata_key::ShareGroupTargetAssignmentMetadataKey as TargetMetadataKey;
use crate::protocol::internal_records::share_group_target_assignment_metadata_value::ShareGroupTargetAssignmentMetadataValue as TargetMetadataValue;

pub const SHARE_GROUP_MEMBER_METADATA_KEY_TYPE: i16 = 10;
pub const SHARE_GROUP_METADATA_KEY_TYPE: i16 = 11;
pub const SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_TYPE: i16 = 12;
pub const SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_TYPE: i16 = 13;
pub const SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE: i16 = 14;
pub const SHARE_GROUP_STATE_PARTITION_METADATA_KEY_TYPE: i16 = 15;

/// A decoded share-group record; `None` values are tombstones.
#[derive(Debug, Clone, PartialEq)]
pub enum ShareGroupRecord {
    GroupEpoch {
        group_id: String,
        /// (epoch, metadata hash).
        value: Option<(i32, i64)>,
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
    /// Key type 15: which share partitions have initialized state. Strata initializes a
    /// share partition on its leader at the first fetch, so it only carries this record.
    StatePartitionMetadata { group_id: String },
}

impl ShareGroupRecord {
    pub fn group_id(&self) -> &str {
        match self {
            ShareGroupRecord::GroupEpoch { group_id, .. }
            | ShareGroupRecord::MemberSubscription { group_id, .. }
            | ShareGroupRecord::TargetAssignmentEpoch { group_id, .. }
            | ShareGroupRecord::TargetAssignmentMember { group_id, .. }
            | ShareGroupRecord::CurrentAssignment { group_id, .. }
            | ShareGroupRecord::StatePartitionMetadata { group_id } => group_id,
        }
    }

    /// Whether replaying it may create the group (tombstones never do).
    pub fn creates_group(&self) -> bool {
        match self {
            ShareGroupRecord::GroupEpoch { value, .. } => value.is_some(),
            ShareGroupRecord::MemberSubscription { value, .. } => value.is_some(),
            ShareGroupRecord::TargetAssignmentEpoch { epoch, .. } => epoch.is_some(),
            ShareGroupRecord::TargetAssignmentMember { partitions, .. } => partitions.is_some(),
            ShareGroupRecord::CurrentAssignment { value, .. } => value.is_some(),
            ShareGroupRecord::StatePartitionMetadata { .. } => false,
        }
    }
}

fn group_key(key_type: i16, group_id: &str) -> Bytes {
    let group_id = group_id.to_string();
    match key_type {
        SHARE_GROUP_METADATA_KEY_TYPE => prefixed(
            key_type,
            &MetadataKey {
                group_id,
                ..Default::default()
            },
        ),
        _ => prefixed(
            key_type,
            &TargetMetadataKey {
                group_id,
                ..Default::default()
            },
        ),
    }
}

fn member_key(key_type: i16, group_id: &str, member_id: &str) -> Bytes {
    let (group_id, member_id) = (group_id.to_string(), member_id.to_string());
    match key_type {
        SHARE_GROUP_MEMBER_METADATA_KEY_TYPE => prefixed(
            key_type,
            &MemberKey {
                group_id,
                member_id,
                ..Default::default()
            },
        ),
        SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_TYPE => prefixed(
            key_type,
            &TargetMemberKey {
                group_id,
                member_id,
                ..Default::default()
            },
        ),
        _ => prefixed(
            key_type,
            &CurrentKey {
                group_id,
                member_id,
                ..Default::default()
            },
        ),
    }
}

pub fn group_epoch_record(group_id: &str, epoch: i32, metadata_hash: i64) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_key(SHARE_GROUP_METADATA_KEY_TYPE, group_id),
        value: value_bytes(&MetadataValue {
            epoch,
            metadata_hash,
            ..Default::default()
        }),
    }
}

pub fn group_epoch_tombstone(group_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_key(SHARE_GROUP_METADATA_KEY_TYPE, group_id),
        value: None,
    }
}

pub fn member_subscription_record(group_id: &str, m: &ShareGroupMember) -> CoordinatorRecord {
    CoordinatorRecord {
        key: member_key(SHARE_GROUP_MEMBER_METADATA_KEY_TYPE, group_id, &m.member_id),
        value: value_bytes(&MemberValue {
            rack_id: m.rack_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            subscribed_topic_names: m.subscribed_topic_names.clone(),
            ..Default::default()
        }),
    }
}

pub fn member_subscription_tombstone(group_id: &str, member_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: member_key(SHARE_GROUP_MEMBER_METADATA_KEY_TYPE, group_id, member_id),
        value: None,
    }
}

pub fn target_assignment_record(
    group_id: &str,
    member_id: &str,
    a: &Assignment,
) -> CoordinatorRecord {
    CoordinatorRecord {
        key: member_key(
            SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_TYPE,
            group_id,
            member_id,
        ),
        value: value_bytes(&TargetMemberValue {
            topic_partitions: a
                .iter()
                .map(|(t, ps)| TargetTp {
                    topic_id: *t,
                    partitions: ps.iter().copied().collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    }
}

pub fn target_assignment_tombstone(group_id: &str, member_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: member_key(
            SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_TYPE,
            group_id,
            member_id,
        ),
        value: None,
    }
}

pub fn target_assignment_epoch_record(group_id: &str, epoch: i32) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_key(SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_TYPE, group_id),
        value: value_bytes(&TargetMetadataValue {
            assignment_epoch: epoch,
            ..Default::default()
        }),
    }
}

pub fn target_assignment_epoch_tombstone(group_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: group_key(SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_TYPE, group_id),
        value: None,
    }
}

pub fn current_assignment_record(group_id: &str, m: &ShareGroupMember) -> CoordinatorRecord {
    CoordinatorRecord {
        key: member_key(
            SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE,
            group_id,
            &m.member_id,
        ),
        value: value_bytes(&CurrentValue {
            member_epoch: m.member_epoch,
            previous_member_epoch: m.previous_member_epoch,
            state: m.state,
            assigned_partitions: m
                .assigned_partitions
                .iter()
                .map(|(t, ps)| CurrentTp {
                    topic_id: *t,
                    partitions: ps.iter().copied().collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    }
}

pub fn current_assignment_tombstone(group_id: &str, member_id: &str) -> CoordinatorRecord {
    CoordinatorRecord {
        key: member_key(
            SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE,
            group_id,
            member_id,
        ),
        value: None,
    }
}

/// Decodes a share-group record whose key type (already read off `key`) is 10-15;
/// `Ok(None)` for any other type.
pub fn decode(
    key_type: i16,
    key: &mut Bytes,
    value: &Option<Bytes>,
) -> Result<Option<ShareGroupRecord>, DecodeError> {
    let rec = match key_type {
        SHARE_GROUP_METADATA_KEY_TYPE => {
            let k = MetadataKey::decode(key, key_type)?;
            ShareGroupRecord::GroupEpoch {
                group_id: k.group_id,
                value: decode_value::<MetadataValue>(value)?.map(|v| (v.epoch, v.metadata_hash)),
            }
        }
        SHARE_GROUP_MEMBER_METADATA_KEY_TYPE => {
            let k = MemberKey::decode(key, key_type)?;
            ShareGroupRecord::MemberSubscription {
                group_id: k.group_id,
                member_id: k.member_id,
                value: decode_value(value)?,
            }
        }
        SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_TYPE => {
            let k = TargetMetadataKey::decode(key, key_type)?;
            ShareGroupRecord::TargetAssignmentEpoch {
                group_id: k.group_id,
                epoch: decode_value::<TargetMetadataValue>(value)?.map(|v| v.assignment_epoch),
            }
        }
        SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_TYPE => {
            let k = TargetMemberKey::decode(key, key_type)?;
            ShareGroupRecord::TargetAssignmentMember {
                group_id: k.group_id,
                member_id: k.member_id,
                partitions: decode_value::<TargetMemberValue>(value)?.map(|v| {
                    assignment_from(
                        v.topic_partitions
                            .iter()
                            .map(|tp| (tp.topic_id, tp.partitions.as_slice())),
                    )
                }),
            }
        }
        SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE => {
            let k = CurrentKey::decode(key, key_type)?;
            ShareGroupRecord::CurrentAssignment {
                group_id: k.group_id,
                member_id: k.member_id,
                value: decode_value(value)?,
            }
        }
        SHARE_GROUP_STATE_PARTITION_METADATA_KEY_TYPE => {
            use crate::protocol::internal_records::share_group_state_partition_metadata_key::ShareGroupStatePartitionMetadataKey as StateKey;
            let k = StateKey::decode(key, key_type)?;
            ShareGroupRecord::StatePartitionMetadata {
                group_id: k.group_id,
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(rec))
}

impl ShareGroup {
    /// Applies one record of this group. The only way its durable state changes.
    pub fn replay(&mut self, record: &ShareGroupRecord) {
        match record {
            ShareGroupRecord::GroupEpoch { value, .. } => {
                let (epoch, hash) = value.unwrap_or((0, 0));
                self.group_epoch = epoch;
                self.metadata_hash = hash;
            }
            ShareGroupRecord::MemberSubscription {
                member_id, value, ..
            } => match value {
                Some(v) => {
                    let m = self
                        .members
                        .entry(member_id.clone())
                        .or_insert_with(|| ShareGroupMember::new(member_id));
                    m.rack_id = v.rack_id.clone();
                    m.client_id = v.client_id.clone();
                    m.client_host = v.client_host.clone();
                    m.subscribed_topic_names = v.subscribed_topic_names.clone();
                }
                None => {
                    self.members.remove(member_id);
                    self.session_deadlines_ms.remove(member_id);
                }
            },
            ShareGroupRecord::TargetAssignmentEpoch { epoch, .. } => {
                self.assignment_epoch = epoch.unwrap_or(0);
            }
            ShareGroupRecord::TargetAssignmentMember {
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
            ShareGroupRecord::CurrentAssignment {
                member_id, value, ..
            } => match value {
                Some(v) => {
                    let m = self
                        .members
                        .entry(member_id.clone())
                        .or_insert_with(|| ShareGroupMember::new(member_id));
                    m.member_epoch = v.member_epoch;
                    m.previous_member_epoch = v.previous_member_epoch;
                    m.state = v.state;
                    m.assigned_partitions = assignment_from(
                        v.assigned_partitions
                            .iter()
                            .map(|tp| (tp.topic_id, tp.partitions.as_slice())),
                    );
                }
                None => {
                    if let Some(m) = self.members.get_mut(member_id) {
                        m.member_epoch = super::LEAVE_GROUP_MEMBER_EPOCH;
                        m.previous_member_epoch = super::LEAVE_GROUP_MEMBER_EPOCH;
                        m.assigned_partitions.clear();
                    }
                }
            },
            ShareGroupRecord::StatePartitionMetadata { .. } => {}
        }
    }

    /// The tombstones that delete the group (`createGroupTombstoneRecords`).
    pub fn tombstones(&self) -> Vec<CoordinatorRecord> {
        let g = self.group_id.as_str();
        let mut out = Vec::new();
        for id in self.members.keys() {
            out.push(current_assignment_tombstone(g, id));
        }
        for id in self.target_assignment.keys() {
            out.push(target_assignment_tombstone(g, id));
        }
        for id in self.members.keys() {
            out.push(member_subscription_tombstone(g, id));
        }
        out.push(target_assignment_epoch_tombstone(g));
        out.push(group_epoch_tombstone(g));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::codec::Uuid;
    use bytes::Buf;

    fn decode_record(r: &CoordinatorRecord) -> ShareGroupRecord {
        let mut key = r.key.clone();
        let key_type = key.get_i16();
        decode(key_type, &mut key, &r.value).unwrap().unwrap()
    }

    #[test]
    fn every_record_round_trips_and_replays_to_the_same_group() {
        let t = Uuid([7; 16]);
        let mut m = ShareGroupMember::new("m1");
        m.member_epoch = 3;
        m.previous_member_epoch = 2;
        m.client_id = "c".into();
        m.client_host = "/127.0.0.1".into();
        m.subscribed_topic_names = vec!["a".into()];
        m.assigned_partitions = assignment_from([(t, &[0, 2][..])]);
        let records = vec![
            member_subscription_record("g", &m),
            group_epoch_record("g", 3, 42),
            target_assignment_record("g", "m1", &m.assigned_partitions),
            target_assignment_epoch_record("g", 3),
            current_assignment_record("g", &m),
        ];
        let mut g = ShareGroup::new("g");
        for r in &records {
            let d = decode_record(r);
            assert_eq!(d.group_id(), "g");
            g.replay(&d);
        }
        assert_eq!(
            (g.group_epoch, g.metadata_hash, g.assignment_epoch),
            (3, 42, 3)
        );
        assert_eq!(g.members.get("m1"), Some(&m));
        assert_eq!(g.target_assignment.get("m1"), Some(&m.assigned_partitions));
        // Kafka's key type prefixes, so Kafka's tools read our log and we read theirs.
        let types: Vec<i16> = records.iter().map(|r| (&r.key[..2]).get_i16()).collect();
        assert_eq!(types, vec![10, 11, 13, 12, 14]);
        for r in g.tombstones() {
            g.replay(&decode_record(&r));
        }
        assert!(g.members.is_empty() && g.target_assignment.is_empty());
        assert_eq!(g.group_epoch, 0);
    }
}
