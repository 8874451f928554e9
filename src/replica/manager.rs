//! All partition replicas of this broker (Kafka's `ReplicaManager` and
//! `ReplicaFetcherManager`): opening partitions, applying the controller's partition changes
//! (become leader / become follower, moving partitions between fetch sessions), serving the
//! follower fetches of other brokers, driving our own fetch sessions (sans-io: requests out,
//! responses in), the ISR shrink check, and the outbox of AlterPartition requests. Requests
//! waiting on partitions are woken by the partitions themselves (`wait.rs`); here only the
//! removal of a partition wakes its waiters, and a counter tells the fetcher tasks that the
//! fetch sessions changed. Log dir failures are handled in `log_dir_failure.rs`.
use std::collections::BTreeMap;
use std::sync::Arc;

use dashmap::DashMap;
use parking_lot::Mutex;
use tokio::sync::watch;

use super::change::{AlterPartition, AlterPartitionError, PartitionChange};
use super::fetcher::{
    build_fetch_request, decide, FetchAction, FetchSession, FetcherConfig, InFlight, LocalLog,
};
use super::ids::{BrokerEpoch, BrokerId};
use super::leader::{ChangeOutcome, FollowerFetch};
use super::partition::{Partition, PartitionConfig, PartitionError};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::messages::fetch_request::{FetchRequest, FetchTopic};
use crate::protocol::messages::fetch_response::{
    FetchResponse, FetchableTopicResponse, PartitionData,
};
use crate::storage::{LogManager, StorageError};

/// Broker-level replication settings.
#[derive(Debug, Clone)]
pub struct ReplicationConfig {
    /// This broker's `node.id`.
    pub local: BrokerId,
    /// `replica.lag.time.max.ms`.
    pub replica_lag_time_max_ms: i64,
    pub fetcher: FetcherConfig,
}

impl Default for ReplicationConfig {
    fn default() -> Self {
        ReplicationConfig {
            local: BrokerId(0),
            replica_lag_time_max_ms: super::partition::DEFAULT_REPLICA_LAG_TIME_MAX_MS,
            fetcher: FetcherConfig::default(),
        }
    }
}

/// What one fetch response did to our replicas.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchResponseOutcome {
    pub appended_bytes: usize,
    /// The partitions that appended records (to fsync before the next fetch in durable mode).
    pub appended: Vec<(String, i32)>,
    pub truncations: usize,
    pub errors: Vec<ErrorCode>,
}

pub struct ReplicaManager {
    logs: Arc<LogManager>,
    config: ReplicationConfig,
    broker_epoch: Mutex<BrokerEpoch>,
    pub(super) partitions: DashMap<(String, i32), Arc<Partition>>,
    /// Fetch sessions by source broker.
    pub(super) fetchers: Mutex<BTreeMap<BrokerId, FetchSession>>,
    /// The id of the next follower fetch request, over all sessions.
    next_fetch_request_id: std::sync::atomic::AtomicU64,
    /// Bumped when the replicas or their fetch sessions change (a partition change applied, a
    /// partition deleted or offline), so that the fetcher tasks reconcile without polling.
    replica_changes: watch::Sender<u64>,
    /// Partitions whose log dir went offline, with that dir (Kafka's `HostedPartition.Offline`):
    /// they answer KAFKA_STORAGE_ERROR and are not reopened elsewhere.
    pub(super) offline_partitions: DashMap<(String, i32), std::path::PathBuf>,
    /// The offline log dirs already handled (partitions dropped, fetchers stopped).
    pub(super) handled_offline_dirs: Mutex<std::collections::BTreeSet<std::path::PathBuf>>,
}

impl ReplicaManager {
    pub fn new(logs: Arc<LogManager>) -> Self {
        Self::with_config(logs, ReplicationConfig::default())
    }

    pub fn with_config(logs: Arc<LogManager>, config: ReplicationConfig) -> Self {
        let (replica_changes, _) = watch::channel(0);
        ReplicaManager {
            logs,
            config,
            broker_epoch: Mutex::new(BrokerEpoch::UNKNOWN),
            partitions: DashMap::new(),
            fetchers: Mutex::new(BTreeMap::new()),
            next_fetch_request_id: std::sync::atomic::AtomicU64::new(1),
            replica_changes,
            offline_partitions: DashMap::new(),
            handled_offline_dirs: Mutex::new(Default::default()),
        }
    }

