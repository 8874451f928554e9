//! TxnOffsetCommit (key 28), versions 0-4: offsets committed inside a transaction, visible to
//! the group only when the transaction commits. In a cluster the answer waits until the
//! transactional offsets reached the ISR of the group's `__consumer_offsets` partition, as
//! Kafka appends them with acks=all.
use super::ConnectionContext;
use std::sync::Arc;

use super::{group_context, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::txn_offset_commit_request::TxnOffsetCommitRequest;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: TxnOffsetCommitRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let ctx = group_context(&header, &conn);
    let response = broker.groups.txn_offset_commit(&ctx, &request);
    // Not known to be durable: the client must not take it as committed.
    super::after_group_write(broker, header, request.group_id, response, |r, code| {
        for t in r.topics.iter_mut() {
            for p in t.partitions.iter_mut().filter(|p| p.error_code == 0) {
                p.error_code = code.code();
            }
        }
    })
}
