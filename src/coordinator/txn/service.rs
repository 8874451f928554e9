//! The facade the request handlers call (Kafka's `TransactionCoordinator` plus the transaction
//! parts of `KafkaApis`): routes each transactional id to its `__transaction_state` shard, builds
//! the responses, and maps errors per API version.
//!
//! Every call completes synchronously: on one node the records and the markers are written
//! locally before the call returns. The broker must call [`TransactionCoordinator::tick`]
//! periodically (every ~1 s): it retries markers, aborts timed-out transactions and expires
//! idle transactional ids.
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI16, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::clock::SharedClock;
use crate::coordinator::partition_for;
use crate::coordinator::runtime::{CoordinatorLog, CoordinatorRecord};
use crate::coordinator::service::RequestContext;
use crate::coordinator::txn::error::{TxnApi, TxnError};
use crate::coordinator::txn::metadata::{TopicPartition, TransactionMetadata, TransactionState};
use crate::coordinator::txn::shard::{TxnLoadSummary, TxnShard};
use crate::coordinator::txn::{ProducerIdAllocator, TxnConfig, TxnMarkerWriter};
use crate::coordinator::GROUP_METADATA_TOPIC_NAME;
use crate::error::ErrorCode;
use crate::protocol::messages::add_offsets_to_txn_request::AddOffsetsToTxnRequest;
use crate::protocol::messages::add_offsets_to_txn_response::AddOffsetsToTxnResponse;
use crate::protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic,
};
use crate::protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResponse, AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
};
use crate::protocol::messages::describe_transactions_request::DescribeTransactionsRequest;
use crate::protocol::messages::describe_transactions_response::{
    DescribeTransactionsResponse, TopicData, TransactionState as DescribedState,
};
use crate::protocol::messages::end_txn_request::EndTxnRequest;
use crate::protocol::messages::end_txn_response::EndTxnResponse;
use crate::protocol::messages::init_producer_id_request::InitProducerIdRequest;
use crate::protocol::messages::init_producer_id_response::InitProducerIdResponse;
use crate::protocol::messages::list_transactions_request::ListTransactionsRequest;
use crate::protocol::messages::list_transactions_response::{
    ListTransactionsResponse, TransactionState as ListedState,
};

/// Whether a topic partition exists (the broker's metadata view), for AddPartitionsToTxn.
pub type PartitionExists<'a> = &'a dyn Fn(&str, i32) -> bool;

/// The transaction coordinator of this broker: one shard per loaded `__transaction_state`
/// partition.
pub struct TransactionCoordinator {
    config: Arc<TxnConfig>,
    clock: SharedClock,
    log: Arc<dyn CoordinatorLog>,
    ids: Arc<dyn ProducerIdAllocator>,
    markers: Arc<dyn TxnMarkerWriter>,
    /// The cluster's finalized `transaction.version` (the broker keeps it current).
    transaction_version: Arc<AtomicI16>,
    slots: Vec<Mutex<Option<TxnShard>>>,
}