    pub fn logs(&self) -> &Arc<LogManager> {
        &self.logs
    }

    pub fn local(&self) -> BrokerId {
        self.config.local
    }

    /// The epoch of our current registration with the controller.
    pub fn set_broker_epoch(&self, epoch: BrokerEpoch) {
        *self.broker_epoch.lock() = epoch;
    }

    pub fn broker_epoch(&self) -> BrokerEpoch {
        *self.broker_epoch.lock()
    }

    /// A partition we hold a replica of, unless its log dir is offline (then
    /// [`ReplicaManager::missing_partition_code`] says KAFKA_STORAGE_ERROR).
    pub fn get(&self, topic: &str, partition: i32) -> Option<Arc<Partition>> {
        self.partitions
            .get(&(topic.to_string(), partition))
            .filter(|p| !p.log.is_offline())
            .map(|p| p.clone())
    }

    /// Refuses to open a replica of a partition whose log dir is offline: its data is there,
    /// and Kafka does not recreate it in another dir.
    fn check_not_offline(&self, topic: &str, index: i32) -> Result<(), PartitionError> {
        let key = (topic.to_string(), index);
        if let Some(dir) = self.offline_partitions.get(&key) {
            return Err(PartitionError::Storage(StorageError::LogDirOffline {
                log_dir: dir.clone(),
            }));
        }
        match self.partitions.get(&key) {
            Some(p) if p.log.is_offline() => {
                Err(PartitionError::Storage(p.log.log_dir().offline_error()))
            }
            _ => Ok(()),
        }
    }

    /// Opens (or creates) the log of a partition and makes this broker its only replica and
    /// leader (the single-node default).
    pub fn make_leader(
        &self,
        topic: &str,
        index: i32,
        topic_id: Uuid,
        config: PartitionConfig,
    ) -> Result<Arc<Partition>, PartitionError> {
        self.check_not_offline(topic, index)?;
        if let Some(p) = self.get(topic, index) {
            return Ok(p);
        }
        let log = self.logs.get_or_create(topic, index, config.log.clone())?;
        if log.topic_id() != Some(topic_id) {
            log.set_topic_id(topic_id)?;
        }
        let p = Arc::new(Partition::new_sole_replica(
            topic,
            index,
            topic_id,
            log,
            config,
            self.config.local,
        )?);
        p.set_replica_lag_time_max_ms(self.config.replica_lag_time_max_ms);
        let entry = self
            .partitions
            .entry((topic.to_string(), index))
            .or_insert(p);
        Ok(entry.clone())
    }

    /// Applies the controller's state of a replicated partition, opening it if needed: we
    /// become (or stay) its leader or a follower of its leader, and its fetching moves to the
    /// matching session.
    pub fn apply_partition_change(
        &self,
        change: &PartitionChange,
        config: PartitionConfig,
        now_ms: i64,
    ) -> Result<ChangeOutcome, PartitionError> {
        self.apply_partition_change_in(change, config, now_ms, None)
    }

