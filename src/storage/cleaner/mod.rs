//! The log cleaner for `cleanup.policy=compact` (Kafka's `LogCleaner`/`Cleaner`, with the
//! choice of the dirty section from `LogCleanerManager`). Keeps, for every key, only the record
//! with the latest offset in the non-active segments; see [`filter`] for the per-record rules
//! (tombstones and the KIP-534 delete horizon, control batches, empty batches of producers)
//! and [`swap`] for the crash-safe replacement of segments.
//!
//! A clean: (1) the dirty section runs from the cleaner checkpoint (first dirty offset) to the
//! first uncleanable offset: the base of the active segment, of the first segment not wholly
//! below the caller's last stable offset, or of the first segment younger than
//! `min.compaction.lag.ms`; (2) an offset map (key -> latest offset) is built over it;
//! (3) every segment from the log start to the end of the map is rewritten, adjacent segments
//! grouped while they fit in `segment.bytes`; (4) the checkpoint moves to the end of the map.
//! Reading and writing run outside the log's lock; only the swap takes it, after checking that
//! the segments it replaces did not change meanwhile (else the group is abandoned).
//!
//! Synchronous std only; no tokio, no network. The broker calls [`LogManager::clean_all`] from a
//! blocking background task.
//!
//! [`LogManager::clean_all`]: crate::storage::LogManager::clean_all

mod filter;
mod swap;
#[cfg(test)]
mod tests;
mod throttle;

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;

use crate::protocol::records::batch::{
    check_batch, parse_header, BatchHeader, RECORD_BATCH_OVERHEAD,
};
use crate::protocol::records::decode_records;

use super::config::LogConfig;
use super::error::{IoContext, Result, StorageError};
use super::log::PartitionLog;
use super::segment::{segment_file, LogSegment};
use super::txn_index::{AbortedTxn, TransactionIndex, TXN_INDEX_SUFFIX};

use filter::{filter_batch, FilterContext, FilterCounts, Filtered};
pub(crate) use swap::complete_interrupted_swaps;
use swap::{fsync_dir, remove_segment_files, CLEANED_SUFFIX, SWAP_SUFFIX};
pub use throttle::Throttler;

/// The per log dir file of first dirty offsets (Kafka's `cleaner-offset-checkpoint`).
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";

/// Broker-wide cleaner settings (Kafka's `log.cleaner.*`).
#[derive(Debug, Clone)]
pub struct CleanerConfig {
    /// `log.cleaner.io.max.bytes.per.second`: read plus write budget (default unlimited).
    pub io_max_bytes_per_second: f64,
    /// Most distinct keys in one offset map; the dirty section stops at the segment boundary
    /// where it is reached (Kafka sizes the map by `log.cleaner.dedupe.buffer.size`).
    pub max_offset_map_entries: usize,
    /// Largest decompressed records section the cleaner decodes.
    pub max_decompressed_batch_bytes: usize,
    /// Test hook: stop as if the process died at this point.
    #[cfg(test)]
    pub(crate) crash_at: Option<CrashPoint>,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            io_max_bytes_per_second: f64::MAX,
            max_offset_map_entries: 4 * 1024 * 1024,
            max_decompressed_batch_bytes: 128 * 1024 * 1024,
            #[cfg(test)]
            crash_at: None,
        }
    }
}

/// Where a test makes a clean stop dead.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)]
pub(crate) enum CrashPoint {
    AfterCleaned,
    AfterSwap,
    AfterOldDeleted,
}

/// What one clean did (Kafka's `CleanerStats`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanStats {
    pub first_dirty_offset: i64,
    /// The new cleaner checkpoint: every offset below it has been cleaned.
    pub cleaned_up_to: i64,
    pub offset_map_entries: usize,
    pub segments_replaced: usize,
    pub segments_written: usize,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_read: u64,
    pub records_retained: u64,
    pub tombstones_removed: u64,
    /// A segment changed under the cleaner (truncation, retention); the rest was skipped.
    pub aborted: bool,
}