impl TransactionCoordinator {
    pub fn new(
        config: TxnConfig,
        clock: SharedClock,
        log: Arc<dyn CoordinatorLog>,
        ids: Arc<dyn ProducerIdAllocator>,
        markers: Arc<dyn TxnMarkerWriter>,
    ) -> Self {
        let n = config.transaction_state_log_num_partitions.max(1) as usize;
        TransactionCoordinator {
            config: Arc::new(config),
            clock,
            log,
            ids,
            markers,
            transaction_version: Arc::new(AtomicI16::new(0)),
            slots: (0..n).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Follows the cluster's finalized `transaction.version`: from level 1 records are written
    /// in value version 1 (the broker calls this whenever the metadata image changes).
    pub fn set_transaction_version(&self, level: i16) {
        self.transaction_version.store(level, Ordering::Relaxed);
    }

    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// The `__transaction_state` partition of `transactional_id`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        partition_for(transactional_id, self.slots.len() as i32)
    }

    /// Becomes the coordinator of `partition` at coordinator epoch 0; see [`Self::load_at_epoch`].
    pub fn load(
        &self,
        partition: i32,
        records: impl IntoIterator<Item = CoordinatorRecord>,
    ) -> TxnLoadSummary {
        self.load_at_epoch(partition, 0, records)
    }

    /// Becomes the coordinator of `partition` (its leader epoch is the coordinator epoch sent
    /// with markers), replays its records and completes its prepared transactions.
    /// Out-of-range partitions are ignored.
    pub fn load_at_epoch(
        &self,
        partition: i32,
        coordinator_epoch: i32,
        records: impl IntoIterator<Item = CoordinatorRecord>,
    ) -> TxnLoadSummary {
        let Some(slot) = usize::try_from(partition)
            .ok()
            .and_then(|p| self.slots.get(p))
        else {
            return TxnLoadSummary::default();
        };
        let mut shard = TxnShard::new(
            partition,
            coordinator_epoch,
            self.config.clone(),
            self.log.clone(),
            self.markers.clone(),
            self.transaction_version.clone(),
        );
        let summary = shard.load(records, self.clock.now_ms());
        *slot.lock() = Some(shard);
        summary
    }

    /// Stops coordinating `partition`.
    pub fn unload(&self, partition: i32) {
        if let Some(slot) = usize::try_from(partition)
            .ok()
            .and_then(|p| self.slots.get(p))
        {
            *slot.lock() = None;
        }
    }

    /// Runs `f` on the shard of `transactional_id`, or NOT_COORDINATOR if it is not loaded.
    fn with_shard<R>(
        &self,
        transactional_id: &str,
        f: impl FnOnce(&mut TxnShard, i64) -> Result<R, TxnError>,
    ) -> Result<R, TxnError> {
        let slot = self
            .slots
            .get(self.partition_for(transactional_id) as usize)
            .ok_or(TxnError::NotCoordinator)?;
        let mut slot = slot.lock();
        let shard = slot.as_mut().ok_or(TxnError::NotCoordinator)?;
        f(shard, self.clock.now_ms())
    }

    /// InitProducerId v0-5. Without a transactional id, a fresh producer id with epoch 0 (the
    /// idempotent producer).
    pub fn init_producer_id(
        &self,
        ctx: &RequestContext,
        request: &InitProducerIdRequest,
    ) -> InitProducerIdResponse {
        let result = self.init_producer_id_inner(ctx.api_version, request);
        match result {
            Ok((producer_id, producer_epoch)) => InitProducerIdResponse {
                error_code: 0,
                producer_id,
                producer_epoch,
                ..Default::default()
            },
            Err(e) => InitProducerIdResponse {
                error_code: e.wire_for(TxnApi::InitProducerId, ctx.api_version),
                producer_id: crate::coordinator::txn::NO_PRODUCER_ID,
                producer_epoch: crate::coordinator::txn::NO_PRODUCER_EPOCH,
                ..Default::default()
            },
        }
    }

    fn init_producer_id_inner(
        &self,
        version: i16,
        request: &InitProducerIdRequest,
    ) -> Result<(i64, i16), TxnError> {
        // KIP-360: both or neither of the producer id and epoch (v3+).
        let expected = if version >= 3 {
            match (request.producer_id, request.producer_epoch) {
                (-1, -1) => None,
                (-1, _) | (_, -1) => return Err(TxnError::InvalidRequest),
                (pid, epoch) => Some((pid, epoch)),
            }
        } else {
            None
        };
        let Some(tid) = request.transactional_id.as_deref() else {
            let pid = self
                .ids
                .generate_producer_id()
                .map_err(|_| TxnError::CoordinatorLoadInProgress)?;
            return Ok((pid, 0));
        };
        if tid.is_empty() {
            return Err(TxnError::InvalidRequest);
        }
        let timeout = request.transaction_timeout_ms;
        if timeout <= 0 || timeout > self.config.transaction_max_timeout_ms {
            return Err(TxnError::InvalidTransactionTimeout);
        }
        let ids = self.ids.clone();
        self.with_shard(tid, |s, now| {
            s.init_producer_id(tid, timeout, expected, ids.as_ref(), now)
        })
    }

    /// AddPartitionsToTxn v0-5. v0-3 (clients) add partitions to the transaction; in v4-5
    /// (brokers) a transaction with `verify_only` asks whether its partitions are in the ongoing
    /// transaction (KIP-890 part 1), and one without adds them for a producer of transaction
    /// version 2 that wrote to them (part 2). If a partition does not exist, nothing is added: unknown partitions get
    /// UNKNOWN_TOPIC_OR_PARTITION and the rest OPERATION_NOT_ATTEMPTED, as in Kafka.
    pub fn add_partitions_to_txn(
        &self,
        ctx: &RequestContext,
        request: &AddPartitionsToTxnRequest,
        partition_exists: PartitionExists<'_>,
    ) -> AddPartitionsToTxnResponse {
        let v = ctx.api_version;
        if v < 4 {
            return AddPartitionsToTxnResponse {
                results_by_topic_v3_and_below: self.add_one(
                    v,
                    &request.v3_and_below_transactional_id,
                    request.v3_and_below_producer_id,
                    request.v3_and_below_producer_epoch,
                    &request.v3_and_below_topics,
                    false,
                    partition_exists,
                ),
                ..Default::default()
            };
        }
        let results_by_transaction = request
            .transactions
            .iter()
            .map(|t| AddPartitionsToTxnResult {
                transactional_id: t.transactional_id.clone(),
                topic_results: self.add_one(
                    v,
                    &t.transactional_id,
                    t.producer_id,
                    t.producer_epoch,
                    &t.topics,
                    t.verify_only,
                    partition_exists,
                ),
                ..Default::default()
            })
            .collect();
        AddPartitionsToTxnResponse {
            results_by_transaction,
            ..Default::default()
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn add_one(
        &self,
        version: i16,
        tid: &str,
        producer_id: i64,
        producer_epoch: i16,
        topics: &[AddPartitionsToTxnTopic],
        verify_only: bool,
        partition_exists: PartitionExists<'_>,
    ) -> Vec<AddPartitionsToTxnTopicResult> {
        let requested: Vec<TopicPartition> = topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t.name.clone(), *p)))
            .collect();
        let outcomes: Vec<Result<(), TxnError>> = if tid.is_empty() {
            requested
                .iter()
                .map(|_| Err(TxnError::InvalidRequest))
                .collect()
        } else if requested.iter().any(|(t, p)| !partition_exists(t, *p)) {
            requested
                .iter()
                .map(|(t, p)| {
                    if partition_exists(t, *p) {
                        Err(TxnError::OperationNotAttempted)
                    } else {
                        Err(TxnError::UnknownTopicOrPartition)
                    }
                })
                .collect()
        } else if verify_only {
            match self.with_shard(tid, |s, _| {
                s.verify_partitions(tid, producer_id, producer_epoch, &requested)
            }) {
                Ok(per_partition) => per_partition,
                Err(e) => requested.iter().map(|_| Err(e.clone())).collect(),
            }
        } else {
            let set: BTreeSet<TopicPartition> = requested.iter().cloned().collect();
            // Kafka's `transactionVersionForAddPartitionsToTxn`: brokers add for version 2.
            let client_transaction_version = if version >= 4 { 2 } else { 0 };
            let r = self.with_shard(tid, |s, now| {
                s.add_partitions(
                    tid,
                    producer_id,
                    producer_epoch,
                    &set,
                    client_transaction_version,
                    now,
                )
            });
            requested.iter().map(|_| r.clone()).collect()
        };
        // Group per topic in request order.
        let mut out: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
        for ((topic, partition), outcome) in requested.iter().zip(outcomes) {
            let result = AddPartitionsToTxnPartitionResult {
                partition_index: *partition,
                partition_error_code: TxnError::wire_result(
                    &outcome,
                    TxnApi::AddPartitionsToTxn,
                    version,
                ),
                ..Default::default()
            };
            match out.iter_mut().find(|t| &t.name == topic) {
                Some(t) => t.results_by_partition.push(result),
                None => out.push(AddPartitionsToTxnTopicResult {
                    name: topic.clone(),
                    results_by_partition: vec![result],
                    ..Default::default()
                }),
            }
        }
        out
    }

