//! CreateAcls (key 30), versions 1-3: validated and committed by the active controller
//! (forwarded from other brokers, KIP-590) as `AccessControlEntry` records, answered once this
//! node's image holds them. Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED on every
//! creation otherwise); SECURITY_DISABLED without an authorizer.
use std::sync::Arc;

use super::common::authz::Authz;
use super::{later, ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::acls::{create_acls, AclBinding};
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_acls_request::{AclCreation, CreateAclsRequest};
use crate::protocol::messages::create_acls_response::*;

pub fn binding_of(c: &AclCreation) -> AclBinding {
    AclBinding {
        resource_type: c.resource_type,
        resource_name: c.resource_name.clone(),
        pattern_type: c.resource_pattern_type,
        principal: c.principal.clone(),
        host: c.host.clone(),
        operation: c.operation,
        permission_type: c.permission_type,
    }
}

fn all_failed(request: &CreateAclsRequest, code: ErrorCode, message: &str) -> CreateAclsResponse {
    CreateAclsResponse {
        throttle_time_ms: 0,
        results: request
            .creations
            .iter()
            .map(|_| AclCreationResult {
                error_code: code.code(),
                error_message: Some(message.to_string()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: CreateAclsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if let Some((code, message)) = Authz::new(&broker, &conn).acl_change_refusal() {
        return ready(header, Some(all_failed(&request, code, &message)));
    }
    let cluster = broker.cluster.clone();
    let version = header.api_version;
    later(header, async move {
        let failed_request = request.clone();
        let response = cluster
            .controller_op(
                CreateAclsRequest::API_KEY,
                version,
                request.clone(),
                on_controller,
                move |code| all_failed(&failed_request, code, &code.message()),
            )
            .await;
        let created: Vec<AclBinding> = request
            .creations
            .iter()
            .zip(&response.results)
            .filter(|(_, r)| r.error_code == 0)
            .map(|(c, _)| binding_of(c))
            .collect();
        cluster
            .wait_until(|image| created.iter().all(|a| image.acls.find(a).is_some()))
            .await;
        Some(response)
    })
}

/// The active controller's side: fresh ids, `AccessControlEntry` records.
pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: CreateAclsRequest,
) -> Result<CreateAclsResponse, ControllerError> {
    controller
        .run(move |image, _, _| {
            let bindings: Vec<AclBinding> = request.creations.iter().map(binding_of).collect();
            let (records, results) = create_acls(image, &bindings, &mut || Uuid::random().0);
            let response = CreateAclsResponse {
                throttle_time_ms: 0,
                results: results
                    .into_iter()
                    .map(|(code, message)| AclCreationResult {
                        error_code: code.code(),
                        error_message: message,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            (records, response)
        })
        .await
}
