//! DeleteAcls (key 31), versions 1-3: every ACL matching one of the filters is removed by the
//! active controller (forwarded from other brokers, KIP-590) with a
//! `RemoveAccessControlEntry` record, answered once this node's image no longer holds them.
//! Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED per filter otherwise);
//! SECURITY_DISABLED without an authorizer; INVALID_REQUEST for a filter with an unknown field.
use std::sync::Arc;

use super::common::authz::Authz;
use super::{later, ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::acls::{delete_acls, AclBinding, AclFilter};
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::delete_acls_request::{DeleteAclsFilter, DeleteAclsRequest};
use crate::protocol::messages::delete_acls_response::*;

fn filter_of(f: &DeleteAclsFilter) -> AclFilter {
    AclFilter {
        resource_type: f.resource_type_filter,
        resource_name: f.resource_name_filter.clone(),
        pattern_type: f.pattern_type_filter,
        principal: f.principal_filter.clone(),
        host: f.host_filter.clone(),
        operation: f.operation,
        permission_type: f.permission_type,
    }
}

fn all_failed(request: &DeleteAclsRequest, code: ErrorCode, message: &str) -> DeleteAclsResponse {
    DeleteAclsResponse {
        throttle_time_ms: 0,
        filter_results: request
            .filters
            .iter()
            .map(|_| DeleteAclsFilterResult {
                error_code: code.code(),
                error_message: Some(message.to_string()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn matching_acl(acl: &AclBinding) -> DeleteAclsMatchingAcl {
    DeleteAclsMatchingAcl {
        error_code: 0,
        error_message: None,
        resource_type: acl.resource_type,
        resource_name: acl.resource_name.clone(),
        pattern_type: acl.pattern_type,
        principal: acl.principal.clone(),
        host: acl.host.clone(),
        operation: acl.operation,
        permission_type: acl.permission_type,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DeleteAclsRequest,
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
                DeleteAclsRequest::API_KEY,
                version,
                request,
                on_controller,
                move |code| all_failed(&failed_request, code, &code.message()),
            )
            .await;
        let deleted: Vec<AclBinding> = response
            .filter_results
            .iter()
            .flat_map(|r| r.matching_acls.iter())
            .map(|m| AclBinding {
                resource_type: m.resource_type,
                resource_name: m.resource_name.clone(),
                pattern_type: m.pattern_type,
                principal: m.principal.clone(),
                host: m.host.clone(),
                operation: m.operation,
                permission_type: m.permission_type,
            })
            .collect();
        cluster
            .wait_until(|image| deleted.iter().all(|a| image.acls.find(a).is_none()))
            .await;
        Some(response)
    })
}

/// The active controller's side: `RemoveAccessControlEntry` records for every match.
pub async fn on_controller(
    controller: Arc<ControllerService>,
    request: DeleteAclsRequest,
) -> Result<DeleteAclsResponse, ControllerError> {
    controller
        .run(move |image, _, _| {
            let filters: Vec<AclFilter> = request.filters.iter().map(filter_of).collect();
            let (records, results) = delete_acls(image, &filters);
            let response = DeleteAclsResponse {
                throttle_time_ms: 0,
                filter_results: results
                    .into_iter()
                    .map(|r| match r {
                        Ok(acls) => DeleteAclsFilterResult {
                            error_code: 0,
                            error_message: None,
                            matching_acls: acls.iter().map(matching_acl).collect(),
                            ..Default::default()
                        },
                        Err(reason) => DeleteAclsFilterResult {
                            error_code: ErrorCode::INVALID_REQUEST.code(),
                            error_message: Some(reason),
                            ..Default::default()
                        },
                    })
                    .collect(),
                ..Default::default()
            };
            (records, response)
        })
        .await
}
