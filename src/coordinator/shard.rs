//! One `__consumer_offsets` partition's coordinator state (Kafka's `GroupCoordinatorShard`):
//! its classic groups and committed offsets, the log it writes to, and the completions of
//! delayed JoinGroup and SyncGroup responses.
//!
//! [`GroupCoordinatorShard::write`] is the only way durable state changes: records are appended
//! and then replayed by [`GroupCoordinatorShard::replay`], the same function
//! [`GroupCoordinatorShard::load`] runs over a partition at start-up.
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::coordinator::consumer::records::ConsumerGroupRecord;
use crate::coordinator::consumer::{ConsumerGroup, ConsumerGroupSnapshot};
use crate::coordinator::error::CoordinatorError;
use crate::coordinator::group::{ClassicGroup, ClassicGroupState, Waiter};
use crate::coordinator::records::{self, GroupRecord, OffsetAndMetadata};
use crate::coordinator::runtime::{Completion, CoordinatorLog, CoordinatorRecord};
use crate::coordinator::share::records::ShareGroupRecord;
use crate::coordinator::share::ShareGroup;
use crate::coordinator::GroupConfig;
use crate::protocol::codec::DecodeError;
use crate::protocol::messages::join_group_response::JoinGroupResponse;
use crate::protocol::messages::sync_group_response::SyncGroupResponse;

/// Committed offsets of one group: topic -> partition -> offset.
pub type GroupOffsets = BTreeMap<String, BTreeMap<i32, OffsetAndMetadata>>;

/// How a partition load went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadSummary {
    pub replayed: usize,
    /// Records that could not be decoded or belong to group types this coordinator does not
    /// serve; they are skipped, not fatal.
    pub skipped: usize,
}

/// The coordinator state of one `__consumer_offsets` partition.
pub struct GroupCoordinatorShard {
    pub(crate) partition: i32,
    pub(crate) config: Arc<GroupConfig>,
    log: Arc<dyn CoordinatorLog>,
    pub(crate) groups: BTreeMap<String, ClassicGroup>,
    /// KIP-848 consumer groups; a group id is in at most one of the three maps.
    pub(crate) consumer_groups: BTreeMap<String, ConsumerGroup>,
    /// KIP-932 share groups.
    pub(crate) share_groups: BTreeMap<String, ShareGroup>,
    /// Share-group members removed since the last call of
    /// [`GroupCoordinatorShard::take_share_members_left`]: the share partitions release the
    /// records they hold.
    pub(crate) share_members_left: Vec<(String, String)>,
    pub(crate) offsets: BTreeMap<String, GroupOffsets>,
    pub(crate) completions: Vec<Completion>,
    pub(crate) next_offsets_cleanup_ms: Option<i64>,
    /// Offsets committed inside open transactions, by producer id (KIP-98): invisible until
    /// the transaction's COMMIT marker reaches this partition.
    pub(crate) pending_txn_offsets:
        BTreeMap<i64, Vec<crate::coordinator::txn_offsets::PendingOffset>>,
    /// The coordinator's counters (`/metrics`); shared by every shard of the broker.
    pub(crate) metrics: crate::metrics::GroupCoordinatorMetrics,
}

impl std::fmt::Debug for GroupCoordinatorShard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCoordinatorShard")
            .field("partition", &self.partition)
            .field("groups", &self.groups.len())
            .finish()
    }
}

/// The durable view of a shard: what replaying its records must reproduce.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardSnapshot {
    pub groups: BTreeMap<String, GroupSnapshot>,
    pub consumer_groups: BTreeMap<String, ConsumerGroupSnapshot>,
    pub share_groups: BTreeMap<String, ShareGroup>,
    pub offsets: BTreeMap<String, GroupOffsets>,
}

/// The durable view of one group.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSnapshot {
    pub state: ClassicGroupState,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader_id: Option<String>,
    pub current_state_timestamp_ms: Option<i64>,
    /// member id -> (instance id, client id, client host, rebalance timeout, session timeout,
    /// subscription for the group's protocol, assignment).
    #[allow(clippy::type_complexity)]
    pub members: BTreeMap<String, (Option<String>, String, String, i32, i32, Bytes, Bytes)>,
}

