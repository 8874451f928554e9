//! IncrementalAlterConfigs (key 44), versions 0-1: SET, DELETE, APPEND and SUBTRACT (list keys)
//! on topic overrides and on dynamic broker configs (BROKER: this broker's id, or "" for the
//! cluster-wide default), validated as a whole before anything is written and committed by
//! the active controller ([`config_changes`](super::common::config_changes), [`on_controller`]);
//! group configs (GROUP, KIP-848) and client-metrics subscriptions (CLIENT_METRICS, KIP-714),
//! kept in the metadata image like topic overrides;
//! and log levels (BROKER_LOGGER, Kafka's `RuntimeLoggerManager`), applied by this broker
//! alone and not persisted, as in Kafka.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::operation;
use std::collections::HashSet;
use std::sync::Arc;

use super::common::config_changes::{
    alter_outcome, alter_resource, check_node_id, forward_changes, AlterError, ResourceChange,
};
use super::describe_configs::RESOURCE_BROKER_LOGGER;
use super::{later, Broker, ResponseFuture};
use crate::config::dynamic::apply_broker_op;
use crate::config::{apply_incremental_op, AlterConfigOp};
use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::{
    incremental_alter_configs, AlterConfigOp as ControllerOp,
    AlterConfigsResource as ControllerResource, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP,
    RESOURCE_TOPIC,
};
use crate::error::ErrorCode;
use crate::logging::LoggerError;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, IncrementalAlterConfigsRequest,
};
use crate::protocol::messages::incremental_alter_configs_response::*;

fn alter_one(
    broker: &Broker,
    r: &AlterConfigsResource,
    validate_only: bool,
    forward: &mut Vec<ResourceChange>,
) -> Result<(), AlterError> {
    if r.resource_type == RESOURCE_BROKER_LOGGER {
        return alter_loggers(broker, r, validate_only);
    }
    let is_topic = r.resource_type == RESOURCE_TOPIC;
    let in_image_only = matches!(r.resource_type, RESOURCE_GROUP | RESOURCE_CLIENT_METRICS);
    if !is_topic && !in_image_only {
        // Kafka's `ConfigAdminManager.preprocess` checks for BROKER resources.
        let nulls: Vec<&str> = r
            .configs
            .iter()
            .filter(|c| c.config_operation != AlterConfigOp::Delete as i8 && c.value.is_none())
            .map(|c| c.name.as_str())
            .collect();
        if !nulls.is_empty() {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!("Null value not supported for : {}", nulls.join(", ")),
            ));
        }
    }
    alter_resource(
        broker,
        r.resource_type,
        &r.resource_name,
        "IncrementalAlterConfigs",
        validate_only,
        forward,
        |current| {
            let mut seen = HashSet::new();
            let mut overrides = current.clone();
            for c in &r.configs {
                if !seen.insert(c.name.clone()) {
                    return Err((
                        ErrorCode::INVALID_REQUEST,
                        format!("Error due to duplicate config keys: {}", c.name),
                    ));
                }
                let op = AlterConfigOp::from_id(c.config_operation).ok_or((
                    ErrorCode::INVALID_REQUEST,
                    format!("Unknown alter config operation {}", c.config_operation),
                ))?;
                let old = overrides.get(&c.name).map(|s| s.as_str());
                let new = if in_image_only {
                    image_resource_op(r.resource_type, &c.name, old, op, c.value.as_deref())?
                } else if is_topic {
                    apply_incremental_op(&c.name, old, op, c.value.as_deref())
                        .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))?
                } else {
                    apply_broker_op(&c.name, old, op, c.value.as_deref())
                        .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))?
                };
                match new {
                    Some(v) => {
                        overrides.insert(c.name.clone(), v);
                    }
                    None => {
                        overrides.remove(&c.name);
                    }
                }
            }
            Ok(overrides)
        },
    )
}

