//! JoinGroup v0-9 (Kafka's `GroupMetadataManager.classicGroupJoin` and friends).
//!
//! - v4+ (KIP-394): a dynamic member joining with an empty member id gets a generated id
//!   `<client_id>-<uuid>` and MEMBER_ID_REQUIRED; it is pending until it rejoins with that id
//!   or its session timeout passes.
//! - v5+ (KIP-345): a known `group.instance.id` rejoining with a new member id replaces the old
//!   member; in a Stable group with unchanged protocols that happens without a rebalance, and
//!   the old member id is fenced (FENCED_INSTANCE_ID).
//! - A group created by a JoinGroup is written as an empty group record first, so it exists in
//!   the log like every other group (Kafka 4 does the same).
use bytes::Bytes;

use crate::coordinator::error::CoordinatorError;
use crate::coordinator::group::{ClassicGroupMember, ClassicGroupState, Waiter};
use crate::coordinator::records;
use crate::coordinator::runtime::ResponseId;
use crate::coordinator::service::RequestContext;
use crate::coordinator::shard::{fail_waiters, join_error, push_join, GroupCoordinatorShard};
use crate::protocol::messages::join_group_request::JoinGroupRequest;
use crate::protocol::messages::join_group_response::JoinGroupResponse;

/// The parts of a JoinGroup request the state machine needs.
struct Join<'a> {
    ctx: &'a RequestContext,
    waiter: Waiter,
    instance: Option<String>,
    protocol_type: String,
    protocols: Vec<(String, Bytes)>,
    session_timeout_ms: i32,
    rebalance_timeout_ms: i32,
    reason: String,
}

impl GroupCoordinatorShard {
    /// Answers a join whose group or member vanished under the same lock, which the group's
    /// invariants rule out: should one ever break, the request still gets an answer (the
    /// client rejoins) instead of waiting until the partition unloads.
    fn answer_lost(&mut self, join: Join<'_>) {
        tracing::warn!("a JoinGroup found its group or member gone while being handled");
        let response = join_error(CoordinatorError::UnknownMemberId, "");
        push_join(&mut self.completions, join.waiter, response)
    }

