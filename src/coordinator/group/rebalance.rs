//! Rebalances of classic groups (Kafka's `GroupMetadataManager.prepareRebalance`,
//! `completeClassicGroupJoin`, `InitialDelayedJoin`, heartbeat and pending-sync expiration).
//!
//! Preparing a rebalance moves the group to PreparingRebalance and starts the join timer: for
//! an empty group the initial delay (`group.initial.rebalance.delay.ms`, extended while new
//! members keep arriving, never beyond the rebalance timeout), otherwise the rebalance timeout.
//! Completing the join removes members that did not rejoin, bumps the generation, selects the
//! protocol and answers every waiting JoinGroup; members then have the rebalance timeout to
//! send SyncGroup.
use crate::coordinator::error::CoordinatorError;
use std::collections::BTreeMap;

use crate::coordinator::group::{ClassicGroupState, JoinTimer};
use crate::coordinator::records;
use crate::coordinator::shard::{
    fail_waiters, push_join, push_sync, sync_error, GroupCoordinatorShard,
};
use crate::protocol::messages::join_group_response::JoinGroupResponse;

impl GroupCoordinatorShard {
    /// Starts a rebalance (Kafka's `prepareRebalance`).
    pub(crate) fn prepare_rebalance(&mut self, group_id: &str, now_ms: i64, reason: &str) {
        let initial_delay = self.config.group_initial_rebalance_delay_ms;
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        tracing::debug!(group = group_id, reason, "preparing rebalance");
        if group.is_in(ClassicGroupState::CompletingRebalance) {
            // Followers waiting for the old generation's assignment must rejoin.
            reset_and_propagate_assignment_with_error(
                &mut self.completions,
                group,
                CoordinatorError::RebalanceInProgress,
                now_ms,
            );
        }
        group.sync_deadline_ms = None;
        group.pending_sync_members.clear();
        let initial = group.is_in(ClassicGroupState::Empty);
        group.transition_to(ClassicGroupState::PreparingRebalance);
        if initial {
            let remaining = group
                .rebalance_timeout_ms()
                .saturating_sub(initial_delay)
                .max(0);
            group.new_member_added = false;
            group.join_timer = Some(JoinTimer {
                deadline_ms: now_ms.saturating_add(initial_delay),
                initial: Some((initial_delay, remaining)),
            });
        } else if group.has_all_members_joined() {
            self.complete_join(group_id, now_ms);
        } else {
            group.join_timer = Some(JoinTimer {
                deadline_ms: now_ms.saturating_add(group.rebalance_timeout_ms()),
                initial: None,
            });
        }
    }

    /// Kafka's `maybePrepareRebalanceOrCompleteJoin`.
    pub(crate) fn maybe_prepare_rebalance_or_complete_join(
        &mut self,
        group_id: &str,
        now_ms: i64,
        reason: &str,
    ) {
        let Some(group) = self.groups.get(group_id) else {
            return;
        };
        if group.can_rebalance() {
            self.prepare_rebalance(group_id, now_ms, reason);
        } else {
            self.maybe_complete_join_phase(group_id, now_ms);
        }
    }

    /// Completes the join phase early once everyone has rejoined, except during the initial
    /// delay, which always runs its course (Kafka's `maybeCompleteJoinPhase`).
    pub(crate) fn maybe_complete_join_phase(&mut self, group_id: &str, now_ms: i64) {
        let Some(group) = self.groups.get(group_id) else {
            return;
        };
        if group.is_in(ClassicGroupState::PreparingRebalance)
            && group.has_all_members_joined()
            && group.previous_state != ClassicGroupState::Empty
        {
            self.complete_join(group_id, now_ms);
        }
    }

