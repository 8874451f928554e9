//! The controller-side operations of the simulation, drawn from their own random stream:
//! - controlled shutdown (KIP-631 `BrokerHeartbeat` with `WantShutDown`): the broker asks,
//!   the controller moves its leaderships and ISR memberships away and lets it go once it
//!   leads nothing; it then stops (or gives up waiting and stops anyway) and later restarts
//!   and registers again;
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
        self.brokers[i].shutdown_deadline_ms = Some(self.now_ms + CONTROLLED_SHUTDOWN_TIMEOUT_MS);
        let id = self.brokers[i].id;
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
        for (_, from, request) in std::mem::take(&mut self.alter_inbox) {
            // Lost with the old controller: the leader's request fails and it proposes again
            // from the state it reads next.
            if let Some(node) = &self.brokers[from.0 as usize].node {
                node.replicas
                    .on_alter_partition_error(&request, AlterPartitionError::NotLeaderOrFollower);
            }
        }
        self.controller_down_until_ms =
            self.now_ms + self.ops_rng.range(0, MAX_CONTROLLER_ELECTION_MS);
        let until = self.controller_down_until_ms;
        trace!(
            self,
            "controller failover: a new active controller from {until}"
        );
        Ok(())
    }
}