    /// [`Self::apply_partition_change`], a replica created here going to the log dir with
    /// `directory_id` `assigned_dir` if it is online (KIP-858).
    pub fn apply_partition_change_in(
        &self,
        change: &PartitionChange,
        config: PartitionConfig,
        now_ms: i64,
        assigned_dir: Option<Uuid>,
    ) -> Result<ChangeOutcome, PartitionError> {
        let key = (change.topic.clone(), change.partition);
        self.check_not_offline(&change.topic, change.partition)?;
        let partition = match self.get(&change.topic, change.partition) {
            Some(p) => p,
            None => {
                let log = self.logs.get_or_create_in(
                    &change.topic,
                    change.partition,
                    config.log.clone(),
                    assigned_dir,
                )?;
                if log.topic_id() != Some(change.topic_id) {
                    log.set_topic_id(change.topic_id)?;
                }
                let p = Arc::new(Partition::new_replica(
                    &change.topic,
                    change.partition,
                    change.topic_id,
                    log,
                    config,
                    self.config.local,
                    self.logs
                        .checkpointed_high_watermark(&change.topic, change.partition),
                )?);
                p.set_replica_lag_time_max_ms(self.config.replica_lag_time_max_ms);
                self.partitions.entry(key.clone()).or_insert(p).clone()
            }
        };
        let outcome = partition.apply_change(change, self.broker_epoch(), now_ms)?;
        let mut fetchers = self.fetchers.lock();
        match outcome {
            ChangeOutcome::Stale => {}
            ChangeOutcome::Leader {
                high_watermark_changed,
            } => {
                remove_from_sessions(&mut fetchers, &key);
                // The partition woke its own waiters (`Partition::apply_change`).
                let _ = high_watermark_changed;
                self.notify_replica_changes();
            }
            ChangeOutcome::Follower { leader, .. } => {
                remove_from_sessions(&mut fetchers, &key);
                if let Some(leader) = leader.filter(|l| *l != self.config.local) {
                    fetchers
                        .entry(leader)
                        .or_insert_with(|| FetchSession::new(leader))
                        .partitions
                        .insert(key);
                }
                self.notify_replica_changes();
            }
        }
        Ok(outcome)
    }

    /// Removes a partition and deletes its data (topic deletion).
    pub fn delete(&self, topic: &str, index: i32) -> Result<(), StorageError> {
        let key = (topic.to_string(), index);
        remove_from_sessions(&mut self.fetchers.lock(), &key);
        if let Some((_, p)) = self.partitions.remove(&key) {
            // Its waiters re-check and find it gone.
            p.mark_removed();
        }
        self.offline_partitions.remove(&key);
        self.notify_replica_changes();
        self.logs.delete_partition(topic, index)
    }

    /// Every partition we hold a replica of in an online log dir.
    pub fn all(&self) -> Vec<Arc<Partition>> {
        self.partitions
            .iter()
            .filter(|e| !e.value().log.is_offline())
            .map(|e| e.value().clone())
            .collect()
    }

    /// Tells the fetcher tasks that the replicas or their fetch sessions changed.
    pub fn notify_replica_changes(&self) {
        self.replica_changes.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Changes to the replicas and fetch sessions (what the fetcher tasks reconcile with);
    /// requests waiting on partitions use [`super::wait::wait_until`] instead.
    pub fn subscribe_replica_changes(&self) -> watch::Receiver<u64> {
        self.replica_changes.subscribe()
    }

    /// Waits, at most `timeout_ms`, until an append that ends before `required_offset`, made
    /// under `leader_epoch`, is acknowledged as acks=all ([`Partition::acks_all_outcome`]);
    /// None on timeout. For the broker's own appends (coordinator records, transaction
    /// markers), which Kafka makes with required acks -1.
    pub async fn wait_acks_all(
        &self,
        partition: &Arc<Partition>,
        required_offset: i64,
        leader_epoch: i32,
        timeout_ms: u64,
    ) -> Option<Result<(), PartitionError>> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(timeout_ms);
        self.wait_acks_all_until(partition, required_offset, leader_epoch, deadline)
            .await
    }

    /// [`Self::wait_acks_all`] to a deadline shared by several waits made one after another,
    /// so that together they take no longer than one.
    pub async fn wait_acks_all_until(
        &self,
        partition: &Arc<Partition>,
        required_offset: i64,
        leader_epoch: i32,
        deadline: tokio::time::Instant,
    ) -> Option<Result<(), PartitionError>> {
        let durable =
            super::durable_ack::DurableAck::request(&self.logs, partition, required_offset);
        let partition = [partition.clone()];
        super::wait::wait_until(&partition, deadline, || {
            super::durable_ack::after_durable(durable.as_deref(), &partition[0], || {
                partition[0].acks_all_outcome(required_offset, leader_epoch)
            })
        })
        .await
    }

