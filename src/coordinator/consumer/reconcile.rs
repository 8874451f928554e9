//! Reconciliation of a member's current assignment towards its target (Kafka's
//! `CurrentAssignmentBuilder`, KIP-848).
//!
//! A member moves to the target epoch only once it has revoked what it must give up: while
//! partitions are pending revocation it stays at its epoch in `UnrevokedPartitions` and keeps
//! only the partitions it retains. A partition another member still owns (assigned or
//! revoking) is not handed out: the member reaches the target epoch in
//! `UnreleasedPartitions` and picks it up on a later heartbeat, once it is free.
use super::{Assignment, ConsumerGroupMember, MemberState};
use crate::coordinator::error::CoordinatorError;
use crate::protocol::codec::Uuid;

/// Computes the member's next state. `owned` is what the member reported in this heartbeat
/// (`None` when it did not send its owned partitions); `partition_epoch` says who owns a
/// partition (-1 when free).
pub fn next_assignment(
    member: &ConsumerGroupMember,
    target_epoch: i32,
    target: &Assignment,
    owned: Option<&Assignment>,
    partition_epoch: &dyn Fn(Uuid, i32) -> i32,
) -> Result<ConsumerGroupMember, CoordinatorError> {
    match member.state {
        MemberState::Stable => {
            if member.member_epoch != target_epoch {
                Ok(compute(
                    member,
                    member.member_epoch,
                    &member.assigned_partitions,
                    target_epoch,
                    target,
                    owned,
                    partition_epoch,
                ))
            } else {
                Ok(member.clone())
            }
        }
        MemberState::UnrevokedPartitions => {
            if owns_any(owned, &member.partitions_pending_revocation) {
                return Ok(member.clone());
            }
            // Revocation acknowledged: the member may move to the next epoch.
            Ok(compute(
                member,
                member.member_epoch.saturating_add(1),
                &member.assigned_partitions,
                target_epoch,
                target,
                owned,
                partition_epoch,
            ))
        }
        MemberState::UnreleasedPartitions => Ok(compute(
            member,
            member.member_epoch,
            &member.assigned_partitions,
            target_epoch,
            target,
            owned,
            partition_epoch,
        )),
        MemberState::Unknown => {
            // A state from a newer version: the member must start over with nothing.
            if owned
                .map(|o| !o.values().all(|p| p.is_empty()))
                .unwrap_or(true)
            {
                return Err(CoordinatorError::FencedMemberEpoch);
            }
            Ok(compute(
                member,
                target_epoch,
                &Assignment::new(),
                target_epoch,
                target,
                owned,
                partition_epoch,
            ))
        }
    }
}

/// Whether the member still reports one of `pending` as owned (`ownsRevokedPartitions`);
/// a member that did not report its partitions is assumed to still own them.
fn owns_any(owned: Option<&Assignment>, pending: &Assignment) -> bool {
    let Some(owned) = owned else { return true };
    owned.iter().any(|(t, ps)| {
        pending
            .get(t)
            .map(|p| ps.iter().any(|x| p.contains(x)))
            .unwrap_or(false)
    })
}

fn with_epoch(member: &ConsumerGroupMember, epoch: i32) -> ConsumerGroupMember {
    let mut m = member.clone();
    // `updateMemberEpoch`: the previous epoch is the one the member had.
    m.previous_member_epoch = member.member_epoch;
    m.member_epoch = epoch;
    m
}

#[allow(clippy::too_many_arguments)]
fn compute(
    member: &ConsumerGroupMember,
    member_epoch: i32,
    assigned: &Assignment,
    target_epoch: i32,
    target: &Assignment,
    _owned: Option<&Assignment>,
    partition_epoch: &dyn Fn(Uuid, i32) -> i32,
) -> ConsumerGroupMember {
    let mut has_unreleased = false;
    let mut new_assigned = Assignment::new();
    let mut pending_revocation = Assignment::new();
    let mut pending_assignment = Assignment::new();
    let topics: std::collections::BTreeSet<Uuid> =
        target.keys().chain(assigned.keys()).copied().collect();
    let empty = Default::default();
    for t in topics {
        let tgt = target.get(&t).unwrap_or(&empty);
        let cur = assigned.get(&t).unwrap_or(&empty);
        let kept: std::collections::BTreeSet<i32> = cur.intersection(tgt).copied().collect();
        let revoke: std::collections::BTreeSet<i32> = cur.difference(&kept).copied().collect();
        let mut assign: std::collections::BTreeSet<i32> = tgt.difference(&kept).copied().collect();
        let before = assign.len();
        assign.retain(|p| partition_epoch(t, *p) == -1);
        has_unreleased |= assign.len() != before;
        if !kept.is_empty() {
            new_assigned.insert(t, kept);
        }
        if !revoke.is_empty() {
            pending_revocation.insert(t, revoke);
        }
        if !assign.is_empty() {
            pending_assignment.insert(t, assign);
        }
    }
    if !pending_revocation.is_empty() {
        let mut m = with_epoch(member, member_epoch);
        m.state = MemberState::UnrevokedPartitions;
        m.assigned_partitions = new_assigned;
        m.partitions_pending_revocation = pending_revocation;
        return m;
    }
    for (t, ps) in pending_assignment {
        new_assigned.entry(t).or_default().extend(ps);
    }
    let mut m = with_epoch(member, target_epoch);
    m.state = if has_unreleased {
        MemberState::UnreleasedPartitions
    } else {
        MemberState::Stable
    };
    m.assigned_partitions = new_assigned;
    m.partitions_pending_revocation = Assignment::new();
    m
}
