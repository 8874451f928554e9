//! ShareGroupDescribe v1, ListGroups with the `share` type, and DeleteGroups of share groups,
//! as Kafka's `GroupMetadataManager` answers them.
use super::{ShareGroup, SHARE_GROUP_TYPE, SIMPLE_ASSIGNOR_NAME};
use crate::coordinator::consumer::TopicsView;
use crate::coordinator::error::CoordinatorError;
use crate::coordinator::shard::GroupCoordinatorShard;
use crate::protocol::messages::list_groups_response::ListedGroup;
use crate::protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};

impl ShareGroup {
    /// The group as ShareGroupDescribe shows it; topics are named from `topics`.
    pub fn describe(&self, topics: &TopicsView) -> DescribedGroup {
        DescribedGroup {
            group_id: self.group_id.clone(),
            group_state: self.state().as_str().to_string(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            assignor_name: SIMPLE_ASSIGNOR_NAME.to_string(),
            members: self
                .members
                .values()
                .map(|m| Member {
                    member_id: m.member_id.clone(),
                    rack_id: m.rack_id.clone(),
                    member_epoch: m.member_epoch,
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    subscribed_topic_names: m.subscribed_topic_names.clone(),
                    assignment: Assignment {
                        topic_partitions: m
                            .assigned_partitions
                            .iter()
                            .filter(|(_, ps)| !ps.is_empty())
                            .map(|(t, ps)| TopicPartitions {
                                topic_id: *t,
                                topic_name: topics.name_of(*t).unwrap_or_default().to_string(),
                                partitions: ps.iter().copied().collect(),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    },
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }
}

impl GroupCoordinatorShard {
    /// ShareGroupDescribe for one group: GROUP_ID_NOT_FOUND for unknown groups and groups of
    /// another type, with Kafka's messages.
    pub fn share_group_describe(&self, group_id: &str, topics: &TopicsView) -> DescribedGroup {
        match self.share_groups.get(group_id) {
            Some(g) => g.describe(topics),
            None => {
                let message = if self.groups.contains_key(group_id)
                    || self.consumer_groups.contains_key(group_id)
                {
                    format!("Group {group_id} is not a share group.")
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

    /// The share groups matching ListGroups filters (empty filter = all).
    pub fn list_share_groups(&self, states: &[String], types: &[String]) -> Vec<ListedGroup> {
        let type_ok = types.is_empty()
            || types
                .iter()
                .any(|t| t.eq_ignore_ascii_case(SHARE_GROUP_TYPE));
        if !type_ok {
            return Vec::new();
        }
        self.share_groups
            .values()
            .filter(|g| {
                states.is_empty()
                    || states
                        .iter()
                        .any(|s| s.eq_ignore_ascii_case(g.state().as_str()))
            })
            .map(|g| ListedGroup {
                group_id: g.group_id.clone(),
                protocol_type: SHARE_GROUP_TYPE.to_string(),
                group_state: g.state().as_str().to_string(),
                group_type: SHARE_GROUP_TYPE.to_string(),
                ..Default::default()
            })
            .collect()
    }

    /// DeleteGroups for a share group: only an empty one.
    pub(crate) fn delete_share_group(&mut self, group_id: &str) -> Result<(), CoordinatorError> {
        let Some(g) = self.share_groups.get(group_id) else {
            return Err(CoordinatorError::GroupIdNotFound);
        };
        if !g.is_empty() {
            return Err(CoordinatorError::NonEmptyGroup);
        }
        let recs = g.tombstones();
        self.write(recs)
    }
}
