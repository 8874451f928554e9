//! SyncGroup v0-5, Heartbeat v0-4 and LeaveGroup v0-5 (Kafka's `classicGroupSync`,
//! `classicGroupHeartbeat`, `classicGroupLeave`).
//!
//! In CompletingRebalance followers wait for the leader's SyncGroup; the leader's assignment is
//! written as a `GroupMetadataValue` record, and replaying it makes the group Stable, after
//! which every waiting member gets its bytes exactly as the leader sent them.
use crate::coordinator::error::CoordinatorError;
use std::collections::BTreeMap;

use bytes::Bytes;

use crate::coordinator::group::rebalance::reset_and_propagate_assignment_with_error;
use crate::coordinator::group::{ClassicGroupState, Waiter};
use crate::coordinator::records;
use crate::coordinator::runtime::ResponseId;
use crate::coordinator::service::RequestContext;
use crate::coordinator::shard::{push_sync, sync_error, GroupCoordinatorShard};
use crate::protocol::messages::heartbeat_request::HeartbeatRequest;
use crate::protocol::messages::heartbeat_response::HeartbeatResponse;
use crate::protocol::messages::leave_group_request::{LeaveGroupRequest, MemberIdentity};
use crate::protocol::messages::leave_group_response::{LeaveGroupResponse, MemberResponse};
use crate::protocol::messages::sync_group_request::SyncGroupRequest;
use crate::protocol::messages::sync_group_response::SyncGroupResponse;

/// Kafka's `isProtocolInconsistent`: both given and different.
fn inconsistent(requested: Option<&str>, group: Option<&str>) -> bool {
    matches!((requested, group), (Some(a), Some(b)) if a != b)
}

impl GroupCoordinatorShard {
    /// Handles a SyncGroup. The response arrives as a
    /// [`crate::coordinator::Completion::Sync`] with `id`.
    pub fn sync_group(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        request: &SyncGroupRequest,
        id: ResponseId,
    ) {
        let waiter = Waiter {
            id,
            api_version: ctx.api_version,
        };
        let out = &mut self.completions;
        if request.group_id.is_empty() {
            return push_sync(out, waiter, sync_error(CoordinatorError::InvalidGroupId));
        }
        let Some(group) = self.groups.get_mut(&request.group_id) else {
            return push_sync(out, waiter, sync_error(CoordinatorError::UnknownMemberId));
        };
        if group.is_in(ClassicGroupState::Dead) {
            return push_sync(
                out,
                waiter,
                sync_error(CoordinatorError::CoordinatorNotAvailable),
            );
        }
        let instance = request
            .group_instance_id
            .as_deref()
            .filter(|_| ctx.api_version >= 3);
        if let Err(e) = group.validate_member(&request.member_id, instance) {
            return push_sync(out, waiter, sync_error(e));
        }
        if request.generation_id != group.generation_id {
            return push_sync(out, waiter, sync_error(CoordinatorError::IllegalGeneration));
        }
        if inconsistent(
            request.protocol_type.as_deref(),
            group.protocol_type.as_deref(),
        ) || inconsistent(
            request.protocol_name.as_deref(),
            group.protocol_name.as_deref(),
        ) {
            return push_sync(
                out,
                waiter,
                sync_error(CoordinatorError::InconsistentGroupProtocol),
            );
        }
        match group.state {
            ClassicGroupState::PreparingRebalance => push_sync(
                out,
                waiter,
                sync_error(CoordinatorError::RebalanceInProgress),
            ),
            ClassicGroupState::Stable => {
                group.pending_sync_members.remove(&request.member_id);
                if group.pending_sync_members.is_empty() {
                    group.sync_deadline_ms = None;
                }
                let (pt, pn) = (group.protocol_type.clone(), group.protocol_name.clone());
                let Some(member) = group.members.get_mut(&request.member_id) else {
                    // Ruled out by validate_member above; answered all the same.
                    let response = sync_error(CoordinatorError::UnknownMemberId);
                    return push_sync(out, waiter, response);
                };
                member.heartbeat_deadline_ms =
                    Some(now_ms.saturating_add(member.session_timeout_ms as i64));
                let response = SyncGroupResponse {
                    protocol_type: pt,
                    protocol_name: pn,
                    assignment: member.assignment.clone(),
                    ..Default::default()
                };
                push_sync(out, waiter, response)
            }
            ClassicGroupState::CompletingRebalance => {
                group.pending_sync_members.remove(&request.member_id);
                if group.pending_sync_members.is_empty() {
                    group.sync_deadline_ms = None;
                }
                let Some(member) = group.members.get_mut(&request.member_id) else {
                    // Ruled out by validate_member above; answered all the same.
                    let response = sync_error(CoordinatorError::UnknownMemberId);
                    return push_sync(out, waiter, response);
                };
                member.heartbeat_deadline_ms =
                    Some(now_ms.saturating_add(member.session_timeout_ms as i64));
                if let Some(old) = member.awaiting_sync.replace(waiter) {
                    push_sync(out, old, sync_error(CoordinatorError::RebalanceInProgress));
                }
                if group.is_leader(&request.member_id) {
                    let given: BTreeMap<&str, &Bytes> = request
                        .assignments
                        .iter()
                        .map(|a| (a.member_id.as_str(), &a.assignment))
                        .collect();
                    // Members the leader left out get an empty assignment.
                    let assignment: BTreeMap<String, Bytes> = group
                        .members
                        .keys()
                        .map(|id| {
                            (
                                id.clone(),
                                given
                                    .get(id.as_str())
                                    .map(|b| (*b).clone())
                                    .unwrap_or_default(),
                            )
                        })
                        .collect();
                    let value = group.to_metadata_value(&assignment, now_ms);
                    let group_id = request.group_id.clone();
                    self.store_assignment(&group_id, value, now_ms);
                }
            }
            ClassicGroupState::Empty | ClassicGroupState::Dead => {
                push_sync(out, waiter, sync_error(CoordinatorError::UnknownMemberId))
            }
        }
    }

