//! The log manager (Kafka's `LogManager`): every log dir with its `meta.properties`,
//! `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
//! `cleaner-offset-checkpoint`, `replication-offset-checkpoint` (high watermarks, written
//! with the values the replica manager passes) and clean-shutdown marker,
//! and the map of open partition logs. The marker is deleted once read at start-up, so a crash
//! after start-up is detected on the next one.
//!
//! Each log dir has a [`LogDirState`]: an I/O error in it takes the dir offline (Kafka's
//! `LogManager.handleLogDirFailure`): its logs are no longer listed, checkpointed or cleaned,
//! new logs go to the other dirs, and the clean-shutdown marker is not written in it, so the
//! next start recovers it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::protocol::codec::Uuid;

use super::checkpoint::{
    write_atomic, write_meta_properties, write_offset_checkpoint, MetaProperties, OffsetMap,
    CLEAN_SHUTDOWN_MARKER, LOG_START_OFFSET_CHECKPOINT, META_PROPERTIES, RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
};
use super::cleaner::{CleanStats, CleanerConfig, Throttler, CLEANER_OFFSET_CHECKPOINT};
use super::config::LogConfig;
use super::durable::GroupCommit;
use super::error::{IoContext, Result, StorageError};
use super::load::{list_offline_partitions, load_dir, read_dir_meta};
use super::log::PartitionLog;
use super::log_dir::LogDirState;

/// The controller quorum keeps its log in `<log.dir>/__cluster_metadata-0`, as KRaft does.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

#[derive(Debug)]
pub struct LogManager {
    log_dirs: Vec<PathBuf>,
    /// One per entry of `log_dirs`, in the same order.
    log_dir_states: Vec<Arc<LogDirState>>,
    cluster_id: String,
    default_config: LogConfig,
    now_ms: Mutex<i64>,
    logs: Mutex<HashMap<(String, i32), Arc<PartitionLog>>>,
    /// The high watermark last checkpointed for each log (read from
    /// `replication-offset-checkpoint` at start-up, updated by every
    /// [`LogManager::checkpoint_high_watermarks`]), so that the logs no replica has opened yet
    /// keep their entry.
    high_watermarks: Mutex<OffsetMap>,
    /// The partitions of offline dirs, with their dir: never created again in another dir,
    /// where they would start empty beside their data (Kafka's `getOrCreateLog` refuses a log
    /// that is not new while a dir is offline). Those of a dir offline from start-up are
    /// known only if the dir could still be listed.
    offline_partitions: Mutex<HashMap<(String, i32), PathBuf>>,
    /// Serialises checkpoint writes: the periodic task, topic deletion and shutdown may write
    /// the same file at once, and they share its temp file name.
    checkpoint_lock: Mutex<()>,
    /// Held while logs are created, so one partition is never opened twice at once (the
    /// map itself is not held over the file-system calls, so readers are not blocked).
    create_lock: Mutex<()>,
    /// Set when produce acknowledgements wait for fsync (`strata.log.durable.acks`).
    group_commit: std::sync::OnceLock<Arc<GroupCommit>>,
}

