//! ConsumerGroupHeartbeat v0-1 (KIP-848) on one shard: Kafka's
//! `GroupMetadataManager.consumerGroupHeartbeat` / `consumerGroupLeave`, the session and
//! revocation timers, and member fencing.
//!
//! A heartbeat computes records from the current state (member subscription, subscription
//! metadata, group epoch, target assignment, current assignment), writes them, and answers
//! from the state their replay produced.
use std::collections::BTreeMap;

use super::assignor::{self, GroupSpec, MemberSubscription};
use super::reconcile;
use super::records as rec;
use super::{
    assignment_from, is_subset, member_topic_names, subscribed_topic_names, Assignment,
    ConsumerGroup, ConsumerGroupMember, MemberState, TopicMetadata, TopicsView,
    LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH,
};
use crate::coordinator::error::CoordinatorError;
use crate::coordinator::records as classic_records;
use crate::coordinator::runtime::CoordinatorRecord;
use crate::coordinator::service::RequestContext;
use crate::coordinator::shard::GroupCoordinatorShard;
use crate::protocol::codec::Uuid;
use crate::protocol::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use crate::protocol::messages::consumer_group_heartbeat_response::{
    Assignment as ResponseAssignment, ConsumerGroupHeartbeatResponse, TopicPartitions,
};

/// Kafka's `throwIfConsumerGroupHeartbeatRequestIsInvalid`.
fn validate(
    req: &ConsumerGroupHeartbeatRequest,
    api_version: i16,
    assignors: &[String],
) -> Result<(), CoordinatorError> {
    let invalid = |m: &str| Err(CoordinatorError::InvalidRequest(m.to_string()));
    if req.group_id.is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if req.instance_id.as_deref() == Some("") {
        return invalid("InstanceId can't be empty.");
    }
    if req.rack_id.as_deref() == Some("") {
        return invalid("RackId can't be empty.");
    }
    if api_version >= 1 && req.member_id.is_empty() {
        return invalid("MemberId can't be empty.");
    }
    match req.member_epoch {
        0 => {
            if req.rebalance_timeout_ms == -1 {
                return invalid("RebalanceTimeoutMs must be provided in first request.");
            }
            if req
                .topic_partitions
                .as_ref()
                .map(|t| !t.is_empty())
                .unwrap_or(true)
            {
                return invalid("TopicPartitions must be empty when (re-)joining.");
            }
            if req.subscribed_topic_names.is_none() && req.subscribed_topic_regex.is_none() {
                return invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                );
            }
        }
        e if e > 0 || e == LEAVE_GROUP_MEMBER_EPOCH => {
            if req.member_id.is_empty() {
                return invalid("MemberId can't be empty.");
            }
        }
        LEAVE_GROUP_STATIC_MEMBER_EPOCH => {
            if req.member_id.is_empty() {
                return invalid("MemberId can't be empty.");
            }
            if req.instance_id.is_none() {
                return invalid("InstanceId can't be null.");
            }
        }
        _ => return invalid("MemberEpoch is invalid."),
    }
    if let Some(a) = &req.server_assignor {
        if !assignors.iter().any(|x| x == a) {
            return Err(CoordinatorError::UnsupportedAssignor);
        }
    }
    if let Some(re) = &req.subscribed_topic_regex {
        // An empty expression means "no regex" (librdkafka sends one with topic names).
        if !re.is_empty() && super::compile_regex(re).is_err() {
            return Err(CoordinatorError::InvalidRegularExpression);
        }
    }
    Ok(())
}

fn error_response(e: &CoordinatorError) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse {
        error_code: e.wire(),
        error_message: e.message(),
        ..Default::default()
    }
}

fn owned_from_request(req: &ConsumerGroupHeartbeatRequest) -> Option<Assignment> {
    req.topic_partitions
        .as_ref()
        .map(|tps| assignment_from(tps.iter().map(|tp| (tp.topic_id, tp.partitions.as_slice()))))
}