    /// AddOffsetsToTxn v0-4: adds the group's `__consumer_offsets` partition (given by the
    /// broker's `group_partition`) to the transaction.
    pub fn add_offsets_to_txn(
        &self,
        ctx: &RequestContext,
        request: &AddOffsetsToTxnRequest,
        group_partition: &dyn Fn(&str) -> i32,
    ) -> AddOffsetsToTxnResponse {
        let tid = request.transactional_id.as_str();
        let result = if tid.is_empty() {
            Err(TxnError::InvalidRequest)
        } else {
            let set: BTreeSet<TopicPartition> = [(
                GROUP_METADATA_TOPIC_NAME.to_string(),
                group_partition(&request.group_id),
            )]
            .into_iter()
            .collect();
            self.with_shard(tid, |s, now| {
                s.add_partitions(
                    tid,
                    request.producer_id,
                    request.producer_epoch,
                    &set,
                    0,
                    now,
                )
            })
        };
        AddOffsetsToTxnResponse {
            error_code: TxnError::wire_result(&result, TxnApi::AddOffsetsToTxn, ctx.api_version),
            ..Default::default()
        }
    }

    /// EndTxn v0-5. Answers once the Prepare record is written; the markers and the Complete
    /// record follow in the same call (or from `tick` if they fail). From v5 (transaction
    /// version 2) the end bumps the epoch and the answer carries the producer id and epoch the
    /// producer continues with.
    pub fn end_txn(&self, ctx: &RequestContext, request: &EndTxnRequest) -> EndTxnResponse {
        let tid = request.transactional_id.as_str();
        let (pid, epoch, commit) = (
            request.producer_id,
            request.producer_epoch,
            request.committed,
        );
        let result = if tid.is_empty() {
            Err(TxnError::InvalidRequest)
        } else if ctx.api_version >= 5 {
            let ids = self.ids.clone();
            self.with_shard(tid, |s, now| {
                s.end_txn_with_epoch_bump(tid, pid, epoch, commit, ids.as_ref(), now)
            })
            .map(Some)
        } else {
            self.with_shard(tid, |s, now| s.end_txn(tid, pid, epoch, commit, now))
                .map(|()| None)
        };
        let (producer_id, producer_epoch) = match &result {
            Ok(Some(continue_with)) => *continue_with,
            _ => (
                crate::coordinator::txn::NO_PRODUCER_ID,
                crate::coordinator::txn::NO_PRODUCER_EPOCH,
            ),
        };
        EndTxnResponse {
            error_code: TxnError::wire_result(&result, TxnApi::EndTxn, ctx.api_version),
            producer_id,
            producer_epoch,
            ..Default::default()
        }
    }

