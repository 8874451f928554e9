//! The three coordinators on internal topics, each computing records and a response and
//! changing state only by replaying records (also when a partition is loaded):
//!
//! - the group coordinator (most of this folder): classic, consumer (KIP-848) and share
//!   (KIP-932) groups and committed offsets on `__consumer_offsets`; Kafka 4's
//!   `GroupCoordinatorService` / `GroupCoordinatorShard` / `GroupMetadataManager` /
//!   `OffsetMetadataManager`, sans-io and deterministic;
//! - the transaction coordinator ([`txn`]): transactional ids, their producer ids and epochs
//!   and the two-phase end of a transaction on `__transaction_state`;
//! - the share coordinator ([`share_state`]): KIP-932's durable share-partition state on
//!   `__share_group_state`.
//!
//! The group coordinator's parts:
//!
//! - [`runtime`]: the coordinator pattern. Every operation computes `(records, response)`; the
//!   records go to the group's `__consumer_offsets` partition through [`CoordinatorLog`] and the
//!   durable state changes only by replaying them, the same path used when a partition is loaded.
//! - [`records`]: Kafka's version-prefixed keys and values (`OffsetCommitKey` type 1,
//!   `GroupMetadataKey` type 2) so Kafka's tools read the topic.
//! - [`group`]: the classic group state machine (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//!   KIP-394 pending members, KIP-345 static membership, initial rebalance delay).
//! - [`offsets`]: OffsetCommit, OffsetFetch, OffsetDelete and offset expiration.
//! - [`admin`]: ListGroups, DescribeGroups, DeleteGroups.
//! - [`consumer`]: KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe,
//!   server-side assignors, records types 3-8).
//! - [`share`]: KIP-932 share groups (ShareGroupHeartbeat, ShareGroupDescribe, the `simple`
//!   assignor, records types 10-15).
//! - [`txn_offsets`]: offsets committed inside a transaction (TxnOffsetCommit), pending until
//!   the transaction's marker.
//! - [`shard`]: one `__consumer_offsets` partition's state; [`service`]: the async facade the
//!   handlers call; [`error`]: [`CoordinatorError`] and its mapping to Kafka error codes.
//! - [`client_metrics`]: KIP-714 client telemetry subscriptions per client instance (Kafka's
//!   `ClientMetricsManager` without a receiver plugin).
//!
//! For the group and transaction coordinators, [`offsets_topic`]: `__consumer_offsets` and
//! `__transaction_state` as their logs (appends through the replica manager, reads back for
//! loading, topic creation). The share coordinator's log is given to it from above
//! (`cluster::share_persister`).
//!
//! Uses `protocol`, `clock`, `error` and `metrics`, and knows nothing of sockets. Only
//! [`offsets_topic`] reaches the partitions (`replica`) and which topics are internal
//! (`controller::image`); [`share_state`] takes its state types (key, batches, writes) from
//! `replica::share_persister`, the interface the share partitions persist through.
pub mod admin;
pub mod client_metrics;
pub mod consumer;
pub mod error;
pub mod group;
pub mod offsets;
pub mod offsets_topic;
pub mod records;
pub mod runtime;
pub mod service;
pub mod shard;
pub mod share;
pub mod share_state;
pub mod txn;
pub mod txn_offsets;

#[cfg(test)]
mod tests;

pub use error::CoordinatorError;
pub use runtime::{
    Completion, CoordinatorLog, CoordinatorLogError, CoordinatorRecord, InMemoryCoordinatorLog,
    ResponseId,
};
pub use service::{GroupCoordinator, PendingResponse};
pub use shard::{GroupCoordinatorShard, ShardSnapshot};

/// The `__consumer_offsets` topic name.
pub const GROUP_METADATA_TOPIC_NAME: &str = "__consumer_offsets";

