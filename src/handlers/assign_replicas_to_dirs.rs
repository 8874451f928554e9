//! AssignReplicasToDirs (key 73), version 0 (KIP-858): served by the active controller. A
//! broker with several log dirs tells the controller which dir holds each of its replicas;
//! the controller records it in the partitions' `directories`, and a replica placed in a dir
//! the broker reported offline leaves its ISR and leadership.
use super::ConnectionContext;
use std::sync::Arc;

use super::{Broker, ResponseFuture};
use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::{
    assign_replicas_to_dirs, AssignReplicasToDirsRequest as Assign, DirAssignment,
};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::assign_replicas_to_dirs_request::AssignReplicasToDirsRequest;
use crate::protocol::messages::assign_replicas_to_dirs_response::{
    AssignReplicasToDirsResponse, DirectoryData, PartitionData, TopicData,
};

fn error(code: ErrorCode) -> AssignReplicasToDirsResponse {
    AssignReplicasToDirsResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: AssignReplicasToDirsRequest,
) -> Result<AssignReplicasToDirsResponse, ControllerError> {
    let assign = Assign {
        broker_id: request.broker_id,
        broker_epoch: request.broker_epoch,
        directories: request
            .directories
            .iter()
            .map(|d| DirAssignment {
                dir: d.id.0,
                topics: d
                    .topics
                    .iter()
                    .map(|t| {
                        (
                            t.topic_id.0,
                            t.partitions.iter().map(|p| p.partition_index).collect(),
                        )
                    })
                    .collect(),
            })
            .collect(),
    };
    controller
        .run(move |image, _, ctx| {
            let (records, result) = assign_replicas_to_dirs(image, ctx.config, &assign);
            let response = match result {
                Err(code) => error(code),
                Ok(dirs) => AssignReplicasToDirsResponse {
                    error_code: 0,
                    directories: dirs
                        .into_iter()
                        .map(|(dir, topics)| DirectoryData {
                            id: Uuid(dir),
                            topics: topics
                                .into_iter()
                                .map(|(topic_id, partitions)| TopicData {
                                    topic_id: Uuid(topic_id),
                                    partitions: partitions
                                        .into_iter()
                                        .map(|(partition_index, code)| PartitionData {
                                            partition_index,
                                            error_code: code.code(),
                                            ..Default::default()
                                        })
                                        .collect(),
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                },
            };
            (records, response)
        })
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AssignReplicasToDirsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: CLUSTER_ACTION on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::CLUSTER_ACTION,
        |r: &mut crate::protocol::messages::assign_replicas_to_dirs_response::AssignReplicasToDirsResponse, code| r.error_code = code.code(),
    ) {
        return refused;
    }
    super::controller_only(&broker, header, request, on_controller, error)
}