impl LogManager {
    /// Opens every log dir (creating it and its meta.properties if needed), then every
    /// partition in it; partitions of a dir without the clean-shutdown marker are recovered
    /// from their checkpointed recovery point.
    ///
    /// A dir whose loading meets an I/O error is offline from the start and the others open
    /// (Kafka's `LogManager.loadLogs`): none of its partitions is opened, and the replica
    /// manager's next `handle_log_dir_failures` pass reports it like a dir that failed later.
    /// Only when no dir is left does the start fail ([`StorageError::NoOnlineLogDir`], where
    /// Kafka halts). Errors that are not I/O (a `meta.properties` of another node or cluster,
    /// a corrupt file) still fail the start: they need an operator, not a failover.
    pub fn open(
        log_dirs: Vec<PathBuf>,
        node_id: i32,
        default_config: LogConfig,
        now_ms: i64,
    ) -> Result<Self> {
        if log_dirs.is_empty() {
            return Err(StorageError::InvalidArgument("no log dirs"));
        }
        let mut cluster_id: Option<String> = None;
        // Per dir: its meta.properties if it has one, or why the dir cannot be used.
        let mut metas: Vec<std::result::Result<Option<MetaProperties>, String>> =
            Vec::with_capacity(log_dirs.len());
        for dir in &log_dirs {
            let meta = match read_dir_meta(dir) {
                Ok(meta) => meta,
                Err(e @ StorageError::Io { .. }) => {
                    metas.push(Err(e.to_string()));
                    continue;
                }
                Err(e) => return Err(e),
            };
            if let Some(meta) = &meta {
                if meta.node_id != node_id {
                    return Err(StorageError::InconsistentMetaProperties(format!(
                        "{} has node.id {} but this node is {node_id}",
                        dir.display(),
                        meta.node_id
                    )));
                }
                match &cluster_id {
                    Some(c) if *c != meta.cluster_id => {
                        return Err(StorageError::InconsistentMetaProperties(format!(
                            "{} has cluster.id {} but another dir has {c}",
                            dir.display(),
                            meta.cluster_id
                        )))
                    }
                    _ => cluster_id = Some(meta.cluster_id.clone()),
                }
            }
            metas.push(Ok(meta));
        }
        let cluster_id = cluster_id.unwrap_or_else(|| Uuid::random().to_string());
        let mut logs = HashMap::new();
        let mut high_watermarks = OffsetMap::new();
        let mut log_dir_states = Vec::with_capacity(log_dirs.len());
        let mut offline_partitions = HashMap::new();
        for (dir, meta) in log_dirs.iter().zip(metas) {
            let meta = match meta {
                Ok(Some(meta)) => Ok(meta),
                Ok(None) => {
                    let meta = MetaProperties {
                        cluster_id: cluster_id.clone(),
                        node_id,
                        directory_id: Uuid::random(),
                    };
                    write_meta_properties(&dir.join(META_PROPERTIES), &meta)
                        .map(|()| meta)
                        .map_err(|e| e.to_string())
                }
                Err(reason) => Err(reason),
            };
            let state = match meta {
                Ok(meta) => Arc::new(LogDirState::new(dir.clone(), meta.directory_id)),
                Err(reason) => {
                    // The dir's id is unknown: it is reported by path only.
                    let state = Arc::new(LogDirState::new(dir.clone(), Uuid::ZERO));
                    state.mark_offline(&format!("failed at start-up: {reason}"));
                    log_dir_states.push(state);
                    list_offline_partitions(dir, &mut offline_partitions);
                    continue;
                }
            };
            log_dir_states.push(state.clone());
            match state.guard(|| load_dir(&state, &default_config, now_ms)) {
                Ok(loaded) => {
                    logs.extend(loaded.logs);
                    high_watermarks.extend(loaded.high_watermarks);
                }
                // `guard` took the dir offline; its logs opened so far are dropped.
                Err(StorageError::Io { .. }) => {
                    list_offline_partitions(dir, &mut offline_partitions)
                }
                Err(e) => return Err(e),
            }
        }
        if log_dir_states.iter().all(|d| d.is_offline()) {
            return Err(StorageError::NoOnlineLogDir);
        }
        let manager = LogManager {
            log_dirs,
            log_dir_states,
            cluster_id,
            default_config,
            now_ms: Mutex::new(now_ms),
            logs: Mutex::new(logs),
            high_watermarks: Mutex::new(high_watermarks),
            offline_partitions: Mutex::new(offline_partitions),
            checkpoint_lock: Mutex::new(()),
            create_lock: Mutex::new(()),
            group_commit: std::sync::OnceLock::new(),
        };
        // A dir whose checkpoint cannot be written is offline now; the others serve.
        if let Err(e) = manager.checkpoint() {
            tracing::warn!(error = %e, "checkpoint at start-up failed");
        }
        if manager.all_log_dirs_offline() {
            return Err(StorageError::NoOnlineLogDir);
        }
        Ok(manager)
    }

    pub fn cluster_id(&self) -> String {
        self.cluster_id.clone()
    }

    /// Every configured log dir, online or not.
    pub fn log_dirs(&self) -> Vec<PathBuf> {
        self.log_dirs.clone()
    }

    /// Every log dir with its `directory.id` and health.
    pub fn log_dir_states(&self) -> &[Arc<LogDirState>] {
        &self.log_dir_states
    }

