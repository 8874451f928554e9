//! ElectLeaders (key 43), versions 0-2 (KIP-183, KIP-460 unclean elections): preferred or
//! unclean leader election, run by the active controller (brokers forward it), for
//! `kafka-leader-election`. A null partition list means every partition (preferred only, as
//! Kafka). ELECTION_NOT_NEEDED for an all-partitions request is left out of the answer, as
//! Kafka's controller does.
use super::ConnectionContext;
use std::sync::Arc;

use super::{Broker, ResponseFuture};
use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::{elect_leaders, ElectionType};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::elect_leaders_request::ElectLeadersRequest;
use crate::protocol::messages::elect_leaders_response::*;

fn error(code: ErrorCode) -> ElectLeadersResponse {
    ElectLeadersResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

pub async fn on_controller(
    controller: Arc<ControllerService>,
    version: i16,
    request: ElectLeadersRequest,
) -> Result<ElectLeadersResponse, ControllerError> {
    // v0 has no election type: preferred.
    let kind = if version == 0 {
        0
    } else {
        request.election_type
    };
    let Some(election_type) = ElectionType::from_i8(kind) else {
        return Ok(error(ErrorCode::INVALID_REQUEST));
    };
    controller
        .run(move |image, _, _| {
            let all = request.topic_partitions.is_none();
            let partitions: Vec<(String, i32)> = match &request.topic_partitions {
                Some(list) => list
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| (t.topic.clone(), *p)))
                    .collect(),
                None => image
                    .topics
                    .values()
                    .flat_map(|t| t.partitions.keys().map(|p| (t.name.clone(), *p)))
                    .collect(),
            };
            let (records, results) = elect_leaders(image, election_type, &partitions);
            let mut out: Vec<ReplicaElectionResult> = Vec::new();
            for (topic, partition, code) in results {
                if all && code == ErrorCode::ELECTION_NOT_NEEDED {
                    continue;
                }
                let entry = match out.iter_mut().position(|r| r.topic == topic) {
                    Some(i) => &mut out[i],
                    None => {
                        out.push(ReplicaElectionResult {
                            topic: topic.clone(),
                            ..Default::default()
                        });
                        out.last_mut().expect("just pushed")
                    }
                };
                entry.partition_result.push(PartitionResult {
                    partition_id: partition,
                    error_code: code.code(),
                    error_message: (!code.is_ok()).then(|| code.message()),
                    ..Default::default()
                });
            }
            (
                records,
                ElectLeadersResponse {
                    error_code: 0,
                    replica_election_results: out,
                    ..Default::default()
                },
            )
        })
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ElectLeadersRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: ALTER on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::ALTER,
        |r: &mut crate::protocol::messages::elect_leaders_response::ElectLeadersResponse, code| {
            r.error_code = code.code()
        },
    ) {
        return refused;
    }
    let version = header.api_version;
    super::forwarded(
        &broker,
        header,
        request,
        crate::protocol::messages::elect_leaders_request::ElectLeadersRequest::API_KEY,
        move |c, r| on_controller(c, version, r),
        error,
    )
}
