//! One partition replica (Kafka's `Partition`): its role (leader with the replication state
//! of `leader_state.rs`, or follower), leader epoch and high watermark; as leader it validates
//! and appends produce batches (with idempotence), writes transaction markers (their aborted
//! transactions go to the segment's `.txnindex`), serves reads bounded by the high watermark or
//! last stable offset, and snapshots the producer state when a segment rolls and at shutdown.
//! Leadership changes and the leader side of replication live in `leader.rs`, the follower side
//! in `follower.rs`, loading at open in `load.rs`, the errors in `partition_error.rs`.
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::RwLock;

use super::ids::{BrokerId, LeaderEpoch, PartitionEpoch};
use super::leader_state::LeaderState;
use super::load::{load_producer_state, ProducerStateLoad};
pub use super::partition_error::PartitionError;
use super::producer_state::{ProducerStateError, ProducerStateManager, SequenceCheck};
use super::state_lock::{StateGuard, StateLock};
use super::txn_verification::TxnVerification;
use crate::protocol::codec::Uuid;
use crate::protocol::records::batch;
use crate::protocol::records::compression::Compression;
use crate::protocol::records::recompress::apply_topic_compression;
use crate::protocol::records::validator::{validate_produce, ValidationConfig};
use crate::storage::{FetchDataInfo, LogConfig, PartitionLog};

/// The per-partition settings the replica layer needs, resolved from topic configs.
#[derive(Debug, Clone)]
pub struct PartitionConfig {
    pub log: LogConfig,
    pub max_message_bytes: usize,
    pub log_append_time: bool,
    pub compacted: bool,
    pub min_insync_replicas: i32,
    /// `message.timestamp.before.max.ms` / `after.max.ms` (CreateTime topics).
    pub timestamp_before_max_ms: i64,
    pub timestamp_after_max_ms: i64,
    /// `compression.type`: the codec batches are stored with, `None` for the producer's.
    pub compression: Option<Compression>,
}

impl Default for PartitionConfig {
    fn default() -> Self {
        PartitionConfig {
            log: LogConfig::default(),
            max_message_bytes: 1_048_588,
            log_append_time: false,
            compacted: false,
            min_insync_replicas: 1,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: i64::MAX,
            compression: None,
        }
    }
}

/// The result of a successful produce to one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendOutcome {
    pub base_offset: i64,
    pub last_offset: i64,
    /// -1 unless the topic uses LogAppendTime.
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    /// True when the batch was a retry of one already in the log.
    pub duplicate: bool,
    /// The leader epoch the batch was written under: an acks=all wait fails if leadership
    /// changes before the high watermark passes it (Kafka completes such delayed produces with
    /// NOT_LEADER_OR_FOLLOWER when the partition becomes a follower).
    pub leader_epoch: i32,
}

/// What this broker is for the partition.
#[derive(Debug)]
pub(super) enum Role {
    Leader(LeaderState),
    Follower(FollowerView),
}

/// A follower's copy of the controller's partition state.
#[derive(Debug, Clone)]
pub(super) struct FollowerView {
    pub leader: Option<BrokerId>,
    pub partition_epoch: PartitionEpoch,
    pub replicas: Vec<BrokerId>,
    pub isr: Vec<BrokerId>,
}

#[derive(Debug)]
pub(super) struct PartitionState {
    pub local: BrokerId,
    pub role: Role,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub producers: ProducerStateManager,
    /// `replica.lag.time.max.ms`, set by the replica manager.
    pub replica_lag_time_max_ms: i64,
}

/// Kafka's default `replica.lag.time.max.ms`.
pub const DEFAULT_REPLICA_LAG_TIME_MAX_MS: i64 = 30_000;

impl PartitionState {
    pub fn leader_state(&self) -> Option<&LeaderState> {
        match &self.role {
            Role::Leader(l) => Some(l),
            Role::Follower(_) => None,
        }
    }

    /// Kafka's LSO: the high watermark, or the first offset of the earliest open transaction
    /// if that is lower.
    pub fn last_stable_offset(&self) -> i64 {
        self.producers
            .first_unstable_offset()
            .map_or(self.high_watermark, |f| f.min(self.high_watermark))
    }

    pub fn leader_state_mut(&mut self) -> Option<&mut LeaderState> {
        match &mut self.role {
            Role::Leader(l) => Some(l),
            Role::Follower(_) => None,
        }
    }
}