    /// Handles a JoinGroup. The response, immediate or delayed, arrives as a
    /// [`crate::coordinator::Completion::Join`] with `id`.
    pub fn join_group(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        request: &JoinGroupRequest,
        id: ResponseId,
    ) {
        let waiter = Waiter {
            id,
            api_version: ctx.api_version,
        };
        let fail = |out: &mut Vec<_>, error: CoordinatorError| {
            push_join(out, waiter, join_error(error, &request.member_id))
        };
        if request.group_id.is_empty() {
            return fail(&mut self.completions, CoordinatorError::InvalidGroupId);
        }
        let session = request.session_timeout_ms;
        if session < self.config.group_min_session_timeout_ms
            || session > self.config.group_max_session_timeout_ms
        {
            return fail(
                &mut self.completions,
                CoordinatorError::InvalidSessionTimeout,
            );
        }
        let join = Join {
            ctx,
            waiter,
            instance: request
                .group_instance_id
                .clone()
                .filter(|_| ctx.api_version >= 5),
            protocol_type: request.protocol_type.clone(),
            protocols: request
                .protocols
                .iter()
                .map(|p| (p.name.clone(), p.metadata.clone()))
                .collect(),
            session_timeout_ms: session,
            // v0 has no rebalance timeout: the session timeout stands in (as in Kafka).
            rebalance_timeout_ms: if ctx.api_version == 0 || request.rebalance_timeout_ms < 0 {
                session
            } else {
                request.rebalance_timeout_ms
            },
            reason: request
                .reason
                .clone()
                .unwrap_or_else(|| "not provided".to_string()),
        };
        let group_id = request.group_id.as_str();
        let member_id = request.member_id.as_str();
        let unknown = member_id.is_empty();
        if self.share_groups.contains_key(group_id) {
            // A share group's id: classic members can never join it (Kafka answers the same).
            return fail(
                &mut self.completions,
                CoordinatorError::InconsistentGroupProtocol,
            );
        }
        if let Some(consumer) = self.consumer_groups.get(group_id) {
            // A KIP-848 group: classic members cannot join it while it has members (no
            // online migration here); an empty one is deleted and replaced by a classic group.
            if !consumer.is_empty() {
                let error = if join.protocol_type
                    != crate::coordinator::group::CONSUMER_PROTOCOL_TYPE
                    || join.protocols.is_empty()
                {
                    CoordinatorError::InconsistentGroupProtocol
                } else {
                    CoordinatorError::GroupIdNotFound
                };
                return fail(&mut self.completions, error);
            }
            let tombstones = consumer.tombstones();
            if let Err(e) = self.write(tombstones) {
                return fail(&mut self.completions, e);
            }
        }
        if !self.groups.contains_key(group_id) {
            if !unknown {
                return fail(&mut self.completions, CoordinatorError::UnknownMemberId);
            }
            // Persist the new, empty group before anyone joins it.
            let mut g = crate::coordinator::group::ClassicGroup::new(group_id);
            g.protocol_type = None;
            let value = g.to_metadata_value(&Default::default(), now_ms);
            if let Err(e) = self.write(vec![records::group_metadata_record(group_id, &value)]) {
                return fail(&mut self.completions, e);
            }
        }
        let Some(group) = self.groups.get_mut(group_id) else {
            return fail(
                &mut self.completions,
                CoordinatorError::CoordinatorNotAvailable,
            );
        };
        if !accept_joining_member(group, member_id, self.config.group_max_size) {
            if let Some(mut m) = group.remove(member_id) {
                fail_waiters(
                    &mut self.completions,
                    &mut m,
                    CoordinatorError::GroupMaxSizeReached,
                );
            }
            return push_join(
                &mut self.completions,
                waiter,
                join_error(CoordinatorError::GroupMaxSizeReached, ""),
            );
        }
        if group.is_in(ClassicGroupState::Dead) {
            return fail(
                &mut self.completions,
                CoordinatorError::CoordinatorNotAvailable,
            );
        }
        if !group.supports_protocols(&join.protocol_type, &join.protocols) {
            return fail(
                &mut self.completions,
                CoordinatorError::InconsistentGroupProtocol,
            );
        }
        if unknown {
            self.join_new_member(group_id, join, now_ms);
        } else {
            self.join_existing_member(group_id, member_id, join, now_ms);
        }
    }

    fn join_new_member(&mut self, group_id: &str, join: Join<'_>, now_ms: i64) {
        // Kafka's `generateMemberId`: static members are named after their instance.
        let prefix = join.instance.as_deref().unwrap_or(&join.ctx.client_id);
        let new_id = format!("{prefix}-{}", uuid::Uuid::new_v4());
        let Some(group) = self.groups.get_mut(group_id) else {
            return self.answer_lost(join);
        };
        if let Some(instance) = join.instance.clone() {
            if group.static_member_id(&instance).is_some() {
                return self.update_static_member(group_id, &instance, new_id, join, now_ms);
            }
            return self.add_member_then_rebalance(group_id, new_id, join, now_ms);
        }
        if join.ctx.api_version >= 4 {
            // KIP-394: hand out the id and wait for the member to come back with it.
            let deadline = now_ms.saturating_add(join.session_timeout_ms as i64);
            group.pending_members.insert(new_id.clone(), deadline);
            let response = join_error(CoordinatorError::MemberIdRequired, &new_id);
            return push_join(&mut self.completions, join.waiter, response);
        }
        self.add_member_then_rebalance(group_id, new_id, join, now_ms);
    }

