//! DescribeLogDirs (key 35), versions 1-5: each log dir with the partitions it holds, their
//! sizes, (v4) the file system's total and usable bytes, and (v5) whether the dir is cordoned
//! (KIP-1066): never, since Strata does not cordon log dirs (`cordoned.log.dirs` is an unknown
//! key to it, warned about at start-up). An offline log dir is listed with
//! KAFKA_STORAGE_ERROR and nothing else, as Kafka's `ReplicaManager.describeLogDirs` does.
use super::ConnectionContext;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_log_dirs_request::DescribeLogDirsRequest;
use crate::protocol::messages::describe_log_dirs_response::*;

pub fn handle(broker: &Broker, request: &DescribeLogDirsRequest) -> DescribeLogDirsResponse {
    let wanted = |topic: &str, p: i32| match &request.topics {
        None => true,
        Some(ts) => ts
            .iter()
            .any(|t| t.topic == topic && t.partitions.contains(&p)),
    };
    let mut by_dir: BTreeMap<String, BTreeMap<String, Vec<DescribeLogDirsPartition>>> =
        BTreeMap::new();
    for dir in broker.replicas.logs().log_dirs() {
        by_dir.entry(dir.display().to_string()).or_default();
    }
    for p in broker.replicas.all() {
        if !wanted(&p.topic, p.index) {
            continue;
        }
        let dir = p
            .log
            .dir()
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        by_dir
            .entry(dir)
            .or_default()
            .entry(p.topic.clone())
            .or_default()
            .push(DescribeLogDirsPartition {
                partition_index: p.index,
                partition_size: p.log.size_bytes() as i64,
                offset_lag: 0,
                is_future_key: false,
                ..Default::default()
            });
    }
    let offline: Vec<String> = broker
        .replicas
        .logs()
        .offline_log_dirs()
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    let results = by_dir
        .into_iter()
        .map(|(dir, topics)| {
            if offline.contains(&dir) {
                return DescribeLogDirsResult {
                    error_code: ErrorCode::KAFKA_STORAGE_ERROR.code(),
                    log_dir: dir,
                    ..Default::default()
                };
            }
            let (total, usable) = disk_space(&dir);
            DescribeLogDirsResult {
                error_code: 0,
                log_dir: dir,
                topics: topics
                    .into_iter()
                    .map(|(name, mut partitions)| {
                        partitions.sort_by_key(|p| p.partition_index);
                        DescribeLogDirsTopic {
                            name,
                            partitions,
                            ..Default::default()
                        }
                    })
                    .collect(),
                total_bytes: total,
                usable_bytes: usable,
                ..Default::default()
            }
        })
        .collect();
    DescribeLogDirsResponse {
        throttle_time_ms: 0,
        error_code: 0,
        results,
        ..Default::default()
    }
}

/// Total and available bytes of the file system holding `dir` (-1 when unknown).
fn disk_space(dir: &str) -> (i64, i64) {
    let Ok(path) = std::ffi::CString::new(dir) else {
        return (-1, -1);
    };
    // SAFETY: statvfs only writes into the struct we pass, and `path` is a valid C string.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(path.as_ptr(), &mut st) != 0 {
            return (-1, -1);
        }
        let frsize = st.f_frsize as i64;
        (st.f_blocks as i64 * frsize, st.f_bavail as i64 * frsize)
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeLogDirsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: DESCRIBE on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::DESCRIBE,
        |r: &mut crate::protocol::messages::describe_log_dirs_response::DescribeLogDirsResponse,
         code| r.error_code = code.code(),
    ) {
        return refused;
    }
    let response = handle(&broker, &request);
    ready(header, Some(response))
}
