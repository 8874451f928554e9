//! AddOffsetsToTxn (key 25), versions 0-4: the group's `__consumer_offsets` partition joins the
//! transaction (consume-transform-produce). In a cluster the answer waits until the
//! coordinator's record reached the ISR of the id's `__transaction_state` partition.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::messages::add_offsets_to_txn_response::AddOffsetsToTxnResponse;
use std::sync::Arc;

use super::{group_context, later, ready, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::TRANSACTION_TOPIC;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::add_offsets_to_txn_request::AddOffsetsToTxnRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AddOffsetsToTxnRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let authz = Authz::new(&broker, &conn);
    let refused = if !authz.transactional_id(operation::WRITE, &request.transactional_id) {
        Some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    } else if !authz.group(operation::READ, &request.group_id) {
        Some(ErrorCode::GROUP_AUTHORIZATION_FAILED)
    } else {
        None
    };
    if let Some(code) = refused {
        let response = AddOffsetsToTxnResponse {
            error_code: code.code(),
            ..Default::default()
        };
        return ready(header, Some(response));
    }
    let ctx = group_context(&header, &conn);
    let mut response = {
        broker
            .txns
            .add_offsets_to_txn(&ctx, &request, &|group: &str| {
                broker.groups.partition_for(group)
            })
    };
    if response.error_code != 0 {
        return ready(header, Some(response));
    }
    later(header, async move {
        let partition = broker.txns.partition_for(&request.transactional_id);
        if let Err(code) = broker.wait_replicated(TRANSACTION_TOPIC, partition).await {
            response.error_code = code.code();
        }
        Some(response)
    })
}
