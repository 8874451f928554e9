//! DeleteTopics (key 20), versions 1-6 (by id from 6): removes the topic from metadata and its
//! data from disk; `delete.topic.enable=false` refuses with TOPIC_DELETION_DISABLED. The
//! active controller removes the topic ([`on_controller`]); brokers forward. Internal topics
//! are refused on both sides (see [`super::common::internal_topics`]).
use super::common::authz::Authz;
use super::common::throttle;
use super::ConnectionContext;
use crate::protocol::acl::{operation, resource_type, CLUSTER_NAME};
use crate::security::quotas::MutationQuota;
use std::sync::Arc;

use super::common::internal_topics::{is_known_internal, refusal_message, REFUSED};
use super::{later, ready, Broker, ResponseFuture};
use crate::controller::delete_topics;
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_topics_request::DeleteTopicsRequest;
use crate::protocol::messages::delete_topics_response::*;

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
            let asked = requested_topics(version, &request);
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
                    // Also here, for whatever reaches the controller without a broker's check.
                    Some(n) if is_known_internal(&n) => refuse(&mut r, &n),
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

fn refuse(r: &mut DeletableTopicResult, name: &str) {
    r.error_code = REFUSED.code();
    r.error_message = Some(refusal_message("deletion", name));
}

/// Kafka's authorization of DeleteTopics (KRaft `ControllerApis.deleteTopics`): DELETE on the
/// cluster (not audited) allows every topic; otherwise each topic needs DELETE. A topic named
/// by id that the caller may not delete is TOPIC_AUTHORIZATION_FAILED, its name shown only if
/// the caller may DESCRIBE it (an unknown id is left to the controller: UNKNOWN_TOPIC_ID). A
/// topic named by name is TOPIC_AUTHORIZATION_FAILED unless the caller may describe it and it
/// does not exist (UNKNOWN_TOPIC_OR_PARTITION).
fn refuse_unauthorized(
    broker: &Broker,
    authz: &Authz,
    request: &mut DeleteTopicsRequest,
) -> Vec<DeletableTopicResult> {
    let mut refused = Vec::new();
    if !authz.enabled() || authz.visible(operation::DELETE, resource_type::CLUSTER, CLUSTER_NAME) {
        return refused;
    }
    let image = broker.cluster.image();
    let refuse_name = |name: &str, id: Uuid, refused: &mut Vec<DeletableTopicResult>| {
        let code = if authz.topic(operation::DESCRIBE, name) && image.topic(name).is_none() {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        } else {
            ErrorCode::TOPIC_AUTHORIZATION_FAILED
        };
        refused.push(DeletableTopicResult {
            name: Some(name.to_string()),
            topic_id: id,
            error_code: code.code(),
            error_message: Some(code.message()),
            ..Default::default()
        });
    };
    request.topics.retain(|t| match &t.name {
        Some(n) if authz.topic(operation::DELETE, n) => true,
        Some(n) => {
            refuse_name(n, t.topic_id, &mut refused);
            false
        }
        None => match image.topic_by_id(t.topic_id.as_bytes()) {
            None => true,
            Some(info) if authz.topic(operation::DELETE, &info.name) => true,
            Some(info) => {
                let code = ErrorCode::TOPIC_AUTHORIZATION_FAILED;
                refused.push(DeletableTopicResult {
                    name: authz
                        .topic(operation::DESCRIBE, &info.name)
                        .then(|| info.name.clone()),
                    topic_id: t.topic_id,
                    error_code: code.code(),
                    error_message: Some(code.message()),
                    ..Default::default()
                });
                false
            }
        },
    });
    request.topic_names.retain(|n| {
        let allowed = authz.topic(operation::DELETE, n);
        if !allowed {
            refuse_name(n, Uuid::ZERO, &mut refused);
        }
        allowed
    });
    refused
}

fn refuse_internal(
    broker: &Broker,
    version: i16,
    request: &mut DeleteTopicsRequest,
) -> Vec<DeletableTopicResult> {
    let mut refused = Vec::new();
    if version >= 6 {
        let image = broker.cluster.image();
        request.topics.retain(|t| {
            let name = t.name.clone().or_else(|| {
                image
                    .topic_by_id(t.topic_id.as_bytes())
                    .map(|i| i.name.clone())
            });
            match name.filter(|n| is_known_internal(n)) {
                Some(n) => {
                    let mut r = DeletableTopicResult {
                        name: Some(n.clone()),
                        topic_id: t.topic_id,
                        ..Default::default()
                    };
                    refuse(&mut r, &n);
                    refused.push(r);
                    false
                }
                None => true,
            }
        });
    } else {
        request.topic_names.retain(|n| {
            if !is_known_internal(n) {
                return true;
            }
            let mut r = DeletableTopicResult {
                name: Some(n.clone()),
                ..Default::default()
            };
            refuse(&mut r, n);
            refused.push(r);
            false
        });
    }
    refused
}

