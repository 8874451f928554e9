//! EndTxn (key 26), versions 0-5 (v5: transactions version 2, the epoch bumped at every end and
//! answered, KIP-890 part 2): commit or abort; the coordinator writes the prepare record,
//! the markers, then the complete record. In a cluster the answer waits until the prepare
//! record reached the ISR of the id's `__transaction_state` partition, and only then are the
//! markers written (Kafka's `endTransaction` sends markers from the append's callback): a
//! marker written for a prepare record a new coordinator may not have would let it abort a
//! transaction that is already committed on some partitions.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::messages::end_txn_response::EndTxnResponse;
use std::sync::Arc;

use super::{group_context, later, ready, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::TRANSACTION_TOPIC;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::end_txn_request::EndTxnRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: EndTxnRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if !Authz::new(&broker, &conn).transactional_id(operation::WRITE, &request.transactional_id) {
        let response = EndTxnResponse {
            error_code: ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code(),
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
        return ready(header, Some(response));
    }
    let ctx = group_context(&header, &conn);
    let mut response = broker.txns.end_txn(&ctx, &request);
    if response.error_code != 0 {
        return ready(header, Some(response));
    }
    later(header, async move {
        let tid = request.transactional_id.as_str();
        let partition = broker.txns.partition_for(tid);
        match broker.wait_replicated(TRANSACTION_TOPIC, partition).await {
            // The prepare record is durable: the markers can go out now rather than at the
            // next tick.
            Ok(()) => broker.txns.complete_prepared(tid),
            Err(code) => response.error_code = code.code(),
        }
        Some(response)
    })
}
