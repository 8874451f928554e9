//! AlterPartition (key 56), versions 0-3 (KIP-497; v3 carries broker epochs, KIP-903):
//! served by the active controller. A leader proposes a new ISR for partitions it leads;
//! each is checked (leader epoch, partition epoch, eligibility of new members) and committed
//! as a partition change, and the response carries the resulting state.
use super::ConnectionContext;
use std::sync::Arc;

use super::{Broker, ResponseFuture};
use crate::controller::alter_partition;
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_partition_request::AlterPartitionRequest;
use crate::protocol::messages::alter_partition_response as resp;
use crate::replica::{
    AlterPartition, BrokerEpoch, BrokerId, IsrMember, LeaderEpoch, PartitionEpoch,
};

fn error(code: ErrorCode) -> resp::AlterPartitionResponse {
    resp::AlterPartitionResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

pub async fn on_controller(
    controller: Arc<ControllerService>,
    version: i16,
    request: AlterPartitionRequest,
) -> Result<resp::AlterPartitionResponse, ControllerError> {
    controller
        .run(move |image, _, _| {
            // A request from an earlier incarnation of the leader is refused whole (KIP-903).
            let current = image.broker(request.broker_id).map(|b| b.broker_epoch);
            if current.is_none()
                || (request.broker_epoch != -1 && current != Some(request.broker_epoch))
            {
                return (Vec::new(), error(ErrorCode::STALE_BROKER_EPOCH));
            }
            // (topic index, partition index, proposal or the error it already has)
            let mut proposals = Vec::new();
            let mut slots: Vec<(usize, i32, Result<usize, ErrorCode>)> = Vec::new();
            for (ti, t) in request.topics.iter().enumerate() {
                // v2+ names topics by id; earlier versions by name.
                let name = if version >= 2 {
                    image
                        .topic_by_id(t.topic_id.as_bytes())
                        .map(|x| x.name.clone())
                } else {
                    Some(t.topic_name.clone())
                };
                for p in &t.partitions {
                    let Some(name) = name.clone() else {
                        slots.push((ti, p.partition_index, Err(ErrorCode::UNKNOWN_TOPIC_ID)));
                        continue;
                    };
                    let new_isr: Vec<IsrMember> = if version >= 3 {
                        p.new_isr_with_epochs
                            .iter()
                            .map(|m| IsrMember {
                                broker: BrokerId(m.broker_id),
                                broker_epoch: BrokerEpoch(m.broker_epoch),
                            })
                            .collect()
                    } else {
                        p.new_isr
                            .iter()
                            .map(|b| IsrMember {
                                broker: BrokerId(*b),
                                broker_epoch: BrokerEpoch::UNKNOWN,
                            })
                            .collect()
                    };
                    slots.push((ti, p.partition_index, Ok(proposals.len())));
                    proposals.push(AlterPartition {
                        topic: name,
                        partition: p.partition_index,
                        leader: BrokerId(request.broker_id),
                        leader_epoch: LeaderEpoch(p.leader_epoch),
                        partition_epoch: PartitionEpoch(p.partition_epoch),
                        new_isr,
                    });
                }
            }
            let (records, results) = alter_partition(image, &proposals);
            let mut topics: Vec<resp::TopicData> = request
                .topics
                .iter()
                .map(|t| resp::TopicData {
                    topic_name: t.topic_name.clone(),
                    topic_id: if version >= 2 { t.topic_id } else { Uuid::ZERO },
                    partitions: Vec::new(),
                    ..Default::default()
                })
                .collect();
            for (ti, partition_index, slot) in slots {
                let outcome = match slot {
                    Ok(i) => results
                        .get(i)
                        .cloned()
                        .unwrap_or(Err(
                            crate::replica::AlterPartitionError::UnknownTopicOrPartition,
                        ))
                        .map_err(|e| e.code()),
                    Err(code) => Err(code),
                };
                topics[ti].partitions.push(match outcome {
                    Ok(reg) => resp::PartitionData {
                        partition_index,
                        error_code: 0,
                        leader_id: reg.leader,
                        leader_epoch: reg.leader_epoch,
                        isr: reg.isr.clone(),
                        partition_epoch: reg.partition_epoch,
                        ..Default::default()
                    },
                    Err(code) => resp::PartitionData {
                        partition_index,
                        error_code: code.code(),
                        leader_id: -1,
                        leader_epoch: -1,
                        partition_epoch: -1,
                        ..Default::default()
                    },
                });
            }
            (
                records,
                resp::AlterPartitionResponse {
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
    request: AlterPartitionRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: CLUSTER_ACTION on the cluster, CLUSTER_AUTHORIZATION_FAILED otherwise.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::CLUSTER_ACTION,
        |r: &mut crate::protocol::messages::alter_partition_response::AlterPartitionResponse,
         code| r.error_code = code.code(),
    ) {
        return refused;
    }
    let version = header.api_version;
    super::controller_only(
        &broker,
        header,
        request,
        move |c, r| on_controller(c, version, r),
        error,
    )
}
