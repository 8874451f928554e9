//! Asking the transaction coordinator about partitions of a producer's transaction (Kafka's
//! `AddPartitionsToTxnManager`): whether they are in its ongoing transaction (KIP-890 part 1,
//! AddPartitionsToTxn v4 with `VerifyOnly`), or, for a producer of transaction version 2, to
//! add them (part 2, `VerifyOnly` false). Answered here when this broker leads the
//! transactional id's `__transaction_state` partition, and sent to that leader over the
//! inter-broker listener otherwise. The produce path asks before a transactional producer's
//! first write to a partition (`handlers::common::produce_verification`), TxnOffsetCommit before its
//! offsets are written.
//!
//! The answers carry Kafka's translations: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH,
//! TRANSACTION_ABORTABLE becomes INVALID_TXN_STATE for requests too old to know it (Produce
//! before v11, TxnOffsetCommit before v4), a refusal of the broker's own CLUSTER_ACTION becomes
//! INVALID_TXN_STATE, and a coordinator that cannot be reached is NETWORK_EXCEPTION.
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::ClusterContext;
use crate::coordinator::offsets_topic::TRANSACTION_TOPIC;
use crate::coordinator::service::RequestContext;
use crate::coordinator::txn::TransactionCoordinator;
use crate::error::ErrorCode;
use crate::net::connections::PeerConnections;
use crate::protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use crate::protocol::messages::add_partitions_to_txn_response::AddPartitionsToTxnResponse;

/// The first version with `VerifyOnly` (brokers only).
const VERIFY_VERSION: i16 = 4;
/// How long a verification may take, connection included (Kafka: `request.timeout.ms`).
const VERIFY_TIMEOUT_MS: u64 = 30_000;

/// One producer's question: its transactional id, producer id and epoch.
#[derive(Debug, Clone)]
pub struct TxnProducer {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
}

/// What is asked of the coordinator (Kafka's `TransactionSupportedOperation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnOperation {
    /// Verify, for a client that does not know TRANSACTION_ABORTABLE (Produce before v11,
    /// TxnOffsetCommit before v4): it is answered INVALID_TXN_STATE.
    VerifyLegacy,
    /// Verify (Produce v11, TxnOffsetCommit v4).
    Verify,
    /// Add the partitions: transaction version 2 (Produce v12+, TxnOffsetCommit v5).
    AddPartition,
}

impl TxnOperation {
    /// The operation of a Produce request at `version`.
    pub fn for_produce(version: i16) -> Self {
        match version {
            ..=10 => TxnOperation::VerifyLegacy,
            11 => TxnOperation::Verify,
            _ => TxnOperation::AddPartition,
        }
    }

    /// The operation of a TxnOffsetCommit request at `version`.
    pub fn for_txn_offset_commit(version: i16) -> Self {
        match version {
            ..=3 => TxnOperation::VerifyLegacy,
            4 => TxnOperation::Verify,
            _ => TxnOperation::AddPartition,
        }
    }

    /// Whether the producer bumps its epoch at every transaction end (transaction version 2).
    pub fn supports_epoch_bump(self) -> bool {
        self == TxnOperation::AddPartition
    }
}

/// The broker leading `transactional_id`'s `__transaction_state` partition, if any.
pub fn coordinator_of(
    cluster: &ClusterContext,
    txns: &TransactionCoordinator,
    transactional_id: &str,
) -> Option<i32> {
    cluster
        .image()
        .topics
        .get(TRANSACTION_TOPIC)
        .and_then(|t| t.partitions.get(&txns.partition_for(transactional_id)))
        .map(|p| p.leader)
        .filter(|leader| *leader >= 0)
}

/// Keeps one idle connection per coordinator broker, so a question costs a round trip, not a
/// connection (and a TLS handshake); a question asked while the connection is busy opens
/// another.
#[derive(Default)]
pub struct TxnVerifier {
    /// Made at the first question, with the cluster's inter-broker security.
    connections: std::sync::OnceLock<PeerConnections<i32>>,
}

