//! DeleteRecords (key 21), versions 0-2: moves a partition's log start offset forward (-1
//! means the high watermark); offsets past the high watermark are OFFSET_OUT_OF_RANGE.
//! Internal topics are refused, as Kafka's `ReplicaManager` refuses them.
use super::common::authz::Authz;
use super::common::unknown_partitions::{add_errors, split_refused};
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::common::internal_topics::{is_known_internal, REFUSED};
use super::{ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_records_request::DeleteRecordsRequest;
use crate::protocol::messages::delete_records_response::*;

pub fn handle(broker: &Broker, request: DeleteRecordsRequest) -> DeleteRecordsResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|t| DeleteRecordsTopicResult {
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut r = DeleteRecordsPartitionResult {
                        partition_index: p.partition_index,
                        low_watermark: -1,
                        ..Default::default()
                    };
                    if is_known_internal(&t.name) {
                        r.error_code = REFUSED.code();
                        return r;
                    }
                    match broker.replicas.get(&t.name, p.partition_index) {
                        None => {
                            r.error_code = broker
                                .missing_partition_error(&t.name, p.partition_index)
                                .code()
                        }
                        Some(partition) => match partition.delete_records_before(p.offset) {
                            Ok(low) => r.low_watermark = low,
                            Err(e) => r.error_code = e.code().code(),
                        },
                    }
                    r
                })
                .collect(),
            name: t.name,
            ..Default::default()
        })
        .collect();
    DeleteRecordsResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DeleteRecordsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: DELETE on each topic, TOPIC_AUTHORIZATION_FAILED for its partitions otherwise.
    let mut request = request;
    let authz = Authz::new(&broker, &conn);
    let refused = split_refused(&mut request.topics, |name| {
        authz.topic(operation::DELETE, name)
    });
    let mut response = handle(&broker, request);
    add_errors(
        &mut response.topics,
        refused,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
    );
    ready(header, Some(response))
}
