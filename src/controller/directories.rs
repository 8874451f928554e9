//! Which log dir each replica lives in, as the controller sees it (KIP-858, JBOD in KRaft):
//! the directory half of Kafka's `ReplicationControlManager` (`handleDirectoriesOffline`,
//! `handleAssignReplicasToDirs`), `ClusterControlManager.defaultDir` and `DirectoryId`'s
//! reserved ids.
//!
//! A broker registers its online dirs; each replica of a partition record names its dir, or
//! a reserved id until its broker tells the controller where it put it (AssignReplicasToDirs).
//! When a heartbeat reports dirs offline, the replicas assigned to them are treated as offline:
//! out of the ISR (never its last member) and out of leadership. A replica still unassigned
//! counts as online (Kafka's `DirectoryId.isOnline`); its broker's assignment naming the
//! offline dir is what takes it out. Sans-io like the rest of `controller`.
use super::controller_config::ControllerConfig;
use super::election::{remove_replica_where, Batch};
use super::image::MetadataImage;
use super::records::MetadataRecord;
use crate::error::ErrorCode;

/// Kafka's `DirectoryId.UNASSIGNED`: the broker has not said where the replica is yet.
pub const UNASSIGNED: [u8; 16] = [0; 16];
/// Kafka's `DirectoryId.LOST`: the replica's dir is known to be gone.
pub const LOST: [u8; 16] = reserved_id(1);
/// Kafka's `DirectoryId.MIGRATING`: the broker registered no dirs (before KIP-858).
pub const MIGRATING: [u8; 16] = reserved_id(2);

/// The reserved id with low bits `n` (most significant 64 bits zero, as Kafka's `Uuid`
/// writes them first).
const fn reserved_id(n: u8) -> [u8; 16] {
    let mut id = [0u8; 16];
    id[15] = n;
    id
}

/// Kafka reserves the ids whose high 64 bits are zero and low 64 bits below 100: no real
/// dir may use one.
pub fn is_reserved(dir: &[u8; 16]) -> bool {
    let mut low = [0u8; 8];
    low.copy_from_slice(&dir[8..]);
    dir[..8].iter().all(|b| *b == 0) && u64::from_be_bytes(low) < 100
}

/// The dir a new replica on `broker` starts in (Kafka's `ClusterControlManager.defaultDir`):
/// the broker's only dir if it has one, MIGRATING if it registered none, else UNASSIGNED
/// until the broker assigns it.
pub fn default_dir(image: &MetadataImage, broker: i32) -> [u8; 16] {
    match image.broker(broker).map(|b| b.log_dirs.as_slice()) {
        None => UNASSIGNED,
        Some([]) => MIGRATING,
        Some([only]) => *only,
        Some(_) => UNASSIGNED,
    }
}

/// The heartbeat's `offline_log_dirs` (Kafka's `handleDirectoriesOffline`): the dirs still
/// registered online that the broker now reports offline leave its registration, and every
/// partition whose replica on this broker is assigned to one of them loses that replica
/// from its ISR and leadership, electing from the rest of the ISR (uncleanly only where the
/// topic allows it). Repeating the same report changes nothing.
pub fn handle_directories_offline(
    batch: &mut Batch,
    config: &ControllerConfig,
    broker_id: i32,
    broker_epoch: i64,
    offline_dirs: &[[u8; 16]],
) {
    let Some(registration) = batch.image.broker(broker_id) else {
        return;
    };
    let newly_offline: Vec<[u8; 16]> = registration
        .log_dirs
        .iter()
        .copied()
        .filter(|d| offline_dirs.contains(d))
        .collect();
    if newly_offline.is_empty() {
        return;
    }
    let still_online: Vec<[u8; 16]> = registration
        .log_dirs
        .iter()
        .copied()
        .filter(|d| !newly_offline.contains(d))
        .collect();
    tracing::warn!(
        broker_id,
        offline = newly_offline.len(),
        online = still_online.len(),
        "log dirs of a broker marked offline"
    );
    // The registration change first, so that the elections below already see the dirs
    // offline and cannot pick another replica of this broker in one of them.
    batch.push(MetadataRecord::BrokerRegistrationChange {
        broker_id,
        broker_epoch,
        log_dirs: still_online,
    });
    remove_replica_where(batch, config, broker_id, true, |_, _, p| {
        newly_offline.contains(&p.directory_of(broker_id))
    });
}

