//! Model test of durable share state (KIP-932, issue 17): seeded random sequences of
//! acquisitions by several members, acknowledgements (accept, release, reject, renew), lock
//! expiries, failed state writes, and crashes that lose the leader's memory and rebuild the
//! share coordinator from its `__share_group_state` records alone (sometimes with a new
//! leader epoch, which fences the old leader's writes). After every step:
//! - no record whose acceptance or rejection was durably acknowledged (its write succeeded
//!   before the member was answered) is ever delivered again;
//! - after the last recovery, draining the share partition delivers every other record.
//!
//! The leader side runs as the broker runs it (acknowledge, then write the changes, then
//! answer); the coordinator side is the real shard over an in-memory log.
//! `STRATA_MODEL_SEEDS=n` runs more seeds.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use strata::clock::ManualClock;
use strata::coordinator::runtime::{CoordinatorLogError, InMemoryCoordinatorLog};
use strata::coordinator::share_state::{ShareStateConfig, ShareStateCoordinator};
use strata::protocol::codec::Uuid;
use strata::replica::share_partition::{AcknowledgeType, SharePartition, SharePartitionConfig};
use strata::replica::share_persister::{SharePartitionKey, StateWrite};

/// xorshift64*: deterministic, no dependency.
#[path = "common/rng.rs"]
mod rng;
use rng::Rng;

const LOG_END: i64 = 60;
const MEMBERS: [&str; 3] = ["m1", "m2", "m3"];
const LOCK_MS: i64 = 1_000;

fn config() -> SharePartitionConfig {
    SharePartitionConfig {
        record_lock_duration_ms: LOCK_MS,
        // High enough that nothing is archived by delivery count in the drain.
        delivery_count_limit: 1_000,
        max_in_flight: 25,
    }
}

fn key() -> SharePartitionKey {
    SharePartitionKey {
        group_id: "g".to_string(),
        topic_id: Uuid([3; 16]),
        partition: 0,
    }
}

struct World {
    log: Arc<InMemoryCoordinatorLog>,
    coordinator: ShareStateCoordinator,
    leader_epoch: i32,
    state_epoch: i32,
    share: SharePartition,
    now_ms: i64,
    /// What each member holds, as the member believes.
    held: BTreeMap<&'static str, BTreeSet<i64>>,
    /// Offsets whose ACCEPT or REJECT was answered after a successful write.
    settled: BTreeSet<i64>,
}

fn coordinator_over(log: &Arc<InMemoryCoordinatorLog>) -> ShareStateCoordinator {
    let c = ShareStateCoordinator::new(
        ShareStateConfig {
            num_partitions: 1,
            updates_per_snapshot: 4,
        },
        ManualClock::new(0),
        log.clone(),
    );
    let records = log.records(0).into_iter().enumerate();
    c.load(0, records.map(|(i, r)| (i as i64, r)));
    c
}

impl World {
    fn new() -> Self {
        let log = Arc::new(InMemoryCoordinatorLog::new());
        let coordinator = coordinator_over(&log);
        coordinator.initialize(&key(), 0, 0).unwrap();
        World {
            log,
            coordinator,
            leader_epoch: 0,
            state_epoch: 0,
            share: SharePartition::new(config(), 0),
            now_ms: 0,
            held: BTreeMap::new(),
            settled: BTreeSet::new(),
        }
    }

    /// Writes the leader's changes, as `SharePartitionManager::persist` does.
    fn persist(&mut self) -> bool {
        if !self.share.has_changes() {
            return true;
        }
        let changes = self.share.take_changes();
        let write = StateWrite {
            key: key(),
            state_epoch: self.state_epoch,
            leader_epoch: self.leader_epoch,
            start_offset: changes.start_offset,
            delivery_complete_count: self.share.delivery_complete_count(),
            state_batches: changes.state_batches.clone(),
        };
        match self.coordinator.write(&write) {
            Ok(()) => true,
            Err(_) => {
                self.share.restore_changes(changes);
                false
            }
        }
    }

    /// A fetch as the manager makes it: from the next fetch offset, a batch of records up to
    /// the log end. Checks that nothing settled comes back.
    fn acquire(&mut self, member: &'static str, max: i64, seed: &u64) -> Vec<i64> {
        let Some(from) = self.share.next_fetch_offset() else {
            return Vec::new();
        };
        if from >= LOG_END {
            return Vec::new();
        }
        let last = (from + 7).min(LOG_END - 1);
        let got = self.share.acquire(
            member,
            &[(from, last)],
            max,
            strata::replica::share_partition::AcquireMode::RecordLimit,
            self.now_ms,
        );
        let offsets: Vec<i64> = got
            .iter()
            .flat_map(|r| r.first_offset..=r.last_offset)
            .collect();
        for o in &offsets {
            assert!(
                !self.settled.contains(o),
                "seed {seed}: offset {o} delivered again after its acknowledgement was durable"
            );
        }
        self.held.entry(member).or_default().extend(&offsets);
        offsets
    }

