//! DescribeClientQuotas (key 48), versions 0-1 (KIP-546): the quota entities of this node's
//! metadata image matching a filter (per entity type: an exact name, the default entity, or
//! any), `strict` leaving out entities with other types. Served from the local image, as
//! Kafka's brokers serve it from theirs.
use std::sync::Arc;

use super::{common::throttle::QuotaClient, ready, Broker, ConnectionContext, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_client_quotas_request::DescribeClientQuotasRequest;
use crate::protocol::messages::describe_client_quotas_response::*;

pub fn handle(
    quotas: &crate::controller::client_quotas::ClientQuotas,
    request: &DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    let components: Vec<(String, i8, Option<String>)> = request
        .components
        .iter()
        .map(|c| (c.entity_type.clone(), c.match_type, c.r#match.clone()))
        .collect();
    match quotas.describe(&components, request.strict) {
        Ok(found) => DescribeClientQuotasResponse {
            throttle_time_ms: 0,
            error_code: 0,
            error_message: None,
            entries: Some(
                found
                    .into_iter()
                    .map(|(entity, values)| EntryData {
                        entity: entity
                            .0
                            .iter()
                            .map(|(t, n)| EntityData {
                                entity_type: t.clone(),
                                entity_name: n.clone(),
                                ..Default::default()
                            })
                            .collect(),
                        values: values
                            .iter()
                            .map(|(k, v)| ValueData {
                                key: k.clone(),
                                value: *v,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        },
        Err((code, message)) => DescribeClientQuotasResponse {
            throttle_time_ms: 0,
            error_code: code.code(),
            error_message: Some(message),
            entries: None,
            ..Default::default()
        },
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeClientQuotasRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka: DESCRIBE_CONFIGS on the cluster, else the whole request is
    // CLUSTER_AUTHORIZATION_FAILED.
    if let Some(refused) = super::common::authz::refuse_cluster(
        &broker,
        &conn,
        &header,
        crate::protocol::acl::operation::DESCRIBE_CONFIGS,
        |r: &mut DescribeClientQuotasResponse, code| {
            r.error_code = code.code();
            r.error_message = Some(code.message());
            r.entries = None;
        },
    ) {
        return refused;
    }
    let client = QuotaClient::of(&broker, &header, &conn);
    let response = handle(&client.image.client_quotas, &request);
    ready(header, Some(response))
}
