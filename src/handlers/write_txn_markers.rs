//! WriteTxnMarkers (key 27), versions 0-1: a transaction coordinator (on another broker of the
//! cluster, or a tool) asks this broker to append COMMIT/ABORT control batches to partitions it
//! leads. Mirrors Kafka's `KafkaApis.handleWriteTxnMarkersRequest`: per partition,
//! UNKNOWN_TOPIC_OR_PARTITION for a topic or partition that does not exist,
//! NOT_LEADER_OR_FOLLOWER for one this broker does not lead, INVALID_PRODUCER_EPOCH for a
//! producer epoch older than the partition's, TRANSACTION_COORDINATOR_FENCED for a coordinator
//! epoch older than the last marker's; markers go through the same partition path as the
//! local coordinator's ([`super::offsets_topic::write_marker_to_partition`]), including the
//! completion of transactional offsets on `__consumer_offsets`.
use std::net::SocketAddr;
use std::sync::Arc;

use super::offsets_topic::{write_marker_to_partition, MarkerToWrite};
use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::write_txn_markers_request::WriteTxnMarkersRequest;
use crate::protocol::messages::write_txn_markers_response::*;

/// The error code of one partition's marker.
fn write_one(broker: &Broker, topic: &str, index: i32, marker: MarkerToWrite, now_ms: i64) -> i16 {
    match write_marker_to_partition(
        &broker.replicas,
        &broker.groups,
        topic,
        index,
        marker,
        now_ms,
    ) {
        Ok(Some(_)) => ErrorCode::NONE.code(),
        Ok(None) => match broker.metadata.topic(topic) {
            // The partition exists in the cluster but is not led here.
            Some(meta) if index >= 0 && index < meta.partitions => {
                ErrorCode::NOT_LEADER_OR_FOLLOWER.code()
            }
            _ => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code(),
        },
        Err(e) => e.code().code(),
    }
}

pub fn handle(broker: &Broker, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
    let now = broker.now_ms();
    let markers = request
        .markers
        .into_iter()
        .map(|m| {
            let marker = MarkerToWrite {
                producer_id: m.producer_id,
                producer_epoch: m.producer_epoch,
                commit: m.transaction_result,
                coordinator_epoch: m.coordinator_epoch,
            };
            let topics = m
                .topics
                .into_iter()
                .map(|t| WritableTxnMarkerTopicResult {
                    partitions: t
                        .partition_indexes
                        .iter()
                        .map(|&i| WritableTxnMarkerPartitionResult {
                            partition_index: i,
                            error_code: write_one(broker, &t.name, i, marker, now),
                            ..Default::default()
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
    broker.replicas.notify_appended();
    WriteTxnMarkersResponse {
        markers,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: WriteTxnMarkersRequest,
    _peer: SocketAddr,
) -> ResponseFuture {
    let response = handle(&broker, request);
    ready(header, Some(response))
}
