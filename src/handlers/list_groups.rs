//! ListGroups (key 16): the groups whose `__consumer_offsets` partitions this broker
//! coordinates, with their state and type filters (KIP-518, KIP-848).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::{operation, resource_type, CLUSTER_NAME};
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
    let mut response = broker.groups.list_groups(&ctx, &request);
    // Kafka: all groups with DESCRIBE on the cluster, otherwise those the caller may describe.
    let authz = Authz::new(&broker, &conn);
    if !authz.visible(operation::DESCRIBE, resource_type::CLUSTER, CLUSTER_NAME) {
        response
            .groups
            .retain(|g| authz.visible(operation::DESCRIBE, resource_type::GROUP, &g.group_id));
    }
    ready(header, Some(response))
}
