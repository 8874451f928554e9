//! JoinGroup (key 11), versions 0-9: KIP-394 two-step join (MEMBER_ID_REQUIRED) from v4, static
//! membership from v5. The response is delayed until the rebalance completes, so it is a
//! future the connection's writer awaits while later requests keep being read. In a cluster
//! it is released only once the group's records reached the ISR of its `__consumer_offsets`
//! partition (Kafka's coordinators append with acks=all).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::{group_context, later, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::OFFSETS_TOPIC;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::join_group_request::JoinGroupRequest;
use crate::protocol::messages::join_group_response::JoinGroupResponse;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: JoinGroupRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if !Authz::new(&broker, &conn).group(operation::READ, &request.group_id) {
        let response = JoinGroupResponse {
            error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
            generation_id: -1,
            protocol_name: Some(String::new()),
            ..Default::default()
        };
        return super::ready(header, Some(response));
    }
    let ctx = group_context(&header, &conn);
    later(header, async move {
        // A client that skipped FindCoordinator still finds `__consumer_offsets` created.
        super::find_coordinator::await_internal_topic(
            &broker,
            super::find_coordinator::KEY_TYPE_GROUP,
        )
        .await;
        let mut response = broker.groups.join_group(&ctx, &request).await;
        if response.error_code == 0 {
            let partition = broker.groups.partition_for(&request.group_id);
            if let Err(code) = broker.wait_replicated(OFFSETS_TOPIC, partition).await {
                response = JoinGroupResponse {
                    error_code: code.code(),
                    generation_id: -1,
                    protocol_name: Some(String::new()),
                    member_id: request.member_id.clone(),
                    ..Default::default()
                };
            }
        }
        Some(response)
    })
}
