//! The classic group: its members, state and protocol (Kafka's `ClassicGroup`,
//! `ClassicGroupMember`, `ClassicGroupState`).
//!
//! The durable part of a group (generation, protocol, leader, members with subscription and
//! assignment) changes only by replaying `GroupMetadataValue` records
//! ([`ClassicGroup::replay_metadata`]). The rest is rebalance bookkeeping that Kafka does not
//! persist either: who is awaiting a JoinGroup or SyncGroup response, KIP-394 pending members,
//! heartbeat deadlines and the join and sync timers.
//!
//! The operations live in [`join`] (JoinGroup), [`sync`] (SyncGroup, Heartbeat, LeaveGroup) and
//! [`rebalance`] (preparing and completing rebalances, member removal, timers).
pub mod join;
pub mod rebalance;
pub mod sync;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::coordinator::runtime::ResponseId;
use crate::protocol::codec::Decode;
use crate::protocol::internal_records::group_metadata_value::{GroupMetadataValue, MemberMetadata};
use crate::protocol::messages::consumer_protocol_subscription::ConsumerProtocolSubscription;
use crate::protocol::messages::join_group_response::JoinGroupResponseMember;

/// The consumer protocol type, whose subscriptions the coordinator can read.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Kafka's `ClassicGroupState`; `Display` gives Kafka's exact names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClassicGroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl ClassicGroupState {
    pub fn as_str(self) -> &'static str {
        match self {
            ClassicGroupState::Empty => "Empty",
            ClassicGroupState::PreparingRebalance => "PreparingRebalance",
            ClassicGroupState::CompletingRebalance => "CompletingRebalance",
            ClassicGroupState::Stable => "Stable",
            ClassicGroupState::Dead => "Dead",
        }
    }
}

impl std::fmt::Display for ClassicGroupState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A JoinGroup or SyncGroup request waiting for its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiter {
    pub id: ResponseId,
    pub api_version: i16,
}

/// A member of a classic group.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassicGroupMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    /// (protocol name, metadata) in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// The assignment the leader gave this member, as sent.
    pub assignment: Bytes,
    pub awaiting_join: Option<Waiter>,
    pub awaiting_sync: Option<Waiter>,
    /// Joined but not yet through a rebalance; may be expired while awaiting join.
    pub is_new: bool,
    /// When the member's session expires unless it heartbeats; `None` while not tracked.
    pub heartbeat_deadline_ms: Option<i64>,
}

impl ClassicGroupMember {
    /// The metadata this member sent for `protocol`.
    pub fn metadata(&self, protocol: &str) -> Option<&Bytes> {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m)
    }

    /// Whether `protocols` equals what the member last sent (`ClassicGroupMember.matches`).
    pub fn matches(&self, protocols: &[(String, Bytes)]) -> bool {
        self.protocols == protocols
    }

    /// Kafka's `hasSatisfiedHeartbeat`: a member waiting on a rebalance needs no heartbeat,
    /// unless it is new.
    pub fn has_satisfied_heartbeat(&self) -> bool {
        if self.is_new {
            false
        } else {
            self.awaiting_join.is_some() || self.awaiting_sync.is_some()
        }
    }
}

/// The join timer: the initial delayed join of an empty group, or the rebalance timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinTimer {
    pub deadline_ms: i64,
    /// `Some((delay, remaining))` for Kafka's `InitialDelayedJoin`.
    pub initial: Option<(i64, i64)>,
}

/// A classic group.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassicGroup {
    pub group_id: String,
    pub state: ClassicGroupState,
    pub previous_state: ClassicGroupState,
    /// When the group last changed state as recorded (`currentStateTimestamp`).
    pub current_state_timestamp_ms: Option<i64>,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader_id: Option<String>,
    pub members: BTreeMap<String, ClassicGroupMember>,
    /// group.instance.id -> member id.
    pub static_members: BTreeMap<String, String>,
    /// KIP-394: member ids handed out with MEMBER_ID_REQUIRED, with their expiry.
    pub pending_members: BTreeMap<String, i64>,
    /// Members that got a JoinGroup response but have not sent SyncGroup.
    pub pending_sync_members: BTreeSet<String>,
    pub new_member_added: bool,
    pub join_timer: Option<JoinTimer>,
    pub sync_deadline_ms: Option<i64>,
}