    /// The log dirs an I/O error took offline.
    pub fn offline_log_dirs(&self) -> Vec<PathBuf> {
        self.log_dir_states
            .iter()
            .filter(|d| d.is_offline())
            .map(|d| d.path().to_path_buf())
            .collect()
    }

    /// The state of one log dir, by path.
    pub fn log_dir_state(&self, dir: &Path) -> Option<&Arc<LogDirState>> {
        self.log_dir_states.iter().find(|d| d.path() == dir)
    }

    /// True when no log dir is left online (Kafka halts the broker then).
    pub fn all_log_dirs_offline(&self) -> bool {
        self.log_dir_states.iter().all(|d| d.is_offline())
    }

    /// The offline dir holding a partition, if it is in one.
    pub fn offline_partition_dir(&self, topic: &str, partition: i32) -> Option<PathBuf> {
        self.offline_partitions
            .lock()
            .get(&(topic.to_string(), partition))
            .cloned()
    }

    /// Drops the logs of an offline dir (Kafka's `LogManager.handleLogDirFailure`): they are
    /// closed when their last holder lets go, and their keys are returned.
    pub fn handle_log_dir_failure(&self, dir: &Path) -> Vec<(String, i32)> {
        let mut logs = self.logs.lock();
        let gone: Vec<(String, i32)> = logs
            .iter()
            .filter(|(_, l)| l.log_dir().path() == dir)
            .map(|(k, _)| k.clone())
            .collect();
        let mut high_watermarks = self.high_watermarks.lock();
        let mut offline = self.offline_partitions.lock();
        for k in &gone {
            logs.remove(k);
            high_watermarks.remove(k);
            offline.insert(k.clone(), dir.to_path_buf());
        }
        gone
    }

    pub fn default_config(&self) -> LogConfig {
        self.default_config.clone()
    }

    /// Tells the manager the current time, used when it creates new logs.
    pub fn set_now_ms(&self, now_ms: i64) {
        *self.now_ms.lock() = now_ms;
    }

    /// The log of a partition, unless its dir is offline.
    pub fn get(&self, topic: &str, partition: i32) -> Option<Arc<PartitionLog>> {
        self.logs
            .lock()
            .get(&(topic.to_string(), partition))
            .filter(|l| !l.is_offline())
            .cloned()
    }

    /// The log of a partition, created in the log dir holding the fewest partitions if new.
    pub fn get_or_create(
        &self,
        topic: &str,
        partition: i32,
        config: LogConfig,
    ) -> Result<Arc<PartitionLog>> {
        self.get_or_create_in(topic, partition, config, None)
    }

    /// [`Self::get_or_create`], a new log going to the online dir with `directory_id`
    /// `preferred` if there is one (the dir the controller assigned it to, KIP-858; Kafka's
    /// `getOrCreateLog` with a target dir).
    pub fn get_or_create_in(
        &self,
        topic: &str,
        partition: i32,
        config: LogConfig,
        preferred: Option<Uuid>,
    ) -> Result<Arc<PartitionLog>> {
        if let Some(log) = self.get(topic, partition).filter(|l| !l.is_offline()) {
            return Ok(log);
        }
        let _creating = self.create_lock.lock();
        let state = {
            let logs = self.logs.lock();
            match self.existing_or_dir(&logs, topic, partition, preferred, None)? {
                Ok(log) => return Ok(log),
                Err(state) => state,
            }
        };
        let log = self.open_new(&state, topic, partition, config)?;
        self.logs
            .lock()
            .insert((topic.to_string(), partition), log.clone());
        Ok(log)
    }

