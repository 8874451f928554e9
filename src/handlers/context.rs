//! The broker state every handler sees, and the topic operations several handlers share
//! (creation by CreateTopics and by Metadata auto-creation, partition config resolution).
use std::collections::BTreeMap;

use std::sync::Arc;

use crate::clock::SharedClock;
use crate::config::{BrokerConfig, ConfigError, TopicConfig};
use crate::controller::{MetadataError, MetadataStore, TopicMeta};
use crate::coordinator::txn::{TransactionCoordinator, TxnConfig};
use crate::coordinator::{GroupConfig, GroupCoordinator};
use crate::error::ErrorCode;
use crate::replica::{PartitionConfig, ReplicaManager};
use crate::storage::LogConfig;

/// How long a coordinator's answer waits for its records to reach the ISR.
const COORDINATOR_APPEND_TIMEOUT_MS: u64 = 5_000;

/// Limits enforced by the network layer, from the broker config.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    pub max_inflight_requests_per_connection: usize,
    pub socket_request_max_bytes: usize,
}

/// An advertised listener: where clients should connect.
#[derive(Debug, Clone)]
pub struct AdvertisedEndpoint {
    pub name: String,
    pub host: String,
    pub port: i32,
}

pub struct Broker {
    pub node_id: i32,
    pub cluster_id: String,
    pub config: BrokerConfig,
    pub limits: Limits,
    pub clock: SharedClock,
    pub metadata: Arc<MetadataStore>,
    pub replicas: Arc<ReplicaManager>,
    pub groups: Arc<GroupCoordinator>,
    pub txns: TransactionCoordinator,
    pub endpoints: Vec<AdvertisedEndpoint>,
    /// This node's membership of its controller quorum (a quorum of one by default).
    pub cluster: Arc<crate::cluster::ClusterContext>,
}

/// The transaction coordinator's settings from the broker config.
pub fn txn_config(c: &BrokerConfig) -> TxnConfig {
    TxnConfig {
        transaction_state_log_num_partitions: c.transaction_state_log_num_partitions.max(1),
        transaction_max_timeout_ms: c.transaction_max_timeout_ms,
        transactional_id_expiration_ms: c.transactional_id_expiration_ms as i64,
        // Test-only fault injection, read once here at start-up.
        fault_exit_after_prepare: std::env::var(
            crate::coordinator::txn::FAULT_AFTER_TXN_PREPARE_ENV,
        )
        .is_ok_and(|v| v == "exit"),
    }
}

/// The group coordinator's settings from the broker config.
pub fn group_config(c: &BrokerConfig) -> GroupConfig {
    GroupConfig {
        offsets_topic_num_partitions: c.offsets_topic_num_partitions.max(1),
        group_initial_rebalance_delay_ms: c.group_initial_rebalance_delay_ms as i64,
        group_min_session_timeout_ms: c.group_min_session_timeout_ms,
        group_max_session_timeout_ms: c.group_max_session_timeout_ms,
        group_max_size: c.group_max_size,
        offsets_retention_ms: c.offsets_retention_ms,
        consumer_group_session_timeout_ms: c.group_consumer_session_timeout_ms,
        consumer_group_heartbeat_interval_ms: c.group_consumer_heartbeat_interval_ms,
        consumer_group_max_size: c.group_consumer_max_size,
        consumer_group_assignors: c.group_consumer_assignors.clone(),
        ..GroupConfig::default()
    }
}

/// Why a topic operation failed, with the Kafka error it maps to.
#[derive(Debug, Clone)]
pub struct TopicError {
    pub code: ErrorCode,
    pub message: String,
}

impl TopicError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        TopicError {
            code,
            message: message.into(),
        }
    }
}

impl From<MetadataError> for TopicError {
    fn from(e: MetadataError) -> Self {
        match e {
            MetadataError::TopicExists(t) => TopicError::new(
                ErrorCode::TOPIC_ALREADY_EXISTS,
                format!("Topic '{t}' already exists."),
            ),
            MetadataError::UnknownTopic(t) => TopicError::new(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("Topic '{t}' does not exist."),
            ),
            other => TopicError::new(ErrorCode::KAFKA_STORAGE_ERROR, other.to_string()),
        }
    }
}

impl From<ConfigError> for TopicError {
    fn from(e: ConfigError) -> Self {
        TopicError::new(ErrorCode::INVALID_CONFIG, e.to_string())
    }
}

