//! Heartbeat (key 12): a classic member's liveness within its session; REBALANCE_IN_PROGRESS
//! tells it to rejoin, as Kafka's group coordinator answers.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::messages::heartbeat_response::HeartbeatResponse;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::heartbeat_request::HeartbeatRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: HeartbeatRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if !Authz::new(&broker, &conn).group(operation::READ, &request.group_id) {
        let response = HeartbeatResponse {
            error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        };
        return ready(header, Some(response));
    }
    let ctx = group_context(&header, &conn);
    let response = broker.groups.heartbeat(&ctx, &request);
    ready(header, Some(response))
}
