//! ListTransactions (key 66), versions 0-1: transactional ids filtered by state, producer id and (v1) duration.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::{operation, resource_type};
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
    let mut response = broker.txns.list_transactions(&ctx, &request);
    // Kafka lists only the transactional ids the caller may describe.
    let authz = Authz::new(&broker, &conn);
    response.transaction_states.retain(|s| {
        authz.visible(
            operation::DESCRIBE,
            resource_type::TRANSACTIONAL_ID,
            &s.transactional_id,
        )
    });
    ready(header, Some(response))
}
