//! ReadShareGroupState (API 84) v0, KIP-932: a share-partition leader reads the durable state
//! of a share partition when it loads it, which records its leader epoch and fences older
//! leaders (FENCED_LEADER_EPOCH). A share partition never initialized is INVALID_REQUEST with
//! Kafka's message. Brokers only: CLUSTER_ACTION on the cluster. Also holds what the five
//! share-state RPCs share.
use std::sync::Arc;

use super::common::authz::Authz;
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::coordinator::share_state::ShareStateError;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::read_share_group_state_request::ReadShareGroupStateRequest;
use crate::protocol::messages::read_share_group_state_response::*;
use crate::replica::share_persister::SharePartitionKey;

/// Kafka's message for a read of a share partition with no state.
pub const READ_UNINITIALIZED: &str = "Read operation on uninitialized share partition not allowed.";

/// CLUSTER_AUTHORIZATION_FAILED unless the caller may CLUSTER_ACTION (a broker).
pub(super) fn refuse_unless_broker(broker: &Broker, conn: &ConnectionContext) -> Option<ErrorCode> {
    (!Authz::new(broker, conn).cluster(operation::CLUSTER_ACTION))
        .then_some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED)
}

pub(super) fn state_key(group_id: &str, topic_id: Uuid, partition: i32) -> SharePartitionKey {
    SharePartitionKey {
        group_id: group_id.to_string(),
        topic_id,
        partition,
    }
}

/// An outcome as (error code, message).
pub(super) fn wire_error<T>(outcome: Result<T, ShareStateError>) -> (i16, Option<String>) {
    match outcome {
        Ok(_) => (ErrorCode::NONE.code(), None),
        Err(e) => {
            let code = e.code();
            (code.code(), e.message().or_else(|| Some(code.message())))
        }
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ReadShareGroupStateRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let refused = refuse_unless_broker(&broker, &conn);
    let results = request
        .topics
        .iter()
        .map(|t| ReadStateResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut out = PartitionResult {
                        partition: p.partition,
                        state_epoch: -1,
                        start_offset: -1,
                        ..Default::default()
                    };
                    let key = state_key(&request.group_id, t.topic_id, p.partition);
                    let outcome = match refused {
                        Some(code) => Err(code),
                        None => match broker.share_states.read(&key, p.leader_epoch) {
                            Ok(Some(state)) => Ok(state),
                            Ok(None) => Err(ErrorCode::INVALID_REQUEST),
                            Err(e) => {
                                (out.error_code, out.error_message) = wire_error::<()>(Err(e));
                                return out;
                            }
                        },
                    };
                    match outcome {
                        Ok(state) => {
                            out.state_epoch = state.state_epoch;
                            out.start_offset = state.start_offset;
                            out.state_batches = state
                                .state_batches
                                .iter()
                                .map(|b| StateBatch {
                                    first_offset: b.first_offset,
                                    last_offset: b.last_offset,
                                    delivery_state: b.delivery_state,
                                    delivery_count: b.delivery_count,
                                    ..Default::default()
                                })
                                .collect();
                        }
                        Err(code) => {
                            out.error_code = code.code();
                            out.error_message = Some(if code == ErrorCode::INVALID_REQUEST {
                                READ_UNINITIALIZED.to_string()
                            } else {
                                code.message()
                            });
                        }
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ready(
        header,
        Some(ReadShareGroupStateResponse {
            results,
            ..Default::default()
        }),
    )
}
