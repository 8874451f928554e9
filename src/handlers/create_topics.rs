//! CreateTopics (key 19), versions 2-7: defaults with -1 (v4+), per-topic configs, manual
//! replica assignments, validate-only, invalid names refused, duplicates in one request
//! refused with INVALID_REQUEST as Kafka does.
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
use crate::protocol::messages::create_topics_response::*;

fn create_one(
    broker: &Broker,
    t: &CreatableTopic,
    validate_only: bool,
    version: i16,
) -> CreatableTopicResult {
    let mut r = CreatableTopicResult {
        name: t.name.clone(),
        num_partitions: -1,
        replication_factor: -1,
        ..Default::default()
    };
    let fail = |mut r: CreatableTopicResult, code: ErrorCode, msg: String| {
        r.error_code = code.code();
        r.error_message = Some(msg);
        r.configs = None;
        r
    };
    let (partitions, rf) = if !t.assignments.is_empty() {
        if t.num_partitions != -1 || t.replication_factor != -1 {
            return fail(r, ErrorCode::INVALID_REQUEST, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.".into());
        }
        for (i, a) in t.assignments.iter().enumerate() {
            if a.partition_index != i as i32 {
                return fail(
                    r,
                    ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                    "Partitions should be a consecutive 0-based integer sequence".into(),
                );
            }
            if a.broker_ids.is_empty() || a.broker_ids.iter().any(|b| *b != broker.node_id) {
                return fail(
                    r,
                    ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                    format!(
                        "Replica assignment {:?} names unknown brokers",
                        a.broker_ids
                    ),
                );
            }
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
                return fail(
                    r,
                    ErrorCode::INVALID_CONFIG,
                    format!("Null value not supported for topic configs: {}", c.name),
                )
            }
        }
    }
    match broker.create_topic(&t.name, partitions, rf, &configs, validate_only) {
        Ok(meta) => {
            r.topic_id = meta.id;
            r.num_partitions = meta.partitions;
            r.replication_factor = 1;
            if version >= 5 {
                r.configs = Some(
                    super::describe_configs::topic_entries(broker, &meta.configs)
                        .into_iter()
                        .map(|e| CreatableTopicConfigs {
                            name: e.name,
                            value: e.value,
                            read_only: e.read_only,
                            config_source: e.source.id(),
                            is_sensitive: e.is_sensitive,
                            ..Default::default()
                        })
                        .collect(),
                );
            }
            r
        }
        Err(e) => fail(r, e.code, e.message),
    }
}

pub fn handle(broker: &Broker, version: i16, request: CreateTopicsRequest) -> CreateTopicsResponse {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &request.topics {
        *counts.entry(t.name.as_str()).or_default() += 1;
    }
    let topics = request
        .topics
        .iter()
        .map(|t| {
            if counts[t.name.as_str()] > 1 {
                return CreatableTopicResult {
                    name: t.name.clone(),
                    error_code: ErrorCode::INVALID_REQUEST.code(),
                    error_message: Some(format!(
                        "Create topics request from client contains multiple topics named {}",
                        t.name
                    )),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                };
            }
            create_one(broker, t, request.validate_only, version)
        })
        .collect();
    CreateTopicsResponse {
        throttle_time_ms: 0,
        topics,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: CreateTopicsRequest,
    _peer: SocketAddr,
) -> ResponseFuture {
    let response = handle(&broker, header.api_version, request);
    ready(header, Some(response))
}
