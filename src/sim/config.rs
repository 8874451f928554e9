//! The shape of a simulation run ([`SimConfig`]) and what a run did ([`SimStats`]), so that
//! the many-seeds test can see that every fault and operation is exercised.

/// The shape of a run.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub brokers: i32,
    pub partitions: i32,
    pub replication_factor: usize,
    pub min_insync_replicas: i32,
    pub steps: usize,
    pub replica_lag_time_max_ms: i64,
    /// Probability per step of a fault (crash, power loss, link cut, heal).
    pub fault_probability: f64,
    pub drop_probability: f64,
    /// The controller fences a broker it has not heard from for this long.
    pub broker_session_timeout_ms: i64,
    pub broker_heartbeat_interval_ms: i64,
    /// Probability per step of an operation on the controller side: a controlled shutdown, a
    /// partition reassignment (KIP-455), a preferred leader election (KIP-460) or a controller
    /// failover. Drawn from a random stream of their own, so that with 0 a seed replays the
    /// runs from before they existed.
    pub admin_probability: f64,
    /// Keep a trace of the run (for a failing seed; the many-seeds loop runs without and
    /// replays a failing seed with it).
    pub trace: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            // One broker more than the replication factor, so that a reassignment can move a
            // replica to a broker that had none.
            brokers: 4,
            partitions: 2,
            replication_factor: 3,
            min_insync_replicas: 2,
            steps: 400,
            replica_lag_time_max_ms: 1_000,
            fault_probability: 0.02,
            drop_probability: 0.02,
            broker_session_timeout_ms: 500,
            broker_heartbeat_interval_ms: 50,
            admin_probability: 0.02,
            trace: true,
        }
    }
}

impl SimConfig {
    /// The runs before controller operations were simulated (three brokers, faults only): the
    /// regression seeds found then replay exactly under it.
    pub fn faults_only() -> Self {
        SimConfig {
            brokers: 3,
            admin_probability: 0.0,
            ..SimConfig::default()
        }
    }
}

/// What happened in a run, to see that the faults and code paths are exercised.
#[derive(Debug, Clone, Default)]
pub struct SimStats {
    pub crashes: usize,
    pub power_losses: usize,
    pub isolations: usize,
    pub truncations: usize,
    pub isr_changes_accepted: usize,
    pub isr_changes_refused: usize,
    pub acks: usize,
    pub acks_failed: usize,
    /// Brokers the controller fenced for an expired session.
    pub fences: usize,
    /// Registrations refused while the previous incarnation's session lasted.
    pub registrations_refused: usize,
    /// Brokers that stopped once the controller let them (`should_shutdown`).
    pub controlled_shutdowns: usize,
    /// Brokers that gave up waiting for it and stopped anyway.
    pub shutdown_timeouts: usize,
    /// Committed AlterPartitions whose answer was lost (the leader sent them again).
    pub alter_partition_answers_lost: usize,
    /// Steps in which a broker's AlterPartitions did not reach the controller and were kept
    /// for a later send.
    pub alter_partitions_resent: usize,
    pub reassignments_started: usize,
    pub reassignments_cancelled: usize,
    /// Reassignments whose targets all joined the ISR, so that the old replicas left.
    pub reassignments_completed: usize,
    /// Replicas a broker stopped and deleted on reading that it no longer hosts them.
    pub replicas_removed: usize,
    /// Partitions whose leadership moved back to the preferred replica.
    pub preferred_elections: usize,
    pub controller_failovers: usize,
    /// Log dirs that failed on a running broker (KIP-858).
    pub log_dir_failures: usize,
    /// Of those, the ones the controller marked offline from a heartbeat (it then moved the
    /// leaderships and ISR memberships of their replicas).
    pub log_dirs_marked_offline: usize,
}

impl SimStats {
    pub fn add(&mut self, o: &SimStats) {
        self.crashes += o.crashes;
        self.power_losses += o.power_losses;
        self.isolations += o.isolations;
        self.truncations += o.truncations;
        self.isr_changes_accepted += o.isr_changes_accepted;
        self.isr_changes_refused += o.isr_changes_refused;
        self.acks += o.acks;
        self.acks_failed += o.acks_failed;
        self.fences += o.fences;
        self.registrations_refused += o.registrations_refused;
        self.controlled_shutdowns += o.controlled_shutdowns;
        self.shutdown_timeouts += o.shutdown_timeouts;
        self.alter_partition_answers_lost += o.alter_partition_answers_lost;
        self.alter_partitions_resent += o.alter_partitions_resent;
        self.reassignments_started += o.reassignments_started;
        self.reassignments_cancelled += o.reassignments_cancelled;
        self.reassignments_completed += o.reassignments_completed;
        self.replicas_removed += o.replicas_removed;
        self.preferred_elections += o.preferred_elections;
        self.controller_failovers += o.controller_failovers;
        self.log_dir_failures += o.log_dir_failures;
        self.log_dirs_marked_offline += o.log_dirs_marked_offline;
    }
}
