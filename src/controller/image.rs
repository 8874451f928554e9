//! The metadata image: cluster metadata as built by applying [`MetadataRecord`]s in log order
//! (Kafka's `MetadataImage`, the result of replaying `__cluster_metadata`).
//!
//! [`MetadataImage::apply`] is the only way the image changes, on the active controller and on
//! every other node alike, so two nodes that applied the same log hold equal images. It is
//! total: a record naming an unknown topic or broker, or a stale broker epoch, is skipped with
//! a warning, never a panic, because a replicated log must replay the same way everywhere.
//! The image round-trips through serde_json (the quorum snapshots it).
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::directories;
use super::metadata::TopicMeta;
use super::records::{BrokerEndpoint, MetadataRecord, NO_LEADER, RESOURCE_TOPIC};
use crate::protocol::codec::Uuid;
use crate::replica::{BrokerId, LeaderEpoch, PartitionChange, PartitionEpoch};

/// One registered broker (Kafka's `BrokerRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerRegistration {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub incarnation_id: String,
    pub endpoints: Vec<BrokerEndpoint>,
    pub rack: Option<String>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
    /// Online log dirs by `directory.id`, sorted (KIP-858); dirs the broker reported
    /// offline are gone from it.
    #[serde(default)]
    pub log_dirs: Vec<[u8; 16]>,
    /// The feature levels the broker supports, by name: (min, max).
    #[serde(default)]
    pub supported_features: BTreeMap<String, (i16, i16)>,
}

impl BrokerRegistration {
    /// May lead a partition or join an ISR: unfenced and not shutting down.
    pub fn is_eligible(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }

    /// Whether a replica assigned to `dir` on this broker is online (Kafka's
    /// `DirectoryId.isOnline`): unassigned and migrating replicas count as online, lost ones
    /// do not, and a broker that registered no dirs (before KIP-858) is trusted.
    pub fn has_online_dir(&self, dir: &[u8; 16]) -> bool {
        if *dir == directories::UNASSIGNED || *dir == directories::MIGRATING {
            return true;
        }
        if *dir == directories::LOST {
            return false;
        }
        self.log_dirs.is_empty() || self.log_dirs.contains(dir)
    }
}

/// One partition's replication state (Kafka's `PartitionRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRegistration {
    /// Assigned replicas, preferred leader first; during a reassignment the union of the old
    /// and the target assignment.
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// [`NO_LEADER`] when there is none.
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// Replicas a reassignment adds (target minus old).
    pub adding_replicas: Vec<i32>,
    /// Replicas a reassignment removes (old minus target).
    pub removing_replicas: Vec<i32>,
    /// The log dir of each replica, by position in `replicas` (KIP-858).
    #[serde(default)]
    pub directories: Vec<[u8; 16]>,
}

impl PartitionRegistration {
    /// The log dir `broker`'s replica is assigned to; UNASSIGNED if unknown.
    pub fn directory_of(&self, broker: i32) -> [u8; 16] {
        self.replicas
            .iter()
            .position(|r| *r == broker)
            .and_then(|i| self.directories.get(i).copied())
            .unwrap_or(directories::UNASSIGNED)
    }

    /// The dirs of `new_replicas`: a replica kept keeps its dir, a new one is unassigned
    /// (Kafka's `PartitionChangeBuilder` with no default-dir hint).
    pub fn directories_for(&self, new_replicas: &[i32]) -> Vec<[u8; 16]> {
        new_replicas.iter().map(|r| self.directory_of(*r)).collect()
    }

    pub fn has_leader(&self) -> bool {
        self.leader != NO_LEADER
    }

    pub fn is_reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }

    /// The state the replica layer applies (`ReplicaManager::apply_partition_change`).
    pub fn to_partition_change(
        &self,
        topic: &str,
        partition: i32,
        topic_id: [u8; 16],
    ) -> PartitionChange {
        PartitionChange {
            topic: topic.to_string(),
            partition,
            topic_id: Uuid(topic_id),
            leader: self.has_leader().then_some(BrokerId(self.leader)),
            leader_epoch: LeaderEpoch(self.leader_epoch),
            partition_epoch: PartitionEpoch(self.partition_epoch),
            replicas: self.replicas.iter().map(|b| BrokerId(*b)).collect(),
            isr: self.isr.iter().map(|b| BrokerId(*b)).collect(),
        }
    }
}

