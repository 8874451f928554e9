//! InitProducerId (key 22), versions 0-5: a fresh producer id for idempotent producers, and
//! for transactional ones the transaction coordinator's fencing and epoch bumps (KIP-98,
//! KIP-360). Producer ids come from blocks reserved in the metadata log, never reused.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::init_producer_id_request::InitProducerIdRequest;
use crate::protocol::messages::init_producer_id_response::InitProducerIdResponse;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: InitProducerIdRequest,
    peer: SocketAddr,
) -> ResponseFuture {
    let transactional = request
        .transactional_id
        .as_deref()
        .is_some_and(|t| !t.is_empty());
    let response = if transactional && !broker.ensure_transaction_topic() {
        InitProducerIdResponse {
            error_code: ErrorCode::COORDINATOR_NOT_AVAILABLE.code(),
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        }
    } else {
        broker
            .txns
            .init_producer_id(&group_context(&header, peer), &request)
    };
    ready(header, Some(response))
}
