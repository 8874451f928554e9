//! ListOffsets (key 2): the offset (and timestamp and leader epoch) a client starts reading
//! from, as Kafka's `ReplicaManager.fetchOffset` / `UnifiedLog.fetchOffsetByTimestamp` answer
//! it. The versions served are the API table's (`handlers/mod.rs`), which is the one source of
//! truth; each sentinel timestamp needs the version that introduced it: earliest (-2) and
//! latest (-1) from v1, max timestamp (-3, KIP-734) from v7, earliest local (-4, KIP-405) from
//! v8, latest tiered (-5, KIP-1005) from v9, earliest pending upload (-6, KIP-1023) from v11.
//! v10 only adds `timeout_ms` for remote lookups, which Strata (no tiered storage) never waits
//! on; without tiered storage the two tiered sentinels are answered offset -1, epoch -1, as
//! Kafka answers them for a topic without remote storage. v0 (`max_num_offsets`,
//! `old_style_offsets`) is not served, as Kafka 4 removed it.
use super::common::authz::Authz;
use super::common::unknown_partitions::{add_errors, split_refused};
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use std::collections::HashSet;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsRequest};
use crate::protocol::messages::list_offsets_response::*;
use crate::replica::partition::Isolation;
use crate::replica::Partition;

pub const LATEST: i64 = -1;
pub const EARLIEST: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;
pub const EARLIEST_LOCAL: i64 = -4;
pub const LATEST_TIERED: i64 = -5;
pub const EARLIEST_PENDING_UPLOAD: i64 = -6;

/// `replica_id` of an ordinary consumer: it sees only up to the high watermark (or the LSO).
const CONSUMER_REPLICA_ID: i32 = -1;
/// `replica_id` of a debugging client, which any replica (not only the leader) answers.
const DEBUGGING_REPLICA_ID: i32 = -2;

/// The first request version that may carry each sentinel timestamp (Kafka's
/// `timestampMinSupportedVersion`); None for a negative timestamp that is no sentinel.
fn sentinel_min_version(timestamp: i64) -> Option<i16> {
    match timestamp {
        LATEST | EARLIEST => Some(1),
        MAX_TIMESTAMP => Some(7),
        EARLIEST_LOCAL => Some(8),
        LATEST_TIERED => Some(9),
        EARLIEST_PENDING_UPLOAD => Some(11),
        _ => None,
    }
}

/// What one partition answers: a record's timestamp (-1 for the sentinels that name no
/// record), its offset, and the leader epoch of that offset (-1 when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Found {
    timestamp: i64,
    offset: i64,
    leader_epoch: i32,
}

impl Found {
    const NONE: Found = Found {
        timestamp: -1,
        offset: -1,
        leader_epoch: -1,
    };
}

/// The leader epoch of the batch holding `offset`, from the leader epoch cache (the epoch of
/// the last entry starting at or before it), as the batch's `partitionLeaderEpoch` says.
fn epoch_of_offset(partition: &Partition, offset: i64) -> i32 {
    partition
        .log
        .epoch_entries()
        .iter()
        .take_while(|(_, start)| *start <= offset)
        .last()
        .map_or(-1, |(epoch, _)| *epoch)
}

