//! DescribeTransactions (key 65), version 0: the state of transactional ids (`kafka-transactions describe`).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::{operation, resource_type};
use crate::protocol::messages::describe_transactions_response::TransactionState;
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
    let mut response = broker.txns.describe_transactions(&ctx, &request);
    // Kafka: DESCRIBE on each transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and
    // the partitions of topics the caller may not describe are left out.
    let authz = Authz::new(&broker, &conn);
    for s in response.transaction_states.iter_mut() {
        if !authz.transactional_id(operation::DESCRIBE, &s.transactional_id) {
            *s = TransactionState {
                error_code: ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code(),
                transactional_id: std::mem::take(&mut s.transactional_id),
                producer_id: -1,
                producer_epoch: -1,
                transaction_timeout_ms: -1,
                transaction_start_time_ms: -1,
                ..Default::default()
            };
        } else {
            s.topics
                .retain(|t| authz.visible(operation::DESCRIBE, resource_type::TOPIC, &t.topic));
        }
    }
    ready(header, Some(response))
}
