//! ShareGroupDescribe (API 77) v1, KIP-932: every group needs DESCRIBE on the group; as with
//! ConsumerGroupDescribe (KAFKA-18813), a group whose members use a topic the caller may not
//! describe is TOPIC_AUTHORIZATION_FAILED rather than a list of names it cannot see.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::{operation, resource_type};
use crate::protocol::messages::share_group_describe_response::{
    DescribedGroup, ShareGroupDescribeResponse,
};
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::share_group_describe_request::ShareGroupDescribeRequest;

fn refused(group_id: String, code: ErrorCode, message: Option<String>) -> DescribedGroup {
    DescribedGroup {
        error_code: code.code(),
        error_message: message.or_else(|| Some(code.message())),
        group_id,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ShareGroupDescribeRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if !broker.share_groups_enabled() {
        let response = ShareGroupDescribeResponse {
            groups: request
                .group_ids
                .iter()
                .map(|g| refused(g.clone(), ErrorCode::UNSUPPORTED_VERSION, None))
                .collect(),
            ..Default::default()
        };
        return ready(header, Some(response));
    }
    let topics = broker.topics_view();
    let authz = Authz::new(&broker, &conn);
    let mut response = broker.groups.share_group_describe(&request, &topics);
    for g in response.groups.iter_mut() {
        if !authz.group(operation::DESCRIBE, &g.group_id) {
            let id = std::mem::take(&mut g.group_id);
            *g = refused(id, ErrorCode::GROUP_AUTHORIZATION_FAILED, None);
            continue;
        }
        let hidden = g.members.iter().any(|m| {
            m.subscribed_topic_names
                .iter()
                .any(|t| !authz.topic(operation::DESCRIBE, t))
                || m.assignment
                    .topic_partitions
                    .iter()
                    .any(|tp| !authz.topic(operation::DESCRIBE, &tp.topic_name))
        });
        if hidden {
            let id = std::mem::take(&mut g.group_id);
            *g = refused(
                id,
                ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                Some(
                    "The described group uses topics that the client is not authorized to describe."
                        .into(),
                ),
            );
        } else if request.include_authorized_operations {
            g.authorized_operations =
                authz.authorized_operations(resource_type::GROUP, &g.group_id);
        }
    }
    ready(header, Some(response))
}