/// The sizes the cleaner's scheduling looks at (Kafka's `LogToClean`).
#[derive(Debug, Clone, PartialEq)]
pub struct CleanableInfo {
    pub first_dirty_offset: i64,
    pub first_uncleanable_offset: i64,
    pub clean_bytes: u64,
    pub dirty_bytes: u64,
    /// `max.compaction.lag.ms` passed for the oldest dirty segment.
    pub max_compaction_lag_passed: bool,
    /// A kept tombstone's delete horizon has passed.
    pub delete_horizon_passed: bool,
}

impl CleanableInfo {
    /// dirty / (clean + dirty), 0 for an empty log.
    pub fn dirty_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.dirty_bytes;
        if total == 0 {
            0.0
        } else {
            self.dirty_bytes as f64 / total as f64
        }
    }

    /// Whether a clean is due for a log with `config` (Kafka's `grabFilthiestCompactedLog`).
    pub fn needs_cleaning(&self, config: &LogConfig) -> bool {
        config.compact
            && ((self.dirty_bytes > 0
                && (self.dirty_ratio() >= config.min_cleanable_dirty_ratio
                    || self.max_compaction_lag_passed))
                || self.delete_horizon_passed)
    }
}

/// The offset ranges of aborted transactions, by producer. A producer has at most one
/// transaction open at a time, so its transactional batch at offset `o` belongs to an aborted
/// transaction exactly when `first_offset <= o <= last_offset` of one of its entries.
#[derive(Debug, Default)]
pub(super) struct AbortedRanges(HashMap<i64, Vec<(i64, i64)>>);

impl AbortedRanges {
    fn new(txns: &[AbortedTxn]) -> Self {
        let mut m: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for t in txns {
            m.entry(t.producer_id)
                .or_default()
                .push((t.first_offset, t.last_offset));
        }
        AbortedRanges(m)
    }

    /// Whether `h` is a data batch of an aborted transaction.
    pub(super) fn contains(&self, h: &BatchHeader) -> bool {
        h.is_transactional()
            && !h.is_control()
            && self.0.get(&h.producer_id).is_some_and(|v| {
                v.iter()
                    .any(|&(first, last)| first <= h.base_offset && h.base_offset <= last)
            })
    }
}

/// Cleaner bookkeeping kept by each partition log.
#[derive(Debug)]
pub(crate) struct CleanerState {
    /// Serialises cleans of one log.
    running: Mutex<()>,
    /// The cleaner checkpoint (first dirty offset), -1 when unknown.
    first_dirty_offset: AtomicI64,
    /// Earliest delete horizon of a kept tombstone (i64::MAX if none).
    next_delete_horizon_ms: AtomicI64,
    /// Bumped by every truncation, so a clean racing one does not move the checkpoint.
    truncations: AtomicU64,
}

impl CleanerState {
    pub fn new() -> Self {
        CleanerState {
            running: Mutex::new(()),
            first_dirty_offset: AtomicI64::new(-1),
            next_delete_horizon_ms: AtomicI64::new(i64::MAX),
            truncations: AtomicU64::new(0),
        }
    }

    /// A truncation to `offset`: nothing at or above it may count as cleaned.
    pub fn on_truncate(&self, offset: i64) {
        self.truncations.fetch_add(1, Ordering::SeqCst);
        let _ = self
            .first_dirty_offset
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| {
                (c > offset).then_some(offset)
            });
    }
}

/// A non-active segment as seen when the clean started.
#[derive(Debug, Clone)]
struct SegmentInfo {
    base: i64,
    /// Base offset of the next segment: every offset of this one is below it.
    end: i64,
    size: u64,
    max_timestamp: i64,
    first_batch_timestamp: i64,
    path: PathBuf,
}

#[derive(Debug)]
struct Snapshot {
    dir: PathBuf,
    config: LogConfig,
    log_start_offset: i64,
    log_end_offset: i64,
    segments: Vec<SegmentInfo>,
}

