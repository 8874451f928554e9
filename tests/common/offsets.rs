//! OffsetCommit helpers shared by the offset and metrics tests: a commit as a member or a
//! "simple" one (no member, no generation), retried while the group's coordinator is being set up.
use strata::error::ErrorCode;
use strata::protocol::messages::*;

use super::{api_call, Client};

/// [`commit_once`] after a FindCoordinator, retried while the group's coordinator is still
/// being set up.
pub async fn commit(
    c: &mut Client,
    version: i16,
    group: &str,
    rows: &[(&str, i32)],
    offset: i64,
) -> Vec<(String, i32, i16)> {
    let waiting = [
        ErrorCode::NOT_COORDINATOR.code(),
        ErrorCode::COORDINATOR_NOT_AVAILABLE.code(),
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code(),
    ];
    for _ in 0..100 {
        // As a client does first: the lookup creates `__consumer_offsets` on first use.
        let _ = api_call!(
            c,
            find_coordinator_request::FindCoordinatorRequest,
            find_coordinator_response::FindCoordinatorResponse,
            3,
            find_coordinator_request::FindCoordinatorRequest {
                key: group.into(),
                key_type: 0,
                ..Default::default()
            }
        );
        let r = commit_once(c, version, group, ("", -1), rows, offset).await;
        if !r.iter().any(|(_, _, code)| waiting.contains(code)) {
            return r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no coordinator for {group}");
}

/// A commit of `offset` for each (topic, partition) by `member` = (member id, generation);
/// ("", -1) is a "simple" commit, as the admin client makes.
pub async fn commit_once(
    c: &mut Client,
    version: i16,
    group: &str,
    member: (&str, i32),
    rows: &[(&str, i32)],
    offset: i64,
) -> Vec<(String, i32, i16)> {
    use offset_commit_request::*;
    let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
    for (t, p) in rows {
        let partition = OffsetCommitRequestPartition {
            partition_index: *p,
            committed_offset: offset,
            committed_leader_epoch: -1,
            ..Default::default()
        };
        match topics.iter_mut().find(|x| x.name == *t) {
            Some(x) => x.partitions.push(partition),
            None => topics.push(OffsetCommitRequestTopic {
                name: t.to_string(),
                partitions: vec![partition],
                ..Default::default()
            }),
        }
    }
    let r = api_call!(
        c,
        offset_commit_request::OffsetCommitRequest,
        offset_commit_response::OffsetCommitResponse,
        version,
        OffsetCommitRequest {
            group_id: group.into(),
            member_id: member.0.into(),
            generation_id_or_member_epoch: member.1,
            retention_time_ms: -1,
            topics,
            ..Default::default()
        }
    );
    let mut out: Vec<(String, i32, i16)> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.clone(), p.partition_index, p.error_code))
        })
        .collect();
    out.sort();
    out
}
