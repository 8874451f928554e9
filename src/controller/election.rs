//! Leader election and ISR shrinking shared by every controller operation (Kafka's
//! `PartitionChangeBuilder`): a leader is the first replica, in replica order, that is in the
//! ISR and acceptable (unfenced, not shutting down, its replica's log dir online); an unclean election, only where the topic
//! allows it, takes any eligible replica and makes it the whole ISR.
//!
//! Decisions that emit several records build them in a [`Batch`]: each record is applied to a
//! scratch copy of the image as it is emitted, so later records are computed from the state
//! the earlier ones produce, exactly as followers will replay them.
use super::controller_config::{ControllerConfig, UNCLEAN_LEADER_ELECTION_ENABLE};
use super::image::{MetadataImage, PartitionRegistration};
use super::records::{MetadataRecord, NO_LEADER};

/// Records emitted so far and the image they lead to.
#[derive(Debug, Clone)]
pub struct Batch {
    pub image: MetadataImage,
    pub records: Vec<MetadataRecord>,
}

impl Batch {
    pub fn new(image: &MetadataImage) -> Self {
        Batch {
            image: image.clone(),
            records: Vec::new(),
        }
    }

    pub fn push(&mut self, record: MetadataRecord) {
        self.image.apply(&record);
        self.records.push(record);
    }
}

/// Whether `broker` may lead `p` (Kafka's `LeaderAcceptor`): eligible, and its replica's
/// log dir is not one it reported offline (KIP-858).
pub fn is_acceptable_leader(image: &MetadataImage, p: &PartitionRegistration, broker: i32) -> bool {
    image
        .broker(broker)
        .is_some_and(|b| b.is_eligible() && b.has_online_dir(&p.directory_of(broker)))
}

/// The first replica, in replica order, that is in `isr`, acceptable as leader of `p` and
/// not `exclude`.
pub fn choose_leader(
    image: &MetadataImage,
    p: &PartitionRegistration,
    replicas: &[i32],
    isr: &[i32],
    exclude: Option<i32>,
) -> i32 {
    replicas
        .iter()
        .copied()
        .find(|r| isr.contains(r) && Some(*r) != exclude && is_acceptable_leader(image, p, *r))
        .unwrap_or(NO_LEADER)
}

/// The first acceptable replica regardless of the ISR, for an unclean election.
pub fn choose_unclean_leader(
    image: &MetadataImage,
    p: &PartitionRegistration,
    replicas: &[i32],
    exclude: Option<i32>,
) -> i32 {
    replicas
        .iter()
        .copied()
        .find(|r| Some(*r) != exclude && is_acceptable_leader(image, p, *r))
        .unwrap_or(NO_LEADER)
}

/// Whether the topic may elect outside its ISR: its override, else the cluster-wide dynamic
/// broker default (Kafka's KRaft controller reads the same), else the controller's static one.
pub fn unclean_allowed(image: &MetadataImage, config: &ControllerConfig, topic: &str) -> bool {
    let cluster_default = || {
        image
            .resource_configs(super::records::RESOURCE_BROKER, "")
            .and_then(|m| m.get(UNCLEAN_LEADER_ELECTION_ENABLE))
            .map(String::as_str)
    };
    match image
        .topic_config(topic, UNCLEAN_LEADER_ELECTION_ENABLE)
        .or_else(cluster_default)
    {
        Some(v) => v.trim().eq_ignore_ascii_case("true"),
        None => config.unclean_leader_election_enable,
    }
}

/// Every partition as (topic name, topic id, partition, registration), cloned so that the
/// caller can push records while walking them.
pub fn all_partitions(
    image: &MetadataImage,
) -> Vec<(String, [u8; 16], i32, PartitionRegistration)> {
    image
        .topics
        .values()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|(p, reg)| (t.name.clone(), t.topic_id, *p, reg.clone()))
        })
        .collect()
}

/// A change of leader and/or ISR, or None if neither changes.
pub fn leader_isr_change(
    topic_id: [u8; 16],
    partition: i32,
    current: &PartitionRegistration,
    leader: i32,
    isr: Vec<i32>,
) -> Option<MetadataRecord> {
    if leader == current.leader && isr == current.isr {
        return None;
    }
    Some(MetadataRecord::PartitionChange {
        topic_id,
        partition,
        leader: (leader != current.leader).then_some(leader),
        isr: (isr != current.isr).then_some(isr),
        replicas: None,
        adding_replicas: None,
        removing_replicas: None,
        directories: None,
    })
}

/// Takes `broker` out of every ISR it is not the last member of and moves every leadership it
/// holds to another eligible ISR member, or to nobody (Kafka's `handleBrokerFenced` and
/// `handleBrokerInControlledShutdown`). With `allow_unclean`, a partition left without an ISR
/// leader elects any eligible replica where its topic allows it.
pub fn remove_broker_from_partitions(
    batch: &mut Batch,
    config: &ControllerConfig,
    broker: i32,
    allow_unclean: bool,
) {
    remove_replica_where(batch, config, broker, allow_unclean, |_, _, _| true)
}

/// [`remove_broker_from_partitions`] for the partitions `select` picks only (those whose
/// replica on `broker` sits in an offline log dir, KIP-858).
pub fn remove_replica_where(
    batch: &mut Batch,
    config: &ControllerConfig,
    broker: i32,
    allow_unclean: bool,
    select: impl Fn(&[u8; 16], i32, &PartitionRegistration) -> bool,
) {
    for (topic, topic_id, partition, p) in all_partitions(&batch.image) {
        if (!p.isr.contains(&broker) && p.leader != broker) || !select(&topic_id, partition, &p) {
            continue;
        }
        let mut isr = p.isr.clone();
        if isr.len() > 1 {
            isr.retain(|b| *b != broker);
        }
        let mut leader = p.leader;
        if leader == broker {
            leader = choose_leader(&batch.image, &p, &p.replicas, &isr, Some(broker));
            if leader == NO_LEADER && allow_unclean && unclean_allowed(&batch.image, config, &topic)
            {
                leader = choose_unclean_leader(&batch.image, &p, &p.replicas, Some(broker));
                if leader != NO_LEADER {
                    isr = vec![leader];
                }
            }
        }
        if let Some(r) = leader_isr_change(topic_id, partition, &p, leader, isr) {
            batch.push(r);
        }
    }
}

/// Gives every leaderless partition a leader if an eligible ISR member exists, or, where the
/// topic allows unclean election, any eligible replica (run when a broker is unfenced).
pub fn elect_leaderless(batch: &mut Batch, config: &ControllerConfig) {
    for (topic, topic_id, partition, p) in all_partitions(&batch.image) {
        if p.has_leader() {
            continue;
        }
        let mut isr = p.isr.clone();
        let mut leader = choose_leader(&batch.image, &p, &p.replicas, &isr, None);
        if leader == NO_LEADER && unclean_allowed(&batch.image, config, &topic) {
            leader = choose_unclean_leader(&batch.image, &p, &p.replicas, None);
            if leader != NO_LEADER {
                isr = vec![leader];
            }
        }
        if leader == NO_LEADER {
            continue;
        }
        if let Some(r) = leader_isr_change(topic_id, partition, &p, leader, isr) {
            batch.push(r);
        }
    }
}

/// Whether `broker` leads any partition.
pub fn leads_any(image: &MetadataImage, broker: i32) -> bool {
    image
        .topics
        .values()
        .any(|t| t.partitions.values().any(|p| p.leader == broker))
}
