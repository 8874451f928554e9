//! Tells the controller which log dir holds each of this broker's replicas (Kafka's
//! `AssignmentsManager`, KIP-858): every replica whose dir in the published image differs
//! from where its log is goes into an AssignReplicasToDirs request. That includes replicas of
//! a dir that failed while the controller still had them unassigned: naming the offline dir
//! is what makes the controller take them out of their ISRs and leaderships.
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::BrokerParts;
use super::ClusterContext;
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::messages::assign_replicas_to_dirs_request::{
    AssignReplicasToDirsRequest, DirectoryData, PartitionData, TopicData,
};
use crate::protocol::messages::assign_replicas_to_dirs_response::AssignReplicasToDirsResponse;

/// How often the image is compared with where the logs are.
const CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// An assignment sent and not yet visible in the image is not sent again sooner than this,
/// so a slow commit does not flood the controller.
const RESEND_AFTER_MS: i64 = 1_000;

/// A cap per request, as Kafka's `AssignmentsManager` batches them.
const MAX_ASSIGNMENTS_PER_REQUEST: usize = 2_250;

/// (topic id, partition) -> dir, of the replicas whose image dir is not where their log is.
fn pending_assignments(broker: &BrokerParts, cluster: &ClusterContext) -> Vec<(Uuid, i32, Uuid)> {
    let image = cluster.image();
    let local = broker.node_id;
    let mut out = Vec::new();
    for t in image.topics.values() {
        for (&p, reg) in &t.partitions {
            if !reg.replicas.contains(&local) {
                continue;
            }
            let Some(actual) = broker.replicas.replica_directory(&t.name, p) else {
                continue;
            };
            if actual.0 != reg.directory_of(local) {
                out.push((Uuid(t.topic_id), p, actual));
                if out.len() >= MAX_ASSIGNMENTS_PER_REQUEST {
                    return out;
                }
            }
        }
    }
    out
}

fn to_request(
    broker_id: i32,
    broker_epoch: i64,
    assignments: &[(Uuid, i32, Uuid)],
) -> AssignReplicasToDirsRequest {
    let mut by_dir: BTreeMap<[u8; 16], BTreeMap<[u8; 16], Vec<i32>>> = BTreeMap::new();
    for (topic_id, partition, dir) in assignments {
        by_dir
            .entry(dir.0)
            .or_default()
            .entry(topic_id.0)
            .or_default()
            .push(*partition);
    }
    AssignReplicasToDirsRequest {
        broker_id,
        broker_epoch,
        directories: by_dir
            .into_iter()
            .map(|(dir, topics)| DirectoryData {
                id: Uuid(dir),
                topics: topics
                    .into_iter()
                    .map(|(topic_id, partitions)| TopicData {
                        topic_id: Uuid(topic_id),
                        partitions: partitions
                            .into_iter()
                            .map(|partition_index| PartitionData {
                                partition_index,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Sends the assignments the image lacks until shutdown.
pub async fn run(
    broker: Arc<BrokerParts>,
    cluster: Arc<ClusterContext>,
    shutdown: CancellationToken,
) {
    let mut sent_at: HashMap<(Uuid, i32, Uuid), i64> = HashMap::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(CHECK_INTERVAL) => {}
        }
        let epoch = broker.replicas.broker_epoch().0;
        if epoch < 0 {
            continue;
        }
        let now = broker.now_ms();
        let pending = pending_assignments(&broker, &cluster);
        sent_at.retain(|k, _| pending.contains(k));
        let due: Vec<(Uuid, i32, Uuid)> = pending
            .into_iter()
            .filter(|k| sent_at.get(k).map_or(true, |t| now - t >= RESEND_AFTER_MS))
            .collect();
        if due.is_empty() {
            continue;
        }
        let request = to_request(broker.node_id, epoch, &due);
        let response: AssignReplicasToDirsResponse = match cluster
            .channel
            .call(crate::protocol::messages::assign_replicas_to_dirs_request::AssignReplicasToDirsRequest::API_KEY, 0, &request)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(error = %e, "AssignReplicasToDirs failed; will retry");
                continue;
            }
        };
        let code = ErrorCode::from_code(response.error_code);
        if code != ErrorCode::NONE {
            // STALE_BROKER_EPOCH while re-registering, NOT_CONTROLLER during a failover:
            // the next pass retries under the new epoch or controller.
            tracing::debug!(error = ?code, "AssignReplicasToDirs refused; will retry");
            continue;
        }
        for d in &response.directories {
            for t in &d.topics {
                for p in &t.partitions {
                    if p.error_code != 0 {
                        tracing::debug!(topic_id = %t.topic_id, partition = p.partition_index, error = p.error_code, "directory assignment refused");
                    }
                }
            }
        }
        tracing::info!(
            assignments = due.len(),
            "sent replica directory assignments to the controller"
        );
        for k in due {
            sent_at.insert(k, now);
        }
    }
}
