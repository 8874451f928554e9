//! ConsumerGroupHeartbeat (API 68) v0-1, KIP-848: the consumer group protocol's only
//! membership request (join, heartbeat, reconcile, leave).
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::consumer_group_heartbeat_request::ConsumerGroupHeartbeatRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ConsumerGroupHeartbeatRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let topics = broker.topics_view();
    let response = broker
        .groups
        .consumer_group_heartbeat(&ctx, &request, &topics);
    ready(header, Some(response))
}