pub struct Partition {
    pub topic: String,
    pub index: i32,
    pub topic_id: Uuid,
    pub log: Arc<PartitionLog>,
    pub(super) state: StateLock,
    config: RwLock<Arc<PartitionConfig>>,
    load: ProducerStateLoad,
    /// The requests waiting on this partition (`wait.rs`).
    waiters: tokio::sync::Notify,
    /// Set when the replica manager drops the partition (its topic was deleted, or it moved
    /// off this broker without a leadership change first): a waiter holding it must not wait
    /// for a high watermark that can no longer move.
    removed: std::sync::atomic::AtomicBool,
}

/// Isolation level of a read (`isolation_level` of Fetch and ListOffsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    ReadUncommitted,
    ReadCommitted,
}

impl Isolation {
    pub fn from_wire(level: i8) -> Self {
        if level == 1 {
            Isolation::ReadCommitted
        } else {
            Isolation::ReadUncommitted
        }
    }
}

/// FENCED_LEADER_EPOCH for an older epoch than ours, UNKNOWN_LEADER_EPOCH for a newer one;
/// a negative `got` (the client does not know) passes.
pub(super) fn compare_leader_epoch(current: i32, got: i32) -> Result<(), PartitionError> {
    if got < 0 {
        Ok(())
    } else if got < current {
        Err(PartitionError::FencedLeaderEpoch { current, got })
    } else if got > current {
        Err(PartitionError::UnknownLeaderEpoch { current, got })
    } else {
        Ok(())
    }
}

impl Partition {
    /// Wraps an opened log as the sole replica and leader (the single-node default), loading
    /// producer state from the latest snapshot and the log after it.
    pub fn new(
        topic: &str,
        index: i32,
        topic_id: Uuid,
        log: Arc<PartitionLog>,
        config: PartitionConfig,
    ) -> Result<Self, PartitionError> {
        Self::new_sole_replica(topic, index, topic_id, log, config, BrokerId(0))
    }

    /// As [`Partition::new`], for broker `local`: the ISR is `{local}`, so the high watermark
    /// follows the log end offset.
    pub fn new_sole_replica(
        topic: &str,
        index: i32,
        topic_id: Uuid,
        log: Arc<PartitionLog>,
        config: PartitionConfig,
        local: BrokerId,
    ) -> Result<Self, PartitionError> {
        let leader_epoch = log.latest_epoch().unwrap_or(0);
        if log.latest_epoch().is_none() {
            log.assign_epoch_start_offset(leader_epoch, log.log_end_offset())?;
        }
        let high_watermark = log.log_end_offset();
        let role = Role::Leader(LeaderState::sole_replica(
            local,
            LeaderEpoch(leader_epoch),
            high_watermark,
        ));
        Self::load(
            topic,
            index,
            topic_id,
            log,
            config,
            local,
            role,
            leader_epoch,
            high_watermark,
        )
    }

