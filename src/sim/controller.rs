//! A scripted controller, standing in for the Raft quorum under simulation: it holds the
//! authoritative [`PartitionChange`] of every partition and the registration of every broker,
//! answers AlterPartition as KRaft's `ReplicationControlManager` does (leader epoch, partition
//! epoch and KIP-903 broker-epoch checks), fences a crashed broker (out of every ISR it is not
//! the last member of, leadership moved to another ISR member; no unclean election), and
//! elects a returning broker that is the last ISR member of a leaderless partition.
use std::collections::BTreeMap;

use crate::protocol::codec::Uuid;
use crate::replica::{
    AlterPartition, AlterPartitionError, BrokerEpoch, BrokerId, LeaderEpoch, PartitionChange,
    PartitionEpoch,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registration {
    pub epoch: BrokerEpoch,
    pub fenced: bool,
}

#[derive(Debug, Default)]
pub struct ScriptedController {
    pub partitions: BTreeMap<(String, i32), PartitionChange>,
    pub brokers: BTreeMap<BrokerId, Registration>,
    next_broker_epoch: i64,
}

impl ScriptedController {
    pub fn create_partition(&mut self, topic: &str, partition: i32, replicas: Vec<BrokerId>) {
        let change = PartitionChange {
            topic: topic.to_string(),
            partition,
            topic_id: Uuid::ZERO,
            leader: replicas.first().copied(),
            leader_epoch: LeaderEpoch(0),
            partition_epoch: PartitionEpoch(0),
            isr: replicas.clone(),
            replicas,
        };
        self.partitions
            .insert((topic.to_string(), partition), change);
    }

    /// A broker (re)registers: a new broker epoch, unfenced; leaderless partitions whose ISR
    /// it is in get it as leader.
    pub fn register(&mut self, broker: BrokerId) -> BrokerEpoch {
        self.next_broker_epoch += 1;
        let epoch = BrokerEpoch(self.next_broker_epoch);
        self.brokers.insert(
            broker,
            Registration {
                epoch,
                fenced: false,
            },
        );
        self.elect_leaderless(broker);
        epoch
    }

    /// A fenced but live broker is heard from again (its heartbeats get through): unfenced
    /// with the same broker epoch, as Kafka's controller does once it has caught up.
    pub fn unfence(&mut self, broker: BrokerId) {
        if let Some(r) = self.brokers.get_mut(&broker) {
            r.fenced = false;
        }
        self.elect_leaderless(broker);
    }

    fn elect_leaderless(&mut self, broker: BrokerId) {
        for p in self.partitions.values_mut() {
            if p.leader.is_none() && p.isr.contains(&broker) {
                p.leader = Some(broker);
                p.leader_epoch = p.leader_epoch.next();
                p.partition_epoch = p.partition_epoch.next();
            }
        }
    }

    /// A broker is gone (crashed, or stopped heartbeating): out of every ISR it is not the
    /// last member of, and its leaderships move to another ISR member.
    pub fn fence(&mut self, broker: BrokerId) {
        if let Some(r) = self.brokers.get_mut(&broker) {
            r.fenced = true;
        }
        let active: Vec<BrokerId> = self
            .brokers
            .iter()
            .filter(|(_, r)| !r.fenced)
            .map(|(b, _)| *b)
            .collect();
        for p in self.partitions.values_mut() {
            let in_isr = p.isr.contains(&broker);
            let leads = p.leader == Some(broker);
            if !in_isr && !leads {
                continue;
            }
            if in_isr && p.isr.len() > 1 {
                p.isr.retain(|b| *b != broker);
            }
            if leads {
                // The first ISR member in replica order that is alive; else none (the
                // partition is offline until an ISR member returns).
                p.leader = p
                    .replicas
                    .iter()
                    .find(|r| p.isr.contains(r) && active.contains(r))
                    .copied();
                p.leader_epoch = p.leader_epoch.next();
            }
            p.partition_epoch = p.partition_epoch.next();
        }
    }

    pub fn alter_partition(
        &mut self,
        request: &AlterPartition,
    ) -> Result<PartitionChange, AlterPartitionError> {
        let active: BTreeMap<BrokerId, Registration> = self.brokers.clone();
        let Some(p) = self
            .partitions
            .get_mut(&(request.topic.clone(), request.partition))
        else {
            return Err(AlterPartitionError::UnknownTopicOrPartition);
        };
        if request.leader_epoch != p.leader_epoch {
            return Err(AlterPartitionError::FencedLeaderEpoch);
        }
        if p.leader != Some(request.leader) {
            return Err(AlterPartitionError::NotLeaderOrFollower);
        }
        if request.partition_epoch != p.partition_epoch {
            return Err(AlterPartitionError::InvalidUpdateVersion);
        }
        for m in &request.new_isr {
            if p.isr.contains(&m.broker) {
                continue;
            }
            // KIP-903: a new member must be registered, unfenced, and the incarnation the
            // leader saw fetching.
            let eligible = p.replicas.contains(&m.broker)
                && active.get(&m.broker).is_some_and(|r| {
                    !r.fenced
                        && (m.broker_epoch == BrokerEpoch::UNKNOWN || m.broker_epoch == r.epoch)
                });
            if !eligible {
                return Err(AlterPartitionError::IneligibleReplica);
            }
        }
        if !request.new_isr.iter().any(|m| m.broker == request.leader) {
            return Err(AlterPartitionError::IneligibleReplica);
        }
        p.isr = request.isr_ids();
        p.partition_epoch = p.partition_epoch.next();
        Ok(p.clone())
    }
}
