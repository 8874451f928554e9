//! InitProducerId (key 22), versions 0-5: a fresh producer id for idempotent producers, and
//! for transactional ones the transaction coordinator's fencing and epoch bumps (KIP-98,
//! KIP-360). Producer ids come from blocks reserved in the metadata log, never reused. In a
//! cluster a transactional answer waits until the coordinator's record reached the ISR of the
//! id's `__transaction_state` partition (Kafka's `appendTransactionToLog` with acks=all).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::{operation, resource_type};
use std::sync::Arc;

use super::{group_context, later, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::TRANSACTION_TOPIC;
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::init_producer_id_request::InitProducerIdRequest;
use crate::protocol::messages::init_producer_id_response::InitProducerIdResponse;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: InitProducerIdRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let transactional = request
        .transactional_id
        .as_deref()
        .is_some_and(|t| !t.is_empty());
    // Kafka: WRITE on the transactional id; an idempotent producer needs IDEMPOTENT_WRITE on
    // the cluster or WRITE on some topic.
    let authz = Authz::new(&broker, &conn);
    let refused = match request
        .transactional_id
        .as_deref()
        .filter(|_| transactional)
    {
        Some(tid) => (!authz.transactional_id(operation::WRITE, tid))
            .then_some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        None => (!authz.cluster(operation::IDEMPOTENT_WRITE)
            && !authz.any_of_type(operation::WRITE, resource_type::TOPIC))
        .then_some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED),
    };
    if let Some(code) = refused {
        let response = InitProducerIdResponse {
            error_code: code.code(),
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
        return super::ready(header, Some(response));
    }
    let header_ctx = header.clone();
    later(header, async move {
        if transactional {
            super::find_coordinator::await_internal_topic(
                &broker,
                super::find_coordinator::KEY_TYPE_TRANSACTION,
            )
            .await;
        }
        if transactional && !broker.transaction_topic_exists() {
            return Some(InitProducerIdResponse {
                error_code: ErrorCode::COORDINATOR_NOT_AVAILABLE.code(),
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            });
        }
        let response = broker
            .txns
            .init_producer_id(&group_context(&header_ctx, &conn), &request);
        let tid = match request.transactional_id.filter(|_| transactional) {
            Some(tid) if response.error_code == 0 => tid,
            _ => return Some(response),
        };
        let partition = broker.txns.partition_for(&tid);
        match broker.wait_replicated(TRANSACTION_TOPIC, partition).await {
            Ok(()) => Some(response),
            Err(code) => Some(InitProducerIdResponse {
                error_code: code.code(),
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            }),
        }
    })
}