    /// Recovery: the leader's memory is gone; the coordinator is rebuilt from its log.
    fn crash(&mut self, new_leader: bool) {
        self.coordinator = coordinator_over(&self.log);
        if new_leader {
            self.leader_epoch += 1;
        }
        let state = self
            .coordinator
            .read(&key(), self.leader_epoch)
            .unwrap()
            .expect("initialized");
        self.state_epoch = state.state_epoch;
        self.share = SharePartition::from_state(config(), state.start_offset, &state.state_batches);
        self.held.clear();
    }
}

fn run(seed: u64) {
    let mut rng = Rng::seeded(seed);
    let mut w = World::new();
    for _ in 0..300 {
        let member = MEMBERS[rng.below(3) as usize];
        match rng.below(10) {
            0..=3 => {
                let max = 1 + rng.below(6) as i64;
                w.acquire(member, max, &seed);
            }
            4..=6 => {
                // Acknowledge some of what the member holds, then write, then answer.
                let held: Vec<i64> = w.held.get(member).into_iter().flatten().copied().collect();
                if held.is_empty() {
                    continue;
                }
                let take = 1 + rng.below(held.len() as u64) as usize;
                let chosen: Vec<i64> = held.into_iter().take(take).collect();
                let kind = match rng.below(8) {
                    0..=3 => AcknowledgeType::Accept,
                    4 => AcknowledgeType::Reject,
                    5 | 6 => AcknowledgeType::Release,
                    _ => AcknowledgeType::Renew,
                };
                let mut applied = Vec::new();
                let mut before = Vec::new();
                for o in &chosen {
                    if let Ok(b) = w
                        .share
                        .acknowledge_undoable(member, *o, *o, &[kind], w.now_ms)
                    {
                        applied.push(*o);
                        before.extend(b);
                    }
                    if kind != AcknowledgeType::Renew {
                        w.held.get_mut(member).unwrap().remove(o);
                    }
                }
                let fail = rng.below(6) == 0;
                if fail {
                    w.log.fail_with(Some(CoordinatorLogError::NotAvailable));
                }
                let written = w.persist();
                w.log.fail_with(None);
                if !written {
                    // As the broker does: taken back, still the member's.
                    w.share.undo(before);
                    w.held.entry(member).or_default().extend(&applied);
                } else if matches!(kind, AcknowledgeType::Accept | AcknowledgeType::Reject) {
                    w.settled.extend(applied);
                }
            }
            7 => {
                // Locks expire: the members' records go back.
                w.now_ms += LOCK_MS + 1;
                w.share.expire_locks(w.now_ms);
                w.held.clear();
            }
            8 => {
                // The background write of changes no one waits on.
                w.persist();
            }
            _ => {
                if rng.below(3) == 0 {
                    w.crash(rng.below(2) == 0);
                }
            }
        }
    }
    // Recover once more, then drain: every record not settled is delivered and accepted.
    w.crash(true);
    let mut delivered: BTreeSet<i64> = BTreeSet::new();
    for _ in 0..1_000 {
        let got = w.acquire("drain", 100, &seed);
        if got.is_empty() && w.share.next_fetch_offset().is_none_or(|o| o >= LOG_END) {
            break;
        }
        for o in &got {
            w.share
                .acknowledge("drain", *o, *o, &[AcknowledgeType::Accept], w.now_ms)
                .unwrap();
        }
        assert!(w.persist(), "seed {seed}: drain write failed");
        delivered.extend(got);
    }
    // Released, expired, taken back or never acknowledged: all come back.
    for o in 0..LOG_END {
        assert!(
            delivered.contains(&o) || w.settled.contains(&o),
            "seed {seed}: offset {o} was never durably settled and not delivered again"
        );
    }
    assert_eq!(
        w.share.start_offset(),
        LOG_END,
        "seed {seed}: records left behind"
    );
    // A fresh coordinator agrees with the leader after the drain.
    let fresh = coordinator_over(&w.log);
    let state = fresh.read(&key(), w.leader_epoch).unwrap().unwrap();
    assert_eq!(state.start_offset, LOG_END, "seed {seed}");
}

#[test]
fn acknowledged_records_never_return_and_the_others_always_do() {
    let seeds: u64 = std::env::var("STRATA_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    for seed in 1..=seeds {
        run(seed);
    }
}
