//! LeaveGroup (key 13): members leave a classic group, which rebalances; the answer waits
//! until the group's records reached the ISR of its `__consumer_offsets` partition, as
//! Kafka's coordinators append with acks=all.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::messages::leave_group_response::LeaveGroupResponse;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::leave_group_request::LeaveGroupRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: LeaveGroupRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if !Authz::new(&broker, &conn).group(operation::READ, &request.group_id) {
        let response = LeaveGroupResponse {
            error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        };
        return ready(header, Some(response));
    }
    let ctx = group_context(&header, &conn);
    let response = broker.groups.leave_group(&ctx, &request);
    if response.error_code != 0 {
        return ready(header, Some(response));
    }
    super::after_group_write(broker, header, request.group_id, response, |r, code| {
        r.error_code = code.code()
    })
}
