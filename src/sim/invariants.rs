//! The invariants checked after every simulation step:
//! - at most one leader per (partition, leader epoch), over the whole run;
//! - the high watermark never decreases on a replica while it stays leader in one epoch;
//! - every member of the controller's ISR has the leader's log up to the leader's high
//!   watermark (checked at the batch just below it);
//! - the controller's image equals its metadata log replayed (and each broker's copy equals
//!   it once read to the end); no partition is led by a fenced broker or one outside its ISR;
//!   an ISR and a reassignment's adding and removing replicas lie within the replicas;
//! - a broker that has read that it no longer hosts a replica (reassigned away) has stopped
//!   and deleted it;
//! - every acks=all acknowledged batch (and every batch a consumer read) is on every live ISR
//!   member at its offset, unchanged — the newest one and one at random every step, all of
//!   them every 64 steps, when a reassignment completes (on the new replica set) and at the
//!   end.
//!
//! Reading a log is most of a step's cost, so batches already found on a log are remembered
//! per (broker, log generation, partition): a log only grows between the events that bump its
//! generation (a new process, a truncation, a replica deleted; `SimBroker::log_generation`),
//! so they are still there. The checks of every 64 steps and at the end read the logs again
//! in full, in one sequential pass per log, and do not trust the memo.
use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::cluster::{Sim, SimBroker, TOPIC};
use crate::controller::MetadataImage;
use crate::protocol::records::batch::{parse_header, BatchIter};
use crate::replica::{BrokerEpoch, BrokerId};
use crate::storage::PartitionLog;

/// A batch by its place and content (its CRC covers everything but offsets and epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckedBatch {
    pub base_offset: i64,
    pub last_offset: i64,
    pub crc: u32,
}

/// (broker, log generation, partition): one log as long as it only grows.
type LogKey = (BrokerId, u64, i32);