/// One topic and its partitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicImage {
    pub name: String,
    pub topic_id: [u8; 16],
    pub partitions: BTreeMap<i32, PartitionRegistration>,
}

/// Cluster metadata at some offset of the metadata log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataImage {
    pub brokers: BTreeMap<i32, BrokerRegistration>,
    pub topics: BTreeMap<String, TopicImage>,
    #[serde(with = "as_pairs")]
    pub topic_names_by_id: BTreeMap<[u8; 16], String>,
    /// Config overrides by (resource type, resource name).
    #[serde(with = "as_pairs")]
    pub configs: BTreeMap<(i8, String), BTreeMap<String, String>>,
    /// First producer id no block has taken yet.
    pub next_producer_id: i64,
    /// The highest broker epoch ever registered, so that the next registration gets a higher
    /// one even after its broker was unregistered (KIP-903 needs them never reused).
    pub last_broker_epoch: i64,
    /// The ACLs, indexed for the authorizer (issue 13).
    #[serde(default)]
    pub acls: super::acls::AclIndex,
    /// SCRAM credentials (issue 13, sasl slice); absent in snapshots written before them.
    #[serde(default)]
    pub scram: super::scram::ScramCredentials,
    /// Client quotas by entity (user, client-id, ip).
    #[serde(default)]
    pub client_quotas: super::client_quotas::ClientQuotas,
    /// Delegation tokens (KIP-48); absent in snapshots written before them.
    #[serde(default)]
    pub delegation_tokens: super::delegation_tokens::DelegationTokens,
    /// The finalized feature levels (`FeatureLevel` records).
    #[serde(default)]
    pub features: super::features::FinalizedFeatures,
}

/// The internal topics Kafka marks `is_internal` in Metadata (the coordinators' logs).
pub fn is_internal_topic(name: &str) -> bool {
    name == "__consumer_offsets" || name == "__transaction_state"
}

impl MetadataImage {
    /// A topic as the handlers read it: id, partition count and config overrides.
    pub fn topic_meta(&self, name: &str) -> Option<TopicMeta> {
        self.topics.get(name).map(|t| self.meta_of(t))
    }

    /// Every topic, in name order.
    pub fn topic_metas(&self) -> Vec<TopicMeta> {
        self.topics.values().map(|t| self.meta_of(t)).collect()
    }

    pub fn topic_name_by_id(&self, id: &Uuid) -> Option<String> {
        self.topic_names_by_id.get(&id.0).cloned()
    }

    fn meta_of(&self, t: &TopicImage) -> TopicMeta {
        TopicMeta {
            name: t.name.clone(),
            id: Uuid(t.topic_id),
            partitions: t.partitions.len() as i32,
            configs: self
                .resource_configs(RESOURCE_TOPIC, &t.name)
                .cloned()
                .unwrap_or_default(),
            is_internal: is_internal_topic(&t.name),
        }
    }
}

/// JSON map keys must be strings: maps keyed by arrays or tuples go as a list of pairs.
mod as_pairs {
    use super::*;

    pub fn serialize<K, V, S>(map: &BTreeMap<K, V>, s: S) -> Result<S::Ok, S::Error>
    where
        K: Serialize,
        V: Serialize,
        S: Serializer,
    {
        s.collect_seq(map.iter())
    }

    pub fn deserialize<'de, K, V, D>(d: D) -> Result<BTreeMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Ord,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        let pairs: Vec<(K, V)> = Vec::deserialize(d)?;
        Ok(pairs.into_iter().collect())
    }
}

