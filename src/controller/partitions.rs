//! Partition state changes asked for by brokers and admins (the partition half of Kafka's
//! `ReplicationControlManager`): AlterPartition from leaders (KIP-497, with the KIP-903
//! broker-epoch check), ElectLeaders (KIP-460) and partition reassignment (KIP-455), whose
//! completion happens when the target replicas have all joined the ISR.
use std::collections::BTreeSet;

use super::controller_config::ControllerConfig;
use super::election::{choose_leader, choose_unclean_leader, is_acceptable_leader, Batch};
use super::image::{MetadataImage, PartitionRegistration};
use super::records::{MetadataRecord, NO_LEADER};
use crate::error::ErrorCode;
use crate::replica::{AlterPartition, AlterPartitionError, BrokerEpoch};

/// The replica order, ISR and leader a partition gets when its reassignment is complete:
/// every target replica is in the ISR (Kafka's `PartitionReassignmentReplicas
/// .maybeCompleteReassignment`), or None if it is not complete yet.
fn complete_reassignment(
    image: &MetadataImage,
    p: &PartitionRegistration,
    replicas: &[i32],
    isr: &[i32],
    leader: i32,
    removing: &[i32],
) -> Option<(Vec<i32>, Vec<i32>, i32)> {
    let target: Vec<i32> = replicas
        .iter()
        .copied()
        .filter(|r| !removing.contains(r))
        .collect();
    let target_isr: Vec<i32> = isr
        .iter()
        .copied()
        .filter(|r| !removing.contains(r))
        .collect();
    if target_isr.is_empty() || !target.iter().all(|r| target_isr.contains(r)) {
        return None;
    }
    let leader = if target_isr.contains(&leader) && is_acceptable_leader(image, p, leader) {
        leader
    } else {
        choose_leader(image, p, &target, &target_isr, None)
    };
    Some((target, target_isr, leader))
}

/// The full state change of a partition, every field stated.
fn full_change(topic_id: [u8; 16], partition: i32, p: &PartitionRegistration) -> MetadataRecord {
    MetadataRecord::PartitionChange {
        topic_id,
        partition,
        leader: Some(p.leader),
        isr: Some(p.isr.clone()),
        replicas: Some(p.replicas.clone()),
        adding_replicas: Some(p.adding_replicas.clone()),
        removing_replicas: Some(p.removing_replicas.clone()),
        directories: Some(p.directories.clone()),
    }
}

/// Ends a reassignment whose target replicas are all in the ISR: the replica set becomes the
/// target (and leadership moves if the leader was being removed).
fn finish_reassignment_if_complete(image: &MetadataImage, next: &mut PartitionRegistration) {
    if !next.is_reassigning() {
        return;
    }
    if let Some((replicas, isr, leader)) = complete_reassignment(
        image,
        next,
        &next.replicas,
        &next.isr,
        next.leader,
        &next.removing_replicas,
    ) {
        next.directories = next.directories_for(&replicas);
        next.replicas = replicas;
        next.isr = isr;
        next.leader = leader;
        next.adding_replicas.clear();
        next.removing_replicas.clear();
    }
}

/// Answers AlterPartition requests in order; each accepted one becomes a PartitionChange and
/// its result is the partition's new registration.
pub fn alter_partition(
    image: &MetadataImage,
    requests: &[AlterPartition],
) -> (
    Vec<MetadataRecord>,
    Vec<Result<PartitionRegistration, AlterPartitionError>>,
) {
    let mut batch = Batch::new(image);
    let mut results = Vec::with_capacity(requests.len());
    for request in requests {
        let result = alter_one(&batch.image, request);
        results.push(match result {
            Ok(record) => {
                batch.push(record);
                batch
                    .image
                    .partition(&request.topic, request.partition)
                    .cloned()
                    .ok_or(AlterPartitionError::UnknownTopicOrPartition)
            }
            Err(e) => Err(e),
        });
    }
    (batch.records, results)
}

