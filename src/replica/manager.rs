//! All partitions this broker leads, and the wake-ups of delayed fetches (Kafka's
//! ReplicaManager and DelayedFetch purgatory, in a simpler form: one watch counter that every
//! append bumps, which waiting fetches re-check).
use std::sync::Arc;

use dashmap::DashMap;
use tokio::sync::watch;

use super::partition::{Partition, PartitionConfig, PartitionError};
use crate::protocol::codec::Uuid;
use crate::storage::{LogManager, StorageError};

pub struct ReplicaManager {
    logs: Arc<LogManager>,
    partitions: DashMap<(String, i32), Arc<Partition>>,
    appended: watch::Sender<u64>,
}

impl ReplicaManager {
    pub fn new(logs: Arc<LogManager>) -> Self {
        let (appended, _) = watch::channel(0);
        ReplicaManager {
            logs,
            partitions: DashMap::new(),
            appended,
        }
    }

    pub fn logs(&self) -> &Arc<LogManager> {
        &self.logs
    }

    pub fn get(&self, topic: &str, partition: i32) -> Option<Arc<Partition>> {
        self.partitions
            .get(&(topic.to_string(), partition))
            .map(|p| p.clone())
    }

    /// Opens (or creates) the log of a partition and makes this broker its leader.
    pub fn make_leader(
        &self,
        topic: &str,
        index: i32,
        topic_id: Uuid,
        config: PartitionConfig,
    ) -> Result<Arc<Partition>, PartitionError> {
        if let Some(p) = self.get(topic, index) {
            return Ok(p);
        }
        let log = self.logs.get_or_create(topic, index, config.log.clone())?;
        if log.topic_id() != Some(topic_id) {
            log.set_topic_id(topic_id)?;
        }
        let p = Arc::new(Partition::new(topic, index, topic_id, log, config)?);
        let entry = self
            .partitions
            .entry((topic.to_string(), index))
            .or_insert(p);
        Ok(entry.clone())
    }

    /// Removes a partition and deletes its data (topic deletion).
    pub fn delete(&self, topic: &str, index: i32) -> Result<(), StorageError> {
        self.partitions.remove(&(topic.to_string(), index));
        self.logs.delete_partition(topic, index)
    }

    pub fn all(&self) -> Vec<Arc<Partition>> {
        self.partitions.iter().map(|e| e.value().clone()).collect()
    }

    /// Tells waiting fetches that data arrived.
    pub fn notify_appended(&self) {
        self.appended.send_modify(|v| *v = v.wrapping_add(1));
    }

    pub fn subscribe_appends(&self) -> watch::Receiver<u64> {
        self.appended.subscribe()
    }
}
