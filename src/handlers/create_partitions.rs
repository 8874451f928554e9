//! CreatePartitions (key 37), versions 0-3: grows a topic's partition count; shrinking or
//! keeping the count is INVALID_PARTITIONS, as Kafka. The active controller
//! places the new partitions ([`on_controller`]); brokers forward. Internal topics are
//! refused on both sides (see [`super::common::internal_topics`]).
use super::common::authz::Authz;
use super::common::throttle;
use super::ConnectionContext;
use crate::protocol::acl::operation;
use crate::security::quotas::MutationQuota;
use std::sync::Arc;

use super::common::internal_topics::{is_known_internal, refusal_message, REFUSED};
use super::{later, ready, Broker, ResponseFuture};
use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::{create_partitions, CreatePartitionsSpec};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_partitions_request::CreatePartitionsRequest;
use crate::protocol::messages::create_partitions_response::*;

/// The active controller's side: new partitions placed like at creation.
pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: CreatePartitionsRequest,
) -> Result<CreatePartitionsResponse, ControllerError> {
    // Also here, for whatever reaches the controller without a broker's check.
    let mut request = request;
    let refused = refuse_internal(&mut request);
    controller
        .run(move |image, _, _| {
            let specs: Vec<CreatePartitionsSpec> = request
                .topics
                .iter()
                .map(|t| CreatePartitionsSpec {
                    name: t.name.clone(),
                    count: t.count,
                    assignments: t
                        .assignments
                        .as_ref()
                        .map(|a| a.iter().map(|x| x.broker_ids.clone()).collect()),
                })
                .collect();
            let (records, results) = create_partitions(image, &specs, request.validate_only);
            let results = results
                .into_iter()
                .map(|(name, code, message)| CreatePartitionsTopicResult {
                    name,
                    error_code: code.code(),
                    error_message: message,
                    ..Default::default()
                })
                .chain(refused.iter().cloned())
                .collect();
            (
                records,
                CreatePartitionsResponse {
                    throttle_time_ms: 0,
                    results,
                    ..Default::default()
                },
            )
        })
        .await
}

/// Takes the internal topics out of `request` and answers them.
fn refuse_internal(request: &mut CreatePartitionsRequest) -> Vec<CreatePartitionsTopicResult> {
    let mut refused = Vec::new();
    request.topics.retain(|t| {
        if !is_known_internal(&t.name) {
            return true;
        }
        refused.push(CreatePartitionsTopicResult {
            name: t.name.clone(),
            error_code: REFUSED.code(),
            error_message: Some(refusal_message("adding partitions", &t.name)),
            ..Default::default()
        });
        false
    });
    refused
}

/// CreatePartitions answers THROTTLING_QUOTA_EXCEEDED from this version; older ones are
/// throttled only (KIP-599).
const STRICT_SINCE_VERSION: i16 = 3;

/// Charges the partitions each topic would gain to the client's controller mutation quota,
/// in request order, as Kafka's controller does, validate-only requests included (an unknown
/// topic, a count that does not grow or a topic named twice costs nothing); with a strict
/// quota the topics that do not fit are taken out and answered THROTTLING_QUOTA_EXCEEDED.
fn apply_mutation_quota(
    broker: &Broker,
    quota: &mut MutationQuota,
    request: &mut CreatePartitionsRequest,
) -> Vec<CreatePartitionsTopicResult> {
    let mut throttled = Vec::new();
    if !quota.is_bounded() {
        return throttled;
    }
    let image = broker.cluster.image();
    let mut named: std::collections::HashMap<String, usize> = Default::default();
    for t in &request.topics {
        *named.entry(t.name.clone()).or_default() += 1;
    }
    let now_ms = broker.now_ms();
    request.topics.retain(|t| {
        let Some(topic) = image.topics.get(&t.name) else {
            return true;
        };
        let added = t.count as i64 - topic.partitions.len() as i64;
        if named[&t.name] > 1 || added <= 0 {
            return true;
        }
        let Err(refused) = quota.record(added as f64, now_ms) else {
            return true;
        };
        let code = ErrorCode::from(&refused);
        throttled.push(CreatePartitionsTopicResult {
            name: t.name.clone(),
            error_code: code.code(),
            error_message: Some(code.message()),
            ..Default::default()
        });
        false
    });
    throttled
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: CreatePartitionsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    let mut request = request;
    let mut refused = refuse_internal(&mut request);
    // Kafka: ALTER on each topic, TOPIC_AUTHORIZATION_FAILED otherwise.
    let authz = Authz::new(&broker, &conn);
    request.topics.retain(|t| {
        let allowed = authz.topic(operation::ALTER, &t.name);
        if !allowed {
            let code = ErrorCode::TOPIC_AUTHORIZATION_FAILED;
            refused.push(CreatePartitionsTopicResult {
                name: t.name.clone(),
                error_code: code.code(),
                error_message: Some(code.message()),
                ..Default::default()
            });
        }
        allowed
    });
    let mut quota = throttle::mutation_quota(&broker, &header, &conn, STRICT_SINCE_VERSION);
    refused.extend(apply_mutation_quota(&broker, &mut quota, &mut request));
    if !refused.is_empty() && request.topics.is_empty() {
        let response = CreatePartitionsResponse {
            throttle_time_ms: throttle::apply(&conn, &[quota.throttle_time_ms(broker.now_ms())]),
            results: refused,
            ..Default::default()
        };
        return ready(header, Some(response));
    }
    {
        let names: Vec<String> = request.topics.iter().map(|t| t.name.clone()).collect();
        let counts: Vec<(String, i32)> = request
            .topics
            .iter()
            .filter(|_| !request.validate_only)
            .map(|t| (t.name.clone(), t.count))
            .collect();
        let client = conn.client(header.client_id.as_deref());
        return later(header, async move {
            let failed = |code: ErrorCode| CreatePartitionsResponse {
                results: names
                    .iter()
                    .map(|n| CreatePartitionsTopicResult {
                        name: n.clone(),
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
                    crate::protocol::messages::create_partitions_request::CreatePartitionsRequest::API_KEY,
                    version,
                    request,
                    request_timeout_ms,
                    Some(&client),
                    on_controller,
                    failed,
                )
                .await;
            let grown: Vec<(String, usize)> = response
                .results
                .iter()
                .filter(|r| r.error_code == 0)
                .filter_map(|r| {
                    counts
                        .iter()
                        .find(|(n, _)| *n == r.name)
                        .map(|(n, c)| (n.clone(), *c as usize))
                })
                .collect();
            cluster
                .wait_until(|image| {
                    grown.iter().all(|(n, c)| {
                        image
                            .topics
                            .get(n)
                            .map_or(true, |t| t.partitions.len() >= *c)
                    })
                })
                .await;
            let mut response = response;
            response.results.extend(refused);
            // A forwarded request was charged by the controller: its throttle comes back in
            // the answer.
            response.throttle_time_ms = throttle::apply(
                &conn,
                &[
                    response.throttle_time_ms as i64,
                    quota.throttle_time_ms(broker.now_ms()),
                ],
            );
            Some(response)
        });
    }
}