fn alter_one(
    image: &MetadataImage,
    request: &AlterPartition,
) -> Result<MetadataRecord, AlterPartitionError> {
    let (Some(topic), Some(p)) = (
        image.topic(&request.topic),
        image.partition(&request.topic, request.partition),
    ) else {
        return Err(AlterPartitionError::UnknownTopicOrPartition);
    };
    // An older epoch: the sender was deposed. A newer one: this controller's image is behind
    // what the sender saw, which Kafka answers the same way as a wrong leader.
    if request.leader_epoch.0 < p.leader_epoch {
        return Err(AlterPartitionError::FencedLeaderEpoch);
    }
    if request.leader_epoch.0 > p.leader_epoch || p.leader != request.leader.0 {
        return Err(AlterPartitionError::NotLeaderOrFollower);
    }
    if request.partition_epoch.0 != p.partition_epoch {
        return Err(AlterPartitionError::InvalidUpdateVersion);
    }
    let new_isr = request.isr_ids();
    let new_isr: Vec<i32> = new_isr.iter().map(|b| b.0).collect();
    let distinct: BTreeSet<i32> = new_isr.iter().copied().collect();
    if distinct.len() != new_isr.len()
        || !new_isr.iter().all(|b| p.replicas.contains(b))
        || !new_isr.contains(&p.leader)
    {
        return Err(AlterPartitionError::InvalidRequest);
    }
    // KIP-903: every member must be registered, unfenced, not shutting down, and the
    // incarnation the leader saw fetching; KIP-858: its replica not in a dir it reported
    // offline.
    for m in &request.new_isr {
        let eligible = image.broker(m.broker.0).is_some_and(|r| {
            r.is_eligible()
                && r.has_online_dir(&p.directory_of(m.broker.0))
                && (m.broker_epoch == BrokerEpoch::UNKNOWN || m.broker_epoch.0 == r.broker_epoch)
        });
        if !eligible {
            return Err(AlterPartitionError::IneligibleReplica);
        }
    }
    let mut next = p.clone();
    next.isr = new_isr;
    finish_reassignment_if_complete(image, &mut next);
    Ok(full_change(topic.topic_id, request.partition, &next))
}

/// Kafka's ElectionType.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    /// Move leadership to the first replica, if it is in the ISR and eligible.
    Preferred,
    /// Give a leaderless partition a leader, outside the ISR if need be.
    Unclean,
}

impl ElectionType {
    pub fn from_i8(v: i8) -> Option<ElectionType> {
        match v {
            0 => Some(ElectionType::Preferred),
            1 => Some(ElectionType::Unclean),
            _ => None,
        }
    }
}

/// ElectLeaders: the error of each (topic, partition), NONE where a leader was elected.
pub fn elect_leaders(
    image: &MetadataImage,
    election_type: ElectionType,
    partitions: &[(String, i32)],
) -> (Vec<MetadataRecord>, Vec<(String, i32, ErrorCode)>) {
    let mut batch = Batch::new(image);
    let mut results = Vec::with_capacity(partitions.len());
    for (topic, partition) in partitions {
        let (Some(t), Some(p)) = (
            batch.image.topic(topic),
            batch.image.partition(topic, *partition),
        ) else {
            results.push((
                topic.clone(),
                *partition,
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            ));
            continue;
        };
        let topic_id = t.topic_id;
        let mut next = p.clone();
        let code = match election_type {
            ElectionType::Preferred => {
                let preferred = p.replicas.first().copied().unwrap_or(NO_LEADER);
                if p.leader == preferred {
                    ErrorCode::ELECTION_NOT_NEEDED
                } else if p.isr.contains(&preferred)
                    && is_acceptable_leader(&batch.image, p, preferred)
                {
                    next.leader = preferred;
                    ErrorCode::NONE
                } else {
                    ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE
                }
            }
            ElectionType::Unclean => {
                if p.has_leader() {
                    ErrorCode::ELECTION_NOT_NEEDED
                } else {
                    let clean = choose_leader(&batch.image, p, &p.replicas, &p.isr, None);
                    let unclean = choose_unclean_leader(&batch.image, p, &p.replicas, None);
                    if clean != NO_LEADER {
                        next.leader = clean;
                        ErrorCode::NONE
                    } else if unclean != NO_LEADER {
                        next.leader = unclean;
                        next.isr = vec![unclean];
                        ErrorCode::NONE
                    } else {
                        ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE
                    }
                }
            }
        };
        if code == ErrorCode::NONE {
            batch.push(full_change(topic_id, *partition, &next));
        }
        results.push((topic.clone(), *partition, code));
    }
    (batch.records, results)
}

/// One entry of AlterPartitionReassignments: a target replica list, or None to cancel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignmentRequest {
    pub topic: String,
    pub partition: i32,
    pub target: Option<Vec<i32>>,
    /// KIP-860 (v1): false refuses a target whose replica count differs from the partition's.
    pub allow_replication_factor_change: bool,
}

/// (topic, partition, error, message) of one reassignment request.
pub type ReassignmentResult = (String, i32, ErrorCode, Option<String>);

