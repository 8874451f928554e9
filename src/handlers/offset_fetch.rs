//! OffsetFetch (key 9): committed offsets from the group coordinator; with `require_stable`
//! (KIP-447) offsets pending in an open transaction answer UNSTABLE_OFFSET_COMMIT.
use super::authz::Authz;
use super::ConnectionContext;
use crate::controller::acls::operation;
use crate::error::ErrorCode;
use crate::protocol::messages::offset_fetch_response::OffsetFetchResponse;
use std::sync::Arc;

use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::offset_fetch_request::OffsetFetchRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: OffsetFetchRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let ctx = group_context(&header, &conn);
    let mut response = broker.groups.offset_fetch_stable(&ctx, &request);
    authorize(&Authz::new(&broker, &conn), &request, &mut response);
    ready(header, Some(response))
}

/// Kafka's checks, applied to the answer: DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED
/// for the group otherwise, with no offsets) and on each topic (a named topic's partitions
/// answer TOPIC_AUTHORIZATION_FAILED; with all topics asked for, refused ones are left out).
fn authorize(authz: &Authz, request: &OffsetFetchRequest, response: &mut OffsetFetchResponse) {
    if !authz.enabled() {
        return;
    }
    let group_refused = ErrorCode::GROUP_AUTHORIZATION_FAILED.code();
    let topic_refused = ErrorCode::TOPIC_AUTHORIZATION_FAILED.code();
    if request.groups.is_empty() {
        if !authz.group(operation::DESCRIBE, &request.group_id) {
            response.error_code = group_refused;
            for p in response
                .topics
                .iter_mut()
                .flat_map(|t| t.partitions.iter_mut())
            {
                p.committed_offset = -1;
                p.metadata = Some(String::new());
                p.error_code = group_refused;
            }
            return;
        }
        let all = request.topics.is_none();
        response.topics.retain_mut(|t| {
            if authz.topic(operation::DESCRIBE, &t.name) {
                return true;
            }
            for p in t.partitions.iter_mut() {
                p.committed_offset = -1;
                p.metadata = Some(String::new());
                p.error_code = topic_refused;
            }
            !all
        });
        return;
    }
    for g in response.groups.iter_mut() {
        if !authz.group(operation::DESCRIBE, &g.group_id) {
            g.error_code = group_refused;
            g.topics.clear();
            continue;
        }
        let all = request
            .groups
            .iter()
            .find(|r| r.group_id == g.group_id)
            .map_or(true, |r| r.topics.is_none());
        g.topics.retain_mut(|t| {
            if authz.topic(operation::DESCRIBE, &t.name) {
                return true;
            }
            for p in t.partitions.iter_mut() {
                p.committed_offset = -1;
                p.metadata = Some(String::new());
                p.error_code = topic_refused;
            }
            !all
        });
    }
}
