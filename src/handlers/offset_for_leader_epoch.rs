//! OffsetForLeaderEpoch (key 23), versions 2-4: the end offset of the largest epoch at or below
//! the requested one, from the leader-epoch cache (Kafka's LeaderEpochFileCache.endOffsetFor).
//! Consumers use it to detect log truncation after a leader change.
use super::common::authz::Authz;
use super::common::unknown_partitions::{add_errors, split_refused};
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_for_leader_epoch_request::OffsetForLeaderEpochRequest;
use crate::protocol::messages::offset_for_leader_epoch_response::*;

pub fn handle(
    broker: &Broker,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let topics = request
        .topics
        .into_iter()
        .map(|t| OffsetForLeaderTopicResult {
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let mut r = EpochEndOffset {
                        partition: p.partition,
                        leader_epoch: -1,
                        end_offset: -1,
                        ..Default::default()
                    };
                    let Some(partition) = broker.replicas.get(&t.topic, p.partition) else {
                        r.error_code = broker.missing_partition_error(&t.topic, p.partition).code();
                        return r;
                    };
                    // Only the leader answers, for consumers and followers alike.
                    if !partition.is_leader() {
                        r.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.code();
                        return r;
                    }
                    if let Err(e) = partition.check_leader_epoch(p.current_leader_epoch) {
                        r.error_code = e.code().code();
                        return r;
                    }
                    let (epoch, end_offset) = partition.log.end_offset_for_epoch(p.leader_epoch);
                    r.leader_epoch = epoch;
                    r.end_offset = end_offset;
                    r
                })
                .collect(),
            topic: t.topic,
            ..Default::default()
        })
        .collect();
    OffsetForLeaderEpochResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetForLeaderEpochRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: a follower needs CLUSTER_ACTION on the cluster, a client DESCRIBE on each topic;
    // refused partitions answer TOPIC_AUTHORIZATION_FAILED.
    let mut request = request;
    let authz = Authz::new(&broker, &conn);
    let follower = request.replica_id >= 0;
    let follower_refused = follower && !authz.cluster(operation::CLUSTER_ACTION);
    let refused = split_refused(&mut request.topics, |name| {
        if follower {
            !follower_refused
        } else {
            authz.topic(operation::DESCRIBE, name)
        }
    });
    let mut response = handle(&broker, request);
    add_errors(
        &mut response.topics,
        refused,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
    );
    ready(header, Some(response))
}
