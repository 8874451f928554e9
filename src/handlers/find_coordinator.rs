//! FindCoordinator (key 10), versions 0-4 (batched keys from v4): the group coordinator is the
//! leader of the group's `__consumer_offsets` partition, which on a single node is this broker.
//! The offsets topic (key type 0) and the transaction log (key type 1) are created on first
//! use, as Kafka does.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use crate::protocol::messages::find_coordinator_response::*;

pub const KEY_TYPE_GROUP: i8 = 0;
pub const KEY_TYPE_TRANSACTION: i8 = 1;

/// The coordinator for one key: (error, node id, host, port).
fn find(broker: &Broker, key_type: i8) -> (ErrorCode, i32, String, i32) {
    let ep = &broker.endpoints[0];
    match key_type {
        KEY_TYPE_GROUP => {
            if broker.ensure_offsets_topic() {
                (ErrorCode::NONE, broker.node_id, ep.host.clone(), ep.port)
            } else {
                (ErrorCode::COORDINATOR_NOT_AVAILABLE, -1, String::new(), -1)
            }
        }
        KEY_TYPE_TRANSACTION => {
            if broker.ensure_transaction_topic() {
                (ErrorCode::NONE, broker.node_id, ep.host.clone(), ep.port)
            } else {
                (ErrorCode::COORDINATOR_NOT_AVAILABLE, -1, String::new(), -1)
            }
        }
        _ => (ErrorCode::INVALID_REQUEST, -1, String::new(), -1),
    }
}

pub fn handle(
    broker: &Broker,
    version: i16,
    request: &FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    if version < 4 {
        let (error, node_id, host, port) = find(broker, request.key_type);
        return FindCoordinatorResponse {
            error_code: error.code(),
            error_message: if error.is_ok() {
                None
            } else {
                Some(error.message())
            },
            node_id,
            host,
            port,
            ..Default::default()
        };
    }
    let coordinators = request
        .coordinator_keys
        .iter()
        .map(|key| {
            let (error, node_id, host, port) = find(broker, request.key_type);
            Coordinator {
                key: key.clone(),
                node_id,
                host,
                port,
                error_code: error.code(),
                error_message: if error.is_ok() {
                    None
                } else {
                    Some(error.message())
                },
                ..Default::default()
            }
        })
        .collect();
    FindCoordinatorResponse {
        coordinators,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: FindCoordinatorRequest,
    _peer: SocketAddr,
) -> ResponseFuture {
    let response = handle(&broker, header.api_version, &request);
    ready(header, Some(response))
}
