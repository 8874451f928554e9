//! Flushing a partition's log (Kafka's `flush.messages` / `flush.ms` and the flush of rolled
//! segments that `UnifiedLog.roll` schedules): fsyncs of the segments past the recovery point,
//! then the recovery point moved, so that recovery after a crash re-validates only what was
//! not flushed. The durable mode's fsyncs are the group commit's (`durable.rs`); they leave the
//! recovery point alone.

use std::path::PathBuf;

use super::checkpoint::{sync_file, PARTITION_METADATA};
use super::error::{IoContext, Result};
use super::log::{Inner, PartitionLog};

impl Inner {
    /// The base offset of the segment holding the recovery point: the first that may hold
    /// bytes not yet flushed.
    fn first_unflushed_base(&self) -> i64 {
        self.segments
            .range(..=self.recovery_point)
            .next_back()
            .map(|(b, _)| *b)
            .unwrap_or(i64::MIN)
    }

    /// fsyncs every segment that may hold data past the recovery point, then moves it to the
    /// log end offset.
    pub fn flush(&mut self) -> Result<()> {
        let from = self.first_unflushed_base();
        for seg in self.segments.range(from..).map(|(_, s)| s) {
            seg.flush()?;
        }
        self.epochs.sync()?;
        if self.topic_id_unsynced {
            sync_file(&self.dir.join(PARTITION_METADATA))?;
            self.topic_id_unsynced = false;
        }
        self.recovery_point = self.log_end_offset;
        self.unflushed_messages = 0;
        Ok(())
    }
}

impl PartitionLog {
    /// fsyncs and advances the recovery point to the log end offset (then drops producer
    /// snapshots no longer needed).
    pub fn flush(&self) -> Result<()> {
        self.log_dir.guard(|| {
            self.inner.write().flush()?;
            self.delete_stale_producer_snapshots()
        })
    }

    /// Kafka's flush of rolled segments (`UnifiedLog.roll` schedules
    /// `flushUptoOffsetExclusive(newSegment.baseOffset)`): fsyncs every sealed segment from the
    /// one holding the recovery point up to the active segment, and the partition directory,
    /// then moves the recovery point to the active segment's base offset. Without it the
    /// recovery point only moves on `flush.messages` / `flush.ms` (unset by default), so a crash
    /// would re-validate everything written since start-up instead of the active segment.
    /// The fsyncs run without the lock, so appends are not held up behind them. Returns
    /// whether the recovery point moved.
    pub fn flush_sealed_segments(&self) -> Result<bool> {
        self.log_dir.guard(|| {
            let (target, truncations, paths) = {
                let inner = self.inner.read();
                let target = inner.active().base_offset();
                if inner.recovery_point >= target {
                    return Ok(false);
                }
                let from = inner.first_unflushed_base();
                let paths: Vec<PathBuf> = inner
                    .segments
                    .range(from..target)
                    .flat_map(|(_, s)| s.file_paths())
                    .chain(std::iter::once(inner.dir.clone()))
                    .collect();
                (target, inner.truncations, paths)
            };
            for path in &paths {
                match std::fs::File::open(path) {
                    Ok(f) => f.sync_all().ctx("fsync rolled segment", path)?,
                    // Deleted meanwhile (retention, topic deletion): try again next time.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
                    Err(e) => return Err(e).ctx("open rolled segment", path),
                }
            }
            let mut inner = self.inner.write();
            if inner.truncations != truncations
                || inner.recovery_point >= target
                || !inner.segments.contains_key(&target)
            {
                return Ok(false);
            }
            inner.recovery_point = target;
            drop(inner);
            // Snapshots below the new recovery point's segment are no longer needed.
            self.delete_stale_producer_snapshots()?;
            Ok(true)
        })
    }

    /// The periodic flusher's check (`flush.ms`): fsyncs when unflushed data is older than the
    /// configured interval. Returns whether it flushed.
    pub fn flush_if_due(&self, now_ms: i64) -> Result<bool> {
        self.log_dir.guard(|| {
            let mut inner = self.inner.write();
            if inner.unflushed_messages == 0
                || now_ms.saturating_sub(inner.last_flush_ms) < inner.config.flush_ms
            {
                return Ok(false);
            }
            inner.flush()?;
            inner.last_flush_ms = now_ms;
            drop(inner);
            self.delete_stale_producer_snapshots()?;
            Ok(true)
        })
    }
}