/// Group coordinator configuration (Kafka's `GroupCoordinatorConfig` / `OffsetConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `offsets.topic.num.partitions`.
    pub offsets_topic_num_partitions: i32,
    /// `group.initial.rebalance.delay.ms`: how long the first rebalance of an empty group waits
    /// for more members (Kafka's `InitialDelayedJoin`).
    pub group_initial_rebalance_delay_ms: i64,
    /// `group.min.session.timeout.ms`.
    pub group_min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`.
    pub group_max_session_timeout_ms: i32,
    /// `group.max.size`.
    pub group_max_size: i32,
    /// `offsets.retention.minutes`, in milliseconds.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes`.
    pub offset_metadata_max_bytes: usize,
    /// How long a brand-new member's JoinGroup may wait in a rebalance before it is dropped
    /// (Kafka's `GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`, 5 minutes).
    pub group_new_member_join_timeout_ms: i64,
    /// `group.consumer.session.timeout.ms` (KIP-848).
    pub consumer_group_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms` (KIP-848).
    pub consumer_group_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size` (KIP-848).
    pub consumer_group_max_size: i32,
    /// `group.consumer.assignors`: server-side assignor names; the first is the default.
    pub consumer_group_assignors: Vec<String>,
    /// `group.share.max.size` (KIP-932).
    pub share_group_max_size: i32,
    /// `group.share.session.timeout.ms`.
    pub share_group_session_timeout_ms: i32,
    /// `group.share.heartbeat.interval.ms`.
    pub share_group_heartbeat_interval_ms: i32,
    /// `group.share.record.lock.duration.ms`.
    pub share_group_record_lock_duration_ms: i32,
    /// `group.share.delivery.count.limit`.
    pub share_group_delivery_count_limit: i32,
    /// `group.share.partition.max.record.locks`.
    pub share_group_partition_max_record_locks: i32,
    /// The groups' own configs (GROUP resources) that change the settings above.
    pub overrides: std::sync::Arc<GroupConfigOverrides>,
}

/// What a share partition of a group runs with: the group's `share.*` configs over the
/// broker's `group.share.*` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartitionSettings {
    pub record_lock_duration_ms: i32,
    pub delivery_count_limit: i32,
    pub partition_max_record_locks: i32,
    /// `share.auto.offset.reset`: `latest` (the default), `earliest` or `by_duration:<ISO-8601>`.
    pub auto_offset_reset: String,
    /// `share.isolation.level`: `read_uncommitted` (the default) or `read_committed`.
    pub isolation_level: String,
}

/// Per-group overrides of the consumer-group timings, as Kafka's `GroupConfigManager` keeps
/// them: set from the GROUP configs of each metadata image, read at every heartbeat, so a
/// change applies from the group's next heartbeat on.
#[derive(Debug, Default)]
pub struct GroupConfigOverrides {
    /// Group id to (session timeout, heartbeat interval); `None` leaves the broker's.
    consumer_timings:
        parking_lot::RwLock<std::collections::HashMap<String, (Option<i32>, Option<i32>)>>,
    /// Group id to its `share.*` configs as set.
    share: parking_lot::RwLock<
        std::collections::HashMap<String, std::collections::BTreeMap<String, String>>,
    >,
}

impl PartialEq for GroupConfigOverrides {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
            || (*self.consumer_timings.read() == *other.consumer_timings.read()
                && *self.share.read() == *other.share.read())
    }
}

impl Eq for GroupConfigOverrides {}

impl GroupConfigOverrides {
    /// Replaces every group's overrides (the groups that have none are left out).
    pub fn replace(&self, timings: std::collections::HashMap<String, (Option<i32>, Option<i32>)>) {
        *self.consumer_timings.write() = timings;
    }

    /// Replaces every group's `share.*` configs.
    pub fn replace_share(
        &self,
        configs: std::collections::HashMap<String, std::collections::BTreeMap<String, String>>,
    ) {
        *self.share.write() = configs;
    }

    fn share_value(&self, group_id: &str, key: &str) -> Option<String> {
        self.share
            .read()
            .get(group_id)
            .and_then(|c| c.get(key))
            .cloned()
    }

    fn share_int(&self, group_id: &str, key: &str) -> Option<i32> {
        self.share_value(group_id, key)
            .and_then(|v| v.trim().parse().ok())
    }

    fn timing(
        &self,
        group_id: &str,
        pick: fn(&(Option<i32>, Option<i32>)) -> Option<i32>,
    ) -> Option<i32> {
        self.consumer_timings.read().get(group_id).and_then(pick)
    }
}

