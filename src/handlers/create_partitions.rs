//! CreatePartitions (key 37), versions 0-3: grows a topic's partition count; shrinking or
//! keeping the count is INVALID_PARTITIONS, as Kafka.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_partitions_request::CreatePartitionsRequest;
use crate::protocol::messages::create_partitions_response::*;

pub fn handle(broker: &Broker, request: CreatePartitionsRequest) -> CreatePartitionsResponse {
    let results = request
        .topics
        .iter()
        .map(|t| {
            let mut r = CreatePartitionsTopicResult {
                name: t.name.clone(),
                ..Default::default()
            };
            let mut fail = |code: ErrorCode, msg: String| {
                r.error_code = code.code();
                r.error_message = Some(msg);
                r.clone()
            };
            let Some(meta) = broker.metadata.topic(&t.name) else {
                return fail(
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("The topic '{}' does not exist.", t.name),
                );
            };
            if t.count <= meta.partitions {
                return fail(
                    ErrorCode::INVALID_PARTITIONS,
                    format!(
                        "Topic currently has {} partitions, which is higher than the requested {}.",
                        meta.partitions, t.count
                    ),
                );
            }
            if let Some(assignments) = &t.assignments {
                if assignments.len() as i32 != t.count - meta.partitions {
                    return fail(
                        ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                        "Assignment count does not match the partition increase".into(),
                    );
                }
                if assignments
                    .iter()
                    .any(|a| a.broker_ids.iter().any(|b| *b != broker.node_id))
                {
                    return fail(
                        ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                        "Assignment names unknown brokers".into(),
                    );
                }
            }
            if request.validate_only {
                return r;
            }
            if let Err(e) = broker.metadata.set_partition_count(&t.name, t.count) {
                return fail(ErrorCode::KAFKA_STORAGE_ERROR, e.to_string());
            }
            if let Some(meta) = broker.metadata.topic(&t.name) {
                if let Err(e) = broker.open_partitions(&meta) {
                    return fail(e.code, e.message);
                }
            }
            r
        })
        .collect();
    CreatePartitionsResponse {
        throttle_time_ms: 0,
        results,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: CreatePartitionsRequest,
    _peer: SocketAddr,
) -> ResponseFuture {
    let response = handle(&broker, request);
    ready(header, Some(response))
}