    /// Writes the markers of `transactional_id`'s prepared transaction now, if its Prepare
    /// record is replicated (else `tick` does later).
    pub fn complete_prepared(&self, transactional_id: &str) {
        let _ = self.with_shard(transactional_id, |s, now| {
            s.complete_prepared(transactional_id, now);
            Ok(())
        });
    }

    /// DescribeTransactions v0.
    pub fn describe_transactions(
        &self,
        _ctx: &RequestContext,
        request: &DescribeTransactionsRequest,
    ) -> DescribeTransactionsResponse {
        let transaction_states = request
            .transactional_ids
            .iter()
            .map(|tid| {
                let found: Result<TransactionMetadata, TxnError> = if tid.is_empty() {
                    Err(TxnError::InvalidRequest)
                } else {
                    self.with_shard(tid, |s, _| {
                        s.get(tid).cloned().ok_or(TxnError::TransactionalIdNotFound)
                    })
                };
                match found {
                    Ok(m) => describe(&m),
                    Err(e) => DescribedState {
                        error_code: e.wire_for(TxnApi::Other, 0),
                        transactional_id: tid.clone(),
                        producer_id: crate::coordinator::txn::NO_PRODUCER_ID,
                        producer_epoch: crate::coordinator::txn::NO_PRODUCER_EPOCH,
                        ..Default::default()
                    },
                }
            })
            .collect();
        DescribeTransactionsResponse {
            transaction_states,
            ..Default::default()
        }
    }

