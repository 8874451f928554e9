//! Coordinator requests against a [`Cluster`] as a client sends them: the coordinator is looked
//! up with FindCoordinator and every request retried on the errors of a coordinator that is
//! moving or not yet loaded (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
//! COORDINATOR_LOAD_IN_PROGRESS, and CONCURRENT_TRANSACTIONS where the Java producer retries it).
#![allow(dead_code)]
use std::time::Duration;

use strata::error::ErrorCode;
use strata::protocol::messages::*;

use super::cluster::Cluster;
use super::txn::{add_partitions_once, end_txn_once, init_producer_id_once};
use super::{api_call, Client};

pub const KEY_GROUP: i8 = 0;
pub const KEY_TXN: i8 = 1;
const ATTEMPTS: usize = 150;
const PAUSE_MS: u64 = 200;

fn retriable(code: i16) -> bool {
    [
        ErrorCode::NOT_COORDINATOR,
        ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode::CONCURRENT_TRANSACTIONS,
    ]
    .iter()
    .any(|e| e.code() == code)
}

async fn pause() {
    tokio::time::sleep(Duration::from_millis(PAUSE_MS)).await;
}

/// The coordinator of `key` as a running node sees it (looked up through each running node
/// in turn until one answers with a running coordinator).
pub async fn find_coordinator(cluster: &Cluster, key: &str, key_type: i8) -> i32 {
    for _ in 0..ATTEMPTS {
        for (i, n) in cluster.nodes.iter().enumerate() {
            if n.running.is_none() {
                continue;
            }
            let mut c = Client::connect(cluster.addr(i)).await;
            let r = api_call!(
                c,
                find_coordinator_request::FindCoordinatorRequest,
                find_coordinator_response::FindCoordinatorResponse,
                3,
                find_coordinator_request::FindCoordinatorRequest {
                    key: key.into(),
                    key_type,
                    ..Default::default()
                }
            );
            let running = cluster
                .nodes
                .iter()
                .any(|n| n.id == r.node_id && n.running.is_some());
            if r.error_code == 0 && running {
                return r.node_id;
            }
        }
        pause().await;
    }
    panic!("no coordinator for {key}");
}

/// A connection to the current coordinator of `key`.
pub async fn coordinator(cluster: &Cluster, key: &str, key_type: i8) -> Client {
    let id = find_coordinator(cluster, key, key_type).await;
    Client::connect(cluster.addr(cluster.index_of(id))).await
}