/// Visits every batch of a segment file, CRC-checked, in order; `f` returns false to stop.
fn for_each_batch(
    seg: &SegmentInfo,
    f: &mut dyn FnMut(&[u8], &BatchHeader) -> Result<bool>,
) -> Result<()> {
    let file = File::open(&seg.path).ctx("open segment for cleaning", &seg.path)?;
    let mut pos = 0u64;
    let mut header = [0u8; RECORD_BATCH_OVERHEAD];
    let mut buf = Vec::new();
    while pos + RECORD_BATCH_OVERHEAD as u64 <= seg.size {
        file.read_exact_at(&mut header, pos)
            .ctx("read segment for cleaning", &seg.path)?;
        let h = parse_header(&header)?;
        let total = h.total_size() as u64;
        if total < RECORD_BATCH_OVERHEAD as u64 || total > seg.size - pos {
            return Err(corrupt(&seg.path, pos, "batch runs past the segment"));
        }
        buf.resize(total as usize, 0);
        file.read_exact_at(&mut buf, pos)
            .ctx("read segment for cleaning", &seg.path)?;
        check_batch(&buf)?;
        if !f(&buf, &h)? {
            break;
        }
        pos += total;
    }
    Ok(())
}

fn corrupt(path: &Path, pos: u64, reason: impl std::fmt::Display) -> StorageError {
    StorageError::CorruptFile {
        path: path.to_path_buf(),
        reason: format!("at position {pos}: {reason}"),
    }
}

/// Groups consecutive segments so that each group's data, offset range and index fit one
/// segment (Kafka's `groupSegmentsBySize`).
fn group_by_size(segments: &[SegmentInfo], config: &LogConfig) -> Vec<Vec<SegmentInfo>> {
    let mut groups: Vec<Vec<SegmentInfo>> = Vec::new();
    let max_index_entries = (config.segment_index_bytes / 8).max(1) as u64;
    let interval = config.index_interval_bytes.max(1) as u64;
    for seg in segments {
        let fits = groups.last().is_some_and(|g| {
            let size: u64 = g.iter().map(|s| s.size).sum::<u64>() + seg.size;
            size <= config.segment_bytes
                && size / interval < max_index_entries
                && seg.end - g[0].base <= u32::MAX as i64
        });
        match groups.last_mut() {
            Some(g) if fits => g.push(seg.clone()),
            _ => groups.push(vec![seg.clone()]),
        }
    }
    groups
}

impl PartitionLog {
    fn cleaner_snapshot(&self) -> Snapshot {
        let inner = self.inner.read();
        let bases: Vec<i64> = inner.segments.keys().copied().collect();
        let segments = inner
            .segments
            .values()
            .zip(bases.iter().skip(1))
            .map(|(s, &end)| SegmentInfo {
                base: s.base_offset(),
                end,
                size: s.size(),
                max_timestamp: s.max_timestamp(),
                first_batch_timestamp: s.roll_base_ms(),
                path: s.log_path().to_path_buf(),
            })
            .collect();
        Snapshot {
            dir: inner.dir.clone(),
            config: inner.config.clone(),
            log_start_offset: inner.log_start_offset,
            log_end_offset: inner.log_end_offset,
            segments,
        }
    }

    /// The cleaner checkpoint of this log (its first dirty offset), if one is known.
    pub fn cleaner_checkpoint(&self) -> Option<i64> {
        let c = self.cleaner.first_dirty_offset.load(Ordering::SeqCst);
        (c >= 0).then_some(c)
    }

    /// Sets the cleaner checkpoint (from `cleaner-offset-checkpoint` at start-up).
    pub fn set_cleaner_checkpoint(&self, offset: i64) {
        self.cleaner
            .first_dirty_offset
            .store(offset, Ordering::SeqCst);
    }

