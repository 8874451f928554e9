//! The controller under simulation: the real sans-io decisions of [`crate::controller`]
//! (`register_broker`, `broker_heartbeat` with controlled shutdown, `fence_expired_brokers`,
//! `create_topics`, `alter_partition`, `alter_partition_reassignments` (KIP-455),
//! `elect_leaders` (KIP-460); KRaft's `ClusterControlManager` and `ReplicationControlManager`)
//! over a [`MetadataImage`] and the committed metadata log they produce. Raft itself is not
//! simulated (openraft is tested on its own): a decision's records are committed at once, in
//! order, and reach the brokers later through [`BrokerMetadata`]. A failover keeps the
//! committed log and loses everything else, as when another voter becomes active.
use std::collections::{BTreeMap, BTreeSet};

use crate::controller::{
    alter_partition, alter_partition_reassignments, broker_heartbeat, create_topics, elect_leaders,
    fence_expired_brokers, register_broker, BrokerHeartbeatReply, BrokerHeartbeatRequest,
    BrokerHeartbeats, ControllerConfig, CreateTopicSpec, ElectionType, MetadataImage,
    MetadataRecord, PartitionRegistration, ReassignmentRequest, RegisterBrokerRequest,
};
use crate::controller::{assign_replicas_to_dirs, AssignReplicasToDirsRequest, DirAssignment};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::replica::{
    AlterPartition, AlterPartitionError, BrokerEpoch, BrokerId, PartitionChange, PartitionConfig,
    ReplicaManager,
};

#[derive(Debug)]
pub struct SimController {
    pub config: ControllerConfig,
    pub image: MetadataImage,
    /// The committed metadata log; a record's offset is its index.
    pub log: Vec<MetadataRecord>,
    heartbeats: BrokerHeartbeats,
    /// Partitions of [`super::cluster::TOPIC`] whose reassignment completed, for the
    /// simulation to check in full and count.
    pub completed_reassignments: Vec<i32>,
    /// A broken promise seen while deciding (a reassignment completed with a target replica
    /// outside the ISR).
    pub violation: Option<String>,
}

impl SimController {
    pub fn new(broker_session_timeout_ms: i64) -> Self {
        SimController {
            config: ControllerConfig {
                broker_session_timeout_ms,
                ..ControllerConfig::default()
            },
            image: MetadataImage::default(),
            log: Vec::new(),
            heartbeats: BrokerHeartbeats::new(),
            completed_reassignments: Vec::new(),
            violation: None,
        }
    }

