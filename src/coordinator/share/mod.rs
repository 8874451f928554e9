//! KIP-932 share groups on the group coordinator: the group, its members and their
//! assignments (Kafka's `ShareGroup`, `ShareGroupMember`, `ShareGroupAssignmentBuilder`).
//!
//! A share group's durable state is what its five `__consumer_offsets` record types carry
//! ([`records`]: key types 10-14): the group epoch, each member's subscription, the target
//! assignment with its epoch, and each member's current assignment. It changes only by
//! [`ShareGroup::replay`]; session deadlines are volatile, as in Kafka.
//!
//! Unlike a consumer group, a partition may be assigned to several members at once (records,
//! not partitions, are what members own), so a member moves to its target assignment at once:
//! nothing has to be revoked first. The operations live in [`heartbeat`]
//! (ShareGroupHeartbeat: join, heartbeat, leave, session expiry), [`assignor`] (Kafka's
//! `simple` assignor) and [`admin`] (ShareGroupDescribe, ListGroups, DeleteGroups).
pub mod admin;
pub mod assignor;
pub mod facade;
pub mod heartbeat;
pub mod records;

use std::collections::BTreeMap;

use super::consumer::Assignment;

/// The group type ListGroups reports for share groups, and their protocol type.
pub const SHARE_GROUP_TYPE: &str = "share";
/// The only server assignor share groups have (Kafka's `SimpleAssignor.SIMPLE_ASSIGNOR_NAME`).
pub const SIMPLE_ASSIGNOR_NAME: &str = "simple";
/// `ShareGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH`.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;

/// Kafka's `ShareGroup.ShareGroupState`; `as_str` gives Kafka's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareGroupState {
    Empty,
    Stable,
    Dead,
}

impl ShareGroupState {
    pub fn as_str(self) -> &'static str {
        match self {
            ShareGroupState::Empty => "Empty",
            ShareGroupState::Stable => "Stable",
            ShareGroupState::Dead => "Dead",
        }
    }
}

/// One member of a share group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShareGroupMember {
    pub member_id: String,
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// Kafka's `MemberState` byte (always 0, STABLE, for share members).
    pub state: i8,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub assigned_partitions: Assignment,
}

impl ShareGroupMember {
    pub fn new(member_id: &str) -> Self {
        ShareGroupMember {
            member_id: member_id.to_string(),
            ..Default::default()
        }
    }

    /// What `ShareGroupMemberMetadataValue` carries differs.
    pub fn subscription_differs(&self, other: &ShareGroupMember) -> bool {
        self.rack_id != other.rack_id
            || self.client_id != other.client_id
            || self.client_host != other.client_host
            || self.subscribed_topic_names != other.subscribed_topic_names
    }
}

/// A KIP-932 share group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShareGroup {
    pub group_id: String,
    pub group_epoch: i32,
    /// A hash of the subscribed topics' metadata (ids and partition counts) at the group
    /// epoch: a topic created, deleted or grown bumps the epoch (`ShareGroupMetadataValue`).
    pub metadata_hash: i64,
    /// The epoch of the target assignment.
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, ShareGroupMember>,
    /// Member id -> target assignment.
    pub target_assignment: BTreeMap<String, Assignment>,
    /// Volatile: member id -> session deadline.
    pub session_deadlines_ms: BTreeMap<String, i64>,
}

impl ShareGroup {
    pub fn new(group_id: &str) -> Self {
        ShareGroup {
            group_id: group_id.to_string(),
            ..Default::default()
        }
    }

    pub fn state(&self) -> ShareGroupState {
        if self.members.is_empty() {
            ShareGroupState::Empty
        } else {
            ShareGroupState::Stable
        }
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The durable view, for replay-equality tests.
    pub fn snapshot(&self) -> ShareGroup {
        ShareGroup {
            session_deadlines_ms: BTreeMap::new(),
            ..self.clone()
        }
    }
}

/// Kafka's metadata hash stand-in: a stable hash over (name, id, partition count) of the
/// subscribed topics, so any change to them changes it.
pub fn metadata_hash<'a>(
    topics: impl IntoIterator<Item = (&'a str, crate::protocol::codec::Uuid, i32)>,
) -> i64 {
    // FNV-1a over a canonical encoding; the topics arrive sorted by name (BTreeMap order).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut any = false;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, id, partitions) in topics {
        any = true;
        eat(name.as_bytes());
        eat(&[0]);
        eat(&id.0);
        eat(&partitions.to_be_bytes());
    }
    if any {
        h as i64
    } else {
        0
    }
}
