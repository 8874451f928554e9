//! WriteTxnMarkers (key 27), versions 0-2 (v2 carries the producer's transaction version,
//! KIP-1228, for the strict epoch check of version 2 markers): a transaction coordinator (on another broker of the
//! cluster, or a tool) asks this broker to append COMMIT/ABORT control batches to partitions it
//! leads. Mirrors Kafka's `KafkaApis.handleWriteTxnMarkersRequest`: per partition,
//! UNKNOWN_TOPIC_OR_PARTITION for a topic or partition that does not exist,
//! NOT_LEADER_OR_FOLLOWER for one this broker does not lead, INVALID_PRODUCER_EPOCH for a
//! producer epoch older than the partition's, TRANSACTION_COORDINATOR_FENCED for a coordinator
//! epoch older than the last marker's; markers go through the same partition path as the
//! local coordinator's ([`crate::coordinator::offsets_topic::write_marker_to_partition`]), including the
//! completion of transactional offsets on `__consumer_offsets`. In a cluster a partition's
//! marker is confirmed once replicated to its ISR.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::{later, ready, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::write_marker_to_partition;
use crate::coordinator::txn::MarkerSpec;
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::write_txn_markers_request::WriteTxnMarkersRequest;
use crate::protocol::messages::write_txn_markers_response::*;
use crate::replica::Partition;

/// How long a marker may wait for the ISR (under the sender's 10 s request timeout).
const MARKER_REPLICATION_TIMEOUT_MS: u64 = 5_000;

/// A marker written here that must reach the ISR before it is confirmed (in a cluster):
/// (marker, topic, partition) positions in the response, the replica, the offset after the
/// marker and the leader epoch it was written under.
struct MarkerWait {
    at: (usize, usize, usize),
    replica: Arc<Partition>,
    required_offset: i64,
    leader_epoch: i32,
}

/// The error code of one partition's marker, and the marker's offset if it was written.
fn write_one(
    broker: &Broker,
    topic: &str,
    index: i32,
    marker: MarkerSpec,
    now_ms: i64,
) -> (i16, Option<i64>) {
    match write_marker_to_partition(
        &broker.replicas,
        &broker.groups,
        topic,
        index,
        marker,
        now_ms,
    ) {
        Ok(Some(offset)) => (ErrorCode::NONE.code(), Some(offset)),
        Ok(None) => match broker.cluster.topic(topic) {
            // The partition exists in the cluster but is not led here.
            Some(meta) if index >= 0 && index < meta.partitions => {
                (ErrorCode::NOT_LEADER_OR_FOLLOWER.code(), None)
            }
            _ => (ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code(), None),
        },
        Err(e) => (e.code().code(), None),
    }
}

fn handle_with_waits(
    broker: &Broker,
    request: WriteTxnMarkersRequest,
) -> (WriteTxnMarkersResponse, Vec<MarkerWait>) {
    let now = broker.now_ms();
    let mut waits = Vec::new();
    let markers = request
        .markers
        .into_iter()
        .enumerate()
        .map(|(mi, m)| {
            let marker = MarkerSpec {
                producer_id: m.producer_id,
                producer_epoch: m.producer_epoch,
                commit: m.transaction_result,
                coordinator_epoch: m.coordinator_epoch,
                transaction_version: m.transaction_version as i16,
            };
            let topics = m
                .topics
                .into_iter()
                .enumerate()
                .map(|(ti, t)| WritableTxnMarkerTopicResult {
                    partitions: t
                        .partition_indexes
                        .iter()
                        .enumerate()
                        .map(|(pi, &i)| {
                            let (error_code, offset) = write_one(broker, &t.name, i, marker, now);
                            if let (Some(offset), Some(replica)) =
                                (offset, broker.replicas.get(&t.name, i))
                            {
                                waits.push(MarkerWait {
                                    at: (mi, ti, pi),
                                    leader_epoch: replica.leader_epoch(),
                                    replica,
                                    required_offset: offset + 1,
                                });
                            }
                            WritableTxnMarkerPartitionResult {
                                partition_index: i,
                                error_code,
                                ..Default::default()
                            }
                        })
                        .collect(),
                    name: t.name,
                    ..Default::default()
                })
                .collect();
            WritableTxnMarkerResult {
                producer_id: m.producer_id,
                topics,
                ..Default::default()
            }
        })
        .collect();
    (
        WriteTxnMarkersResponse {
            markers,
            ..Default::default()
        },
        waits,
    )
}

pub fn handle(broker: &Broker, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
    handle_with_waits(broker, request).0
}

/// In a cluster a marker is confirmed only once replicated, as Kafka appends markers with
/// required acks -1: the coordinator writes its Complete record after every confirmation and
/// never sends the marker again, so a marker lost with its leader would leave the
/// transaction open on that partition for good.
pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: WriteTxnMarkersRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: CLUSTER_ACTION on the cluster (a transaction coordinator's request), every
    // partition CLUSTER_AUTHORIZATION_FAILED otherwise.
    if !Authz::new(&broker, &conn).cluster(operation::CLUSTER_ACTION) {
        let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code();
        let response = WriteTxnMarkersResponse {
            markers: request
                .markers
                .iter()
                .map(|m| WritableTxnMarkerResult {
                    producer_id: m.producer_id,
                    topics: m
                        .topics
                        .iter()
                        .map(|t| WritableTxnMarkerTopicResult {
                            name: t.name.clone(),
                            partitions: t
                                .partition_indexes
                                .iter()
                                .map(|p| WritableTxnMarkerPartitionResult {
                                    partition_index: *p,
                                    error_code: code,
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
        };
        return ready(header, Some(response));
    }
    let (mut response, waits) = handle_with_waits(&broker, request);
    if waits.is_empty() {
        return ready(header, Some(response));
    }
    later(header, async move {
        // One deadline for every marker: waits one after another must not add up past the
        // sender's own request timeout, or it re-sends markers already written.
        let deadline = tokio::time::Instant::now()
            + std::time::Duration::from_millis(MARKER_REPLICATION_TIMEOUT_MS);
        for w in waits {
            let outcome = broker
                .replicas
                .wait_acks_all_until(&w.replica, w.required_offset, w.leader_epoch, deadline)
                .await;
            let code = match outcome {
                Some(Ok(())) => continue,
                Some(Err(e)) => e.code(),
                None => ErrorCode::REQUEST_TIMED_OUT,
            };
            let (mi, ti, pi) = w.at;
            if let Some(p) = response
                .markers
                .get_mut(mi)
                .and_then(|m| m.topics.get_mut(ti))
                .and_then(|t| t.partitions.get_mut(pi))
            {
                p.error_code = code.code();
            }
        }
        Some(response)
    })
}
