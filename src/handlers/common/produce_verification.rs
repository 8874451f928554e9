//! The transaction coordinator's word before a Produce appends (Kafka's
//! `ReplicaManager.handleProduceAppend`).
//!
//! For each partition where a transactional producer's batch would open a transaction, the
//! partition starts a verification (`replica::txn_verification`) and the coordinator is asked
//! (`cluster::txn_verifier`): before v12, with `transaction.partition.verification.enable` on
//! (Kafka's default), whether the partition is in the producer's ongoing transaction (KIP-890
//! part 1); from v12, always, to add it (transaction version 2: the producer sends no
//! AddPartitionsToTxn), retrying CONCURRENT_TRANSACTIONS for a moment while the previous
//! transaction completes, as Kafka does (20 ms apart, 100 ms at most). Partitions the
//! coordinator confirms are appended with their guard; the others are answered without an
//! append: INVALID_TXN_STATE ("Partition was not added to the transaction"), and
//! NOT_ENOUGH_REPLICAS for what a retry may fix (the coordinator busy, moving or unreachable),
//! which every client retries without a metadata refresh.
use std::collections::HashMap;

use crate::broker::Broker;
use crate::cluster::txn_verifier::{coordinator_of, TxnOperation, TxnProducer};
use crate::coordinator::offsets_topic::TRANSACTION_TOPIC;
use crate::error::ErrorCode;
use crate::protocol::messages::produce_request::ProduceRequest;
use crate::protocol::records::batch::BatchIter;
use crate::replica::txn_verification::{TxnVerification, VerificationGuard};

/// What verification decided for a request's partitions.
#[derive(Debug, Default)]
pub struct Verified {
    guards: HashMap<(String, i32), VerificationGuard>,
    refused: HashMap<(String, i32), (ErrorCode, String)>,
}

impl Verified {
    /// How the append of `topic`/`partition` is checked.
    pub fn verification(&self, topic: &str, partition: i32) -> TxnVerification {
        TxnVerification::Guard(self.guards.get(&(topic.to_string(), partition)).copied())
    }

    /// The answer for a partition verification refused, instead of appending.
    pub fn refusal(&self, topic: &str, partition: i32) -> Option<(ErrorCode, String)> {
        self.refused.get(&(topic.to_string(), partition)).cloned()
    }
}

/// How often and how long a partition add that met CONCURRENT_TRANSACTIONS is asked again
/// (Kafka's `add.partitions.to.txn.retry.backoff.ms` and `.max.ms` defaults).
const ADD_RETRY_BACKOFF_MS: u64 = 20;
const ADD_RETRY_MAX_MS: u64 = 100;

/// Verifies (or adds) what `request` at `version` would open; None when nothing is checked
/// (not transactional, or verification is off for a producer that adds its own partitions).
pub async fn verify(broker: &Broker, request: &ProduceRequest, version: i16) -> Option<Verified> {
    let transactional_id = request
        .transactional_id
        .as_deref()
        .filter(|id| !id.is_empty())?;
    let operation = TxnOperation::for_produce(version);
    if !consults_coordinator(broker, operation) {
        return None;
    }
    // Partitions with a transactional batch, and the producers they name.
    let mut producers: Vec<(i64, i16)> = Vec::new();
    let mut transactional: Vec<(String, i32, i64, i16)> = Vec::new();
    for topic in &request.topic_data {
        for pd in &topic.partition_data {
            let Some(records) = &pd.records else { continue };
            for (h, _) in BatchIter::new(records).filter(|(h, _)| h.is_transactional()) {
                if !producers.contains(&(h.producer_id, h.producer_epoch)) {
                    producers.push((h.producer_id, h.producer_epoch));
                }
                transactional.push((
                    topic.name.clone(),
                    pd.index,
                    h.producer_id,
                    h.producer_epoch,
                ));
            }
        }
    }
    let mut verified = Verified::default();
    if producers.len() > 1 {
        // Kafka fails the request: one transactional producer per request.
        for (topic, partition, ..) in transactional {
            let code = ErrorCode::INVALID_PRODUCER_ID_MAPPING;
            let message = "Transactional records contained more than one producer ID".to_string();
            verified.refused.insert((topic, partition), (code, message));
        }
        return Some(verified);
    }
    let Some(&(producer_id, producer_epoch)) = producers.first() else {
        return Some(verified);
    };
    let now_ms = broker.now_ms();
    let mut asked: Vec<(String, i32)> = Vec::new();
    for (topic, partition, ..) in transactional {
        let Some(replica) = broker.replicas.get(&topic, partition) else {
            // The append answers for a partition that is not here.
            continue;
        };
        if let Ok(Some(guard)) = replica.start_transaction_verification(
            producer_id,
            producer_epoch,
            operation.supports_epoch_bump(),
            now_ms,
        ) {
            if !asked.contains(&(topic.clone(), partition)) {
                verified.guards.insert((topic.clone(), partition), guard);
                asked.push((topic, partition));
            }
        }
    }
    if asked.is_empty() {
        return Some(verified);
    }
    let producer = TxnProducer {
        transactional_id: transactional_id.to_string(),
        producer_id,
        producer_epoch,
    };
    let answers = ask(broker, &producer, &asked, operation).await;
    for (key, code) in asked.into_iter().zip(answers) {
        if code.is_ok() {
            continue;
        }
        verified.guards.remove(&key);
        verified.refused.insert(key, for_producer(code, operation));
    }
    Some(verified)
}

