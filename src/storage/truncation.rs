//! Truncation of a partition's log, as Kafka's `UnifiedLog.truncateTo` and
//! `truncateFullyAndStartAt`: a follower drops what diverges from its leader (KIP-101 epochs),
//! and a replica too far behind the leader's log start starts over empty. Either way the
//! leader epoch cache, the producer snapshots and the cleaner's checkpoint forget what went.
use super::error::{Result, StorageError};
use super::log::{delete_files_now, PartitionLog};
use super::producer_snapshot::delete_snapshots_where;
use super::segment::LogSegment;

impl PartitionLog {
    /// Drops everything at and after `offset` (the batch holding it goes whole); the log end
    /// offset becomes `offset`, as in Kafka's `truncateTo`.
    pub fn truncate_to(&self, offset: i64) -> Result<()> {
        self.log_dir.guard(|| {
            if offset < 0 {
                return Err(StorageError::InvalidArgument("negative truncation offset"));
            }
            let mut inner = self.inner.write();
            if offset >= inner.log_end_offset {
                return Ok(());
            }
            if offset < inner.log_start_offset {
                drop(inner);
                return self.truncate_fully_and_start_at(offset);
            }
            let doomed: Vec<i64> = inner
                .segments
                .range(offset + 1..)
                .map(|(b, _)| *b)
                .collect();
            for base in doomed {
                if inner.segments.len() == 1 {
                    break;
                }
                if let Some(seg) = inner.segments.remove(&base) {
                    delete_files_now(seg.mark_deleted()?);
                }
            }
            let interval = inner.config.index_interval_bytes;
            let index_bytes = inner.config.segment_index_bytes;
            let active = inner.active_mut();
            active.truncate_to(offset, interval)?;
            active.preallocate_indexes(index_bytes)?;
            inner.log_end_offset = offset;
            inner.recovery_point = inner.recovery_point.min(offset);
            inner.durable.offset = inner.durable.offset.min(offset);
            // The active segment's file was cut back: blocks past the cut are gone.
            inner.durable.allocation_synced = 0;
            inner.truncations += 1;
            inner.epochs.truncate_from_end(offset)?;
            // Producer state after the truncation point no longer describes the log.
            delete_snapshots_where(&inner.dir, |o| o > offset)?;
            self.cleaner.on_truncate(offset);
            Ok(())
        })
    }

    /// Deletes every segment and starts an empty log at `offset` (log start = log end = offset).
    pub fn truncate_fully_and_start_at(&self, offset: i64) -> Result<()> {
        self.log_dir.guard(|| {
            if offset < 0 {
                return Err(StorageError::InvalidArgument("negative start offset"));
            }
            let mut inner = self.inner.write();
            let bases: Vec<i64> = inner.segments.keys().copied().collect();
            let mut new = LogSegment::open(&inner.dir, offset, inner.active().created_ms())?;
            for base in bases {
                if base == offset {
                    continue;
                }
                if let Some(seg) = inner.segments.remove(&base) {
                    delete_files_now(seg.mark_deleted()?);
                }
            }
            if let Some(old) = inner.segments.remove(&offset) {
                drop(old);
            }
            new.recover(inner.config.index_interval_bytes)?;
            new.truncate_to(offset, inner.config.index_interval_bytes)?;
            new.preallocate_indexes(inner.config.segment_index_bytes)?;
            if inner.config.preallocate {
                new.preallocate_log(inner.config.segment_bytes)?;
            }
            inner.segments.insert(offset, new);
            inner.log_start_offset = offset;
            inner.log_end_offset = offset;
            inner.recovery_point = offset;
            inner.durable.offset = offset;
            inner.durable.allocation_synced = 0;
            inner.truncations += 1;
            inner.epochs.clear()?;
            delete_snapshots_where(&inner.dir, |_| true)?;
            self.cleaner.on_truncate(offset);
            Ok(())
        })
    }
}