/// Kafka's topic name rule: 1-249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<(), TopicError> {
    let bad = |m: String| Err(TopicError::new(ErrorCode::INVALID_TOPIC_EXCEPTION, m));
    if name.is_empty() {
        return bad("Topic name is illegal, it can't be empty".into());
    }
    if name == "." || name == ".." {
        return bad("Topic name cannot be \".\" or \"..\"".into());
    }
    if name.len() > 249 {
        return bad(format!(
            "Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
        ));
    }
    if !name
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-')
    {
        return bad(format!(
            "Topic name {name} is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

impl Broker {
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// The error for a partition this broker has no replica of: in a cluster, a partition
    /// that exists elsewhere is NOT_LEADER_OR_FOLLOWER (the client refreshes its metadata and
    /// goes to the leader), as Kafka answers.
    pub fn missing_partition_error(&self, topic: &str, partition: i32) -> ErrorCode {
        if self.replicas.is_partition_offline(topic, partition) {
            return ErrorCode::KAFKA_STORAGE_ERROR;
        }
        if self.cluster.image().partition(topic, partition).is_some() {
            ErrorCode::NOT_LEADER_OR_FOLLOWER
        } else {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        }
    }

    /// The topics as KIP-848 consumer groups resolve subscriptions against them.
    pub fn topics_view(&self) -> crate::coordinator::consumer::TopicsView {
        let topics = self.metadata.topics();
        crate::coordinator::consumer::TopicsView::new(
            topics.iter().map(|t| (t.name.clone(), t.id, t.partitions)),
        )
    }

    /// Resolves a topic's effective configuration from its overrides and the broker defaults.
    pub fn topic_config(
        &self,
        overrides: &BTreeMap<String, String>,
    ) -> Result<TopicConfig, ConfigError> {
        TopicConfig::resolve(overrides, &self.config)
    }

    pub fn partition_config(&self, topic: &TopicMeta) -> PartitionConfig {
        let tc = match self.topic_config(&topic.configs) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(topic = %topic.name, error = %e, "invalid stored topic config, using defaults");
                TopicConfig::resolve(&BTreeMap::new(), &self.config).expect("defaults are valid")
            }
        };
        partition_config_from(&tc)
    }

    /// Whether `__consumer_offsets` exists; FindCoordinator asks the controller to create
    /// it, and the publisher loads its partitions where they are led.
    pub fn offsets_topic_exists(&self) -> bool {
        self.metadata
            .topic(super::offsets_topic::OFFSETS_TOPIC)
            .is_some()
    }

    /// Whether `__transaction_state` exists (created as `__consumer_offsets` is).
    pub fn transaction_topic_exists(&self) -> bool {
        self.metadata
            .topic(super::offsets_topic::TRANSACTION_TOPIC)
            .is_some()
    }

    /// Waits until everything appended so far to a coordinator partition is replicated to
    /// the ISR (the high watermark), so an acknowledged write survives a failover, as Kafka's
    /// coordinators append with acks=all. Immediate for a sole replica.
    ///
    /// The error is the coordinators' mapping of the append's outcome (Kafka's
    /// `CoordinatorRuntime` / `TransactionStateManager.appendTransactionToLog`): leadership
    /// lost is NOT_COORDINATOR; a timeout or an ISR below `min.insync.replicas` is
    /// COORDINATOR_NOT_AVAILABLE, which clients retry after looking the coordinator up again.
    pub async fn wait_replicated(&self, topic: &str, partition: i32) -> Result<(), ErrorCode> {
        let Some(p) = self.replicas.get(topic, partition) else {
            return Err(ErrorCode::NOT_COORDINATOR);
        };
        let outcome = self
            .replicas
            .wait_acks_all(
                &p,
                p.log_end_offset(),
                p.leader_epoch(),
                COORDINATOR_APPEND_TIMEOUT_MS,
            )
            .await;
        match outcome {
            Some(Ok(())) => Ok(()),
            Some(Err(crate::replica::PartitionError::NotLeaderOrFollower)) => {
                Err(ErrorCode::NOT_COORDINATOR)
            }
            // The ISR below min.insync.replicas, or the wait timed out.
            Some(Err(_)) | None => Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
        }
    }
}

/// Internal topics Kafka marks `is_internal`.
pub fn is_known_internal(name: &str) -> bool {
    name == "__consumer_offsets" || name == "__transaction_state"
}

pub fn partition_config_from(tc: &TopicConfig) -> PartitionConfig {
    // A compacted-only topic is never trimmed by time or size (Kafka's cleanup.policy=compact).
    let (retention_ms, retention_bytes) = if tc.cleanup_policy.delete {
        (tc.retention_ms, tc.retention_bytes)
    } else {
        (-1, -1)
    };
    PartitionConfig {
        log: LogConfig {
            segment_bytes: tc.segment_bytes.max(1) as u64,
            segment_ms: tc.segment_ms,
            retention_ms,
            retention_bytes,
            index_interval_bytes: tc.index_interval_bytes as u32,
            segment_index_bytes: tc.segment_index_bytes as u32,
            flush_messages: if tc.flush_messages < 0 || tc.flush_messages == i64::MAX {
                u64::MAX
            } else {
                tc.flush_messages as u64
            },
            flush_ms: tc.flush_ms,
            file_delete_delay_ms: tc.file_delete_delay_ms,
            compact: tc.cleanup_policy.compact,
            delete: tc.cleanup_policy.delete,
            delete_retention_ms: tc.delete_retention_ms,
            min_compaction_lag_ms: tc.min_compaction_lag_ms,
            min_cleanable_dirty_ratio: tc.min_cleanable_dirty_ratio,
            max_compaction_lag_ms: tc.max_compaction_lag_ms,
        },
        max_message_bytes: tc.max_message_bytes.max(0) as usize,
        log_append_time: tc.message_timestamp_type == crate::config::TimestampType::LogAppendTime,
        compacted: tc.cleanup_policy.compact,
        min_insync_replicas: tc.min_insync_replicas,
        timestamp_before_max_ms: tc.message_timestamp_before_max_ms,
        timestamp_after_max_ms: tc.message_timestamp_after_max_ms,
        compression: tc.compression_type.codec(),
    }
}
