//! OffsetCommit (key 8), versions 2-9: the group coordinator validates and appends the
//! offsets; the answer waits until they are replicated to the ISR of the
//! group's `__consumer_offsets` partition, so a committed offset survives a failover.
use super::ConnectionContext;
use std::sync::Arc;

use super::{group_context, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_commit_request::OffsetCommitRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetCommitRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let ctx = group_context(&header, &conn);
    let response = broker.groups.offset_commit(&ctx, &request);
    // Not known to be durable: the client must not take it as committed.
    super::after_group_write(broker, header, request.group_id, response, |r, code| {
        for t in r.topics.iter_mut() {
            for p in t.partitions.iter_mut().filter(|p| p.error_code == 0) {
                p.error_code = code.code();
            }
        }
    })
}
