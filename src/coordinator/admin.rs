//! ListGroups v0-5, DescribeGroups v0-6 and DeleteGroups v0-2 for one shard (Kafka's
//! `GroupMetadataManager.listGroups`, `describeGroups`, `deleteGroups`). The facade merges the
//! shards' answers.
use crate::coordinator::error::CoordinatorError;
use crate::coordinator::group::ClassicGroupState;
use crate::coordinator::records;
use crate::coordinator::shard::GroupCoordinatorShard;
use crate::protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use crate::protocol::messages::list_groups_response::ListedGroup;

/// The group type ListGroups v5 reports for classic groups.
pub const CLASSIC_GROUP_TYPE: &str = "classic";

impl GroupCoordinatorShard {
    /// The groups matching the filters (empty filter = all; matched case-insensitively).
    pub fn list_groups(&self, states: &[String], types: &[String]) -> Vec<ListedGroup> {
        let type_ok = types.is_empty()
            || types
                .iter()
                .any(|t| t.eq_ignore_ascii_case(CLASSIC_GROUP_TYPE));
        if !type_ok {
            let mut out = self.list_consumer_groups(states, types);
            out.extend(self.list_share_groups(states, types));
            return out;
        }
        let mut out: Vec<ListedGroup> = self
            .groups
            .values()
            .filter(|g| !g.is_in(ClassicGroupState::Dead))
            .filter(|g| {
                states.is_empty()
                    || states
                        .iter()
                        .any(|s| s.eq_ignore_ascii_case(g.state.as_str()))
            })
            .map(|g| ListedGroup {
                group_id: g.group_id.clone(),
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                group_state: g.state.as_str().to_string(),
                group_type: CLASSIC_GROUP_TYPE.to_string(),
                ..Default::default()
            })
            .collect();
        out.extend(self.list_consumer_groups(states, types));
        out.extend(self.list_share_groups(states, types));
        out
    }

    /// Describes one group. An unknown group, or a KIP-848 consumer group, is reported as
    /// Dead: with no error before v6, with GROUP_ID_NOT_FOUND and Kafka's message from v6
    /// (KIP-1043).
    pub fn describe_group(&self, group_id: &str, version: i16) -> DescribedGroup {
        let Some(g) = self.groups.get(group_id) else {
            let (error_code, error_message) = if version >= 6 {
                let message = if self.consumer_groups.contains_key(group_id)
                    || self.share_groups.contains_key(group_id)
                {
                    format!("Group {group_id} is not a classic group.")
                } else {
                    format!("Group {group_id} not found.")
                };
                (CoordinatorError::GroupIdNotFound.wire(), Some(message))
            } else {
                (0, None)
            };
            return DescribedGroup {
                error_code,
                error_message,
                group_id: group_id.to_string(),
                group_state: ClassicGroupState::Dead.as_str().to_string(),
                ..Default::default()
            };
        };
        // Metadata and assignments are only meaningful once the group is Stable.
        let stable = g.is_in(ClassicGroupState::Stable);
        let protocol = g.protocol_name.clone().unwrap_or_default();
        DescribedGroup {
            error_code: 0,
            group_id: group_id.to_string(),
            group_state: g.state.as_str().to_string(),
            protocol_type: g.protocol_type.clone().unwrap_or_default(),
            protocol_data: if stable {
                protocol.clone()
            } else {
                String::new()
            },
            members: g
                .members
                .values()
                .map(|m| DescribedGroupMember {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    member_metadata: if stable {
                        m.metadata(&protocol).cloned().unwrap_or_default()
                    } else {
                        Default::default()
                    },
                    member_assignment: if stable {
                        m.assignment.clone()
                    } else {
                        Default::default()
                    },
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Deletes an empty group with its offsets: offset tombstones, then the group tombstone.
    pub fn delete_group(&mut self, group_id: &str) -> Result<(), CoordinatorError> {
        if group_id.is_empty() {
            return Err(CoordinatorError::InvalidGroupId);
        }
        if self.consumer_groups.contains_key(group_id) {
            return self.delete_consumer_group(group_id);
        }
        if self.share_groups.contains_key(group_id) {
            return self.delete_share_group(group_id);
        }
        let Some(g) = self.groups.get(group_id) else {
            return Err(CoordinatorError::GroupIdNotFound);
        };
        match g.state {
            ClassicGroupState::Dead => return Err(CoordinatorError::GroupIdNotFound),
            ClassicGroupState::Empty => {}
            _ => return Err(CoordinatorError::NonEmptyGroup),
        }
        let mut recs = self.offset_tombstones(group_id);
        recs.push(records::group_metadata_tombstone(group_id));
        self.write(recs)
    }
}
