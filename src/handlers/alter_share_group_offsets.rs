//! AlterShareGroupOffsets (API 91) v0, KIP-932: `kafka-share-groups --reset-offsets` sets the
//! start offset of a share group's partitions, nothing left in flight. As Kafka: READ on the
//! group, the group must have no members (NON_EMPTY_GROUP), and READ on each topic.
use std::collections::BTreeMap;
use std::sync::Arc;

use super::share_fetch::empty_group_request;
use super::share_fetch::{led_partition, share_settings};
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::acls::operation;
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_share_group_offsets_request::AlterShareGroupOffsetsRequest;
use crate::protocol::messages::alter_share_group_offsets_response::*;

fn refused(code: ErrorCode, message: Option<String>) -> AlterShareGroupOffsetsResponse {
    AlterShareGroupOffsetsResponse {
        error_code: code.code(),
        error_message: message.or_else(|| Some(code.message())),
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AlterShareGroupOffsetsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let group_id = request.group_id.as_str();
    let authz = match empty_group_request(&broker, &conn, group_id, operation::READ, true) {
        Ok(authz) => authz,
        Err((code, message)) => return ready(header, Some(refused(code, message))),
    };
    let settings = share_settings(&broker, group_id);
    let mut responses: BTreeMap<String, AlterShareGroupOffsetsResponseTopic> = BTreeMap::new();
    for t in &request.topics {
        let id = broker
            .cluster
            .topic(&t.topic_name)
            .map_or(Uuid::ZERO, |m| m.id);
        let out = responses.entry(t.topic_name.clone()).or_insert_with(|| {
            AlterShareGroupOffsetsResponseTopic {
                topic_name: t.topic_name.clone(),
                topic_id: id,
                ..Default::default()
            }
        });
        for p in &t.partitions {
            let code = if !authz.topic(operation::READ, &t.topic_name) {
                ErrorCode::TOPIC_AUTHORIZATION_FAILED
            } else if id == Uuid::ZERO {
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            } else {
                match led_partition(&broker, id, p.partition_index) {
                    Err((code, ..)) => code,
                    Ok(partition) => {
                        let (start, end) =
                            (partition.log_start_offset(), partition.high_watermark());
                        // Kafka takes any offset and clamps it to the log when the share
                        // partition is next read; an explicit -1 means "from the reset policy".
                        let offset = p.start_offset.clamp(start, end.max(start));
                        if p.start_offset < 0 {
                            broker
                                .shares
                                .delete_topic_partition(group_id, id, p.partition_index);
                        } else {
                            broker
                                .shares
                                .alter_start_offset(group_id, id, &partition, &settings, offset);
                        }
                        ErrorCode::NONE
                    }
                }
            };
            out.partitions
                .push(AlterShareGroupOffsetsResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code.code(),
                    error_message: (!code.is_ok()).then(|| code.message()),
                    ..Default::default()
                });
        }
    }
    ready(
        header,
        Some(AlterShareGroupOffsetsResponse {
            responses: responses.into_values().collect(),
            ..Default::default()
        }),
    )
}