impl GroupCoordinatorShard {
    pub fn new(partition: i32, config: Arc<GroupConfig>, log: Arc<dyn CoordinatorLog>) -> Self {
        GroupCoordinatorShard {
            partition,
            config,
            log,
            groups: BTreeMap::new(),
            consumer_groups: BTreeMap::new(),
            share_groups: BTreeMap::new(),
            share_members_left: Vec::new(),
            offsets: BTreeMap::new(),
            completions: Vec::new(),
            next_offsets_cleanup_ms: None,
            pending_txn_offsets: BTreeMap::new(),
            metrics: Default::default(),
        }
    }

    pub fn partition(&self) -> i32 {
        self.partition
    }

    pub fn group(&self, group_id: &str) -> Option<&ClassicGroup> {
        self.groups.get(group_id)
    }

    pub fn groups(&self) -> impl Iterator<Item = &ClassicGroup> {
        self.groups.values()
    }

    pub fn offsets(&self, group_id: &str) -> Option<&GroupOffsets> {
        self.offsets.get(group_id)
    }

    /// The share-group members removed since the last call, as (group id, member id).
    pub fn take_share_members_left(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.share_members_left)
    }

    /// The JoinGroup and SyncGroup responses completed since the last call.
    pub fn take_completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.completions)
    }

    /// Appends `records` to the partition and, once they are committed, replays them.
    /// Appends records inside a producer's transaction; the caller replays them as pending.
    pub(crate) fn log_append_transactional(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), crate::error::ErrorCode> {
        self.log
            .append_transactional(self.partition, producer_id, producer_epoch, records)
            .map_err(|e| CoordinatorError::from(e).offset_commit_code())
    }

    pub(crate) fn write(
        &mut self,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), CoordinatorError> {
        if records.is_empty() {
            return Ok(());
        }
        self.log.append(self.partition, records.clone())?;
        for r in &records {
            if let Err(e) = self.replay(r) {
                // Our own records always decode; this would be a codec bug.
                tracing::error!(partition = self.partition, error = %e, "cannot replay own record");
            }
        }
        Ok(())
    }

    /// Applies one record to the state. The only way durable state changes.
    pub fn replay(&mut self, record: &CoordinatorRecord) -> Result<(), DecodeError> {
        match records::decode(record)? {
            GroupRecord::OffsetCommit { key, value } => match value {
                Some(v) => {
                    self.create_simple_group_if_absent(&key.group);
                    self.offsets
                        .entry(key.group)
                        .or_default()
                        .entry(key.topic)
                        .or_default()
                        .insert(key.partition, OffsetAndMetadata::from(&v));
                }
                None => {
                    if let Some(group) = self.offsets.get_mut(&key.group) {
                        if let Some(topic) = group.get_mut(&key.topic) {
                            topic.remove(&key.partition);
                            if topic.is_empty() {
                                group.remove(&key.topic);
                            }
                        }
                        if group.is_empty() {
                            self.offsets.remove(&key.group);
                        }
                    }
                }
            },
            GroupRecord::GroupMetadata { key, value } => match value {
                Some(v) => {
                    let dropped = self
                        .groups
                        .entry(key.group.clone())
                        .or_insert_with(|| ClassicGroup::new(&key.group))
                        .replay_metadata(&v);
                    for mut m in dropped {
                        fail_waiters(
                            &mut self.completions,
                            &mut m,
                            CoordinatorError::UnknownMemberId,
                        );
                    }
                }
                None => {
                    if let Some(mut group) = self.groups.remove(&key.group) {
                        // Only empty groups are deleted, but never leave a waiter hanging.
                        let waiters: Vec<_> = group.members.keys().cloned().collect();
                        for id in waiters {
                            if let Some(m) = group.members.get_mut(&id) {
                                fail_waiters(
                                    &mut self.completions,
                                    m,
                                    CoordinatorError::CoordinatorNotAvailable,
                                );
                            }
                        }
                    }
                }
            },
            GroupRecord::Consumer(r) => self.replay_consumer_group(&r),
            GroupRecord::Share(r) => self.replay_share_group(&r),
            GroupRecord::Other { key_type } => {
                tracing::debug!(key_type, "skipping record of a group type not served here");
                return Err(DecodeError::UnknownApiKey(key_type));
            }
        }
        Ok(())
    }

    /// A commit for a group id no group of any type holds creates a simple group: an empty
    /// classic group without a protocol type, as Kafka's `OffsetMetadataManager.replay` does.
    /// An id is one group in Kafka, so a consumer or share group is never shadowed by one.
    pub(crate) fn create_simple_group_if_absent(&mut self, group_id: &str) {
        if self.consumer_groups.contains_key(group_id) || self.share_groups.contains_key(group_id) {
            return;
        }
        self.groups
            .entry(group_id.to_string())
            .or_insert_with(|| ClassicGroup::new(group_id));
    }

    /// Applies a KIP-848 record: creates the group on its first record (replacing an empty
    /// classic group of the same id, as Kafka's upgrade of a simple group does) and deletes it
    /// on the group epoch tombstone.
    fn replay_consumer_group(&mut self, r: &ConsumerGroupRecord) {
        let group_id = r.group_id();
        if !self.consumer_groups.contains_key(group_id) {
            if !r.creates_group() {
                return;
            }
            if self
                .groups
                .get(group_id)
                .map(|c| c.members.is_empty())
                .unwrap_or(false)
            {
                self.groups.remove(group_id);
            }
            self.consumer_groups
                .insert(group_id.to_string(), ConsumerGroup::new(group_id));
        }
        if let Some(g) = self.consumer_groups.get_mut(group_id) {
            g.replay(r);
        }
        if let ConsumerGroupRecord::GroupEpoch { epoch: None, .. } = r {
            self.consumer_groups.remove(group_id);
        }
    }

    /// Applies a share-group record: creates the group on its first record and deletes it on
    /// the group epoch tombstone.
    fn replay_share_group(&mut self, r: &ShareGroupRecord) {
        let group_id = r.group_id();
        if !self.share_groups.contains_key(group_id) {
            if !r.creates_group() {
                return;
            }
            self.share_groups
                .insert(group_id.to_string(), ShareGroup::new(group_id));
        }
        if let Some(g) = self.share_groups.get_mut(group_id) {
            g.replay(r);
        }
        if let ShareGroupRecord::GroupEpoch { value: None, .. } = r {
            self.share_groups.remove(group_id);
        }
    }

    /// Loads the partition from its records (start-up or failover), then starts the session
    /// timers of the loaded members (Kafka's `onLoaded`).
    pub fn load(
        &mut self,
        records: impl IntoIterator<Item = CoordinatorRecord>,
        now_ms: i64,
    ) -> LoadSummary {
        let mut summary = LoadSummary::default();
        for r in records {
            match self.replay(&r) {
                Ok(()) => summary.replayed += 1,
                Err(_) => summary.skipped += 1,
            }
        }
        for group in self.groups.values_mut() {
            for m in group.members.values_mut() {
                m.heartbeat_deadline_ms = Some(now_ms.saturating_add(m.session_timeout_ms as i64));
            }
        }
        for (group_id, group) in self.consumer_groups.iter_mut() {
            let session_ms = self.config.consumer_session_timeout_ms(group_id) as i64;
            let ids: Vec<String> = group.members.keys().cloned().collect();
            for id in ids {
                group.timers.entry(id).or_default().session_deadline_ms =
                    Some(now_ms.saturating_add(session_ms));
            }
        }
        for (group_id, group) in self.share_groups.iter_mut() {
            let session_ms = self.config.share_session_timeout_ms(group_id) as i64;
            let ids: Vec<String> = group.members.keys().cloned().collect();
            for id in ids {
                group
                    .session_deadlines_ms
                    .insert(id, now_ms.saturating_add(session_ms));
            }
        }
        summary
    }

    /// The durable view, for comparing a live shard with one rebuilt from its records.
    pub fn snapshot(&self) -> ShardSnapshot {
        let groups = self
            .groups
            .iter()
            .map(|(id, g)| {
                let protocol = g.protocol_name.clone().unwrap_or_default();
                let members = g
                    .members
                    .values()
                    .map(|m| {
                        (
                            m.member_id.clone(),
                            (
                                m.group_instance_id.clone(),
                                m.client_id.clone(),
                                m.client_host.clone(),
                                m.rebalance_timeout_ms,
                                m.session_timeout_ms,
                                m.metadata(&protocol).cloned().unwrap_or_default(),
                                m.assignment.clone(),
                            ),
                        )
                    })
                    .collect();
                let snap = GroupSnapshot {
                    state: g.state,
                    generation_id: g.generation_id,
                    protocol_type: g.protocol_type.clone(),
                    protocol_name: g.protocol_name.clone(),
                    leader_id: g.leader_id.clone(),
                    current_state_timestamp_ms: g.current_state_timestamp_ms,
                    members,
                };
                (id.clone(), snap)
            })
            .collect();
        ShardSnapshot {
            groups,
            consumer_groups: self
                .consumer_groups
                .iter()
                .map(|(id, g)| (id.clone(), g.snapshot()))
                .collect(),
            share_groups: self
                .share_groups
                .iter()
                .map(|(id, g)| (id.clone(), g.snapshot()))
                .collect(),
            offsets: self.offsets.clone(),
        }
    }

    /// Fires every timer due at `now_ms`: initial and rebalance join timeouts, pending sync
    /// timeouts, session expiry of members and KIP-394 pending members, and offset expiration.
    pub fn tick(&mut self, now_ms: i64) {
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        for id in ids {
            self.fire_group_timers(&id, now_ms);
        }
        self.fire_consumer_group_timers(now_ms);
        self.fire_share_group_timers(now_ms);
        let due = self
            .next_offsets_cleanup_ms
            .map(|t| t <= now_ms)
            .unwrap_or(true);
        if due {
            self.cleanup_group_metadata(now_ms);
            self.cleanup_consumer_groups();
            self.next_offsets_cleanup_ms =
                Some(now_ms.saturating_add(self.config.offsets_retention_check_interval_ms.max(1)));
        }
    }
}

