//! DescribeQuorum (key 55), versions 0-2 (KIP-595, KIP-836): the controller quorum's leader,
//! epoch, high watermark and each voter's log end offset and last fetch, for
//! `kafka-metadata-quorum describe --status/--replication`. Brokers forward it to the active
//! controller as Kafka does; only `__cluster_metadata-0` exists.
use super::ConnectionContext;
use std::sync::Arc;

use super::{Broker, ResponseFuture};
use crate::cluster::ClusterContext;
use crate::controller::Quorum;
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_quorum_request::DescribeQuorumRequest;
use crate::protocol::messages::describe_quorum_response::*;

pub use crate::storage::manager::METADATA_TOPIC;

fn error(code: ErrorCode) -> DescribeQuorumResponse {
    DescribeQuorumResponse {
        error_code: code.code(),
        error_message: Some(code.message()),
        ..Default::default()
    }
}

/// The answer of the active controller from its own quorum state.
pub fn describe(
    cluster: &ClusterContext,
    request: &DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    let asks_metadata = request.topics.len() == 1
        && request.topics[0].topic_name == METADATA_TOPIC
        && request.topics[0].partitions.len() == 1
        && request.topics[0].partitions[0].partition_index == 0;
    if !asks_metadata {
        return error(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    }
    let status = cluster.quorum.status();
    let replica = |r: &crate::controller::ReplicaStatus| ReplicaState {
        replica_id: r.node_id as i32,
        replica_directory_id: Uuid::ZERO,
        log_end_offset: r.log_end_offset,
        last_fetch_timestamp: r.last_fetch_timestamp_ms,
        last_caught_up_timestamp: r.last_caught_up_timestamp_ms,
        ..Default::default()
    };
    let nodes = cluster
        .current_voters()
        .iter()
        .filter_map(|(id, addr)| {
            let (host, port) = addr.rsplit_once(':')?;
            Some(Node {
                node_id: *id,
                listeners: vec![Listener {
                    name: "CONTROLLER".into(),
                    host: host.to_string(),
                    port: port.parse().ok()?,
                    ..Default::default()
                }],
                ..Default::default()
            })
        })
        .collect();
    DescribeQuorumResponse {
        error_code: 0,
        error_message: None,
        topics: vec![TopicData {
            topic_name: METADATA_TOPIC.into(),
            partitions: vec![PartitionData {
                partition_index: 0,
                error_code: 0,
                error_message: None,
                leader_id: status.leader_id.map(|l| l as i32).unwrap_or(-1),
                leader_epoch: status.leader_epoch as i32,
                high_watermark: status.high_watermark as i64,
                current_voters: status.voters.iter().map(replica).collect(),
                observers: status.observers.iter().map(replica).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
        nodes,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeQuorumRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: DESCRIBE on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::DESCRIBE,
        |r: &mut crate::protocol::messages::describe_quorum_response::DescribeQuorumResponse,
         code| r.error_code = code.code(),
    ) {
        return refused;
    }
    let local = broker.cluster.clone();
    super::forwarded(
        &broker,
        header,
        request,
        crate::protocol::messages::describe_quorum_request::DescribeQuorumRequest::API_KEY,
        // Here the local member is the quorum leader: its view is the leader's.
        move |_, r| {
            let local = local.clone();
            async move { Ok(describe(&local, &r)) }
        },
        error,
    )
}
