//! OffsetFetch (key 9): committed offsets from the group coordinator; with `require_stable`
//! (KIP-447) offsets pending in an open transaction answer UNSTABLE_OFFSET_COMMIT.
use super::ConnectionContext;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_fetch_request::OffsetFetchRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetFetchRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let ctx = group_context(&header, &conn);
    let response = broker.groups.offset_fetch_stable(&ctx, &request);
    ready(header, Some(response))
}