    fn cleanable(&self, snap: &Snapshot, now_ms: i64, last_stable_offset: i64) -> CleanableInfo {
        let first_dirty = match self.cleaner_checkpoint() {
            // Kafka resets a checkpoint outside the log to the log start offset.
            Some(c) if c >= snap.log_start_offset && c <= snap.log_end_offset => c,
            _ => snap.log_start_offset,
        };
        let lag = snap.config.min_compaction_lag_ms;
        let uncleanable = snap
            .segments
            .iter()
            .find(|s| {
                s.end > last_stable_offset
                    || (lag > 0 && s.max_timestamp > now_ms.saturating_sub(lag))
            })
            .map(|s| s.base)
            .or_else(|| snap.segments.last().map(|s| s.end))
            .unwrap_or(snap.log_start_offset);
        let clean_bytes = snap
            .segments
            .iter()
            .filter(|s| s.end <= first_dirty)
            .map(|s| s.size)
            .sum();
        let dirty: Vec<&SegmentInfo> = snap
            .segments
            .iter()
            .filter(|s| s.end > first_dirty && s.end <= uncleanable)
            .collect();
        let max_lag = snap.config.max_compaction_lag_ms;
        let max_compaction_lag_passed = max_lag < i64::MAX
            && dirty.first().is_some_and(|s| {
                s.first_batch_timestamp >= 0
                    && now_ms.saturating_sub(s.first_batch_timestamp) > max_lag
            });
        CleanableInfo {
            first_dirty_offset: first_dirty,
            first_uncleanable_offset: uncleanable.max(first_dirty),
            clean_bytes,
            dirty_bytes: dirty.iter().map(|s| s.size).sum(),
            max_compaction_lag_passed,
            delete_horizon_passed: now_ms
                >= self.cleaner.next_delete_horizon_ms.load(Ordering::SeqCst),
        }
    }

    /// How much of the log is dirty, for scheduling. `last_stable_offset` bounds what may be
    /// cleaned (the broker passes the partition's last stable offset; at most the high
    /// watermark).
    pub fn cleanable_info(&self, now_ms: i64, last_stable_offset: i64) -> CleanableInfo {
        let snap = self.cleaner_snapshot();
        self.cleanable(&snap, now_ms, last_stable_offset)
    }

    /// Producer id -> last offset of its last data batch, over the whole log.
    fn producer_last_offsets(&self, from: i64) -> Result<HashMap<i64, i64>> {
        let mut out = HashMap::new();
        self.scan_batches(from, &mut |h| {
            if h.producer_id >= 0 && !h.is_control() {
                out.insert(h.producer_id, h.last_offset());
            }
        })?;
        Ok(out)
    }

    /// Compacts the log once (Kafka's `Cleaner.clean`): nothing happens unless the log is
    /// `compact`. Never touches the active segment nor anything at or above
    /// `last_stable_offset`. Blocking; sleeps to keep within the configured I/O rate, with a
    /// throttler of its own (see [`PartitionLog::clean_throttled`] to share one).
    pub fn clean(
        &self,
        now_ms: i64,
        last_stable_offset: i64,
        cleaner: &CleanerConfig,
    ) -> Result<CleanStats> {
        let mut throttler = Throttler::new(cleaner.io_max_bytes_per_second);
        self.clean_throttled(now_ms, last_stable_offset, cleaner, &mut throttler)
    }

