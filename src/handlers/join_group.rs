//! JoinGroup (key 11), versions 0-9: KIP-394 two-step join (MEMBER_ID_REQUIRED) from v4, static
//! membership from v5. The response is delayed until the rebalance completes, so it is a
//! future the connection's writer awaits while later requests keep being read.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, later, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::join_group_request::JoinGroupRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: JoinGroupRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    later(header, async move {
        // A client that skipped FindCoordinator still finds `__consumer_offsets` created.
        super::find_coordinator::await_internal_topic(
            &broker,
            super::find_coordinator::KEY_TYPE_GROUP,
        )
        .await;
        Some(broker.groups.join_group(&ctx, &request).await)
    })
}
