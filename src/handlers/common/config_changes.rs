//! What AlterConfigs and IncrementalAlterConfigs share (Kafka's `ConfigAdminManager`): the
//! new config set of one TOPIC or BROKER resource is computed and validated on the receiving
//! broker, the keys that changed go to the active controller as SET/DELETE ops
//! ([`forward_changes`]), which validates them again and writes `Config` records, and the
//! answer waits until this broker's published image shows them.
//!
//! BROKER resources are the dynamic broker configs: the cluster-wide default (empty name) or
//! this broker's own id, checked as Kafka's `DynamicBrokerConfig.validate` does (errors are
//! INVALID_REQUEST, as Kafka wraps its ConfigException, KAFKA-13609).
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::broker::Broker;
use crate::cluster::ClusterContext;
use crate::config::dynamic::validate_layer;
use crate::controller::{RESOURCE_BROKER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP, RESOURCE_TOPIC};
use crate::error::ErrorCode;
use crate::protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest,
};
use crate::protocol::messages::incremental_alter_configs_response::{
    AlterConfigsResourceResponse, IncrementalAlterConfigsResponse,
};

/// Why an alter of one resource failed: the error code and message for its result.
pub type AlterError = (ErrorCode, String);

/// The changes of one resource for the controller: `Some` sets a key, `None` removes it.
#[derive(Debug, Clone)]
pub struct ResourceChange {
    pub resource_type: i8,
    pub resource_name: String,
    pub ops: Vec<(String, Option<String>)>,
}

/// An alter result as the response fields (error code, message).
pub fn alter_outcome(result: Result<(), AlterError>) -> (i16, Option<String>) {
    match result {
        Ok(()) => (0, None),
        Err((code, message)) => (code.code(), Some(message)),
    }
}

/// Whether a broker resource name designates this broker ("" is the cluster-wide default).
pub fn is_this_broker(broker: &Broker, name: &str) -> bool {
    name.is_empty() || name.parse::<i32>().ok() == Some(broker.node_id)
}

/// Kafka's `validateResourceNameIsCurrentNodeId` for a non-empty BROKER resource name.
pub fn check_node_id(broker: &Broker, name: &str) -> Result<(), AlterError> {
    let id: i32 = name.parse().map_err(|_| {
        (
            ErrorCode::INVALID_REQUEST,
            format!("Node id must be an integer, but it is: {name}"),
        )
    })?;
    if id != broker.node_id {
        return Err((
            ErrorCode::INVALID_REQUEST,
            format!(
                "Unexpected broker id, expected {}, but received {name}",
                broker.node_id
            ),
        ));
    }
    Ok(())
}

/// Computes one resource's new config set with `next` (from its current set), validates it,
/// and (unless `validate_only`) queues the keys that changed for the controller.
pub fn alter_resource(
    broker: &Broker,
    resource_type: i8,
    resource_name: &str,
    api: &str,
    validate_only: bool,
    forward: &mut Vec<ResourceChange>,
    next: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AlterError>,
) -> Result<(), AlterError> {
    let (current, next) = match resource_type {
        RESOURCE_TOPIC => topic_change(broker, resource_name, next)?,
        RESOURCE_BROKER => broker_change(broker, resource_name, next)?,
        RESOURCE_GROUP => group_change(broker, resource_name, next)?,
        RESOURCE_CLIENT_METRICS => client_metrics_change(broker, resource_name, next)?,
        other => {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!("Unsupported resource type {other} for {api}"),
            ))
        }
    };
    let mut ops: Vec<(String, Option<String>)> = current
        .keys()
        .filter(|k| !next.contains_key(*k))
        .map(|k| (k.clone(), None))
        .collect();
    ops.extend(
        next.into_iter()
            .filter(|(k, v)| current.get(k) != Some(v))
            .map(|(k, v)| (k, Some(v))),
    );
    if !validate_only && !ops.is_empty() {
        forward.push(ResourceChange {
            resource_type,
            resource_name: resource_name.to_string(),
            ops,
        });
    }
    Ok(())
}

type ConfigSets = (BTreeMap<String, String>, BTreeMap<String, String>);

/// A topic's current overrides and the validated new ones.
fn topic_change(
    broker: &Broker,
    name: &str,
    next: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AlterError>,
) -> Result<ConfigSets, AlterError> {
    let meta = broker.cluster.topic(name).ok_or((
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        format!("Topic {name} does not exist."),
    ))?;
    let next = next(&meta.configs)?;
    broker
        .topic_config(&next)
        .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))?;
    Ok((meta.configs, next))
}

/// A BROKER layer's current keys and the validated new ones: the keys must be ones Strata
/// changes at runtime, each value valid, and this broker's whole config with the new layer
/// consistent.
fn broker_change(
    broker: &Broker,
    name: &str,
    next: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AlterError>,
) -> Result<ConfigSets, AlterError> {
    if !name.is_empty() {
        check_node_id(broker, name)?;
    }
    let mut layers = broker.dynamic.layers();
    let layer = if name.is_empty() {
        &mut layers.default
    } else {
        &mut layers.per_broker
    };
    let current = layer.clone();
    let next = next(&current)?;
    validate_layer(&next).map_err(|m| (ErrorCode::INVALID_REQUEST, m))?;
    *layer = next.clone();
    broker
        .dynamic
        .resolve(&layers)
        .map_err(|e| (ErrorCode::INVALID_REQUEST, e.to_string()))?;
    Ok((current, next))
}

