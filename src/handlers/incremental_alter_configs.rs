//! IncrementalAlterConfigs (key 44), versions 0-1: SET, DELETE, APPEND and SUBTRACT (list keys)
//! on topic overrides, validated as a whole before anything is written. Broker configs are
//! static in Strata and refused with INVALID_REQUEST.
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

use super::describe_configs::{alter_outcome, alter_topic_overrides, AlterError};
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
) -> Result<(), AlterError> {
    alter_topic_overrides(
        broker,
        r.resource_type,
        &r.resource_name,
        "IncrementalAlterConfigs",
        validate_only,
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
) -> IncrementalAlterConfigsResponse {
    let responses = request
        .resources
        .iter()
        .map(|r| {
            let (error_code, msg) = alter_outcome(alter_one(broker, r, request.validate_only));
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
    _peer: SocketAddr,
) -> ResponseFuture {
    let response = handle(&broker, &request);
    ready(header, Some(response))
}
