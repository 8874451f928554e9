//! TxnOffsetCommit (key 28), versions 0-4: offsets committed inside a transaction, visible to
//! the group only when the transaction commits. In a cluster the answer waits until the
//! transactional offsets reached the ISR of the group's `__consumer_offsets` partition, as
//! Kafka appends them with acks=all. Partitions that do not exist are answered
//! UNKNOWN_TOPIC_OR_PARTITION before the coordinator sees the request, as in Kafka.
use super::authz::Authz;
use super::ConnectionContext;
use crate::controller::acls::operation;
use crate::error::ErrorCode;
use std::sync::Arc;

use super::unknown_partitions::{add_errors, add_unknown, split_refused, split_unknown};
use super::{group_context, ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequest;
use crate::protocol::messages::txn_offset_commit_response::TxnOffsetCommitResponse;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: TxnOffsetCommitRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let mut request = request;
    // Kafka: WRITE on the transactional id, READ on the group (every partition fails with
    // the first refusal), then READ on each topic.
    let authz = Authz::new(&broker, &conn);
    let refuse_all = if !authz.transactional_id(operation::WRITE, &request.transactional_id) {
        Some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    } else if !authz.group(operation::READ, &request.group_id) {
        Some(ErrorCode::GROUP_AUTHORIZATION_FAILED)
    } else {
        None
    };
    let (refused, refused_code) = match refuse_all {
        Some(code) => (split_refused(&mut request.topics, |_| false), code),
        None => (
            split_refused(&mut request.topics, |name| {
                authz.topic(operation::READ, name)
            }),
            ErrorCode::TOPIC_AUTHORIZATION_FAILED,
        ),
    };
    let unknown = split_unknown(&broker.cluster.image(), &mut request.topics);
    let nothing_to_store = request.topics.is_empty();
    let mut response = if nothing_to_store {
        // Nothing left to commit: Kafka answers without asking the coordinator.
        TxnOffsetCommitResponse::default()
    } else {
        let ctx = group_context(&header, &conn);
        broker.groups.txn_offset_commit(&ctx, &request)
    };
    add_errors(&mut response.topics, refused, refused_code);
    add_unknown(&mut response.topics, unknown);
    if nothing_to_store {
        return ready(header, Some(response));
    }
    // Not known to be durable: the client must not take it as committed.
    super::after_group_write(broker, header, request.group_id, response, |r, code| {
        for t in r.topics.iter_mut() {
            for p in t.partitions.iter_mut().filter(|p| p.error_code == 0) {
                p.error_code = code.code();
            }
        }
    })
}