    /// Writes the leader's assignment; on success the replay makes the group Stable and every
    /// waiting member gets its assignment, on failure they get the error and the group
    /// rebalances.
    fn store_assignment(
        &mut self,
        group_id: &str,
        value: crate::protocol::internal_records::group_metadata_value::GroupMetadataValue,
        now_ms: i64,
    ) {
        let result = self.write(vec![records::group_metadata_record(group_id, &value)]);
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        match result {
            Ok(()) => {
                // The group is Stable: its rebalance completed.
                self.metrics.classic_group_completed_rebalances.inc();
                let (pt, pn) = (group.protocol_type.clone(), group.protocol_name.clone());
                for m in group.members.values_mut() {
                    if let Some(w) = m.awaiting_sync.take() {
                        // A session that ran out while waiting was ignored; start it again.
                        m.heartbeat_deadline_ms =
                            Some(now_ms.saturating_add(m.session_timeout_ms as i64));
                        let response = SyncGroupResponse {
                            protocol_type: pt.clone(),
                            protocol_name: pn.clone(),
                            assignment: m.assignment.clone(),
                            ..Default::default()
                        };
                        push_sync(&mut self.completions, w, response);
                    }
                }
            }
            Err(e) => {
                reset_and_propagate_assignment_with_error(&mut self.completions, group, e, now_ms);
                self.prepare_rebalance(group_id, now_ms, "failed to store the assignment");
            }
        }
    }

    /// Handles a Heartbeat.
    pub fn heartbeat(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        request: &HeartbeatRequest,
    ) -> HeartbeatResponse {
        let result = self.heartbeat_code(now_ms, ctx, request);
        HeartbeatResponse {
            error_code: CoordinatorError::wire_result(&result),
            ..Default::default()
        }
    }

