//! DeleteShareGroupState (API 86) v0, KIP-932: the durable state of share partitions goes
//! (their group, or its offsets of a topic, was deleted); a share partition with no state is
//! already deleted. Brokers only: CLUSTER_ACTION on the cluster.
use std::sync::Arc;

use super::read_share_group_state::{refuse_unless_broker, state_key, wire_error};
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_share_group_state_request::DeleteShareGroupStateRequest;
use crate::protocol::messages::delete_share_group_state_response::*;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DeleteShareGroupStateRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let refused = refuse_unless_broker(&broker, &conn);
    let results = request
        .topics
        .iter()
        .map(|t| DeleteStateResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let key = state_key(&request.group_id, t.topic_id, p.partition);
                    let (error_code, error_message) = match refused {
                        Some(code) => (code.code(), Some(code.message())),
                        None => wire_error(broker.share_states.delete(&[key])),
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
        Some(DeleteShareGroupStateResponse {
            results,
            ..Default::default()
        }),
    )
}
