//! ReadShareGroupStateSummary (API 87) v0-1, KIP-932 (v1: KIP-1226's delivery-complete
//! count): a share partition's start offset and epochs, what DescribeShareGroupOffsets shows.
//! Unlike a read it records no leader epoch. Brokers only: CLUSTER_ACTION on the cluster.
use std::sync::Arc;

use super::read_share_group_state::{
    refuse_unless_broker, state_key, wire_error, READ_UNINITIALIZED,
};
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::read_share_group_state_summary_request::ReadShareGroupStateSummaryRequest;
use crate::protocol::messages::read_share_group_state_summary_response::*;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ReadShareGroupStateSummaryRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let refused = refuse_unless_broker(&broker, &conn);
    let results = request
        .topics
        .iter()
        .map(|t| ReadStateSummaryResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut out = PartitionResult {
                        partition: p.partition,
                        state_epoch: -1,
                        leader_epoch: -1,
                        start_offset: -1,
                        delivery_complete_count: -1,
                        ..Default::default()
                    };
                    let key = state_key(&request.group_id, t.topic_id, p.partition);
                    if let Some(code) = refused {
                        out.error_code = code.code();
                        out.error_message = Some(code.message());
                        return out;
                    }
                    match broker.share_states.read_summary(&key) {
                        Ok(Some(s)) => {
                            out.state_epoch = s.state_epoch;
                            out.leader_epoch = s.leader_epoch;
                            out.start_offset = s.start_offset;
                            out.delivery_complete_count = s.delivery_complete_count;
                        }
                        Ok(None) => {
                            out.error_code = ErrorCode::INVALID_REQUEST.code();
                            out.error_message = Some(READ_UNINITIALIZED.to_string());
                        }
                        Err(e) => (out.error_code, out.error_message) = wire_error::<()>(Err(e)),
                    }
                    out
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    ready(
        header,
        Some(ReadShareGroupStateSummaryResponse {
            results,
            ..Default::default()
        }),
    )
}
