//! The Broker: the subsystems a request handler sees (metadata, replicas, the coordinators,
//! the cluster membership) and the few operations several handlers share. It knows no
//! network and no start-up: `server::startup` builds it, `handlers` use it, and the cluster
//! tasks below it get only the parts they use ([`BrokerParts`]).
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::clock::SharedClock;
use crate::cluster::{AdvertisedEndpoint, BrokerParts};
use crate::config::{BrokerConfig, ConfigError, TopicConfig};
use crate::controller::TopicMeta;
use crate::coordinator::offsets_topic::{OFFSETS_TOPIC, TRANSACTION_TOPIC};
use crate::coordinator::txn::{TransactionCoordinator, TxnConfig};
use crate::coordinator::{GroupConfig, GroupCoordinator};
use crate::error::ErrorCode;
use crate::replica::{PartitionConfig, ReplicaManager};

/// How long a coordinator's answer waits for its records to reach the ISR.
const COORDINATOR_APPEND_TIMEOUT_MS: u64 = 5_000;

/// Limits enforced by the network layer, from the broker config.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_connections: usize,
    pub max_inflight_requests_per_connection: usize,
    pub socket_request_max_bytes: usize,
}

pub struct Broker {
    pub node_id: i32,
    pub cluster_id: String,
    /// The config the process started with (static; see `dynamic` for what may change).
    pub config: BrokerConfig,
    /// The effective config with the dynamic broker configs of the metadata log applied
    /// (topic defaults, connection limits, cleaner throughput).
    pub dynamic: Arc<crate::config::DynamicBrokerConfig>,
    pub limits: Limits,
    pub clock: SharedClock,
    pub replicas: Arc<ReplicaManager>,
    pub groups: Arc<GroupCoordinator>,
    /// The share partitions this broker leads and its members' share sessions (KIP-932).
    pub shares: Arc<crate::replica::share_manager::SharePartitionManager>,
    /// The share coordinator: the share-partition state on the `__share_group_state`
    /// partitions this broker leads.
    pub share_states: Arc<crate::coordinator::share_state::ShareStateCoordinator>,
    pub txns: Arc<TransactionCoordinator>,
    pub endpoints: Vec<AdvertisedEndpoint>,
    /// This node's membership of its controller quorum (a quorum of one by default).
    pub cluster: Arc<crate::cluster::ClusterContext>,
    /// Kafka's StandardAuthorizer when `authorizer.class.name` asks for it; None: every
    /// client may use every API (Kafka without an authorizer).
    pub authorizer: Option<Arc<crate::security::Authorizer>>,
    /// Client quota managers (produce and fetch byte rates, request time, mutations).
    pub quotas: Arc<crate::security::quotas::QuotaManagers>,
    /// The counters and histograms the request path updates (`/metrics`).
    pub metrics: Arc<crate::metrics::BrokerMetrics>,
    /// KIP-714 client instances and their (empty) telemetry subscriptions.
    pub client_metrics: crate::coordinator::client_metrics::ClientMetrics,
    /// Asks transaction coordinators before a transactional producer's first write to a
    /// partition (KIP-890 part 1).
    pub txn_verifier: crate::cluster::txn_verifier::TxnVerifier,
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
        share_group_max_size: c.group_share.max_size,
        share_group_session_timeout_ms: c.group_share.session_timeout_ms,
        share_group_heartbeat_interval_ms: c.group_share.heartbeat_interval_ms,
        share_group_record_lock_duration_ms: c.group_share.record_lock_duration_ms,
        share_group_delivery_count_limit: c.group_share.delivery_count_limit,
        share_group_partition_max_record_locks: c.group_share.partition_max_record_locks,
        ..GroupConfig::default()
    }
}

impl Broker {
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Whether share groups are served: `share.version` 1 or more, or Kafka's internal
    /// `group.share.enable` switch.
    pub fn share_groups_enabled(&self) -> bool {
        self.config.group_share.enable || self.cluster.image().features.share_groups_enabled()
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
        let topics = self.cluster.topics();
        crate::coordinator::consumer::TopicsView::new(
            topics.iter().map(|t| (t.name.clone(), t.id, t.partitions)),
        )
    }

    /// Resolves a topic's effective configuration from its overrides and the broker defaults.
    pub fn topic_config(
        &self,
        overrides: &BTreeMap<String, String>,
    ) -> Result<TopicConfig, ConfigError> {
        TopicConfig::resolve(overrides, &self.dynamic.current())
    }

    pub fn partition_config(&self, topic: &TopicMeta) -> PartitionConfig {
        PartitionConfig::for_topic(&topic.name, &topic.configs, &self.dynamic.current())
    }

    /// Whether `__consumer_offsets` exists; FindCoordinator asks the controller to create
    /// it, and the publisher loads its partitions where they are led.
    pub fn offsets_topic_exists(&self) -> bool {
        self.cluster.topic(OFFSETS_TOPIC).is_some()
    }

    /// Whether `__transaction_state` exists (created as `__consumer_offsets` is).
    pub fn transaction_topic_exists(&self) -> bool {
        self.cluster.topic(TRANSACTION_TOPIC).is_some()
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
        self.wait_replicated_until(topic, partition, Self::coordinator_append_deadline())
            .await
    }

    /// When a coordinator write started now must be replicated; several waits made one after
    /// another share it, so a request waiting on many partitions takes no longer than one.
    pub fn coordinator_append_deadline() -> tokio::time::Instant {
        tokio::time::Instant::now()
            + std::time::Duration::from_millis(COORDINATOR_APPEND_TIMEOUT_MS)
    }

    /// [`Self::wait_replicated`] to a shared deadline.
    pub async fn wait_replicated_until(
        &self,
        topic: &str,
        partition: i32,
        deadline: tokio::time::Instant,
    ) -> Result<(), ErrorCode> {
        let Some(p) = self.replicas.get(topic, partition) else {
            return Err(ErrorCode::NOT_COORDINATOR);
        };
        let outcome = self
            .replicas
            .wait_acks_all_until(&p, p.log_end_offset(), p.leader_epoch(), deadline)
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

    /// The parts of this broker the cluster tasks act on.
    pub fn parts(&self) -> BrokerParts {
        BrokerParts {
            node_id: self.node_id,
            cluster_id: self.cluster_id.clone(),
            config: self.config.clone(),
            dynamic: self.dynamic.clone(),
            clock: self.clock.clone(),
            replicas: self.replicas.clone(),
            groups: self.groups.clone(),
            txns: self.txns.clone(),
            share_states: self.share_states.clone(),
            endpoints: self.endpoints.clone(),
            metrics: self.metrics.clone(),
        }
    }
}
