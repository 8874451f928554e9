//! FindCoordinator (key 10), versions 0-4 (batched keys from v4): the group coordinator is the
//! leader of the group's `__consumer_offsets` partition, which on a single node is this broker.
//! The offsets topic (key type 0) and the transaction log (key type 1) are created on first
//! use, as Kafka does.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::cluster::ClusterContext;
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use crate::protocol::messages::find_coordinator_response::*;

pub const KEY_TYPE_GROUP: i8 = 0;
pub const KEY_TYPE_TRANSACTION: i8 = 1;

/// The coordinator for one key: (error, node id, host, port).
fn find(broker: &Broker, key_type: i8, key: &str) -> (ErrorCode, i32, String, i32) {
    if let Some(cluster) = &broker.cluster {
        return find_in_cluster(broker, cluster, key_type, key);
    }
    let ep = &broker.endpoints[0];
    match key_type {
        KEY_TYPE_GROUP => {
            if broker.ensure_offsets_topic() {
                (ErrorCode::NONE, broker.node_id, ep.host.clone(), ep.port)
            } else {
                (ErrorCode::COORDINATOR_NOT_AVAILABLE, -1, String::new(), -1)
            }
        }
        KEY_TYPE_TRANSACTION => {
            if broker.ensure_transaction_topic() {
                (ErrorCode::NONE, broker.node_id, ep.host.clone(), ep.port)
            } else {
                (ErrorCode::COORDINATOR_NOT_AVAILABLE, -1, String::new(), -1)
            }
        }
        _ => (ErrorCode::INVALID_REQUEST, -1, String::new(), -1),
    }
}

pub fn handle(
    broker: &Broker,
    version: i16,
    request: &FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    if version < 4 {
        let (error, node_id, host, port) = find(broker, request.key_type, &request.key);
        return FindCoordinatorResponse {
            error_code: error.code(),
            error_message: if error.is_ok() {
                None
            } else {
                Some(error.message())
            },
            node_id,
            host,
            port,
            ..Default::default()
        };
    }
    let coordinators = request
        .coordinator_keys
        .iter()
        .map(|key| {
            let (error, node_id, host, port) = find(broker, request.key_type, key);
            Coordinator {
                key: key.clone(),
                node_id,
                host,
                port,
                error_code: error.code(),
                error_message: if error.is_ok() {
                    None
                } else {
                    Some(error.message())
                },
                ..Default::default()
            }
        })
        .collect();
    FindCoordinatorResponse {
        coordinators,
        ..Default::default()
    }
}

/// In a cluster: the leader of the key's partition of the internal topic, from the image;
/// the topic is created (in the background) on first use, with COORDINATOR_NOT_AVAILABLE
/// meanwhile, as Kafka answers while it creates it.
fn find_in_cluster(
    broker: &Broker,
    cluster: &Arc<ClusterContext>,
    key_type: i8,
    key: &str,
) -> (ErrorCode, i32, String, i32) {
    use super::offsets_topic::{internal_topic_configs, OFFSETS_TOPIC, TRANSACTION_TOPIC};
    let c = &broker.config;
    let (topic, partitions, rf, segment_bytes, partition) = match key_type {
        KEY_TYPE_GROUP => (
            OFFSETS_TOPIC,
            c.offsets_topic_num_partitions.max(1),
            c.offsets_topic_replication_factor,
            c.offsets_topic_segment_bytes,
            broker.groups.partition_for(key),
        ),
        KEY_TYPE_TRANSACTION => (
            TRANSACTION_TOPIC,
            c.transaction_state_log_num_partitions.max(1),
            c.transaction_state_log_replication_factor,
            104_857_600,
            broker.txns.partition_for(key),
        ),
        _ => return (ErrorCode::INVALID_REQUEST, -1, String::new(), -1),
    };
    let unavailable = (ErrorCode::COORDINATOR_NOT_AVAILABLE, -1, String::new(), -1);
    let image = cluster.image();
    let Some(t) = image.topics.get(topic) else {
        let configs = internal_topic_configs(segment_bytes).into_iter().collect();
        cluster.create_topic_in_background(topic, partitions, rf, configs);
        return unavailable;
    };
    let Some(leader) = t.partitions.get(&partition).map(|p| p.leader) else {
        return unavailable;
    };
    match cluster
        .client_brokers()
        .into_iter()
        .find(|(id, ..)| *id == leader)
    {
        Some((id, host, port, _)) => (ErrorCode::NONE, id, host, port),
        None => unavailable,
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: FindCoordinatorRequest,
    _peer: SocketAddr,
) -> ResponseFuture {
    let response = handle(&broker, header.api_version, &request);
    ready(header, Some(response))
}
