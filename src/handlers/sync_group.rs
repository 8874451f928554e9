//! SyncGroup (key 14), versions 0-5: the leader hands out assignments; followers wait for them.
//! Delayed like JoinGroup.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, later, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::sync_group_request::SyncGroupRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: SyncGroupRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let pending = broker.groups.sync_group(&ctx, &request);
    later(header, async move { Some(pending.await) })
}
