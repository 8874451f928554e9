//! One `__transaction_state` partition (Kafka's `TransactionStateManager` for one partition plus
//! the per-id logic of `TransactionCoordinator`).
//!
//! [`TxnShard::write`] is the only way durable state changes: the target metadata is appended as
//! a record and then replayed by [`TxnShard::replay`], the same function [`TxnShard::load`] runs.
//! Ending a transaction is Kafka's two phases done in one call: the Prepare record, the markers
//! through [`TxnMarkerWriter`], then the Complete record. If the markers or the Complete record
//! fail, the transaction stays prepared and [`TxnShard::tick`] tries again.
//!
//! Markers go out only once the Prepare record is replicated ([`CoordinatorLog::is_replicated`]),
//! as Kafka sends them from the callback of an acks=all append: a coordinator elected after a
//! failover must find the Prepare record of every transaction that has a marker somewhere,
//! or it would time the transaction out and abort it on the partitions not yet marked.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicI16, Ordering};
use std::sync::Arc;

use crate::coordinator::runtime::{CoordinatorLog, CoordinatorRecord};
use crate::coordinator::txn::error::TxnError;
use crate::coordinator::txn::metadata::{
    is_epoch_exhausted, TopicPartition, TransactionMetadata, TransactionState,
};
use crate::coordinator::txn::records;
use crate::coordinator::txn::{MarkerSpec, ProducerIdAllocator, TxnConfig, TxnMarkerWriter};
use crate::protocol::codec::DecodeError;

/// How a partition load went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxnLoadSummary {
    pub replayed: usize,
    /// Records that could not be decoded (other record types, unknown versions); skipped.
    pub skipped: usize,
    /// Prepared transactions completed after the load.
    pub completed: usize,
    /// Prepared transactions whose markers could not be written yet; `tick` retries them.
    pub pending: usize,
}

/// The transaction coordinator state of one `__transaction_state` partition.
pub struct TxnShard {
    partition: i32,
    coordinator_epoch: i32,
    config: Arc<TxnConfig>,
    log: Arc<dyn CoordinatorLog>,
    markers: Arc<dyn TxnMarkerWriter>,
    /// The cluster's finalized `transaction.version`: it picks the value version written.
    transaction_version: Arc<AtomicI16>,
    txns: BTreeMap<String, TransactionMetadata>,
    /// Prepared transactions whose Prepare record lies below this end offset and is not yet
    /// known to be replicated; their markers wait.
    awaiting_replication: BTreeMap<String, i64>,
}

impl std::fmt::Debug for TxnShard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnShard")
            .field("partition", &self.partition)
            .field("coordinator_epoch", &self.coordinator_epoch)
            .field("transactional_ids", &self.txns.len())
            .finish()
    }
}

impl TxnShard {
    pub fn new(
        partition: i32,
        coordinator_epoch: i32,
        config: Arc<TxnConfig>,
        log: Arc<dyn CoordinatorLog>,
        markers: Arc<dyn TxnMarkerWriter>,
        transaction_version: Arc<AtomicI16>,
    ) -> Self {
        TxnShard {
            partition,
            coordinator_epoch,
            config,
            log,
            markers,
            transaction_version,
            txns: BTreeMap::new(),
            awaiting_replication: BTreeMap::new(),
        }
    }

    pub fn partition(&self) -> i32 {
        self.partition
    }

    pub fn get(&self, transactional_id: &str) -> Option<&TransactionMetadata> {
        self.txns.get(transactional_id)
    }

    pub fn transactions(&self) -> impl Iterator<Item = &TransactionMetadata> {
        self.txns.values()
    }

    /// The value version records are written in now.
    fn value_version(&self) -> i16 {
        records::value_version(self.transaction_version.load(Ordering::Relaxed))
    }

    /// The durable view: what replaying this partition's records must reproduce.
    pub fn snapshot(&self) -> BTreeMap<String, TransactionMetadata> {
        let version = self.value_version();
        self.txns
            .iter()
            .map(|(id, m)| (id.clone(), m.durable(version)))
            .collect()
    }

    /// Applies one record. The only way durable state changes.
    pub fn replay(&mut self, record: &CoordinatorRecord) -> Result<(), DecodeError> {
        let r = records::decode(record)?;
        match r.metadata {
            // Dead is never written by Kafka, but if it is read it means the id is gone.
            Some(m) if m.state != TransactionState::Dead => {
                self.txns.insert(r.transactional_id, m);
            }
            _ => {
                self.txns.remove(&r.transactional_id);
            }
        }
        Ok(())
    }