/// `last_fetchable`: the offset a lookup must stay below (HW or LSO for a consumer, the log
/// end offset for a replica or debugging client), as Kafka's `lastFetchableOffset`.
fn lookup(partition: &Partition, timestamp: i64, last_fetchable: i64) -> Result<Found, ErrorCode> {
    let found = match timestamp {
        // Kafka answers LATEST with the partition's current leader epoch.
        LATEST => Found {
            timestamp: -1,
            offset: last_fetchable,
            leader_epoch: partition.leader_epoch(),
        },
        // Without tiered storage the local log start is the log start. The epoch is the
        // earliest cached one when it covers the log start offset (Kafka's check).
        EARLIEST | EARLIEST_LOCAL => {
            let log_start = partition.log_start_offset();
            let leader_epoch = partition
                .log
                .epoch_entries()
                .first()
                .filter(|(_, start)| *start <= log_start)
                .map_or(-1, |(epoch, _)| *epoch);
            Found {
                timestamp: -1,
                offset: log_start,
                leader_epoch,
            }
        }
        // Nothing is tiered: Kafka answers offset -1 with epoch -1.
        LATEST_TIERED | EARLIEST_PENDING_UPLOAD => Found::NONE,
        MAX_TIMESTAMP => match partition.log.max_timestamp_and_offset() {
            Ok(Some((offset, timestamp))) => Found {
                timestamp,
                offset,
                leader_epoch: epoch_of_offset(partition, offset),
            },
            Ok(None) => Found::NONE,
            Err(_) => return Err(ErrorCode::KAFKA_STORAGE_ERROR),
        },
        ts if ts < 0 => return Err(ErrorCode::UNSUPPORTED_VERSION),
        ts => match partition.log.offset_for_timestamp(ts) {
            Ok(Some((offset, timestamp))) => Found {
                timestamp,
                offset,
                leader_epoch: epoch_of_offset(partition, offset),
            },
            Ok(None) => Found::NONE,
            Err(_) => return Err(ErrorCode::KAFKA_STORAGE_ERROR),
        },
    };
    // A record found by timestamp (or as the max timestamp) that a consumer may not read yet
    // is not revealed: Kafka answers "none" (-1, -1) rather than an offset past the HW/LSO.
    let by_record = timestamp == MAX_TIMESTAMP || timestamp >= 0;
    if by_record && found.offset >= last_fetchable {
        return Ok(Found::NONE);
    }
    Ok(found)
}

fn answer(
    broker: &Broker,
    version: i16,
    replica_id: i32,
    isolation: Isolation,
    topic: &str,
    p: &ListOffsetsPartition,
) -> Result<Found, ErrorCode> {
    let timestamp = p.timestamp;
    if sentinel_min_version(timestamp).is_some_and(|min| version < min)
        || (timestamp < 0 && sentinel_min_version(timestamp).is_none())
    {
        return Err(ErrorCode::UNSUPPORTED_VERSION);
    }
    let Some(partition) = broker.replicas.get(topic, p.partition_index) else {
        return Err(broker.missing_partition_error(topic, p.partition_index));
    };
    partition
        .check_leader_epoch(p.current_leader_epoch)
        .map_err(|e| e.code())?;
    // Only a debugging client may ask a follower.
    if replica_id != DEBUGGING_REPLICA_ID && !partition.is_leader() {
        return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
    }
    let last_fetchable = if replica_id == CONSUMER_REPLICA_ID {
        match isolation {
            Isolation::ReadCommitted => partition.last_stable_offset(),
            Isolation::ReadUncommitted => partition.high_watermark(),
        }
    } else {
        partition.log_end_offset()
    };
    lookup(&partition, timestamp, last_fetchable)
}

pub fn handle(broker: &Broker, version: i16, request: ListOffsetsRequest) -> ListOffsetsResponse {
    let isolation = Isolation::from_wire(request.isolation_level);
    // A partition named twice in one request is refused (each time), as Kafka does.
    let mut seen = HashSet::new();
    let mut duplicates = HashSet::new();
    for t in &request.topics {
        for p in &t.partitions {
            if !seen.insert((t.name.as_str(), p.partition_index)) {
                duplicates.insert((t.name.clone(), p.partition_index));
            }
        }
    }
    let topics = request
        .topics
        .iter()
        .map(|t| ListOffsetsTopicResponse {
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let result = if duplicates.contains(&(t.name.clone(), p.partition_index)) {
                        Err(ErrorCode::INVALID_REQUEST)
                    } else {
                        answer(broker, version, request.replica_id, isolation, &t.name, p)
                    };
                    let (found, error_code) = match result {
                        Ok(found) => (found, ErrorCode::NONE),
                        Err(code) => (Found::NONE, code),
                    };
                    ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: error_code.code(),
                        timestamp: found.timestamp,
                        offset: found.offset,
                        leader_epoch: found.leader_epoch,
                        ..Default::default()
                    }
                })
                .collect(),
            name: t.name.clone(),
            ..Default::default()
        })
        .collect();
    ListOffsetsResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ListOffsetsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: DESCRIBE on each topic, TOPIC_AUTHORIZATION_FAILED for its partitions otherwise.
    let mut request = request;
    let authz = Authz::new(&broker, &conn);
    let refused = split_refused(&mut request.topics, |name| {
        authz.topic(operation::DESCRIBE, name)
    });
    let mut response = handle(&broker, header.api_version, request);
    add_errors(
        &mut response.topics,
        refused,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
    );
    ready(header, Some(response))
}
