//! AlterShareGroupOffsets (API 91) v0, KIP-932: `kafka-share-groups --reset-offsets` sets the
//! start offset of a share group's partitions, nothing left in flight. As Kafka: READ on the
//! group, the group must have no members (NON_EMPTY_GROUP), and READ on each topic.
use std::collections::BTreeMap;
use std::sync::Arc;

use super::share_fetch::empty_group_request;
use super::{later, ready, Broker, ConnectionContext, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
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
    // (topic, whether the caller may READ it, (partition, start offset)s).
    let topics: Vec<(String, bool, Vec<(i32, i64)>)> = request
        .topics
        .iter()
        .map(|t| {
            (
                t.topic_name.clone(),
                authz.topic(operation::READ, &t.topic_name),
                t.partitions
                    .iter()
                    .map(|p| (p.partition_index, p.start_offset))
                    .collect(),
            )
        })
        .collect();
    let group_id = group_id.to_string();
    later(header, async move {
        let mut responses: BTreeMap<String, AlterShareGroupOffsetsResponseTopic> = BTreeMap::new();
        for (name, allowed, partitions) in topics {
            let meta = broker.cluster.topic(&name);
            let out = responses.entry(name.clone()).or_insert_with(|| {
                AlterShareGroupOffsetsResponseTopic {
                    topic_name: name.clone(),
                    topic_id: meta.as_ref().map_or(Uuid::ZERO, |m| m.id),
                    ..Default::default()
                }
            });
            for (index, start_offset) in partitions {
                let code = if !allowed {
                    ErrorCode::TOPIC_AUTHORIZATION_FAILED
                } else if meta
                    .as_ref()
                    .is_none_or(|m| index < 0 || index >= m.partitions)
                {
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                } else {
                    let id = meta.as_ref().map_or(Uuid::ZERO, |m| m.id);
                    alter_one(&broker, &group_id, &name, id, index, start_offset).await
                };
                out.partitions
                    .push(AlterShareGroupOffsetsResponsePartition {
                        partition_index: index,
                        error_code: code.code(),
                        error_message: (!code.is_ok()).then(|| code.message()),
                        ..Default::default()
                    });
            }
        }
        Some(AlterShareGroupOffsetsResponse {
            responses: responses.into_values().collect(),
            ..Default::default()
        })
    })
}

/// Sets one share partition's start offset in its durable state. Kafka takes any offset and
/// clamps it to the log; where a replica is here its log start and high watermark clamp it
/// at once. An explicit -1 means "from the reset policy": the state is deleted.
async fn alter_one(
    broker: &Broker,
    group_id: &str,
    topic: &str,
    id: Uuid,
    index: i32,
    start_offset: i64,
) -> ErrorCode {
    let outcome = if start_offset < 0 {
        broker.shares.delete_state(group_id, &[(id, index)]).await
    } else {
        let offset = match broker.replicas.get(topic, index) {
            Some(p) => {
                let (start, end) = (p.log_start_offset(), p.high_watermark());
                start_offset.clamp(start, end.max(start))
            }
            None => start_offset,
        };
        broker
            .shares
            .alter_start_offset(group_id, id, index, offset)
            .await
    };
    outcome.err().unwrap_or(ErrorCode::NONE)
}