    /// Durable mode: waits until what `partitions` appended from their leaders is fsynced, so
    /// that the next fetch reports only durable offsets. Immediate when durable
    /// acknowledgements are off; a failed fsync has taken the log dir offline by then.
    pub async fn sync_fetched(&self, partitions: &[(String, i32)], deadline: tokio::time::Instant) {
        // Every request first, so that one round of the group commit covers them all.
        let mut acks = Vec::with_capacity(partitions.len());
        for (topic, index) in partitions {
            let Some(partition) = self.get(topic, *index) else {
                continue;
            };
            let offset = partition.log_end_offset();
            match super::durable_ack::DurableAck::request(&self.logs, &partition, offset) {
                Some(ack) => acks.push((partition, ack)),
                None => return,
            }
        }
        for (partition, ack) in acks {
            let one = [partition];
            super::wait::wait_until(&one, deadline, || ack.outcome(&one[0])).await;
        }
    }

    /// Serves a Fetch from a follower (`replica_id >= 0` or ReplicaState): reads up to the log
    /// end offset, records the follower's position, reports diverging epochs. `resolve` maps a
    /// request topic to its name (by id from v13).
    pub fn serve_follower_fetch(
        &self,
        request: &FetchRequest,
        resolve: &dyn Fn(&FetchTopic) -> Option<String>,
        now_ms: i64,
    ) -> FetchResponse {
        let replica = if request.replica_state.replica_id >= 0 {
            request.replica_state.replica_id
        } else {
            request.replica_id
        };
        let broker_epoch = BrokerEpoch(request.replica_state.replica_epoch);
        let mut remaining = request.max_bytes.max(0) as usize;
        let mut responses = Vec::with_capacity(request.topics.len());
        for topic in &request.topics {
            let name = resolve(topic);
            let mut partitions = Vec::with_capacity(topic.partitions.len());
            for fp in &topic.partitions {
                let mut pd = PartitionData {
                    partition_index: fp.partition,
                    high_watermark: -1,
                    records: Some(Default::default()),
                    ..Default::default()
                };
                let Some(partition) = name.as_deref().and_then(|n| self.get(n, fp.partition))
                else {
                    pd.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code();
                    partitions.push(pd);
                    continue;
                };
                let fetch = FollowerFetch {
                    replica: BrokerId(replica),
                    broker_epoch,
                    fetch_offset: fp.fetch_offset,
                    last_fetched_epoch: fp.last_fetched_epoch,
                    current_leader_epoch: fp.current_leader_epoch,
                    max_bytes: (fp.partition_max_bytes.max(0) as usize).min(remaining),
                    now_ms,
                };
                match partition.fetch_for_follower(&fetch) {
                    Ok(r) => {
                        remaining = remaining.saturating_sub(r.records.len());
                        pd.high_watermark = r.high_watermark;
                        pd.last_stable_offset = r.last_stable_offset;
                        pd.log_start_offset = r.log_start_offset;
                        if let Some((epoch, end_offset)) = r.diverging_epoch {
                            pd.diverging_epoch.epoch = epoch;
                            pd.diverging_epoch.end_offset = end_offset;
                        }
                        pd.records = Some(r.records);
                    }
                    Err(e) => {
                        pd.error_code = e.code().code();
                        if let PartitionError::OffsetOutOfRange {
                            log_start_offset, ..
                        } = e
                        {
                            // Lets the follower restart at our log start without a ListOffsets.
                            pd.log_start_offset = log_start_offset;
                        }
                        // KIP-951: point the follower at the leader we know.
                        pd.current_leader.leader_id = partition.leader_id().map_or(-1, |b| b.0);
                        pd.current_leader.leader_epoch = partition.leader_epoch();
                    }
                }
                partitions.push(pd);
            }
            responses.push(FetchableTopicResponse {
                topic: topic.topic.clone(),
                topic_id: topic.topic_id,
                partitions,
                ..Default::default()
            });
        }
        FetchResponse {
            responses,
            ..Default::default()
        }
    }

