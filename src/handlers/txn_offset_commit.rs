//! TxnOffsetCommit (key 28), versions 0-5: offsets committed inside a transaction, visible to
//! the group only when the transaction commits. In a cluster the answer waits until the
//! transactional offsets reached the ISR of the group's `__consumer_offsets` partition, as
//! Kafka appends them with acks=all. Partitions that do not exist are answered
//! UNKNOWN_TOPIC_OR_PARTITION before the coordinator sees the request, as in Kafka.
//!
//! Before the offsets are written the transaction coordinator is asked about the group's
//! `__consumer_offsets` partition (Kafka's `maybeStartTransactionVerification` for the
//! coordinator's write): from v5 it adds it (transaction version 2, which sends no
//! AddOffsetsToTxn), before v5 it verifies that AddOffsetsToTxn added it (KIP-890 part 1, with
//! `transaction.partition.verification.enable`).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::common::unknown_partitions::{add_errors, add_unknown, split_refused, split_unknown};
use super::{group_context, ready, Broker, ResponseFuture};
use crate::cluster::txn_verifier::{TxnOperation, TxnProducer};
use crate::coordinator::offsets_topic::OFFSETS_TOPIC;
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
    if !request.topics.is_empty() {
        if let Some(code) = transaction_refusal(&broker, &request, header.api_version).await {
            let all = split_refused(&mut request.topics, |_| false);
            let mut response = TxnOffsetCommitResponse::default();
            add_errors(&mut response.topics, all, code);
            add_errors(&mut response.topics, refused, refused_code);
            add_unknown(&mut response.topics, unknown);
            return ready(header, Some(response));
        }
    }
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

/// What the transaction coordinator says of the group's offsets partition in the producer's
/// transaction, in the words of Kafka's group coordinator
/// (`CoordinatorOperationExceptionHelper`): None when it is in (or was added to) it.
async fn transaction_refusal(
    broker: &Broker,
    request: &TxnOffsetCommitRequest,
    version: i16,
) -> Option<ErrorCode> {
    let operation = TxnOperation::for_txn_offset_commit(version);
    if !super::common::produce_verification::consults_coordinator(broker, operation) {
        return None;
    }
    let producer = TxnProducer {
        transactional_id: request.transactional_id.clone(),
        producer_id: request.producer_id,
        producer_epoch: request.producer_epoch,
    };
    let partition = (
        OFFSETS_TOPIC.to_string(),
        broker.groups.partition_for(&request.group_id),
    );
    let answer = super::common::produce_verification::ask(
        broker,
        &producer,
        std::slice::from_ref(&partition),
        operation,
    )
    .await;
    let code = answer
        .first()
        .copied()
        .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR);
    (!code.is_ok()).then(|| for_group_coordinator(code))
}

fn for_group_coordinator(code: ErrorCode) -> ErrorCode {
    match code {
        ErrorCode::NETWORK_EXCEPTION => ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        | ErrorCode::NOT_ENOUGH_REPLICAS
        | ErrorCode::REQUEST_TIMED_OUT => ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::KAFKA_STORAGE_ERROR => {
            ErrorCode::NOT_COORDINATOR
        }
        other => other,
    }
}
