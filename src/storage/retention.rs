//! Deleting old data from a partition log: time and size retention (Kafka's
//! `deleteRetentionMsBreachedSegments` / `deleteRetentionSizeBreachedSegments`), DeleteRecords
//! (`deleteLogStartOffsetBreachedSegments`), the segment.ms roll of an idle active segment, and
//! the delayed removal of `.deleted` files. Only whole non-active segments are ever deleted.

use super::error::{Result, StorageError};
use super::log::{delete_files_now, Inner, PartitionLog};

impl Inner {
    /// Removes the non-active segment at `base`: renamed to `.deleted` now, removed once
    /// file_delete_delay_ms has passed (or at once when `now_ms` is unknown).
    fn delete_segment(&mut self, base: i64, now_ms: Option<i64>) -> Result<()> {
        if self.segments.len() <= 1 {
            return Ok(());
        }
        let Some(seg) = self.segments.remove(&base) else {
            return Ok(());
        };
        let paths = seg.mark_deleted()?;
        match now_ms {
            Some(now) if self.config.file_delete_delay_ms > 0 => self
                .pending_deletes
                .push((now.saturating_add(self.config.file_delete_delay_ms), paths)),
            _ => delete_files_now(paths),
        }
        Ok(())
    }

    /// Moves the log start offset up to the first remaining segment if deletion passed it.
    fn after_segment_deletion(&mut self) -> Result<()> {
        if let Some(first) = self.segments.keys().next().copied() {
            if first > self.log_start_offset {
                self.log_start_offset = first;
                self.epochs.truncate_from_start(first)?;
            }
        }
        Ok(())
    }

    fn non_active_bases(&self) -> Vec<i64> {
        let n = self.segments.len().saturating_sub(1);
        self.segments.keys().take(n).copied().collect()
    }
}

impl PartitionLog {
    /// DeleteRecords: moves the log start offset to `offset` (never past the log end offset)
    /// and deletes the segments that lie entirely below it. Returns the new log start offset.
    pub fn delete_records_before(&self, offset: i64) -> Result<i64> {
        self.log_dir.guard(|| {
            let mut inner = self.inner.write();
            if offset < 0 || offset > inner.log_end_offset {
                return Err(StorageError::OffsetOutOfRange {
                    offset,
                    log_start_offset: inner.log_start_offset,
                    log_end_offset: inner.log_end_offset,
                });
            }
            if offset <= inner.log_start_offset {
                return Ok(inner.log_start_offset);
            }
            inner.log_start_offset = offset;
            inner.epochs.truncate_from_start(offset)?;
            // A segment is below the start offset when the next segment begins at or before it.
            let bases: Vec<i64> = inner.segments.keys().copied().collect();
            for pair in bases.windows(2) {
                if pair[1] <= offset {
                    inner.delete_segment(pair[0], None)?;
                } else {
                    break;
                }
            }
            Ok(inner.log_start_offset)
        })
    }

    /// Applies segment.ms (rolls a non-empty active segment that is old enough), retention_ms
    /// and retention_bytes, and removes `.deleted` files that are due. Returns the number of
    /// segments deleted.
    pub fn apply_retention(&self, now_ms: i64) -> Result<usize> {
        self.log_dir.guard(|| {
            let mut inner = self.inner.write();
            let due: Vec<_> = {
                let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut inner.pending_deletes)
                    .into_iter()
                    .partition(|(at, _)| *at <= now_ms);
                inner.pending_deletes = keep;
                due
            };
            // The delayed deletes include the segments the cleaner replaced.
            for (_, paths) in due {
                self.log_dir.delete_files(paths);
            }

            let active = inner.active();
            if !active.is_empty()
                && now_ms.saturating_sub(active.roll_base_ms()) > inner.config.segment_ms
            {
                let leo = inner.log_end_offset;
                inner.roll(leo, now_ms)?;
            }

            let mut deleted = 0;
            // Time and size retention belong to cleanup.policy=delete; a compact-only log keeps
            // every segment (the log cleaner shrinks it instead).
            let delete_policy = inner.config.delete;
            if delete_policy && inner.config.retention_ms >= 0 {
                for base in inner.non_active_bases() {
                    let Some(seg) = inner.segments.get(&base) else {
                        break;
                    };
                    // Kafka: now - largestTimestamp > retention.ms; a segment without timestamps
                    // is left alone.
                    if seg.max_timestamp() >= 0
                        && now_ms.saturating_sub(seg.max_timestamp()) > inner.config.retention_ms
                    {
                        inner.delete_segment(base, Some(now_ms))?;
                        deleted += 1;
                    } else {
                        break;
                    }
                }
            }
            if delete_policy && inner.config.retention_bytes >= 0 {
                let total: u64 = inner.segments.values().map(|s| s.size()).sum();
                let mut excess = total as i64 - inner.config.retention_bytes;
                for base in inner.non_active_bases() {
                    let Some(size) = inner.segments.get(&base).map(|s| s.size() as i64) else {
                        break;
                    };
                    if excess - size >= 0 {
                        excess -= size;
                        inner.delete_segment(base, Some(now_ms))?;
                        deleted += 1;
                    } else {
                        break;
                    }
                }
            }
            if deleted > 0 {
                inner.after_segment_deletion()?;
            }
            Ok(deleted)
        })
    }
}
