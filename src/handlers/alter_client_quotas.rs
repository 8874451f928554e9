//! AlterClientQuotas (key 49), versions 0-1 (KIP-546): sets and removes client quota values
//! per entity, committed by the active controller as `ClientQuota` records (forwarded to it
//! from other brokers, KIP-590) and answered once this node's image shows them, so a
//! DescribeClientQuotas that follows on the same broker sees the change. Validation and error
//! codes are Kafka's controller's (`controller::client_quotas`).
use std::sync::Arc;

use super::{later, Broker, ConnectionContext, ResponseFuture};
use crate::controller::client_quotas::{alter_client_quotas, QuotaAlteration, QuotaEntity};
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::alter_client_quotas_request::AlterClientQuotasRequest;
use crate::protocol::messages::alter_client_quotas_response::*;

/// The request's entities, each as its (type, name) components, in request order.
fn alterations(request: &AlterClientQuotasRequest) -> Vec<QuotaAlteration> {
    request
        .entries
        .iter()
        .map(|e| QuotaAlteration {
            entity: e
                .entity
                .iter()
                .map(|c| (c.entity_type.clone(), c.entity_name.clone()))
                .collect(),
            ops: e
                .ops
                .iter()
                .map(|o| (o.key.clone(), (!o.remove).then_some(o.value)))
                .collect(),
        })
        .collect()
}

/// The response: each entry's entity as sent, with its result.
fn response(
    request: &AlterClientQuotasRequest,
    results: impl Fn(usize) -> (ErrorCode, Option<String>),
) -> AlterClientQuotasResponse {
    AlterClientQuotasResponse {
        throttle_time_ms: 0,
        entries: request
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let (code, message) = results(i);
                EntryData {
                    error_code: code.code(),
                    error_message: message,
                    entity: e
                        .entity
                        .iter()
                        .map(|c| EntityData {
                            entity_type: c.entity_type.clone(),
                            entity_name: c.entity_name.clone(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    }
}

/// The active controller's side: the alterations become records, committed as one batch.
pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: AlterClientQuotasRequest,
) -> Result<AlterClientQuotasResponse, ControllerError> {
    controller
        .run(move |image, _, _| {
            let (records, results) =
                alter_client_quotas(image, &alterations(&request), request.validate_only);
            let reply = response(&request, |i| results[i].clone());
            (records, reply)
        })
        .await
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AlterClientQuotasRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // Kafka's controller: ALTER_CONFIGS on the cluster, else every entry is
    // CLUSTER_AUTHORIZATION_FAILED.
    let authorized = super::common::authz::Authz::new(&broker, &conn)
        .cluster(crate::protocol::acl::operation::ALTER_CONFIGS);
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    later(header, async move {
        let failed = |code: ErrorCode| response(&request, |_| (code, Some(code.message())));
        if !authorized {
            return Some(failed(ErrorCode::CLUSTER_AUTHORIZATION_FAILED));
        }
        let verdict = cluster
            .controller_op(
                AlterClientQuotasRequest::API_KEY,
                version,
                request.clone(),
                on_controller,
                failed,
            )
            .await;
        if !request.validate_only {
            // The values each accepted entity should now have here.
            let expected: Vec<(QuotaEntity, String, Option<f64>)> = alterations(&request)
                .into_iter()
                .zip(&verdict.entries)
                .filter(|(_, r)| r.error_code == 0)
                .flat_map(|(a, _)| {
                    let entity = QuotaEntity(a.entity.into_iter().collect());
                    a.ops.into_iter().map(move |(k, v)| (entity.clone(), k, v))
                })
                .collect();
            if !expected.is_empty() {
                cluster
                    .wait_until(|image| {
                        expected
                            .iter()
                            .all(|(e, k, v)| image.client_quotas.value(e, k) == *v)
                    })
                    .await;
            }
        }
        Some(verdict)
    })
}
