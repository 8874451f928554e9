//! What the broker does once a log dir goes offline (Kafka's
//! `ReplicaManager.handleLogDirFailure`, KIP-858): every replica in the dir stops (its fetch
//! session entry goes, its in-memory state is dropped) and answers KAFKA_STORAGE_ERROR from
//! then on; the dir is reported to whoever tells the controller (the heartbeat's
//! `offline_log_dirs`), and when no dir is left online the broker must stop.
//!
//! Storage marks the dir offline at the failing operation itself (so the failed append is not
//! acknowledged); this module does the slower clean-up, run by the broker's background task
//! much as Kafka's `LogDirFailureHandler` thread does.
use std::path::PathBuf;
use std::sync::Arc;

use super::manager::{remove_from_sessions, ReplicaManager};
use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;

/// What one [`ReplicaManager::handle_log_dir_failures`] pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogDirFailures {
    /// Dirs handled by this pass, with their `directory_id`.
    pub newly_offline: Vec<(PathBuf, Uuid)>,
    /// The partitions this pass took offline.
    pub offline_partitions: Vec<(String, i32)>,
    /// No log dir is left online: Kafka halts the broker.
    pub all_offline: bool,
}

impl ReplicaManager {
    /// Stops the replicas of every log dir that went offline since the last pass.
    pub fn handle_log_dir_failures(&self) -> LogDirFailures {
        let mut out = LogDirFailures::default();
        let mut handled = self.handled_offline_dirs.lock();
        for state in self.logs().log_dir_states() {
            if !state.is_offline() || handled.contains(state.path()) {
                continue;
            }
            let dir = state.path().to_path_buf();
            handled.insert(dir.clone());
            let keys: Vec<(String, i32)> = self
                .partitions
                .iter()
                .filter(|e| Arc::ptr_eq(e.value().log.log_dir(), state))
                .map(|e| e.key().clone())
                .collect();
            {
                let mut fetchers = self.fetchers.lock();
                for key in &keys {
                    remove_from_sessions(&mut fetchers, key);
                }
            }
            for key in &keys {
                if let Some((_, p)) = self.partitions.remove(key) {
                    // Waiting acks=all produces and fetches re-check and see the storage
                    // error.
                    p.wake_waiters();
                }
                self.offline_partitions.insert(key.clone(), dir.clone());
            }
            self.logs().handle_log_dir_failure(&dir);
            tracing::error!(
                log_dir = %dir.display(),
                partitions = keys.len(),
                reason = state.offline_reason().unwrap_or_default(),
                "stopped the replicas of an offline log dir"
            );
            out.newly_offline.push((dir, state.directory_id()));
            out.offline_partitions.extend(keys);
        }
        drop(handled);
        if !out.newly_offline.is_empty() {
            self.notify_replica_changes();
        }
        out.all_offline = self.logs().all_log_dirs_offline();
        out
    }

    /// The error for a partition [`ReplicaManager::get`] did not return: KAFKA_STORAGE_ERROR
    /// if its log dir is offline, else UNKNOWN_TOPIC_OR_PARTITION.
    pub fn missing_partition_code(&self, topic: &str, partition: i32) -> ErrorCode {
        if self.is_partition_offline(topic, partition) {
            ErrorCode::KAFKA_STORAGE_ERROR
        } else {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        }
    }

    /// True if the partition's replica here sits in an offline log dir.
    pub fn is_partition_offline(&self, topic: &str, partition: i32) -> bool {
        let key = (topic.to_string(), partition);
        self.offline_partitions.contains_key(&key)
            || self
                .logs()
                .offline_partition_dir(topic, partition)
                .is_some()
            || self
                .partitions
                .get(&key)
                .is_some_and(|p| p.log.is_offline())
    }

    /// Keeps a replica the controller assigned to `dir` offline instead of creating it, when
    /// no log of it is open, `dir` is not an online dir here and some dir here is offline: its
    /// data may be in that dir, and a fresh copy elsewhere would lose it (Kafka's
    /// `Partition.createLogInAssignedDirectoryId`). An unassigned replica, or one assigned to a
    /// dir this broker no longer has while all its dirs are healthy (a replaced disk), is
    /// created. Returns whether it is held offline.
    pub fn hold_offline_if_dir_unavailable(&self, topic: &str, partition: i32, dir: Uuid) -> bool {
        if dir == Uuid::ZERO
            || self.get(topic, partition).is_some()
            || self.logs().get(topic, partition).is_some()
        {
            return false;
        }
        let states = self.logs().log_dir_states();
        let online_here = states
            .iter()
            .any(|d| !d.is_offline() && d.directory_id() == dir);
        if online_here || !states.iter().any(|d| d.is_offline()) {
            return false;
        }
        let key = (topic.to_string(), partition);
        if !self.offline_partitions.contains_key(&key) {
            let path = states
                .iter()
                .find(|d| d.directory_id() == dir)
                .map(|d| d.path().to_path_buf())
                .unwrap_or_else(|| PathBuf::from(format!("<log dir {dir}>")));
            tracing::error!(%topic, partition, log_dir = %path.display(), "replica assigned to an unavailable log dir stays offline");
            self.offline_partitions.insert(key, path);
        }
        true
    }

    /// The `directory_id` of the log dir holding this broker's replica of a partition, open
    /// or offline, if known (what AssignReplicasToDirs reports, KIP-858).
    pub fn replica_directory(&self, topic: &str, partition: i32) -> Option<Uuid> {
        let key = (topic.to_string(), partition);
        let id = if let Some(p) = self.partitions.get(&key) {
            p.log.log_dir().directory_id()
        } else {
            let path = match self.offline_partitions.get(&key) {
                Some(p) => p.clone(),
                None => self.logs().offline_partition_dir(topic, partition)?,
            };
            self.logs()
                .log_dir_states()
                .iter()
                .find(|d| d.path() == path.as_path())?
                .directory_id()
        };
        // A dir that failed before its meta.properties was read has no known id.
        (id != Uuid::ZERO).then_some(id)
    }

    /// The `directory_id`s of the offline log dirs (BrokerHeartbeat v1 `OfflineLogDirs`).
    pub fn offline_directory_ids(&self) -> Vec<Uuid> {
        self.logs()
            .log_dir_states()
            .iter()
            .filter(|d| d.is_offline())
            .map(|d| d.directory_id())
            // A dir that failed before its meta.properties was read has no known id.
            .filter(|id| *id != Uuid::ZERO)
            .collect()
    }
}