    /// As [`PartitionLog::clean`], counting every byte read and written against `throttler`
    /// (the broker keeps one for the cleaner's lifetime, so the budget spans logs).
    pub fn clean_throttled(
        &self,
        now_ms: i64,
        last_stable_offset: i64,
        cleaner: &CleanerConfig,
        throttler: &mut Throttler,
    ) -> Result<CleanStats> {
        self.log_dir.guard(|| {
            let _running = self.cleaner.running.lock();
            let truncations = self.cleaner.truncations.load(Ordering::SeqCst);
            let snap = self.cleaner_snapshot();
            let info = self.cleanable(&snap, now_ms, last_stable_offset);
            let mut stats = CleanStats {
                first_dirty_offset: info.first_dirty_offset,
                cleaned_up_to: info.first_dirty_offset,
                ..CleanStats::default()
            };
            if !snap.config.compact || (info.dirty_bytes == 0 && !info.delete_horizon_passed) {
                return Ok(stats);
            }
            // Aborted transactions (from the `.txnindex` files): their records never enter the
            // offset map and are removed from the cleaned segments (Kafka's
            // `CleanedTransactionMetadata`); their markers are kept.
            let aborted = AbortedRanges::new(&self.all_aborted_txns()?);

            // 1. The offset map over the dirty section, whole segments at a time.
            let mut map: HashMap<Bytes, i64> = HashMap::new();
            let mut end_offset = info.first_dirty_offset;
            let first_dirty = info.first_dirty_offset;
            for seg in snap
                .segments
                .iter()
                .filter(|s| s.end > first_dirty && s.end <= info.first_uncleanable_offset)
            {
                if map.len() >= cleaner.max_offset_map_entries && end_offset > first_dirty {
                    break;
                }
                for_each_batch(seg, &mut |bytes, h| {
                    throttler.maybe_throttle(bytes.len() as u64);
                    stats.bytes_read += bytes.len() as u64;
                    if h.is_control() || h.last_offset() < first_dirty || aborted.contains(h) {
                        return Ok(true);
                    }
                    let records = decode_records(bytes, cleaner.max_decompressed_batch_bytes)
                        .map_err(|e| corrupt(&seg.path, h.base_offset as u64, e))?;
                    for r in records {
                        let offset = h.base_offset + r.offset_delta as i64;
                        if let (Some(key), true) = (r.key, offset >= first_dirty) {
                            map.insert(key, offset);
                        }
                    }
                    Ok(true)
                })?;
                end_offset = seg.end;
            }
            stats.offset_map_entries = map.len();

            // 2. Rewrite every segment below the end of the map, group by group.
            let producers = self.producer_last_offsets(snap.log_start_offset)?;
            let upto = end_offset
                .max(first_dirty)
                .min(info.first_uncleanable_offset);
            let to_clean: Vec<SegmentInfo> = snap
                .segments
                .iter()
                .filter(|s| s.end <= upto)
                .cloned()
                .collect();
            let cx = FilterContext {
                map: &map,
                producer_last_offsets: &producers,
                now_ms,
                delete_retention_ms: snap.config.delete_retention_ms,
                max_decompressed_bytes: cleaner.max_decompressed_batch_bytes,
                aborted: &aborted,
            };
            let mut counts = FilterCounts::default();
            for group in group_by_size(&to_clean, &snap.config) {
                let done = self.clean_group(
                    &snap,
                    &group,
                    &cx,
                    cleaner,
                    throttler,
                    &mut counts,
                    &mut stats,
                )?;
                if !done {
                    stats.aborted = true;
                    break;
                }
            }
            stats.records_read = counts.records_read;
            stats.records_retained = counts.records_retained;
            stats.tombstones_removed = counts.tombstones_removed;
            if stats.aborted {
                return Ok(stats);
            }

            // 3. Move the checkpoint, unless a truncation raced the clean.
            let _inner = self.inner.write();
            if self.cleaner.truncations.load(Ordering::SeqCst) == truncations {
                self.set_cleaner_checkpoint(upto);
                stats.cleaned_up_to = upto;
                self.cleaner.next_delete_horizon_ms.store(
                    counts.earliest_delete_horizon_ms.unwrap_or(i64::MAX),
                    Ordering::SeqCst,
                );
            }
            Ok(stats)
        })
    }