/// The subscription metadata of `names` from the broker's topics.
fn subscription_metadata(
    names: &std::collections::BTreeSet<String>,
    topics: &TopicsView,
) -> BTreeMap<String, TopicMetadata> {
    names
        .iter()
        .filter_map(|n| {
            topics.by_name.get(n).map(|(id, parts)| {
                (
                    n.clone(),
                    TopicMetadata {
                        topic_id: *id,
                        topic_name: n.clone(),
                        num_partitions: *parts,
                    },
                )
            })
        })
        .collect()
}

/// Records that remove a member (`removeMember`): current assignment, then target
/// assignment, then subscription; the order matters for readers of the log.
pub(crate) fn remove_member_records(group_id: &str, member_id: &str) -> Vec<CoordinatorRecord> {
    vec![
        rec::current_assignment_tombstone(group_id, member_id),
        rec::target_assignment_tombstone(group_id, member_id),
        rec::member_subscription_tombstone(group_id, member_id),
    ]
}

impl GroupCoordinatorShard {
    /// ConsumerGroupHeartbeat: join, heartbeat, reconcile, or leave.
    pub fn consumer_group_heartbeat(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        req: &ConsumerGroupHeartbeatRequest,
        topics: &TopicsView,
    ) -> ConsumerGroupHeartbeatResponse {
        if let Err(e) = validate(req, ctx.api_version, &self.config.consumer_group_assignors) {
            return error_response(&e);
        }
        let result = if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
            || req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
        {
            self.consumer_group_leave(req, topics)
        } else {
            self.consumer_group_join_or_heartbeat(now_ms, ctx, req, topics)
        };
        result.unwrap_or_else(|e| error_response(&e))
    }

    fn consumer_group_join_or_heartbeat(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        req: &ConsumerGroupHeartbeatRequest,
        topics: &TopicsView,
    ) -> Result<ConsumerGroupHeartbeatResponse, CoordinatorError> {
        let group_id = req.group_id.as_str();
        let create = req.member_epoch == 0;
        let mut records = Vec::new();

        if self.share_groups.contains_key(group_id) {
            return Err(CoordinatorError::GroupNotFound(format!(
                "Group {group_id} is not a consumer group."
            )));
        }
        // The group: a classic group with members cannot be used; an empty one is deleted with
        // a tombstone on a join (Kafka's `maybeDeleteEmptyClassicGroup`). The consumer group is
        // looked up first: an empty classic group beside it is what an older replay of a
        // transaction's COMMIT marker left (issue 37), and it goes with this heartbeat.
        let consumer = self.consumer_groups.contains_key(group_id);
        if let Some(classic) = self.groups.get(group_id) {
            if !classic.members.is_empty() {
                return Err(CoordinatorError::GroupIdNotFound);
            }
            if !create && !consumer {
                return Err(CoordinatorError::UnknownMemberId);
            }
            records.push(classic_records::group_metadata_tombstone(group_id));
        }
        let empty = ConsumerGroup::new(group_id);
        let group = match self.consumer_groups.get(group_id) {
            Some(g) => g,
            None if create => &empty,
            // Kafka answers an unknown group with UNKNOWN_MEMBER_ID so the member rejoins.
            None => return Err(CoordinatorError::UnknownMemberId),
        };
        let max_size = self.config.consumer_group_max_size.max(0) as usize;
        if group.members.len() >= max_size
            && (req.member_id.is_empty() || !group.members.contains_key(&req.member_id))
        {
            return Err(CoordinatorError::GroupMaxSizeReached);
        }
        let member_id = if req.member_id.is_empty() {
            // v0: the coordinator names the member.
            Uuid::random().to_string()
        } else {
            req.member_id.clone()
        };
        let owned = owned_from_request(req);

        // The member, new or existing (static members may replace their previous instance).
        let mut replaced_old: Option<String> = None;
        let member = match req.instance_id.as_deref() {
            None => match group.members.get(&member_id) {
                Some(m) => {
                    check_member_epoch(m, req.member_epoch, owned.as_ref())?;
                    m.clone()
                }
                None if create => ConsumerGroupMember::new(&member_id),
                None => return Err(CoordinatorError::UnknownMemberId),
            },
            Some(instance) => match group.static_member(instance) {
                None if create => group
                    .members
                    .get(&member_id)
                    .cloned()
                    .unwrap_or_else(|| ConsumerGroupMember::new(&member_id)),
                None => return Err(CoordinatorError::UnknownMemberId),
                Some(old) if create => {
                    // Only an instance that left with epoch -2 may be replaced.
                    if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                        return Err(CoordinatorError::UnreleasedInstanceId);
                    }
                    // The new instance takes over the previous one's assignment.
                    let mut new = old.clone();
                    new.member_id = member_id.clone();
                    new.member_epoch = 0;
                    new.previous_member_epoch = 0;
                    records.extend(remove_member_records(group_id, &old.member_id));
                    if let Some(t) = group.target_assignment.get(&old.member_id) {
                        records.push(rec::target_assignment_record(group_id, &member_id, t));
                    }
                    records.push(rec::member_subscription_record(group_id, &new));
                    records.push(rec::current_assignment_record(group_id, &new));
                    replaced_old = Some(old.member_id.clone());
                    new
                }
                Some(old) => {
                    if old.member_id != member_id {
                        return Err(CoordinatorError::FencedInstanceId);
                    }
                    check_member_epoch(old, req.member_epoch, owned.as_ref())?;
                    old.clone()
                }
            },
        };
        let replaced = replaced_old.is_some();