    /// ListTransactions v0-2 over every loaded partition (the duration filter is v1+, the
    /// transactional id pattern v2+). The pattern is a regular expression that must match the
    /// whole id, as Kafka's `Pattern.matches`; one that does not compile is answered
    /// INVALID_REGULAR_EXPRESSION. Strata compiles it with Rust's `regex` crate, which has no
    /// look-around or back-references (Java's `Pattern` has).
    pub fn list_transactions(
        &self,
        ctx: &RequestContext,
        request: &ListTransactionsRequest,
    ) -> ListTransactionsResponse {
        let mut states = BTreeSet::new();
        let mut unknown_state_filters = Vec::new();
        for name in &request.state_filters {
            match TransactionState::from_name(name) {
                Some(s) => {
                    states.insert(s);
                }
                None => unknown_state_filters.push(name.clone()),
            }
        }
        // Only unknown states asked for: nothing can match.
        if states.is_empty() && !request.state_filters.is_empty() {
            return ListTransactionsResponse {
                unknown_state_filters,
                ..Default::default()
            };
        }
        let pattern = match request.transactional_id_pattern.as_deref() {
            Some(p) if ctx.api_version >= 2 && !p.is_empty() => {
                match regex::Regex::new(&format!("^(?:{p})$")) {
                    Ok(re) => Some(re),
                    Err(_) => {
                        return ListTransactionsResponse {
                            error_code: ErrorCode::INVALID_REGULAR_EXPRESSION.code(),
                            ..Default::default()
                        }
                    }
                }
            }
            _ => None,
        };
        let producer_ids: BTreeSet<i64> = request.producer_id_filters.iter().copied().collect();
        let duration = if ctx.api_version >= 1 {
            request.duration_filter
        } else {
            -1
        };
        let now = self.clock.now_ms();
        let mut transaction_states = Vec::new();
        for slot in &self.slots {
            if let Some(shard) = slot.lock().as_ref() {
                transaction_states.extend(
                    shard
                        .list(&states, &producer_ids, duration, pattern.as_ref(), now)
                        .into_iter()
                        .map(|(transactional_id, producer_id, state)| ListedState {
                            transactional_id,
                            producer_id,
                            transaction_state: state.to_string(),
                            ..Default::default()
                        }),
                );
            }
        }
        ListTransactionsResponse {
            error_code: ErrorCode::NONE.code(),
            unknown_state_filters,
            transaction_states,
            ..Default::default()
        }
    }

    /// Retries markers, aborts timed-out transactions and expires idle ids on every loaded
    /// partition. Call every ~1 s (Kafka checks timeouts every 10 s and expiration every hour;
    /// more often is harmless).
    pub fn tick(&self) {
        let now = self.clock.now_ms();
        for slot in &self.slots {
            if let Some(shard) = slot.lock().as_mut() {
                shard.tick(now);
            }
        }
    }

    /// The durable view of a partition (tests and diagnostics).
    pub fn snapshot(
        &self,
        partition: i32,
    ) -> Option<std::collections::BTreeMap<String, TransactionMetadata>> {
        let slot = self.slots.get(usize::try_from(partition).ok()?)?;
        let slot = slot.lock();
        slot.as_ref().map(|s| s.snapshot())
    }

    /// The live metadata of a transactional id, if its partition is loaded here.
    pub fn transaction(&self, transactional_id: &str) -> Option<TransactionMetadata> {
        self.with_shard(transactional_id, |s, _| {
            s.get(transactional_id)
                .cloned()
                .ok_or(TxnError::TransactionalIdNotFound)
        })
        .ok()
    }
}

/// DescribeTransactions' view of one id (`handleDescribeTransactions`).
fn describe(m: &TransactionMetadata) -> DescribedState {
    let mut topics: Vec<TopicData> = Vec::new();
    for (topic, p) in &m.topic_partitions {
        match topics.last_mut() {
            Some(t) if &t.topic == topic => t.partitions.push(*p),
            _ => topics.push(TopicData {
                topic: topic.clone(),
                partitions: vec![*p],
                ..Default::default()
            }),
        }
    }
    DescribedState {
        error_code: 0,
        transactional_id: m.transactional_id.clone(),
        transaction_state: m.state.name().to_string(),
        transaction_timeout_ms: m.txn_timeout_ms,
        transaction_start_time_ms: m.txn_start_timestamp_ms,
        producer_id: m.producer_id,
        producer_epoch: m.producer_epoch,
        topics,
        ..Default::default()
    }
}