    /// Which partitions of `topic` are being reassigned.
    fn reassigning(&self, topic: &str) -> BTreeMap<i32, bool> {
        self.image
            .topic(topic)
            .map(|t| {
                t.partitions
                    .iter()
                    .map(|(i, p)| (*i, p.is_reassigning()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Notes the reassignments that ended since `before` (not by cancellation): KIP-455 ends
    /// one only once every target replica is in the ISR.
    fn note_completions(&mut self, topic: &str, before: &BTreeMap<i32, bool>) {
        let Some(t) = self.image.topic(topic) else {
            return;
        };
        for (index, p) in &t.partitions {
            if before.get(index) == Some(&true) && !p.is_reassigning() {
                if !p.replicas.iter().all(|r| p.isr.contains(r)) {
                    self.violation.get_or_insert(format!(
                        "p{index}: reassignment completed with replicas {:?} but ISR {:?}",
                        p.replicas, p.isr
                    ));
                }
                self.completed_reassignments.push(*index);
            }
        }
    }

    /// Another voter becomes the active controller: it has the committed log and nothing
    /// else, so the image is rebuilt from the log and every broker's heartbeat state (last
    /// contact, catch-up offset) starts over (Kafka's `BrokerHeartbeatManager` is not in the
    /// log).
    pub fn failover(&mut self) -> Result<(), String> {
        let rebuilt = MetadataImage::from_records(&self.log);
        if rebuilt != self.image {
            return Err("the new active controller replays the log into another image".into());
        }
        self.image = rebuilt;
        self.heartbeats = BrokerHeartbeats::new();
        Ok(())
    }

    /// AlterPartitionReassignments for one partition of `topic`: a target replica list, or
    /// None to cancel. Ok(true) when it moves replicas (Ok(false): a cancellation, or the
    /// same replicas in another order).
    pub fn reassign(
        &mut self,
        topic: &str,
        partition: i32,
        target: Option<Vec<i32>>,
    ) -> Result<bool, String> {
        let before = self.reassigning(topic);
        // The assignment before any reassignment in progress: a target with the same
        // replicas (in any order) moves nothing and ends what is in progress, as a
        // cancellation does.
        let original: BTreeSet<i32> = self
            .image
            .partition(topic, partition)
            .map(|p| {
                p.replicas
                    .iter()
                    .copied()
                    .filter(|r| !p.adding_replicas.contains(r))
                    .collect()
            })
            .unwrap_or_default();
        let moves = target
            .as_ref()
            .is_some_and(|t| t.iter().copied().collect::<BTreeSet<i32>>() != original);
        let request = ReassignmentRequest {
            topic: topic.to_string(),
            partition,
            target,
            allow_replication_factor_change: true,
        };
        let (records, results) =
            alter_partition_reassignments(&self.image, &self.config, &[request]);
        match results.first() {
            Some((_, _, code, _)) if *code == ErrorCode::NONE => {}
            other => return Err(format!("{other:?}")),
        }
        self.commit(records);
        let now_reassigning = self
            .image
            .partition(topic, partition)
            .is_some_and(|p| p.is_reassigning());
        if moves && !now_reassigning {
            // Its targets were all in the ISR already: it completes at once.
            let mut was = before;
            was.insert(partition, true);
            self.note_completions(topic, &was);
        }
        Ok(moves)
    }

    /// ElectLeaders (preferred) over every partition of `topic`: how many changed leader.
    pub fn elect_preferred(&mut self, topic: &str) -> usize {
        let partitions: Vec<(String, i32)> = self
            .image
            .topic(topic)
            .map(|t| {
                t.partitions
                    .keys()
                    .map(|i| (topic.to_string(), *i))
                    .collect()
            })
            .unwrap_or_default();
        let (records, results) = elect_leaders(&self.image, ElectionType::Preferred, &partitions);
        self.commit(records);
        results
            .iter()
            .filter(|(_, _, code)| *code == ErrorCode::NONE)
            .count()
    }

    /// The offset of the last committed record (-1 while the log is empty).
    pub fn last_offset(&self) -> i64 {
        self.log.len() as i64 - 1
    }

    /// Commits a decision's records; the offset of the last one, if any.
    fn commit(&mut self, records: Vec<MetadataRecord>) -> Option<i64> {
        if records.is_empty() {
            return None;
        }
        for r in &records {
            self.image.apply(r);
        }
        self.log.extend(records);
        Some(self.last_offset())
    }

    pub fn create_topic(
        &mut self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        min_insync_replicas: i32,
        topic_id: [u8; 16],
    ) -> Result<(), String> {
        let spec = CreateTopicSpec {
            name: name.to_string(),
            num_partitions: partitions,
            replication_factor,
            assignments: Vec::new(),
            configs: vec![(
                "min.insync.replicas".to_string(),
                Some(min_insync_replicas.to_string()),
            )],
        };
        let (records, results) =
            create_topics(&self.image, &self.config, &[spec], false, &mut || topic_id);
        match results.first() {
            Some(r) if r.error == ErrorCode::NONE => {
                self.commit(records);
                Ok(())
            }
            other => Err(format!("create topic {name}: {other:?}")),
        }
    }

    /// A broker process (re)registers under a new incarnation: its broker epoch, or the
    /// refusal (DUPLICATE_BROKER_REGISTRATION while the previous incarnation's session lasts).
    pub fn register(
        &mut self,
        broker: BrokerId,
        incarnation: u32,
        now_ms: i64,
        log_dirs: Vec<[u8; 16]>,
    ) -> Result<BrokerEpoch, ErrorCode> {
        let request = RegisterBrokerRequest {
            broker_id: broker.0,
            incarnation_id: format!("broker-{}-incarnation-{incarnation}", broker.0),
            endpoints: Vec::new(),
            rack: None,
            log_dirs,
            features: crate::controller::features::broker_features(),
        };
        let (records, result) = register_broker(
            &self.image,
            &self.config,
            &request,
            &mut self.heartbeats,
            now_ms,
        );
        if let Some(offset) = self.commit(records) {
            // As the controller service does once the registration is committed.
            self.heartbeats.set_registration_offset(broker.0, offset);
        }
        result.map(BrokerEpoch)
    }

    pub fn heartbeat(
        &mut self,
        broker: BrokerId,
        broker_epoch: BrokerEpoch,
        current_metadata_offset: i64,
        want_shutdown: bool,
        offline_log_dirs: Vec<[u8; 16]>,
        now_ms: i64,
    ) -> BrokerHeartbeatReply {
        let request = BrokerHeartbeatRequest {
            broker_id: broker.0,
            broker_epoch: broker_epoch.0,
            current_metadata_offset,
            want_fence: false,
            want_shutdown,
            offline_log_dirs,
        };
        let committed = self.last_offset();
        let (records, reply) = broker_heartbeat(
            &self.image,
            &self.config,
            &request,
            &mut self.heartbeats,
            now_ms,
            committed,
        );
        self.commit(records);
        reply
    }

    /// A broker's AssignReplicasToDirs (KIP-858), committed at once.
    pub fn assign_replicas_to_dirs(
        &mut self,
        broker: BrokerId,
        broker_epoch: BrokerEpoch,
        directories: Vec<DirAssignment>,
    ) {
        let request = AssignReplicasToDirsRequest {
            broker_id: broker.0,
            broker_epoch: broker_epoch.0,
            directories,
        };
        let (records, _) = assign_replicas_to_dirs(&self.image, &self.config, &request);
        self.commit(records);
    }

    /// The periodic session check; the brokers it fenced.
    pub fn fence_expired(&mut self, now_ms: i64) -> Vec<i32> {
        let records =
            fence_expired_brokers(&self.image, &self.config, &mut self.heartbeats, now_ms);
        let fenced = records
            .iter()
            .filter_map(|r| match r {
                MetadataRecord::FenceBroker { broker_id, .. } => Some(*broker_id),
                _ => None,
            })
            .collect();
        self.commit(records);
        fenced
    }

    pub fn alter_partitions(
        &mut self,
        requests: &[AlterPartition],
    ) -> Vec<Result<PartitionRegistration, AlterPartitionError>> {
        let before = self.reassigning(super::cluster::TOPIC);
        let (records, results) = alter_partition(&self.image, requests);
        self.commit(records);
        self.note_completions(super::cluster::TOPIC, &before);
        results
    }

    /// The replica layer's view of every partition of `topic`, by index.
    pub fn partitions(&self, topic: &str) -> BTreeMap<i32, PartitionChange> {
        self.image
            .topic(topic)
            .map(|t| {
                t.partitions
                    .iter()
                    .map(|(i, p)| (*i, p.to_partition_change(&t.name, *i, t.topic_id)))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn partition(&self, topic: &str, index: i32) -> Option<PartitionChange> {
        let t = self.image.topic(topic)?;
        let p = t.partitions.get(&index)?;
        Some(p.to_partition_change(topic, index, t.topic_id))
    }

    /// Registered, unfenced and under `epoch`.
    pub fn is_active(&self, broker: BrokerId, epoch: Option<BrokerEpoch>) -> bool {
        self.image
            .broker(broker.0)
            .is_some_and(|b| !b.fenced && Some(BrokerEpoch(b.broker_epoch)) == epoch)
    }
}

/// A broker's copy of the metadata log: the image at the offset it has read up to, and the
/// partition epochs it has handed to its replica manager (Kafka's `BrokerMetadataPublisher`).
#[derive(Debug, Default)]
pub struct BrokerMetadata {
    pub image: MetadataImage,
    /// The offset of the last record applied (-1: none).
    pub offset: i64,
    /// The offset of the image last handed to the replica manager (-1: none yet).
    pub published_offset: i64,
    /// (leader epoch, partition epoch) applied per partition of the current process.
    applied: BTreeMap<(String, i32), (i32, i32)>,
}

impl BrokerMetadata {
    pub fn new() -> Self {
        BrokerMetadata {
            offset: -1,
            published_offset: -1,
            ..Default::default()
        }
    }

    /// Reads the log up to its end.
    pub fn catch_up(&mut self, log: &[MetadataRecord]) {
        let from = (self.offset + 1) as usize;
        for r in log.iter().skip(from) {
            self.image.apply(r);
        }
        self.offset = log.len() as i64 - 1;
    }

    /// Hands every hosted partition whose state changed since the last publish to the replica
    /// manager, and stops and deletes the replicas it no longer hosts (reassigned away), as
    /// `cluster::publisher` does. A process publishes nothing before its image holds its own
    /// registration (`epoch`): until then the image may still name its previous incarnation
    /// as a leader. With `trace`, what it applied is described.
    pub fn publish(
        &mut self,
        local: BrokerId,
        epoch: Option<BrokerEpoch>,
        replicas: &ReplicaManager,
        config: &PartitionConfig,
        now_ms: i64,
        trace: bool,
    ) -> Result<Published, String> {
        let mut out = Published::default();
        let registered = self
            .image
            .broker(local.0)
            .is_some_and(|b| Some(BrokerEpoch(b.broker_epoch)) == epoch);
        if !registered {
            return Ok(out);
        }
        let mut hosted = BTreeSet::new();
        for t in self.image.topics.values() {
            for (&index, p) in &t.partitions {
                if !p.replicas.contains(&local.0) {
                    continue;
                }
                let key = (t.name.clone(), index);
                hosted.insert(key.clone());
                let epochs = (p.leader_epoch, p.partition_epoch);
                if self.applied.get(&key) == Some(&epochs) {
                    continue;
                }
                // KIP-858: a replica in (or assigned to) a dir offline here stays offline.
                let dir = Uuid(p.directory_of(local.0));
                if replicas.hold_offline_if_dir_unavailable(&t.name, index, dir)
                    || replicas.is_partition_offline(&t.name, index)
                {
                    continue;
                }
                let change = p.to_partition_change(&t.name, index, t.topic_id);
                replicas
                    .apply_partition_change_in(&change, config.clone(), now_ms, Some(dir))
                    .map_err(|e| format!("broker {local} cannot apply {change:?}: {e:?}"))?;
                self.applied.insert(key, epochs);
                if trace {
                    out.lines.push(format!(
                        "p{index} leader {} epoch {} isr {:?} replicas {:?}",
                        p.leader, p.leader_epoch, p.isr, p.replicas
                    ));
                }
            }
        }
        for part in replicas.all() {
            let key = (part.topic.clone(), part.index);
            if hosted.contains(&key) {
                continue;
            }
            self.applied.remove(&key);
            replicas
                .delete(&part.topic, part.index)
                .map_err(|e| format!("broker {local} cannot delete p{}: {e:?}", part.index))?;
            out.removed += 1;
            if trace {
                out.lines
                    .push(format!("p{} removed: no longer a replica", part.index));
            }
        }
        self.published_offset = self.offset;
        Ok(out)
    }
}

/// What one publish did.
#[derive(Debug, Default)]
pub struct Published {
    /// What was applied, when traced.
    pub lines: Vec<String>,
    /// Replicas stopped and deleted.
    pub removed: usize,
}
