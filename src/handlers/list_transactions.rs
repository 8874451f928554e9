//! ListTransactions (key 66), versions 0-1: transactional ids filtered by state, producer id and (v1) duration.
use super::ConnectionContext;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_transactions_request::ListTransactionsRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ListTransactionsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let ctx = group_context(&header, &conn);
    let response = broker.txns.list_transactions(&ctx, &request);
    ready(header, Some(response))
}
