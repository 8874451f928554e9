//! ListOffsets (key 2), versions 1-10: earliest (-2), latest (-1, the high watermark or the
//! last stable offset for read_committed), max timestamp (-3, v7+), earliest local (-4, v8+:
//! the log start offset, as there is no tiered storage), earliest pending upload (-5, v9+:
//! none, so -1), and lookup by timestamp through the time index.
use super::ConnectionContext;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_offsets_request::ListOffsetsRequest;
use crate::protocol::messages::list_offsets_response::*;
use crate::replica::partition::Isolation;
use crate::replica::Partition;

pub const LATEST: i64 = -1;
pub const EARLIEST: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;
pub const EARLIEST_LOCAL: i64 = -4;
pub const EARLIEST_PENDING_UPLOAD: i64 = -5;

fn lookup(
    partition: &Partition,
    timestamp: i64,
    isolation: Isolation,
) -> Result<(i64, i64), ErrorCode> {
    let epoch_ts = |offset: i64| (-1i64, offset);
    match timestamp {
        LATEST => Ok(epoch_ts(match isolation {
            Isolation::ReadCommitted => partition.last_stable_offset(),
            Isolation::ReadUncommitted => partition.high_watermark(),
        })),
        EARLIEST | EARLIEST_LOCAL => Ok(epoch_ts(partition.log_start_offset())),
        EARLIEST_PENDING_UPLOAD => Ok((-1, -1)),
        MAX_TIMESTAMP => match partition.log.max_timestamp_and_offset() {
            Ok(Some((ts, offset))) => Ok((ts, offset)),
            Ok(None) => Ok((-1, -1)),
            Err(_) => Err(ErrorCode::KAFKA_STORAGE_ERROR),
        },
        ts if ts < 0 => Err(ErrorCode::INVALID_REQUEST),
        ts => match partition.log.offset_for_timestamp(ts) {
            Ok(Some((offset, found_ts))) => {
                let limit = match isolation {
                    Isolation::ReadCommitted => partition.last_stable_offset(),
                    Isolation::ReadUncommitted => partition.high_watermark(),
                };
                if offset >= limit {
                    Ok((-1, -1))
                } else {
                    Ok((found_ts, offset))
                }
            }
            Ok(None) => Ok((-1, -1)),
            Err(_) => Err(ErrorCode::KAFKA_STORAGE_ERROR),
        },
    }
}

pub fn handle(broker: &Broker, version: i16, request: ListOffsetsRequest) -> ListOffsetsResponse {
    let isolation = Isolation::from_wire(request.isolation_level);
    let topics = request
        .topics
        .into_iter()
        .map(|t| ListOffsetsTopicResponse {
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut r = ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        timestamp: -1,
                        offset: -1,
                        leader_epoch: -1,
                        ..Default::default()
                    };
                    let Some(partition) = broker.replicas.get(&t.name, p.partition_index) else {
                        r.error_code = broker
                            .missing_partition_error(&t.name, p.partition_index)
                            .code();
                        return r;
                    };
                    if let Err(e) = partition.check_leader_epoch(p.current_leader_epoch) {
                        r.error_code = e.code().code();
                        return r;
                    }
                    let supported = match p.timestamp {
                        MAX_TIMESTAMP => version >= 7,
                        EARLIEST_LOCAL => version >= 8,
                        EARLIEST_PENDING_UPLOAD => version >= 9,
                        _ => true,
                    };
                    if !supported {
                        r.error_code = ErrorCode::UNSUPPORTED_VERSION.code();
                        return r;
                    }
                    match lookup(&partition, p.timestamp, isolation) {
                        Ok((ts, offset)) => {
                            r.timestamp = ts;
                            r.offset = offset;
                            if offset >= 0 {
                                r.leader_epoch = partition.leader_epoch();
                            }
                        }
                        Err(code) => r.error_code = code.code(),
                    }
                    r
                })
                .collect(),
            name: t.name,
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
    _conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let response = handle(&broker, header.api_version, request);
    ready(header, Some(response))
}
