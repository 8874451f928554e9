//! TxnOffsetCommit (key 28), versions 0-4: offsets committed inside a transaction, visible to
//! the group only when the transaction commits.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: TxnOffsetCommitRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let response = broker.groups.txn_offset_commit(&ctx, &request);
    ready(header, Some(response))
}
