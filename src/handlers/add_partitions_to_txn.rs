//! AddPartitionsToTxn (key 24), versions 0-5: partitions join the producer's transaction (0-3
//! from clients, 4-5 the verification form). In a cluster the answer waits until the
//! coordinator's record reached the ISR of the id's `__transaction_state` partition.
//!
//! A partition exists if the cluster's metadata image has it, wherever its replicas live:
//! the coordinator hosts no replica of most partitions it adds (Kafka's coordinator checks
//! its metadata cache, not its log manager).
use super::common::authz::Authz;
use super::ConnectionContext;
use crate::error::ErrorCode;
use crate::protocol::acl::operation;
use std::sync::Arc;

use super::{group_context, later, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::TRANSACTION_TOPIC;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnRequest;
use crate::protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnTopicResult,
};

/// Kafka's checks: a client (v3 and below) needs WRITE on the transactional id (every
/// partition fails with TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise) and on each topic
/// (TOPIC_AUTHORIZATION_FAILED for its partitions, OPERATION_NOT_ATTEMPTED for the others);
/// a broker verifying partitions (v4+) needs CLUSTER_ACTION on the cluster.
fn refused(
    authz: &Authz,
    version: i16,
    request: &AddPartitionsToTxnRequest,
) -> Option<AddPartitionsToTxnResponse> {
    if !authz.enabled() {
        return None;
    }
    if version >= 4 {
        return (!authz.cluster(operation::CLUSTER_ACTION)).then(|| AddPartitionsToTxnResponse {
            error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        });
    }
    let tid_refused =
        !authz.transactional_id(operation::WRITE, &request.v3_and_below_transactional_id);
    let topics_refused: Vec<bool> = request
        .v3_and_below_topics
        .iter()
        .map(|t| tid_refused || !authz.topic(operation::WRITE, &t.name))
        .collect();
    if !topics_refused.iter().any(|r| *r) {
        return None;
    }
    let code_for = |refused: bool| {
        if tid_refused {
            ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        } else if refused {
            ErrorCode::TOPIC_AUTHORIZATION_FAILED
        } else {
            ErrorCode::OPERATION_NOT_ATTEMPTED
        }
    };
    Some(AddPartitionsToTxnResponse {
        results_by_topic_v3_and_below: request
            .v3_and_below_topics
            .iter()
            .zip(topics_refused)
            .map(|(t, refused)| AddPartitionsToTxnTopicResult {
                name: t.name.clone(),
                results_by_partition: t
                    .partitions
                    .iter()
                    .map(|p| AddPartitionsToTxnPartitionResult {
                        partition_index: *p,
                        partition_error_code: code_for(refused).code(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AddPartitionsToTxnRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if let Some(response) = refused(&Authz::new(&broker, &conn), header.api_version, &request) {
        return super::ready(header, Some(response));
    }
    let ctx = group_context(&header, &conn);
    let mut response = broker
        .txns
        .add_partitions_to_txn(&ctx, &request, &|topic: &str, p: i32| {
            broker.cluster.image().partition(topic, p).is_some()
        });
    let version = header.api_version;
    later(header, async move {
        let ids: Vec<&str> = if version < 4 {
            vec![request.v3_and_below_transactional_id.as_str()]
        } else {
            request
                .transactions
                .iter()
                .map(|t| t.transactional_id.as_str())
                .collect()
        };
        let mut partitions: Vec<i32> = ids.iter().map(|t| broker.txns.partition_for(t)).collect();
        partitions.sort_unstable();
        partitions.dedup();
        let mut failed = Vec::new();
        let deadline = Broker::coordinator_append_deadline();
        for p in partitions {
            if let Err(code) = broker
                .wait_replicated_until(TRANSACTION_TOPIC, p, deadline)
                .await
            {
                failed.push((p, code));
            }
        }
        if !failed.is_empty() {
            let fail = |tid: &str, topics: &mut Vec<AddPartitionsToTxnTopicResult>| {
                let p = broker.txns.partition_for(tid);
                if let Some((_, code)) = failed.iter().find(|(q, _)| *q == p) {
                    for t in topics.iter_mut() {
                        for r in t
                            .results_by_partition
                            .iter_mut()
                            .filter(|r| r.partition_error_code == 0)
                        {
                            r.partition_error_code = code.code();
                        }
                    }
                }
            };
            fail(
                &request.v3_and_below_transactional_id,
                &mut response.results_by_topic_v3_and_below,
            );
            for t in response.results_by_transaction.iter_mut() {
                fail(&t.transactional_id, &mut t.topic_results);
            }
        }
        Some(response)
    })
}
