//! InitProducerId (key 22), versions 0-5: a fresh producer id for idempotent producers, and
//! for transactional ones the transaction coordinator's fencing and epoch bumps (KIP-98,
//! KIP-360). Producer ids come from blocks reserved in the metadata log, never reused.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{group_context, later, Broker, ResponseFuture};
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
    let header_ctx = header.clone();
    later(header, async move {
        if transactional {
            super::find_coordinator::await_internal_topic(
                &broker,
                super::find_coordinator::KEY_TYPE_TRANSACTION,
            )
            .await;
        }
        Some(if transactional && !broker.transaction_topic_exists() {
            InitProducerIdResponse {
                error_code: ErrorCode::COORDINATOR_NOT_AVAILABLE.code(),
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            }
        } else {
            broker
                .txns
                .init_producer_id(&group_context(&header_ctx, peer), &request)
        })
    })
}
