//!
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::leave_group_request::LeaveGroupRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: LeaveGroupRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let response = broker.groups.leave_group(&ctx, &request);
    ready(header, Some(response))
}
