//! OffsetDelete (key 47): committed offsets of partitions a group no longer consumes are
//! removed by tombstones; the answer waits until they reached the ISR, as Kafka's
//! coordinators append with acks=all.
use super::ConnectionContext;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_delete_request::OffsetDeleteRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetDeleteRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let ctx = group_context(&header, &conn);
    let response = broker.groups.offset_delete(&ctx, &request);
    if response.error_code != 0 {
        return ready(header, Some(response));
    }
    super::after_group_write(broker, header, request.group_id, response, |r, code| {
        r.error_code = code.code()
    })
}