impl TxnVerifier {
    /// The answer for each of `partitions`, in order: NONE when it is in the transaction (or,
    /// for [`TxnOperation::AddPartition`], was added to it).
    pub async fn verify(
        &self,
        cluster: &Arc<ClusterContext>,
        txns: &TransactionCoordinator,
        producer: &TxnProducer,
        partitions: &[(String, i32)],
        operation: TxnOperation,
    ) -> Vec<ErrorCode> {
        let request = verify_request(producer, partitions, operation);
        let coordinator = coordinator_of(cluster, txns, &producer.transactional_id);
        let response = match coordinator {
            None => Err(ErrorCode::COORDINATOR_NOT_AVAILABLE),
            Some(leader) if leader == cluster.node_id => {
                let ctx = RequestContext::new(VERIFY_VERSION, "strata-txn-verifier", "/local");
                Ok(
                    txns.add_partitions_to_txn(&ctx, &request, &|topic: &str, p: i32| {
                        cluster.image().partition(topic, p).is_some()
                    }),
                )
            }
            Some(leader) => self.ask(cluster, leader, &request).await,
        };
        answers(response, partitions, operation)
    }

    async fn ask(
        &self,
        cluster: &Arc<ClusterContext>,
        leader: i32,
        request: &AddPartitionsToTxnRequest,
    ) -> Result<AddPartitionsToTxnResponse, ErrorCode> {
        let addr = cluster
            .broker_address(leader)
            .ok_or(ErrorCode::COORDINATOR_NOT_AVAILABLE)?;
        let connections = self.connections.get_or_init(|| {
            PeerConnections::new(
                format!("strata-txn-verifier-{}", cluster.node_id),
                cluster.inter_broker_security.clone(),
            )
        });
        connections
            .call_typed(
                leader,
                &addr,
                VERIFY_TIMEOUT_MS,
                AddPartitionsToTxnRequest::API_KEY,
                VERIFY_VERSION,
                request,
            )
            .await
            .map_err(|e| {
                tracing::debug!(leader, error = %e, "transaction verification failed");
                ErrorCode::NETWORK_EXCEPTION
            })
    }
}

