//! Consumer groups seen by the admin and offset APIs (Kafka's `ConsumerGroup.asDescribedGroup`,
//! `asListedGroup`, `validateOffsetCommit`, `validateOffsetFetch`, `createGroupTombstoneRecords`):
//! ConsumerGroupDescribe v0-1, ListGroups entries, DeleteGroups, and the KIP-848 member epoch
//! checks of OffsetCommit v9 / OffsetFetch v9.
use super::records as rec;
use super::{Assignment, ConsumerGroup, TopicsView, CONSUMER_GROUP_TYPE};
use crate::coordinator::error::CoordinatorError;
use crate::coordinator::runtime::CoordinatorRecord;
use crate::coordinator::shard::GroupCoordinatorShard;
use crate::protocol::messages::consumer_group_describe_response::{
    Assignment as DescribedAssignment, DescribedGroup, Member, TopicPartitions,
};
use crate::protocol::messages::list_groups_response::ListedGroup;

/// `ConsumerGroupDescribeResponse` member type of a KIP-848 member (v1+).
const MEMBER_TYPE_CONSUMER: i8 = 1;

fn described(a: &Assignment, topics: &TopicsView) -> DescribedAssignment {
    DescribedAssignment {
        topic_partitions: a
            .iter()
            .filter_map(|(t, ps)| {
                // Partitions of deleted topics are not described (Kafka skips unknown ids).
                topics.name_of(*t).map(|name| TopicPartitions {
                    topic_id: *t,
                    topic_name: name.to_string(),
                    partitions: ps.iter().copied().collect(),
                    ..Default::default()
                })
            })
            .collect(),
        ..Default::default()
    }
}

