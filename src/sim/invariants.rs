//! The invariants checked after every simulation step:
//! - at most one leader per (partition, leader epoch), over the whole run;
//! - the high watermark never decreases on a replica while it stays leader in one epoch;
//! - every member of the controller's ISR has the leader's log up to the leader's high
//!   watermark (checked at the batch just below it);
//! - the controller's image equals its metadata log replayed (and each broker's copy equals
//!   it once read to the end); no partition is led by a fenced broker or one outside its ISR;
//! - every acks=all acknowledged batch (and every batch a consumer read) is on every live ISR
//!   member at its offset, unchanged — the newest one and one at random every step, all of
//!   them every 64 steps and at the end.
use std::collections::BTreeMap;

use super::cluster::{Node, Sim, TOPIC};
use crate::controller::MetadataImage;
use crate::protocol::records::batch::parse_header;
use crate::replica::{BrokerEpoch, BrokerId};
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
        let full = self.steps % 64 == 0;
        check_metadata(sim, full)?;
        self.check_leaders(sim)?;
        self.check_isr_has_high_watermark(sim)?;
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
        check_metadata(sim, true)?;
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
        for (index, c) in &sim.controller.partitions(TOPIC) {
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
                let Some(node) = isr_member_process(sim, *m) else {
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

/// The controller's image is what its committed log replays to (in full every 64 steps;
/// every step through each broker that has read the whole log), and in it every partition is
/// led, if at all, by an unfenced broker in its ISR, with an ISR within its replicas.
fn check_metadata(sim: &Sim, full: bool) -> Result<(), String> {
    let image = &sim.controller.image;
    if full && MetadataImage::from_records(&sim.controller.log) != *image {
        return Err("the controller's image differs from its log replayed".into());
    }
    for b in &sim.brokers {
        if b.metadata.offset == sim.controller.last_offset() && b.metadata.image != *image {
            return Err(format!(
                "broker {} read the whole metadata log into another image",
                b.id
            ));
        }
    }
    for t in image.topics.values() {
        for (index, p) in &t.partitions {
            if p.isr.is_empty() || !p.isr.iter().all(|m| p.replicas.contains(m)) {
                return Err(format!(
                    "p{index}: ISR {:?} of replicas {:?}",
                    p.isr, p.replicas
                ));
            }
            if !p.has_leader() {
                continue;
            }
            if !image.is_live(p.leader) {
                return Err(format!(
                    "p{index}: leader {} is fenced or unregistered",
                    p.leader
                ));
            }
            if !p.isr.contains(&p.leader) {
                return Err(format!(
                    "p{index}: leader {} outside the ISR {:?}",
                    p.leader, p.isr
                ));
            }
        }
    }
    Ok(())
}

/// The running process of ISR member `m`, if it is the incarnation the controller knows. A
/// restarted process that has not registered yet is not the ISR member (the previous one
/// is, until its session expires): after a power loss its log may be short.
fn isr_member_process(sim: &Sim, m: BrokerId) -> Option<&Node> {
    let b = &sim.brokers[m.0 as usize];
    let registered = sim.controller.image.broker(m.0)?.broker_epoch;
    if b.epoch != Some(BrokerEpoch(registered)) {
        return None;
    }
    b.node.as_ref()
}

fn check_batches_on_isr(sim: &Sim, partition: i32, batches: &[&AckedBatch]) -> Result<(), String> {
    let Some(c) = sim.controller.partition(TOPIC, partition) else {
        return Err(format!("p{partition}: not in the controller's image"));
    };
    for m in &c.isr {
        let Some(node) = isr_member_process(sim, *m) else {
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
