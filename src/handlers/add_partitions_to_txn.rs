//! AddPartitionsToTxn (key 24), versions 0-5: partitions join the producer's transaction (0-3
//! from clients, 4-5 the verification form). In a cluster the answer waits until the
//! coordinator's record reached the ISR of the id's `__transaction_state` partition.
//!
//! A partition exists if the cluster's metadata image has it, wherever its replicas live:
//! the coordinator hosts no replica of most partitions it adds (Kafka's coordinator checks
//! its metadata cache, not its log manager).
use super::ConnectionContext;
use std::sync::Arc;

use super::{group_context, later, Broker, ResponseFuture};
use crate::coordinator::offsets_topic::TRANSACTION_TOPIC;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnRequest;
use crate::protocol::messages::add_partitions_to_txn_response::AddPartitionsToTxnTopicResult;

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: AddPartitionsToTxnRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
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
        for p in partitions {
            if let Err(code) = broker.wait_replicated(TRANSACTION_TOPIC, p).await {
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
