//! ConsumerGroupDescribe (API 69) v0-1, KIP-848 (v1 adds the member type, KIP-1099). A group
//! needs DESCRIBE on the group, and (KAFKA-18813) on every topic its members subscribe to or are
//! assigned: a caller who may not describe one of them gets TOPIC_AUTHORIZATION_FAILED for the
//! group rather than the names of topics it cannot see.
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::{operation, resource_type};
use crate::protocol::messages::consumer_group_describe_response::{
    ConsumerGroupDescribeResponse, DescribedGroup,
};
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ConsumerGroupDescribeRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    // With `group.version` 0 the consumer protocol is off: every group UNSUPPORTED_VERSION,
    // as Kafka's `isConsumerGroupProtocolEnabled` check.
    if !broker.cluster.image().features.consumer_protocol_enabled() {
        let response = ConsumerGroupDescribeResponse {
            groups: request
                .group_ids
                .iter()
                .map(|g| DescribedGroup {
                    group_id: g.clone(),
                    error_code: ErrorCode::UNSUPPORTED_VERSION.code(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        return super::ready(header, Some(response));
    }
    let ctx = group_context(&header, &conn);
    let topics = broker.topics_view();
    let authz = Authz::new(&broker, &conn);
    let mut response = broker
        .groups
        .consumer_group_describe(&ctx, &request, &topics);
    for g in response.groups.iter_mut() {
        if !authz.group(operation::DESCRIBE, &g.group_id) {
            let code = ErrorCode::GROUP_AUTHORIZATION_FAILED;
            *g = DescribedGroup {
                error_code: code.code(),
                error_message: Some(code.message()),
                group_id: std::mem::take(&mut g.group_id),
                ..Default::default()
            };
        } else if let Some(hidden) = hidden_topic(&authz, g) {
            tracing::debug!(group = %g.group_id, topic = %hidden, "group uses a topic the caller may not describe");
            let code = ErrorCode::TOPIC_AUTHORIZATION_FAILED;
            *g = DescribedGroup {
                error_code: code.code(),
                error_message: Some(
                    "The described group uses topics that the client is not authorized to describe."
                        .into(),
                ),
                group_id: std::mem::take(&mut g.group_id),
                ..Default::default()
            };
        } else if request.include_authorized_operations {
            g.authorized_operations =
                authz.authorized_operations(resource_type::GROUP, &g.group_id);
        }
    }
    ready(header, Some(response))
}

/// A topic the group's members subscribe to or hold (now or as their target) that the caller
/// may not DESCRIBE.
fn hidden_topic(authz: &Authz, group: &DescribedGroup) -> Option<String> {
    group
        .members
        .iter()
        .flat_map(|m| {
            let assigned = m
                .assignment
                .topic_partitions
                .iter()
                .chain(&m.target_assignment.topic_partitions)
                .map(|tp| &tp.topic_name);
            m.subscribed_topic_names.iter().chain(assigned)
        })
        .find(|t| !authz.topic(operation::DESCRIBE, t))
        .cloned()
}