/// Whether the coordinator is asked at all: always to add a partition (transaction version 2),
/// to verify only with `transaction.partition.verification.enable`.
pub(in crate::handlers) fn consults_coordinator(broker: &Broker, operation: TxnOperation) -> bool {
    operation.supports_epoch_bump()
        || broker
            .dynamic
            .current()
            .transaction_partition_verification_enable
}

/// Asks the coordinator (for Produce, and for TxnOffsetCommit's offsets partition); an add is
/// asked again while the producer's previous transaction completes, and waits until the
/// coordinator's record is replicated when the coordinator is this broker (a remote
/// coordinator answers only then).
pub(in crate::handlers) async fn ask(
    broker: &Broker,
    producer: &TxnProducer,
    partitions: &[(String, i32)],
    operation: TxnOperation,
) -> Vec<ErrorCode> {
    let started = std::time::Instant::now();
    loop {
        let mut answers = broker
            .txn_verifier
            .verify(
                &broker.cluster,
                &broker.txns,
                producer,
                partitions,
                operation,
            )
            .await;
        if !operation.supports_epoch_bump() {
            return answers;
        }
        let concurrent = answers.contains(&ErrorCode::CONCURRENT_TRANSACTIONS);
        if concurrent && started.elapsed().as_millis() < ADD_RETRY_MAX_MS as u128 {
            tokio::time::sleep(std::time::Duration::from_millis(ADD_RETRY_BACKOFF_MS)).await;
            continue;
        }
        let local = coordinator_of(&broker.cluster, &broker.txns, &producer.transactional_id)
            == Some(broker.cluster.node_id);
        if local && answers.iter().any(|c| c.is_ok()) {
            let partition = broker.txns.partition_for(&producer.transactional_id);
            if let Err(code) = broker.wait_replicated(TRANSACTION_TOPIC, partition).await {
                for a in answers.iter_mut().filter(|c| c.is_ok()) {
                    *a = code;
                }
            }
        }
        return answers;
    }
}

/// Kafka's translation of a coordinator refusal for the produce response.
fn for_producer(code: ErrorCode, operation: TxnOperation) -> (ErrorCode, String) {
    match code {
        // A producer of transaction version 2 retries it itself.
        ErrorCode::CONCURRENT_TRANSACTIONS if operation.supports_epoch_bump() => {
            (code, code.message())
        }
        ErrorCode::INVALID_TXN_STATE => (
            code,
            "Partition was not added to the transaction".to_string(),
        ),
        ErrorCode::CONCURRENT_TRANSACTIONS
        | ErrorCode::NETWORK_EXCEPTION
        | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        | ErrorCode::COORDINATOR_NOT_AVAILABLE
        | ErrorCode::NOT_COORDINATOR => (
            ErrorCode::NOT_ENOUGH_REPLICAS,
            format!(
                "Unable to verify the partition has been added to the transaction. Underlying \
                 error: {code:?}"
            ),
        ),
        other => (other, other.message()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retriable_coordinator_errors_become_not_enough_replicas() {
        for code in [
            ErrorCode::CONCURRENT_TRANSACTIONS,
            ErrorCode::NETWORK_EXCEPTION,
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
            ErrorCode::NOT_COORDINATOR,
        ] {
            let (answer, message) = for_producer(code, TxnOperation::Verify);
            assert_eq!(answer, ErrorCode::NOT_ENOUGH_REPLICAS);
            assert!(message.ends_with(&format!("{code:?}")), "{message}");
        }
        assert_eq!(
            for_producer(
                ErrorCode::CONCURRENT_TRANSACTIONS,
                TxnOperation::AddPartition
            )
            .0,
            ErrorCode::CONCURRENT_TRANSACTIONS
        );
        assert_eq!(
            for_producer(ErrorCode::INVALID_TXN_STATE, TxnOperation::Verify),
            (
                ErrorCode::INVALID_TXN_STATE,
                "Partition was not added to the transaction".to_string()
            )
        );
        assert_eq!(
            for_producer(
                ErrorCode::INVALID_PRODUCER_EPOCH,
                TxnOperation::AddPartition
            )
            .0,
            ErrorCode::INVALID_PRODUCER_EPOCH
        );
    }
}
