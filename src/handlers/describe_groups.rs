//! DescribeGroups (key 15), versions 0-6: the state, protocol and members of classic groups
//! from the group coordinator, read-only (v6: GROUP_ID_NOT_FOUND with a message for a group
//! that is not a classic group, KIP-1043).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::{operation, resource_type};
use crate::protocol::messages::describe_groups_response::DescribedGroup;
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
    let authz = Authz::new(&broker, &conn);
    let mut response = broker.groups.describe_groups(&ctx, &request);
    // Kafka: DESCRIBE on each group; a refused one is answered with the error alone.
    for g in response.groups.iter_mut() {
        if !authz.group(operation::DESCRIBE, &g.group_id) {
            *g = DescribedGroup {
                error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
                group_id: std::mem::take(&mut g.group_id),
                ..Default::default()
            };
        } else if request.include_authorized_operations {
            g.authorized_operations =
                authz.authorized_operations(resource_type::GROUP, &g.group_id);
        }
    }
    ready(header, Some(response))
}
