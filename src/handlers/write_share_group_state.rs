//! WriteShareGroupState (API 85) v0-1, KIP-932 (v1: KIP-1226's delivery-complete count): a
//! share-partition leader writes what changed (start offset, state batches) before it answers
//! an acknowledgement. A write of an older leader or state epoch is fenced; one for a share
//! partition never initialized is INVALID_REQUEST. Brokers only: CLUSTER_ACTION.
use std::sync::Arc;

use super::read_share_group_state::{refuse_unless_broker, state_key, wire_error};
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::write_share_group_state_request::WriteShareGroupStateRequest;
use crate::protocol::messages::write_share_group_state_response::*;
use crate::replica::share_persister::{StateBatch, StateWrite};

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: WriteShareGroupStateRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let refused = refuse_unless_broker(&broker, &conn);
    let results = request
        .topics
        .iter()
        .map(|t| WriteStateResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let write = StateWrite {
                        key: state_key(&request.group_id, t.topic_id, p.partition),
                        state_epoch: p.state_epoch,
                        leader_epoch: p.leader_epoch,
                        start_offset: p.start_offset,
                        delivery_complete_count: p.delivery_complete_count,
                        state_batches: p
                            .state_batches
                            .iter()
                            .map(|b| StateBatch {
                                first_offset: b.first_offset,
                                last_offset: b.last_offset,
                                delivery_state: b.delivery_state,
                                delivery_count: b.delivery_count,
                            })
                            .collect(),
                    };
                    let (error_code, error_message) = match refused {
                        Some(code) => (code.code(), Some(code.message())),
                        None => wire_error(broker.share_states.write(&write)),
                    };
                    PartitionResult {
                        partition: p.partition,
                        error_code,
                        error_message,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ready(
        header,
        Some(WriteShareGroupStateResponse {
            results,
            ..Default::default()
        }),
    )
}
