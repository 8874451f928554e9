//! Seeded random sequences of controller operations with the invariants checked after every
//! step: leaders are in their ISR (or absent), ISRs are non-empty subsets of the replicas,
//! epochs never go back, only eligible brokers lead, and the log replays to the live image.
use std::collections::{BTreeMap, BTreeSet};

use super::Harness;
use crate::controller::cluster::fence_expired_brokers;
use crate::controller::partitions::{
    alter_partition, alter_partition_reassignments, elect_leaders, ElectionType,
    ReassignmentRequest,
};
use crate::controller::topics::delete_topics;
use crate::controller::NO_LEADER;
use crate::replica::{
    AlterPartition, BrokerEpoch, BrokerId, IsrMember, LeaderEpoch, PartitionEpoch,
};
use crate::sim::rng::SimRng;

const BROKERS: i64 = 5;

struct Run {
    h: Harness,
    rng: SimRng,
    /// Brokers whose heartbeats do not get through (crashed or partitioned away).
    silent: BTreeSet<i32>,
    incarnation: BTreeMap<i32, u32>,
    epochs_seen: BTreeMap<([u8; 16], i32), (i32, i32)>,
    topics: u32,
}

impl Run {
    fn pick_broker(&mut self) -> i32 {
        self.rng.range(1, BROKERS) as i32
    }

    fn pick_partition(&mut self) -> Option<(String, i32)> {
        let all: Vec<(String, i32)> = self
            .h
            .image
            .topics
            .values()
            .flat_map(|t| t.partitions.keys().map(|p| (t.name.clone(), *p)))
            .collect();
        if all.is_empty() {
            return None;
        }
        let i = self.rng.range(0, all.len() as i64 - 1) as usize;
        Some(all[i].clone())
    }

    fn step(&mut self) -> String {
        match self.rng.range(0, 11) {
            0 => {
                let dt = self.rng.range(0, 4000);
                self.h.now_ms += dt;
                format!("advance {dt}")
            }
            1 | 2 => {
                let b = self.pick_broker();
                if self.silent.contains(&b) || self.h.image.broker(b).is_none() {
                    return format!("no heartbeat from {b}");
                }
                let want_fence = self.rng.chance(0.05);
                let want_shutdown = self.rng.chance(0.05);
                let reply = self.h.heartbeat(b, want_fence, want_shutdown);
                if reply.should_shutdown {
                    self.silent.insert(b);
                }
                format!("heartbeat {b} fence={want_fence} shutdown={want_shutdown} -> {reply:?}")
            }
            3 => {
                let b = self.pick_broker();
                if self.rng.chance(0.5) || self.h.image.broker(b).is_none() {
                    *self.incarnation.entry(b).or_default() += 1;
                }
                let inc = self.incarnation.get(&b).copied().unwrap_or(0).to_string();
                let r = self.h.register(b, &inc);
                if r.is_ok() {
                    self.silent.remove(&b);
                }
                format!("register {b}/{inc} -> {r:?}")
            }
            4 => {
                let b = self.pick_broker();
                self.silent.insert(b);
                format!("silence {b}")
            }
            5 => {
                let records = fence_expired_brokers(
                    &self.h.image,
                    &self.h.config,
                    &mut self.h.heartbeats,
                    self.h.now_ms,
                );
                let n = records.len();
                self.h.commit(records);
                format!("fence expired: {n} records")
            }
            6 => {
                self.topics += 1;
                let name = format!("t{}", self.topics);
                let partitions = self.rng.range(1, 4) as i32;
                let rf = self.rng.range(1, 3) as i16;
                let r = self.h.create(&name, partitions, rf);
                format!("create {name} {partitions}x{rf} -> {:?}", r.error)
            }
            7 | 8 => {
                let Some((topic, partition)) = self.pick_partition() else {
                    return "no partition".into();
                };
                let p = self.h.partition(&topic, partition);
                if p.leader == NO_LEADER {
                    return format!("{topic}-{partition} leaderless");
                }
                // The leader proposes itself plus a random subset of the other replicas.
                let mut isr = vec![p.leader];
                for r in &p.replicas {
                    if *r != p.leader && self.rng.chance(0.6) {
                        isr.push(*r);
                    }
                }
                let stale = self.rng.chance(0.1);
                let req = AlterPartition {
                    topic: topic.clone(),
                    partition,
                    leader: BrokerId(p.leader),
                    leader_epoch: LeaderEpoch(p.leader_epoch),
                    partition_epoch: PartitionEpoch(p.partition_epoch - i32::from(stale)),
                    new_isr: isr
                        .iter()
                        .map(|b| IsrMember {
                            broker: BrokerId(*b),
                            broker_epoch: BrokerEpoch(self.h.epoch(*b)),
                        })
                        .collect(),
                };
                let (records, results) = alter_partition(&self.h.image, &[req]);
                self.h.commit(records);
                format!(
                    "alter {topic}-{partition} isr={isr:?} -> {:?}",
                    results[0].as_ref().map(|_| ())
                )
            }
            9 => {
                let Some((topic, partition)) = self.pick_partition() else {
                    return "no partition".into();
                };
                let target = if self.rng.chance(0.2) {
                    None
                } else {
                    let n = self.rng.range(1, 3);
                    let mut t = Vec::new();
                    for _ in 0..n {
                        let b = self.pick_broker();
                        if !t.contains(&b) {
                            t.push(b);
                        }
                    }
                    Some(t)
                };
                let req = ReassignmentRequest {
                    topic: topic.clone(),
                    partition,
                    target: target.clone(),
                    allow_replication_factor_change: true,
                };
                let (records, results) =
                    alter_partition_reassignments(&self.h.image, &self.h.config, &[req]);
                self.h.commit(records);
                format!(
                    "reassign {topic}-{partition} {target:?} -> {:?}",
                    results[0].2
                )
            }
            10 => {
                let Some((topic, partition)) = self.pick_partition() else {
                    return "no partition".into();
                };
                let t = if self.rng.chance(0.5) {
                    ElectionType::Preferred
                } else {
                    ElectionType::Unclean
                };
                let (records, results) =
                    elect_leaders(&self.h.image, t, &[(topic.clone(), partition)]);
                self.h.commit(records);
                format!("elect {t:?} {topic}-{partition} -> {:?}", results[0].2)
            }
            _ => {
                if !self.rng.chance(0.2) {
                    return "skip".into();
                }
                let Some((topic, _)) = self.pick_partition() else {
                    return "no topic".into();
                };
                let (records, _) = delete_topics(&self.h.image, std::slice::from_ref(&topic));
                self.h.commit(records);
                format!("delete {topic}")
            }
        }
    }

