//! AlterConfigs (key 33), versions 0-2: the legacy whole-set replacement of a topic's
//! overrides (keys not named are removed). Broker configs are static in Strata: altering them
//! is refused with INVALID_REQUEST, naming the reason.
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use super::describe_configs::{is_this_broker, RESOURCE_BROKER, RESOURCE_TOPIC};
use super::{ready, Broker, ResponseFuture};
use crate::config::validate_topic_override;
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_configs_request::{AlterConfigsRequest, AlterConfigsResource};
use crate::protocol::messages::alter_configs_response::*;

fn alter_one(
    broker: &Broker,
    r: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), (ErrorCode, String)> {
    match r.resource_type {
        RESOURCE_TOPIC => {}
        RESOURCE_BROKER if is_this_broker(broker, &r.resource_name) => {
            return Err((
                ErrorCode::INVALID_REQUEST,
                "Strata's broker configs are static; change server.properties and restart".into(),
            ))
        }
        _ => {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Unsupported resource type {} for AlterConfigs",
                    r.resource_type
                ),
            ))
        }
    }
    let meta = broker.metadata.topic(&r.resource_name).ok_or((
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        format!("Topic {} does not exist.", r.resource_name),
    ))?;
    let mut next = BTreeMap::new();
    for c in &r.configs {
        let value = c.value.as_deref().ok_or((
            ErrorCode::INVALID_REQUEST,
            format!("Null value not supported for: {}", c.name),
        ))?;
        validate_topic_override(&c.name, value)
            .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))?;
        next.insert(c.name.clone(), value.to_string());
    }
    broker
        .topic_config(&next)
        .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))?;
    if validate_only {
        return Ok(());
    }
    let mut changes: Vec<(String, Option<String>)> = meta
        .configs
        .keys()
        .filter(|k| !next.contains_key(*k))
        .map(|k| (k.clone(), None))
        .collect();
    changes.extend(next.into_iter().map(|(k, v)| (k, Some(v))));
    broker
        .metadata
        .alter_topic_configs(&r.resource_name, &changes)
        .map_err(|e| (ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()))?;
    broker.refresh_topic_config(&r.resource_name);
    Ok(())
}

pub fn handle(broker: &Broker, request: &AlterConfigsRequest) -> AlterConfigsResponse {
    let responses = request
        .resources
        .iter()
        .map(|r| {
            let (code, msg) = match alter_one(broker, r, request.validate_only) {
                Ok(()) => (ErrorCode::NONE, None),
                Err((c, m)) => (c, Some(m)),
            };
            AlterConfigsResourceResponse {
                error_code: code.code(),
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
    _peer: SocketAddr,
) -> ResponseFuture {
    let response = handle(&broker, &request);
    ready(header, Some(response))
}
