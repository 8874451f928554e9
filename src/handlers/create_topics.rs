//! CreateTopics (key 19), versions 2-7: defaults with -1 (v4+), per-topic configs, manual
//! replica assignments, validate-only, invalid names refused, duplicates in one request
//! refused with INVALID_REQUEST as Kafka does. The active controller decides placement and
//! commits the topic ([`crate::cluster::create_topics::on_controller`]); other brokers
//! forward the request.
use super::common::authz::Authz;
use super::common::throttle;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::{operation, resource_type, CLUSTER_NAME};
use crate::security::quotas::MutationQuota;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::{later, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_topics_request::CreateTopicsRequest;
use crate::protocol::messages::create_topics_response::*;

/// CreateTopics answers THROTTLING_QUOTA_EXCEEDED from this version; older ones are
/// throttled only (KIP-599).
const STRICT_SINCE_VERSION: i16 = 6;

/// Charges each topic's partitions to the client's controller mutation quota, in request
/// order, as Kafka's controller does for the topics it would create (validate-only ones too:
/// its controller charges them before it drops their records): a topic that exists already
/// or is named twice costs nothing. With a strict quota the topics that do not fit are taken
/// out of the request and answered THROTTLING_QUOTA_EXCEEDED.
fn apply_mutation_quota(
    broker: &Broker,
    quota: &mut MutationQuota,
    request: &mut CreateTopicsRequest,
) -> Vec<CreatableTopicResult> {
    let mut throttled = Vec::new();
    if !quota.is_bounded() {
        return throttled;
    }
    let image = broker.cluster.image();
    let mut named: HashMap<String, usize> = HashMap::new();
    for t in &request.topics {
        *named.entry(t.name.clone()).or_default() += 1;
    }
    let now_ms = broker.now_ms();
    request.topics.retain(|t| {
        if named[&t.name] > 1 || image.topics.contains_key(&t.name) {
            return true;
        }
        let partitions = if !t.assignments.is_empty() {
            t.assignments.len() as i32
        } else if t.num_partitions == -1 {
            broker.config.num_partitions
        } else {
            t.num_partitions
        };
        match quota.record(partitions.max(0) as f64, now_ms) {
            Ok(()) => true,
            Err(refused) => {
                let code = ErrorCode::from(&refused);
                throttled.push(CreatableTopicResult {
                    name: t.name.clone(),
                    error_code: code.code(),
                    error_message: Some(code.message()),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                });
                false
            }
        }
    });
    throttled
}

/// The effective configs of a created topic (v5+ answers carry them).
fn response_configs(
    broker: &Broker,
    configs: &BTreeMap<String, String>,
) -> Vec<CreatableTopicConfigs> {
    super::describe_configs::topic_entries(broker, configs)
        .into_iter()
        .map(|e| CreatableTopicConfigs {
            name: e.name,
            value: e.value,
            read_only: e.read_only,
            config_source: e.source.id(),
            is_sensitive: e.is_sensitive,
            ..Default::default()
        })
        .collect()
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: CreateTopicsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    // Kafka: CREATE on the cluster, or else on each topic (TOPIC_AUTHORIZATION_FAILED).
    let mut request = request;
    let authz = Authz::new(&broker, &conn);
    let mut refused = Vec::new();
    if !authz.visible(operation::CREATE, resource_type::CLUSTER, CLUSTER_NAME) {
        request.topics.retain(|t| {
            let allowed = authz.topic(operation::CREATE, &t.name);
            if !allowed {
                let code = ErrorCode::TOPIC_AUTHORIZATION_FAILED;
                refused.push(CreatableTopicResult {
                    name: t.name.clone(),
                    error_code: code.code(),
                    error_message: Some(code.message()),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                });
            }
            allowed
        });
    }
    let mut quota = throttle::mutation_quota(&broker, &header, &conn, STRICT_SINCE_VERSION);
    refused.extend(apply_mutation_quota(&broker, &mut quota, &mut request));
    if request.topics.is_empty() {
        let response = CreateTopicsResponse {
            throttle_time_ms: throttle::apply(&conn, &[quota.throttle_time_ms(broker.now_ms())]),
            topics: refused,
            ..Default::default()
        };
        return super::ready(header, Some(response));
    }
    // Kafka's controller returns a created topic's configs, partition count and replication
    // factor only to a caller that may DESCRIBE_CONFIGS the topic (not audited); others read
    // TOPIC_AUTHORIZATION_FAILED in topic_config_error_code (v5+).
    let describable: HashSet<String> = request
        .topics
        .iter()
        .filter(|t| authz.visible(operation::DESCRIBE_CONFIGS, resource_type::TOPIC, &t.name))
        .map(|t| t.name.clone())
        .collect();
    {
        let configs: HashMap<String, BTreeMap<String, String>> = request
            .topics
            .iter()
            .map(|t| {
                let c = t
                    .configs
                    .iter()
                    .filter_map(|c| c.value.clone().map(|v| (c.name.clone(), v)))
                    .collect();
                (t.name.clone(), c)
            })
            .collect();
        let client = conn.client(header.client_id.as_deref());
        return later(header, async move {
            let mut response = cluster.create_topics(version, request, Some(&client)).await;
            response.topics.extend(refused);
            // A forwarded request was charged by the controller: its throttle comes back in
            // the answer.
            response.throttle_time_ms = throttle::apply(
                &conn,
                &[
                    response.throttle_time_ms as i64,
                    quota.throttle_time_ms(broker.now_ms()),
                ],
            );
            if version >= 5 {
                for t in response.topics.iter_mut().filter(|t| t.error_code == 0) {
                    if describable.contains(&t.name) {
                        let c = configs.get(&t.name).cloned().unwrap_or_default();
                        t.configs = Some(response_configs(&broker, &c));
                    } else {
                        t.configs = Some(Vec::new());
                        t.num_partitions = -1;
                        t.replication_factor = -1;
                        t.topic_config_error_code = ErrorCode::TOPIC_AUTHORIZATION_FAILED.code();
                    }
                }
            }
            Some(response)
        });
    }
}
