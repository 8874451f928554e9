//! Produce (key 0), versions 0-11, with 0-2 advertised but refused with UNSUPPORTED_VERSION as
//! Kafka 4 does (old librdkafka only enables compression when it sees them advertised).
//!
//! Two stages: the appends run before the next request of the connection is read (so appends
//! keep connection order), and the response future is what waits for acknowledgement.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::produce_request::ProduceRequest;
use crate::protocol::messages::produce_response::*;

fn partition_error(
    index: i32,
    code: ErrorCode,
    message: Option<String>,
) -> PartitionProduceResponse {
    PartitionProduceResponse {
        index,
        error_code: code.code(),
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
        error_message: message,
        ..Default::default()
    }
}

pub fn handle(broker: &Broker, version: i16, request: ProduceRequest) -> ProduceResponse {
    let acks_valid = matches!(request.acks, 0 | 1 | -1);
    let now_ms = broker.now_ms();
    let mut appended = false;
    let responses = request
        .topic_data
        .into_iter()
        .map(|topic| {
            let partition_responses = topic
                .partition_data
                .into_iter()
                .map(|pd| {
                    if version < 3 {
                        return partition_error(pd.index, ErrorCode::UNSUPPORTED_VERSION, None);
                    }
                    if !acks_valid {
                        return partition_error(pd.index, ErrorCode::INVALID_REQUIRED_ACKS, None);
                    }
                                        let Some(partition) = broker.replicas.get(&topic.name, pd.index) else {
                        return partition_error(pd.index, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, None);
                    };
                    let Some(records) = pd.records else {
                        return partition_error(pd.index, ErrorCode::CORRUPT_MESSAGE, None);
                    };
                    match partition.append_records(records, now_ms) {
                        Ok(out) => {
                            appended |= !out.duplicate;
                            PartitionProduceResponse {
                                index: pd.index,
                                error_code: 0,
                                base_offset: out.base_offset,
                                log_append_time_ms: out.log_append_time_ms,
                                log_start_offset: out.log_start_offset,
                                ..Default::default()
                            }
                        }
                        Err(e) => {
                            tracing::debug!(topic = %topic.name, partition = pd.index, error = ?e, "produce refused");
                            partition_error(pd.index, e.code(), Some(e.message()))
                        }
                    }
                })
                .collect();
            TopicProduceResponse { name: topic.name, partition_responses, ..Default::default() }
        })
        .collect();
    if appended {
        broker.replicas.notify_appended();
    }
    ProduceResponse {
        responses,
        throttle_time_ms: 0,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ProduceRequest,
    _peer: SocketAddr,
) -> ResponseFuture {
    let acks = request.acks;
    let response = handle(&broker, header.api_version, request);
    // acks=0: Kafka sends no response at all.
    ready(header, if acks == 0 { None } else { Some(response) })
}
