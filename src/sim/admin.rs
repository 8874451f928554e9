//! The controller-side operations of the simulation, drawn from their own random stream:
//! - controlled shutdown (KIP-631 `BrokerHeartbeat` with `WantShutDown`): the broker asks,
//!   the controller moves its leaderships and ISR memberships away and lets it go once it
//!   leads nothing; it then stops and later restarts and registers again. Some brokers give
//!   up waiting (a short deadline, or heartbeats the controller never sees) and stop anyway,
//!   as Kafka's broker does after its timeout: their leaderships move when they are fenced;
//! - partition reassignment (KIP-455): replicas added, completion once every target is in the
//!   ISR, removal of the old ones, which stop; sometimes a cancellation;
//! - preferred leader election (KIP-460 `ElectLeaders`);
//! - controller failover: the new active controller has only the committed log, so its image
//!   is rebuilt from it and its heartbeat state starts over; requests in flight to the old
//!   one are lost, and for a moment nothing reaches any controller.
use super::cluster::{Sim, TOPIC};
use crate::replica::AlterPartitionError;

/// How long a broker waits for the controller's permission to shut down.
const CONTROLLED_SHUTDOWN_TIMEOUT_MS: i64 = 3_000;
/// Of the controlled shutdowns, the share whose broker gives up waiting.
const GIVE_UP_SHARE: f64 = 0.3;
/// A broker that gives up does so within this time, below the broker session timeout, so that
/// it has stopped before the controller fences it.
const GIVE_UP_DEADLINE_MS: i64 = 400;
/// Longest time without an active controller after a failover (an election), kept below the
/// broker session timeout as a quick Raft election is.
const MAX_CONTROLLER_ELECTION_MS: i64 = 200;

impl Sim {
    pub(super) fn admin_operation(&mut self) -> Result<(), String> {
        if !self.controller_available() {
            return Ok(());
        }
        match self.ops_rng.range(0, 5) {
            0 => self.begin_controlled_shutdown(),
            1 | 2 => self.reassign_partition(),
            3 => {
                let elected = self.controller.elect_preferred(TOPIC);
                self.stats.preferred_elections += elected;
                trace!(self, "preferred leader election moved {elected} leaders");
            }
            _ => self.controller_failover()?,
        }
        Ok(())
    }

    fn begin_controlled_shutdown(&mut self) {
        // Like the faults, one broker at a time leaves, so the cluster stays available.
        if !self.all_up() {
            return;
        }
        let i = self.ops_rng.range(0, self.brokers.len() as i64 - 1) as usize;
        let id = self.brokers[i].id;
        if self.ops_rng.chance(GIVE_UP_SHARE) {
            // The controller does not let it go in time: the broker stops anyway, as Kafka's
            // does after its timeout, and its leaderships move only when its session expires
            // and it is fenced. Either its deadline is short, or its requests stop reaching
            // the controller (its want-shutdown heartbeats are never seen).
            let deadline = self.now_ms + self.ops_rng.range(1, GIVE_UP_DEADLINE_MS);
            self.brokers[i].shutdown_deadline_ms = Some(deadline);
            let unheard = self.ops_rng.chance(0.5);
            if unheard {
                // Until it stops, which ends the isolation.
                self.isolated_until.insert(id, deadline + 1);
            }
            trace!(
                self,
                "broker {id} begins a controlled shutdown it will give up at {deadline} (controller hears it: {})",
                !unheard
            );
            return;
        }
        self.brokers[i].shutdown_deadline_ms = Some(self.now_ms + CONTROLLED_SHUTDOWN_TIMEOUT_MS);
        trace!(self, "broker {id} begins a controlled shutdown");
    }

    fn reassign_partition(&mut self) {
        let partition = self.ops_rng.range(0, self.config.partitions as i64 - 1) as i32;
        let reassigning = self
            .controller
            .image
            .partition(TOPIC, partition)
            .is_some_and(|p| p.is_reassigning());
        let target = if reassigning && self.ops_rng.chance(0.25) {
            None
        } else {
            // A random replication-factor subset of the brokers, in random order (the first
            // is the new preferred leader).
            let mut brokers: Vec<i32> = self.brokers.iter().map(|b| b.id.0).collect();
            for k in (1..brokers.len()).rev() {
                let j = self.ops_rng.range(0, k as i64) as usize;
                brokers.swap(k, j);
            }
            brokers.truncate(self.config.replication_factor);
            Some(brokers)
        };
        let described = format!("{target:?}");
        match self.controller.reassign(TOPIC, partition, target) {
            Ok(false) => {
                self.stats.reassignments_cancelled += reassigning as usize;
                trace!(self, "reassign p{partition} to {described}: nothing moves");
            }
            Ok(true) => {
                self.stats.reassignments_started += 1;
                trace!(self, "reassign p{partition} to {described}");
            }
            Err(e) => trace!(self, "reassign p{partition} to {described} refused: {e}"),
        }
    }

    fn controller_failover(&mut self) -> Result<(), String> {
        self.controller.failover()?;
        self.stats.controller_failovers += 1;
        self.controller_down_until_ms =
            self.now_ms + self.ops_rng.range(0, MAX_CONTROLLER_ELECTION_MS);
        for mut a in std::mem::take(&mut self.alter_inbox) {
            if a.retry_of_committed {
                // Its sender is still retrying a request the log already holds: it reaches
                // the new controller, which must refuse it as the old one would have.
                a.arrives_at_ms = a.arrives_at_ms.max(self.controller_down_until_ms);
                self.alter_inbox.push(a);
                continue;
            }
            // Lost with the old controller: the leader's request fails and it proposes again
            // from the state it reads next.
            if let Some(node) = &self.brokers[a.from.0 as usize].node {
                node.replicas
                    .on_alter_partition_error(&a.request, AlterPartitionError::NotLeaderOrFollower);
            }
        }
        let until = self.controller_down_until_ms;
        trace!(
            self,
            "controller failover: a new active controller from {until}"
        );
        Ok(())
    }
}
