//! DescribeAcls (key 29), versions 1-3: the ACLs matching one filter, grouped by resource
//! pattern, answered from this node's metadata image (Kafka answers from the broker's
//! authorizer, without the controller). Needs DESCRIBE on the cluster; SECURITY_DISABLED
//! without an authorizer; INVALID_REQUEST for a filter with an unknown field.
use std::collections::BTreeMap;
use std::sync::Arc;

use super::common::authz::Authz;
use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::acls::AclFilter;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_acls_request::DescribeAclsRequest;
use crate::protocol::messages::describe_acls_response::*;

/// Kafka's message when a broker has no authorizer.
pub const NO_AUTHORIZER: &str = "No Authorizer is configured.";

/// The filter of a DescribeAcls request (v0 has no pattern type: LITERAL, the spec default).
pub fn filter_of(r: &DescribeAclsRequest) -> AclFilter {
    AclFilter {
        resource_type: r.resource_type_filter,
        resource_name: r.resource_name_filter.clone(),
        pattern_type: r.pattern_type_filter,
        principal: r.principal_filter.clone(),
        host: r.host_filter.clone(),
        operation: r.operation,
        permission_type: r.permission_type,
    }
}

fn error(code: ErrorCode, message: impl Into<String>) -> DescribeAclsResponse {
    DescribeAclsResponse {
        error_code: code.code(),
        error_message: Some(message.into()),
        ..Default::default()
    }
}

pub fn handle(
    broker: &Broker,
    authz: &Authz,
    request: &DescribeAclsRequest,
) -> DescribeAclsResponse {
    if !authz.cluster(operation::DESCRIBE) {
        return error(
            ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
            ErrorCode::CLUSTER_AUTHORIZATION_FAILED.message(),
        );
    }
    if !authz.enabled() {
        return error(ErrorCode::SECURITY_DISABLED, NO_AUTHORIZER);
    }
    let filter = filter_of(request);
    if let Some(reason) = filter.invalid_reason() {
        return error(ErrorCode::INVALID_REQUEST, reason);
    }
    let image = broker.cluster.image();
    let mut by_pattern: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for (_, acl) in image.acls.iter().filter(|(_, a)| filter.matches(a)) {
        by_pattern
            .entry((
                acl.resource_type,
                acl.resource_name.clone(),
                acl.pattern_type,
            ))
            .or_default()
            .push(AclDescription {
                principal: acl.principal.clone(),
                host: acl.host.clone(),
                operation: acl.operation,
                permission_type: acl.permission_type,
                ..Default::default()
            });
    }
    DescribeAclsResponse {
        throttle_time_ms: 0,
        error_code: 0,
        error_message: None,
        resources: by_pattern
            .into_iter()
            .map(
                |((resource_type, resource_name, pattern_type), acls)| DescribeAclsResource {
                    resource_type,
                    resource_name,
                    pattern_type,
                    acls,
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeAclsRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let authz = Authz::new(&broker, &conn);
    let response = handle(&broker, &authz, &request);
    ready(header, Some(response))
}
