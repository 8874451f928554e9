//! Log dir failures under simulation (KIP-858): a broker has two log dirs, and one of them may
//! fail while the cluster is otherwise healthy. The broker stops the dir's replicas, reports
//! the dir in its heartbeats and the dirs of its replicas with AssignReplicasToDirs; the real
//! controller decisions move the leaderships and shrink the ISRs of the replicas in it. The
//! broker keeps serving its other dir until its disk is replaced: the process is restarted
//! (as a crash) a while later, and the dir comes back with what was written to it.
use super::cluster::{Sim, StopKind};
use crate::controller::{BrokerHeartbeatReply, DirAssignment};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::replica::BrokerEpoch;

impl Sim {
    /// Broker `i` registers with the ids of its log dirs.
    pub(super) fn register_with_log_dirs(
        &mut self,
        i: usize,
        incarnation: u32,
    ) -> Result<BrokerEpoch, ErrorCode> {
        let b = &self.brokers[i];
        let log_dirs = b.node.as_ref().map_or_else(Vec::new, |n| {
            n.logs
                .log_dir_states()
                .iter()
                .map(|d| d.directory_id().0)
                .collect()
        });
        self.controller
            .register(b.id, incarnation, self.now_ms, log_dirs)
    }

    /// Broker `i` heartbeats with its offline log dirs, then sends the dirs of the replicas
    /// the controller has elsewhere (AssignReplicasToDirs).
    pub(super) fn heartbeat_with_log_dirs(
        &mut self,
        i: usize,
        epoch: BrokerEpoch,
        offset: i64,
        want_shutdown: bool,
    ) -> BrokerHeartbeatReply {
        let id = self.brokers[i].id;
        let offline_log_dirs = self.brokers[i].node.as_ref().map_or_else(Vec::new, |n| {
            n.replicas
                .offline_directory_ids()
                .iter()
                .map(|d| d.0)
                .collect()
        });
        let online_dirs = |s: &Sim| {
            s.controller
                .image
                .broker(id.0)
                .map_or(0, |b| b.log_dirs.len())
        };
        let before = online_dirs(self);
        let reply = self.controller.heartbeat(
            id,
            epoch,
            offset,
            want_shutdown,
            offline_log_dirs,
            self.now_ms,
        );
        if online_dirs(self) < before {
            self.stats.log_dirs_marked_offline += 1;
            trace!(self, "controller marked a log dir of broker {id} offline");
        }
        let assignments = self.dir_assignments(i);
        if !assignments.is_empty() {
            let n = assignments.len();
            self.controller
                .assign_replicas_to_dirs(id, epoch, assignments);
            trace!(self, "broker {id} assigns replicas in {n} dirs");
        }
        reply
    }

    /// Takes one of broker `i`'s log dirs offline, as an I/O error in it would.
    pub(super) fn fail_log_dir(&mut self, i: usize) {
        let d = self.rng.range(0, 1) as usize;
        let repair_at_ms = self.now_ms + self.rng.range(500, 4_000);
        let id = self.brokers[i].id;
        let Some(node) = &self.brokers[i].node else {
            return;
        };
        let Some(state) = node.logs.log_dir_states().get(d) else {
            return;
        };
        state.mark_offline("simulated I/O error");
        self.brokers[i].log_dir_repair_at_ms = Some(repair_at_ms);
        self.stats.log_dir_failures += 1;
        trace!(self, "log dir {d} of broker {id} fails");
    }

    /// Broker `i`'s log dir background work (Kafka's `LogDirFailureHandler`): the replicas of a
    /// failed dir stop; with no dir left the broker stops, and one whose disk is due to be
    /// replaced is restarted. Returns false if the broker stopped.
    pub(super) fn tick_log_dirs(&mut self, i: usize) -> bool {
        let Some(node) = &self.brokers[i].node else {
            return false;
        };
        let failures = node.replicas.handle_log_dir_failures();
        if !failures.newly_offline.is_empty() {
            // Its logs lost replicas: the checker's memo of them no longer holds.
            self.brokers[i].log_generation = self.new_log_generation();
        }
        let repair_due = self.brokers[i]
            .log_dir_repair_at_ms
            .is_some_and(|t| self.now_ms >= t);
        if failures.all_offline || repair_due {
            self.stop(i, StopKind::Crash);
            return false;
        }
        true
    }

    /// Where broker `i`'s replicas are, for those the controller has in another dir.
    pub(super) fn dir_assignments(&self, i: usize) -> Vec<DirAssignment> {
        let b = &self.brokers[i];
        let Some(node) = &b.node else {
            return Vec::new();
        };
        let mut out: Vec<DirAssignment> = Vec::new();
        for t in self.controller.image.topics.values() {
            for (&p, reg) in &t.partitions {
                if !reg.replicas.contains(&b.id.0) {
                    continue;
                }
                let Some(Uuid(actual)) = node.replicas.replica_directory(&t.name, p) else {
                    continue;
                };
                if actual == reg.directory_of(b.id.0) {
                    continue;
                }
                match out.iter_mut().find(|a| a.dir == actual) {
                    Some(a) => match a.topics.iter_mut().find(|(id, _)| *id == t.topic_id) {
                        Some((_, ps)) => ps.push(p),
                        None => a.topics.push((t.topic_id, vec![p])),
                    },
                    None => out.push(DirAssignment {
                        dir: actual,
                        topics: vec![(t.topic_id, vec![p])],
                    }),
                }
            }
        }
        out
    }
}
