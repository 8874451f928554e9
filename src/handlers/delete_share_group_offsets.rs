//! DeleteShareGroupOffsets (API 92) v0, KIP-932: forgets a share group's state for whole
//! topics (`kafka-share-groups --delete-offsets`), so its next fetch starts them from
//! `share.auto.offset.reset`. As Kafka: DELETE on the group, which must have no members, and
//! READ on each topic.
use std::sync::Arc;

use super::share_fetch::empty_group_request;
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::acls::operation;
use crate::error::ErrorCode;
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
    let responses = request
        .topics
        .iter()
        .map(|t| {
            let id = broker.cluster.topic(&t.topic_name).map(|m| m.id);
            let code = if !authz.topic(operation::READ, &t.topic_name) {
                ErrorCode::TOPIC_AUTHORIZATION_FAILED
            } else if let Some(id) = id {
                broker.shares.delete_topic(group_id, id);
                ErrorCode::NONE
            } else {
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            };
            DeleteShareGroupOffsetsResponseTopic {
                topic_name: t.topic_name.clone(),
                topic_id: id.unwrap_or_default(),
                error_code: code.code(),
                error_message: (!code.is_ok()).then(|| code.message()),
                ..Default::default()
            }
        })
        .collect();
    ready(
        header,
        Some(DeleteShareGroupOffsetsResponse {
            responses,
            ..Default::default()
        }),
    )
}
