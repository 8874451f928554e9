//! EndTxn (key 26), versions 0-4: commit or abort; the coordinator writes the prepare record, the markers, then the complete record.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::end_txn_request::EndTxnRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: EndTxnRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let response = broker.txns.end_txn(&ctx, &request);
    ready(header, Some(response))
}