    fn join_existing_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        join: Join<'_>,
        now_ms: i64,
    ) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return self.answer_lost(join);
        };
        if group.pending_members.remove(member_id).is_some() {
            return self.add_member_then_rebalance(group_id, member_id.to_string(), join, now_ms);
        }
        if let Err(e) = group.validate_member(member_id, join.instance.as_deref()) {
            let response = join_error(e, member_id);
            return push_join(&mut self.completions, join.waiter, response);
        }
        let Some(member) = group.members.get(member_id) else {
            return self.answer_lost(join);
        };
        let matches = member.matches(&join.protocols);
        match group.state {
            ClassicGroupState::PreparingRebalance => {
                self.update_member_then_rebalance(group_id, member_id, join, now_ms)
            }
            ClassicGroupState::CompletingRebalance if matches => {
                // The member lost its JoinGroup response: send the current one again.
                let response = current_join_response(group, member_id);
                push_join(&mut self.completions, join.waiter, response);
            }
            ClassicGroupState::Stable if matches && !group.is_leader(member_id) => {
                // A follower rejoining with the same metadata needs no rebalance.
                let response = current_join_response(group, member_id);
                push_join(&mut self.completions, join.waiter, response);
            }
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
                // Changed metadata, or the leader asking for a new assignment.
                self.update_member_then_rebalance(group_id, member_id, join, now_ms)
            }
            ClassicGroupState::Empty | ClassicGroupState::Dead => {
                let response = join_error(CoordinatorError::UnknownMemberId, member_id);
                push_join(&mut self.completions, join.waiter, response);
            }
        }
    }

    /// Kafka's `addMemberThenRebalanceOrCompleteJoin`.
    fn add_member_then_rebalance(
        &mut self,
        group_id: &str,
        member_id: String,
        join: Join<'_>,
        now_ms: i64,
    ) {
        let new_member_timeout = self.config.group_new_member_join_timeout_ms;
        let Some(group) = self.groups.get_mut(group_id) else {
            return self.answer_lost(join);
        };
        let member = ClassicGroupMember {
            member_id: member_id.clone(),
            group_instance_id: join.instance.clone(),
            client_id: join.ctx.client_id.clone(),
            client_host: join.ctx.client_host.clone(),
            rebalance_timeout_ms: join.rebalance_timeout_ms,
            session_timeout_ms: join.session_timeout_ms,
            protocol_type: join.protocol_type.clone(),
            protocols: join.protocols.clone(),
            assignment: Bytes::new(),
            awaiting_join: Some(join.waiter),
            awaiting_sync: None,
            // New members cannot heartbeat yet; they get the new-member join timeout instead.
            is_new: true,
            heartbeat_deadline_ms: Some(now_ms.saturating_add(new_member_timeout)),
        };
        if group.is_in(ClassicGroupState::PreparingRebalance)
            && group.previous_state == ClassicGroupState::Empty
        {
            // Lets the initial delayed join wait a little longer.
            group.new_member_added = true;
        }
        group.add(member);
        let reason = format!("adding new member {member_id} with reason: {}", join.reason);
        self.maybe_prepare_rebalance_or_complete_join(group_id, now_ms, &reason);
    }

    /// Kafka's `updateMemberThenRebalanceOrCompleteJoin`.
    fn update_member_then_rebalance(
        &mut self,
        group_id: &str,
        member_id: &str,
        join: Join<'_>,
        now_ms: i64,
    ) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return self.answer_lost(join);
        };
        let Some(member) = group.members.get_mut(member_id) else {
            return self.answer_lost(join);
        };
        member.protocols = join.protocols.clone();
        member.rebalance_timeout_ms = join.rebalance_timeout_ms;
        member.session_timeout_ms = join.session_timeout_ms;
        if let Some(old) = member.awaiting_join.replace(join.waiter) {
            // A duplicate JoinGroup: the earlier one will never be answered otherwise.
            push_join(
                &mut self.completions,
                old,
                join_error(CoordinatorError::RebalanceInProgress, member_id),
            );
        }
        let reason = format!(
            "updating metadata of member {member_id} with reason: {}",
            join.reason
        );
        self.maybe_prepare_rebalance_or_complete_join(group_id, now_ms, &reason);
    }

    /// A known static member rejoins with an unknown member id: it takes over the old member
    /// (Kafka's `updateStaticMemberThenRebalanceOrCompleteJoin`).
    fn update_static_member(
        &mut self,
        group_id: &str,
        instance: &str,
        new_id: String,
        join: Join<'_>,
        now_ms: i64,
    ) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return self.answer_lost(join);
        };
        let Some(old_id) = group.static_member_id(instance).cloned() else {
            return self.answer_lost(join);
        };
        let Some(mut old) = group.members.remove(&old_id) else {
            return self.answer_lost(join);
        };
        // Whoever still waits under the old id is a zombie of the restarted instance.
        fail_waiters(
            &mut self.completions,
            &mut old,
            CoordinatorError::FencedInstanceId,
        );
        let was_leader = group.is_leader(&old_id);
        let was_pending_sync = group.pending_sync_members.remove(&old_id);
        let mut replaced = old.clone();
        replaced.member_id = new_id.clone();
        group.members.insert(new_id.clone(), replaced);
        group
            .static_members
            .insert(instance.to_string(), new_id.clone());
        if was_leader {
            group.leader_id = Some(new_id.clone());
        }
        if was_pending_sync {
            group.pending_sync_members.insert(new_id.clone());
        }
        if !group.is_in(ClassicGroupState::Stable) {
            // In CompletingRebalance the old id may already be in the leader's assignment, so
            // only a new rebalance is safe.
            return self.update_member_then_rebalance(group_id, &new_id, join, now_ms);
        }
        let old_protocol = group.protocol_name.clone();
        let old_protocols = old.protocols.clone();
        if let Some(m) = group.members.get_mut(&new_id) {
            m.protocols = join.protocols.clone();
        }
        if group.select_protocol() != old_protocol {
            if let Some(m) = group.members.get_mut(&new_id) {
                m.protocols = old_protocols;
            }
            return self.update_member_then_rebalance(group_id, &new_id, join, now_ms);
        }
        // Same protocol: persist the new member id with the current assignment, no rebalance.
        if let Some(m) = group.members.get_mut(&new_id) {
            m.rebalance_timeout_ms = join.rebalance_timeout_ms;
            m.session_timeout_ms = join.session_timeout_ms;
            m.heartbeat_deadline_ms = Some(now_ms.saturating_add(join.session_timeout_ms as i64));
        }
        let assignment = group
            .members
            .values()
            .map(|m| (m.member_id.clone(), m.assignment.clone()))
            .collect();
        // The group stays Stable, so it keeps the time it became Stable.
        let since = group.current_state_timestamp_ms.unwrap_or(now_ms);
        let value = group.to_metadata_value(&assignment, since);
        match self.write(vec![records::group_metadata_record(group_id, &value)]) {
            Ok(()) => {
                let Some(group) = self.groups.get(group_id) else {
                    return self.answer_lost(join);
                };
                let mut response = current_join_response(group, &new_id);
                if join.ctx.api_version >= 9 {
                    // KIP-814: a restarted static leader gets the members but must not
                    // reassign.
                    response.skip_assignment = group.is_leader(&new_id);
                } else {
                    // Older leaders would reassign: answer them as a follower.
                    response.members.clear();
                }
                push_join(&mut self.completions, join.waiter, response);
            }
            Err(e) => {
                // Undo the replacement; the old member id stays valid.
                if let Some(group) = self.groups.get_mut(group_id) {
                    group.members.remove(&new_id);
                    group.members.insert(old_id.clone(), old);
                    group
                        .static_members
                        .insert(instance.to_string(), old_id.clone());
                    if was_leader {
                        group.leader_id = Some(old_id);
                    }
                }
                push_join(&mut self.completions, join.waiter, join_error(e, ""));
            }
        }
    }
}

