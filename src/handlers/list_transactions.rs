//! ListTransactions (key 66), versions 0-1: transactional ids filtered by state, producer id and (v1) duration.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_transactions_request::ListTransactionsRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ListTransactionsRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let response = broker.txns.list_transactions(&ctx, &request);
    ready(header, Some(response))
}
