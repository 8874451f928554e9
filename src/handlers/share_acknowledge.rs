//! ShareAcknowledge (API 79) v1-2, KIP-932: acknowledgements without a fetch (explicit
//! `commitSync`, and the epoch -1 request a share consumer sends as it closes, which ends its
//! share session and releases every record it still holds). v2 adds RENEW (KIP-1222) and
//! answers the lock duration.
use std::collections::BTreeMap;
use std::sync::Arc;

use super::share_fetch::{
    acknowledgements, led_partition, member_request, persist_acknowledged, share_settings,
};
use super::{later, ready, Broker, ConnectionContext, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::share_acknowledge_request::ShareAcknowledgeRequest;
use crate::protocol::messages::share_acknowledge_response::{
    PartitionData, ShareAcknowledgeResponse, ShareAcknowledgeTopicResponse,
};
use crate::replica::share_manager::AckUndo;
use crate::replica::share_sessions::FINAL_EPOCH;

fn top_level(code: ErrorCode) -> ShareAcknowledgeResponse {
    ShareAcknowledgeResponse {
        error_code: code.code(),
        error_message: Some(code.message()),
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ShareAcknowledgeRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let (group_id, member_id, authz) =
        match member_request(&broker, &conn, &request.group_id, &request.member_id) {
            Ok(checked) => checked,
            Err(code) => return ready(header, Some(top_level(code))),
        };
    let epoch = request.share_session_epoch;
    let closed = match broker
        .shares
        .sessions()
        .acknowledge(&group_id, &member_id, epoch)
    {
        Ok(closed) => closed,
        Err(code) => return ready(header, Some(top_level(code))),
    };
    let now = broker.now_ms();
    let renew_allowed = header.api_version >= 2 && request.is_renew_ack;
    let mut by_topic: BTreeMap<Uuid, Vec<PartitionData>> = BTreeMap::new();
    // Partitions whose acknowledgements applied: durable before the answer.
    let mut applied: Vec<((Uuid, i32), AckUndo)> = Vec::new();
    for t in &request.topics {
        let name = broker.cluster.topic_name_by_id(&t.topic_id);
        for p in &t.partitions {
            let mut data = PartitionData {
                partition_index: p.partition_index,
                ..Default::default()
            };
            data.current_leader.leader_id = -1;
            data.current_leader.leader_epoch = -1;
            let code = if name
                .as_deref()
                .is_some_and(|n| !authz.topic(operation::READ, n))
            {
                ErrorCode::TOPIC_AUTHORIZATION_FAILED
            } else {
                let batches = p.acknowledgement_batches.iter().map(|b| {
                    (
                        b.first_offset,
                        b.last_offset,
                        b.acknowledge_types.as_slice(),
                    )
                });
                match acknowledgements(batches, renew_allowed) {
                    None => ErrorCode::INVALID_REQUEST,
                    Some(batches) => match led_partition(&broker, t.topic_id, p.partition_index) {
                        Err((code, leader, leader_epoch)) => {
                            data.current_leader.leader_id = leader;
                            data.current_leader.leader_epoch = leader_epoch;
                            code
                        }
                        Ok(partition) => {
                            data.current_leader.leader_id = broker.node_id;
                            data.current_leader.leader_epoch = partition.leader_epoch();
                            let (result, undo) = broker.shares.acknowledge(
                                &group_id,
                                &member_id,
                                t.topic_id,
                                p.partition_index,
                                &batches,
                                now,
                            );
                            if !undo.is_empty() {
                                applied.push(((t.topic_id, p.partition_index), undo));
                            }
                            result.err().unwrap_or(ErrorCode::NONE)
                        }
                    },
                }
            };
            data.error_code = code.code();
            by_topic.entry(t.topic_id).or_default().push(data);
        }
    }
    let closing = epoch == FINAL_EPOCH;
    if epoch == FINAL_EPOCH && closed.is_some() {
        // Closing the session gives back what the member still holds.
        broker.shares.release_member(&group_id, &member_id);
    } else if epoch == FINAL_EPOCH {
        return ready(header, Some(top_level(ErrorCode::SHARE_SESSION_NOT_FOUND)));
    }
    let lock_ms = share_settings(&broker, &group_id).record_lock_duration_ms;
    later(header, async move {
        let failed = persist_acknowledged(&broker, &group_id, applied).await;
        if closing && !failed.is_empty() {
            // The records taken back are the closed member's: the others get them.
            broker.shares.release_member(&group_id, &member_id);
        }
        for ((topic_id, index), code) in failed {
            let written = by_topic
                .get_mut(&topic_id)
                .and_then(|ps| ps.iter_mut().find(|p| p.partition_index == index));
            if let Some(p) = written {
                p.error_code = code.code();
            }
        }
        Some(respond(by_topic, lock_ms))
    })
}

fn respond(by_topic: BTreeMap<Uuid, Vec<PartitionData>>, lock_ms: i64) -> ShareAcknowledgeResponse {
    ShareAcknowledgeResponse {
        acquisition_lock_timeout_ms: lock_ms.min(i32::MAX as i64) as i32,
        responses: by_topic
            .into_iter()
            .map(|(topic_id, partitions)| ShareAcknowledgeTopicResponse {
                topic_id,
                partitions,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
