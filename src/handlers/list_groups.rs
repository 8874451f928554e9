//! ListGroups (key 16): the groups whose `__consumer_offsets` partitions this broker
//! coordinates, with their state and type filters (KIP-518, KIP-848).
use super::ConnectionContext;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_groups_request::ListGroupsRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ListGroupsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let ctx = group_context(&header, &conn);
    let response = broker.groups.list_groups(&ctx, &request);
    ready(header, Some(response))
}