    fn check(&mut self, what: &str) {
        let image = &self.h.image;
        for t in image.topics.values() {
            for (i, p) in &t.partitions {
                let ctx = format!("after {what}: {}-{i} {p:?}", t.name);
                assert!(!p.isr.is_empty(), "{ctx}");
                assert!(p.isr.iter().all(|b| p.replicas.contains(b)), "{ctx}");
                let distinct: BTreeSet<i32> = p.isr.iter().copied().collect();
                assert_eq!(distinct.len(), p.isr.len(), "{ctx}");
                if p.leader != NO_LEADER {
                    assert!(p.isr.contains(&p.leader), "{ctx}");
                    assert!(image.is_eligible(p.leader), "{ctx}: leader not eligible");
                }
                assert!(
                    p.adding_replicas.iter().all(|b| p.replicas.contains(b)),
                    "{ctx}"
                );
                assert!(
                    p.removing_replicas.iter().all(|b| p.replicas.contains(b)),
                    "{ctx}"
                );
                let key = (t.topic_id, *i);
                if let Some((le, pe)) = self.epochs_seen.get(&key) {
                    assert!(p.leader_epoch >= *le, "{ctx}: leader epoch went back");
                    assert!(p.partition_epoch >= *pe, "{ctx}: partition epoch went back");
                }
                self.epochs_seen
                    .insert(key, (p.leader_epoch, p.partition_epoch));
            }
        }
        assert_eq!(
            crate::controller::MetadataImage::from_records(&self.h.log),
            self.h.image,
            "after {what}: the log does not replay to the image"
        );
    }
}

fn run(seed: u64, steps: usize) {
    let mut r = Run {
        h: Harness::with_brokers(BROKERS as i32),
        rng: SimRng::new(seed),
        silent: BTreeSet::new(),
        incarnation: BTreeMap::new(),
        epochs_seen: BTreeMap::new(),
        topics: 0,
    };
    let mut trace = Vec::new();
    for _ in 0..steps {
        let what = r.step();
        trace.push(what.clone());
        if std::env::var("CTRL_TRACE").is_ok() {
            eprintln!("{what}");
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.check(&what)));
        if let Err(e) = result {
            let tail = trace.len().saturating_sub(15);
            panic!(
                "seed {seed}: {:?}\nlast steps:\n{}",
                e.downcast_ref::<String>(),
                trace[tail..].join("\n")
            );
        }
    }
    // The image survives a serde_json round trip however it was reached.
    let json = serde_json::to_string(&r.h.image).expect("serialize");
    let back: crate::controller::MetadataImage = serde_json::from_str(&json).expect("deserialize");
    assert_eq!(back, r.h.image, "seed {seed}");
}

#[test]
fn random_operation_sequences_keep_the_invariants() {
    for seed in 0..60 {
        run(seed, 250);
    }
}
