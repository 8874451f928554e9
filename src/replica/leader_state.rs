//! What a leader knows about its partition's replicas, as pure data with no I/O: the ISR the
//! controller committed, an ISR change in flight, and per follower its log end offset, last
//! fetch and last caught-up time. It decides the high watermark, ISR expansion and shrink.
//!
//! Mirrors Kafka's `Replica` / `ReplicaState` (one per remote replica) and the ISR part of
//! `Partition` (`PartitionState.isr` / `maximalIsr`, `maybeExpandIsr`, `getOutOfSyncReplicas`,
//! `maybeIncrementLeaderHW`): while an AlterPartition is in flight the high watermark is
//! computed over the *maximal* ISR (committed ∪ proposed), so that whichever way the controller
//! decides, every member of the committed ISR holds everything below the high watermark.
use std::collections::{BTreeMap, BTreeSet};

use super::change::{AlterPartition, IsrMember, PartitionChange};
use super::ids::{BrokerEpoch, BrokerId, LeaderEpoch, PartitionEpoch};

/// One remote replica as seen by the leader (Kafka's `ReplicaState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerState {
    /// From the fetch offset of its last fetch; -1 until it fetched under this leadership.
    pub log_end_offset: i64,
    /// The broker epoch its last fetch carried (KIP-903).
    pub broker_epoch: BrokerEpoch,
    /// The last time it was known to have everything the leader had (0: never).
    pub last_caught_up_time_ms: i64,
    pub last_fetch_time_ms: i64,
    /// The leader's log end offset when that follower last fetched.
    pub last_fetch_leader_log_end_offset: i64,
}

impl FollowerState {
    fn reset(in_sync: bool, now_ms: i64, leader_log_end_offset: i64) -> Self {
        // Kafka's `resetReplicaState` for a new leader: ISR members get a full lag period of
        // grace before they can be dropped; the others must prove themselves.
        FollowerState {
            log_end_offset: -1,
            broker_epoch: BrokerEpoch::UNKNOWN,
            last_caught_up_time_ms: if in_sync { now_ms } else { 0 },
            last_fetch_time_ms: 0,
            last_fetch_leader_log_end_offset: if in_sync { leader_log_end_offset } else { -1 },
        }
    }

    /// Kafka's `isCaughtUp`: has everything, or had everything within the lag period.
    pub fn is_caught_up(&self, leader_log_end_offset: i64, now_ms: i64, max_lag_ms: i64) -> bool {
        self.log_end_offset == leader_log_end_offset
            || now_ms - self.last_caught_up_time_ms <= max_lag_ms
    }
}

/// The replication state of a partition this broker leads.
#[derive(Debug, Clone)]
pub struct LeaderState {
    pub local: BrokerId,
    pub local_broker_epoch: BrokerEpoch,
    pub leader_epoch: LeaderEpoch,
    pub partition_epoch: PartitionEpoch,
    pub replicas: Vec<BrokerId>,
    /// The ISR the controller committed.
    pub isr: BTreeSet<BrokerId>,
    /// An ISR change sent to the controller and not yet answered.
    pub pending: Option<AlterPartition>,
    /// Whether `pending` still has to be handed to the controller channel.
    pub pending_unsent: bool,
    pub followers: BTreeMap<BrokerId, FollowerState>,
    /// The log end offset when this leadership began: a follower joins the ISR only once it
    /// has everything of earlier epochs (Kafka's `leaderEpochStartOffsetOpt`).
    pub leader_epoch_start_offset: i64,
}

impl LeaderState {
    /// Kafka's `effectiveMinIsr`: `min.insync.replicas` bounded by the replication factor, so
    /// a topic with fewer replicas than the broker-wide minimum still takes acks=all writes
    /// (and transaction markers) while all its replicas are in sync.
    pub fn effective_min_isr(&self, min_insync_replicas: i32) -> i32 {
        min_insync_replicas.min(self.replicas.len().max(1) as i32)
    }

    /// A new leadership from the controller's decision.
    pub fn new(
        local: BrokerId,
        local_broker_epoch: BrokerEpoch,
        change: &PartitionChange,
        leader_log_end_offset: i64,
        now_ms: i64,
    ) -> Self {
        let isr: BTreeSet<BrokerId> = change.isr.iter().copied().collect();
        let followers = change
            .replicas
            .iter()
            .filter(|r| **r != local)
            .map(|r| {
                (
                    *r,
                    FollowerState::reset(isr.contains(r), now_ms, leader_log_end_offset),
                )
            })
            .collect();
        LeaderState {
            local,
            local_broker_epoch,
            leader_epoch: change.leader_epoch,
            partition_epoch: change.partition_epoch,
            replicas: change.replicas.clone(),
            isr,
            pending: None,
            pending_unsent: false,
            followers,
            leader_epoch_start_offset: leader_log_end_offset,
        }
    }

