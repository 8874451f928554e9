//! OffsetDelete (key 47): committed offsets of partitions a group no longer consumes are
//! removed by tombstones; the answer waits until they reached the ISR, as Kafka's
//! coordinators append with acks=all. Partitions that do not exist are answered
//! UNKNOWN_TOPIC_OR_PARTITION and not passed to the coordinator, as in Kafka (which still
//! asks the coordinator, so group-level errors are answered whatever the partitions).
use super::common::authz::Authz;
use super::common::unknown_partitions::{add_errors, split_refused};
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use crate::protocol::messages::offset_delete_response::OffsetDeleteResponse;
use std::sync::Arc;

use super::common::unknown_partitions::{add_unknown, split_unknown};
use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_delete_request::OffsetDeleteRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetDeleteRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let mut request = request;
    let authz = Authz::new(&broker, &conn);
    if !authz.group(operation::DELETE, &request.group_id) {
        let response = OffsetDeleteResponse {
            error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        };
        return ready(header, Some(response));
    }
    let refused = split_refused(&mut request.topics, |name| {
        authz.topic(operation::READ, name)
    });
    let unknown = split_unknown(&broker.cluster.image(), &mut request.topics);
    let ctx = group_context(&header, &conn);
    let mut response = broker.groups.offset_delete(&ctx, &request);
    if response.error_code == 0 {
        add_errors(
            &mut response.topics,
            refused,
            ErrorCode::TOPIC_AUTHORIZATION_FAILED,
        );
        add_unknown(&mut response.topics, unknown);
    }
    if response.error_code != 0 {
        return ready(header, Some(response));
    }
    super::after_group_write(broker, header, request.group_id, response, |r, code| {
        r.error_code = code.code()
    })
}
