//! KIP-848 consumer groups: the group, its members and their assignments (Kafka's
//! `ConsumerGroup`, `ConsumerGroupMember`, `MemberState`, `ConsumerGroupState`).
//!
//! The durable state is exactly what the six consumer-group record types carry
//! ([`records`]): the group epoch, the subscription metadata, each member's subscription, the
//! target assignment (with its epoch) and each member's current assignment. It changes only by
//! [`ConsumerGroup::replay`]. Derived indexes (partition owners, static members) are rebuilt on
//! every replay; timers (session, revocation) are volatile, as in Kafka.
//!
//! The operations live in [`heartbeat`] (ConsumerGroupHeartbeat: join, reconcile, leave,
//! timers), [`reconcile`] (the `CurrentAssignmentBuilder` state machine), [`assignor`]
//! (server-side `uniform` and `range`) and [`admin`] (ConsumerGroupDescribe, ListGroups,
//! DeleteGroups and offset-commit checks for consumer groups).
pub mod admin;
pub mod assignor;
pub mod facade;
pub mod heartbeat;
pub mod reconcile;
pub mod records;

use std::collections::{BTreeMap, BTreeSet};

use crate::protocol::codec::Uuid;

/// A set of partitions per topic id (Kafka's `Assignment` / `Map<Uuid, Set<Integer>>`).
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// `ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH`.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// `ConsumerGroupHeartbeatRequest.LEAVE_GROUP_STATIC_MEMBER_EPOCH`.
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;
/// The group type ListGroups v5 reports for KIP-848 groups, and their protocol type.
pub const CONSUMER_GROUP_TYPE: &str = "consumer";

/// Kafka's `MemberState`, with its record byte values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemberState {
    /// Reconciled with the target assignment.
    #[default]
    Stable,
    /// Must revoke partitions before moving to the next epoch.
    UnrevokedPartitions,
    /// At the target epoch but waiting for partitions other members still own.
    UnreleasedPartitions,
    /// A value written by a newer version.
    Unknown,
}

impl MemberState {
    pub fn value(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    pub fn from_value(v: i8) -> Self {
        match v {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }
}

/// Kafka's `ConsumerGroup.ConsumerGroupState`; `as_str` gives Kafka's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    Empty,
    Assigning,
    Reconciling,
    Stable,
    Dead,
}

impl ConsumerGroupState {
    pub fn as_str(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
            ConsumerGroupState::Dead => "Dead",
        }
    }
}

/// One topic of the subscription metadata (`ConsumerGroupPartitionMetadataValue.TopicMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    pub topic_id: Uuid,
    pub topic_name: String,
    pub num_partitions: i32,
}

/// A member of a consumer group: its subscription (member metadata record) and its current
/// assignment (current member assignment record).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub assigned_partitions: Assignment,
    pub partitions_pending_revocation: Assignment,
}

impl ConsumerGroupMember {
    pub fn new(member_id: &str) -> Self {
        ConsumerGroupMember {
            member_id: member_id.to_string(),
            rebalance_timeout_ms: -1,
            ..Default::default()
        }
    }

    /// Kafka's `isReconciledTo`: stable at the target assignment epoch.
    pub fn is_reconciled_to(&self, target_assignment_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == target_assignment_epoch
    }

    /// Whether the subscription part (what the member metadata record carries) differs.
    pub fn subscription_differs(&self, other: &ConsumerGroupMember) -> bool {
        self.instance_id != other.instance_id
            || self.rack_id != other.rack_id
            || self.client_id != other.client_id
            || self.client_host != other.client_host
            || self.subscribed_topic_names != other.subscribed_topic_names
            || self.subscribed_topic_regex != other.subscribed_topic_regex
            || self.rebalance_timeout_ms != other.rebalance_timeout_ms
            || self.server_assignor != other.server_assignor
    }

    /// Whether the current-assignment part differs.
    pub fn assignment_differs(&self, other: &ConsumerGroupMember) -> bool {
        self.member_epoch != other.member_epoch
            || self.previous_member_epoch != other.previous_member_epoch
            || self.state != other.state
            || self.assigned_partitions != other.assigned_partitions
            || self.partitions_pending_revocation != other.partitions_pending_revocation
    }
}

/// Volatile per-member timers (not persisted, rebuilt on load).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemberTimers {
    /// The member is fenced if it does not heartbeat before this.
    pub session_deadline_ms: Option<i64>,
    /// While revoking: (deadline, member epoch); fenced if still revoking at that epoch.
    pub revocation_deadline: Option<(i64, i32)>,
}

/// A KIP-848 consumer group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConsumerGroup {
    pub group_id: String,
    pub group_epoch: i32,
    /// The epoch of the target assignment (`ConsumerGroupTargetAssignmentMetadataValue`).
    pub assignment_epoch: i32,
    /// Topic name -> metadata of the subscribed topics.
    pub subscription_metadata: BTreeMap<String, TopicMetadata>,
    pub members: BTreeMap<String, ConsumerGroupMember>,
    /// Member id -> target assignment.
    pub target_assignment: BTreeMap<String, Assignment>,
    /// Derived: (topic id, partition) -> epoch of the member owning it (assigned or revoking).
    pub partition_epochs: BTreeMap<(Uuid, i32), i32>,
    /// Derived: instance id -> member id.
    pub static_members: BTreeMap<String, String>,
    /// Volatile: member id -> timers.
    pub timers: BTreeMap<String, MemberTimers>,
}

impl ConsumerGroup {
    pub fn new(group_id: &str) -> Self {
        ConsumerGroup {
            group_id: group_id.to_string(),
            ..Default::default()
        }
    }