    /// The single-node default: this broker is the only replica and the whole ISR.
    pub fn sole_replica(local: BrokerId, leader_epoch: LeaderEpoch, log_end_offset: i64) -> Self {
        LeaderState {
            local,
            local_broker_epoch: BrokerEpoch::UNKNOWN,
            leader_epoch,
            partition_epoch: PartitionEpoch(0),
            replicas: vec![local],
            isr: [local].into_iter().collect(),
            pending: None,
            pending_unsent: false,
            followers: BTreeMap::new(),
            leader_epoch_start_offset: log_end_offset,
        }
    }

    /// Applies a newer partition state of the same leadership (an ISR or replica change).
    pub fn update(&mut self, change: &PartitionChange, leader_log_end_offset: i64, now_ms: i64) {
        self.partition_epoch = change.partition_epoch;
        self.isr = change.isr.iter().copied().collect();
        self.replicas = change.replicas.clone();
        self.followers.retain(|b, _| change.replicas.contains(b));
        for r in &change.replicas {
            if *r != self.local && !self.followers.contains_key(r) {
                self.followers.insert(
                    *r,
                    FollowerState::reset(self.isr.contains(r), now_ms, leader_log_end_offset),
                );
            }
        }
        // Whatever was in flight is answered by (or superseded by) this state.
        self.pending = None;
        self.pending_unsent = false;
    }

    /// The committed ISR plus any member an in-flight change would add (Kafka's maximal ISR).
    pub fn maximal_isr(&self) -> BTreeSet<BrokerId> {
        let mut m = self.isr.clone();
        if let Some(p) = &self.pending {
            m.extend(p.new_isr.iter().map(|x| x.broker));
        }
        m
    }

    pub fn is_replica(&self, broker: BrokerId) -> bool {
        self.followers.contains_key(&broker)
    }

    /// Records a follower fetch at `fetch_offset` (Kafka's `updateFetchStateOrThrow`).
    pub fn record_follower_fetch(
        &mut self,
        broker: BrokerId,
        broker_epoch: BrokerEpoch,
        fetch_offset: i64,
        leader_log_end_offset: i64,
        now_ms: i64,
    ) {
        let Some(f) = self.followers.get_mut(&broker) else {
            return;
        };
        if broker_epoch.0 >= 0 && broker_epoch < f.broker_epoch {
            // A fetch from an earlier incarnation of the broker, delivered late: what it
            // says about the log is no longer true (KIP-903).
            return;
        }
        if fetch_offset >= leader_log_end_offset {
            f.last_caught_up_time_ms = f.last_caught_up_time_ms.max(now_ms);
        } else if fetch_offset >= f.last_fetch_leader_log_end_offset {
            // It has now what the leader had at its previous fetch.
            f.last_caught_up_time_ms = f.last_caught_up_time_ms.max(f.last_fetch_time_ms);
        }
        f.log_end_offset = fetch_offset;
        f.broker_epoch = broker_epoch;
        f.last_fetch_leader_log_end_offset = leader_log_end_offset;
        f.last_fetch_time_ms = now_ms;
    }

    /// The high watermark the replicas allow: the minimum log end offset over the maximal ISR,
    /// and over caught-up replicas about to join it (so they can catch up, as Kafka does).
    pub fn high_watermark_bound(
        &self,
        leader_log_end_offset: i64,
        now_ms: i64,
        max_lag_ms: i64,
    ) -> i64 {
        let maximal = self.maximal_isr();
        let mut hw = leader_log_end_offset;
        for (b, f) in &self.followers {
            let counts = maximal.contains(b)
                || (f.log_end_offset >= 0
                    && f.is_caught_up(leader_log_end_offset, now_ms, max_lag_ms));
            if counts && f.log_end_offset < hw {
                hw = f.log_end_offset;
            }
        }
        hw
    }

    fn member(&self, broker: BrokerId) -> IsrMember {
        let broker_epoch = if broker == self.local {
            self.local_broker_epoch
        } else {
            self.followers
                .get(&broker)
                .map_or(BrokerEpoch::UNKNOWN, |f| f.broker_epoch)
        };
        IsrMember {
            broker,
            broker_epoch,
        }
    }

    fn propose(&mut self, isr: BTreeSet<BrokerId>, topic: &str, partition: i32) -> AlterPartition {
        let req = AlterPartition {
            topic: topic.to_string(),
            partition,
            leader: self.local,
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            new_isr: isr.iter().map(|b| self.member(*b)).collect(),
        };
        self.pending = Some(req.clone());
        self.pending_unsent = true;
        req
    }

    /// Kafka's `maybeExpandIsr`: a replica outside the ISR whose log end offset reached both
    /// the high watermark and the start of this leadership is proposed for the ISR.
    pub fn maybe_expand_isr(
        &mut self,
        broker: BrokerId,
        high_watermark: i64,
        topic: &str,
        partition: i32,
    ) -> Option<AlterPartition> {
        if self.pending.is_some() || self.isr.contains(&broker) {
            return None;
        }
        let f = self.followers.get(&broker)?;
        if f.log_end_offset < high_watermark || f.log_end_offset < self.leader_epoch_start_offset {
            return None;
        }
        let mut isr = self.isr.clone();
        isr.insert(broker);
        Some(self.propose(isr, topic, partition))
    }

