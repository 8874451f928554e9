//! The invariants checked after every simulation step:
//! - at most one leader per (partition, leader epoch), over the whole run;
//! - the high watermark never decreases on a replica while it stays leader in one epoch;
//! - every member of the controller's ISR has the leader's log up to the leader's high
//!   watermark (checked at the batch just below it);
//! - every acks=all acknowledged batch (and every batch a consumer read) is on every live ISR
//!   member at its offset, unchanged — the newest one and one at random every step, all of
//!   them every 64 steps and at the end.
use std::collections::BTreeMap;

use super::cluster::{Sim, TOPIC};
use crate::protocol::records::batch::parse_header;
use crate::replica::BrokerId;
use crate::storage::PartitionLog;

/// A batch by its place and content (its CRC covers everything but offsets and epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckedBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub crc: u32,
}

#[derive(Debug, Default)]
pub struct Checker {
    leaders: BTreeMap<(i32, i32), BrokerId>,
    leader_high_watermarks: BTreeMap<(i32, BrokerId), (i32, i64)>,
    acked: BTreeMap<i32, BTreeMap<i64, AckedBatch>>,
    violation: Option<String>,
    steps: u64,
}

/// The batch containing `offset` in `log`, if any.
fn batch_at(log: &PartitionLog, offset: i64) -> Option<AckedBatch> {
    let data = log.read(offset, 1, i64::MAX, true).ok()?;
    let h = parse_header(&data.records).ok()?;
    Some(AckedBatch {
        base_offset: h.base_offset,
        last_offset: h.last_offset(),
        crc: h.crc,
    })
}

impl Checker {
    /// Records a batch that must never be lost; the same offset must always hold the same
    /// batch.
    pub fn acked(&mut self, partition: i32, batch: AckedBatch) {
        let entry = self.acked.entry(partition).or_default();
        match entry.get(&batch.base_offset) {
            Some(b) if *b != batch => {
                self.violation.get_or_insert(format!(
                    "p{partition}: offset {} acknowledged or consumed as {b:?} and later as {batch:?}",
                    batch.base_offset
                ));
            }
            _ => {
                entry.insert(batch.base_offset, batch);
            }
        }
    }

    pub fn check(&mut self, sim: &Sim, random: u64) -> Result<(), String> {
        if let Some(v) = self.violation.take() {
            return Err(v);
        }
        self.steps += 1;
        self.check_leaders(sim)?;
        self.check_isr_has_high_watermark(sim)?;
        let full = self.steps % 64 == 0;
        for (partition, batches) in &self.acked {
            let chosen: Vec<&AckedBatch> = if full {
                batches.values().collect()
            } else {
                let n = batches.len();
                let mut v: Vec<&AckedBatch> = batches.values().next_back().into_iter().collect();
                if n > 0 {
                    v.extend(batches.values().nth((random % n as u64) as usize));
                }
                v
            };
            check_batches_on_isr(sim, *partition, &chosen)?;
        }
        Ok(())
    }

    pub fn check_all(&mut self, sim: &Sim) -> Result<(), String> {
        if let Some(v) = self.violation.take() {
            return Err(v);
        }
        for (partition, batches) in &self.acked {
            let all: Vec<&AckedBatch> = batches.values().collect();
            check_batches_on_isr(sim, *partition, &all)?;
        }
        Ok(())
    }

    /// The number of batches that must survive (to see that runs do something).
    pub fn acked_count(&self) -> usize {
        self.acked.values().map(|b| b.len()).sum()
    }

    fn check_leaders(&mut self, sim: &Sim) -> Result<(), String> {
        for b in &sim.brokers {
            let Some(node) = &b.node else { continue };
            for p in node.replicas.all() {
                if !p.is_leader() {
                    continue;
                }
                let epoch = p.leader_epoch();
                let prev = *self.leaders.entry((p.index, epoch)).or_insert(b.id);
                if prev != b.id {
                    return Err(format!(
                        "p{}: brokers {prev} and {} both led epoch {epoch}",
                        p.index, b.id
                    ));
                }
                let hw = p.high_watermark();
                let key = (p.index, b.id);
                if let Some(&(e, old)) = self.leader_high_watermarks.get(&key) {
                    if e == epoch && hw < old {
                        return Err(format!(
                            "p{}: high watermark of leader {} went back from {old} to {hw} in epoch {epoch}",
                            p.index, b.id
                        ));
                    }
                }
                self.leader_high_watermarks.insert(key, (epoch, hw));
            }
        }
        Ok(())
    }

    fn check_isr_has_high_watermark(&self, sim: &Sim) -> Result<(), String> {
        for ((_, index), c) in &sim.controller.partitions {
            let Some(leader) = c.leader else { continue };
            let Some(lp) = sim.brokers[leader.0 as usize]
                .node
                .as_ref()
                .and_then(|n| n.replicas.get(TOPIC, *index))
            else {
                continue;
            };
            if !lp.is_leader() || lp.leader_epoch() != c.leader_epoch.0 {
                continue;
            }
            let hw = lp.high_watermark();
            if hw <= lp.log_start_offset() {
                continue;
            }
            let expected = batch_at(&lp.log, hw - 1);
            for m in &c.isr {
                let Some(node) = &sim.brokers[m.0 as usize].node else {
                    continue;
                };
                let Some(log) = node.logs.get(TOPIC, *index) else {
                    return Err(format!(
                        "p{index}: ISR member {m} has no log, high watermark {hw}"
                    ));
                };
                if log.log_end_offset() < hw {
                    return Err(format!(
                        "p{index}: ISR member {m} ends at {} below the high watermark {hw} of leader {leader}",
                        log.log_end_offset()
                    ));
                }
                let got = batch_at(&log, hw - 1);
                if got != expected {
                    return Err(format!(
                        "p{index}: ISR member {m} holds {got:?} below the high watermark {hw}, leader {leader} holds {expected:?}"
                    ));
                }
            }
        }
        Ok(())
    }
}

fn check_batches_on_isr(sim: &Sim, partition: i32, batches: &[&AckedBatch]) -> Result<(), String> {
    let c = &sim.controller.partitions[&(TOPIC.to_string(), partition)];
    for m in &c.isr {
        let Some(node) = &sim.brokers[m.0 as usize].node else {
            continue;
        };
        let log = node.logs.get(TOPIC, partition);
        for b in batches {
            let got = log.as_ref().and_then(|l| batch_at(l, b.base_offset));
            if got != Some(**b) {
                return Err(format!(
                    "p{partition}: acknowledged {b:?} is {got:?} on ISR member {m} (ISR {:?}, leader {:?} epoch {})",
                    c.isr, c.leader, c.leader_epoch
                ));
            }
        }
    }
    Ok(())
}
