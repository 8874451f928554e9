//! AlterPartitionReassignments (key 45), versions 0-1 (KIP-455; v1 KIP-860 can forbid a change
//! of replication factor, `--disallow-replication-factor-change`): start, replace or cancel
//! replica reassignments, run by the active controller (brokers forward it), for
//! `kafka-reassign-partitions --execute/--cancel`. The new replicas join as followers and the
//! reassignment completes when they are all in the ISR.
use super::ConnectionContext;
use std::sync::Arc;

use super::{Broker, ResponseFuture};
use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::{alter_partition_reassignments, ReassignmentRequest};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_partition_reassignments_request::AlterPartitionReassignmentsRequest;
use crate::protocol::messages::alter_partition_reassignments_response::*;

fn error(code: ErrorCode) -> AlterPartitionReassignmentsResponse {
    AlterPartitionReassignmentsResponse {
        error_code: code.code(),
        error_message: Some(code.message()),
        ..Default::default()
    }
}

pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: AlterPartitionReassignmentsRequest,
) -> Result<AlterPartitionReassignmentsResponse, ControllerError> {
    controller
        .run(move |image, _, ctx| {
            let requests: Vec<ReassignmentRequest> = request
                .topics
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(|p| ReassignmentRequest {
                        topic: t.name.clone(),
                        partition: p.partition_index,
                        target: p.replicas.clone(),
                        allow_replication_factor_change: request.allow_replication_factor_change,
                    })
                })
                .collect();
            let (records, results) = alter_partition_reassignments(image, ctx.config, &requests);
            let mut responses: Vec<ReassignableTopicResponse> = Vec::new();
            for (topic, partition, code, message) in results {
                let entry = match responses.iter_mut().position(|r| r.name == topic) {
                    Some(i) => &mut responses[i],
                    None => {
                        responses.push(ReassignableTopicResponse {
                            name: topic.clone(),
                            ..Default::default()
                        });
                        responses.last_mut().expect("just pushed")
                    }
                };
                entry.partitions.push(ReassignablePartitionResponse {
                    partition_index: partition,
                    error_code: code.code(),
                    error_message: message.or_else(|| (!code.is_ok()).then(|| code.message())),
                    ..Default::default()
                });
            }
            (
                records,
                AlterPartitionReassignmentsResponse {
                    error_code: 0,
                    allow_replication_factor_change: request.allow_replication_factor_change,
                    responses,
                    ..Default::default()
                },
            )
        })
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AlterPartitionReassignmentsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: ALTER on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::ALTER,
        |r: &mut crate::protocol::messages::alter_partition_reassignments_response::AlterPartitionReassignmentsResponse, code| r.error_code = code.code(),
    ) {
        return refused;
    }
    super::forwarded(
        &broker,
        header,
        request,
        crate::protocol::messages::alter_partition_reassignments_request::AlterPartitionReassignmentsRequest::API_KEY,
        on_controller,
        error,
    )
}
