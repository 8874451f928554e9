//! Replication events as Kafka's meters count them: `ReplicaManager`'s `IsrShrinksPerSec`,
//! `IsrExpandsPerSec` and `FailedIsrUpdatesPerSec` (counted by a leader when the controller
//! accepts, or refuses, its AlterPartition), and the KRaft controller's
//! `ControllerStats.UncleanLeaderElectionsPerSec` (counted by every node with the controller
//! role as it applies a partition change whose new leader was not in the previous ISR, as
//! Kafka's `ControllerMetricsChanges` does). KRaft controllers export no other election
//! count: `LeaderElectionRateAndTimeMs` belonged to the ZooKeeper controller.
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;

/// The counters; unregistered handles (`default()`) count into nothing.
#[derive(Clone, Default)]
pub struct ReplicationMetrics {
    pub isr_shrinks: Counter,
    pub isr_expands: Counter,
    pub failed_isr_updates: Counter,
    pub unclean_leader_elections: Counter,
}

/// Which way an ISR proposal went, decided when the leader sends it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IsrChange {
    Shrink,
    Expand,
}

impl ReplicationMetrics {
    pub(super) fn register(&self, registry: &mut Registry) {
        let rm = registry.sub_registry_with_prefix("kafka_server_replicamanager");
        rm.register(
            "isrshrinks",
            "ISR shrinks accepted by the controller for partitions led here (IsrShrinksPerSec)",
            self.isr_shrinks.clone(),
        );
        rm.register(
            "isrexpands",
            "ISR expansions accepted by the controller for partitions led here (IsrExpandsPerSec)",
            self.isr_expands.clone(),
        );
        rm.register(
            "failedisrupdates",
            "ISR changes the controller refused (FailedIsrUpdatesPerSec)",
            self.failed_isr_updates.clone(),
        );
        registry.register(
            "kafka_controller_controllerstats_uncleanleaderelections",
            "Leaders elected from outside the ISR, seen by this controller (UncleanLeaderElectionsPerSec)",
            self.unclean_leader_elections.clone(),
        );
    }

    /// Counts the controller's answer to an ISR change.
    pub fn isr_change_answered(&self, change: IsrChange, accepted: bool) {
        match (accepted, change) {
            (false, _) => self.failed_isr_updates.inc(),
            (true, IsrChange::Shrink) => self.isr_shrinks.inc(),
            (true, IsrChange::Expand) => self.isr_expands.inc(),
        };
    }
}