    /// Kafka's `ConsumerGroup.state()` derivation.
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.is_reconciled_to(self.assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The epoch of the member owning a partition, or -1 when it is free
    /// (`currentPartitionEpoch`).
    pub fn current_partition_epoch(&self, topic_id: Uuid, partition: i32) -> i32 {
        self.partition_epochs
            .get(&(topic_id, partition))
            .copied()
            .unwrap_or(-1)
    }

    pub fn static_member(&self, instance_id: &str) -> Option<&ConsumerGroupMember> {
        self.static_members
            .get(instance_id)
            .and_then(|id| self.members.get(id))
    }

    /// The assignor the group uses: the one most members ask for, else `default`
    /// (`computePreferredServerAssignor`; ties go to the smallest name, to stay deterministic).
    pub fn preferred_server_assignor<'a>(
        members: impl Iterator<Item = &'a ConsumerGroupMember>,
        default: &str,
    ) -> String {
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in members {
            if let Some(a) = m.server_assignor.as_deref() {
                *votes.entry(a).or_default() += 1;
            }
        }
        let best = votes.values().copied().max().unwrap_or(0);
        votes
            .into_iter()
            .find(|(_, v)| *v == best && best > 0)
            .map(|(n, _)| n.to_string())
            .unwrap_or_else(|| default.to_string())
    }

    /// Rebuilds the derived indexes after a replay touched members.
    pub(crate) fn rebuild_indexes(&mut self) {
        self.partition_epochs.clear();
        self.static_members.clear();
        for m in self.members.values() {
            for (t, ps) in m
                .assigned_partitions
                .iter()
                .chain(m.partitions_pending_revocation.iter())
            {
                for p in ps {
                    self.partition_epochs.insert((*t, *p), m.member_epoch);
                }
            }
            if let Some(i) = &m.instance_id {
                self.static_members.insert(i.clone(), m.member_id.clone());
            }
        }
        self.timers.retain(|id, _| self.members.contains_key(id));
    }

    /// The durable view, for replay-equality tests.
    pub fn snapshot(&self) -> ConsumerGroupSnapshot {
        ConsumerGroupSnapshot {
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            subscription_metadata: self.subscription_metadata.clone(),
            members: self.members.clone(),
            target_assignment: self.target_assignment.clone(),
        }
    }
}

/// The durable view of a consumer group.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsumerGroupSnapshot {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub subscription_metadata: BTreeMap<String, TopicMetadata>,
    pub members: BTreeMap<String, ConsumerGroupMember>,
    pub target_assignment: BTreeMap<String, Assignment>,
}

/// The topics the broker knows, as the heartbeat sees them (Kafka's `MetadataImage.topics()`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicsView {
    /// Topic name -> (topic id, partition count). Internal topics are included: like Kafka's,
    /// a broker-side regex subscription matches them too.
    pub by_name: BTreeMap<String, (Uuid, i32)>,
}

impl TopicsView {
    pub fn new(topics: impl IntoIterator<Item = (String, Uuid, i32)>) -> Self {
        TopicsView {
            by_name: topics.into_iter().map(|(n, id, p)| (n, (id, p))).collect(),
        }
    }

    pub fn name_of(&self, id: Uuid) -> Option<&str> {
        self.by_name
            .iter()
            .find(|(_, (i, _))| *i == id)
            .map(|(n, _)| n.as_str())
    }
}

/// Converts an assignment to the wire form shared by several messages.
pub fn assignment_to_vec(a: &Assignment) -> Vec<(Uuid, Vec<i32>)> {
    a.iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(t, ps)| (*t, ps.iter().copied().collect()))
        .collect()
}

/// Builds an assignment from (topic id, partitions) pairs, merging duplicates.
pub fn assignment_from<'a>(pairs: impl IntoIterator<Item = (Uuid, &'a [i32])>) -> Assignment {
    let mut out = Assignment::new();
    for (t, ps) in pairs {
        out.entry(t).or_default().extend(ps.iter().copied());
    }
    out.retain(|_, ps| !ps.is_empty());
    out
}

/// Whether every partition of `owned` is in `assigned` (`isSubset`). `None` is not a subset.
pub fn is_subset(owned: Option<&Assignment>, assigned: &Assignment) -> bool {
    let Some(owned) = owned else { return false };
    owned
        .iter()
        .all(|(t, ps)| ps.is_empty() || assigned.get(t).map(|a| ps.is_subset(a)).unwrap_or(false))
}

/// The subscribed topic names of a set of members: explicit names and the matches of their
/// regular expressions against `topics`.
pub fn subscribed_topic_names<'a>(
    members: impl Iterator<Item = &'a ConsumerGroupMember>,
    topics: &TopicsView,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for m in members {
        out.extend(member_topic_names(m, topics));
    }
    out
}

/// One member's subscribed topic names (explicit names plus regex matches that exist).
pub fn member_topic_names(m: &ConsumerGroupMember, topics: &TopicsView) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = m.subscribed_topic_names.iter().cloned().collect();
    if let Some(re) = m
        .subscribed_topic_regex
        .as_deref()
        .filter(|r| !r.is_empty())
    {
        if let Ok(re) = compile_regex(re) {
            out.extend(topics.by_name.keys().filter(|n| re.is_match(n)).cloned());
        }
    }
    out
}

/// Compiles a subscription regex as Kafka's RE2/J does: the whole topic name must match.
pub fn compile_regex(re: &str) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(&format!("^(?:{re})$"))
        .size_limit(1 << 20)
        .build()
}
