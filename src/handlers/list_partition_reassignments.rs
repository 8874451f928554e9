//! ListPartitionReassignments (key 46), version 0 (KIP-455): the reassignments in progress
//! (replicas, adding, removing), for `kafka-reassign-partitions --verify/--list`. Answered
//! by the active controller (brokers forward it).
use super::ConnectionContext;
use std::sync::Arc;

use super::{Broker, ResponseFuture};
use crate::controller::list_partition_reassignments;
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsRequest;
use crate::protocol::messages::list_partition_reassignments_response::*;

fn error(code: ErrorCode) -> ListPartitionReassignmentsResponse {
    ListPartitionReassignmentsResponse {
        error_code: code.code(),
        error_message: Some(code.message()),
        ..Default::default()
    }
}

pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: ListPartitionReassignmentsRequest,
) -> Result<ListPartitionReassignmentsResponse, ControllerError> {
    controller
        .run(move |image, _, _| {
            let wanted = |topic: &str, partition: i32| match &request.topics {
                None => true,
                Some(list) => list
                    .iter()
                    .any(|t| t.name == topic && t.partition_indexes.contains(&partition)),
            };
            let mut topics: Vec<OngoingTopicReassignment> = Vec::new();
            for r in list_partition_reassignments(image) {
                if !wanted(&r.topic, r.partition) {
                    continue;
                }
                let entry = match topics.iter_mut().position(|t| t.name == r.topic) {
                    Some(i) => &mut topics[i],
                    None => {
                        topics.push(OngoingTopicReassignment {
                            name: r.topic.clone(),
                            ..Default::default()
                        });
                        topics.last_mut().expect("just pushed")
                    }
                };
                entry.partitions.push(OngoingPartitionReassignment {
                    partition_index: r.partition,
                    replicas: r.replicas,
                    adding_replicas: r.adding_replicas,
                    removing_replicas: r.removing_replicas,
                    ..Default::default()
                });
            }
            (
                Vec::new(),
                ListPartitionReassignmentsResponse {
                    error_code: 0,
                    topics,
                    ..Default::default()
                },
            )
        })
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ListPartitionReassignmentsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: DESCRIBE on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::DESCRIBE,
        |r: &mut crate::protocol::messages::list_partition_reassignments_response::ListPartitionReassignmentsResponse, code| r.error_code = code.code(),
    ) {
        return refused;
    }
    super::forwarded(
        &broker,
        header,
        request,
        crate::protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsRequest::API_KEY,
        on_controller,
        error,
    )
}