    fn heartbeat_code(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        request: &HeartbeatRequest,
    ) -> Result<(), CoordinatorError> {
        if request.group_id.is_empty() {
            return Err(CoordinatorError::InvalidGroupId);
        }
        let Some(group) = self.groups.get_mut(&request.group_id) else {
            return Err(CoordinatorError::UnknownMemberId);
        };
        if group.is_in(ClassicGroupState::Dead) {
            return Err(CoordinatorError::CoordinatorNotAvailable);
        }
        let instance = request
            .group_instance_id
            .as_deref()
            .filter(|_| ctx.api_version >= 3);
        group.validate_member(&request.member_id, instance)?;
        if request.generation_id != group.generation_id {
            return Err(CoordinatorError::IllegalGeneration);
        }
        let state = group.state;
        let Some(member) = group.members.get_mut(&request.member_id) else {
            return Err(CoordinatorError::UnknownMemberId);
        };
        match state {
            ClassicGroupState::Empty | ClassicGroupState::Dead => {
                Err(CoordinatorError::UnknownMemberId)
            }
            ClassicGroupState::PreparingRebalance => {
                // Tells the member to rejoin.
                member.heartbeat_deadline_ms =
                    Some(now_ms.saturating_add(member.session_timeout_ms as i64));
                Err(CoordinatorError::RebalanceInProgress)
            }
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable => {
                member.heartbeat_deadline_ms =
                    Some(now_ms.saturating_add(member.session_timeout_ms as i64));
                Ok(())
            }
        }
    }

    /// Handles a LeaveGroup; v3+ batches members with an error each.
    pub fn leave_group(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        request: &LeaveGroupRequest,
    ) -> LeaveGroupResponse {
        let identities: Vec<MemberIdentity> = if ctx.api_version >= 3 {
            request.members.clone()
        } else {
            vec![MemberIdentity {
                member_id: request.member_id.clone(),
                ..Default::default()
            }]
        };
        let top = |error: CoordinatorError| LeaveGroupResponse {
            error_code: error.wire(),
            ..Default::default()
        };
        if request.group_id.is_empty() {
            return top(CoordinatorError::InvalidGroupId);
        }
        let group_id = request.group_id.as_str();
        let Some(group) = self.groups.get_mut(group_id) else {
            return top(CoordinatorError::UnknownMemberId);
        };
        if group.is_in(ClassicGroupState::Dead) {
            return top(CoordinatorError::CoordinatorNotAvailable);
        }
        let mut responses = Vec::with_capacity(identities.len());
        let mut to_remove = Vec::new();
        for ident in &identities {
            let result = if ident.member_id.is_empty() {
                // Administrative removal by group.instance.id.
                match ident
                    .group_instance_id
                    .as_deref()
                    .and_then(|i| group.static_member_id(i))
                {
                    Some(id) => {
                        to_remove.push(id.clone());
                        Ok(())
                    }
                    None => Err(CoordinatorError::UnknownMemberId),
                }
            } else if group.pending_members.remove(&ident.member_id).is_some() {
                Ok(())
            } else {
                let valid =
                    group.validate_member(&ident.member_id, ident.group_instance_id.as_deref());
                if valid.is_ok() {
                    to_remove.push(ident.member_id.clone());
                }
                valid
            };
            responses.push(MemberResponse {
                member_id: ident.member_id.clone(),
                group_instance_id: ident.group_instance_id.clone(),
                error_code: CoordinatorError::wire_result(&result),
                ..Default::default()
            });
        }
        let any_left = responses.iter().any(|r| r.error_code == 0);
        for id in &to_remove {
            if let Some(mut m) = group.remove(id) {
                crate::coordinator::shard::fail_waiters(
                    &mut self.completions,
                    &mut m,
                    CoordinatorError::UnknownMemberId,
                );
            }
        }
        if any_left {
            match group.state {
                ClassicGroupState::Stable | ClassicGroupState::CompletingRebalance => {
                    self.prepare_rebalance(group_id, now_ms, "members left the group")
                }
                ClassicGroupState::PreparingRebalance => {
                    self.maybe_complete_join_phase(group_id, now_ms)
                }
                ClassicGroupState::Empty | ClassicGroupState::Dead => {}
            }
        }
        if ctx.api_version >= 3 {
            LeaveGroupResponse {
                error_code: 0,
                members: responses,
                ..Default::default()
            }
        } else {
            // v0-2 carry the single member's error at the top level.
            let code = responses.first().map(|r| r.error_code).unwrap_or(0);
            LeaveGroupResponse {
                error_code: code,
                ..Default::default()
            }
        }
    }
}