    /// Appends `target` and, once it is committed, replays it. What the record does not hold
    /// (the last epoch; in v0 also the last producer id) is kept from the transition itself,
    /// like Kafka's cache.
    pub(crate) fn write(&mut self, target: TransactionMetadata) -> Result<(), TxnError> {
        let version = self.value_version();
        let record = records::metadata_record(&target, version);
        self.log.append(self.partition, vec![record.clone()])?;
        if let Err(e) = self.replay(&record) {
            // Our own records always decode; this would be a codec bug.
            tracing::error!(partition = self.partition, error = ?e, "cannot replay own record");
            return Err(TxnError::EpochOverflow);
        }
        if let Some(m) = self.txns.get_mut(&target.transactional_id) {
            if version == 0 {
                m.last_producer_id = target.last_producer_id;
                m.next_producer_id = target.next_producer_id;
                m.client_transaction_version = target.client_transaction_version;
            }
            m.last_producer_epoch = target.last_producer_epoch;
        }
        Ok(())
    }

    /// Loads the partition (start-up or failover), then completes every prepared transaction:
    /// its markers are written again and its Complete record appended.
    pub fn load(
        &mut self,
        records: impl IntoIterator<Item = CoordinatorRecord>,
        now_ms: i64,
    ) -> TxnLoadSummary {
        let mut summary = TxnLoadSummary::default();
        for r in records {
            match self.replay(&r) {
                Ok(()) => summary.replayed += 1,
                Err(_) => summary.skipped += 1,
            }
        }
        // What a new leader loaded may be ahead of what the ISR holds.
        let end_offset = self.log.end_offset(self.partition);
        for id in self.prepared_ids() {
            self.awaiting_replication.insert(id.clone(), end_offset);
            if self.try_complete(&id, now_ms) {
                summary.completed += 1;
            } else {
                summary.pending += 1;
            }
        }
        summary
    }

    fn prepared_ids(&self) -> Vec<String> {
        self.txns
            .values()
            .filter(|m| m.state.is_prepared())
            .map(|m| m.transactional_id.clone())
            .collect()
    }