    /// Writes one group's cleaned segment and swaps it in. Returns false if the group's
    /// segments changed meanwhile (the cleaned files are then discarded).
    #[allow(clippy::too_many_arguments)]
    fn clean_group(
        &self,
        snap: &Snapshot,
        group: &[SegmentInfo],
        cx: &FilterContext<'_>,
        cleaner: &CleanerConfig,
        throttler: &mut Throttler,
        counts: &mut FilterCounts,
        stats: &mut CleanStats,
    ) -> Result<bool> {
        let Some(base) = group.first().map(|s| s.base) else {
            return Ok(true);
        };
        let dir = &snap.dir;
        let interval = snap.config.index_interval_bytes;
        remove_segment_files(dir, base, CLEANED_SUFFIX)?;
        remove_segment_files(dir, base, SWAP_SUFFIX)?;
        let mut out = LogSegment::open_with_suffix(dir, base, CLEANED_SUFFIX, cx.now_ms)?;
        out.preallocate_indexes(snap.config.segment_index_bytes)?;
        let written = (|| -> Result<()> {
            // Always a `.txnindex`, so an interrupted swap can tell new from old (`swap.rs`).
            out.txn_index_mut().create()?;
            for seg in group {
                let old = TransactionIndex::open(&segment_file(dir, seg.base, TXN_INDEX_SUFFIX))?;
                for txn in old.all()? {
                    if txn.last_offset >= seg.base && txn.last_offset < seg.end {
                        out.txn_index_mut().append(&txn)?;
                    }
                }
                for_each_batch(seg, &mut |bytes, h| {
                    throttler.maybe_throttle(bytes.len() as u64);
                    stats.bytes_read += bytes.len() as u64;
                    let filtered = filter_batch(bytes, h, cx, counts)
                        .map_err(|e| corrupt(&seg.path, h.base_offset as u64, e))?;
                    let out_bytes: &[u8] = match &filtered {
                        Filtered::Original => bytes,
                        Filtered::Rewritten(b) => b,
                        Filtered::Dropped => return Ok(true),
                    };
                    out.append(out_bytes, interval)?;
                    throttler.maybe_throttle(out_bytes.len() as u64);
                    stats.bytes_written += out_bytes.len() as u64;
                    Ok(true)
                })?;
            }
            out.seal()?;
            out.flush()
        })();
        if let Err(e) = written {
            drop(out);
            let _ = remove_segment_files(dir, base, CLEANED_SUFFIX);
            return Err(e);
        }
        #[cfg(test)]
        if cleaner.crash_at == Some(CrashPoint::AfterCleaned) {
            return Err(StorageError::InvalidArgument("simulated crash"));
        }
        out.change_suffix(CLEANED_SUFFIX, SWAP_SUFFIX)?;
        fsync_dir(dir);
        #[cfg(test)]
        if cleaner.crash_at == Some(CrashPoint::AfterSwap) {
            return Err(StorageError::InvalidArgument("simulated crash"));
        }
        let _ = cleaner;

        let mut inner = self.inner.write();
        let last_base = inner.segments.keys().next_back().copied();
        let unchanged = group.iter().all(|s| {
            Some(s.base) != last_base
                && inner.segments.get(&s.base).map(|x| x.size()) == Some(s.size)
        });
        if !unchanged {
            drop(inner);
            drop(out);
            remove_segment_files(dir, base, SWAP_SUFFIX)?;
            return Ok(false);
        }
        let delay = inner.config.file_delete_delay_ms;
        for s in group {
            if let Some(old) = inner.segments.remove(&s.base) {
                let paths = old.mark_deleted()?;
                if delay > 0 {
                    inner
                        .pending_deletes
                        .push((cx.now_ms.saturating_add(delay), paths));
                } else {
                    self.log_dir.delete_files(paths);
                }
            }
        }
        #[cfg(test)]
        if cleaner.crash_at == Some(CrashPoint::AfterOldDeleted) {
            return Err(StorageError::InvalidArgument("simulated crash"));
        }
        out.change_suffix(SWAP_SUFFIX, "")?;
        fsync_dir(dir);
        stats.segments_replaced += group.len();
        if out.is_empty() {
            // Nothing survived: no segment for this range (an empty one in the middle of the
            // log would only be removed at the next start-up).
            self.log_dir.delete_files(out.mark_deleted()?);
        } else {
            inner.segments.insert(base, out);
            stats.segments_written += 1;
        }
        Ok(true)
    }
}