fn verify_request(
    producer: &TxnProducer,
    partitions: &[(String, i32)],
    operation: TxnOperation,
) -> AddPartitionsToTxnRequest {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in partitions {
        topics.entry(t).or_default().push(*p);
    }
    AddPartitionsToTxnRequest {
        transactions: vec![AddPartitionsToTxnTransaction {
            transactional_id: producer.transactional_id.clone(),
            producer_id: producer.producer_id,
            producer_epoch: producer.producer_epoch,
            verify_only: operation != TxnOperation::AddPartition,
            topics: topics
                .into_iter()
                .map(|(name, partitions)| AddPartitionsToTxnTopic {
                    name: name.to_string(),
                    partitions,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Per partition, the coordinator's answer in the words a producer understands.
fn answers(
    response: Result<AddPartitionsToTxnResponse, ErrorCode>,
    partitions: &[(String, i32)],
    operation: TxnOperation,
) -> Vec<ErrorCode> {
    let response = match response {
        Ok(r) if r.error_code == 0 => r,
        Ok(r) => {
            // The broker's own CLUSTER_ACTION refused: the client cannot act on that.
            let code = match ErrorCode::from_code(r.error_code) {
                ErrorCode::CLUSTER_AUTHORIZATION_FAILED => ErrorCode::INVALID_TXN_STATE,
                other => other,
            };
            return vec![code; partitions.len()];
        }
        Err(code) => return vec![code; partitions.len()],
    };
    let mut by_partition: HashMap<(&str, i32), ErrorCode> = HashMap::new();
    for t in response
        .results_by_transaction
        .iter()
        .flat_map(|r| &r.topic_results)
    {
        for p in &t.results_by_partition {
            let code = match ErrorCode::from_code(p.partition_error_code) {
                ErrorCode::PRODUCER_FENCED => ErrorCode::INVALID_PRODUCER_EPOCH,
                ErrorCode::TRANSACTION_ABORTABLE if operation == TxnOperation::VerifyLegacy => {
                    ErrorCode::INVALID_TXN_STATE
                }
                other => other,
            };
            by_partition.insert((t.name.as_str(), p.partition_index), code);
        }
    }
    partitions
        .iter()
        .map(|(t, p)| {
            by_partition
                .get(&(t.as_str(), *p))
                .copied()
                // A partition the answer leaves out was not verified.
                .unwrap_or(ErrorCode::INVALID_TXN_STATE)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::messages::add_partitions_to_txn_response::{
        AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
    };

    fn answered(codes: &[(&str, i32, ErrorCode)]) -> AddPartitionsToTxnResponse {
        AddPartitionsToTxnResponse {
            results_by_transaction: vec![AddPartitionsToTxnResult {
                transactional_id: "tx".into(),
                topic_results: codes
                    .iter()
                    .map(|(t, p, c)| AddPartitionsToTxnTopicResult {
                        name: t.to_string(),
                        results_by_partition: vec![AddPartitionsToTxnPartitionResult {
                            partition_index: *p,
                            partition_error_code: c.code(),
                            ..Default::default()
                        }],
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn coordinator_answers_become_what_producers_handle() {
        let asked = vec![
            ("a".to_string(), 0),
            ("b".to_string(), 1),
            ("c".to_string(), 2),
        ];
        let mixed = answered(&[
            ("a", 0, ErrorCode::NONE),
            ("b", 1, ErrorCode::TRANSACTION_ABORTABLE),
            ("c", 2, ErrorCode::PRODUCER_FENCED),
        ]);
        let legacy = TxnOperation::VerifyLegacy;
        let codes = answers(Ok(mixed.clone()), &asked, legacy);
        assert_eq!(
            codes,
            vec![
                ErrorCode::NONE,
                ErrorCode::INVALID_TXN_STATE,
                ErrorCode::INVALID_PRODUCER_EPOCH
            ]
        );
        // A client that knows TRANSACTION_ABORTABLE gets it as it is.
        let codes = answers(Ok(mixed), &asked, TxnOperation::Verify);
        assert_eq!(codes[1], ErrorCode::TRANSACTION_ABORTABLE);
        // Left out of the answer: not verified.
        let codes = answers(Ok(answered(&[("a", 0, ErrorCode::NONE)])), &asked, legacy);
        assert_eq!(codes[1], ErrorCode::INVALID_TXN_STATE);
        // A top-level refusal of the broker's CLUSTER_ACTION, and no coordinator at all.
        let refused = AddPartitionsToTxnResponse {
            error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.code(),
            ..Default::default()
        };
        assert_eq!(
            answers(Ok(refused), &asked, legacy),
            vec![ErrorCode::INVALID_TXN_STATE; 3]
        );
        assert_eq!(
            answers(Err(ErrorCode::COORDINATOR_NOT_AVAILABLE), &asked, legacy),
            vec![ErrorCode::COORDINATOR_NOT_AVAILABLE; 3]
        );
    }

    #[test]
    fn the_question_groups_partitions_by_topic() {
        let producer = TxnProducer {
            transactional_id: "tx".into(),
            producer_id: 5,
            producer_epoch: 2,
        };
        let asked = [("b".into(), 1), ("a".into(), 0), ("b".into(), 0)];
        let r = verify_request(&producer, &asked, TxnOperation::Verify);
        let t = &r.transactions[0];
        assert!(t.verify_only);
        let r = verify_request(&producer, &asked, TxnOperation::AddPartition);
        assert!(!r.transactions[0].verify_only);
        assert_eq!(TxnOperation::for_produce(12), TxnOperation::AddPartition);
        assert_eq!(TxnOperation::for_produce(11), TxnOperation::Verify);
        assert_eq!(
            TxnOperation::for_txn_offset_commit(5),
            TxnOperation::AddPartition
        );
        assert_eq!(
            TxnOperation::for_txn_offset_commit(3),
            TxnOperation::VerifyLegacy
        );
        assert_eq!((t.producer_id, t.producer_epoch), (5, 2));
        let topics: Vec<_> = t
            .topics
            .iter()
            .map(|t| (t.name.as_str(), t.partitions.clone()))
            .collect();
        assert_eq!(topics, vec![("a", vec![0]), ("b", vec![1, 0])]);
    }
}
