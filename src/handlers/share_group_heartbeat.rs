//! ShareGroupHeartbeat (API 76) v1, KIP-932: a share-group member's join, heartbeat and leave.
//! As Kafka's `handleShareGroupHeartbeat`: UNSUPPORTED_VERSION while `share.version` is 0,
//! READ on the group, DESCRIBE on every subscribed topic named; in a cluster the answer waits
//! until the group's records reached the ISR of its `__consumer_offsets` partition.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::{group_context, later, ready, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::OFFSETS_TOPIC;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::share_group_heartbeat_request::ShareGroupHeartbeatRequest;
use crate::protocol::messages::share_group_heartbeat_response::ShareGroupHeartbeatResponse;

fn refused(code: ErrorCode) -> ShareGroupHeartbeatResponse {
    ShareGroupHeartbeatResponse {
        error_code: code.code(),
        error_message: Some(code.message()),
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ShareGroupHeartbeatRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if !broker.share_groups_enabled() {
        return ready(header, Some(refused(ErrorCode::UNSUPPORTED_VERSION)));
    }
    let authz = Authz::new(&broker, &conn);
    if !authz.group(operation::READ, &request.group_id) {
        return ready(header, Some(refused(ErrorCode::GROUP_AUTHORIZATION_FAILED)));
    }
    if request
        .subscribed_topic_names
        .iter()
        .flatten()
        .any(|t| !authz.topic(operation::DESCRIBE, t))
    {
        return ready(header, Some(refused(ErrorCode::TOPIC_AUTHORIZATION_FAILED)));
    }
    let ctx = group_context(&header, &conn);
    let topics = broker.topics_view();
    let response = broker.groups.share_group_heartbeat(&ctx, &request, &topics);
    if response.error_code != 0 {
        return ready(header, Some(response));
    }
    later(header, async move {
        let partition = broker.groups.partition_for(&request.group_id);
        match broker.wait_replicated(OFFSETS_TOPIC, partition).await {
            Ok(()) => Some(response),
            Err(code) => Some(ShareGroupHeartbeatResponse {
                error_code: code.code(),
                ..Default::default()
            }),
        }
    })
}