/// Kafka's `acceptJoiningMember`: `group.max.size` counts members (or, while preparing a
/// rebalance, the members that have rejoined).
fn accept_joining_member(group: &super::ClassicGroup, member_id: &str, max_size: i32) -> bool {
    let max = max_size.max(0) as usize;
    match group.state {
        ClassicGroupState::Empty | ClassicGroupState::Dead => true,
        ClassicGroupState::PreparingRebalance => {
            group
                .members
                .get(member_id)
                .map(|m| m.awaiting_join.is_some())
                .unwrap_or(false)
                || group.num_awaiting_join() < max
        }
        ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
            group.members.contains_key(member_id) || group.members.len() < max
        }
    }
}

/// The JoinGroup response for the group's current generation; only the leader gets the
/// members.
fn current_join_response(group: &super::ClassicGroup, member_id: &str) -> JoinGroupResponse {
    let is_leader = group.is_leader(member_id);
    JoinGroupResponse {
        error_code: 0,
        generation_id: group.generation_id,
        protocol_type: group.protocol_type.clone(),
        protocol_name: group.protocol_name.clone(),
        leader: group.leader_id.clone().unwrap_or_default(),
        skip_assignment: false,
        member_id: member_id.to_string(),
        members: if is_leader {
            group.current_member_metadata()
        } else {
            Vec::new()
        },
        ..Default::default()
    }
}
