//! DescribeConfigs (key 32), versions 1-4: every config of a topic or of the broker with its
//! value, source, read-only and sensitive flags, synonyms (v1+, in Kafka's precedence order)
//! and type (v3+), so `kafka-configs --describe --all` shows what Kafka would.
use super::authz::Authz;
use super::ConnectionContext;
use crate::controller::acls::operation;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::config::{describe_broker_configs, describe_topic_configs, ConfigEntry};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_configs_request::{
    DescribeConfigsRequest, DescribeConfigsResource,
};
use crate::protocol::messages::describe_configs_response::*;

/// Kafka's ConfigResource types.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;
pub const RESOURCE_BROKER_LOGGER: i8 = 8;

/// Why an alter of one resource failed: the error code and message for its result.
pub type AlterError = (ErrorCode, String);

/// The common path of AlterConfigs and IncrementalAlterConfigs for one resource: refuses
/// broker resources (static in Strata), finds the topic, lets `next` compute the topic's new
/// override set from the current one, validates the result as a whole, and (unless
/// `validate_only`) records only the keys that changed, or hands them to `forward`.
pub fn alter_topic_overrides(
    broker: &Broker,
    resource_type: i8,
    resource_name: &str,
    api: &str,
    validate_only: bool,
    forward: &mut Vec<(String, Vec<(String, Option<String>)>)>,
    next: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AlterError>,
) -> Result<(), AlterError> {
    let changes = topic_override_changes(broker, resource_type, resource_name, api, next)?;
    if validate_only || changes.is_empty() {
        return Ok(());
    }
    // The changes go to the active controller (the caller sends them).
    forward.push((resource_name.to_string(), changes));
    Ok(())
}

/// The override changes (`Some` sets, `None` removes) an alter of one resource amounts to,
/// validated against the topic's current overrides; nothing is written. In a cluster these
/// go to the active controller.
pub fn topic_override_changes(
    broker: &Broker,
    resource_type: i8,
    resource_name: &str,
    api: &str,
    next: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AlterError>,
) -> Result<Vec<(String, Option<String>)>, AlterError> {
    match resource_type {
        RESOURCE_TOPIC => {}
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER if is_this_broker(broker, resource_name) => {
            return Err((
                ErrorCode::INVALID_REQUEST,
                "Strata's broker configs are static; change server.properties and restart".into(),
            ))
        }
        other => {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!("Unsupported resource type {other} for {api}"),
            ))
        }
    }
    let meta = broker.cluster.topic(resource_name).ok_or((
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        format!("Topic {resource_name} does not exist."),
    ))?;
    let next = next(&meta.configs)?;
    broker
        .topic_config(&next)
        .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))?;
    let mut changes: Vec<(String, Option<String>)> = meta
        .configs
        .keys()
        .filter(|k| !next.contains_key(*k))
        .map(|k| (k.clone(), None))
        .collect();
    changes.extend(
        next.into_iter()
            .filter(|(k, v)| meta.configs.get(k) != Some(v))
            .map(|(k, v)| (k, Some(v))),
    );
    Ok(changes)
}

/// An alter result as the response fields (error code, message).
pub fn alter_outcome(result: Result<(), AlterError>) -> (i16, Option<String>) {
    match result {
        Ok(()) => (0, None),
        Err((code, message)) => (code.code(), Some(message)),
    }
}

/// The described configs of a topic with these overrides (also used by CreateTopics v5+).
pub fn topic_entries(broker: &Broker, overrides: &BTreeMap<String, String>) -> Vec<ConfigEntry> {
    describe_topic_configs(overrides, &broker.config).unwrap_or_default()
}

/// Whether a broker resource name designates this broker ("" is the cluster-wide default).
pub fn is_this_broker(broker: &Broker, name: &str) -> bool {
    name.is_empty() || name.parse::<i32>().ok() == Some(broker.node_id)
}

fn describe_one(
    broker: &Broker,
    r: &DescribeConfigsResource,
    include_synonyms: bool,
    version: i16,
) -> DescribeConfigsResult {
    let mut result = DescribeConfigsResult {
        resource_type: r.resource_type,
        resource_name: r.resource_name.clone(),
        ..Default::default()
    };
    let entries = match r.resource_type {
        RESOURCE_TOPIC => match broker.cluster.topic(&r.resource_name) {
            Some(meta) => topic_entries(broker, &meta.configs),
            None => {
                result.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code();
                result.error_message = Some(format!("Topic {} does not exist.", r.resource_name));
                return result;
            }
        },
        RESOURCE_BROKER if is_this_broker(broker, &r.resource_name) => {
            describe_broker_configs(&broker.config)
        }
        RESOURCE_BROKER => {
            result.error_code = ErrorCode::INVALID_REQUEST.code();
            result.error_message = Some(format!(
                "Unexpected broker id, expected {} or empty string, but received {}",
                broker.node_id, r.resource_name
            ));
            return result;
        }
        RESOURCE_BROKER_LOGGER => Vec::new(),
        other => {
            result.error_code = ErrorCode::INVALID_REQUEST.code();
            result.error_message = Some(format!("Unsupported resource type {other}"));
            return result;
        }
    };
    result.configs = entries
        .into_iter()
        .filter(|e| {
            r.configuration_keys
                .as_ref()
                .is_none_or(|keys| keys.contains(&e.name))
        })
        .map(|e| DescribeConfigsResourceResult {
            value: e.value.clone(),
            read_only: e.read_only,
            is_default: e.is_default,
            config_source: e.source.id(),
            is_sensitive: e.is_sensitive,
            synonyms: if include_synonyms {
                e.synonyms
                    .iter()
                    .map(|s| DescribeConfigsSynonym {
                        name: s.name.clone(),
                        value: s.value.clone(),
                        source: s.source.id(),
                        ..Default::default()
                    })
                    .collect()
            } else {
                Vec::new()
            },
            config_type: if version >= 3 { e.config_type_id() } else { 0 },
            documentation: None,
            name: e.name,
            ..Default::default()
        })
        .collect();
    result
}

pub fn handle(
    broker: &Broker,
    version: i16,
    request: &DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let results = request
        .resources
        .iter()
        .map(|r| describe_one(broker, r, request.include_synonyms, version))
        .collect();
    DescribeConfigsResponse {
        throttle_time_ms: 0,
        results,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeConfigsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let mut response = handle(&broker, header.api_version, &request);
    // Kafka: DESCRIBE_CONFIGS on each resource; a refused one answers the error alone.
    let authz = Authz::new(&broker, &conn);
    for r in response.results.iter_mut() {
        if let Some(code) = authz.config_refusal(
            operation::DESCRIBE_CONFIGS,
            r.resource_type,
            &r.resource_name,
        ) {
            r.error_code = code.code();
            r.error_message = Some(code.message());
            r.configs.clear();
        }
    }
    ready(header, Some(response))
}
