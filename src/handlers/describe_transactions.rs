//! DescribeTransactions (key 65), version 0: the state of transactional ids (`kafka-transactions describe`).
use super::ConnectionContext;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_transactions_request::DescribeTransactionsRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeTransactionsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let ctx = group_context(&header, &conn);
    let response = broker.txns.describe_transactions(&ctx, &request);
    ready(header, Some(response))
}
