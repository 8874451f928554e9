//! Config overrides (Kafka's `ConfigurationControlManager.incrementalAlterConfigs`, KIP-339):
//! SET, DELETE, APPEND and SUBTRACT on topic, broker, group (KIP-848) and client-metrics
//! (KIP-714) resources, as `Config` records. A
//! BROKER resource's resulting layer is checked with the dynamic broker config rules
//! (`config::dynamic::validate_layer`) so that no broker ever reads a key it cannot apply.
use super::controller_config::{MIN_INSYNC_REPLICAS, UNCLEAN_LEADER_ELECTION_ENABLE};
use super::election::Batch;
use super::image::MetadataImage;
use super::records::{
    MetadataRecord, RESOURCE_BROKER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP, RESOURCE_TOPIC,
};
use crate::error::ErrorCode;

/// Kafka's `AlterConfigOp.OpType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterConfigOp {
    Set,
    Delete,
    /// Adds to a comma-separated list value.
    Append,
    /// Removes from a comma-separated list value.
    Subtract,
}

impl AlterConfigOp {
    pub fn from_i8(v: i8) -> Option<AlterConfigOp> {
        match v {
            0 => Some(AlterConfigOp::Set),
            1 => Some(AlterConfigOp::Delete),
            2 => Some(AlterConfigOp::Append),
            3 => Some(AlterConfigOp::Subtract),
            _ => None,
        }
    }
}

/// One resource of an IncrementalAlterConfigs request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigsResource {
    pub resource_type: i8,
    pub resource_name: String,
    pub ops: Vec<(String, AlterConfigOp, Option<String>)>,
}

/// Values Strata checks before accepting them; any other key is stored as given.
fn validate_value(name: &str, value: &str) -> Result<(), String> {
    match name {
        UNCLEAN_LEADER_ELECTION_ENABLE if !matches!(value, "true" | "false") => {
            Err(format!("{name} must be true or false"))
        }
        MIN_INSYNC_REPLICAS if value.parse::<i32>().map_or(true, |v| v < 1) => {
            Err(format!("{name} must be a positive integer"))
        }
        _ => Ok(()),
    }
}

/// Applies the ops of each resource (all or nothing per resource); the result per resource is
/// its error code and message.
pub fn incremental_alter_configs(
    image: &MetadataImage,
    resources: &[AlterConfigsResource],
    validate_only: bool,
) -> (Vec<MetadataRecord>, Vec<(ErrorCode, Option<String>)>) {
    let mut batch = Batch::new(image);
    let mut results = Vec::with_capacity(resources.len());
    for r in resources {
        match alter_one(&batch.image, r) {
            Ok(records) => {
                if !validate_only {
                    for rec in records {
                        batch.push(rec);
                    }
                }
                results.push((ErrorCode::NONE, None));
            }
            Err((code, m)) => results.push((code, Some(m))),
        }
    }
    (batch.records, results)
}

fn alter_one(
    image: &MetadataImage,
    r: &AlterConfigsResource,
) -> Result<Vec<MetadataRecord>, (ErrorCode, String)> {
    match r.resource_type {
        RESOURCE_TOPIC => {
            if image.topic(&r.resource_name).is_none() {
                return Err((
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("topic '{}' does not exist", r.resource_name),
                ));
            }
        }
        // An empty name is the cluster-wide default; otherwise a broker id.
        // Kafka's `ControllerConfigurationValidator` messages.
        RESOURCE_BROKER if !r.resource_name.is_empty() => match r.resource_name.parse::<i32>() {
            Err(_) => {
                return Err((
                    ErrorCode::INVALID_REQUEST,
                    "Unable to parse broker name as a base 10 number.".into(),
                ))
            }
            Ok(id) if id < 0 => {
                return Err((
                    ErrorCode::INVALID_REQUEST,
                    "Invalid negative broker ID.".into(),
                ))
            }
            Ok(_) => {}
        },
        RESOURCE_BROKER => {}
        // Kafka's `ControllerConfigurationValidator.validateGroupName`.
        RESOURCE_GROUP if r.resource_name.is_empty() => {
            return Err((
                ErrorCode::INVALID_REQUEST,
                "Default group resources are not allowed.".into(),
            ))
        }
        RESOURCE_GROUP | RESOURCE_CLIENT_METRICS => {}
        other => {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!("resource type {other} is not supported"),
            ))
        }
    }
    let current = image.resource_configs(r.resource_type, &r.resource_name);
    let mut resulting = current.cloned().unwrap_or_default();
    let mut records = Vec::with_capacity(r.ops.len());
    for (name, op, value) in &r.ops {
        let existing = current.and_then(|m| m.get(name)).cloned();
        let new_value = match op {
            AlterConfigOp::Delete => None,
            AlterConfigOp::Set | AlterConfigOp::Append | AlterConfigOp::Subtract => {
                let Some(v) = value else {
                    return Err((ErrorCode::INVALID_CONFIG, format!("null value for {name}")));
                };
                let mut list: Vec<String> = existing
                    .as_deref()
                    .unwrap_or("")
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                match op {
                    AlterConfigOp::Append => {
                        for item in v.split(',').filter(|s| !s.is_empty()) {
                            if !list.iter().any(|x| x == item) {
                                list.push(item.to_string());
                            }
                        }
                        Some(list.join(","))
                    }
                    AlterConfigOp::Subtract => {
                        list.retain(|x| !v.split(',').any(|item| item == x));
                        Some(list.join(","))
                    }
                    _ => Some(v.clone()),
                }
            }
        };
        if let Some(v) = &new_value {
            validate_value(name, v).map_err(|m| (ErrorCode::INVALID_CONFIG, m))?;
            resulting.insert(name.clone(), v.clone());
        } else {
            resulting.remove(name);
        }
        records.push(MetadataRecord::Config {
            resource_type: r.resource_type,
            resource_name: r.resource_name.clone(),
            name: name.clone(),
            value: new_value,
        });
    }
    match r.resource_type {
        RESOURCE_BROKER => crate::config::dynamic::validate_layer(&resulting)
            .map_err(|m| (ErrorCode::INVALID_REQUEST, m))?,
        // The bounds that depend on the group settings were checked by the broker that took
        // the request; names and types are checked again here.
        RESOURCE_GROUP => crate::config::group::check_names_and_values(&resulting)
            .map_err(|m| (ErrorCode::INVALID_CONFIG, m))?,
        RESOURCE_CLIENT_METRICS => {
            use crate::config::client_metrics::{validate_client_metrics, ClientMetricsError};
            validate_client_metrics(&r.resource_name, &resulting).map_err(|e| match e {
                ClientMetricsError::InvalidRequest(m) => (ErrorCode::INVALID_REQUEST, m),
                ClientMetricsError::InvalidConfig(m) => (ErrorCode::INVALID_CONFIG, m),
            })?
        }
        _ => {}
    }
    Ok(records)
}
