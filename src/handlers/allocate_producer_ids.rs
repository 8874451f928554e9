//! AllocateProducerIds (key 67), version 0 (KIP-730): served by the active controller, which
//! hands a broker the next block of producer ids as a committed record, so no id is ever
//! given twice across brokers or restarts.
use super::ConnectionContext;
use std::sync::Arc;

use super::{Broker, ResponseFuture};
use crate::controller::allocate_producer_ids;
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::allocate_producer_ids_request::AllocateProducerIdsRequest;
use crate::protocol::messages::allocate_producer_ids_response::AllocateProducerIdsResponse;

fn error(code: ErrorCode) -> AllocateProducerIdsResponse {
    AllocateProducerIdsResponse {
        error_code: code.code(),
        producer_id_start: -1,
        producer_id_len: 0,
        ..Default::default()
    }
}

pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: AllocateProducerIdsRequest,
) -> Result<AllocateProducerIdsResponse, ControllerError> {
    controller
        .run(move |image, _, _| {
            let (records, result) =
                allocate_producer_ids(image, request.broker_id, request.broker_epoch);
            let response = match result {
                Ok(block) => AllocateProducerIdsResponse {
                    error_code: 0,
                    producer_id_start: block.first_producer_id,
                    producer_id_len: block.len as i32,
                    ..Default::default()
                },
                Err(code) => error(code),
            };
            (records, response)
        })
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AllocateProducerIdsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: CLUSTER_ACTION on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::CLUSTER_ACTION,
        |r: &mut crate::protocol::messages::allocate_producer_ids_response::AllocateProducerIdsResponse, code| r.error_code = code.code(),
    ) {
        return refused;
    }
    super::controller_only(&broker, header, request, on_controller, error)
}
