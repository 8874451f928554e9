//! ConsumerGroupDescribe (API 69) v0-1, KIP-848 (v1 adds the member type, KIP-1099).
use super::ConnectionContext;
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
    let response = broker
        .groups
        .consumer_group_describe(&ctx, &request, &topics);
    ready(header, Some(response))
}
