//! DescribeGroups (key 15): the state, protocol and members of classic groups from the group
//! coordinator, read-only.
use super::ConnectionContext;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_groups_request::DescribeGroupsRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeGroupsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let ctx = group_context(&header, &conn);
    let response = broker.groups.describe_groups(&ctx, &request);
    ready(header, Some(response))
}