        // 1. The member's subscription.
        let mut updated = member.clone();
        if let Some(i) = &req.instance_id {
            updated.instance_id = Some(i.clone());
        }
        if let Some(r) = &req.rack_id {
            updated.rack_id = Some(r.clone());
        }
        if req.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        if let Some(a) = &req.server_assignor {
            updated.server_assignor = Some(a.clone());
        }
        if let Some(names) = &req.subscribed_topic_names {
            updated.subscribed_topic_names = names.clone();
        }
        if let Some(re) = &req.subscribed_topic_regex {
            updated.subscribed_topic_regex = Some(re.clone());
        }
        updated.client_id = ctx.client_id.clone();
        updated.client_host = ctx.client_host.clone();

        let mut group_epoch = group.group_epoch;
        let mut bump = group.group_epoch == 0;
        let is_new = !group.members.contains_key(&member_id) && !replaced;
        if is_new || updated.subscription_differs(&member) {
            records.push(rec::member_subscription_record(group_id, &updated));
            bump |= updated.subscribed_topic_names != member.subscribed_topic_names
                || updated.subscribed_topic_regex != member.subscribed_topic_regex;
        }

        // The members as they will be: the updated member replaces its old self (and a
        // replaced static instance).
        let mut members: BTreeMap<String, ConsumerGroupMember> = group
            .members
            .iter()
            .filter(|(id, _)| **id != member_id && Some(*id) != replaced_old.as_ref())
            .map(|(id, m)| (id.clone(), m.clone()))
            .collect();
        members.insert(member_id.clone(), updated.clone());

        // Subscription metadata: a changed subscription or changed topics bump the epoch.
        let names = subscribed_topic_names(members.values(), topics);
        let metadata = subscription_metadata(&names, topics);
        if metadata != group.subscription_metadata {
            bump = true;
            records.push(rec::subscription_metadata_record(
                group_id,
                metadata.values(),
            ));
        }
        if bump {
            group_epoch = group_epoch.saturating_add(1);
            records.push(rec::group_epoch_record(group_id, group_epoch));
            // Kafka counts a consumer group rebalance per group epoch bump.
            self.metrics.consumer_group_rebalances.inc();
        }

        // 2. A new target assignment when the group epoch moved past it.
        let mut target_assignment = group.target_assignment.clone();
        if let Some(old) = &replaced_old {
            if let Some(t) = target_assignment.remove(old) {
                target_assignment.insert(member_id.clone(), t);
            }
        }
        let mut target_epoch = group.assignment_epoch;
        if group_epoch > group.assignment_epoch {
            let assignor_name = ConsumerGroup::preferred_server_assignor(
                members.values(),
                self.config.default_assignor(),
            );
            let spec = GroupSpec {
                members: members
                    .iter()
                    .map(|(id, m)| {
                        let topics_of = member_topic_names(m, topics)
                            .iter()
                            .filter_map(|n| metadata.get(n).map(|t| t.topic_id))
                            .collect();
                        (
                            id.clone(),
                            MemberSubscription {
                                topics: topics_of,
                                current: target_assignment.get(id).cloned().unwrap_or_default(),
                            },
                        )
                    })
                    .collect(),
                partitions: metadata
                    .values()
                    .map(|t| (t.topic_id, t.num_partitions))
                    .collect(),
            };
            let new_target = assignor::assign(&assignor_name, &spec)
                .ok_or(CoordinatorError::UnsupportedAssignor)?;
            for (id, a) in &new_target {
                if target_assignment.get(id) != Some(a) {
                    records.push(rec::target_assignment_record(group_id, id, a));
                }
            }
            records.push(rec::target_assignment_epoch_record(group_id, group_epoch));
            target_assignment = new_target;
            target_epoch = group_epoch;
        }

