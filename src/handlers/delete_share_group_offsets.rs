//! DeleteShareGroupOffsets (API 92) v0, KIP-932: forgets a share group's state for whole
//! topics (`kafka-share-groups --delete-offsets`), so its next fetch starts them from
//! `share.auto.offset.reset`. As Kafka: DELETE on the group, which must have no members, and
//! READ on each topic.
use std::sync::Arc;

use super::share_fetch::empty_group_request;
use super::{later, ready, Broker, ConnectionContext, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequest;
use crate::protocol::messages::delete_share_group_offsets_response::*;

fn refused(code: ErrorCode, message: Option<String>) -> DeleteShareGroupOffsetsResponse {
    DeleteShareGroupOffsetsResponse {
        error_code: code.code(),
        error_message: message.or_else(|| Some(code.message())),
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DeleteShareGroupOffsetsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let group_id = request.group_id.as_str();
    let authz = match empty_group_request(&broker, &conn, group_id, operation::DELETE, false) {
        Ok(authz) => authz,
        Err((code, message)) => return ready(header, Some(refused(code, message))),
    };
    // (topic, its id and partition count when it exists, whether the caller may READ it).
    let topics: Vec<(String, Option<(Uuid, i32)>, bool)> = request
        .topics
        .iter()
        .map(|t| {
            (
                t.topic_name.clone(),
                broker
                    .cluster
                    .topic(&t.topic_name)
                    .map(|m| (m.id, m.partitions)),
                authz.topic(operation::READ, &t.topic_name),
            )
        })
        .collect();
    let group_id = group_id.to_string();
    later(header, async move {
        let mut responses = Vec::new();
        for (topic_name, meta, allowed) in topics {
            let code = match meta {
                _ if !allowed => ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                None => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                Some((id, partitions)) => {
                    let all: Vec<(Uuid, i32)> = (0..partitions).map(|p| (id, p)).collect();
                    match broker.shares.delete_state(&group_id, &all).await {
                        Ok(()) => ErrorCode::NONE,
                        Err(code) => code,
                    }
                }
            };
            responses.push(DeleteShareGroupOffsetsResponseTopic {
                topic_name,
                topic_id: meta.map_or(Uuid::ZERO, |(id, _)| id),
                error_code: code.code(),
                error_message: (!code.is_ok()).then(|| code.message()),
                ..Default::default()
            });
        }
        Some(DeleteShareGroupOffsetsResponse {
            responses,
            ..Default::default()
        })
    })
}
