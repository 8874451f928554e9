//! OffsetCommit (key 8), versions 2-9: the group coordinator validates and appends the
//! offsets; the answer waits until they are replicated to the ISR of the
//! group's `__consumer_offsets` partition, so a committed offset survives a failover.
use std::net::SocketAddr;
use std::sync::Arc;

use super::offsets_topic::OFFSETS_TOPIC;
use super::{group_context, later, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_commit_request::OffsetCommitRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetCommitRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let mut response = broker.groups.offset_commit(&ctx, &request);
    later(header, async move {
        let partition = broker.groups.partition_for(&request.group_id);
        if let Err(code) = broker.wait_replicated(OFFSETS_TOPIC, partition).await {
            // Not known to be durable: the client must not take it as committed.
            for t in response.topics.iter_mut() {
                for p in t.partitions.iter_mut().filter(|p| p.error_code == 0) {
                    p.error_code = code.code();
                }
            }
        }
        Some(response)
    })
}
