//! Share-group (KIP-932) requests as the share tests send them: ShareFetch v2 of partition 0 in
//! record-limit mode with acknowledgements as (first, last, type), and ShareGroupHeartbeat v1.
use std::time::Duration;

use strata::protocol::codec::Uuid;
use strata::protocol::messages::*;

use super::{api_call, Client};

/// A ShareFetch of partition 0 of `topic_id` for `member_id` of `group` at `epoch`, acquiring
/// at most `max_records` (record-limit mode), waiting at most `max_wait_ms`, carrying `acks`.
#[allow(clippy::too_many_arguments)]
pub fn fetch_request(
    group: &str,
    member_id: &str,
    epoch: i32,
    topic_id: Uuid,
    acks: &[(i64, i64, i8)],
    max_records: i32,
    max_wait_ms: i32,
) -> share_fetch_request::ShareFetchRequest {
    use share_fetch_request::*;
    ShareFetchRequest {
        group_id: Some(group.into()),
        member_id: Some(member_id.into()),
        share_session_epoch: epoch,
        max_wait_ms,
        min_bytes: 1,
        max_bytes: 1 << 20,
        max_records,
        batch_size: max_records,
        share_acquire_mode: 1,
        topics: vec![FetchTopic {
            topic_id,
            partitions: vec![FetchPartition {
                partition_index: 0,
                acknowledgement_batches: acks
                    .iter()
                    .map(|&(first_offset, last_offset, t)| AcknowledgementBatch {
                        first_offset,
                        last_offset,
                        acknowledge_types: vec![t],
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A ShareGroupHeartbeat of `member_id` at `member_epoch`; a join (epoch 0) subscribes to
/// `topic`.
pub fn heartbeat_request(
    group: &str,
    member_id: &str,
    member_epoch: i32,
    topic: &str,
) -> share_group_heartbeat_request::ShareGroupHeartbeatRequest {
    share_group_heartbeat_request::ShareGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: member_id.into(),
        member_epoch,
        subscribed_topic_names: (member_epoch == 0).then(|| vec![topic.into()]),
        ..Default::default()
    }
}

/// ShareGroupHeartbeat v1 of `member_id` at `member_epoch`, subscribed to `topic`; while the
/// group has no coordinator yet (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
/// NOT_COORDINATOR) it asks FindCoordinator, which creates `__consumer_offsets`, and tries
/// again, up to 10 s.
pub async fn heartbeat(
    c: &mut Client,
    group: &str,
    member_id: &str,
    member_epoch: i32,
    topic: &str,
) -> share_group_heartbeat_response::ShareGroupHeartbeatResponse {
    for _ in 0..100 {
        super::find_group_coordinator(c, group).await;
        let r = api_call!(
            c,
            share_group_heartbeat_request::ShareGroupHeartbeatRequest,
            share_group_heartbeat_response::ShareGroupHeartbeatResponse,
            1,
            heartbeat_request(group, member_id, member_epoch, topic)
        );
        if !matches!(r.error_code, 14..=16) {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no group coordinator for {group}");
}