/// One op on a GROUP or CLIENT_METRICS key, as Kafka's `ConfigurationControlManager` applies
/// it: APPEND and SUBTRACT only on list keys (a subscription's `metrics` and `match`), and
/// no null value for a group key.
fn image_resource_op(
    resource_type: i8,
    name: &str,
    old: Option<&str>,
    op: AlterConfigOp,
    value: Option<&str>,
) -> Result<Option<String>, AlterError> {
    let is_list = resource_type == RESOURCE_CLIENT_METRICS && matches!(name, "metrics" | "match");
    let items = |v: Option<&str>| -> Vec<String> {
        v.unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    match op {
        AlterConfigOp::Delete => Ok(None),
        AlterConfigOp::Set => match value {
            Some(v) => Ok(Some(v.to_string())),
            None if resource_type == RESOURCE_GROUP => Err((
                ErrorCode::INVALID_CONFIG,
                format!("Null value not supported for group configs: {name}"),
            )),
            None => Err((ErrorCode::INVALID_CONFIG, format!("Null value for {name}"))),
        },
        AlterConfigOp::Append | AlterConfigOp::Subtract if !is_list => Err((
            ErrorCode::INVALID_CONFIG,
            format!(
                "Can't {} to key {name} because its type is not LIST.",
                if op == AlterConfigOp::Append {
                    "APPEND"
                } else {
                    "SUBTRACT"
                }
            ),
        )),
        AlterConfigOp::Append => {
            let mut list = items(old);
            for item in items(value) {
                if !list.contains(&item) {
                    list.push(item);
                }
            }
            Ok(Some(list.join(",")))
        }
        AlterConfigOp::Subtract => {
            let remove = items(value);
            let list: Vec<String> = items(old)
                .into_iter()
                .filter(|x| !remove.contains(x))
                .collect();
            Ok(Some(list.join(",")))
        }
    }
}

/// Log level changes of this broker: all checked, then (unless `validate_only`) applied.
fn alter_loggers(
    broker: &Broker,
    r: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), AlterError> {
    check_node_id(broker, &r.resource_name).map_err(|(code, message)| {
        // Kafka's RuntimeLoggerManager words it as "node id".
        (
            code,
            message.replace(
                "Unexpected broker id, expected",
                "Unexpected node id. Expected",
            ),
        )
    })?;
    let levels = crate::logging::levels();
    let refused = |e: LoggerError| match e {
        LoggerError::InvalidConfig(m) => (ErrorCode::INVALID_CONFIG, m),
        LoggerError::InvalidRequest(m) => (ErrorCode::INVALID_REQUEST, m),
    };
    for c in &r.configs {
        match AlterConfigOp::from_id(c.config_operation) {
            Some(AlterConfigOp::Set) => levels.check_set(&c.name, c.value.as_deref()),
            Some(AlterConfigOp::Delete) => levels.check_unset(&c.name),
            Some(op) => Err(LoggerError::InvalidRequest(format!(
                "{} operation is not allowed for the BROKER_LOGGER resource",
                if op == AlterConfigOp::Append {
                    "APPEND"
                } else {
                    "SUBTRACT"
                }
            ))),
            None => Err(LoggerError::InvalidRequest(format!(
                "Unknown operation type {} is not allowed for the BROKER_LOGGER resource",
                c.config_operation
            ))),
        }
        .map_err(refused)?;
    }
    if !validate_only {
        for c in &r.configs {
            match c.value.as_deref() {
                Some(level) if c.config_operation == AlterConfigOp::Set as i8 => {
                    levels.set(&c.name, level)
                }
                _ => levels.unset(&c.name),
            }
        }
    }
    Ok(())
}

pub fn handle(
    broker: &Broker,
    request: &IncrementalAlterConfigsRequest,
    forward: &mut Vec<ResourceChange>,
) -> IncrementalAlterConfigsResponse {
    let responses = request
        .resources
        .iter()
        .map(|r| {
            let (error_code, msg) =
                alter_outcome(alter_one(broker, r, request.validate_only, forward));
            AlterConfigsResourceResponse {
                error_code,
                error_message: msg,
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
                ..Default::default()
            }
        })
        .collect();
    IncrementalAlterConfigsResponse {
        throttle_time_ms: 0,
        responses,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: IncrementalAlterConfigsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let cluster = broker.cluster.clone();
    let mut changes = Vec::new();
    // Kafka: ALTER_CONFIGS on each resource; refused ones are answered without being applied.
    let mut request = request;
    let authz = Authz::new(&broker, &conn);
    let mut refused = Vec::new();
    request.resources.retain(|r| {
        match authz.config_refusal(operation::ALTER_CONFIGS, r.resource_type, &r.resource_name) {
            Some(code) => {
                refused.push(AlterConfigsResourceResponse {
                    error_code: code.code(),
                    error_message: Some(code.message()),
                    resource_type: r.resource_type,
                    resource_name: r.resource_name.clone(),
                    ..Default::default()
                });
                false
            }
            None => true,
        }
    });
    let mut response = handle(&broker, &request, &mut changes);
    response.responses.extend(refused);
    later(header, async move {
        Some(forward_changes(&cluster, response, changes).await)
    })
}

/// The active controller's side: the ops become config records (H2's rules per resource).
pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: IncrementalAlterConfigsRequest,
) -> Result<IncrementalAlterConfigsResponse, ControllerError> {
    controller
        .run(move |image, _, _| {
            let mut resources = Vec::new();
            let mut bad = Vec::new();
            for r in &request.resources {
                let ops: Option<Vec<_>> = r
                    .configs
                    .iter()
                    .map(|c| {
                        ControllerOp::from_i8(c.config_operation)
                            .map(|op| (c.name.clone(), op, c.value.clone()))
                    })
                    .collect();
                match ops {
                    Some(ops) => resources.push(ControllerResource {
                        resource_type: r.resource_type,
                        resource_name: r.resource_name.clone(),
                        ops,
                    }),
                    None => bad.push((r.resource_type, r.resource_name.clone())),
                }
            }
            let (records, results) =
                incremental_alter_configs(image, &resources, request.validate_only);
            let mut responses: Vec<AlterConfigsResourceResponse> = resources
                .iter()
                .zip(results)
                .map(|(r, (code, message))| AlterConfigsResourceResponse {
                    error_code: code.code(),
                    error_message: message,
                    resource_type: r.resource_type,
                    resource_name: r.resource_name.clone(),
                    ..Default::default()
                })
                .collect();
            for (resource_type, name) in bad {
                responses.push(AlterConfigsResourceResponse {
                    error_code: ErrorCode::INVALID_REQUEST.code(),
                    error_message: Some("Unknown alter config operation".into()),
                    resource_type,
                    resource_name: name,
                    ..Default::default()
                });
            }
            (
                records,
                IncrementalAlterConfigsResponse {
                    throttle_time_ms: 0,
                    responses,
                    ..Default::default()
                },
            )
        })
        .await
}
