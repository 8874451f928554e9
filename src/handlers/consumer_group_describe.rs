//! ConsumerGroupDescribe (API 69) v0-1, KIP-848 (v1 adds the member type, KIP-1099).
use super::authz::Authz;
use super::ConnectionContext;
use crate::controller::acls::{operation, resource_type};
use crate::error::ErrorCode;
use crate::protocol::messages::consumer_group_describe_response::DescribedGroup;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ConsumerGroupDescribeRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let ctx = group_context(&header, &conn);
    let topics = broker.topics_view();
    let authz = Authz::new(&broker, &conn);
    let mut response = broker
        .groups
        .consumer_group_describe(&ctx, &request, &topics);
    for g in response.groups.iter_mut() {
        if !authz.group(operation::DESCRIBE, &g.group_id) {
            let code = ErrorCode::GROUP_AUTHORIZATION_FAILED;
            *g = DescribedGroup {
                error_code: code.code(),
                error_message: Some(code.message()),
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