impl MetadataImage {
    /// Builds an image by applying a whole log from the empty image.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a MetadataRecord>) -> Self {
        let mut image = MetadataImage::default();
        for r in records {
            image.apply(r);
        }
        image
    }

    /// Applies one committed record. Never panics; see the module comment.
    pub fn apply(&mut self, record: &MetadataRecord) {
        match record {
            MetadataRecord::RegisterBroker {
                broker_id,
                broker_epoch,
                incarnation_id,
                endpoints,
                rack,
                fenced,
                log_dirs,
                features,
            } => {
                let mut log_dirs = log_dirs.clone();
                log_dirs.sort_unstable();
                log_dirs.dedup();
                self.brokers.insert(
                    *broker_id,
                    BrokerRegistration {
                        broker_id: *broker_id,
                        broker_epoch: *broker_epoch,
                        incarnation_id: incarnation_id.clone(),
                        endpoints: endpoints.clone(),
                        rack: rack.clone(),
                        fenced: *fenced,
                        in_controlled_shutdown: false,
                        log_dirs,
                        supported_features: features
                            .iter()
                            .map(|(name, min, max)| (name.clone(), (*min, *max)))
                            .collect(),
                    },
                );
                self.last_broker_epoch = self.last_broker_epoch.max(*broker_epoch);
            }
            MetadataRecord::BrokerRegistrationChange {
                broker_id,
                broker_epoch,
                log_dirs,
            } => {
                if let Some(b) =
                    self.broker_with_epoch(*broker_id, *broker_epoch, "registration change")
                {
                    let mut log_dirs = log_dirs.clone();
                    log_dirs.sort_unstable();
                    log_dirs.dedup();
                    b.log_dirs = log_dirs;
                }
            }
            MetadataRecord::UnregisterBroker {
                broker_id,
                broker_epoch,
            } => {
                if self
                    .broker_with_epoch(*broker_id, *broker_epoch, "unregister")
                    .is_some()
                {
                    self.brokers.remove(broker_id);
                }
            }
            MetadataRecord::FenceBroker {
                broker_id,
                broker_epoch,
            } => {
                if let Some(b) = self.broker_with_epoch(*broker_id, *broker_epoch, "fence") {
                    b.fenced = true;
                }
            }
            MetadataRecord::UnfenceBroker {
                broker_id,
                broker_epoch,
            } => {
                if let Some(b) = self.broker_with_epoch(*broker_id, *broker_epoch, "unfence") {
                    b.fenced = false;
                }
            }
            MetadataRecord::BrokerControlledShutdown {
                broker_id,
                broker_epoch,
            } => {
                if let Some(b) =
                    self.broker_with_epoch(*broker_id, *broker_epoch, "controlled shutdown")
                {
                    b.in_controlled_shutdown = true;
                }
            }
            MetadataRecord::Topic { name, topic_id } => {
                if let Some(existing) = self.topics.get(name) {
                    if existing.topic_id != *topic_id {
                        tracing::warn!(topic = %name, "metadata: topic record for an existing name with another id skipped");
                    }
                    return;
                }
                if let Some(other) = self.topic_names_by_id.get(topic_id) {
                    tracing::warn!(topic = %name, other = %other, "metadata: topic record reusing an id skipped");
                    return;
                }
                self.topics.insert(
                    name.clone(),
                    TopicImage {
                        name: name.clone(),
                        topic_id: *topic_id,
                        partitions: BTreeMap::new(),
                    },
                );
                self.topic_names_by_id.insert(*topic_id, name.clone());
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                let Some(name) = self.topic_names_by_id.remove(topic_id) else {
                    tracing::warn!(topic_id = %Uuid(*topic_id), "metadata: removal of an unknown topic skipped");
                    return;
                };
                self.topics.remove(&name);
                self.configs.remove(&(RESOURCE_TOPIC, name));
            }
            MetadataRecord::Partition {
                topic_id,
                partition,
                replicas,
                isr,
                leader,
                leader_epoch,
                partition_epoch,
                adding_replicas,
                removing_replicas,
                directories,
            } => {
                let Some(topic) = self.topic_by_id_mut(topic_id) else {
                    tracing::warn!(topic_id = %Uuid(*topic_id), partition, "metadata: partition of an unknown topic skipped");
                    return;
                };
                topic.partitions.insert(
                    *partition,
                    PartitionRegistration {
                        replicas: replicas.clone(),
                        isr: isr.clone(),
                        leader: *leader,
                        leader_epoch: *leader_epoch,
                        partition_epoch: *partition_epoch,
                        adding_replicas: adding_replicas.clone(),
                        removing_replicas: removing_replicas.clone(),
                        // Records from before KIP-858 carry none: every replica unassigned.
                        directories: if directories.len() == replicas.len() {
                            directories.clone()
                        } else {
                            vec![directories::UNASSIGNED; replicas.len()]
                        },
                    },
                );
            }
            MetadataRecord::PartitionChange {
                topic_id,
                partition,
                leader,
                isr,
                replicas,
                adding_replicas,
                removing_replicas,
                directories,
            } => {
                let Some(p) = self
                    .topic_by_id_mut(topic_id)
                    .and_then(|t| t.partitions.get_mut(partition))
                else {
                    tracing::warn!(topic_id = %Uuid(*topic_id), partition, "metadata: change of an unknown partition skipped");
                    return;
                };
                let leader_changed = leader.is_some_and(|l| l != p.leader);
                let replicas_changed = replicas.as_ref().is_some_and(|r| *r != p.replicas);
                // A new leader, or a new replica set (a completed reassignment), starts a new
                // leader epoch so that followers truncate against the right history.
                let leader_epoch = if leader_changed || replicas_changed {
                    p.leader_epoch.checked_add(1)
                } else {
                    Some(p.leader_epoch)
                };
                // An epoch cannot go past i32::MAX (nor wrap, which would make every later
                // change look stale): such a record, which only a corrupt log holds, is skipped
                // whole, the same way on every node, instead of panicking on the overflow (the
                // `metadata_records` fuzz target reaches it).
                let (Some(leader_epoch), Some(partition_epoch)) =
                    (leader_epoch, p.partition_epoch.checked_add(1))
                else {
                    tracing::error!(topic_id = %Uuid(*topic_id), partition, "metadata: change past the largest epoch skipped");
                    return;
                };
                if let Some(l) = leader {
                    p.leader = *l;
                }
                if let Some(v) = isr {
                    p.isr = v.clone();
                }
                if let Some(v) = replicas {
                    p.directories = p.directories_for(v);
                    p.replicas = v.clone();
                }
                match directories {
                    Some(d) if d.len() == p.replicas.len() => p.directories = d.clone(),
                    Some(_) => {
                        tracing::warn!(topic_id = %Uuid(*topic_id), partition, "metadata: directories not matching the replicas skipped")
                    }
                    None => {}
                }
                if let Some(v) = adding_replicas {
                    p.adding_replicas = v.clone();
                }
                if let Some(v) = removing_replicas {
                    p.removing_replicas = v.clone();
                }
                p.leader_epoch = leader_epoch;
                p.partition_epoch = partition_epoch;
            }
            MetadataRecord::Config {
                resource_type,
                resource_name,
                name,
                value,
            } => {
                let key = (*resource_type, resource_name.clone());
                match value {
                    Some(v) => {
                        self.configs
                            .entry(key)
                            .or_default()
                            .insert(name.clone(), v.clone());
                    }
                    None => {
                        if let Some(m) = self.configs.get_mut(&key) {
                            m.remove(name);
                            if m.is_empty() {
                                self.configs.remove(&key);
                            }
                        }
                    }
                }
            }
            MetadataRecord::ProducerIds {
                next_producer_id, ..
            } => {
                self.next_producer_id = self.next_producer_id.max(*next_producer_id);
            }
            MetadataRecord::AccessControlEntry { id, acl } => {
                self.acls.add(*id, acl.clone());
            }
            MetadataRecord::RemoveAccessControlEntry { id } => {
                if !self.acls.remove(id) {
                    tracing::warn!(id = %Uuid(*id), "metadata: removal of an unknown ACL skipped");
                }
            }
            MetadataRecord::UserScramCredential { .. }
            | MetadataRecord::RemoveUserScramCredential { .. } => {
                self.scram.apply(record);
            }
            MetadataRecord::ClientQuota { entity, key, value } => {
                self.client_quotas.apply(entity, key, *value);
            }
            MetadataRecord::DelegationToken { .. }
            | MetadataRecord::RemoveDelegationToken { .. } => {
                self.delegation_tokens.apply(record);
            }
            MetadataRecord::FeatureLevel { name, level } => {
                self.features.apply(name, *level);
            }
        }
    }

    /// [`Self::apply`] for a record committed at metadata `offset`: a feature change takes
    /// that offset as the finalized features' epoch.
    pub fn apply_at(&mut self, offset: u64, record: &MetadataRecord) {
        self.apply(record);
        if matches!(record, MetadataRecord::FeatureLevel { .. }) {
            self.features.epoch = offset as i64;
        }
    }

    fn broker_with_epoch(
        &mut self,
        broker_id: i32,
        broker_epoch: i64,
        what: &str,
    ) -> Option<&mut BrokerRegistration> {
        match self.brokers.get_mut(&broker_id) {
            Some(b) if b.broker_epoch == broker_epoch => Some(b),
            Some(b) => {
                tracing::warn!(
                    broker_id,
                    broker_epoch,
                    current = b.broker_epoch,
                    what,
                    "metadata: broker record with a stale epoch skipped"
                );
                None
            }
            None => {
                tracing::warn!(
                    broker_id,
                    what,
                    "metadata: record for an unregistered broker skipped"
                );
                None
            }
        }
    }

    fn topic_by_id_mut(&mut self, topic_id: &[u8; 16]) -> Option<&mut TopicImage> {
        let name = self.topic_names_by_id.get(topic_id)?;
        self.topics.get_mut(name)
    }

    pub fn topic(&self, name: &str) -> Option<&TopicImage> {
        self.topics.get(name)
    }

    pub fn topic_by_id(&self, topic_id: &[u8; 16]) -> Option<&TopicImage> {
        self.topics.get(self.topic_names_by_id.get(topic_id)?)
    }

    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionRegistration> {
        self.topics.get(topic)?.partitions.get(&partition)
    }

    pub fn broker(&self, broker_id: i32) -> Option<&BrokerRegistration> {
        self.brokers.get(&broker_id)
    }

    /// Registered and unfenced brokers, by id.
    pub fn live_brokers(&self) -> impl Iterator<Item = &BrokerRegistration> {
        self.brokers.values().filter(|b| !b.fenced)
    }

    /// Registered and unfenced.
    pub fn is_live(&self, broker_id: i32) -> bool {
        self.brokers.get(&broker_id).is_some_and(|b| !b.fenced)
    }

    /// May lead or join an ISR: unfenced and not in controlled shutdown.
    pub fn is_eligible(&self, broker_id: i32) -> bool {
        self.brokers
            .get(&broker_id)
            .is_some_and(BrokerRegistration::is_eligible)
    }

    pub fn broker_endpoint(&self, broker_id: i32, listener_name: &str) -> Option<&BrokerEndpoint> {
        self.brokers
            .get(&broker_id)?
            .endpoints
            .iter()
            .find(|e| e.name == listener_name)
    }

    /// The config overrides of one resource, if it has any.
    pub fn resource_configs(
        &self,
        resource_type: i8,
        name: &str,
    ) -> Option<&BTreeMap<String, String>> {
        self.configs.get(&(resource_type, name.to_string()))
    }

    /// One override of a topic config, if set.
    pub fn topic_config(&self, topic: &str, key: &str) -> Option<&str> {
        self.resource_configs(RESOURCE_TOPIC, topic)?
            .get(key)
            .map(String::as_str)
    }
}

impl crate::controller::quorum::ReplicatedState for MetadataImage {
    type Record = MetadataRecord;

    fn apply(&mut self, record: &MetadataRecord) {
        MetadataImage::apply(self, record)
    }

    fn apply_at(&mut self, offset: u64, record: &MetadataRecord) {
        MetadataImage::apply_at(self, offset, record)
    }
}
