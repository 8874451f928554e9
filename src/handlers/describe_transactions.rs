//! DescribeTransactions (key 65), version 0: the state of transactional ids (`kafka-transactions describe`).
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_transactions_request::DescribeTransactionsRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeTransactionsRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let ctx = group_context(&header, peer);
    let response = broker.txns.describe_transactions(&ctx, &request);
    ready(header, Some(response))
}