#[derive(Debug, Default)]
pub struct Checker {
    leaders: BTreeMap<(i32, i32), BrokerId>,
    leader_high_watermarks: BTreeMap<(i32, BrokerId), (i32, i64)>,
    acked: BTreeMap<i32, BTreeMap<i64, AckedBatch>>,
    violation: Option<String>,
    steps: u64,
    /// Batches found on each log, by base offset.
    seen: HashMap<LogKey, BTreeMap<i64, AckedBatch>>,
    /// Partitions whose acknowledged batches are all checked at the next step.
    in_full: BTreeSet<i32>,
    /// Per broker, the (incarnation, metadata offset, published offset) whose image and
    /// hosted replicas were last checked: neither changes until the broker reads or
    /// publishes more.
    metadata_checked: HashMap<BrokerId, (u32, i64, i64)>,
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

/// Every batch of `log` from the one containing `from` to the one containing `to`, in a few
/// large reads.
fn scan(log: &PartitionLog, from: i64, to: i64) -> BTreeMap<i64, AckedBatch> {
    let mut found = BTreeMap::new();
    let mut offset = from.max(log.log_start_offset());
    while offset <= to && offset < log.log_end_offset() {
        let Ok(data) = log.read(offset, 256 * 1024, i64::MAX, true) else {
            break;
        };
        let mut next = offset;
        for (h, _) in BatchIter::new(&data.records) {
            found.insert(
                h.base_offset,
                AckedBatch {
                    base_offset: h.base_offset,
                    last_offset: h.last_offset(),
                    crc: h.crc,
                },
            );
            next = h.last_offset() + 1;
        }
        if next <= offset {
            break;
        }
        offset = next;
    }
    found
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

    /// Checks every acknowledged batch of `partition` at the next step.
    pub fn check_in_full(&mut self, partition: i32) {
        self.in_full.insert(partition);
    }

    /// The batch containing `offset` on the log `key`, from the memo or read (and remembered).
    fn batch_at_memo(
        &mut self,
        log: &PartitionLog,
        key: LogKey,
        offset: i64,
    ) -> Option<AckedBatch> {
        if let Some((_, b)) = self
            .seen
            .get(&key)
            .and_then(|m| m.range(..=offset).next_back())
        {
            // A log shorter than what was seen on it lost records without a new generation:
            // read it again rather than trust the memo.
            if b.last_offset >= offset && b.last_offset < log.log_end_offset() {
                return Some(*b);
            }
        }
        let b = batch_at(log, offset)?;
        self.seen.entry(key).or_default().insert(b.base_offset, b);
        Some(b)
    }

    pub fn check(&mut self, sim: &Sim, random: u64) -> Result<(), String> {
        if let Some(v) = self.violation.take() {
            return Err(v);
        }
        self.steps += 1;
        let full = self.steps % 64 == 0;
        check_metadata(sim, full)?;
        self.check_brokers_metadata(sim, full)?;
        self.check_leaders(sim)?;
        if full {
            // Forget the logs that are gone.
            let current: BTreeSet<(BrokerId, u64)> = sim
                .brokers
                .iter()
                .map(|b| (b.id, b.log_generation))
                .collect();
            self.seen.retain(|(b, g, _), _| current.contains(&(*b, *g)));
        }
        self.check_isr_has_high_watermark(sim)?;
        let in_full = std::mem::take(&mut self.in_full);
        let partitions: Vec<i32> = self.acked.keys().copied().collect();
        for partition in partitions {
            let batches = &self.acked[&partition];
            if full || in_full.contains(&partition) {
                let all: Vec<AckedBatch> = batches.values().copied().collect();
                self.check_all_on_isr(sim, partition, &all)?;
                continue;
            }
            let n = batches.len();
            let mut chosen: Vec<AckedBatch> =
                batches.values().next_back().copied().into_iter().collect();
            if n > 0 {
                chosen.extend(batches.values().nth((random % n as u64) as usize).copied());
            }
            self.check_some_on_isr(sim, partition, &chosen)?;
        }
        Ok(())
    }

    pub fn check_all(&mut self, sim: &Sim) -> Result<(), String> {
        if let Some(v) = self.violation.take() {
            return Err(v);
        }
        check_metadata(sim, true)?;
        self.check_brokers_metadata(sim, true)?;
        let partitions: Vec<i32> = self.acked.keys().copied().collect();
        for partition in partitions {
            let all: Vec<AckedBatch> = self.acked[&partition].values().copied().collect();
            self.check_all_on_isr(sim, partition, &all)?;
        }
        Ok(())
    }

    /// The number of batches that must survive (to see that runs do something).
    pub fn acked_count(&self) -> usize {
        self.acked.values().map(|b| b.len()).sum()
    }

    /// Each broker's copy of the metadata, and the replicas it runs, where they changed since
    /// the last check (all of them with `full`).
    fn check_brokers_metadata(&mut self, sim: &Sim, full: bool) -> Result<(), String> {
        for b in &sim.brokers {
            let state = (
                b.incarnation,
                b.metadata.offset,
                b.metadata.published_offset,
            );
            if !full && self.metadata_checked.get(&b.id) == Some(&state) {
                continue;
            }
            if b.metadata.offset == sim.controller.last_offset()
                && b.metadata.image != sim.controller.image
            {
                return Err(format!(
                    "broker {} read the whole metadata log into another image",
                    b.id
                ));
            }
            check_removed_replicas_stopped(b)?;
            // Checked against the controller only once read to the end: come back later.
            if b.metadata.offset == sim.controller.last_offset() {
                self.metadata_checked.insert(b.id, state);
            }
        }
        Ok(())
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

    fn check_isr_has_high_watermark(&mut self, sim: &Sim) -> Result<(), String> {
        for (index, c) in &sim.controller.partitions(TOPIC) {
            let Some(leader) = c.leader else { continue };
            let lb = &sim.brokers[leader.0 as usize];
            let Some(lp) = lb.node.as_ref().and_then(|n| n.replicas.get(TOPIC, *index)) else {
                continue;
            };
            if !lp.is_leader() || lp.leader_epoch() != c.leader_epoch.0 {
                continue;
            }
            let hw = lp.high_watermark();
            if hw <= lp.log_start_offset() {
                continue;
            }
            let expected = self.batch_at_memo(&lp.log, (leader, lb.log_generation, *index), hw - 1);
            for m in &c.isr {
                let Some(b) = isr_member_process(sim, *m) else {
                    continue;
                };
                let Some(log) = b.node.as_ref().and_then(|n| n.logs.get(TOPIC, *index)) else {
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
                let got = self.batch_at_memo(&log, (*m, b.log_generation, *index), hw - 1);
                if got != expected {
                    return Err(format!(
                        "p{index}: ISR member {m} holds {got:?} below the high watermark {hw}, leader {leader} holds {expected:?}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// `batches` on every live ISR member of `partition`, through the memo.
    fn check_some_on_isr(
        &mut self,
        sim: &Sim,
        partition: i32,
        batches: &[AckedBatch],
    ) -> Result<(), String> {
        let Some(c) = sim.controller.partition(TOPIC, partition) else {
            return Err(format!("p{partition}: not in the controller's image"));
        };
        for m in &c.isr {
            let Some(b) = isr_member_process(sim, *m) else {
                continue;
            };
            let log = b.node.as_ref().and_then(|n| n.logs.get(TOPIC, partition));
            for want in batches {
                let got = log.as_ref().and_then(|l| {
                    self.batch_at_memo(l, (*m, b.log_generation, partition), want.base_offset)
                });
                if got != Some(*want) {
                    return Err(missing(partition, want, got, *m, &c));
                }
            }
        }
        Ok(())
    }

    /// `batches` (in offset order) on every live ISR member of `partition`, each log read
    /// afresh in one pass; what it holds refreshes the memo.
    fn check_all_on_isr(
        &mut self,
        sim: &Sim,
        partition: i32,
        batches: &[AckedBatch],
    ) -> Result<(), String> {
        let (Some(first), Some(last)) = (batches.first(), batches.last()) else {
            return Ok(());
        };
        let Some(c) = sim.controller.partition(TOPIC, partition) else {
            return Err(format!("p{partition}: not in the controller's image"));
        };
        for m in &c.isr {
            let Some(b) = isr_member_process(sim, *m) else {
                continue;
            };
            let found = b
                .node
                .as_ref()
                .and_then(|n| n.logs.get(TOPIC, partition))
                .map(|l| scan(&l, first.base_offset, last.last_offset))
                .unwrap_or_default();
            for want in batches {
                let got = found.get(&want.base_offset).copied();
                if got != Some(*want) {
                    return Err(missing(partition, want, got, *m, &c));
                }
            }
            self.seen.insert((*m, b.log_generation, partition), found);
        }
        Ok(())
    }
}

fn missing(
    partition: i32,
    want: &AckedBatch,
    got: Option<AckedBatch>,
    member: BrokerId,
    c: &crate::replica::PartitionChange,
) -> String {
    format!(
        "p{partition}: acknowledged {want:?} is {got:?} on ISR member {member} (ISR {:?}, leader {:?} epoch {})",
        c.isr, c.leader, c.leader_epoch
    )
}

/// The controller's image is what its committed log replays to (in full every 64 steps;
/// through each broker that has read the whole log, see `check_brokers_metadata`), and in it
/// every partition is
/// led, if at all, by an unfenced broker in its ISR, with an ISR and a reassignment's adding
/// and removing replicas within its replicas.
fn check_metadata(sim: &Sim, full: bool) -> Result<(), String> {
    let image = &sim.controller.image;
    if full && MetadataImage::from_records(&sim.controller.log) != *image {
        return Err("the controller's image differs from its log replayed".into());
    }
    for t in image.topics.values() {
        for (index, p) in &t.partitions {
            if p.isr.is_empty() || !p.isr.iter().all(|m| p.replicas.contains(m)) {
                return Err(format!(
                    "p{index}: ISR {:?} of replicas {:?}",
                    p.isr, p.replicas
                ));
            }
            let within = |v: &[i32]| v.iter().all(|r| p.replicas.contains(r));
            if !within(&p.adding_replicas)
                || !within(&p.removing_replicas)
                || p.adding_replicas
                    .iter()
                    .any(|r| p.removing_replicas.contains(r))
            {
                return Err(format!(
                    "p{index}: replicas {:?} adding {:?} removing {:?}",
                    p.replicas, p.adding_replicas, p.removing_replicas
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

/// A broker process that has published the metadata it read hosts no replica that metadata
/// does not assign to it: a replica reassigned away is stopped (and its log deleted).
fn check_removed_replicas_stopped(b: &SimBroker) -> Result<(), String> {
    let Some(node) = &b.node else {
        return Ok(());
    };
    if b.metadata.published_offset != b.metadata.offset {
        return Ok(());
    }
    for p in node.replicas.all() {
        let assigned = b
            .metadata
            .image
            .partition(&p.topic, p.index)
            .is_some_and(|r| r.replicas.contains(&b.id.0));
        if !assigned {
            return Err(format!(
                "p{}: broker {} still runs a replica it read was reassigned away",
                p.index, b.id
            ));
        }
    }
    Ok(())
}

/// The running process of ISR member `m`, if it is the incarnation the controller knows. A
/// restarted process that has not registered yet is not the ISR member (the previous one
/// is, until its session expires): after a power loss its log may be short.
fn isr_member_process(sim: &Sim, m: BrokerId) -> Option<&SimBroker> {
    let b = &sim.brokers[m.0 as usize];
    let registered = sim.controller.image.broker(m.0)?.broker_epoch;
    // A broker with a failed log dir is checked again once restarted on a repaired one.
    if b.epoch != Some(BrokerEpoch(registered)) || b.log_dir_repair_at_ms.is_some() {
        return None;
    }
    b.node.as_ref().map(|_| b)
}
