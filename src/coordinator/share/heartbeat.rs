//! ShareGroupHeartbeat v1 (KIP-932) on one shard: Kafka's
//! `GroupMetadataManager.shareGroupHeartbeat` / `shareGroupLeave` and the session timer.
//!
//! A heartbeat computes records from the current state (member subscription, group epoch and
//! metadata hash, target assignment, current assignment), writes them, and answers from the
//! state their replay produced. A member reaches its target assignment in one step
//! (`ShareGroupAssignmentBuilder`): share partitions are never revoked first.
use std::collections::BTreeMap;

use super::assignor::{self, MemberSpec};
use super::records as rec;
use super::{metadata_hash, ShareGroup, ShareGroupMember, LEAVE_GROUP_MEMBER_EPOCH};
use crate::coordinator::consumer::{Assignment, TopicsView};
use crate::coordinator::error::CoordinatorError;
use crate::coordinator::runtime::CoordinatorRecord;
use crate::coordinator::service::RequestContext;
use crate::coordinator::shard::GroupCoordinatorShard;
use crate::protocol::messages::share_group_heartbeat_request::ShareGroupHeartbeatRequest;
use crate::protocol::messages::share_group_heartbeat_response::{
    Assignment as ResponseAssignment, ShareGroupHeartbeatResponse, TopicPartitions,
};

/// Kafka's `throwIfShareGroupHeartbeatRequestIsInvalid`.
fn validate(req: &ShareGroupHeartbeatRequest) -> Result<(), CoordinatorError> {
    let invalid = |m: &str| Err(CoordinatorError::InvalidRequest(m.to_string()));
    if req.group_id.is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if req.rack_id.as_deref() == Some("") {
        return invalid("RackId can't be empty.");
    }
    if req.member_id.is_empty() {
        return invalid("MemberId can't be empty.");
    }
    if req.member_id.len() > 36 {
        // Kafka: the member id a client generates is a UUID string.
        return invalid("MemberId can't be longer than 36 characters.");
    }
    match req.member_epoch {
        0 => {
            if req
                .subscribed_topic_names
                .as_ref()
                .is_none_or(|t| t.is_empty())
            {
                return invalid("SubscribedTopicNames must be set in first request.");
            }
        }
        e if e > 0 || e == LEAVE_GROUP_MEMBER_EPOCH => {}
        _ => return invalid("MemberEpoch is invalid."),
    }
    Ok(())
}

fn error_response(e: &CoordinatorError) -> ShareGroupHeartbeatResponse {
    ShareGroupHeartbeatResponse {
        error_code: e.wire(),
        error_message: e.message(),
        ..Default::default()
    }
}

/// Kafka's `throwIfShareGroupMemberEpochIsInvalid`: ahead is fenced; behind is fenced unless
/// it is the previous epoch (the response that bumped it may have been lost).
fn check_member_epoch(m: &ShareGroupMember, received: i32) -> Result<(), CoordinatorError> {
    if received > m.member_epoch
        || (received < m.member_epoch && received != m.previous_member_epoch)
    {
        return Err(CoordinatorError::FencedMemberEpoch);
    }
    Ok(())
}

/// The subscribed topics that exist, by name: (id, partition count).
fn subscribed_metadata<'a>(
    members: impl Iterator<Item = &'a ShareGroupMember>,
    topics: &TopicsView,
) -> BTreeMap<String, (crate::protocol::codec::Uuid, i32)> {
    let mut out = BTreeMap::new();
    for m in members {
        for name in &m.subscribed_topic_names {
            if let Some(&(id, parts)) = topics.by_name.get(name) {
                out.insert(name.clone(), (id, parts));
            }
        }
    }
    out
}

/// Records that remove a member: current assignment, target assignment, subscription.
fn remove_member_records(group_id: &str, member_id: &str) -> Vec<CoordinatorRecord> {
    vec![
        rec::current_assignment_tombstone(group_id, member_id),
        rec::target_assignment_tombstone(group_id, member_id),
        rec::member_subscription_tombstone(group_id, member_id),
    ]
}

