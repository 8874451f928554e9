//! InitializeShareGroupState (API 83) v0, KIP-932: a share partition's durable state starts
//! (again) at a start offset with nothing in flight, at a state epoch that fences writers of
//! older ones. Sent by brokers to the share coordinator (the leader of the key's
//! `__share_group_state` partition); CLUSTER_ACTION on the cluster, as Kafka requires.
use std::sync::Arc;

use super::read_share_group_state::{refuse_unless_broker, state_key, wire_error};
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::initialize_share_group_state_request::InitializeShareGroupStateRequest;
use crate::protocol::messages::initialize_share_group_state_response::*;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: InitializeShareGroupStateRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let refused = refuse_unless_broker(&broker, &conn);
    let results = request
        .topics
        .iter()
        .map(|t| InitializeStateResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let key = state_key(&request.group_id, t.topic_id, p.partition);
                    let (error_code, error_message) = match refused {
                        Some(code) => (code.code(), Some(code.message())),
                        None => wire_error(broker.share_states.initialize(
                            &key,
                            p.state_epoch,
                            p.start_offset,
                        )),
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
        Some(InitializeShareGroupStateResponse {
            results,
            ..Default::default()
        }),
    )
}
