//! IncrementalAlterConfigs (key 44), versions 0-1: SET, DELETE, APPEND and SUBTRACT (list keys)
//! on topic overrides, validated as a whole before anything is written. Broker configs are
//! static in Strata and refused with INVALID_REQUEST. In a cluster the changes are checked
//! here and committed by the active controller ([`forward_changes`], [`on_controller`]).
use super::authz::Authz;
use super::ConnectionContext;
use crate::controller::acls::operation;
use std::collections::HashSet;
use std::sync::Arc;

use super::describe_configs::{alter_outcome, alter_topic_overrides, AlterError};
use super::{later, Broker, ResponseFuture};
use crate::cluster::ClusterContext;
use crate::config::{apply_incremental_op, validate_topic_override, AlterConfigOp};
use crate::controller::service::{ControllerError, ControllerService};
use crate::controller::{
    incremental_alter_configs, AlterConfigOp as ControllerOp,
    AlterConfigsResource as ControllerResource,
};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest,
};
use crate::protocol::messages::incremental_alter_configs_response::*;

fn alter_one(
    broker: &Broker,
    r: &AlterConfigsResource,
    validate_only: bool,
    forward: &mut Vec<(String, Vec<(String, Option<String>)>)>,
) -> Result<(), AlterError> {
    alter_topic_overrides(
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
                let new = apply_incremental_op(
                    &c.name,
                    overrides.get(&c.name).map(|s| s.as_str()),
                    op,
                    c.value.as_deref(),
                )
                .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))?;
                match new {
                    Some(v) => {
                        validate_topic_override(&c.name, &v)
                            .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))?;
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

pub fn handle(
    broker: &Broker,
    request: &IncrementalAlterConfigsRequest,
    forward: &mut Vec<(String, Vec<(String, Option<String>)>)>,
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
                refused.push(crate::protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse {
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
        Some(super::incremental_alter_configs::forward_changes(&cluster, response, changes).await)
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
                    None => bad.push(r.resource_name.clone()),
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
            for name in bad {
                responses.push(AlterConfigsResourceResponse {
                    error_code: ErrorCode::INVALID_REQUEST.code(),
                    error_message: Some("Unknown alter config operation".into()),
                    resource_type: crate::controller::RESOURCE_TOPIC,
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

/// Sends override changes, computed and validated on this broker, to the active controller
/// as SET/DELETE ops, waits until the local image shows them, and puts the controller's
/// verdict per resource into `response`.
pub async fn forward_changes<R: ResourceResults>(
    cluster: &Arc<ClusterContext>,
    mut response: R,
    changes: Vec<(String, Vec<(String, Option<String>)>)>,
) -> R {
    if changes.is_empty() {
        return response;
    }
    let request = IncrementalAlterConfigsRequest {
        resources: changes
            .iter()
            .map(|(name, ops)| AlterConfigsResource {
                resource_type: crate::controller::RESOURCE_TOPIC,
                resource_name: name.clone(),
                configs: ops
                    .iter()
                    .map(|(k, v)| AlterableConfig {
                        name: k.clone(),
                        config_operation: if v.is_some() { 0 } else { 1 },
                        value: v.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        validate_only: false,
        ..Default::default()
    };
    let names: Vec<String> = changes.iter().map(|(n, _)| n.clone()).collect();
    let failed = |code: ErrorCode| IncrementalAlterConfigsResponse {
        responses: names
            .iter()
            .map(|n| AlterConfigsResourceResponse {
                error_code: code.code(),
                error_message: Some(code.message()),
                resource_type: crate::controller::RESOURCE_TOPIC,
                resource_name: n.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let verdict = cluster
        .controller_op(
            crate::protocol::messages::incremental_alter_configs_request::IncrementalAlterConfigsRequest::API_KEY,
            1,
            request,
            on_controller,
            failed,
        )
        .await;
    for r in &verdict.responses {
        response.set_result(&r.resource_name, r.error_code, r.error_message.clone());
    }
    let applied: Vec<&(String, Vec<(String, Option<String>)>)> = changes
        .iter()
        .filter(|(n, _)| {
            verdict
                .responses
                .iter()
                .any(|r| &r.resource_name == n && r.error_code == 0)
        })
        .collect();
    cluster
        .wait_until(|image| {
            applied.iter().all(|(name, ops)| {
                let current = image.resource_configs(crate::controller::RESOURCE_TOPIC, name);
                ops.iter()
                    .all(|(k, v)| current.and_then(|c| c.get(k)) == v.as_ref())
            })
        })
        .await;
    response
}

/// The per-resource results of AlterConfigs and IncrementalAlterConfigs responses.
pub trait ResourceResults {
    fn set_result(&mut self, resource_name: &str, error_code: i16, message: Option<String>);
}

impl ResourceResults for IncrementalAlterConfigsResponse {
    fn set_result(&mut self, resource_name: &str, error_code: i16, message: Option<String>) {
        for r in self
            .responses
            .iter_mut()
            .filter(|r| r.resource_name == resource_name && r.error_code == 0)
        {
            r.error_code = error_code;
            r.error_message = message.clone();
        }
    }
}

impl ResourceResults for crate::protocol::messages::alter_configs_response::AlterConfigsResponse {
    fn set_result(&mut self, resource_name: &str, error_code: i16, message: Option<String>) {
        for r in self
            .responses
            .iter_mut()
            .filter(|r| r.resource_name == resource_name && r.error_code == 0)
        {
            r.error_code = error_code;
            r.error_message = message.clone();
        }
    }
}