/// The replicas one AssignReplicasToDirs entry places in a dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirAssignment {
    pub dir: [u8; 16],
    /// (topic id, partitions).
    pub topics: Vec<([u8; 16], Vec<i32>)>,
}

/// An AssignReplicasToDirs request (API 73, KIP-858).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignReplicasToDirsRequest {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub directories: Vec<DirAssignment>,
}

/// Per dir, per topic id, the error of each partition.
pub type AssignReplicasToDirsResult = Vec<([u8; 16], Vec<([u8; 16], Vec<(i32, ErrorCode)>)>)>;

/// Records where a broker put its replicas (Kafka's `handleAssignReplicasToDirs`): each
/// known replica of the broker gets the dir in a partition change; a replica assigned to a
/// dir the broker reported offline then leaves its ISR and leadership as in
/// [`handle_directories_offline`]. An unknown or stale broker epoch refuses the whole request
/// with STALE_BROKER_EPOCH; an unknown topic id answers UNKNOWN_TOPIC_ID, an unknown partition
/// UNKNOWN_TOPIC_OR_PARTITION and a partition without a replica on the broker
/// NOT_LEADER_OR_FOLLOWER, per partition.
pub fn assign_replicas_to_dirs(
    image: &MetadataImage,
    config: &ControllerConfig,
    request: &AssignReplicasToDirsRequest,
) -> (
    Vec<MetadataRecord>,
    Result<AssignReplicasToDirsResult, ErrorCode>,
) {
    let broker = request.broker_id;
    let Some(registration) = image.broker(broker) else {
        return (Vec::new(), Err(ErrorCode::STALE_BROKER_EPOCH));
    };
    if registration.broker_epoch != request.broker_epoch {
        return (Vec::new(), Err(ErrorCode::STALE_BROKER_EPOCH));
    }
    let mut batch = Batch::new(image);
    let mut offline_assigned: Vec<([u8; 16], i32)> = Vec::new();
    let mut results = Vec::with_capacity(request.directories.len());
    for assignment in &request.directories {
        let dir_offline = !registration.has_online_dir(&assignment.dir);
        let mut topic_results = Vec::with_capacity(assignment.topics.len());
        for (topic_id, partitions) in &assignment.topics {
            let mut partition_results = Vec::with_capacity(partitions.len());
            for &partition in partitions {
                let code = match batch.image.topic_by_id(topic_id) {
                    None => ErrorCode::UNKNOWN_TOPIC_ID,
                    Some(t) => match t.partitions.get(&partition) {
                        None => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                        Some(p) => match p.replicas.iter().position(|r| *r == broker) {
                            None => ErrorCode::NOT_LEADER_OR_FOLLOWER,
                            Some(i) => {
                                if p.directory_of(broker) != assignment.dir {
                                    let mut directories = p.directories_for(&p.replicas);
                                    directories[i] = assignment.dir;
                                    batch.push(MetadataRecord::PartitionChange {
                                        topic_id: *topic_id,
                                        partition,
                                        leader: None,
                                        isr: None,
                                        replicas: None,
                                        adding_replicas: None,
                                        removing_replicas: None,
                                        directories: Some(directories),
                                    });
                                }
                                if dir_offline {
                                    offline_assigned.push((*topic_id, partition));
                                }
                                ErrorCode::NONE
                            }
                        },
                    },
                };
                partition_results.push((partition, code));
            }
            topic_results.push((*topic_id, partition_results));
        }
        results.push((assignment.dir, topic_results));
    }
    if !offline_assigned.is_empty() {
        tracing::warn!(
            broker_id = broker,
            partitions = offline_assigned.len(),
            "replicas assigned to an offline log dir"
        );
        remove_replica_where(&mut batch, config, broker, true, |id, partition, _| {
            offline_assigned.contains(&(*id, partition))
        });
    }
    (batch.records, Ok(results))
}
