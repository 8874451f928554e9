//! CreateTopics (key 19), versions 2-7: defaults with -1 (v4+), per-topic configs, manual
//! replica assignments, validate-only, invalid names refused, duplicates in one request
//! refused with INVALID_REQUEST as Kafka does. The active controller decides placement and
//! commits the topic ([`on_controller`]); other brokers forward the request.
use super::ConnectionContext;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{later, Broker, ResponseFuture};
use crate::config::TopicConfig;
use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::{create_topics, CreateTopicSpec};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
use crate::protocol::messages::create_topics_response::*;

/// What one topic of the request asks for, after the checks that need no metadata.
struct Checked {
    partitions: i32,
    replication_factor: i16,
    assignments: Vec<Vec<i32>>,
    configs: BTreeMap<String, String>,
}

fn result(name: &str) -> CreatableTopicResult {
    CreatableTopicResult {
        name: name.to_string(),
        num_partitions: -1,
        replication_factor: -1,
        ..Default::default()
    }
}

fn failed(name: &str, code: ErrorCode, message: String) -> CreatableTopicResult {
    CreatableTopicResult {
        error_code: code.code(),
        error_message: Some(message),
        configs: None,
        ..result(name)
    }
}

fn check(
    t: &CreatableTopic,
    duplicates: &HashMap<&str, usize>,
) -> Result<Checked, (ErrorCode, String)> {
    if duplicates[t.name.as_str()] > 1 {
        return Err((
            ErrorCode::INVALID_REQUEST,
            format!(
                "Create topics request from client contains multiple topics named {}",
                t.name
            ),
        ));
    }
    let mut assignments = Vec::new();
    let (partitions, replication_factor) = if !t.assignments.is_empty() {
        if t.num_partitions != -1 || t.replication_factor != -1 {
            return Err((ErrorCode::INVALID_REQUEST, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.".into()));
        }
        for (i, a) in t.assignments.iter().enumerate() {
            if a.partition_index != i as i32 {
                return Err((
                    ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                    "Partitions should be a consecutive 0-based integer sequence".into(),
                ));
            }
            assignments.push(a.broker_ids.clone());
        }
        (
            t.assignments.len() as i32,
            t.assignments[0].broker_ids.len() as i16,
        )
    } else {
        (t.num_partitions, t.replication_factor)
    };
    let mut configs = BTreeMap::new();
    for c in &t.configs {
        match &c.value {
            Some(v) => {
                configs.insert(c.name.clone(), v.clone());
            }
            None => {
                return Err((
                    ErrorCode::INVALID_CONFIG,
                    format!("Null value not supported for topic configs: {}", c.name),
                ))
            }
        }
    }
    Ok(Checked {
        partitions,
        replication_factor,
        assignments,
        configs,
    })
}

fn duplicates(request: &CreateTopicsRequest) -> HashMap<&str, usize> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &request.topics {
        *counts.entry(t.name.as_str()).or_default() += 1;
    }
    counts
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

pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: CreateTopicsRequest,
) -> Result<CreateTopicsResponse, ControllerError> {
    let counts = duplicates(&request);
    let mut specs = Vec::new();
    let mut early: Vec<Option<CreatableTopicResult>> = Vec::new();
    for t in &request.topics {
        let checked = check(t, &counts).and_then(|c| {
            TopicConfig::resolve(&c.configs, controller.broker_config())
                .map(|_| c)
                .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))
        });
        match checked {
            Ok(c) => {
                // A manual assignment carries the counts itself (the controller wants -1).
                let manual = !c.assignments.is_empty();
                specs.push(CreateTopicSpec {
                    name: t.name.clone(),
                    num_partitions: if manual { -1 } else { c.partitions },
                    replication_factor: if manual { -1 } else { c.replication_factor },
                    assignments: c
                        .assignments
                        .into_iter()
                        .enumerate()
                        .map(|(i, r)| (i as i32, r))
                        .collect(),
                    configs: c.configs.into_iter().map(|(k, v)| (k, Some(v))).collect(),
                });
                early.push(None);
            }
            Err((code, message)) => early.push(Some(failed(&t.name, code, message))),
        }
    }
    let validate_only = request.validate_only;
    let outcomes = controller
        .run(move |image, _, ctx| {
            let mut new_id = || crate::protocol::codec::Uuid::random().0;
            create_topics(image, ctx.config, &specs, validate_only, &mut new_id)
        })
        .await?;
    let mut outcomes = outcomes.into_iter();
    let topics = request
        .topics
        .iter()
        .zip(early)
        .map(|(t, early)| {
            if let Some(r) = early {
                return r;
            }
            match outcomes.next() {
                Some(created) if created.error.is_ok() => CreatableTopicResult {
                    topic_id: crate::protocol::codec::Uuid(created.topic_id),
                    num_partitions: created.num_partitions,
                    replication_factor: created.replication_factor,
                    ..result(&t.name)
                },
                Some(created) => failed(
                    &t.name,
                    created.error,
                    created
                        .error_message
                        .unwrap_or_else(|| created.error.message()),
                ),
                None => failed(
                    &t.name,
                    ErrorCode::UNKNOWN_SERVER_ERROR,
                    "no outcome".into(),
                ),
            }
        })
        .collect();
    Ok(CreateTopicsResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    })
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: CreateTopicsRequest,
    _conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let cluster = broker.cluster.clone();
    let version = header.api_version;
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
        return later(header, async move {
            let mut response = cluster.create_topics(version, request).await;
            if version >= 5 {
                for t in response.topics.iter_mut().filter(|t| t.error_code == 0) {
                    let c = configs.get(&t.name).cloned().unwrap_or_default();
                    t.configs = Some(response_configs(&broker, &c));
                }
            }
            Some(response)
        });
    }
}
