//! DescribeProducers (key 61), version 0: the active idempotent and transactional producers of
//! each partition, from the partition's producer state (used by `kafka-transactions
//! describe-producers` to find hanging transactions).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_producers_request::DescribeProducersRequest;
use crate::protocol::messages::describe_producers_response::*;

pub fn handle(broker: &Broker, request: &DescribeProducersRequest) -> DescribeProducersResponse {
    let topics = request
        .topics
        .iter()
        .map(|t| TopicResponse {
            name: t.name.clone(),
            partitions: t
                .partition_indexes
                .iter()
                .map(|&index| {
                    let mut r = PartitionResponse {
                        partition_index: index,
                        ..Default::default()
                    };
                    match broker.replicas.get(&t.name, index) {
                        None => {
                            r.error_code = broker.missing_partition_error(&t.name, index).code()
                        }
                        Some(p) => {
                            r.active_producers = p.with_producers(|ps| {
                                let mut v: Vec<ProducerState> = ps
                                    .producers()
                                    .map(|(id, e)| ProducerState {
                                        producer_id: *id,
                                        producer_epoch: e.epoch as i32,
                                        last_sequence: e.last_seq().unwrap_or(-1),
                                        last_timestamp: e.last_timestamp,
                                        coordinator_epoch: e.coordinator_epoch,
                                        current_txn_start_offset: e
                                            .current_txn_first_offset
                                            .unwrap_or(-1),
                                        ..Default::default()
                                    })
                                    .collect();
                                v.sort_by_key(|p| p.producer_id);
                                v
                            })
                        }
                    }
                    r
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    DescribeProducersResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeProducersRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let mut response = handle(&broker, &request);
    // Kafka: READ on each topic; a refused topic's partitions answer the error, no producers.
    let authz = Authz::new(&broker, &conn);
    for t in response.topics.iter_mut() {
        if !authz.topic(operation::READ, &t.name) {
            let code = ErrorCode::TOPIC_AUTHORIZATION_FAILED;
            for p in t.partitions.iter_mut() {
                *p = PartitionResponse {
                    partition_index: p.partition_index,
                    error_code: code.code(),
                    error_message: Some(code.message()),
                    ..Default::default()
                };
            }
        }
    }
    ready(header, Some(response))
}
