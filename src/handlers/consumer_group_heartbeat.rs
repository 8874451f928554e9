//! ConsumerGroupHeartbeat (API 68) v0-1, KIP-848: the consumer group protocol's only
//! membership request (join, heartbeat, reconcile, leave). In a cluster the answer waits
//! until the group's records reached the ISR of its `__consumer_offsets` partition.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::{group_context, later, ready, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::OFFSETS_TOPIC;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;
use crate::protocol::messages::consumer_group_heartbeat_response::ConsumerGroupHeartbeatResponse;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ConsumerGroupHeartbeatRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // With `group.version` 0 the consumer protocol is off (Kafka's
    // `isConsumerGroupProtocolEnabled`): UNSUPPORTED_VERSION, and the client falls back.
    if !broker.cluster.image().features.consumer_protocol_enabled() {
        let code = ErrorCode::UNSUPPORTED_VERSION;
        let response = ConsumerGroupHeartbeatResponse {
            error_code: code.code(),
            error_message: Some(code.message()),
            ..Default::default()
        };
        return super::ready(header, Some(response));
    }
    let authz = Authz::new(&broker, &conn);
    // Kafka 4.x (KAFKA-18813): READ on the group, then DESCRIBE on every subscribed topic
    // named in the request; a member may not learn of topics it cannot describe.
    let refusal = if !authz.group(operation::READ, &request.group_id) {
        Some(ErrorCode::GROUP_AUTHORIZATION_FAILED)
    } else if request
        .subscribed_topic_names
        .iter()
        .flatten()
        .any(|t| !authz.topic(operation::DESCRIBE, t))
    {
        Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
    } else {
        None
    };
    if let Some(code) = refusal {
        let response = ConsumerGroupHeartbeatResponse {
            error_code: code.code(),
            error_message: Some(code.message()),
            ..Default::default()
        };
        return ready(header, Some(response));
    }
    let ctx = group_context(&header, &conn);
    let topics = broker.topics_view();
    let response = broker
        .groups
        .consumer_group_heartbeat(&ctx, &request, &topics);
    if response.error_code != 0 {
        return ready(header, Some(response));
    }
    later(header, async move {
        let partition = broker.groups.partition_for(&request.group_id);
        match broker.wait_replicated(OFFSETS_TOPIC, partition).await {
            Ok(()) => Some(response),
            // As Kafka answers a failed write: the error alone; the member retries with the
            // epoch it has.
            Err(code) => Some(ConsumerGroupHeartbeatResponse {
                error_code: code.code(),
                ..Default::default()
            }),
        }
    })
}
