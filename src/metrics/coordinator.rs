//! The coordinators' counters, under Kafka's names as the Prometheus JMX exporter renders them:
//! the group coordinator's `group-coordinator-metrics` (a Kafka Metrics group, so
//! `kafka.server<type=group-coordinator-metrics><>offset-commit-count` becomes
//! `kafka_server_group_coordinator_metrics_offset_commit_count`, a gauge-typed cumulative
//! count as the exporter types it) and the transaction coordinator's
//! `transaction-coordinator-metrics` (`partition-load-time-max`/`-avg`, the only metrics
//! Kafka's transaction coordinator exports besides its marker queues).
//!
//! Kafka's load-time max and average are over its sampling window (30 s by default); these are
//! over the broker's life, so a dashboard sees the slowest load since start-up rather than a
//! value that falls back to NaN when no partition loaded recently.
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// A cumulative count as the JMX exporter renders a Kafka Metrics `*-count` (gauge-typed).
pub type Count = Gauge<i64>;

/// `partition-load-time-max` and `-avg`, in ms.
#[derive(Clone, Default)]
pub struct PartitionLoadTime {
    max_ms: Gauge<f64, AtomicU64>,
    avg_ms: Gauge<f64, AtomicU64>,
    /// (sum in ms, loads), for the average.
    sum: Arc<Mutex<(f64, u64)>>,
}

impl PartitionLoadTime {
    /// Records one coordinator partition load.
    pub fn record(&self, took: Duration) {
        let ms = took.as_secs_f64() * 1000.0;
        let mut sum = self.sum.lock();
        sum.0 += ms;
        sum.1 += 1;
        self.avg_ms.set(sum.0 / sum.1 as f64);
        if ms > self.max_ms.get() {
            self.max_ms.set(ms);
        }
    }

    fn register(&self, r: &mut Registry, what: &str) {
        r.register(
            "partition_load_time_max",
            format!("Longest {what} partition load since start-up, ms"),
            self.max_ms.clone(),
        );
        r.register(
            "partition_load_time_avg",
            format!("Average {what} partition load since start-up, ms"),
            self.avg_ms.clone(),
        );
    }
}

/// Kafka's `GroupCoordinatorMetrics` sensors. Unregistered handles (`default()`) count into
/// nothing, for coordinators built without a broker (tests, simulation).
#[derive(Clone, Default)]
pub struct GroupCoordinatorMetrics {
    /// Offsets committed, one per partition (OffsetCommit and TxnOffsetCommit).
    pub offset_commits: Count,
    /// Offsets removed by the retention check (`offsets.retention.minutes`).
    pub offset_expirations: Count,
    /// Offsets removed by OffsetDelete.
    pub offset_deletions: Count,
    /// Classic groups that finished a rebalance (SyncGroup brought them to Stable).
    pub classic_group_completed_rebalances: Count,
    /// KIP-848 consumer groups whose epoch was bumped (a new target assignment).
    pub consumer_group_rebalances: Count,
    pub partition_load: PartitionLoadTime,
}

impl GroupCoordinatorMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("kafka_server_group_coordinator_metrics");
        for (name, help, count) in [
            (
                "offset_commit_count",
                "Offsets committed",
                &self.offset_commits,
            ),
            (
                "offset_expiration_count",
                "Offsets expired by retention",
                &self.offset_expirations,
            ),
            (
                "offset_deletion_count",
                "Offsets deleted by OffsetDelete",
                &self.offset_deletions,
            ),
            (
                "group_completed_rebalance_count",
                "Classic group rebalances completed",
                &self.classic_group_completed_rebalances,
            ),
            (
                "consumer_group_rebalance_count",
                "Consumer group (KIP-848) rebalances",
                &self.consumer_group_rebalances,
            ),
        ] {
            r.register(name, help, count.clone());
        }
        self.partition_load.register(r, "__consumer_offsets");
    }
}

/// Share groups (KIP-932): what the share-partition leaders hand out and get back, and the
/// share coordinator's `__share_group_state` loads. Strata's own counts, in the
/// `share-group-metrics` group Kafka keeps its share-group sensors in; each is cumulative.
#[derive(Clone, Default)]
pub struct ShareGroupMetrics {
    /// Records acquired by share consumers (every delivery).
    pub records_acquired: Count,
    /// Of those, deliveries after the first (delivery count above 1).
    pub records_redelivered: Count,
    pub records_accepted: Count,
    pub records_released: Count,
    pub records_rejected: Count,
    /// Records archived because they reached `group.share.delivery.count.limit`.
    pub records_archived_at_limit: Count,
    /// Records whose acquisition lock expired before they were acknowledged.
    pub lock_expirations: Count,
    pub partition_load: PartitionLoadTime,
}

impl ShareGroupMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("kafka_server_share_group_metrics");
        for (name, help, count) in [
            (
                "record_acquired_count",
                "Records acquired by share consumers",
                &self.records_acquired,
            ),
            (
                "record_redelivered_count",
                "Records acquired again (delivery count above 1)",
                &self.records_redelivered,
            ),
            (
                "record_acknowledgement_accept_count",
                "Records accepted",
                &self.records_accepted,
            ),
            (
                "record_acknowledgement_release_count",
                "Records released",
                &self.records_released,
            ),
            (
                "record_acknowledgement_reject_count",
                "Records rejected (archived)",
                &self.records_rejected,
            ),
            (
                "record_delivery_limit_archived_count",
                "Records archived at the delivery count limit",
                &self.records_archived_at_limit,
            ),
            (
                "record_lock_expired_count",
                "Records whose acquisition lock expired",
                &self.lock_expirations,
            ),
        ] {
            r.register(name, help, count.clone());
        }
        self.partition_load.register(r, "__share_group_state");
    }
}

/// Kafka's `transaction-coordinator-metrics`.
#[derive(Clone, Default)]
pub struct TxnCoordinatorMetrics {
    pub partition_load: PartitionLoadTime,
}

impl TxnCoordinatorMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        let r = registry.sub_registry_with_prefix("kafka_server_transaction_coordinator_metrics");
        self.partition_load.register(r, "__transaction_state");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_time_keeps_the_max_and_the_average() {
        let l = PartitionLoadTime::default();
        l.record(Duration::from_millis(10));
        l.record(Duration::from_millis(30));
        l.record(Duration::from_millis(20));
        assert_eq!(l.max_ms.get(), 30.0);
        assert_eq!(l.avg_ms.get(), 20.0);
    }
}