    /// [`LogManager::get_or_create_in`] for many partitions, their directories and files made
    /// on up to `threads` threads (a 10,000-partition topic is mostly file-system calls that
    /// can overlap). One result per request, in order.
    pub fn get_or_create_many(
        &self,
        requests: Vec<(String, i32, LogConfig, Option<Uuid>)>,
        threads: usize,
    ) -> Vec<Result<Arc<PartitionLog>>> {
        let _creating = self.create_lock.lock();
        let mut results: Vec<Option<Result<Arc<PartitionLog>>>> = Vec::new();
        let mut to_open = Vec::new();
        {
            let logs = self.logs.lock();
            let mut counts = self.logs_per_dir(&logs);
            let mut seen = std::collections::HashSet::new();
            for (i, (topic, partition, config, preferred)) in requests.into_iter().enumerate() {
                if !seen.insert((topic.clone(), partition)) {
                    results.push(Some(Err(StorageError::InvalidArgument(
                        "partition requested twice",
                    ))));
                    continue;
                }
                match self.existing_or_dir(&logs, &topic, partition, preferred, Some(&mut counts)) {
                    Ok(Ok(log)) => results.push(Some(Ok(log))),
                    Ok(Err(state)) => {
                        results.push(None);
                        to_open.push((i, state, topic, partition, config));
                    }
                    Err(e) => results.push(Some(Err(e))),
                }
            }
        }
        let threads = threads.clamp(1, to_open.len().max(1));
        let chunk = to_open.len().div_ceil(threads).max(1);
        let opened: Vec<(usize, Result<Arc<PartitionLog>>)> = std::thread::scope(|scope| {
            let workers: Vec<_> = to_open
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        part.iter()
                            .map(|(i, state, topic, partition, config)| {
                                (*i, self.open_new(state, topic, *partition, config.clone()))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("log creation thread panicked"))
                .collect()
        });
        let mut logs = self.logs.lock();
        for (i, result) in opened {
            if let Ok(log) = &result {
                logs.insert(log.topic_partition(), log.clone());
            }
            results[i] = Some(result);
        }
        results
            .into_iter()
            .map(|r| r.expect("every request answered"))
            .collect()
    }

    /// The open log of a partition (`Ok(Ok)`), or the dir a new one goes to (`Ok(Err)`):
    /// `preferred` when it is online, the only dir, or the one with the fewest logs.
    /// `counts` carries the logs per dir across a batch, each new log counted at once.
    #[allow(clippy::type_complexity)]
    fn existing_or_dir(
        &self,
        logs: &HashMap<(String, i32), Arc<PartitionLog>>,
        topic: &str,
        partition: i32,
        preferred: Option<Uuid>,
        counts: Option<&mut Vec<usize>>,
    ) -> Result<std::result::Result<Arc<PartitionLog>, Arc<LogDirState>>> {
        if topic.is_empty() || topic.contains('/') || topic == "." || topic == ".." || partition < 0
        {
            return Err(StorageError::InvalidArgument("invalid topic or partition"));
        }
        if let Some(dir) = self
            .offline_partitions
            .lock()
            .get(&(topic.to_string(), partition))
        {
            return Err(StorageError::LogDirOffline {
                log_dir: dir.clone(),
            });
        }
        if let Some(log) = logs.get(&(topic.to_string(), partition)) {
            // A partition of an offline dir is not recreated elsewhere: its data is there.
            if log.is_offline() {
                return Err(log.log_dir().offline_error());
            }
            return Ok(Ok(log.clone()));
        }
        let target = preferred.and_then(|id| {
            self.log_dir_states
                .iter()
                .position(|d| !d.is_offline() && d.directory_id() == id)
        });
        let index = if let Some(target) = target {
            target
        } else if self.log_dir_states.len() == 1 {
            Some(0)
                .filter(|_| !self.log_dir_states[0].is_offline())
                .ok_or(StorageError::NoOnlineLogDir)?
        } else {
            // One pass over the open logs per batch, and none with a single log dir:
            // creating thousands of partitions must not be quadratic.
            let mut own;
            let counts = match counts {
                Some(c) => c,
                None => {
                    own = self.logs_per_dir(logs);
                    &mut own
                }
            };
            let least = (0..counts.len())
                .filter(|&i| !self.log_dir_states[i].is_offline())
                .min_by_key(|&i| counts[i])
                .ok_or(StorageError::NoOnlineLogDir)?;
            counts[least] += 1;
            least
        };
        Ok(Err(self.log_dir_states[index].clone()))
    }

    /// The open logs per entry of `log_dir_states` (empty with a single dir: not needed).
    fn logs_per_dir(&self, logs: &HashMap<(String, i32), Arc<PartitionLog>>) -> Vec<usize> {
        let mut counts = vec![0usize; self.log_dir_states.len()];
        if counts.len() > 1 {
            for l in logs.values() {
                if let Some(i) = self
                    .log_dir_states
                    .iter()
                    .position(|d| Arc::ptr_eq(d, l.log_dir()))
                {
                    counts[i] += 1;
                }
            }
        }
        counts
    }

    /// Makes (or opens, if its directory is already there) one partition's log in `state`.
    fn open_new(
        &self,
        state: &Arc<LogDirState>,
        topic: &str,
        partition: i32,
        config: LogConfig,
    ) -> Result<Arc<PartitionLog>> {
        let path = state.path().join(format!("{topic}-{partition}"));
        let now_ms = *self.now_ms.lock();
        Ok(Arc::new(
            state
                .guard(|| PartitionLog::open(path, config, 0, true, now_ms))?
                .in_log_dir(state.clone()),
        ))
    }

    /// Every open log of an online dir.
    pub fn all(&self) -> Vec<Arc<PartitionLog>> {
        self.logs
            .lock()
            .values()
            .filter(|l| !l.is_offline())
            .cloned()
            .collect()
    }

    /// Removes a partition's log and its directory.
    pub fn delete_partition(&self, topic: &str, partition: i32) -> Result<()> {
        let key = (topic.to_string(), partition);
        // A deleted topic may be created again, in an online dir.
        self.offline_partitions.lock().remove(&key);
        let Some(log) = self.logs.lock().remove(&key) else {
            return Ok(());
        };
        // A partition created again under the same name starts without a high watermark.
        self.high_watermarks.lock().remove(&key);
        let dir = log.dir().to_path_buf();
        let state = log.log_dir().clone();
        drop(log);
        // Other holders of the Arc may still read; removing the directory is safe on Unix.
        state.guard(|| std::fs::remove_dir_all(&dir).ctx("remove partition dir", &dir))?;
        self.checkpoint()
    }

    /// Writes recovery-point-offset-checkpoint and log-start-offset-checkpoint in every dir.
    pub fn checkpoint(&self) -> Result<()> {
        let _serial = self.checkpoint_lock.lock();
        let logs = self.all();
        let mut first_error = None;
        for state in self.online_log_dirs() {
            let dir = state.path();
            let mut recovery = OffsetMap::new();
            let mut starts = OffsetMap::new();
            for log in logs.iter().filter(|l| Arc::ptr_eq(l.log_dir(), &state)) {
                let tp = log.topic_partition();
                recovery.insert(tp.clone(), log.recovery_point());
                starts.insert(tp, log.log_start_offset());
            }
            // A dir whose checkpoint cannot be written goes offline; the others still get
            // theirs (Kafka's `checkpointLogRecoveryOffsetsInDir`).
            let written = state.guard(|| {
                write_offset_checkpoint(&dir.join(RECOVERY_POINT_CHECKPOINT), &recovery)?;
                write_offset_checkpoint(&dir.join(LOG_START_OFFSET_CHECKPOINT), &starts)
            });
            if let Err(e) = written {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The high watermark checkpointed for a partition (`replication-offset-checkpoint`), if
    /// any: where its replica starts (Kafka's `Partition.createLog`).
    pub fn checkpointed_high_watermark(&self, topic: &str, partition: i32) -> Option<i64> {
        self.high_watermarks
            .lock()
            .get(&(topic.to_string(), partition))
            .copied()
    }

    /// Writes `replication-offset-checkpoint` in every online dir (Kafka's
    /// `ReplicaManager.checkpointHighWatermarks`): `current` holds the high watermarks of the
    /// open replicas; a log without one keeps the value checkpointed before. A dir whose file
    /// cannot be written goes offline; the others still get theirs.
    pub fn checkpoint_high_watermarks(&self, current: &OffsetMap) -> Result<()> {
        let _serial = self.checkpoint_lock.lock();
        let logs = self.all();
        let mut known = self.high_watermarks.lock();
        let mut first_error = None;
        for state in self.online_log_dirs() {
            let mut offsets = OffsetMap::new();
            for log in logs.iter().filter(|l| Arc::ptr_eq(l.log_dir(), &state)) {
                let tp = log.topic_partition();
                if let Some(&hw) = current.get(&tp).or_else(|| known.get(&tp)) {
                    known.insert(tp.clone(), hw);
                    offsets.insert(tp, hw);
                }
            }
            let path = state.path().join(REPLICATION_OFFSET_CHECKPOINT);
            if let Err(e) = state.guard(|| write_offset_checkpoint(&path, &offsets)) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Cleans every compacted log that is due (Kafka's `LogCleaner` loop, one pass): dirty
    /// ratio >= `min.cleanable.dirty.ratio`, `max.compaction.lag.ms` passed, or a kept
    /// tombstone's delete horizon passed; filthiest first. Everything below the log end offset
    /// counts as stable; see [`LogManager::clean_all_with`]. Blocking.
    pub fn clean_all(&self, now_ms: i64) -> Result<Vec<((String, i32), CleanStats)>> {
        let config = CleanerConfig::default();
        let mut throttler = Throttler::new(config.io_max_bytes_per_second);
        self.clean_all_with(now_ms, &config, &mut throttler, &|log| log.log_end_offset())
    }

    /// As [`LogManager::clean_all`], with the cleaner's settings, its I/O throttler (kept by
    /// the caller across passes, so `log.cleaner.io.max.bytes.per.second` spans them) and each
    /// log's last stable offset (the broker passes min(high watermark, first unstable
    /// offset)). A log whose clean fails is logged and skipped; the others are still cleaned.
    /// Writes `cleaner-offset-checkpoint` in every dir afterwards.
    pub fn clean_all_with(
        &self,
        now_ms: i64,
        cleaner: &CleanerConfig,
        throttler: &mut Throttler,
        last_stable_offset: &dyn Fn(&PartitionLog) -> i64,
    ) -> Result<Vec<((String, i32), CleanStats)>> {
        let mut due: Vec<(f64, Arc<PartitionLog>)> = Vec::new();
        for log in self.all() {
            let config = log.config();
            if !config.compact {
                continue;
            }
            let info = log.cleanable_info(now_ms, last_stable_offset(&log));
            if info.needs_cleaning(&config) {
                due.push((info.dirty_ratio(), log));
            }
        }
        due.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut out = Vec::new();
        for (_, log) in due {
            match log.clean_throttled(now_ms, last_stable_offset(&log), cleaner, throttler) {
                Ok(stats) => out.push((log.topic_partition(), stats)),
                Err(e) => {
                    let (topic, partition) = log.topic_partition();
                    tracing::warn!(%topic, partition, error = %e, "log cleaning failed");
                }
            }
        }
        self.checkpoint_cleaner_offsets()?;
        Ok(out)
    }

    /// Writes `cleaner-offset-checkpoint` (first dirty offset per compacted log) in every dir.
    pub fn checkpoint_cleaner_offsets(&self) -> Result<()> {
        let _serial = self.checkpoint_lock.lock();
        let logs = self.all();
        let mut first_error = None;
        for state in self.online_log_dirs() {
            let mut offsets = OffsetMap::new();
            for log in logs.iter().filter(|l| Arc::ptr_eq(l.log_dir(), &state)) {
                if let Some(offset) = log.cleaner_checkpoint() {
                    offsets.insert(log.topic_partition(), offset);
                }
            }
            let path = state.path().join(CLEANER_OFFSET_CHECKPOINT);
            if let Err(e) = state.guard(|| write_offset_checkpoint(&path, &offsets)) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Closes every log, checkpoints, and writes the clean-shutdown marker in every online
    /// dir. An offline dir gets no marker: its logs are recovered at the next start.
    pub fn shutdown(&self) -> Result<()> {
        if let Some(g) = self.group_commit.get() {
            g.stop();
        }
        for log in self.all() {
            log.close()?;
        }
        self.checkpoint()?;
        self.checkpoint_cleaner_offsets()?;
        for state in self.online_log_dirs() {
            state.guard(|| write_clean_shutdown_marker(state.path()))?;
        }
        Ok(())
    }

    /// Starts the group commit (durable acknowledgements); idempotent.
    pub fn enable_group_commit(&self) -> &Arc<GroupCommit> {
        self.group_commit.get_or_init(GroupCommit::start)
    }

    /// The group commit, when acknowledgements wait for fsync.
    pub fn group_commit(&self) -> Option<&Arc<GroupCommit>> {
        self.group_commit.get()
    }

    fn online_log_dirs(&self) -> Vec<Arc<LogDirState>> {
        self.log_dir_states
            .iter()
            .filter(|d| !d.is_offline())
            .cloned()
            .collect()
    }
}

fn write_clean_shutdown_marker(dir: &Path) -> Result<()> {
    write_atomic(&dir.join(CLEAN_SHUTDOWN_MARKER), b"")
}
