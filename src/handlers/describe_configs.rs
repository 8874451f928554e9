//! DescribeConfigs (key 32), versions 1-4: every config of a topic, of the broker, of a group
//! (GROUP, KIP-848) or of a client-metrics subscription (CLIENT_METRICS, KIP-714) with its
//! value, source, read-only and sensitive flags, synonyms (v1+, in Kafka's precedence order)
//! and type (v3+), so `kafka-configs --describe --all` shows what Kafka would.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::operation;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::common::config_changes::is_this_broker;
use super::{ready, Broker, ResponseFuture};
use crate::config::client_metrics::describe_client_metrics;
use crate::config::describe::broker_key_synonyms;
use crate::config::group::{describe_group_configs, GroupConfigDefaults};
use crate::config::{
    describe_broker_configs, describe_topic_configs, ConfigEntry, ConfigSource, ConfigType,
};
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
pub use crate::controller::{RESOURCE_CLIENT_METRICS, RESOURCE_GROUP};

/// The described configs of a topic with these overrides (also used by CreateTopics v5+).
pub fn topic_entries(broker: &Broker, overrides: &BTreeMap<String, String>) -> Vec<ConfigEntry> {
    let layers = broker.dynamic.layers();
    let view = layers.view(&broker.config);
    describe_topic_configs(overrides, &broker.dynamic.current(), &view).unwrap_or_default()
}

/// The entries of a BROKER resource: every config as this broker sees it, or (empty name)
/// only the keys of the cluster-wide dynamic default.
fn broker_entries(broker: &Broker, name: &str) -> Result<Vec<ConfigEntry>, String> {
    if !is_this_broker(broker, name) {
        return Err(format!(
            "Unexpected broker id, expected {} or empty string, but received {name}",
            broker.node_id
        ));
    }
    let layers = broker.dynamic.layers();
    Ok(describe_broker_configs(
        &layers.view(&broker.config),
        !name.is_empty(),
    ))
}

/// The entries of a BROKER_LOGGER resource: every logger with its level (Kafka's
/// `Log4jController.loggers`), named by this broker's id.
fn logger_entries(broker: &Broker, name: &str) -> Result<Vec<ConfigEntry>, String> {
    if name.is_empty() {
        return Err("Broker id must not be empty".into());
    }
    if name.parse::<i32>().ok() != Some(broker.node_id) {
        return Err(format!(
            "Unexpected broker id, expected {} but received {name}",
            broker.node_id
        ));
    }
    Ok(crate::logging::levels()
        .loggers()
        .into_iter()
        .map(|(logger, level)| ConfigEntry {
            name: logger,
            value: Some(level),
            source: ConfigSource::DynamicBrokerLoggerConfig,
            is_default: false,
            read_only: false,
            is_sensitive: false,
            synonyms: Vec::new(),
            config_type: ConfigType::String,
        })
        .collect())
}

fn image_configs(broker: &Broker, r: &DescribeConfigsResource) -> BTreeMap<String, String> {
    broker
        .cluster
        .image()
        .resource_configs(r.resource_type, &r.resource_name)
        .cloned()
        .unwrap_or_default()
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
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER => {
            let entries = if r.resource_type == RESOURCE_BROKER {
                broker_entries(broker, &r.resource_name)
            } else {
                logger_entries(broker, &r.resource_name)
            };
            match entries {
                Ok(entries) => entries,
                Err(message) => {
                    result.error_code = ErrorCode::INVALID_REQUEST.code();
                    result.error_message = Some(message);
                    return result;
                }
            }
        }
        RESOURCE_GROUP | RESOURCE_CLIENT_METRICS if r.resource_name.is_empty() => {
            result.error_code = ErrorCode::INVALID_REQUEST.code();
            result.error_message = Some(if r.resource_type == RESOURCE_GROUP {
                "Group name must not be empty".into()
            } else {
                "Client metrics subscription name must not be empty".into()
            });
            return result;
        }
        // Any group id or subscription name is described, with or without configs, as Kafka.
        RESOURCE_GROUP => {
            let defaults = GroupConfigDefaults::from_broker(&broker.config);
            let layers = broker.dynamic.layers();
            let view = layers.view(&broker.config);
            describe_group_configs(&image_configs(broker, r), &defaults, |key| {
                broker_key_synonyms(&view, key)
            })
        }
        RESOURCE_CLIENT_METRICS => describe_client_metrics(&image_configs(broker, r)),
        other => {
            result.error_code = ErrorCode::INVALID_REQUEST.code();
            result.error_message = Some(format!("Unsupported resource type: {other}"));
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
            // Kafka leaves a logger's type unset (UNKNOWN).
            config_type: if version >= 3 && r.resource_type != RESOURCE_BROKER_LOGGER {
                e.config_type_id()
            } else {
                0
            },
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