    /// The fetch requests our sessions may send now: (source broker, request id, request).
    /// The transport hands the id back with the response (a correlation id).
    pub fn poll_fetch_requests(&self, now_ms: i64) -> Vec<(BrokerId, u64, FetchRequest)> {
        let sources: Vec<BrokerId> = self.fetchers.lock().keys().copied().collect();
        sources
            .into_iter()
            .filter_map(|source| {
                self.poll_fetch_request(source, now_ms)
                    .map(|(id, request)| (source, id, request))
            })
            .collect()
    }

    /// The fetch request the session with `source` may send now, if any: (request id,
    /// request). The network transport runs one task per source broker and polls its own.
    pub fn poll_fetch_request(&self, source: BrokerId, now_ms: i64) -> Option<(u64, FetchRequest)> {
        let mut fetchers = self.fetchers.lock();
        let session = fetchers.get_mut(&source)?;
        if !session.ready(now_ms, &self.config.fetcher) {
            return None;
        }
        let mut positions = Vec::new();
        let mut requested = BTreeMap::new();
        for key in &session.partitions {
            let Some(p) = self.get(&key.0, key.1) else {
                continue;
            };
            let Some(pos) = p.follower_position() else {
                continue;
            };
            if pos.leader != session.source {
                continue;
            }
            positions.push((key.clone(), p.topic_id, pos));
            requested.insert(key.clone(), pos);
        }
        if positions.is_empty() {
            return None;
        }
        // Ids are unique across sessions: a session dropped and recreated (the partition left
        // and came back) must not take a late answer to its predecessor's request for its own
        // (sim seed 3878: a stale DivergingEpoch truncated an ISR member below the HW).
        let request_id = self
            .next_fetch_request_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        session.in_flight = Some(InFlight {
            request_id,
            sent_at_ms: now_ms,
            requested,
        });
        Some((
            request_id,
            build_fetch_request(
                self.config.local,
                self.broker_epoch(),
                &positions,
                &self.config.fetcher,
            ),
        ))
    }

    /// The settings of our fetch sessions.
    pub fn fetcher_config(&self) -> &FetcherConfig {
        &self.config.fetcher
    }

    /// The name of a topic we hold a replica of, by id: followers fetch by topic id (Fetch
    /// v13+) and a leader must answer for partitions the controller gave it even before its
    /// metadata store lists the topic.
    pub fn topic_name_by_id(&self, topic_id: &Uuid) -> Option<String> {
        if topic_id.is_zero() {
            return None;
        }
        self.partitions
            .iter()
            .find(|e| e.value().topic_id == *topic_id)
            .map(|e| e.value().topic.clone())
    }

    /// Request `request_id` to `source` failed (connection lost): back off and retry.
    pub fn on_fetch_failure(&self, source: BrokerId, request_id: u64, now_ms: i64) {
        if let Some(s) = self.fetchers.lock().get_mut(&source) {
            if s.in_flight.as_ref().map(|f| f.request_id) != Some(request_id) {
                return;
            }
            s.in_flight = None;
            s.not_before_ms = now_ms + self.config.fetcher.backoff_ms;
        }
    }

