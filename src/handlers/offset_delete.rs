//! OffsetDelete (key 47): committed offsets of partitions a group no longer consumes are
//! removed by tombstones; the answer waits until they reached the ISR, as Kafka's
//! coordinators append with acks=all.
use std::net::SocketAddr;
use std::sync::Arc;

use super::offsets_topic::OFFSETS_TOPIC;
use super::{group_context, later, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_delete_request::OffsetDeleteRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetDeleteRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let mut response = broker.groups.offset_delete(&ctx, &request);
    if response.error_code != 0 {
        return ready(header, Some(response));
    }
    later(header, async move {
        let partition = broker.groups.partition_for(&request.group_id);
        if let Err(code) = broker.wait_replicated(OFFSETS_TOPIC, partition).await {
            response.error_code = code.code();
        }
        Some(response)
    })
}
