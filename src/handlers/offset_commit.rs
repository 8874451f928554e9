//! OffsetCommit (key 8), versions 2-9: the group coordinator validates and appends the
//! offsets; the answer waits until they are replicated to the ISR of the
//! group's `__consumer_offsets` partition, so a committed offset survives a failover.
//! Partitions that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION before the
//! coordinator sees the request, as Kafka's `KafkaApis` does (v10's topic ids, answered
//! UNKNOWN_TOPIC_ID, are not served).
use super::authz::Authz;
use super::ConnectionContext;
use crate::controller::acls::operation;
use crate::error::ErrorCode;
use std::sync::Arc;

use super::unknown_partitions::{add_errors, add_unknown, split_refused, split_unknown};
use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_commit_request::OffsetCommitRequest;
use crate::protocol::messages::offset_commit_response::{
    OffsetCommitResponse, OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetCommitRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let mut request = request;
    let authz = Authz::new(&broker, &conn);
    if !authz.group(operation::READ, &request.group_id) {
        // Kafka: every partition fails when the group may not be read.
        let response = OffsetCommitResponse {
            topics: request
                .topics
                .iter()
                .map(|t| OffsetCommitResponseTopic {
                    name: t.name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| OffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
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
    let refused = split_refused(&mut request.topics, |name| {
        authz.topic(operation::READ, name)
    });
    let unknown = split_unknown(&broker.cluster.image(), &mut request.topics);
    let mut response = if request.topics.is_empty() {
        // Nothing left to commit: Kafka answers without asking the coordinator.
        OffsetCommitResponse::default()
    } else {
        let ctx = group_context(&header, &conn);
        broker.groups.offset_commit(&ctx, &request)
    };
    let nothing_to_store = request.topics.is_empty();
    add_errors(
        &mut response.topics,
        refused,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
    );
    add_unknown(&mut response.topics, unknown);
    if nothing_to_store {
        return ready(header, Some(response));
    }
    // Not known to be durable: the client must not take it as committed.
    super::after_group_write(broker, header, request.group_id, response, |r, code| {
        for t in r.topics.iter_mut() {
            for p in t.partitions.iter_mut().filter(|p| p.error_code == 0) {
                p.error_code = code.code();
            }
        }
    })
}