/// Pushes a JoinGroup response for `waiter`, fixing fields older versions cannot carry.
pub(crate) fn push_join(
    out: &mut Vec<Completion>,
    waiter: Waiter,
    mut response: JoinGroupResponse,
) {
    // Before v7 the protocol name is not nullable (Kafka's JoinGroupResponse constructor).
    if waiter.api_version < 7 && response.protocol_name.is_none() {
        response.protocol_name = Some(String::new());
    }
    out.push(Completion::Join {
        id: waiter.id,
        response,
    });
}

/// A JoinGroup error response (no generation, no members).
pub(crate) fn join_error(error: CoordinatorError, member_id: &str) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: error.wire(),
        generation_id: -1,
        protocol_name: None,
        member_id: member_id.to_string(),
        ..Default::default()
    }
}

pub(crate) fn push_sync(out: &mut Vec<Completion>, waiter: Waiter, response: SyncGroupResponse) {
    out.push(Completion::Sync {
        id: waiter.id,
        response,
    });
}

pub(crate) fn sync_error(error: CoordinatorError) -> SyncGroupResponse {
    SyncGroupResponse {
        error_code: error.wire(),
        ..Default::default()
    }
}

/// Answers a member's outstanding JoinGroup and SyncGroup with `code`.
pub(crate) fn fail_waiters(
    out: &mut Vec<Completion>,
    member: &mut crate::coordinator::group::ClassicGroupMember,
    error: CoordinatorError,
) {
    if let Some(w) = member.awaiting_join.take() {
        push_join(out, w, join_error(error.clone(), &member.member_id));
    }
    if let Some(w) = member.awaiting_sync.take() {
        push_sync(out, w, sync_error(error));
    }
}