impl GroupCoordinatorShard {
    /// The share group `group_id`, or the error Kafka gives when another kind of group holds
    /// the id (`getOrMaybeCreateShareGroup`).
    fn share_group_or_new(
        &self,
        group_id: &str,
        create: bool,
    ) -> Result<ShareGroup, CoordinatorError> {
        if let Some(g) = self.share_groups.get(group_id) {
            return Ok(g.clone());
        }
        let other = self.consumer_groups.contains_key(group_id)
            || self
                .groups
                .get(group_id)
                .is_some_and(|g| !g.members.is_empty() || g.protocol_type.is_some());
        if other {
            return Err(CoordinatorError::GroupNotFound(format!(
                "Group {group_id} is not a share group."
            )));
        }
        if !create {
            return Err(CoordinatorError::GroupNotFound(format!(
                "Share group {group_id} not found."
            )));
        }
        Ok(ShareGroup::new(group_id))
    }

    /// ShareGroupHeartbeat: join, heartbeat, or leave.
    pub fn share_group_heartbeat(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        req: &ShareGroupHeartbeatRequest,
        topics: &TopicsView,
    ) -> ShareGroupHeartbeatResponse {
        if let Err(e) = validate(req) {
            return error_response(&e);
        }
        let result = if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH {
            self.share_group_leave(req, topics)
        } else {
            self.share_group_join_or_heartbeat(now_ms, ctx, req, topics)
        };
        result.unwrap_or_else(|e| error_response(&e))
    }

