//! ListConfigResources (key 74), versions 0-1, as Kafka's `KafkaApis.handleListConfigResources`:
//! v0 (once ListClientMetricsResources, KIP-714) lists the client-metrics subscriptions; v1
//! (KIP-1142) lists the resources of the asked types (all supported ones when none is
//! asked): groups with configs, subscriptions, broker ids (BROKER_LOGGER and BROKER) and every
//! topic, in Kafka's order. An unsupported type answers UNSUPPORTED_VERSION; the whole request
//! needs DESCRIBE_CONFIGS on the cluster. `kafka-configs --entity-type groups|client-metrics`
//! uses it to find the entities to describe.
use std::sync::Arc;

use super::describe_configs::{
    RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_CLIENT_METRICS, RESOURCE_GROUP,
    RESOURCE_TOPIC,
};
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::list_config_resources_request::ListConfigResourcesRequest;
use crate::protocol::messages::list_config_resources_response::*;

/// The types a version lists (Kafka's `ListConfigResourcesRequest.supportedResourceTypes`).
fn supported(version: i16) -> &'static [i8] {
    if version == 0 {
        &[RESOURCE_CLIENT_METRICS]
    } else {
        &[
            RESOURCE_TOPIC,
            RESOURCE_BROKER,
            RESOURCE_BROKER_LOGGER,
            RESOURCE_CLIENT_METRICS,
            RESOURCE_GROUP,
        ]
    }
}

pub fn handle(
    broker: &Broker,
    version: i16,
    listener: &str,
    request: &ListConfigResourcesRequest,
) -> ListConfigResourcesResponse {
    let supported = supported(version);
    let asked: Vec<i8> = if request.resource_types.is_empty() {
        supported.to_vec()
    } else {
        request.resource_types.clone()
    };
    if asked.iter().any(|t| !supported.contains(t)) {
        return ListConfigResourcesResponse {
            error_code: ErrorCode::UNSUPPORTED_VERSION.code(),
            ..Default::default()
        };
    }
    let image = broker.cluster.image();
    let mut resources = Vec::new();
    let mut add = |resource_type: i8, names: Vec<String>| {
        if asked.contains(&resource_type) {
            resources.extend(names.into_iter().map(|resource_name| ConfigResource {
                resource_name,
                resource_type,
                ..Default::default()
            }));
        }
    };
    let with_configs = |resource_type: i8| -> Vec<String> {
        image
            .configs
            .iter()
            .filter(|((t, _), configs)| *t == resource_type && !configs.is_empty())
            .map(|((_, name), _)| name.clone())
            .collect()
    };
    add(RESOURCE_GROUP, with_configs(RESOURCE_GROUP));
    add(
        RESOURCE_CLIENT_METRICS,
        with_configs(RESOURCE_CLIENT_METRICS),
    );
    let broker_ids: Vec<String> = broker
        .cluster
        .brokers_on(Some(listener), false)
        .into_iter()
        .map(|((id, ..), _)| id.to_string())
        .collect();
    add(RESOURCE_BROKER_LOGGER, broker_ids.clone());
    add(RESOURCE_BROKER, broker_ids);
    add(
        RESOURCE_TOPIC,
        broker
            .cluster
            .topics()
            .into_iter()
            .map(|t| t.name)
            .collect(),
    );
    ListConfigResourcesResponse {
        config_resources: resources,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ListConfigResourcesRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let authz = super::common::authz::Authz::new(&broker, &conn);
    let response = match authz.require_cluster(operation::DESCRIBE_CONFIGS) {
        Ok(()) => handle(&broker, header.api_version, &conn.listener_name, &request),
        Err(code) => ListConfigResourcesResponse {
            error_code: code.code(),
            ..Default::default()
        },
    };
    ready(header, Some(response))
}
