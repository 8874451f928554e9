//! The clients of the simulation: an acks=all producer and a consumer, each sending to the
//! leader the controller names or, with stale metadata, to any broker that believes it leads
//! (a zombie leader included). What a producer got acknowledged and what the consumer read
//! must never be lost.
use bytes::Bytes;

use super::cluster::{Sim, TOPIC};
use super::invariants::AckedBatch;
use crate::protocol::records::batch::parse_header;
use crate::protocol::records::RecordBatchBuilder;
use crate::replica::BrokerId;

/// An acks=all produce waiting for the high watermark.
pub struct PendingAck {
    pub(super) partition: i32,
    pub(super) broker: BrokerId,
    pub(super) leader_epoch: i32,
    pub(super) batch: AckedBatch,
    pub(super) deadline_ms: i64,
}

impl Sim {
    pub(super) fn produce(&mut self) {
        let partition = self.rng.range(0, self.config.partitions as i64 - 1) as i32;
        let Some(leader) = self.client_leader(partition) else {
            return;
        };
        let Some(node) = &self.brokers[leader.0 as usize].node else {
            return;
        };
        let Some(p) = node.replicas.get(TOPIC, partition) else {
            return;
        };
        let count = self.rng.range(1, 4) as usize;
        let mut builder = RecordBatchBuilder::new(0);
        for _ in 0..count {
            self.next_value += 1;
            builder.append(
                self.now_ms,
                None,
                Some(Bytes::from(format!("value-{}", self.next_value))),
                vec![],
            );
        }
        let batch = builder.build().freeze();
        let crc = parse_header(&batch).expect("own batch").crc;
        match p.append_records_with_acks(batch, -1, self.now_ms) {
            Ok(out) => {
                self.pending.push(PendingAck {
                    partition,
                    broker: leader,
                    leader_epoch: out.leader_epoch,
                    batch: AckedBatch {
                        base_offset: out.base_offset,
                        last_offset: out.last_offset,
                        crc,
                    },
                    deadline_ms: self.now_ms + 5_000,
                });
            }
            Err(e) => {
                trace!(
                    self,
                    "produce p{partition} to {leader} refused: {:?}",
                    e.code()
                );
            }
        }
    }

    /// The broker a client sends to: the controller's leader, or (stale metadata) any live
    /// broker that believes it leads.
    fn client_leader(&mut self, partition: i32) -> Option<BrokerId> {
        if self.rng.chance(0.8) {
            return self
                .controller
                .partition(TOPIC, partition)
                .and_then(|c| c.leader);
        }
        let claimants: Vec<BrokerId> = self
            .brokers
            .iter()
            .filter(|b| {
                b.node
                    .as_ref()
                    .and_then(|n| n.replicas.get(TOPIC, partition))
                    .is_some_and(|p| p.is_leader())
            })
            .map(|b| b.id)
            .collect();
        if claimants.is_empty() {
            return None;
        }
        Some(claimants[self.rng.range(0, claimants.len() as i64 - 1) as usize])
    }

    pub(super) fn complete_acks(&mut self) {
        let mut still = Vec::new();
        let now = self.now_ms;
        for ack in std::mem::take(&mut self.pending) {
            let outcome = self.brokers[ack.broker.0 as usize]
                .node
                .as_ref()
                .and_then(|n| n.replicas.get(TOPIC, ack.partition))
                .map(|p| p.acks_all_outcome(ack.batch.last_offset + 1, ack.leader_epoch));
            match outcome {
                Some(None) if now < ack.deadline_ms => still.push(ack),
                Some(Some(Ok(()))) => {
                    trace!(
                        self,
                        "acked p{} {}..={} by {}",
                        ack.partition,
                        ack.batch.base_offset,
                        ack.batch.last_offset,
                        ack.broker
                    );
                    self.checker.acked(ack.partition, ack.batch);
                    self.stats.acks += 1;
                }
                _ => self.stats.acks_failed += 1,
            }
        }
        self.pending = still;
    }

    /// A consumer reads from each partition's leader: never past the high watermark, and what
    /// it reads must never be lost.
    pub(super) fn consume(&mut self) -> Result<(), String> {
        for partition in 0..self.config.partitions {
            let Some(leader) = self.client_leader(partition) else {
                continue;
            };
            let Some(p) = self.brokers[leader.0 as usize]
                .node
                .as_ref()
                .and_then(|n| n.replicas.get(TOPIC, partition))
            else {
                continue;
            };
            if !p.is_leader() {
                continue;
            }
            let position = self.consumer_position.get(&partition).copied().unwrap_or(0);
            let hw = p.high_watermark();
            let data = match p.read(
                position,
                4096,
                crate::replica::partition::Isolation::ReadUncommitted,
                true,
            ) {
                Ok(d) => d,
                // A new leader whose high watermark is still behind what we consumed.
                Err(_) => continue,
            };
            for (h, _) in crate::protocol::records::batch::BatchIter::new(&data.records) {
                if h.last_offset() >= hw {
                    return Err(format!(
                        "consumer read p{partition} batch {}..={} past the high watermark {hw}",
                        h.base_offset,
                        h.last_offset()
                    ));
                }
                self.checker.acked(
                    partition,
                    AckedBatch {
                        base_offset: h.base_offset,
                        last_offset: h.last_offset(),
                        crc: h.crc,
                    },
                );
                self.consumer_position
                    .insert(partition, h.last_offset() + 1);
            }
        }
        Ok(())
    }
}