        // 3. Reconcile the member towards its target.
        let target = target_assignment
            .get(&member_id)
            .cloned()
            .unwrap_or_default();
        let reconciled = if updated.is_reconciled_to(target_epoch) {
            updated.clone()
        } else {
            let epochs = |t: Uuid, p: i32| group.current_partition_epoch(t, p);
            reconcile::next_assignment(&updated, target_epoch, &target, owned.as_ref(), &epochs)?
        };
        if is_new || reconciled.assignment_differs(&updated) {
            records.push(rec::current_assignment_record(group_id, &reconciled));
        }
        let full_request = req.rebalance_timeout_ms != -1
            && (req.subscribed_topic_names.is_some() || req.subscribed_topic_regex.is_some())
            && req.topic_partitions.is_some();
        let send_assignment = req.member_epoch == 0
            || full_request
            || reconciled.assigned_partitions != member.assigned_partitions;

        self.write(records)?;

        // Timers (volatile): the session restarts; revocation is bounded by the rebalance
        // timeout.
        let session_ms = self.config.consumer_session_timeout_ms(group_id) as i64;
        if let Some(g) = self.consumer_groups.get_mut(group_id) {
            let timers = g.timers.entry(member_id.clone()).or_default();
            timers.session_deadline_ms = Some(now_ms.saturating_add(session_ms));
            if reconciled.state == MemberState::UnrevokedPartitions {
                if timers.revocation_deadline.map(|(_, e)| e) != Some(reconciled.member_epoch) {
                    timers.revocation_deadline = Some((
                        now_ms.saturating_add(reconciled.rebalance_timeout_ms.max(0) as i64),
                        reconciled.member_epoch,
                    ));
                }
            } else {
                timers.revocation_deadline = None;
            }
        }
        let m = self
            .consumer_groups
            .get(group_id)
            .and_then(|g| g.members.get(&member_id))
            .cloned()
            .unwrap_or(reconciled);
        Ok(ConsumerGroupHeartbeatResponse {
            member_id: Some(member_id),
            member_epoch: m.member_epoch,
            heartbeat_interval_ms: self.config.consumer_heartbeat_interval_ms(group_id),
            assignment: send_assignment.then(|| ResponseAssignment {
                topic_partitions: m
                    .assigned_partitions
                    .iter()
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

    /// Epoch -1 (leave) and -2 (static member pauses; keeps its assignment until it rejoins
    /// or its session expires).
    fn consumer_group_leave(
        &mut self,
        req: &ConsumerGroupHeartbeatRequest,
        topics: &TopicsView,
    ) -> Result<ConsumerGroupHeartbeatResponse, CoordinatorError> {
        let group_id = req.group_id.as_str();
        let group = self
            .consumer_groups
            .get(group_id)
            .ok_or(CoordinatorError::GroupIdNotFound)?;
        let member = match req.instance_id.as_deref() {
            None => group
                .members
                .get(&req.member_id)
                .ok_or(CoordinatorError::UnknownMemberId)?,
            Some(instance) => {
                let m = group
                    .static_member(instance)
                    .ok_or(CoordinatorError::UnknownMemberId)?;
                if m.member_id != req.member_id {
                    return Err(CoordinatorError::FencedInstanceId);
                }
                m
            }
        };
        let member_id = member.member_id.clone();
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH && req.instance_id.is_some() {
            let mut leaving = member.clone();
            leaving.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
            leaving.partitions_pending_revocation.clear();
            self.write(vec![rec::current_assignment_record(group_id, &leaving)])?;
        } else {
            self.fence_consumer_group_member(group_id, &member_id, topics)?;
        }
        Ok(ConsumerGroupHeartbeatResponse {
            member_id: Some(member_id),
            member_epoch: req.member_epoch,
            ..Default::default()
        })
    }

    /// Removes a member and bumps the group epoch (`consumerGroupFenceMember`). With no
    /// `topics` view (timers), the subscription metadata keeps the topics still subscribed.
    pub(crate) fn fence_consumer_group_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        topics: &TopicsView,
    ) -> Result<(), CoordinatorError> {
        let Some(group) = self.consumer_groups.get(group_id) else {
            return Ok(());
        };
        let mut records = remove_member_records(group_id, member_id);
        let remaining = group.members.values().filter(|m| m.member_id != member_id);
        let names = subscribed_topic_names(remaining, topics);
        let metadata: BTreeMap<String, TopicMetadata> = if topics.by_name.is_empty() {
            group
                .subscription_metadata
                .iter()
                .filter(|(n, _)| {
                    group.members.values().any(|m| {
                        m.member_id != member_id
                            && (m.subscribed_topic_names.contains(n)
                                || m.subscribed_topic_regex.is_some())
                    })
                })
                .map(|(n, t)| (n.clone(), t.clone()))
                .collect()
        } else {
            subscription_metadata(&names, topics)
        };
        if metadata != group.subscription_metadata {
            records.push(rec::subscription_metadata_record(
                group_id,
                metadata.values(),
            ));
        }
        records.push(rec::group_epoch_record(
            group_id,
            group.group_epoch.saturating_add(1),
        ));
        self.write(records)
    }

    /// Fires the session and revocation timers of consumer groups.
    pub(crate) fn fire_consumer_group_timers(&mut self, now_ms: i64) {
        let mut expired = Vec::new();
        for g in self.consumer_groups.values() {
            for (id, t) in &g.timers {
                let session = t.session_deadline_ms.map(|d| d <= now_ms).unwrap_or(false);
                let revocation = t
                    .revocation_deadline
                    .map(|(d, epoch)| {
                        d <= now_ms
                            && g.members
                                .get(id)
                                .map(|m| {
                                    m.state == MemberState::UnrevokedPartitions
                                        && m.member_epoch == epoch
                                })
                                .unwrap_or(false)
                    })
                    .unwrap_or(false);
                if session || revocation {
                    expired.push((g.group_id.clone(), id.clone(), session));
                }
            }
        }
        for (group_id, member_id, session) in expired {
            tracing::info!(group = %group_id, member = %member_id,
                reason = if session { "session timeout" } else { "revocation timeout" },
                "fencing consumer group member");
            if let Err(e) =
                self.fence_consumer_group_member(&group_id, &member_id, &TopicsView::default())
            {
                tracing::warn!(group = %group_id, error = %e, "failed to fence member");
                // Retry on a later tick rather than spinning now.
                if let Some(t) = self
                    .consumer_groups
                    .get_mut(&group_id)
                    .and_then(|g| g.timers.get_mut(&member_id))
                {
                    t.session_deadline_ms = Some(now_ms.saturating_add(1_000));
                    t.revocation_deadline = None;
                }
            }
        }
    }
}

/// Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`: epoch 0 is a rejoin and passes
/// (KAFKA-19233, Kafka 4.3: a fenced member rejoins with its member id; it keeps its epoch and
/// gets its assignment again); a greater epoch is fenced; a smaller one is fenced unless it is
/// the previous epoch and the member owns a subset of its assignment (the response that bumped
/// it may have been lost).
fn check_member_epoch(
    member: &ConsumerGroupMember,
    received: i32,
    owned: Option<&Assignment>,
) -> Result<(), CoordinatorError> {
    if received == 0 {
        return Ok(());
    }
    if received > member.member_epoch {
        return Err(CoordinatorError::FencedMemberEpoch);
    }
    if received < member.member_epoch
        && (received != member.previous_member_epoch
            || !is_subset(owned, &member.assigned_partitions))
    {
        return Err(CoordinatorError::FencedMemberEpoch);
    }
    Ok(())
}
