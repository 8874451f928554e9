//! AlterConfigs (key 33), versions 0-2: the legacy whole-set replacement of a topic's
//! overrides or of a dynamic broker config layer (BROKER: this broker's id, or "" for the
//! cluster-wide default); keys not named are removed. BROKER_LOGGER is not part of this API
//! (Kafka refuses it too).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::protocol::acl::operation;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::common::config_changes::{
    alter_outcome, alter_resource, forward_changes, AlterError, ResourceChange,
};
use super::{later, Broker, ResponseFuture};
use crate::config::validate_topic_override;
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_configs_request::{AlterConfigsRequest, AlterConfigsResource};
use crate::protocol::messages::alter_configs_response::*;

fn alter_one(
    broker: &Broker,
    r: &AlterConfigsResource,
    validate_only: bool,
    forward: &mut Vec<ResourceChange>,
) -> Result<(), AlterError> {
    let is_topic = r.resource_type == crate::controller::RESOURCE_TOPIC;
    alter_resource(
        broker,
        r.resource_type,
        &r.resource_name,
        "AlterConfigs",
        validate_only,
        forward,
        |_| {
            // The legacy API replaces the whole override set: keys not named are removed.
            let mut next = BTreeMap::new();
            for c in &r.configs {
                let value = c.value.as_deref().ok_or((
                    ErrorCode::INVALID_REQUEST,
                    format!("Null value not supported for: {}", c.name),
                ))?;
                // A broker layer is checked as a whole by `alter_resource`.
                if is_topic {
                    validate_topic_override(&c.name, value)
                        .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))?;
                }
                next.insert(c.name.clone(), value.to_string());
            }
            Ok(next)
        },
    )
}

pub fn handle(
    broker: &Broker,
    request: &AlterConfigsRequest,
    forward: &mut Vec<ResourceChange>,
) -> AlterConfigsResponse {
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
    AlterConfigsResponse {
        throttle_time_ms: 0,
        responses,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AlterConfigsRequest,
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
                refused.push(crate::protocol::messages::alter_configs_response::AlterConfigsResourceResponse {
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
