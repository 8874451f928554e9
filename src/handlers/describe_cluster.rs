//! DescribeCluster (key 60), versions 0-2: the cluster id, controller and brokers (used by the
//! admin client and `kafka-cluster`). Endpoint type 2 (controllers) is answered with this node,
//! which is a controller too. v2 (KIP-1073) lists fenced brokers too, marked, when asked.
use super::ConnectionContext;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_cluster_request::DescribeClusterRequest;
use crate::protocol::messages::describe_cluster_response::*;

pub fn handle(
    broker: &Broker,
    listener: &str,
    request: &DescribeClusterRequest,
) -> DescribeClusterResponse {
    if request.endpoint_type != 1 && request.endpoint_type != 2 {
        return DescribeClusterResponse {
            error_code: ErrorCode::UNSUPPORTED_ENDPOINT_TYPE.code(),
            endpoint_type: request.endpoint_type,
            ..Default::default()
        };
    }
    let cluster = &broker.cluster;
    // Endpoint type 2 asks for the controllers (KIP-919), 1 for the brokers.
    let brokers = if request.endpoint_type == 2 {
        cluster
            .current_voters()
            .iter()
            .filter_map(|(id, addr)| {
                let (host, port) = addr.rsplit_once(':')?;
                Some(((*id, host.to_string(), port.parse().ok()?, None), false))
            })
            .collect()
    } else {
        cluster.brokers_on(Some(listener), request.include_fenced_brokers)
    };
    DescribeClusterResponse {
        error_code: 0,
        endpoint_type: request.endpoint_type,
        cluster_id: broker.cluster_id.clone(),
        controller_id: if request.endpoint_type == 2 {
            cluster.active_controller_id().unwrap_or(-1)
        } else {
            // Admin requests sent to any broker are forwarded (KIP-590).
            broker.node_id
        },
        brokers: brokers
            .into_iter()
            .map(
                |((broker_id, host, port, rack), is_fenced)| DescribeClusterBroker {
                    broker_id,
                    host,
                    port,
                    rack,
                    is_fenced,
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeClusterRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: DESCRIBE on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::DESCRIBE,
        |r: &mut crate::protocol::messages::describe_cluster_response::DescribeClusterResponse,
         code| r.error_code = code.code(),
    ) {
        return refused;
    }
    let mut response = handle(&broker, &conn.listener_name, &request);
    if request.include_cluster_authorized_operations {
        response.cluster_authorized_operations = super::common::authz::Authz::new(&broker, &conn)
            .authorized_operations(
                crate::protocol::acl::resource_type::CLUSTER,
                crate::protocol::acl::CLUSTER_NAME,
            );
    }
    ready(header, Some(response))
}
