//! DeleteTopics (key 20), versions 1-6 (by id from 6): removes the topic from metadata and its
//! data from disk; `delete.topic.enable=false` refuses with TOPIC_DELETION_DISABLED. The
//! active controller removes the topic ([`on_controller`]); brokers forward.
use super::ConnectionContext;
use std::sync::Arc;

use super::{later, Broker, ResponseFuture};
use crate::controller::delete_topics;
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_topics_request::DeleteTopicsRequest;
use crate::protocol::messages::delete_topics_response::*;

pub const DELETE_TOPICS_KEY: i16 = 20;

/// The active controller's side: resolve names (or ids, v6+) against the image, remove the
/// topics by records; every replica drops its data when its publisher sees the removal.
pub async fn on_controller(
    controller: Arc<ControllerService>,
    version: i16,
    request: DeleteTopicsRequest,
) -> Result<DeleteTopicsResponse, ControllerError> {
    let enabled = controller.broker_config().delete_topic_enable;
    controller
        .run(move |image, _, _| {
            let asked: Vec<(Option<String>, Uuid)> = if version >= 6 {
                request
                    .topics
                    .iter()
                    .map(|t| (t.name.clone(), t.topic_id))
                    .collect()
            } else {
                request
                    .topic_names
                    .iter()
                    .map(|n| (Some(n.clone()), Uuid::ZERO))
                    .collect()
            };
            let mut responses = Vec::new();
            let mut names = Vec::new();
            for (name, id) in asked {
                let name =
                    name.or_else(|| image.topic_by_id(id.as_bytes()).map(|t| t.name.clone()));
                let mut r = DeletableTopicResult {
                    name: name.clone(),
                    topic_id: id,
                    ..Default::default()
                };
                match name {
                    None => r.error_code = ErrorCode::UNKNOWN_TOPIC_ID.code(),
                    Some(_) if !enabled => r.error_code = ErrorCode::TOPIC_DELETION_DISABLED.code(),
                    Some(n) => names.push(n),
                }
                responses.push(r);
            }
            let (records, results) = delete_topics(image, &names);
            for (name, result) in results {
                if let Some(r) = responses
                    .iter_mut()
                    .find(|r| r.name.as_deref() == Some(name.as_str()) && r.error_code == 0)
                {
                    match result {
                        Ok(id) => r.topic_id = Uuid(id),
                        Err(code) => r.error_code = code.code(),
                    }
                }
            }
            (
                records,
                DeleteTopicsResponse {
                    throttle_time_ms: 0,
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
    request: DeleteTopicsRequest,
    _conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    {
        return later(header, async move {
            let failed = |code: ErrorCode| DeleteTopicsResponse {
                responses: vec![DeletableTopicResult {
                    error_code: code.code(),
                    error_message: Some(code.message()),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let response = cluster
                .controller_op(
                    DELETE_TOPICS_KEY,
                    version,
                    request,
                    move |c, r| on_controller(c, version, r),
                    failed,
                )
                .await;
            let deleted: Vec<String> = response
                .responses
                .iter()
                .filter(|r| r.error_code == 0)
                .filter_map(|r| r.name.clone())
                .collect();
            cluster.wait_for_topics(&deleted, false).await;
            Some(response)
        });
    }
}