impl ClassicGroup {
    pub fn new(group_id: &str) -> Self {
        ClassicGroup {
            group_id: group_id.to_string(),
            state: ClassicGroupState::Empty,
            previous_state: ClassicGroupState::Empty,
            current_state_timestamp_ms: None,
            generation_id: 0,
            protocol_type: None,
            protocol_name: None,
            leader_id: None,
            members: BTreeMap::new(),
            static_members: BTreeMap::new(),
            pending_members: BTreeMap::new(),
            pending_sync_members: BTreeSet::new(),
            new_member_added: false,
            join_timer: None,
            sync_deadline_ms: None,
        }
    }

    pub fn transition_to(&mut self, state: ClassicGroupState) {
        self.previous_state = self.state;
        self.state = state;
    }

    pub fn is_in(&self, state: ClassicGroupState) -> bool {
        self.state == state
    }

    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }

    pub fn num_awaiting_join(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.awaiting_join.is_some())
            .count()
    }

    /// All members have rejoined and no KIP-394 member is still to come.
    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_awaiting_join() && self.pending_members.is_empty()
    }

    /// The largest rebalance timeout of the members (`ClassicGroup.rebalanceTimeoutMs`).
    pub fn rebalance_timeout_ms(&self) -> i64 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms as i64)
            .max()
            .unwrap_or(0)
    }

    pub fn can_rebalance(&self) -> bool {
        matches!(
            self.state,
            ClassicGroupState::Stable
                | ClassicGroupState::CompletingRebalance
                | ClassicGroupState::Empty
        )
    }

    /// Adds a member; the first member becomes the leader.
    pub fn add(&mut self, member: ClassicGroupMember) {
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        if let Some(instance) = &member.group_instance_id {
            self.static_members
                .insert(instance.clone(), member.member_id.clone());
        }
        self.members.insert(member.member_id.clone(), member);
    }

    /// Removes a member, electing another leader if needed. Returns the removed member.
    pub fn remove(&mut self, member_id: &str) -> Option<ClassicGroupMember> {
        let removed = self.members.remove(member_id)?;
        if let Some(instance) = &removed.group_instance_id {
            if self.static_members.get(instance).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance);
            }
        }
        self.pending_sync_members.remove(member_id);
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        Some(removed)
    }

    pub fn static_member_id(&self, instance: &str) -> Option<&String> {
        self.static_members.get(instance)
    }

    /// Kafka's `ClassicGroup.validateMember`: the member exists and, for a static member, the
    /// instance id still maps to this member id.
    pub fn validate_member(
        &self,
        member_id: &str,
        instance: Option<&str>,
    ) -> Result<(), crate::coordinator::CoordinatorError> {
        use crate::coordinator::CoordinatorError;
        match instance {
            Some(instance) => match self.static_member_id(instance) {
                None => Err(CoordinatorError::UnknownMemberId),
                Some(id) if id != member_id => Err(CoordinatorError::FencedInstanceId),
                Some(_) => Ok(()),
            },
            None if !self.members.contains_key(member_id) => Err(CoordinatorError::UnknownMemberId),
            None => Ok(()),
        }
    }

    /// Kafka's `supportsClassicProtocols`: an empty group takes any non-empty protocol type
    /// and list; otherwise the type must match and one protocol must be supported by all.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.is_in(ClassicGroupState::Empty) || self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && protocols.iter().any(|(name, _)| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|(n, _)| n == name))
            })
    }

    /// Kafka's `selectProtocol`: among the protocols every member supports, each member votes
    /// for its most preferred one; most votes wins (ties: the smallest name, to stay
    /// deterministic).
    pub fn select_protocol(&self) -> Option<String> {
        let candidates: BTreeSet<&str> = self
            .members
            .values()
            .next()?
            .protocols
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|(p, _)| p == n))
            })
            .collect();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some((name, _)) = m
                .protocols
                .iter()
                .find(|(n, _)| candidates.contains(n.as_str()))
            {
                *votes.entry(name.as_str()).or_default() += 1;
            }
        }
        let best = votes.values().copied().max()?;
        votes
            .into_iter()
            .find(|(_, v)| *v == best)
            .map(|(n, _)| n.to_string())
    }

    /// The members' metadata for the selected protocol, as the leader's JoinGroup response
    /// carries them.
    pub fn current_member_metadata(&self) -> Vec<JoinGroupResponseMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or("");
        self.members
            .values()
            .map(|m| JoinGroupResponseMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(protocol).cloned().unwrap_or_default(),
                ..Default::default()
            })
            .collect()
    }

    /// The topics the members subscribe to, when the group uses the consumer protocol and
    /// every subscription can be read; `None` when unknown.
    pub fn subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for m in self.members.values() {
            let mut buf = m.metadata(protocol)?.clone();
            if buf.len() < 2 {
                return None;
            }
            // Every version starts with the v0 fields, so read v0 whatever the version (as
            // Kafka does), ignoring what follows.
            let _version = bytes::Buf::get_i16(&mut buf);
            let sub = ConsumerProtocolSubscription::decode(&mut buf, 0).ok()?;
            topics.extend(sub.topics);
        }
        Some(topics)
    }

    /// Whether the group may be using offsets of `topic` (unknown subscriptions count as yes,
    /// so offsets a live group may need are never deleted).
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        if self.members.is_empty() {
            return false;
        }
        self.subscribed_topics()
            .map(|t| t.contains(topic))
            .unwrap_or(true)
    }

    /// The durable projection of the group as a `GroupMetadataValue`, with `assignment` for
    /// each member (Kafka's `newGroupMetadataRecord`); `state_since_ms` is when the group
    /// entered the state the record describes.
    pub fn to_metadata_value(
        &self,
        assignment: &BTreeMap<String, Bytes>,
        state_since_ms: i64,
    ) -> GroupMetadataValue {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        GroupMetadataValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation_id,
            protocol: self.protocol_name.clone(),
            leader: self.leader_id.clone(),
            current_state_timestamp: state_since_ms,
            members: self
                .members
                .values()
                .map(|m| MemberMetadata {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout: m.rebalance_timeout_ms,
                    session_timeout: m.session_timeout_ms,
                    subscription: m.metadata(&protocol).cloned().unwrap_or_default(),
                    assignment: assignment.get(&m.member_id).cloned().unwrap_or_default(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Applies a replayed `GroupMetadataValue`: the durable fields and the membership become
    /// the record's; rebalance bookkeeping of members that stay is kept. A group with members
    /// is Stable, one without is Empty. Returns the members the record drops, so their waiters
    /// can be answered.
    pub fn replay_metadata(&mut self, value: &GroupMetadataValue) -> Vec<ClassicGroupMember> {
        self.protocol_type = (!value.protocol_type.is_empty()).then(|| value.protocol_type.clone());
        self.generation_id = value.generation;
        self.protocol_name = value.protocol.clone();
        self.leader_id = value.leader.clone();
        self.current_state_timestamp_ms =
            (value.current_state_timestamp >= 0).then_some(value.current_state_timestamp);
        let protocol = value.protocol.clone().unwrap_or_default();
        let mut members = BTreeMap::new();
        for mm in &value.members {
            let member = match self.members.remove(&mm.member_id) {
                Some(mut live) => {
                    live.group_instance_id = mm.group_instance_id.clone();
                    live.client_id = mm.client_id.clone();
                    live.client_host = mm.client_host.clone();
                    live.rebalance_timeout_ms = mm.rebalance_timeout;
                    live.session_timeout_ms = mm.session_timeout;
                    live.assignment = mm.assignment.clone();
                    match live.protocols.iter_mut().find(|(n, _)| *n == protocol) {
                        Some(p) => p.1 = mm.subscription.clone(),
                        None => live
                            .protocols
                            .push((protocol.clone(), mm.subscription.clone())),
                    }
                    live
                }
                None => ClassicGroupMember {
                    member_id: mm.member_id.clone(),
                    group_instance_id: mm.group_instance_id.clone(),
                    client_id: mm.client_id.clone(),
                    client_host: mm.client_host.clone(),
                    // Records before v1 carry no rebalance timeout; Kafka uses the session's.
                    rebalance_timeout_ms: if mm.rebalance_timeout < 0 {
                        mm.session_timeout
                    } else {
                        mm.rebalance_timeout
                    },
                    session_timeout_ms: mm.session_timeout,
                    protocol_type: value.protocol_type.clone(),
                    protocols: vec![(protocol.clone(), mm.subscription.clone())],
                    assignment: mm.assignment.clone(),
                    awaiting_join: None,
                    awaiting_sync: None,
                    is_new: false,
                    heartbeat_deadline_ms: None,
                },
            };
            members.insert(mm.member_id.clone(), member);
        }
        // Members the record does not list are gone.
        let dropped = std::mem::replace(&mut self.members, members)
            .into_values()
            .collect();
        self.static_members = self
            .members
            .values()
            .filter_map(|m| {
                m.group_instance_id
                    .clone()
                    .map(|i| (i, m.member_id.clone()))
            })
            .collect();
        self.pending_sync_members
            .retain(|id| self.members.contains_key(id));
        let state = if self.members.is_empty() {
            ClassicGroupState::Empty
        } else {
            ClassicGroupState::Stable
        };
        if self.state != state {
            self.transition_to(state);
        }
        dropped
    }
}