/// Starts, replaces or cancels reassignments (KIP-455). The replicas become the target
/// followed by the original replicas not in it; `adding` = target − original, `removing` =
/// original − target. A reassignment whose target is already in the ISR completes at once.
pub fn alter_partition_reassignments(
    image: &MetadataImage,
    _config: &ControllerConfig,
    requests: &[ReassignmentRequest],
) -> (Vec<MetadataRecord>, Vec<ReassignmentResult>) {
    let mut batch = Batch::new(image);
    let mut results = Vec::with_capacity(requests.len());
    for r in requests {
        match reassign_one(&batch.image, r) {
            Ok(record) => {
                batch.push(record);
                results.push((r.topic.clone(), r.partition, ErrorCode::NONE, None));
            }
            Err((code, m)) => results.push((r.topic.clone(), r.partition, code, Some(m))),
        }
    }
    (batch.records, results)
}

fn reassign_one(
    image: &MetadataImage,
    request: &ReassignmentRequest,
) -> Result<MetadataRecord, (ErrorCode, String)> {
    let (Some(topic), Some(p)) = (
        image.topic(&request.topic),
        image.partition(&request.topic, request.partition),
    ) else {
        return Err((
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            "unknown partition".into(),
        ));
    };
    // The assignment before any reassignment in progress: replacing or cancelling one starts
    // from it.
    let original: Vec<i32> = p
        .replicas
        .iter()
        .copied()
        .filter(|r| !p.adding_replicas.contains(r))
        .collect();
    let target = match &request.target {
        Some(t) => {
            let distinct: BTreeSet<i32> = t.iter().copied().collect();
            if t.is_empty() || distinct.len() != t.len() {
                return Err((
                    ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                    "target replicas are empty or repeat a broker".into(),
                ));
            }
            if let Some(b) = t.iter().find(|b| image.broker(**b).is_none()) {
                return Err((
                    ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                    format!("broker {b} is not registered"),
                ));
            }
            // Against the assignment before any reassignment in progress, as Kafka counts it.
            if !request.allow_replication_factor_change && t.len() != original.len() {
                return Err((
                    ErrorCode::INVALID_REPLICATION_FACTOR,
                    format!(
                        "The replication factor is changed from {} to {}",
                        original.len(),
                        t.len()
                    ),
                ));
            }
            t.clone()
        }
        None if !p.is_reassigning() => {
            return Err((
                ErrorCode::NO_REASSIGNMENT_IN_PROGRESS,
                "no reassignment in progress".into(),
            ))
        }
        None => original.clone(),
    };
    let mut replicas = target.clone();
    replicas.extend(original.iter().copied().filter(|r| !target.contains(r)));
    let adding: Vec<i32> = target
        .iter()
        .copied()
        .filter(|r| !original.contains(r))
        .collect();
    let removing: Vec<i32> = original
        .iter()
        .copied()
        .filter(|r| !target.contains(r))
        .collect();
    let isr: Vec<i32> = p
        .isr
        .iter()
        .copied()
        .filter(|r| replicas.contains(r))
        .collect();
    if isr.is_empty() {
        return Err((
            ErrorCode::REASSIGNMENT_IN_PROGRESS,
            "no replica of the resulting assignment is in the ISR".into(),
        ));
    }
    let directories = p.directories_for(&replicas);
    let mut next = PartitionRegistration {
        replicas,
        isr,
        leader: p.leader,
        leader_epoch: p.leader_epoch,
        partition_epoch: p.partition_epoch,
        adding_replicas: adding,
        removing_replicas: removing,
        directories,
    };
    if !next.isr.contains(&next.leader) {
        next.leader = choose_leader(image, p, &next.replicas, &next.isr, None);
    }
    finish_reassignment_if_complete(image, &mut next);
    Ok(full_change(topic.topic_id, request.partition, &next))
}

/// One ongoing reassignment, as ListPartitionReassignments reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReassignmentListing {
    pub topic: String,
    pub partition: i32,
    pub replicas: Vec<i32>,
    pub adding_replicas: Vec<i32>,
    pub removing_replicas: Vec<i32>,
}

/// Every reassignment in progress, by topic then partition.
pub fn list_partition_reassignments(image: &MetadataImage) -> Vec<ReassignmentListing> {
    image
        .topics
        .values()
        .flat_map(|t| {
            t.partitions
                .iter()
                .filter(|(_, p)| p.is_reassigning())
                .map(|(i, p)| ReassignmentListing {
                    topic: t.name.clone(),
                    partition: *i,
                    replicas: p.replicas.clone(),
                    adding_replicas: p.adding_replicas.clone(),
                    removing_replicas: p.removing_replicas.clone(),
                })
        })
        .collect()
}