    /// Ends the join phase (Kafka's `completeClassicGroupJoin`).
    pub(crate) fn complete_join(&mut self, group_id: &str, now_ms: i64) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if !group.is_in(ClassicGroupState::PreparingRebalance) {
            return;
        }
        group.join_timer = None;
        let not_rejoined: Vec<String> = group
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for id in not_rejoined {
            tracing::info!(group = group_id, member = %id, "removing member that did not rejoin");
            if let Some(mut m) = group.remove(&id) {
                fail_waiters(
                    &mut self.completions,
                    &mut m,
                    CoordinatorError::UnknownMemberId,
                );
            }
        }
        if group
            .leader_id
            .as_ref()
            .map(|l| !group.members.contains_key(l))
            .unwrap_or(true)
        {
            group.leader_id = group.members.keys().next().cloned();
        }
        group.generation_id += 1;
        if group.members.is_empty() {
            group.protocol_name = None;
            group.transition_to(ClassicGroupState::Empty);
            let value = group.to_metadata_value(&BTreeMap::new(), now_ms);
            let record = records::group_metadata_record(group_id, &value);
            if let Err(e) = self.write(vec![record]) {
                tracing::warn!(group = group_id, error = %e, "failed to write empty group metadata");
            }
            return;
        }
        group.protocol_name = group.select_protocol();
        group.transition_to(ClassicGroupState::CompletingRebalance);
        let leader_members = group.current_member_metadata();
        let rebalance_timeout = group.rebalance_timeout_ms();
        let (generation, protocol_type, protocol_name, leader) = (
            group.generation_id,
            group.protocol_type.clone(),
            group.protocol_name.clone(),
            group.leader_id.clone().unwrap_or_default(),
        );
        for m in group.members.values_mut() {
            m.is_new = false;
            m.heartbeat_deadline_ms = Some(now_ms.saturating_add(m.session_timeout_ms as i64));
            let Some(w) = m.awaiting_join.take() else {
                continue;
            };
            let is_leader = m.member_id == leader;
            let response = JoinGroupResponse {
                error_code: 0,
                generation_id: generation,
                protocol_type: protocol_type.clone(),
                protocol_name: protocol_name.clone(),
                leader: leader.clone(),
                skip_assignment: false,
                member_id: m.member_id.clone(),
                members: if is_leader {
                    leader_members.clone()
                } else {
                    Vec::new()
                },
                ..Default::default()
            };
            push_join(&mut self.completions, w, response);
        }
        group.pending_sync_members = group.members.keys().cloned().collect();
        group.sync_deadline_ms = Some(now_ms.saturating_add(rebalance_timeout));
    }

    /// Removes a member that left or failed and moves the group on (Kafka's
    /// `removeMemberAndUpdateClassicGroup`).
    pub(crate) fn remove_member_and_update_group(
        &mut self,
        group_id: &str,
        member_id: &str,
        now_ms: i64,
        reason: &str,
    ) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        let Some(mut member) = group.remove(member_id) else {
            return;
        };
        fail_waiters(
            &mut self.completions,
            &mut member,
            CoordinatorError::UnknownMemberId,
        );
        match group.state {
            ClassicGroupState::Stable | ClassicGroupState::CompletingRebalance => {
                self.prepare_rebalance(group_id, now_ms, reason)
            }
            ClassicGroupState::PreparingRebalance => {
                self.maybe_complete_join_phase(group_id, now_ms)
            }
            ClassicGroupState::Empty | ClassicGroupState::Dead => {}
        }
    }

    /// Fires the timers of one group that are due.
    pub(crate) fn fire_group_timers(&mut self, group_id: &str, now_ms: i64) {
        // KIP-394 pending members that never came back.
        let expired_pending: Vec<String> = match self.groups.get(group_id) {
            Some(g) => g
                .pending_members
                .iter()
                .filter(|(_, d)| **d <= now_ms)
                .map(|(id, _)| id.clone())
                .collect(),
            None => return,
        };
        for id in expired_pending {
            if let Some(g) = self.groups.get_mut(group_id) {
                g.pending_members.remove(&id);
                tracing::info!(group = group_id, member = %id, "pending member expired");
            }
            self.maybe_complete_join_phase(group_id, now_ms);
        }
        // Session expiry.
        let expired: Vec<(String, bool)> = match self.groups.get(group_id) {
            Some(g) => g
                .members
                .values()
                .filter(|m| {
                    m.heartbeat_deadline_ms
                        .map(|d| d <= now_ms)
                        .unwrap_or(false)
                })
                .map(|m| (m.member_id.clone(), m.has_satisfied_heartbeat()))
                .collect(),
            None => return,
        };
        for (id, satisfied) in expired {
            if satisfied {
                // Waiting on a rebalance: the rebalance timeout governs it; the session timer
                // restarts when the join completes.
                if let Some(m) = self
                    .groups
                    .get_mut(group_id)
                    .and_then(|g| g.members.get_mut(&id))
                {
                    m.heartbeat_deadline_ms = None;
                }
            } else {
                tracing::info!(group = group_id, member = %id, "member failed, removing it");
                self.remove_member_and_update_group(group_id, &id, now_ms, "heartbeat expiration");
            }
        }
        // Join timer.
        let timer = self.groups.get(group_id).and_then(|g| g.join_timer);
        if let Some(t) = timer.filter(|t| t.deadline_ms <= now_ms) {
            let initial_delay = self.config.group_initial_rebalance_delay_ms;
            let Some(group) = self.groups.get_mut(group_id) else {
                return;
            };
            match t.initial {
                Some((delay, remaining)) if group.new_member_added && remaining != 0 => {
                    // New members arrived during the delay: wait again, within the budget.
                    group.new_member_added = false;
                    let new_delay = initial_delay.min(remaining);
                    let new_remaining = remaining.saturating_sub(delay).max(0);
                    group.join_timer = Some(JoinTimer {
                        deadline_ms: now_ms.saturating_add(new_delay),
                        initial: Some((new_delay, new_remaining)),
                    });
                }
                _ => self.complete_join(group_id, now_ms),
            }
        }
        // Pending sync timeout.
        let sync_due = self
            .groups
            .get(group_id)
            .and_then(|g| g.sync_deadline_ms)
            .map(|d| d <= now_ms)
            .unwrap_or(false);
        if sync_due {
            self.expire_pending_sync(group_id, now_ms);
        }
    }

    /// Members that got their JoinGroup response but never sent SyncGroup within the rebalance
    /// timeout are removed and the group rebalances.
    fn expire_pending_sync(&mut self, group_id: &str, now_ms: i64) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        group.sync_deadline_ms = None;
        if !matches!(
            group.state,
            ClassicGroupState::CompletingRebalance | ClassicGroupState::Stable
        ) || group.pending_sync_members.is_empty()
        {
            return;
        }
        let pending: Vec<String> = std::mem::take(&mut group.pending_sync_members)
            .into_iter()
            .collect();
        for id in &pending {
            tracing::info!(group = group_id, member = %id, "member never synced, removing it");
            if let Some(mut m) = group.remove(id) {
                fail_waiters(
                    &mut self.completions,
                    &mut m,
                    CoordinatorError::UnknownMemberId,
                );
            }
        }
        self.prepare_rebalance(group_id, now_ms, "removing members that never synced");
    }
}

/// Clears the assignments and answers waiting SyncGroups with `code` (Kafka's
/// `resetAndPropagateAssignmentWithError`).
pub(crate) fn reset_and_propagate_assignment_with_error(
    out: &mut Vec<crate::coordinator::runtime::Completion>,
    group: &mut crate::coordinator::group::ClassicGroup,
    error: CoordinatorError,
    now_ms: i64,
) {
    for m in group.members.values_mut() {
        m.assignment = bytes::Bytes::new();
        if let Some(w) = m.awaiting_sync.take() {
            m.heartbeat_deadline_ms = Some(now_ms.saturating_add(m.session_timeout_ms as i64));
            push_sync(out, w, sync_error(error.clone()));
        }
    }
}
