//! DeleteTopics (key 20), versions 1-6 (by id from 6): removes the topic from metadata and its
//! data from disk; `delete.topic.enable=false` refuses with TOPIC_DELETION_DISABLED.
use std::net::SocketAddr;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_topics_request::DeleteTopicsRequest;
use crate::protocol::messages::delete_topics_response::*;

fn delete_one(broker: &Broker, name: Option<String>, id: Uuid) -> DeletableTopicResult {
    let mut r = DeletableTopicResult {
        name: name.clone(),
        topic_id: id,
        ..Default::default()
    };
    let name = match name {
        Some(n) => n,
        None => match broker.metadata.topic_name_by_id(&id) {
            Some(n) => n,
            None => {
                r.error_code = ErrorCode::UNKNOWN_TOPIC_ID.code();
                return r;
            }
        },
    };
    r.name = Some(name.clone());
    if !broker.config.delete_topic_enable {
        r.error_code = ErrorCode::TOPIC_DELETION_DISABLED.code();
        return r;
    }
    match broker.delete_topic(&name) {
        Ok(meta) => r.topic_id = meta.id,
        Err(e) => {
            r.error_code = e.code.code();
            r.error_message = Some(e.message);
        }
    }
    r
}

pub fn handle(broker: &Broker, version: i16, request: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let responses = if version >= 6 {
        request
            .topics
            .into_iter()
            .map(|t| delete_one(broker, t.name, t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .into_iter()
            .map(|n| delete_one(broker, Some(n), Uuid::ZERO))
            .collect()
    };
    DeleteTopicsResponse {
        throttle_time_ms: 0,
        responses,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DeleteTopicsRequest,
    _peer: SocketAddr,
) -> ResponseFuture {
    let response = handle(&broker, header.api_version, request);
    ready(header, Some(response))
}
