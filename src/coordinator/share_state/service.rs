//! [`ShareStateCoordinator`]: the `__share_group_state` partitions this broker leads, and the
//! operations of the state RPCs on them. Each operation runs under its partition's lock:
//! records are computed, appended through the [`CoordinatorLog`] and only then replayed, so
//! a failed append changes nothing.
use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::shard::ShareStateShard;
use super::{coordinator_key, SharePartitionKey, ShareStateConfig, ShareStateError};
use crate::clock::SharedClock;
use crate::coordinator::runtime::{CoordinatorLog, CoordinatorRecord};
use crate::replica::share_persister::{PersistedState, StateSummary, StateWrite};

pub struct ShareStateCoordinator {
    config: ShareStateConfig,
    clock: SharedClock,
    log: Arc<dyn CoordinatorLog>,
    shards: Mutex<HashMap<i32, Arc<Mutex<ShareStateShard>>>>,
}

impl std::fmt::Debug for ShareStateCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShareStateCoordinator")
            .field("partitions", &self.shards.lock().len())
            .finish()
    }
}

impl ShareStateCoordinator {
    pub fn new(config: ShareStateConfig, clock: SharedClock, log: Arc<dyn CoordinatorLog>) -> Self {
        ShareStateCoordinator {
            config,
            clock,
            log,
            shards: Mutex::new(HashMap::new()),
        }
    }

    pub fn num_partitions(&self) -> i32 {
        self.config.num_partitions.max(1)
    }

    /// The `__share_group_state` partition of a share partition (Kafka's
    /// `ShareCoordinatorService.partitionFor`).
    pub fn partition_for(&self, key: &SharePartitionKey) -> i32 {
        crate::coordinator::partition_for(&coordinator_key(key), self.num_partitions())
    }

    /// Becomes the share coordinator of `partition`, replaying its records (with their
    /// offsets) in order.
    pub fn load(
        &self,
        partition: i32,
        records: impl IntoIterator<Item = (i64, CoordinatorRecord)>,
    ) {
        let mut shard = ShareStateShard::new();
        for (offset, r) in records {
            shard.replay(offset, &r);
        }
        tracing::info!(
            partition,
            share_partitions = shard.len(),
            "share coordinator loaded a partition"
        );
        self.shards
            .lock()
            .insert(partition, Arc::new(Mutex::new(shard)));
    }

    pub fn unload(&self, partition: i32) {
        self.shards.lock().remove(&partition);
    }

    pub fn is_loaded(&self, partition: i32) -> bool {
        self.shards.lock().contains_key(&partition)
    }

    fn shard(
        &self,
        key: &SharePartitionKey,
    ) -> Result<(i32, Arc<Mutex<ShareStateShard>>), ShareStateError> {
        let partition = self.partition_for(key);
        self.shards
            .lock()
            .get(&partition)
            .cloned()
            .map(|s| (partition, s))
            .ok_or(ShareStateError::NotCoordinator)
    }

    /// Appends `records` to `partition` and replays them at the offsets they got.
    fn commit(
        &self,
        partition: i32,
        shard: &mut ShareStateShard,
        records: Vec<CoordinatorRecord>,
    ) -> Result<(), ShareStateError> {
        if records.is_empty() {
            return Ok(());
        }
        let base = self.log.end_offset(partition);
        self.log
            .append(partition, records.clone())
            .map_err(ShareStateError::Log)?;
        for (i, r) in records.iter().enumerate() {
            shard.replay(base + i as i64, r);
        }
        Ok(())
    }

    pub fn initialize(
        &self,
        key: &SharePartitionKey,
        state_epoch: i32,
        start_offset: i64,
    ) -> Result<(), ShareStateError> {
        let (partition, shard) = self.shard(key)?;
        let mut shard = shard.lock();
        let records = shard.initialize(key, state_epoch, start_offset, self.clock.now_ms())?;
        self.commit(partition, &mut shard, records)
    }

    /// The state, or `None` when the share partition was never initialized.
    pub fn read(
        &self,
        key: &SharePartitionKey,
        leader_epoch: i32,
    ) -> Result<Option<PersistedState>, ShareStateError> {
        let (partition, shard) = self.shard(key)?;
        let mut shard = shard.lock();
        match shard.read(key, leader_epoch) {
            Ok((state, records)) => {
                self.commit(partition, &mut shard, records)?;
                Ok(Some(state))
            }
            Err(ShareStateError::Uninitialized(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn read_summary(
        &self,
        key: &SharePartitionKey,
    ) -> Result<Option<StateSummary>, ShareStateError> {
        let (_, shard) = self.shard(key)?;
        let shard = shard.lock();
        match shard.read_summary(key) {
            Ok(s) => Ok(Some(s)),
            Err(ShareStateError::Uninitialized(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn write(&self, write: &StateWrite) -> Result<(), ShareStateError> {
        let (partition, shard) = self.shard(&write.key)?;
        let mut shard = shard.lock();
        let records = shard.write(
            write,
            self.config.updates_per_snapshot.max(0),
            self.clock.now_ms(),
        )?;
        self.commit(partition, &mut shard, records)
    }

    /// Deletes the state of `keys` (all of one coordinator partition or not).
    pub fn delete(&self, keys: &[SharePartitionKey]) -> Result<(), ShareStateError> {
        for key in keys {
            let (partition, shard) = self.shard(key)?;
            let mut shard = shard.lock();
            let records = shard.delete(std::slice::from_ref(key));
            self.commit(partition, &mut shard, records)?;
        }
        Ok(())
    }

    /// For each loaded partition, the offset below which its log is redundant (pruned by the
    /// broker with DeleteRecords semantics).
    pub fn redundant_offsets(&self) -> Vec<(i32, i64)> {
        let shards: Vec<(i32, Arc<Mutex<ShareStateShard>>)> = self
            .shards
            .lock()
            .iter()
            .map(|(p, s)| (*p, s.clone()))
            .collect();
        shards
            .into_iter()
            .map(|(p, s)| (p, s.lock().redundant_offset(self.log.end_offset(p))))
            .collect()
    }
}