impl GroupConfig {
    /// A consumer group's session timeout: its `consumer.session.timeout.ms`, or the broker's.
    pub fn consumer_session_timeout_ms(&self, group_id: &str) -> i32 {
        self.overrides
            .timing(group_id, |t| t.0)
            .unwrap_or(self.consumer_group_session_timeout_ms)
    }

    /// A consumer group's heartbeat interval: its `consumer.heartbeat.interval.ms`, or the
    /// broker's.
    pub fn consumer_heartbeat_interval_ms(&self, group_id: &str) -> i32 {
        self.overrides
            .timing(group_id, |t| t.1)
            .unwrap_or(self.consumer_group_heartbeat_interval_ms)
    }
}

impl GroupConfig {
    /// A share group's session timeout: its `share.session.timeout.ms`, or the broker's.
    pub fn share_session_timeout_ms(&self, group_id: &str) -> i32 {
        self.overrides
            .share_int(group_id, "share.session.timeout.ms")
            .unwrap_or(self.share_group_session_timeout_ms)
    }

    /// A share group's heartbeat interval: its `share.heartbeat.interval.ms`, or the broker's.
    pub fn share_heartbeat_interval_ms(&self, group_id: &str) -> i32 {
        self.overrides
            .share_int(group_id, "share.heartbeat.interval.ms")
            .unwrap_or(self.share_group_heartbeat_interval_ms)
    }

    /// The settings a share partition of `group_id` runs with.
    pub fn share_partition_settings(&self, group_id: &str) -> SharePartitionSettings {
        let o = &self.overrides;
        SharePartitionSettings {
            record_lock_duration_ms: o
                .share_int(group_id, "share.record.lock.duration.ms")
                .unwrap_or(self.share_group_record_lock_duration_ms),
            delivery_count_limit: o
                .share_int(group_id, "share.delivery.count.limit")
                .unwrap_or(self.share_group_delivery_count_limit),
            partition_max_record_locks: o
                .share_int(group_id, "share.partition.max.record.locks")
                .unwrap_or(self.share_group_partition_max_record_locks),
            auto_offset_reset: o
                .share_value(group_id, "share.auto.offset.reset")
                .unwrap_or_else(|| "latest".to_string()),
            isolation_level: o
                .share_value(group_id, "share.isolation.level")
                .unwrap_or_else(|| "read_uncommitted".to_string()),
        }
    }

    /// The assignor a consumer group uses when no member asks for one.
    pub fn default_assignor(&self) -> &str {
        self.consumer_group_assignors
            .first()
            .map(String::as_str)
            .unwrap_or(consumer::assignor::UNIFORM_ASSIGNOR_NAME)
    }
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            offsets_topic_num_partitions: 50,
            group_initial_rebalance_delay_ms: 3_000,
            group_min_session_timeout_ms: 6_000,
            group_max_session_timeout_ms: 1_800_000,
            group_max_size: i32::MAX,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
            group_new_member_join_timeout_ms: 300_000,
            consumer_group_session_timeout_ms: 45_000,
            consumer_group_heartbeat_interval_ms: 5_000,
            consumer_group_max_size: i32::MAX,
            consumer_group_assignors: vec![
                consumer::assignor::UNIFORM_ASSIGNOR_NAME.to_string(),
                consumer::assignor::RANGE_ASSIGNOR_NAME.to_string(),
            ],
            share_group_max_size: 200,
            share_group_session_timeout_ms: 45_000,
            share_group_heartbeat_interval_ms: 5_000,
            share_group_record_lock_duration_ms: 30_000,
            share_group_delivery_count_limit: 5,
            share_group_partition_max_record_locks: 2_000,
            overrides: Default::default(),
        }
    }
}

/// Java's `String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, wrapping.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// The `__consumer_offsets` partition that owns `group_id`:
/// `Utils.abs(groupId.hashCode()) % numPartitions` (`Utils.abs` maps `i32::MIN` to 0).
pub fn partition_for(group_id: &str, num_partitions: i32) -> i32 {
    if num_partitions <= 0 {
        return 0;
    }
    let h = java_string_hash(group_id);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % num_partitions
}