    /// Applies the response to request `request_id` from `source`: appends, truncations,
    /// backoffs. A response to any other request (one that timed out) is dropped; partitions
    /// whose position changed since the request (new epoch, truncated) are left alone.
    pub fn on_fetch_response(
        &self,
        source: BrokerId,
        request_id: u64,
        response: &FetchResponse,
        now_ms: i64,
    ) -> FetchResponseOutcome {
        let mut outcome = FetchResponseOutcome::default();
        let Some(in_flight) = self.fetchers.lock().get_mut(&source).and_then(|s| {
            if s.in_flight.as_ref().map(|f| f.request_id) == Some(request_id) {
                s.in_flight.take()
            } else {
                None
            }
        }) else {
            return outcome;
        };
        if response.error_code != 0 {
            outcome.errors.push(code_of(response.error_code));
        }
        for topic in &response.responses {
            for pd in &topic.partitions {
                let key = (topic.topic.clone(), pd.partition_index);
                let Some(requested) = in_flight.requested.get(&key) else {
                    continue;
                };
                let Some(partition) = self.get(&key.0, key.1) else {
                    continue;
                };
                if partition.follower_position().as_ref() != Some(requested) {
                    continue;
                }
                let action = decide(pd, requested, &PartitionLocalLog(&partition));
                let applied = match action {
                    FetchAction::Append {
                        records,
                        high_watermark,
                    } => partition
                        .append_from_leader(
                            requested.leader_epoch,
                            &records,
                            high_watermark,
                            now_ms,
                        )
                        .map(|n| {
                            outcome.appended_bytes += n;
                            if n > 0 {
                                outcome.appended.push(key.clone());
                            }
                        }),
                    FetchAction::Truncate { offset, .. } => {
                        outcome.truncations += 1;
                        partition.truncate_as_follower(requested.leader_epoch, offset)
                    }
                    FetchAction::TruncateFully { offset } => {
                        outcome.truncations += 1;
                        partition.truncate_fully_as_follower(requested.leader_epoch, offset)
                    }
                    FetchAction::Backoff(code) => {
                        outcome.errors.push(code);
                        Ok(())
                    }
                };
                if let Err(e) = applied {
                    tracing::warn!(topic = %key.0, partition = key.1, error = ?e, "applying fetched data failed");
                    outcome.errors.push(e.code());
                }
            }
        }
        let mut fetchers = self.fetchers.lock();
        if let Some(s) = fetchers.get_mut(&source) {
            s.not_before_ms = if !outcome.errors.is_empty() {
                now_ms + self.config.fetcher.backoff_ms
            } else if outcome.appended_bytes == 0 && outcome.truncations == 0 {
                now_ms + self.config.fetcher.idle_backoff_ms
            } else {
                now_ms
            };
        }
        outcome
    }

    /// The periodic ISR shrink check over the partitions we lead.
    pub fn maybe_shrink_isr(&self, now_ms: i64) {
        for p in self.all() {
            p.maybe_shrink_isr(now_ms);
        }
    }

    /// ISR changes to send to the controller (each handed out once).
    pub fn take_alter_partitions(&self) -> Vec<AlterPartition> {
        self.all()
            .iter()
            .filter_map(|p| p.take_alter_partition())
            .collect()
    }

    /// The controller refused an ISR change.
    pub fn on_alter_partition_error(&self, request: &AlterPartition, error: AlterPartitionError) {
        if let Some(p) = self.get(&request.topic, request.partition) {
            p.on_alter_partition_error(request, error);
        }
    }

    /// The source brokers we fetch from (a session exists while it has partitions).
    pub fn fetch_sources(&self) -> Vec<BrokerId> {
        self.fetchers
            .lock()
            .values()
            .filter(|s| !s.partitions.is_empty() || s.in_flight.is_some())
            .map(|s| s.source)
            .collect()
    }

    /// The source brokers we fetch from, with their partitions (tests, diagnostics).
    pub fn fetch_sessions(&self) -> Vec<FetchSession> {
        self.fetchers.lock().values().cloned().collect()
    }
}

pub(super) fn remove_from_sessions(
    fetchers: &mut BTreeMap<BrokerId, FetchSession>,
    key: &(String, i32),
) {
    for s in fetchers.values_mut() {
        s.partitions.remove(key);
    }
    fetchers.retain(|_, s| !s.partitions.is_empty() || s.in_flight.is_some());
}

fn code_of(code: i16) -> ErrorCode {
    [
        ErrorCode::NOT_LEADER_OR_FOLLOWER,
        ErrorCode::FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode::UNKNOWN_SERVER_ERROR,
    ]
    .into_iter()
    .find(|e| e.code() == code)
    .unwrap_or(ErrorCode::UNKNOWN_SERVER_ERROR)
}

/// A partition as the fetcher's decision sees it.
struct PartitionLocalLog<'a>(&'a Partition);

impl LocalLog for PartitionLocalLog<'_> {
    fn log_end_offset(&self) -> i64 {
        self.0.log_end_offset()
    }
    fn high_watermark(&self) -> i64 {
        self.0.high_watermark()
    }
    fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.0.end_offset_for_epoch(epoch)
    }
}