    /// Kafka's `maybeShrinkIsr`: members (other than the leader) not caught up within
    /// `max_lag_ms` are proposed for removal.
    pub fn maybe_shrink_isr(
        &mut self,
        leader_log_end_offset: i64,
        now_ms: i64,
        max_lag_ms: i64,
        topic: &str,
        partition: i32,
    ) -> Option<AlterPartition> {
        if self.pending.is_some() {
            return None;
        }
        let out_of_sync: Vec<BrokerId> = self
            .isr
            .iter()
            .filter(|b| **b != self.local)
            .filter(|b| {
                self.followers.get(b).map_or(true, |f| {
                    !f.is_caught_up(leader_log_end_offset, now_ms, max_lag_ms)
                })
            })
            .copied()
            .collect();
        if out_of_sync.is_empty() {
            return None;
        }
        let isr: BTreeSet<BrokerId> = self
            .isr
            .iter()
            .filter(|b| !out_of_sync.contains(b))
            .copied()
            .collect();
        Some(self.propose(isr, topic, partition))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::codec::Uuid;

    fn change(isr: &[i32]) -> PartitionChange {
        PartitionChange {
            topic: "t".into(),
            partition: 0,
            topic_id: Uuid::ZERO,
            leader: Some(BrokerId(1)),
            leader_epoch: LeaderEpoch(3),
            partition_epoch: PartitionEpoch(7),
            replicas: vec![BrokerId(1), BrokerId(2), BrokerId(3)],
            isr: isr.iter().map(|b| BrokerId(*b)).collect(),
        }
    }

    #[test]
    fn high_watermark_waits_for_every_isr_member_including_unknown_ones() {
        let mut s = LeaderState::new(BrokerId(1), BrokerEpoch(1), &change(&[1, 2, 3]), 10, 0);
        // Nobody fetched yet: the high watermark cannot move past unknown followers.
        assert_eq!(s.high_watermark_bound(10, 0, 30_000), -1);
        s.record_follower_fetch(BrokerId(2), BrokerEpoch(5), 10, 10, 1);
        s.record_follower_fetch(BrokerId(3), BrokerEpoch(5), 7, 10, 1);
        assert_eq!(s.high_watermark_bound(10, 1, 30_000), 7);
        s.record_follower_fetch(BrokerId(3), BrokerEpoch(5), 10, 10, 2);
        assert_eq!(s.high_watermark_bound(12, 2, 30_000), 10);
    }

    #[test]
    fn shrink_after_lag_and_expand_at_high_watermark() {
        let mut s = LeaderState::new(BrokerId(1), BrokerEpoch(1), &change(&[1, 2, 3]), 0, 0);
        s.record_follower_fetch(BrokerId(2), BrokerEpoch(5), 0, 0, 100);
        // 3 never fetches; within the grace period nothing happens.
        assert!(s.maybe_shrink_isr(0, 30_000, 30_000, "t", 0).is_none());
        let req = s.maybe_shrink_isr(0, 30_001, 30_000, "t", 0).unwrap();
        assert_eq!(req.isr_ids(), vec![BrokerId(1), BrokerId(2)]);
        assert_eq!(req.partition_epoch, PartitionEpoch(7));
        // While the shrink is in flight the maximal ISR still holds 3.
        assert!(s.maximal_isr().contains(&BrokerId(3)));
        let mut committed = change(&[1, 2]);
        committed.partition_epoch = PartitionEpoch(8);
        s.update(&committed, 5, 30_002);
        assert!(s.pending.is_none());
        // 3 comes back below the high watermark: not yet; at it: proposed with its epoch.
        s.record_follower_fetch(BrokerId(3), BrokerEpoch(9), 3, 5, 30_003);
        assert!(s.maybe_expand_isr(BrokerId(3), 5, "t", 0).is_none());
        s.record_follower_fetch(BrokerId(3), BrokerEpoch(9), 5, 5, 30_004);
        let req = s.maybe_expand_isr(BrokerId(3), 5, "t", 0).unwrap();
        assert_eq!(
            req.new_isr.last(),
            Some(&IsrMember {
                broker: BrokerId(3),
                broker_epoch: BrokerEpoch(9)
            })
        );
    }

    #[test]
    fn a_late_fetch_from_an_earlier_incarnation_is_ignored() {
        let mut s = LeaderState::new(BrokerId(1), BrokerEpoch(1), &change(&[1]), 20, 0);
        s.record_follower_fetch(BrokerId(2), BrokerEpoch(9), 5, 20, 1);
        s.record_follower_fetch(BrokerId(2), BrokerEpoch(4), 20, 20, 2);
        assert_eq!(s.followers[&BrokerId(2)].log_end_offset, 5);
        assert!(s.maybe_expand_isr(BrokerId(2), 20, "t", 0).is_none());
    }

    #[test]
    fn expansion_needs_the_start_of_the_leader_epoch() {
        let mut s = LeaderState::new(BrokerId(1), BrokerEpoch(1), &change(&[1]), 20, 0);
        s.record_follower_fetch(BrokerId(2), BrokerEpoch(5), 15, 20, 1);
        // At the high watermark (15) but short of the epoch start offset (20).
        assert!(s.maybe_expand_isr(BrokerId(2), 15, "t", 0).is_none());
    }
}