/// Sends `attempt` (a request to a freshly looked-up coordinator) until it succeeds, as
/// clients retry; any error but a coordinator moving or loading fails the test.
async fn retry_until_ok<T, F, Fut>(what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, i16>>,
{
    for _ in 0..ATTEMPTS {
        match attempt().await {
            Ok(v) => return v,
            Err(code) => assert!(retriable(code), "{what}: {code}"),
        }
        pause().await;
    }
    panic!("{what} never succeeded");
}

pub async fn init_producer_id(cluster: &Cluster, tid: &str, timeout_ms: i32) -> (i64, i16) {
    retry_until_ok("InitProducerId", || async move {
        let mut c = coordinator(cluster, tid, KEY_TXN).await;
        let r = init_producer_id_once(&mut c, tid, timeout_ms).await;
        match r.error_code {
            0 => Ok((r.producer_id, r.producer_epoch)),
            code => Err(code),
        }
    })
    .await
}

pub async fn add_partitions(cluster: &Cluster, tid: &str, pid: (i64, i16), topics: &[&str]) {
    retry_until_ok("AddPartitionsToTxn", || async move {
        let mut c = coordinator(cluster, tid, KEY_TXN).await;
        let codes = add_partitions_once(&mut c, tid, pid, topics).await;
        match codes.iter().find(|c| **c != 0) {
            None => Ok(()),
            Some(code) => Err(*code),
        }
    })
    .await
}

pub async fn add_offsets(cluster: &Cluster, tid: &str, pid: (i64, i16), group: &str) {
    retry_until_ok("AddOffsetsToTxn", || async move {
        let mut c = coordinator(cluster, tid, KEY_TXN).await;
        let r = api_call!(
            c,
            add_offsets_to_txn_request::AddOffsetsToTxnRequest,
            add_offsets_to_txn_response::AddOffsetsToTxnResponse,
            1,
            add_offsets_to_txn_request::AddOffsetsToTxnRequest {
                transactional_id: tid.into(),
                producer_id: pid.0,
                producer_epoch: pid.1,
                group_id: group.into(),
                ..Default::default()
            }
        );
        match r.error_code {
            0 => Ok(()),
            code => Err(code),
        }
    })
    .await
}

/// TxnOffsetCommit of `offset` for partition 0 of `topic`, sent to the group coordinator.
pub async fn txn_offset_commit(
    cluster: &Cluster,
    tid: &str,
    pid: (i64, i16),
    group: &str,
    topic: &str,
    offset: i64,
) {
    use txn_offset_commit_request::*;
    retry_until_ok("TxnOffsetCommit", || async move {
        let mut c = coordinator(cluster, group, KEY_GROUP).await;
        let r = api_call!(
            c,
            txn_offset_commit_request::TxnOffsetCommitRequest,
            txn_offset_commit_response::TxnOffsetCommitResponse,
            2,
            TxnOffsetCommitRequest {
                transactional_id: tid.into(),
                group_id: group.into(),
                producer_id: pid.0,
                producer_epoch: pid.1,
                generation_id: -1,
                topics: vec![TxnOffsetCommitRequestTopic {
                    name: topic.into(),
                    partitions: vec![TxnOffsetCommitRequestPartition {
                        partition_index: 0,
                        committed_offset: offset,
                        committed_leader_epoch: -1,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            }
        );
        match r.topics[0].partitions[0].error_code {
            0 => Ok(()),
            code => Err(code),
        }
    })
    .await
}

/// EndTxn, retried (with a new lookup) until the coordinator answers with something final.
pub async fn end_txn(cluster: &Cluster, tid: &str, pid: (i64, i16), commit: bool) -> i16 {
    let mut code = -1;
    for _ in 0..ATTEMPTS {
        let mut c = coordinator(cluster, tid, KEY_TXN).await;
        code = end_txn_once(&mut c, tid, pid, commit).await;
        if !retriable(code) {
            return code;
        }
        pause().await;
    }
    code
}

/// The committed offset of partition 0 of `topic` for `group` (require_stable: waits out
/// pending transactional offsets as the Java consumer does).
pub async fn offset_fetch(cluster: &Cluster, group: &str, topic: &str) -> i64 {
    for _ in 0..ATTEMPTS {
        let mut c = coordinator(cluster, group, KEY_GROUP).await;
        let (code, offset) = super::txn::offset_fetch_stable(&mut c, group, topic).await;
        if code == 0 {
            return offset;
        }
        assert!(
            retriable(code) || code == ErrorCode::UNSTABLE_OFFSET_COMMIT.code(),
            "OffsetFetch: {code}"
        );
        pause().await;
    }
    panic!("OffsetFetch for {group} never succeeded");
}

/// Partition 0 of `topic` from node index `i` at `isolation` (no aborted-range filtering).
pub async fn fetch_from(
    cluster: &Cluster,
    i: usize,
    topic: &str,
    isolation: i8,
) -> fetch_response::PartitionData {
    let mut c = Client::connect(cluster.addr(i)).await;
    super::fetch_partition(&mut c, topic, 0, isolation, 1 << 20).await
}

/// How many control batches (transaction markers) a fetched partition holds.
pub fn control_batches(p: &fetch_response::PartitionData) -> usize {
    let records = p.records.clone().unwrap_or_default();
    let mut n = 0;
    let mut pos = 0;
    while pos + 61 <= records.len() {
        let h = strata::protocol::records::batch::parse_header(&records[pos..]).unwrap();
        if h.is_control() {
            n += 1;
        }
        pos += h.total_size();
    }
    n
}
