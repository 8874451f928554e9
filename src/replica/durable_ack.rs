//! Durable acknowledgements on the replica side (`strata.log.durable.acks`): a write is
//! acknowledged only once its partition's log is fsynced past it, through the storage's group
//! commit. The fsync's completion wakes the partition's waiters (`wait.rs`), so a produce or a
//! coordinator write waits for it exactly as it waits for the high watermark. Followers sync
//! what they fetched before they fetch again (`cluster::replica_fetcher`), so the offset they
//! report to the leader, and with it the high watermark, only covers fsynced records.

use std::sync::{Arc, OnceLock};

use crate::storage::durable::SyncFailed;
use crate::storage::LogManager;

use super::partition::{Partition, PartitionError};

/// One write's pending fsync.
#[derive(Debug, Default)]
pub struct DurableAck {
    outcome: OnceLock<Result<(), SyncFailed>>,
}

impl DurableAck {
    /// Asks the group commit to make `partition` durable below `offset`; None when durable
    /// acknowledgements are off (nothing to wait for).
    pub fn request(
        logs: &LogManager,
        partition: &Arc<Partition>,
        offset: i64,
    ) -> Option<Arc<DurableAck>> {
        let group_commit = logs.group_commit()?;
        let ack = Arc::new(DurableAck::default());
        let (done, woken) = (ack.clone(), partition.clone());
        group_commit.sync(
            partition.log.clone(),
            offset,
            Box::new(move |r| {
                let _ = done.outcome.set(r);
                woken.wake_waiters();
            }),
        );
        Some(ack)
    }

    /// None while the fsync is pending. A failed fsync took the log dir offline: the write is
    /// answered KAFKA_STORAGE_ERROR; a group commit stopped by shutdown, NOT_LEADER_OR_FOLLOWER
    /// (the client retries on the next leader).
    pub fn outcome(&self, partition: &Partition) -> Option<Result<(), PartitionError>> {
        match self.outcome.get()? {
            Ok(()) => Some(Ok(())),
            Err(_) if partition.log.is_offline() => Some(Err(PartitionError::Storage(
                partition.log.log_dir().offline_error(),
            ))),
            Err(_) => Some(Err(PartitionError::NotLeaderOrFollower)),
        }
    }
}

/// An acknowledgement's outcome: that of `durable`'s fsync while it is pending or failed, then
/// `then`'s (the high watermark check of acks=all, or nothing more for acks=1).
pub fn after_durable(
    durable: Option<&DurableAck>,
    partition: &Partition,
    then: impl FnOnce() -> Option<Result<(), PartitionError>>,
) -> Option<Result<(), PartitionError>> {
    if let Some(d) = durable {
        if let Err(e) = d.outcome(partition)? {
            return Some(Err(e));
        }
    }
    then()
}
