//! Opening a partition log (Kafka's `LogLoader`): completes a swap of cleaned segments that a
//! crash interrupted (`cleaner/swap.rs`), removes stray `.cleaned`/`.swap`/`.deleted`/
//! `.tmp` files and orphaned indexes, opens every segment, and either trusts the data after a
//! clean shutdown (checking and, if needed, rebuilding the indexes) or re-validates every batch
//! from the segment holding the recovery point onwards, truncating at the first torn or corrupt
//! byte and dropping every later segment that does not start where the cut one now ends.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::log_lock::LogLock;

use super::checkpoint::{read_partition_metadata, PARTITION_METADATA};
use super::cleaner::{complete_interrupted_swaps, CleanerState};
use super::config::LogConfig;
use super::epoch::LeaderEpochCache;
use super::error::{IoContext, Result, StorageError};
use super::log::{delete_files_now, parse_topic_partition, Inner, PartitionLog};
use super::log_dir::LogDirState;
use super::producer_snapshot::delete_snapshots_where;
use super::segment::{LogSegment, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use super::txn_index::TXN_INDEX_SUFFIX;
use crate::protocol::codec::Uuid;

const STRAY_SUFFIXES: [&str; 4] = [".cleaned", ".swap", ".deleted", ".tmp"];

/// The log dir holding a partition dir (its parent).
fn log_dir_of(dir: &Path) -> PathBuf {
    dir.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// Parses a 20-digit segment file name into its base offset.
fn base_offset_of(name: &str, suffix: &str) -> Option<i64> {
    let stem = name.strip_suffix(suffix)?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

impl PartitionLog {
    /// Opens (creating if missing) the log in `dir`, recovering it if the shutdown was unclean.
    pub fn open(
        dir: PathBuf,
        config: LogConfig,
        recovery_point: i64,
        had_clean_shutdown: bool,
        now_ms: i64,
    ) -> Result<Self> {
        Self::open_with_log_start_offset(dir, config, recovery_point, 0, had_clean_shutdown, now_ms)
    }

    /// As [`PartitionLog::open`], with the log start offset from `log-start-offset-checkpoint`.
    pub fn open_with_log_start_offset(
        dir: PathBuf,
        config: LogConfig,
        recovery_point: i64,
        log_start_offset: i64,
        had_clean_shutdown: bool,
        now_ms: i64,
    ) -> Result<Self> {
        let (topic, partition) = parse_topic_partition(&dir)?;
        // A directory made here and now holds nothing to recover: creating thousands of
        // partitions at once must not list each new directory three times.
        let fresh = create_partition_dir(&dir)?;

        // Pass 0: a swap of cleaned segments that a crash interrupted is completed.
        let swapped = if fresh {
            Vec::new()
        } else {
            complete_interrupted_swaps(&dir)?
        };

        // Pass 1: stray files out, segment bases in.
        let mut bases = Vec::new();
        let mut index_files = Vec::new();
        let listing = if fresh {
            Vec::new()
        } else {
            std::fs::read_dir(&dir)
                .ctx("list partition dir", &dir)?
                .collect::<Vec<_>>()
        };
        for entry in listing {
            let entry = entry.ctx("list partition dir", &dir)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if STRAY_SUFFIXES.iter().any(|s| name.ends_with(s)) {
                delete_files_now(vec![path]);
            } else if let Some(base) = base_offset_of(&name, LOG_SUFFIX) {
                bases.push(base);
            } else if let Some(base) = base_offset_of(&name, INDEX_SUFFIX)
                .or_else(|| base_offset_of(&name, TIME_INDEX_SUFFIX))
                .or_else(|| base_offset_of(&name, TXN_INDEX_SUFFIX))
            {
                index_files.push((base, path));
            }
        }
        bases.sort_unstable();
        for (base, path) in index_files {
            if bases.binary_search(&base).is_err() {
                delete_files_now(vec![path]);
            }
        }

        // Pass 2: open and load or recover each segment.
        let recover_from = if had_clean_shutdown {
            i64::MAX
        } else {
            bases
                .iter()
                .copied()
                .filter(|b| *b <= recovery_point)
                .next_back()
                .unwrap_or(i64::MIN)
        };
        let interval = config.index_interval_bytes;
        let mut segments = BTreeMap::new();
        let mut prev_next: Option<i64> = None;
        let mut drop_rest = false;
        // A segment whose tail recovery cut keeps its successors only if they start where its
        // batches now end: the tail was room reserved ahead of appends (`preallocate`, the
        // durable mode's zeros) whose trim on roll a power loss undid, not lost records.
        let mut cut_before = false;
        // Epochs of batches past the recovery point may be missing from the checkpoint (its
        // fsync is deferred to the flush that moves the recovery point).
        let mut first_recovered: Option<i64> = None;
        for base in bases {
            let mut seg = LogSegment::open(&dir, base, now_ms)?;
            // A segment that overlaps its predecessor, or follows a truncated one, goes.
            if drop_rest
                || prev_next.is_some_and(|n| base < n)
                || (cut_before && prev_next != Some(base))
            {
                tracing::warn!(dir = %dir.display(), base, "deleting segment after a recovered or overlapping one");
                delete_files_now(seg.mark_deleted()?);
                drop_rest = true;
                continue;
            }
            if base >= recover_from || swapped.contains(&base) {
                first_recovered.get_or_insert(base);
                let cut = seg.recover(interval)?;
                cut_before = cut > 0;
                if cut > 0 {
                    tracing::warn!(dir = %dir.display(), base, cut, "truncated a segment's tail (torn or corrupt batches, or room reserved for appends)");
                }
            } else {
                cut_before = false;
                seg.load(interval)?;
            }
            prev_next = Some(seg.next_offset().unwrap_or(base));
            segments.insert(base, seg);
        }
        if segments.is_empty() {
            let start = log_start_offset.max(0);
            let mut seg = LogSegment::open(&dir, start, now_ms)?;
            if config.preallocate {
                seg.preallocate_log(config.segment_bytes)?;
            }
            segments.insert(start, seg);
        }
        // Only the last segment may be empty; an empty one in the middle is removed.
        let empties: Vec<i64> = segments
            .iter()
            .filter(|(_, s)| s.is_empty())
            .map(|(b, _)| *b)
            .collect();
        for base in empties {
            if segments.len() > 1 && segments.keys().next_back() != Some(&base) {
                if let Some(seg) = segments.remove(&base) {
                    delete_files_now(seg.mark_deleted()?);
                }
            }
        }

        let (last_base, last_next) = match segments.iter().next_back() {
            Some((b, s)) => (*b, s.next_offset()),
            None => (0, None),
        };
        let log_end_offset = last_next.unwrap_or(last_base);
        let first_base = segments.keys().next().copied().unwrap_or(0);
        let log_start_offset = log_start_offset.max(first_base).min(log_end_offset);

        let (mut epochs, readable) = LeaderEpochCache::load(&dir)?;
        if !readable {
            tracing::warn!(dir = %dir.display(), "unreadable leader-epoch-checkpoint; rebuilding it from the log");
            first_recovered = Some(i64::MIN);
        }
        epochs.truncate_from_end(log_end_offset)?;
        if let Some(from) = first_recovered {
            // Kafka's LogSegment.recover does the same: every recovered batch re-asserts the
            // epoch it was written in.
            for seg in segments.range(from..).map(|(_, s)| s) {
                let mut failed = None;
                seg.for_each_batch_from(0, &mut |_, h| {
                    if h.partition_leader_epoch >= 0 {
                        if let Err(e) = epochs.assign(h.partition_leader_epoch, h.base_offset) {
                            failed = Some(e);
                            return false;
                        }
                    }
                    true
                })?;
                if let Some(e) = failed {
                    return Err(e);
                }
            }
        }
        epochs.truncate_from_start(log_start_offset)?;
        let topic_id = match read_partition_metadata(&dir.join(PARTITION_METADATA)) {
            Ok(id) => id,
            // Its fsync is deferred too; the topic id is written again from the metadata image.
            Err(StorageError::CorruptFile { .. }) => {
                tracing::warn!(dir = %dir.display(), "unreadable partition.metadata; ignoring it");
                None
            }
            Err(e) => return Err(e),
        };

        let mut inner = Inner {
            dir: dir.clone(),
            config,
            segments,
            log_start_offset,
            log_end_offset,
            recovery_point: recovery_point.min(log_end_offset),
            epochs,
            topic_id,
            topic_id_unsynced: false,
            unflushed_messages: 0,
            last_flush_ms: now_ms,
            pending_deletes: Vec::new(),
            truncations: 0,
            durable: super::durable::DurableMark::new(log_end_offset),
        };
        // Non-active segments keep trimmed indexes; the active one gets its preallocation.
        let index_bytes = inner.config.segment_index_bytes;
        let last = inner.segments.len().saturating_sub(1);
        for (i, seg) in inner.segments.values_mut().enumerate() {
            if i == last {
                seg.preallocate_indexes(index_bytes)?;
            } else {
                seg.seal()?;
            }
        }
        // What recovery validated is made durable, so the recovery point can move to the end
        // (a new or cleanly closed log has nothing to flush: no fsync at partition creation).
        if inner.recovery_point < inner.log_end_offset {
            inner.flush()?;
        }
        // Snapshots past the recovered end, or of data below the log start, describe no log
        // we have (Kafka's `truncateAndReload`; the one at the log start itself is kept).
        let (start, end) = (inner.log_start_offset, inner.log_end_offset);
        if !fresh {
            delete_snapshots_where(&dir, |o| o > end || o < start)?;
        }
        let log_dir = Arc::new(LogDirState::new(log_dir_of(&dir), Uuid::ZERO));
        Ok(PartitionLog {
            dir,
            topic,
            partition,
            inner: LogLock::new(inner),
            cleaner: CleanerState::new(),
            // A log opened on its own has a dir of its own; the log manager replaces it with
            // the state shared by its dir.
            log_dir,
        })
    }
}

/// Makes a partition's directory; true when it did not exist before.
fn create_partition_dir(dir: &Path) -> Result<bool> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        // The log dir itself is missing (a log opened on its own, in tests and tools).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).ctx("create partition dir", dir)?;
            Ok(true)
        }
        Err(e) => Err::<bool, _>(e).ctx("create partition dir", dir),
    }
}
