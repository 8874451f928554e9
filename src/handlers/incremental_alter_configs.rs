//! IncrementalAlterConfigs (key 44), versions 0-1: SET, DELETE, APPEND and SUBTRACT (list keys)
//! on topic overrides, validated as a whole before anything is written. Broker configs are
//! static in Strata and refused with INVALID_REQUEST.
use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;

use super::describe_configs::{
    is_this_broker, RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_TOPIC,
};
use super::{ready, Broker, ResponseFuture};
use crate::config::{apply_incremental_op, validate_topic_override, AlterConfigOp};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, IncrementalAlterConfigsRequest,
};
use crate::protocol::messages::incremental_alter_configs_response::*;

fn alter_one(
    broker: &Broker,
    r: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), (ErrorCode, String)> {
    match r.resource_type {
        RESOURCE_TOPIC => {}
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER if is_this_broker(broker, &r.resource_name) => {
            return Err((
                ErrorCode::INVALID_REQUEST,
                "Strata's broker configs are static; change server.properties and restart".into(),
            ))
        }
        _ => {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Unsupported resource type {} for IncrementalAlterConfigs",
                    r.resource_type
                ),
            ))
        }
    }
    let meta = broker.metadata.topic(&r.resource_name).ok_or((
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        format!("Topic {} does not exist.", r.resource_name),
    ))?;
    let mut seen = HashSet::new();
    let mut overrides: BTreeMap<String, String> = meta.configs.clone();
    let mut changed: Vec<String> = Vec::new();
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
        changed.push(c.name.clone());
    }
    broker
        .topic_config(&overrides)
        .map_err(|e| (ErrorCode::INVALID_CONFIG, e.to_string()))?;
    if validate_only {
        return Ok(());
    }
    let changes: Vec<(String, Option<String>)> = changed
        .into_iter()
        .map(|k| {
            let v = overrides.get(&k).cloned();
            (k, v)
        })
        .collect();
    broker
        .metadata
        .alter_topic_configs(&r.resource_name, &changes)
        .map_err(|e| (ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()))?;
    broker.refresh_topic_config(&r.resource_name);
    Ok(())
}

pub fn handle(
    broker: &Broker,
    request: &IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
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
    _peer: SocketAddr,
) -> ResponseFuture {
    let response = handle(&broker, &request);
    ready(header, Some(response))
}