    /// Writes the markers of a prepared transaction and then its Complete record. Returns false
    /// (the transaction stays prepared) if either fails.
    fn try_complete(&mut self, transactional_id: &str, now_ms: i64) -> bool {
        let Some(m) = self.txns.get(transactional_id) else {
            return true;
        };
        if !m.state.is_prepared() {
            return true;
        }
        if let Some(&end_offset) = self.awaiting_replication.get(transactional_id) {
            if !self.log.is_replicated(self.partition, end_offset) {
                return false;
            }
            self.awaiting_replication.remove(transactional_id);
        }
        let commit = m.state == TransactionState::PrepareCommit;
        let partitions = m.partition_list();
        if !partitions.is_empty() {
            if let Err(e) = self.markers.write_markers(
                &MarkerSpec {
                    producer_id: m.producer_id,
                    producer_epoch: m.producer_epoch,
                    commit,
                    coordinator_epoch: self.coordinator_epoch,
                    transaction_version: m.client_transaction_version,
                },
                &partitions,
            ) {
                tracing::warn!(transactional_id, error = ?e, "transaction markers not written; will retry");
                return false;
            }
        }
        let target = m.prepare_complete(now_ms);
        match self.write(target) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(transactional_id, error = %e, "complete record not written; will retry");
                false
            }
        }
    }

    /// Appends a Prepare record and then completes the transaction (markers, Complete record).
    /// Succeeds once the Prepare record is durable, as Kafka answers EndTxn.
    fn prepare_and_complete(
        &mut self,
        target: TransactionMetadata,
        now_ms: i64,
    ) -> Result<(), TxnError> {
        let id = target.transactional_id.clone();
        self.write(target)?;
        self.awaiting_replication
            .insert(id.clone(), self.log.end_offset(self.partition));
        if self.config.fault_exit_after_prepare {
            // TEST-ONLY (STRATA_FAULT_AFTER_TXN_PREPARE=exit): die with the Prepare record in
            // the log and no marker written, as a crash at the worst moment would.
            tracing::error!(transactional_id = %id, "fault injection: aborting after the prepare record");
            std::process::abort();
        }
        self.try_complete(&id, now_ms);
        Ok(())
    }

    /// InitProducerId for a transactional id (`handleInitProducerId` /
    /// `prepareInitProducerIdTransit`). The caller has validated the id and the timeout.
    /// `expected` is the KIP-360 producer id and epoch of the request (v3+), if any.
    pub fn init_producer_id(
        &mut self,
        transactional_id: &str,
        txn_timeout_ms: i32,
        expected: Option<(i64, i16)>,
        ids: &dyn ProducerIdAllocator,
        now_ms: i64,
    ) -> Result<(i64, i16), TxnError> {
        let current = match self.txns.get(transactional_id) {
            Some(m) => m.clone(),
            None => {
                let pid = ids
                    .generate_producer_id()
                    .map_err(|_| TxnError::CoordinatorLoadInProgress)?;
                TransactionMetadata::new(transactional_id, pid, txn_timeout_ms, now_ms)
            }
        };
        if let Some((pid, epoch)) = expected {
            // Fence unless the metadata is new, the id matches, or this is a retry after a
            // rotation the producer never heard of.
            let valid = current.producer_epoch == crate::coordinator::txn::NO_PRODUCER_EPOCH
                || pid == current.producer_id
                || (pid == current.last_producer_id && is_epoch_exhausted(epoch));
            if !valid {
                return Err(TxnError::ProducerFenced);
            }
        }
        match current.state {
            TransactionState::PrepareCommit | TransactionState::PrepareAbort => {
                Err(TxnError::ConcurrentTransactions)
            }
            TransactionState::Empty
            | TransactionState::CompleteCommit
            | TransactionState::CompleteAbort => {
                let rotate = is_epoch_exhausted(current.producer_epoch)
                    && !matches!(expected, Some((_, e)) if e != current.producer_epoch);
                let target = if rotate {
                    let pid = ids
                        .generate_producer_id()
                        .map_err(|_| TxnError::CoordinatorLoadInProgress)?;
                    current.prepare_producer_id_rotation(
                        pid,
                        txn_timeout_ms,
                        now_ms,
                        expected.is_some(),
                    )
                } else {
                    current.prepare_increment_producer_epoch(
                        txn_timeout_ms,
                        expected.map(|(_, e)| e),
                        now_ms,
                    )?
                };
                let answer = (target.producer_id, target.producer_epoch);
                self.write(target)?;
                Ok(answer)
            }
            TransactionState::Ongoing => {
                // Abort the previous incarnation's transaction under a bumped epoch, then let the
                // client retry: the retry bumps the epoch again (or rotates the id).
                let target = current.prepare_fence_abort(now_ms)?;
                self.prepare_and_complete(target, now_ms)?;
                Err(TxnError::ConcurrentTransactions)
            }
            TransactionState::Dead | TransactionState::PrepareEpochFence => {
                Err(TxnError::InvalidTxnState)
            }
        }
    }

    /// Checks the producer of a transactional request (AddPartitionsToTxn, AddOffsetsToTxn).
    fn check_producer(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
    ) -> Result<&TransactionMetadata, TxnError> {
        let m = self
            .txns
            .get(transactional_id)
            .ok_or(TxnError::InvalidProducerIdMapping)?;
        if m.producer_id != producer_id {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        if m.producer_epoch != producer_epoch {
            return Err(TxnError::ProducerFenced);
        }
        Ok(m)
    }

    /// AddPartitionsToTxn and AddOffsetsToTxn (`handleAddPartitionsToTransaction`): from a
    /// client (transaction version 0/1), or from a broker adding a partition a producer of
    /// transaction version 2 wrote to (Produce v12+, TxnOffsetCommit v5). A version 2 add to a
    /// transaction still being completed is CONCURRENT_TRANSACTIONS before any producer check:
    /// the producer may already hold the next producer id (KAFKA-18660).
    pub fn add_partitions(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
        client_transaction_version: i16,
        now_ms: i64,
    ) -> Result<(), TxnError> {
        if client_transaction_version >= 2
            && self
                .txns
                .get(transactional_id)
                .is_some_and(|m| m.state.is_prepared())
        {
            return Err(TxnError::ConcurrentTransactions);
        }
        let m = self.check_producer(transactional_id, producer_id, producer_epoch)?;
        match m.state {
            TransactionState::PrepareCommit | TransactionState::PrepareAbort => {
                Err(TxnError::ConcurrentTransactions)
            }
            // Already in the transaction: answer at once without a record.
            TransactionState::Ongoing if partitions.is_subset(&m.topic_partitions) => Ok(()),
            TransactionState::Dead | TransactionState::PrepareEpochFence => {
                Err(TxnError::InvalidTxnState)
            }
            _ => {
                let target =
                    m.prepare_add_partitions(partitions, client_transaction_version, now_ms);
                self.write(target)
            }
        }
    }

    /// AddPartitionsToTxn v4+ with `verify_only` (`handleVerifyPartitionsInTransaction`): for
    /// each partition, whether it is in the producer's ongoing transaction.
    pub fn verify_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &[TopicPartition],
    ) -> Result<Vec<Result<(), TxnError>>, TxnError> {
        let m = self.check_producer(transactional_id, producer_id, producer_epoch)?;
        if m.state.is_prepared() {
            return Err(TxnError::ConcurrentTransactions);
        }
        Ok(partitions
            .iter()
            .map(|tp| {
                if m.topic_partitions.contains(tp) {
                    Ok(())
                } else {
                    Err(TxnError::TransactionAbortable)
                }
            })
            .collect())
    }

    /// EndTxn (`endTransaction` with `isFromClient = true`): Ongoing -> PrepareX, markers,
    /// CompleteX. A retry after completion with the same result is answered OK.
    pub fn end_txn(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        now_ms: i64,
    ) -> Result<(), TxnError> {
        let m = self
            .txns
            .get(transactional_id)
            .ok_or(TxnError::InvalidProducerIdMapping)?;
        if m.producer_id != producer_id {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        // Clients must send exactly the current epoch.
        if producer_epoch != m.producer_epoch {
            return Err(TxnError::ProducerFenced);
        }
        use TransactionState::*;
        match (m.state, commit) {
            (Ongoing, _) => {
                // Ended the classic way, so its markers are classic ones (at the data's own
                // epoch), whatever version added its partitions (Kafka takes the version from
                // the EndTxn request too).
                let mut target = m.prepare_abort_or_commit(commit, now_ms);
                target.client_transaction_version = 0;
                self.prepare_and_complete(target, now_ms)
            }
            (CompleteCommit, true) | (CompleteAbort, false) => Ok(()),
            (PrepareCommit, true) | (PrepareAbort, false) => Err(TxnError::ConcurrentTransactions),
            _ => Err(TxnError::InvalidTxnState),
        }
    }

    /// EndTxn v5+ (`endTransaction` under transaction version 2, KIP-890 part 2): every end
    /// bumps the epoch, and the answer is the producer id and epoch to continue with. A retry
    /// under the pre-bump epoch (the answer was lost) is answered with the current pair, and an
    /// abort is accepted when no transaction is open, since the producer cannot know whether a
    /// partition joined. Kafka's state table, with the prepared states answered
    /// CONCURRENT_TRANSACTIONS first, as its pending Complete transition makes them.
    pub fn end_txn_with_epoch_bump(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        ids: &dyn ProducerIdAllocator,
        now_ms: i64,
    ) -> Result<(i64, i16), TxnError> {
        use TransactionState::*;
        let m = self
            .txns
            .get(transactional_id)
            .ok_or(TxnError::InvalidProducerIdMapping)?;
        if m.state.is_prepared() {
            return Err(TxnError::ConcurrentTransactions);
        }
        let completed = matches!(m.state, CompleteCommit | CompleteAbort);
        // The answer to a retry was a new producer id at epoch 0.
        let retry_on_overflow = completed
            && m.last_producer_id == producer_id
            && producer_epoch == i16::MAX - 1
            && m.producer_epoch == 0;
        if producer_id != m.producer_id && !retry_on_overflow {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        let retry_on_epoch_bump =
            producer_id == m.producer_id && m.producer_epoch as i32 == producer_epoch as i32 + 1;
        let current = producer_id == m.producer_id && producer_epoch == m.producer_epoch;
        let retry = completed && (retry_on_epoch_bump || retry_on_overflow);
        let valid = match m.state {
            Ongoing | Empty => current,
            CompleteCommit | CompleteAbort => current || retry,
            _ => false,
        };
        if !valid {
            return Err(TxnError::ProducerFenced);
        }
        let empty = match (m.state, commit, retry) {
            (Ongoing, ..) => false,
            (CompleteAbort, false, true) | (CompleteCommit, true, true) => {
                return Ok((m.producer_id, m.producer_epoch));
            }
            (Empty | CompleteCommit | CompleteAbort, false, false) => true,
            _ => return Err(TxnError::InvalidTxnState),
        };
        let next_producer_id = if is_epoch_exhausted(m.producer_epoch) {
            ids.generate_producer_id()
                .map_err(|_| TxnError::CoordinatorLoadInProgress)?
        } else {
            crate::coordinator::txn::NO_PRODUCER_ID
        };
        let target = m.prepare_end_with_epoch_bump(commit, next_producer_id, empty, now_ms)?;
        let answer = target.completed_producer();
        self.prepare_and_complete(target, now_ms)?;
        Ok(answer)
    }

    /// Completes `transactional_id` if it is prepared and its Prepare record is replicated
    /// (called once EndTxn has seen it replicated, so the markers need not wait for a tick).
    pub fn complete_prepared(&mut self, transactional_id: &str, now_ms: i64) {
        self.try_complete(transactional_id, now_ms);
    }

    /// Fires what is due at `now_ms`: writes the markers of prepared transactions again, aborts
    /// Ongoing transactions older than their timeout (fencing the producer with an epoch bump,
    /// as Kafka's `abortTimedOutTransactions`), and expires idle transactional ids with a
    /// tombstone (`removeExpiredTransactionalIds`).
    pub fn tick(&mut self, now_ms: i64) {
        for id in self.prepared_ids() {
            self.try_complete(&id, now_ms);
        }
        let timed_out: Vec<TransactionMetadata> = self
            .txns
            .values()
            .filter(|m| {
                m.state == TransactionState::Ongoing
                    && m.txn_start_timestamp_ms
                        .saturating_add(m.txn_timeout_ms as i64)
                        < now_ms
            })
            .cloned()
            .collect();
        for m in timed_out {
            // At the last epoch there is nothing left to bump to: abort under the same epoch.
            let target = m
                .prepare_fence_abort(now_ms)
                .unwrap_or_else(|_| m.prepare_abort_or_commit(false, now_ms));
            if let Err(e) = self.prepare_and_complete(target, now_ms) {
                tracing::warn!(transactional_id = %m.transactional_id, error = %e, "timeout abort failed; will retry");
            }
        }
        let horizon = now_ms.saturating_sub(self.config.transactional_id_expiration_ms);
        let expired: Vec<String> = self
            .txns
            .values()
            .filter(|m| {
                m.state.is_expiration_allowed() && m.txn_last_update_timestamp_ms <= horizon
            })
            .map(|m| m.transactional_id.clone())
            .collect();
        if expired.is_empty() {
            return;
        }
        let tombstones: Vec<CoordinatorRecord> =
            expired.iter().map(|id| records::tombstone(id)).collect();
        match self.log.append(self.partition, tombstones.clone()) {
            Ok(()) => {
                for t in &tombstones {
                    let _ = self.replay(t);
                }
            }
            Err(e) => tracing::warn!(error = ?e, "expiring transactional ids failed; will retry"),
        }
    }

    /// ListTransactions over this partition: (id, producer id, state name) of every id that
    /// passes the filters (`listTransactionStates`). An empty filter accepts everything;
    /// `duration_filter_ms >= 0` keeps transactions running longer than it (KIP-994);
    /// `id_pattern` must match the whole transactional id (KIP-1152).
    pub fn list(
        &self,
        states: &BTreeSet<TransactionState>,
        producer_ids: &BTreeSet<i64>,
        duration_filter_ms: i64,
        id_pattern: Option<&regex::Regex>,
        now_ms: i64,
    ) -> Vec<(String, i64, &'static str)> {
        self.txns
            .values()
            .filter(|m| m.state != TransactionState::Dead)
            .filter(|m| producer_ids.is_empty() || producer_ids.contains(&m.producer_id))
            .filter(|m| states.is_empty() || states.contains(&m.state))
            .filter(|m| {
                duration_filter_ms < 0
                    || now_ms.saturating_sub(m.txn_start_timestamp_ms) > duration_filter_ms
            })
            .filter(|m| id_pattern.map_or(true, |p| p.is_match(&m.transactional_id)))
            .map(|m| (m.transactional_id.clone(), m.producer_id, m.state.name()))
            .collect()
    }
}