    fn share_group_join_or_heartbeat(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        req: &ShareGroupHeartbeatRequest,
        topics: &TopicsView,
    ) -> Result<ShareGroupHeartbeatResponse, CoordinatorError> {
        let group_id = req.group_id.as_str();
        let create = req.member_epoch == 0;
        let group = self.share_group_or_new(group_id, create)?;
        let member_id = req.member_id.clone();
        let max_size = self.config.share_group_max_size.max(0) as usize;
        if group.members.len() >= max_size && !group.members.contains_key(&member_id) {
            return Err(CoordinatorError::GroupMaxSizeReached);
        }
        let member = match group.members.get(&member_id) {
            Some(m) => {
                check_member_epoch(m, req.member_epoch)?;
                m.clone()
            }
            None if create => ShareGroupMember::new(&member_id),
            None => return Err(CoordinatorError::UnknownMemberId),
        };
        let mut records = Vec::new();

        // 1. The member's subscription.
        let mut updated = member.clone();
        if let Some(r) = &req.rack_id {
            updated.rack_id = Some(r.clone());
        }
        if let Some(names) = &req.subscribed_topic_names {
            updated.subscribed_topic_names = names.clone();
        }
        updated.client_id = ctx.client_id.clone();
        updated.client_host = ctx.client_host.clone();
        let is_new = !group.members.contains_key(&member_id);
        let mut bump = false;
        if is_new || updated.subscription_differs(&member) {
            records.push(rec::member_subscription_record(group_id, &updated));
            bump |= is_new || updated.subscribed_topic_names != member.subscribed_topic_names;
        }
        let mut members = group.members.clone();
        members.insert(member_id.clone(), updated.clone());

        // The subscribed topics as they are now: created, deleted or grown topics bump the
        // epoch through the metadata hash.
        let metadata = subscribed_metadata(members.values(), topics);
        let hash = metadata_hash(metadata.iter().map(|(n, (id, p))| (n.as_str(), *id, *p)));
        bump |= hash != group.metadata_hash;
        let mut group_epoch = group.group_epoch;
        if bump {
            group_epoch = group_epoch.saturating_add(1);
            records.push(rec::group_epoch_record(group_id, group_epoch, hash));
        }

        // 2. A new target assignment when the group epoch moved past it.
        let mut target_assignment = group.target_assignment.clone();
        let mut target_epoch = group.assignment_epoch;
        if group_epoch > group.assignment_epoch {
            let specs: BTreeMap<String, MemberSpec> = members
                .iter()
                .map(|(id, m)| {
                    let spec = MemberSpec {
                        topics: m
                            .subscribed_topic_names
                            .iter()
                            .filter_map(|n| metadata.get(n).map(|(t, _)| *t))
                            .collect(),
                        current: target_assignment.get(id).cloned().unwrap_or_default(),
                    };
                    (id.clone(), spec)
                })
                .collect();
            let partitions = metadata.values().copied().collect();
            let new_target = assignor::assign(&specs, &partitions);
            for (id, a) in &new_target {
                if target_assignment.get(id) != Some(a) {
                    records.push(rec::target_assignment_record(group_id, id, a));
                }
            }
            records.push(rec::target_assignment_epoch_record(group_id, group_epoch));
            target_assignment = new_target;
            target_epoch = group_epoch;
        }

        // 3. The member moves to its target at once.
        let target: Assignment = target_assignment
            .get(&member_id)
            .cloned()
            .unwrap_or_default();
        let mut reconciled = updated.clone();
        if reconciled.member_epoch != target_epoch || reconciled.assigned_partitions != target {
            reconciled.previous_member_epoch = reconciled.member_epoch;
            reconciled.member_epoch = target_epoch;
            reconciled.assigned_partitions = target;
        }
        if is_new
            || reconciled.member_epoch != updated.member_epoch
            || reconciled.assigned_partitions != updated.assigned_partitions
        {
            records.push(rec::current_assignment_record(group_id, &reconciled));
        }
        let full_request = req.subscribed_topic_names.is_some();
        let send_assignment = req.member_epoch == 0
            || full_request
            || reconciled.assigned_partitions != member.assigned_partitions;

        self.write(records)?;

        let session_ms = self.config.share_session_timeout_ms(group_id) as i64;
        if let Some(g) = self.share_groups.get_mut(group_id) {
            g.session_deadlines_ms
                .insert(member_id.clone(), now_ms.saturating_add(session_ms));
        }
        let m = self
            .share_groups
            .get(group_id)
            .and_then(|g| g.members.get(&member_id))
            .cloned()
            .unwrap_or(reconciled);
        Ok(ShareGroupHeartbeatResponse {
            member_id: Some(member_id),
            member_epoch: m.member_epoch,
            heartbeat_interval_ms: self.config.share_heartbeat_interval_ms(group_id),
            assignment: send_assignment.then(|| ResponseAssignment {
                topic_partitions: m
                    .assigned_partitions
                    .iter()
                    .filter(|(_, ps)| !ps.is_empty())
                    .map(|(t, ps)| TopicPartitions {
                        topic_id: *t,
                        partitions: ps.iter().copied().collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    /// Epoch -1: the member leaves; the others are reassigned at their next heartbeat.
    fn share_group_leave(
        &mut self,
        req: &ShareGroupHeartbeatRequest,
        topics: &TopicsView,
    ) -> Result<ShareGroupHeartbeatResponse, CoordinatorError> {
        let group = self.share_group_or_new(&req.group_id, false)?;
        if !group.members.contains_key(&req.member_id) {
            return Err(CoordinatorError::UnknownMemberId);
        }
        self.fence_share_group_member(&req.group_id, &req.member_id, topics)?;
        Ok(ShareGroupHeartbeatResponse {
            member_id: Some(req.member_id.clone()),
            member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
            ..Default::default()
        })
    }

    /// Removes a member and bumps the group epoch (`shareGroupFenceMember`). With an empty
    /// `topics` view (timers), the metadata hash is left as it was.
    pub(crate) fn fence_share_group_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        topics: &TopicsView,
    ) -> Result<(), CoordinatorError> {
        let Some(group) = self.share_groups.get(group_id) else {
            return Ok(());
        };
        let mut records = remove_member_records(group_id, member_id);
        let hash = if topics.by_name.is_empty() {
            group.metadata_hash
        } else {
            let metadata = subscribed_metadata(
                group.members.values().filter(|m| m.member_id != member_id),
                topics,
            );
            metadata_hash(metadata.iter().map(|(n, (id, p))| (n.as_str(), *id, *p)))
        };
        records.push(rec::group_epoch_record(
            group_id,
            group.group_epoch.saturating_add(1),
            hash,
        ));
        self.write(records)?;
        self.share_members_left
            .push((group_id.to_string(), member_id.to_string()));
        Ok(())
    }

    /// Fences share-group members whose session expired.
    pub(crate) fn fire_share_group_timers(&mut self, now_ms: i64) {
        let mut expired = Vec::new();
        for g in self.share_groups.values() {
            for (id, deadline) in &g.session_deadlines_ms {
                if *deadline <= now_ms {
                    expired.push((g.group_id.clone(), id.clone()));
                }
            }
        }
        for (group_id, member_id) in expired {
            tracing::info!(group = %group_id, member = %member_id, "share group member session expired");
            if let Err(e) =
                self.fence_share_group_member(&group_id, &member_id, &TopicsView::default())
            {
                tracing::warn!(group = %group_id, error = %e, "failed to fence share group member");
                if let Some(g) = self.share_groups.get_mut(&group_id) {
                    g.session_deadlines_ms
                        .insert(member_id, now_ms.saturating_add(1_000));
                }
            }
        }
    }
}