/// The configs of a resource kept only in the metadata image (GROUP, CLIENT_METRICS).
fn image_configs(broker: &Broker, resource_type: i8, name: &str) -> BTreeMap<String, String> {
    broker
        .cluster
        .image()
        .resource_configs(resource_type, name)
        .cloned()
        .unwrap_or_default()
}

/// A group's current overrides and the validated new ones (Kafka's
/// `ControllerConfigurationValidator` for GROUP: a named group, `GroupConfig.validate`
/// against this broker's group settings).
fn group_change(
    broker: &Broker,
    name: &str,
    next: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AlterError>,
) -> Result<ConfigSets, AlterError> {
    if name.is_empty() {
        return Err((
            ErrorCode::INVALID_REQUEST,
            "Default group resources are not allowed.".into(),
        ));
    }
    let current = image_configs(broker, RESOURCE_GROUP, name);
    let next = next(&current)?;
    let defaults = crate::config::group::GroupConfigDefaults::from_broker(&broker.config);
    crate::config::group::validate_group_configs(&next, &defaults)
        .map_err(|m| (ErrorCode::INVALID_CONFIG, m))?;
    Ok((current, next))
}

/// A client-metrics subscription's current keys and the validated new ones.
fn client_metrics_change(
    broker: &Broker,
    name: &str,
    next: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AlterError>,
) -> Result<ConfigSets, AlterError> {
    let current = image_configs(broker, RESOURCE_CLIENT_METRICS, name);
    let next = next(&current)?;
    crate::config::client_metrics::validate_client_metrics(name, &next)
        .map_err(client_metrics_error)?;
    Ok((current, next))
}

pub fn client_metrics_error(e: crate::config::client_metrics::ClientMetricsError) -> AlterError {
    use crate::config::client_metrics::ClientMetricsError::*;
    match e {
        InvalidRequest(m) => (ErrorCode::INVALID_REQUEST, m),
        InvalidConfig(m) => (ErrorCode::INVALID_CONFIG, m),
    }
}

/// Sends changes, computed and validated on this broker, to the active controller as
/// SET/DELETE ops, waits until the local image shows them, and puts the controller's verdict
/// per resource into `response`.
pub async fn forward_changes<R: ResourceResults>(
    cluster: &Arc<ClusterContext>,
    mut response: R,
    changes: Vec<ResourceChange>,
) -> R {
    if changes.is_empty() {
        return response;
    }
    let request = IncrementalAlterConfigsRequest {
        resources: changes
            .iter()
            .map(|c| AlterConfigsResource {
                resource_type: c.resource_type,
                resource_name: c.resource_name.clone(),
                configs: c
                    .ops
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
    let failed = |code: ErrorCode| IncrementalAlterConfigsResponse {
        responses: changes
            .iter()
            .map(|c| AlterConfigsResourceResponse {
                error_code: code.code(),
                error_message: Some(code.message()),
                resource_type: c.resource_type,
                resource_name: c.resource_name.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let verdict = cluster
        .controller_op(
            IncrementalAlterConfigsRequest::API_KEY,
            1,
            request,
            crate::handlers::incremental_alter_configs::on_controller,
            failed,
        )
        .await;
    for r in &verdict.responses {
        response.set_result(
            r.resource_type,
            &r.resource_name,
            r.error_code,
            r.error_message.clone(),
        );
    }
    let applied: Vec<&ResourceChange> = changes
        .iter()
        .filter(|c| {
            verdict.responses.iter().any(|r| {
                r.resource_type == c.resource_type
                    && r.resource_name == c.resource_name
                    && r.error_code == 0
            })
        })
        .collect();
    cluster
        .wait_until(|image| {
            applied.iter().all(|c| {
                let current = image.resource_configs(c.resource_type, &c.resource_name);
                c.ops
                    .iter()
                    .all(|(k, v)| current.and_then(|m| m.get(k)) == v.as_ref())
            })
        })
        .await;
    response
}

/// The per-resource results of AlterConfigs and IncrementalAlterConfigs responses.
pub trait ResourceResults {
    fn set_result(
        &mut self,
        resource_type: i8,
        resource_name: &str,
        error_code: i16,
        message: Option<String>,
    );
}

macro_rules! resource_results {
    ($response:ty) => {
        impl ResourceResults for $response {
            fn set_result(
                &mut self,
                resource_type: i8,
                resource_name: &str,
                error_code: i16,
                message: Option<String>,
            ) {
                for r in self.responses.iter_mut().filter(|r| {
                    r.resource_type == resource_type
                        && r.resource_name == resource_name
                        && r.error_code == 0
                }) {
                    r.error_code = error_code;
                    r.error_message = message.clone();
                }
            }
        }
    };
}
resource_results!(IncrementalAlterConfigsResponse);
resource_results!(crate::protocol::messages::alter_configs_response::AlterConfigsResponse);