    /// Wraps an opened log as a replica of a replicated partition, not yet leader nor
    /// following anyone: the controller's [`PartitionChange`](super::PartitionChange) decides
    /// (`leader.rs`). The high watermark starts at `checkpointed_high_watermark` (from
    /// `replication-offset-checkpoint`) bounded by the log, as Kafka's `Partition.createLog`
    /// and `UnifiedLog.updateHighWatermark` do: a log that lost its tail (a power loss below
    /// the checkpoint) starts at its end, one whose start moved past it at its start, and
    /// without a checkpoint at the log start offset. From there it moves as before: a follower
    /// takes the leader's, a leader keeps it (never going back) until the ISR allows more.
    pub fn new_replica(
        topic: &str,
        index: i32,
        topic_id: Uuid,
        log: Arc<PartitionLog>,
        config: PartitionConfig,
        local: BrokerId,
        checkpointed_high_watermark: Option<i64>,
    ) -> Result<Self, PartitionError> {
        let role = Role::Follower(FollowerView {
            leader: None,
            partition_epoch: PartitionEpoch(-1),
            replicas: Vec::new(),
            isr: Vec::new(),
        });
        let high_watermark = checkpointed_high_watermark
            .unwrap_or(0)
            .min(log.log_end_offset())
            .max(log.log_start_offset());
        Self::load(
            topic,
            index,
            topic_id,
            log,
            config,
            local,
            role,
            -1,
            high_watermark,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn load(
        topic: &str,
        index: i32,
        topic_id: Uuid,
        log: Arc<PartitionLog>,
        config: PartitionConfig,
        local: BrokerId,
        role: Role,
        leader_epoch: i32,
        high_watermark: i64,
    ) -> Result<Self, PartitionError> {
        let (producers, load) = load_producer_state(&log)?;
        Ok(Partition {
            topic: topic.to_string(),
            index,
            topic_id,
            log,
            state: StateLock::new(PartitionState {
                local,
                role,
                leader_epoch,
                high_watermark,
                producers,
                replica_lag_time_max_ms: DEFAULT_REPLICA_LAG_TIME_MAX_MS,
            }),
            config: RwLock::new(Arc::new(config)),
            load,
            waiters: tokio::sync::Notify::new(),
            removed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// What the requests waiting on this partition register with ([`super::wait::wait_until`]).
    pub fn waiters(&self) -> &tokio::sync::Notify {
        &self.waiters
    }

    /// Tells the requests waiting on this partition to re-check: its log end offset, high
    /// watermark, last stable offset, log start offset, leadership or epoch may have changed, or
    /// it was removed.
    pub fn wake_waiters(&self) {
        self.waiters.notify_waiters();
    }

    /// [`Self::wake_waiters`] from under the state lock: what changed is published first, or
    /// a waiter could re-check the old figures and sleep through the change.
    pub(super) fn wake_waiters_locked(&self, st: &StateGuard<'_>) {
        st.publish();
        self.wake_waiters();
    }

    /// Marks the partition dropped from this broker and wakes its waiters, which answer
    /// NOT_LEADER_OR_FOLLOWER at once as Kafka's DelayedProduce does for a partition it no
    /// longer hosts, instead of at their timeout.
    pub fn mark_removed(&self) {
        self.removed
            .store(true, std::sync::atomic::Ordering::Release);
        self.wake_waiters();
    }

    pub fn is_removed(&self) -> bool {
        self.removed.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn config(&self) -> Arc<PartitionConfig> {
        self.config.read().clone()
    }

    pub fn update_config(&self, config: PartitionConfig) {
        self.log.update_config(config.log.clone());
        *self.config.write() = Arc::new(config);
    }

    pub fn leader_epoch(&self) -> i32 {
        self.state.leader_epoch()
    }

    pub fn high_watermark(&self) -> i64 {
        self.state.high_watermark()
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }

    pub fn log_end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }

    /// The offset below which no transaction is still open (Kafka's LSO).
    pub fn last_stable_offset(&self) -> i64 {
        self.state.last_stable_offset()
    }

    /// Checks the epoch a client believes current (`current_leader_epoch`, -1 = unknown).
    pub fn check_leader_epoch(&self, got: i32) -> Result<(), PartitionError> {
        compare_leader_epoch(self.leader_epoch(), got)
    }

    /// Validates and appends the batches of one produce request partition (acks=1 rules:
    /// no `min.insync.replicas` check).
    pub fn append_records(
        &self,
        records: Bytes,
        now_ms: i64,
    ) -> Result<AppendOutcome, PartitionError> {
        self.append_records_with_acks(records, 1, now_ms)
    }

    /// Validates and appends as leader. With `required_acks == -1` the append is refused with
    /// NOT_ENOUGH_REPLICAS when the ISR is smaller than `min.insync.replicas` (Kafka's
    /// `appendRecordsToLeader`); waiting for the high watermark is the caller's
    /// ([`Partition::acks_all_outcome`]).
    pub fn append_records_with_acks(
        &self,
        records: Bytes,
        required_acks: i16,
        now_ms: i64,
    ) -> Result<AppendOutcome, PartitionError> {
        self.append_client_records(records, required_acks, now_ms, TxnVerification::NotRequired)
    }

    /// A client's produce, with the guard of the transaction verification the produce path
    /// started for it (KIP-890 part 1, `txn_verification`).
    pub fn append_client_records(
        &self,
        records: Bytes,
        required_acks: i16,
        now_ms: i64,
        verification: TxnVerification,
    ) -> Result<AppendOutcome, PartitionError> {
        self.append_as_leader_from(records, required_acks, now_ms, Some(verification))
    }

    /// Appends a coordinator's own batch (Kafka's `AppendOrigin.COORDINATOR`): validated as
    /// any batch, except the client-only rules (a transactional offset commit carries a
    /// producer id and no sequence).
    pub fn append_coordinator_records(
        &self,
        records: Bytes,
        required_acks: i16,
        now_ms: i64,
    ) -> Result<AppendOutcome, PartitionError> {
        self.append_as_leader_from(records, required_acks, now_ms, None)
    }

    /// `client`: a client's append and how it is verified; None for a coordinator's.
    fn append_as_leader_from(
        &self,
        records: Bytes,
        required_acks: i16,
        now_ms: i64,
        client: Option<TxnVerification>,
    ) -> Result<AppendOutcome, PartitionError> {
        let from_client = client.is_some();
        let config = self.config();
        let too_large = |e| match e {
            batch::BatchError::MessageTooLarge { size, .. } => PartitionError::MessageTooLarge {
                size,
                max: config.max_message_bytes,
            },
            other => PartitionError::Record(other),
        };
        // Kafka's LogValidator: every batch and record checked once, compressed ones through
        // a streaming decompressor; the parsed headers travel down to the segment.
        let validation = ValidationConfig {
            max_message_bytes: config.max_message_bytes,
            compacted: config.compacted,
            log_append_time: config.log_append_time,
            timestamp_before_max_ms: config.timestamp_before_max_ms,
            timestamp_after_max_ms: config.timestamp_after_max_ms,
            now_ms,
            topic_partition: format!("{}-{}", self.topic, self.index),
            from_client,
        };
        let validated = validate_produce(&records, &validation).map_err(too_large)?;
        let (records, batches) = apply_topic_compression(
            records,
            validated,
            config.compression,
            config.max_message_bytes,
        )
        .map_err(too_large)?;
        let headers: Vec<batch::BatchHeader> = batches.iter().map(|(h, _)| *h).collect();
        let mut st = self.state.lock();
        let Some(leader) = st.leader_state() else {
            return Err(PartitionError::NotLeaderOrFollower);
        };
        let min_isr = leader.effective_min_isr(config.min_insync_replicas);
        if required_acks == -1 && (leader.isr.len() as i32) < min_isr {
            return Err(PartitionError::NotEnoughReplicas {
                isr: leader.isr.len(),
                min_insync_replicas: min_isr,
            });
        }
        // Idempotence: a retry of one of the producer's last batches is answered, not written.
        if headers.len() == 1 {
            if let SequenceCheck::Duplicate(dup) = st
                .producers
                .check(&headers[0])
                .map_err(PartitionError::Producer)?
            {
                return Ok(AppendOutcome {
                    base_offset: dup.first_offset,
                    last_offset: dup.last_offset,
                    log_append_time_ms: -1,
                    log_start_offset: self.log.log_start_offset(),
                    duplicate: true,
                    leader_epoch: st.leader_epoch,
                });
            }
        } else {
            let mut scratch = st.producers.clone();
            for h in &headers {
                match scratch.check(h).map_err(PartitionError::Producer)? {
                    SequenceCheck::Append => scratch.update(h, 0, 0, 0),
                    SequenceCheck::Duplicate(d) => {
                        return Err(PartitionError::Producer(
                            ProducerStateError::OutOfOrderSequence {
                                expected: d.last_seq,
                                got: h.base_sequence,
                            },
                        ))
                    }
                }
            }
        }
        // Duplicates are answered above first, as Kafka does; what is new must not open a
        // transaction the coordinator has not confirmed.
        if let (Some(verification), Some(h)) =
            (client, headers.iter().find(|h| h.is_transactional()))
        {
            st.producers
                .check_verified(h, verification)
                .map_err(PartitionError::Producer)?;
        }
        let log_append_time = if config.log_append_time {
            Some(now_ms)
        } else {
            None
        };
        // Offsets and the leader epoch are written in place, in the request's own buffer when
        // nothing else refers to it (one partition per request); otherwise in one copy.
        let data = records
            .try_into_mut()
            .unwrap_or_else(|shared| BytesMut::from(&shared[..]));
        let active_before = self.log.active_segment_base_offset();
        let info = self.log.append_validated_as_leader(
            data,
            batches,
            st.leader_epoch,
            log_append_time,
            now_ms,
        )?;
        self.snapshot_if_rolled(&st, active_before, info.first_offset);
        // Offsets were assigned consecutively, batch by batch, from first_offset.
        let mut next = info.first_offset;
        for h in &headers {
            let first = next;
            let last = first + h.last_offset_delta as i64;
            let ts = if config.log_append_time {
                now_ms
            } else {
                h.max_timestamp
            };
            st.producers.update(h, first, last, ts);
            next = last + 1;
        }
        // With an ISR of one the high watermark follows the log end offset at once.
        self.maybe_increment_high_watermark(&mut st, now_ms);
        // Long-poll fetches of followers wait for the log end offset, consumers' for the
        // high watermark.
        self.wake_waiters_locked(&st);
        Ok(AppendOutcome {
            base_offset: info.first_offset,
            last_offset: info.last_offset,
            log_append_time_ms: log_append_time.unwrap_or(-1),
            log_start_offset: info.log_start_offset,
            duplicate: false,
            leader_epoch: st.leader_epoch,
        })
    }

    /// Reads for a consumer: whole batches from the one containing `fetch_offset`, never past the
    /// high watermark (or the last stable offset for read_committed).
    pub fn read(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        isolation: Isolation,
        min_one_batch: bool,
    ) -> Result<FetchDataInfo, PartitionError> {
        let (limit, log_start, log_end) = self.consumer_read_bounds(fetch_offset, isolation)?;
        if fetch_offset >= limit {
            return Ok(FetchDataInfo {
                records: Bytes::new(),
                log_start_offset: log_start,
                log_end_offset: log_end,
            });
        }
        Ok(self
            .log
            .read(fetch_offset, max_bytes, limit, min_one_batch)?)
    }

    /// (the offset a consumer's read stops before, log start offset, log end offset), or
    /// OFFSET_OUT_OF_RANGE for a fetch offset outside the log.
    fn consumer_read_bounds(
        &self,
        fetch_offset: i64,
        isolation: Isolation,
    ) -> Result<(i64, i64, i64), PartitionError> {
        let limit = match isolation {
            Isolation::ReadUncommitted => self.high_watermark(),
            Isolation::ReadCommitted => self.last_stable_offset(),
        };
        let log_end = self.log.log_end_offset();
        let log_start = self.log.log_start_offset();
        if fetch_offset < log_start || fetch_offset > log_end {
            return Err(PartitionError::OffsetOutOfRange {
                offset: fetch_offset,
                log_start_offset: log_start,
                log_end_offset: log_end,
            });
        }
        Ok((limit, log_start, log_end))
    }

    /// As [`Self::read`], with the batches left in their segment file (zero-copy fetch).
    pub fn read_region(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        isolation: Isolation,
        min_one_batch: bool,
    ) -> Result<crate::storage::RegionDataInfo, PartitionError> {
        let (limit, log_start, log_end) = self.consumer_read_bounds(fetch_offset, isolation)?;
        if fetch_offset >= limit {
            return Ok(crate::storage::RegionDataInfo {
                region: None,
                log_start_offset: log_start,
                log_end_offset: log_end,
            });
        }
        Ok(self
            .log
            .read_region(fetch_offset, max_bytes, limit, min_one_batch)?)
    }

    /// Moves the log start offset (DeleteRecords); -1 means "up to the high watermark".
    pub fn delete_records_before(&self, offset: i64) -> Result<i64, PartitionError> {
        let hw = self.high_watermark();
        let target = if offset == -1 { hw } else { offset };
        if target < 0 || target > hw {
            return Err(PartitionError::OffsetOutOfRange {
                offset: target,
                log_start_offset: self.log_start_offset(),
                log_end_offset: self.log_end_offset(),
            });
        }
        let log_start_offset = self.log.delete_records_before(target)?;
        // A fetch waiting below the new log start now answers OFFSET_OUT_OF_RANGE.
        self.wake_waiters();
        Ok(log_start_offset)
    }

    /// Kafka takes a producer snapshot when a segment rolls: if the append that just happened
    /// started a new segment at `first_offset`, `st` (not yet updated with that append) is
    /// the state at exactly that offset. Failure only costs a longer replay at start-up.
    pub(super) fn snapshot_if_rolled(
        &self,
        st: &PartitionState,
        active_before: i64,
        first_offset: i64,
    ) {
        let active = self.log.active_segment_base_offset();
        if active != active_before && active == first_offset {
            if let Err(e) = self
                .log
                .write_producer_snapshot(active, &st.producers.to_snapshot())
            {
                tracing::warn!(topic = %self.topic, partition = self.index, error = %e, "producer snapshot not written");
            }
        }
    }

    /// Writes a producer snapshot at the log end offset (clean shutdown), so the next
    /// start-up replays nothing.
    pub fn take_producer_snapshot(&self) -> Result<(), PartitionError> {
        let st = self.state.lock();
        let offset = self.log.log_end_offset();
        self.log
            .write_producer_snapshot(offset, &st.producers.to_snapshot())?;
        Ok(())
    }

    /// How the producer state was loaded when the partition opened.
    pub fn producer_state_load(&self) -> ProducerStateLoad {
        self.load
    }

    /// Drops producers idle past `producer.id.expiration.ms`.
    pub fn expire_producers(&self, now_ms: i64, expiration_ms: i64) {
        let mut st = self.state.lock();
        st.producers.expire(now_ms, expiration_ms);
    }

    /// Number of producers whose state is kept (DescribeProducers, tests).
    pub fn producer_count(&self) -> usize {
        self.state.lock().producers.len()
    }

    pub fn with_producers<R>(&self, f: impl FnOnce(&ProducerStateManager) -> R) -> R {
        f(&self.state.lock().producers)
    }
}