/// DeleteTopics answers THROTTLING_QUOTA_EXCEEDED from this version; older ones are
/// throttled only (KIP-599).
const STRICT_SINCE_VERSION: i16 = 5;

/// Charges each existing topic's partitions to the client's controller mutation quota, in
/// request order, as Kafka's controller does; with a strict quota the topics that do not fit
/// are taken out of the request and answered THROTTLING_QUOTA_EXCEEDED.
fn apply_mutation_quota(
    broker: &Broker,
    quota: &mut MutationQuota,
    request: &mut DeleteTopicsRequest,
) -> Vec<DeletableTopicResult> {
    let mut throttled = Vec::new();
    if !quota.is_bounded() {
        return throttled;
    }
    let image = broker.cluster.image();
    let now_ms = broker.now_ms();
    let mut admit = |name: Option<&str>, id: Uuid| -> bool {
        let topic = match name {
            Some(n) => image.topics.get(n),
            None => image.topic_by_id(id.as_bytes()),
        };
        let Some(topic) = topic else {
            return true;
        };
        let Err(refused) = quota.record(topic.partitions.len() as f64, now_ms) else {
            return true;
        };
        let code = ErrorCode::from(&refused);
        throttled.push(DeletableTopicResult {
            name: name.map(str::to_string),
            topic_id: id,
            error_code: code.code(),
            error_message: Some(code.message()),
            ..Default::default()
        });
        false
    };
    request
        .topics
        .retain(|t| admit(t.name.as_deref(), t.topic_id));
    request
        .topic_names
        .retain(|n| admit(Some(n.as_str()), Uuid::ZERO));
    throttled
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DeleteTopicsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    let mut request = request;
    let mut refused = refuse_internal(&broker, version, &mut request);
    refused.extend(refuse_unauthorized(
        &broker,
        &Authz::new(&broker, &conn),
        &mut request,
    ));
    let mut quota = throttle::mutation_quota(&broker, &header, &conn, STRICT_SINCE_VERSION);
    refused.extend(apply_mutation_quota(&broker, &mut quota, &mut request));
    if !refused.is_empty() && request.topics.is_empty() && request.topic_names.is_empty() {
        let response = DeleteTopicsResponse {
            throttle_time_ms: throttle::apply(&conn, &[quota.throttle_time_ms(broker.now_ms())]),
            responses: refused,
            ..Default::default()
        };
        return ready(header, Some(response));
    }
    let client = conn.client(header.client_id.as_deref());
    later(header, async move {
        let asked = requested_topics(version, &request);
        // Every topic asked for gets the failure, under its own name or id: a result without
        // either leaves the Java admin client reporting a missing result, which it does not
        // retry, instead of the retriable timeout.
        let failed = move |code: ErrorCode| DeleteTopicsResponse {
            responses: asked
                .into_iter()
                .map(|(name, topic_id)| DeletableTopicResult {
                    name,
                    topic_id,
                    error_code: code.code(),
                    error_message: Some(code.message()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let request_timeout_ms = (request.timeout_ms > 0).then_some(request.timeout_ms as u64);
        let response = cluster
            .controller_op_within(
                crate::protocol::messages::delete_topics_request::DeleteTopicsRequest::API_KEY,
                version,
                request,
                request_timeout_ms,
                Some(&client),
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
        let mut response = response;
        response.responses.extend(refused);
        // A forwarded request was charged by the controller: its throttle comes back in the
        // answer.
        response.throttle_time_ms = throttle::apply(
            &conn,
            &[
                response.throttle_time_ms as i64,
                quota.throttle_time_ms(broker.now_ms()),
            ],
        );
        Some(response)
    })
}

/// The (name, topic id) of every topic a request asks to delete: names before v6, names or
/// ids from v6.
fn requested_topics(version: i16, request: &DeleteTopicsRequest) -> Vec<(Option<String>, Uuid)> {
    if version >= 6 {
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
    }
}
