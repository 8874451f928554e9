//! SyncGroup (key 14), versions 0-5: the leader hands out assignments; followers wait for them.
//! Delayed like JoinGroup; in a cluster released only once the group's records (the leader's
//! assignment) reached the ISR of its `__consumer_offsets` partition.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::{group_context, later, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::OFFSETS_TOPIC;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::sync_group_request::SyncGroupRequest;
use crate::protocol::messages::sync_group_response::SyncGroupResponse;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: SyncGroupRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if !Authz::new(&broker, &conn).group(operation::READ, &request.group_id) {
        let response = SyncGroupResponse {
            error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        };
        return super::ready(header, Some(response));
    }
    let ctx = group_context(&header, &conn);
    let pending = broker.groups.sync_group(&ctx, &request);
    later(header, async move {
        let mut response = pending.await;
        if response.error_code == 0 {
            let partition = broker.groups.partition_for(&request.group_id);
            if let Err(code) = broker.wait_replicated(OFFSETS_TOPIC, partition).await {
                response = SyncGroupResponse {
                    error_code: code.code(),
                    ..Default::default()
                };
            }
        }
        Some(response)
    })
}