impl ConsumerGroup {
    /// The group as ConsumerGroupDescribe reports it.
    pub fn describe(&self, default_assignor: &str, topics: &TopicsView) -> DescribedGroup {
        DescribedGroup {
            group_id: self.group_id.clone(),
            group_state: self.state().as_str().to_string(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            assignor_name: ConsumerGroup::preferred_server_assignor(
                self.members.values(),
                default_assignor,
            ),
            members: self
                .members
                .values()
                .map(|m| Member {
                    member_id: m.member_id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    member_epoch: m.member_epoch,
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    subscribed_topic_names: m.subscribed_topic_names.clone(),
                    subscribed_topic_regex: m.subscribed_topic_regex.clone(),
                    assignment: described(&m.assigned_partitions, topics),
                    target_assignment: described(
                        &self
                            .target_assignment
                            .get(&m.member_id)
                            .cloned()
                            .unwrap_or_default(),
                        topics,
                    ),
                    member_type: MEMBER_TYPE_CONSUMER,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Kafka's `ConsumerGroup.validateOffsetCommit` (non-transactional).
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        member_epoch: i32,
        api_version: i16,
    ) -> Result<(), CoordinatorError> {
        // Admin tools and simple consumers commit with epoch -1 while the group is empty.
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(CoordinatorError::UnknownMemberId)?;
        if api_version < 9 {
            return Err(CoordinatorError::UnsupportedVersion);
        }
        if member_epoch != member.member_epoch {
            return Err(CoordinatorError::StaleMemberEpoch);
        }
        Ok(())
    }

    /// The transactional case of Kafka's `ConsumerGroup.validateOffsetCommit` (TxnOffsetCommit
    /// carries the member epoch as its generation): any TxnOffsetCommit version, and a stale
    /// epoch is ILLEGAL_GENERATION, which transactional producers understand
    /// (`OffsetMetadataManager.validateTransactionalOffsetCommit`).
    pub fn validate_txn_offset_commit(
        &self,
        member_id: &str,
        member_epoch: i32,
    ) -> Result<(), CoordinatorError> {
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(CoordinatorError::UnknownMemberId)?;
        if member_epoch != member.member_epoch {
            return Err(CoordinatorError::IllegalGeneration);
        }
        Ok(())
    }

    /// Kafka's `ConsumerGroup.validateOffsetFetch`: epoch -1 is the admin client.
    pub fn validate_offset_fetch(
        &self,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), CoordinatorError> {
        if member_epoch == -1 {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id.unwrap_or(""))
            .ok_or(CoordinatorError::UnknownMemberId)?;
        if member_epoch != member.member_epoch {
            return Err(CoordinatorError::StaleMemberEpoch);
        }
        Ok(())
    }

    /// The records that delete an empty group (`createGroupTombstoneRecords`).
    pub fn tombstones(&self) -> Vec<CoordinatorRecord> {
        let g = self.group_id.as_str();
        let mut out = Vec::new();
        for id in self.members.keys() {
            out.extend(super::heartbeat::remove_member_records(g, id));
        }
        for id in self.target_assignment.keys() {
            if !self.members.contains_key(id) {
                out.push(rec::target_assignment_tombstone(g, id));
            }
        }
        out.push(rec::target_assignment_epoch_tombstone(g));
        out.push(rec::subscription_metadata_tombstone(g));
        out.push(rec::group_epoch_tombstone(g));
        out
    }
}

impl GroupCoordinatorShard {
    /// ConsumerGroupDescribe for one group: GROUP_ID_NOT_FOUND for unknown and classic groups
    /// (the Java admin then falls back to DescribeGroups).
    pub fn consumer_group_describe(&self, group_id: &str, topics: &TopicsView) -> DescribedGroup {
        match self.consumer_groups.get(group_id) {
            Some(g) => g.describe(self.config.default_assignor(), topics),
            None => {
                let message = if self.groups.contains_key(group_id) {
                    format!("Group {group_id} is not a consumer group.")
                } else {
                    format!("Group {group_id} not found.")
                };
                DescribedGroup {
                    group_id: group_id.to_string(),
                    error_code: CoordinatorError::GroupIdNotFound.wire(),
                    error_message: Some(message),
                    ..Default::default()
                }
            }
        }
    }

    /// The consumer groups matching ListGroups filters (empty filter = all).
    pub fn list_consumer_groups(&self, states: &[String], types: &[String]) -> Vec<ListedGroup> {
        let type_ok = types.is_empty()
            || types
                .iter()
                .any(|t| t.eq_ignore_ascii_case(CONSUMER_GROUP_TYPE));
        if !type_ok {
            return Vec::new();
        }
        self.consumer_groups
            .values()
            .filter(|g| {
                states.is_empty()
                    || states
                        .iter()
                        .any(|s| s.eq_ignore_ascii_case(g.state().as_str()))
            })
            .map(|g| ListedGroup {
                group_id: g.group_id.clone(),
                protocol_type: CONSUMER_GROUP_TYPE.to_string(),
                group_state: g.state().as_str().to_string(),
                group_type: CONSUMER_GROUP_TYPE.to_string(),
                ..Default::default()
            })
            .collect()
    }

    /// DeleteGroups for a consumer group: only an empty one, with its offsets.
    pub(crate) fn delete_consumer_group(&mut self, group_id: &str) -> Result<(), CoordinatorError> {
        let Some(g) = self.consumer_groups.get(group_id) else {
            return Err(CoordinatorError::GroupIdNotFound);
        };
        if !g.is_empty() {
            return Err(CoordinatorError::NonEmptyGroup);
        }
        let mut recs = self.offset_tombstones(group_id);
        recs.extend(g.tombstones());
        self.write(recs)
    }

    /// Deletes empty consumer groups that have no offsets left (offset expiration).
    pub(crate) fn cleanup_consumer_groups(&mut self) {
        let ids: Vec<String> = self
            .consumer_groups
            .values()
            .filter(|g| {
                g.is_empty()
                    && !self.offsets.contains_key(&g.group_id)
                    && !self.has_pending_txn_offsets(&g.group_id)
            })
            .map(|g| g.group_id.clone())
            .collect();
        for id in ids {
            if let Some(g) = self.consumer_groups.get(&id) {
                let recs = g.tombstones();
                if let Err(e) = self.write(recs) {
                    tracing::warn!(group = %id, error = %e, "failed to delete empty consumer group");
                }
            }
        }
    }
}
