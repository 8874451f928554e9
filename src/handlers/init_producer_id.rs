//! InitProducerId (key 22), versions 0-5, for idempotent producers: hands out a fresh producer
//! id at epoch 0 from blocks reserved in the metadata log, so ids are never reused. A request
//! with a transactional id needs the transaction coordinator; until it exists it is refused
//! with NOT_COORDINATOR.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::init_producer_id_request::InitProducerIdRequest;
use crate::protocol::messages::init_producer_id_response::InitProducerIdResponse;

pub fn handle(broker: &Broker, request: &InitProducerIdRequest) -> InitProducerIdResponse {
    let error = |code: ErrorCode| InitProducerIdResponse {
        error_code: code.code(),
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    if request
        .transactional_id
        .as_deref()
        .is_some_and(|t| !t.is_empty())
    {
        return error(ErrorCode::NOT_COORDINATOR);
    }
    match broker.metadata.allocate_producer_id() {
        Ok(id) => InitProducerIdResponse {
            error_code: 0,
            producer_id: id,
            producer_epoch: 0,
            ..Default::default()
        },
        Err(e) => {
            tracing::error!(error = %e, "producer id allocation failed");
            error(ErrorCode::COORDINATOR_NOT_AVAILABLE)
        }
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: InitProducerIdRequest,
    _peer: SocketAddr,
) -> ResponseFuture {
    let response = handle(&broker, &request);
    ready(header, Some(response))
}
