//! One partition's log (the local half of Kafka's `UnifiedLog`/`LocalLog`): an ordered map of
//! segments with the last one active, the log start and end offsets, the recovery point, the
//! leader epoch cache and `partition.metadata`. Owns appends (leader and follower), reads,
//! timestamp lookups and flushing; loading and recovery live in `recovery.rs`, retention and
//! DeleteRecords in `retention.rs`, truncation in `truncation.rs`.
//!
//! All state sits behind one `RwLock`: reads share it, everything else takes it exclusively;
//! the offsets a fetch checks are also published as atomics at each exclusive release
//! (`log_lock.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

use crate::protocol::codec::Uuid;
use crate::protocol::records::batch::{
    check_batch, parse_header, record_offsets_and_timestamps, set_base_offset, set_log_append_time,
    set_max_timestamp, set_partition_leader_epoch, BatchError, BatchHeader, BatchIter,
    LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, TIMESTAMP_TYPE_MASK,
};

use super::checkpoint::{write_partition_metadata, PARTITION_METADATA};
use super::cleaner::CleanerState;
use super::config::{FetchDataInfo, FileRegion, LogAppendInfo, LogConfig, RegionDataInfo};
use super::epoch::LeaderEpochCache;
use super::error::{IoContext, Result, StorageError};
use super::log_dir::LogDirState;
use super::log_lock::LogLock;
use super::segment::{offset_of_timestamp, LogSegment};

/// A partition's log. `Send + Sync`; share it as `Arc<PartitionLog>`.
#[derive(Debug)]
pub struct PartitionLog {
    pub(super) dir: PathBuf,
    pub(super) topic: String,
    pub(super) partition: i32,
    pub(super) inner: LogLock,
    /// The log cleaner's checkpoint and bookkeeping (`cleaner/`).
    pub(super) cleaner: CleanerState,
    /// The health of the log dir holding this log, shared with its other logs: an I/O error
    /// here takes them all offline.
    pub(super) log_dir: Arc<LogDirState>,
}

#[derive(Debug)]
pub(super) struct Inner {
    pub dir: PathBuf,
    pub config: LogConfig,
    /// Segments by base offset; never empty; the last one is active.
    pub segments: BTreeMap<i64, LogSegment>,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub recovery_point: i64,
    pub epochs: LeaderEpochCache,
    pub topic_id: Option<Uuid>,
    /// `partition.metadata` was written and awaits its fsync (at the next flush).
    pub topic_id_unsynced: bool,
    pub unflushed_messages: u64,
    pub last_flush_ms: i64,
    /// `.deleted` files and when they may go (file.delete.delay.ms).
    pub pending_deletes: Vec<(i64, Vec<PathBuf>)>,
    /// Bumped by every truncation, so that work done without the lock (the fsync of rolled
    /// segments) can tell whether the data it covered is still the log's.
    pub truncations: u64,
    /// What the group commit (`durable.rs`) has made durable: the offset below which every
    /// record is fsynced, the active segment it covered, and whether the partition directory
    /// entries themselves have been fsynced once.
    pub durable: super::durable::DurableMark,
}

/// Splits `<topic>-<partition>` at the last '-' (topics may contain '-').
pub fn parse_topic_partition(dir: &Path) -> Result<(String, i32)> {
    let bad = || StorageError::InvalidPartitionDir(dir.to_path_buf());
    let name = dir.file_name().and_then(|n| n.to_str()).ok_or_else(bad)?;
    let (topic, partition) = name.rsplit_once('-').ok_or_else(bad)?;
    let partition: i32 = partition.parse().map_err(|_| bad())?;
    if topic.is_empty() || partition < 0 {
        return Err(bad());
    }
    Ok((topic.to_string(), partition))
}

impl Inner {
    /// Whether a read at `fetch_offset` is at the log end (nothing to return);
    /// OFFSET_OUT_OF_RANGE outside the log.
    fn at_log_end(&self, fetch_offset: i64) -> Result<bool> {
        if fetch_offset < self.log_start_offset || fetch_offset > self.log_end_offset {
            return Err(StorageError::OffsetOutOfRange {
                offset: fetch_offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: self.log_end_offset,
            });
        }
        Ok(fetch_offset == self.log_end_offset)
    }

    /// The segment that may hold `offset` and every later one, in order.
    pub fn segments_from(&self, offset: i64) -> impl Iterator<Item = &LogSegment> {
        let from = self
            .segments
            .range(..=offset)
            .next_back()
            .map(|(b, _)| *b)
            .unwrap_or(i64::MIN);
        self.segments.range(from..).map(|(_, s)| s)
    }

    pub fn active(&self) -> &LogSegment {
        // `segments` is never empty (open and every removal keep one).
        self.segments
            .values()
            .next_back()
            .expect("a log always has an active segment")
    }

    pub fn active_mut(&mut self) -> &mut LogSegment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log always has an active segment")
    }

    /// Seals the active segment and starts a new one at max(`expected_base`, log end offset).
    pub fn roll(&mut self, expected_base: i64, now_ms: i64) -> Result<()> {
        let new_base = expected_base.max(self.log_end_offset);
        let (active_base, active_empty) = (self.active().base_offset(), self.active().is_empty());
        if active_empty {
            if active_base == new_base {
                return Ok(());
            }
            // An empty active segment at another base is replaced (Kafka does the same).
            if let Some(seg) = self.segments.remove(&active_base) {
                delete_files_now(seg.mark_deleted()?);
            }
        } else {
            self.active_mut().seal()?;
        }
        let mut seg = LogSegment::open(&self.dir, new_base, now_ms)?;
        // A leftover file at this base (cannot normally exist) is emptied.
        seg.recover(self.config.index_interval_bytes)?;
        if !seg.is_empty() {
            seg.truncate_to(new_base, self.config.index_interval_bytes)?;
        }
        seg.preallocate_indexes(self.config.segment_index_bytes)?;
        if self.config.preallocate {
            seg.preallocate_log(self.config.segment_bytes)?;
        }
        self.segments.insert(new_base, seg);
        Ok(())
    }

    fn maybe_roll(
        &mut self,
        bytes: u64,
        max_ts: i64,
        first_offset: i64,
        last_offset: i64,
        now_ms: i64,
    ) -> Result<()> {
        let seg = self.active();
        let size_full = seg.size() > 0 && seg.size() + bytes > self.config.segment_bytes;
        let time_full =
            seg.size() > 0 && seg.time_waited_for_roll_ms(now_ms, max_ts) > self.config.segment_ms;
        let overflow =
            last_offset - seg.base_offset() > u32::MAX as i64 || first_offset < seg.base_offset();
        if size_full || time_full || seg.index_full() || overflow {
            self.roll(first_offset, now_ms)?;
        }
        Ok(())
    }

    /// Writes batches that carry their final offsets and updates the log end offset and the
    /// epoch cache (and rolls first if due); the caller applies [`Inner::maybe_flush`].
    pub(super) fn write_batches(
        &mut self,
        buf: &[u8],
        headers: &[(BatchHeader, std::ops::Range<usize>)],
        now_ms: i64,
    ) -> Result<()> {
        let (Some(first), Some(last)) = (headers.first(), headers.last()) else {
            return Err(BatchError::Empty.into());
        };
        let max_ts = headers
            .iter()
            .map(|h| h.0.max_timestamp)
            .max()
            .unwrap_or(-1);
        self.maybe_roll(
            buf.len() as u64,
            max_ts,
            first.0.base_offset,
            last.0.last_offset(),
            now_ms,
        )?;
        let interval = self.config.index_interval_bytes;
        for (h, range) in headers {
            if h.partition_leader_epoch >= 0
                && self
                    .epochs
                    .latest_epoch()
                    .map_or(true, |e| e < h.partition_leader_epoch)
            {
                self.epochs
                    .assign(h.partition_leader_epoch, h.base_offset)?;
            }
            self.active_mut()
                .append_batch(&buf[range.clone()], h, interval)?;
            self.log_end_offset = h.last_offset() + 1;
            self.unflushed_messages += h.records_count.max(0) as u64;
        }
        Ok(())
    }

    /// The flush policy after an append (`flush.messages`, `flush.ms`).
    pub(super) fn maybe_flush(&mut self, now_ms: i64) -> Result<()> {
        if self.unflushed_messages >= self.config.flush_messages
            || now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms
        {
            self.flush()?;
            self.last_flush_ms = now_ms;
        }
        Ok(())
    }

    pub(super) fn append_info(
        &self,
        valid_bytes: usize,
        headers: &[(BatchHeader, std::ops::Range<usize>)],
        log_append_time_ms: i64,
    ) -> LogAppendInfo {
        let max_timestamp = headers
            .iter()
            .map(|(h, _)| h.max_timestamp)
            .max()
            .unwrap_or(-1);
        LogAppendInfo {
            first_offset: headers.first().map(|h| h.0.base_offset).unwrap_or(-1),
            last_offset: headers.last().map(|h| h.0.last_offset()).unwrap_or(-1),
            max_timestamp,
            log_append_time_ms,
            log_start_offset: self.log_start_offset,
            valid_bytes,
        }
    }

    fn check_batch_sizes(&self, headers: &[(BatchHeader, std::ops::Range<usize>)]) -> Result<()> {
        for (h, _) in headers {
            if h.total_size() as u64 > self.config.segment_bytes {
                return Err(StorageError::RecordBatchTooLarge {
                    size: h.total_size(),
                    segment_bytes: self.config.segment_bytes,
                });
            }
        }
        Ok(())
    }
}

/// Headers and ranges of the batches in `buf`, which must be whole batches only.
fn split_batches(buf: &[u8]) -> Result<Vec<(BatchHeader, std::ops::Range<usize>)>> {
    let mut it = BatchIter::new(buf);
    let out: Vec<_> = it.by_ref().collect();
    if out.is_empty() {
        return Err(BatchError::Empty.into());
    }
    if it.position() != buf.len() {
        return Err(BatchError::CorruptMessage("partial batch at the end of the records").into());
    }
    Ok(out)
}

/// Headers and ranges of the batches in `buf`, each checked (CRC-32C included) as it is
/// parsed: one parse per batch for replicated data, which is not trusted either.
fn check_batches(buf: &[u8]) -> Result<Vec<(BatchHeader, std::ops::Range<usize>)>> {
    if buf.is_empty() {
        return Err(BatchError::Empty.into());
    }
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        let h = check_batch(&buf[pos..])?;
        let end = pos + h.total_size();
        out.push((h, pos..end));
        pos = end;
    }
    Ok(out)
}

/// Best-effort removal of files (they are already renamed to `.deleted`; a failure leaves
/// them for the next start-up, which deletes stray `.deleted` files).
pub(super) fn delete_files_now(paths: Vec<PathBuf>) {
    for p in paths {
        if let Err(e) = std::fs::remove_file(&p) {
            tracing::warn!(path = %p.display(), error = %e, "could not delete file");
        }
    }
}

impl PartitionLog {
    pub fn topic_partition(&self) -> (String, i32) {
        (self.topic.clone(), self.partition)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log dir holding this log, and its health.
    pub fn log_dir(&self) -> &Arc<LogDirState> {
        &self.log_dir
    }

    /// True once this log's dir is offline: the log serves nothing more.
    pub fn is_offline(&self) -> bool {
        self.log_dir.is_offline()
    }

    /// Places the log in a log dir shared with others (the log manager's), so that a failure
    /// in any of them takes the dir offline for all.
    pub(super) fn in_log_dir(mut self, log_dir: Arc<LogDirState>) -> Self {
        self.log_dir = log_dir;
        self
    }

    /// Appends one or more batches as leader: assigns consecutive offsets from the log end
    /// offset, writes `leader_epoch` as partition leader epoch, and LogAppendTime when given
    /// (recomputing the CRC). The batches must have been validated (the produce path calls
    /// [`PartitionLog::append_validated_as_leader`] with the headers it parsed).
    pub fn append_as_leader(
        &self,
        batches: BytesMut,
        leader_epoch: i32,
        log_append_time_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<LogAppendInfo> {
        let headers = split_batches(&batches)?;
        self.append_validated_as_leader(batches, headers, leader_epoch, log_append_time_ms, now_ms)
    }

    /// [`PartitionLog::append_as_leader`] with each batch's header and byte range as the
    /// validator parsed them: the headers are updated alongside the bytes, never parsed again.
    pub fn append_validated_as_leader(
        &self,
        mut batches: BytesMut,
        mut headers: Vec<(BatchHeader, std::ops::Range<usize>)>,
        leader_epoch: i32,
        log_append_time_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<LogAppendInfo> {
        self.log_dir.guard(|| {
            let mut inner = self.inner.write();
            if headers.is_empty() {
                return Err(BatchError::Empty.into());
            }
            let mut next = inner.log_end_offset;
            for (h, range) in headers.iter_mut() {
                let b = &mut batches[range.clone()];
                set_base_offset(b, next);
                set_partition_leader_epoch(b, leader_epoch);
                h.base_offset = next;
                h.partition_leader_epoch = leader_epoch;
                if let Some(ts) = log_append_time_ms {
                    h.crc = set_log_append_time(b, ts);
                    h.attributes |= TIMESTAMP_TYPE_MASK;
                    h.max_timestamp = ts;
                } else {
                    // The validator's max timestamp, from the records, not the producer's.
                    h.crc = set_max_timestamp(b, h.max_timestamp);
                }
                next = h.last_offset() + 1;
            }
            inner.check_batch_sizes(&headers)?;
            inner.write_batches(&batches, &headers, now_ms)?;
            inner.maybe_flush(now_ms)?;
            Ok(inner.append_info(batches.len(), &headers, log_append_time_ms.unwrap_or(-1)))
        })
    }

    /// Appends batches that already carry offsets (replication). Each batch is re-checked
    /// (CRC-32C included); offsets must start at or after the log end offset and increase.
    pub fn append_as_follower(&self, batches: Bytes, now_ms: i64) -> Result<LogAppendInfo> {
        self.log_dir.guard(|| {
            let mut inner = self.inner.write();
            let headers = check_batches(&batches)?;
            let mut expected = inner.log_end_offset;
            for (h, _) in &headers {
                if h.base_offset < expected {
                    return Err(StorageError::OffsetOutOfOrder {
                        offset: h.base_offset,
                        log_end_offset: inner.log_end_offset,
                    });
                }
                expected = h.last_offset() + 1;
            }
            inner.check_batch_sizes(&headers)?;
            inner.write_batches(&batches, &headers, now_ms)?;
            inner.maybe_flush(now_ms)?;
            Ok(inner.append_info(batches.len(), &headers, -1))
        })
    }

    /// Whole batches from the one containing `fetch_offset`, within one segment, up to
    /// `max_bytes` (the first batch regardless if `min_one_batch`), and only batches whose base
    /// offset is below `max_offset_exclusive`.
    pub fn read(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        max_offset_exclusive: i64,
        min_one_batch: bool,
    ) -> Result<FetchDataInfo> {
        self.log_dir.guard(|| {
            let inner = self.inner.read();
            let empty = |inner: &Inner| FetchDataInfo {
                records: Bytes::new(),
                log_start_offset: inner.log_start_offset,
                log_end_offset: inner.log_end_offset,
            };
            if inner.at_log_end(fetch_offset)? {
                return Ok(empty(&inner));
            }
            for seg in inner.segments_from(fetch_offset) {
                let Some((start, first)) = seg.find_batch(fetch_offset)? else {
                    continue;
                };
                // One positioned read of everything that may be returned (up to `max_bytes`, or the
                // whole first batch), then the batch boundaries are found in memory: one `pread`
                // per fetch instead of one per batch header plus one for the data.
                let want = if min_one_batch {
                    max_bytes.max(first.total_size())
                } else {
                    max_bytes
                };
                let mut data = seg.read_bytes(start, want)?;
                let mut len = 0usize;
                while let Ok(h) = parse_header(&data[len..]) {
                    let size = h.total_size();
                    if h.batch_length < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32
                        || h.base_offset >= max_offset_exclusive
                        || len + size > data.len()
                    {
                        break;
                    }
                    if len + size <= max_bytes || (len == 0 && min_one_batch) {
                        len += size;
                    } else {
                        break;
                    }
                }
                data.truncate(len);
                return Ok(FetchDataInfo {
                    records: Bytes::from(data),
                    log_start_offset: inner.log_start_offset,
                    log_end_offset: inner.log_end_offset,
                });
            }
            Ok(empty(&inner))
        })
    }

    /// As [`Self::read`], but the batches are left in their segment file: the same whole
    /// batches, as a region of the file to send from there (zero-copy fetch).
    pub fn read_region(
        &self,
        fetch_offset: i64,
        max_bytes: usize,
        max_offset_exclusive: i64,
        min_one_batch: bool,
    ) -> Result<RegionDataInfo> {
        self.log_dir.guard(|| {
            let inner = self.inner.read();
            let mut out = RegionDataInfo {
                region: None,
                log_start_offset: inner.log_start_offset,
                log_end_offset: inner.log_end_offset,
            };
            if inner.at_log_end(fetch_offset)? {
                return Ok(out);
            }
            for seg in inner.segments_from(fetch_offset) {
                let Some((start, first)) = seg.find_batch(fetch_offset)? else {
                    continue;
                };
                if first.base_offset >= max_offset_exclusive {
                    return Ok(out);
                }
                // Batches starting at or past `max_offset_exclusive` are left out, as `read`
                // leaves them out; the one holding it starts below it and is kept.
                let offset_limit = match seg.next_offset() {
                    Some(next) if next > max_offset_exclusive => {
                        match seg.find_batch(max_offset_exclusive)? {
                            Some((pos, h)) if h.base_offset < max_offset_exclusive => {
                                pos + h.total_size() as u64
                            }
                            Some((pos, _)) => pos,
                            None => seg.size(),
                        }
                    }
                    _ => seg.size(),
                };
                let mut limit = offset_limit.min(start.saturating_add(max_bytes as u64));
                if min_one_batch {
                    limit = limit.max(start + first.total_size() as u64);
                }
                let (end, next_offset) = seg.whole_batches_within(start, limit)?;
                if end > start {
                    out.region = Some(FileRegion {
                        file: seg.log_file().0,
                        position: start,
                        len: (end - start) as usize,
                        next_offset: next_offset.unwrap_or(first.last_offset() + 1),
                    });
                }
                return Ok(out);
            }
            Ok(out)
        })
    }

    pub fn log_end_offset(&self) -> i64 {
        self.inner.log_end_offset()
    }

    pub fn log_start_offset(&self) -> i64 {
        self.inner.log_start_offset()
    }

    pub fn size_bytes(&self) -> u64 {
        self.inner.read().segments.values().map(|s| s.size()).sum()
    }

    pub fn num_segments(&self) -> usize {
        self.inner.read().segments.len()
    }

    /// Base offsets of the segments, oldest first.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.inner.read().segments.keys().copied().collect()
    }

    pub fn recovery_point(&self) -> i64 {
        self.inner.read().recovery_point
    }

    pub fn config(&self) -> LogConfig {
        self.inner.read().config.clone()
    }

    /// ListOffsets by timestamp: the first record (at or after the log start offset) whose
    /// timestamp is >= `ts`, with its timestamp. Record-exact for uncompressed batches; for
    /// compressed ones the batch's first offset and max timestamp.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>> {
        self.log_dir.guard(|| {
            let inner = self.inner.read();
            let log_start = inner.log_start_offset;
            let Some(seg) = inner.segments.values().find(|s| s.max_timestamp() >= ts) else {
                return Ok(None);
            };
            let (_, index_offset) = seg.time_index().lookup(ts);
            let (_, pos) = seg.offset_index().lookup(index_offset.max(log_start));
            let mut found = None;
            seg.for_each_batch_from(pos as u64, &mut |p, h| {
                if h.max_timestamp >= ts && h.last_offset() >= log_start {
                    found = Some((p, *h));
                    false
                } else {
                    true
                }
            })?;
            let Some((p, h)) = found else { return Ok(None) };
            let bytes = seg.read_bytes(p, h.total_size())?;
            let exact = record_offsets_and_timestamps(&bytes)
                .and_then(|v| v.into_iter().find(|&(o, t)| t >= ts && o >= log_start));
            Ok(Some(exact.unwrap_or((
                h.base_offset.max(log_start),
                h.max_timestamp,
            ))))
        })
    }

    /// ListOffsets MAX_TIMESTAMP: the offset and timestamp of the (first) record with the
    /// largest timestamp.
    pub fn max_timestamp_and_offset(&self) -> Result<Option<(i64, i64)>> {
        self.log_dir.guard(|| {
            let inner = self.inner.read();
            let mut best: Option<&LogSegment> = None;
            for seg in inner.segments.values() {
                if seg.max_timestamp() >= 0
                    && best.map_or(true, |b| seg.max_timestamp() > b.max_timestamp())
                {
                    best = Some(seg);
                }
            }
            let Some(seg) = best else { return Ok(None) };
            // The segment knows the batch (by its last offset); the record is found inside it,
            // as Kafka's `UnifiedLog.fetchOffsetByTimestamp` does for MAX_TIMESTAMP.
            let (ts, shallow) = (seg.max_timestamp(), seg.shallow_offset_of_max_timestamp());
            let exact = match seg.find_batch(shallow)? {
                Some((pos, h)) => {
                    let bytes = seg.read_bytes(pos, h.total_size())?;
                    offset_of_timestamp(&bytes, ts)
                }
                None => None,
            };
            Ok(Some((exact.unwrap_or(shallow), ts)))
        })
    }

    pub fn update_config(&self, config: LogConfig) {
        self.inner.write().config = config;
    }

    /// Records that `epoch` starts at `start_offset` in the leader epoch cache.
    pub fn assign_epoch_start_offset(&self, epoch: i32, start_offset: i64) -> Result<()> {
        self.log_dir.guard(|| {
            self.inner
                .write()
                .epochs
                .assign(epoch, start_offset)
                .map(|_| ())
        })
    }

    /// OffsetForLeaderEpoch, with Kafka's `LeaderEpochFileCache.endOffsetFor` semantics.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        let inner = self.inner.read();
        inner.epochs.end_offset_for(epoch, inner.log_end_offset)
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.inner.read().epochs.latest_epoch()
    }

    /// The (epoch, start_offset) entries of the leader epoch cache.
    pub fn epoch_entries(&self) -> Vec<(i32, i64)> {
        self.inner.read().epochs.entries().to_vec()
    }

    pub fn topic_id(&self) -> Option<Uuid> {
        self.inner.read().topic_id
    }

    /// Writes `partition.metadata` with this topic id.
    pub fn set_topic_id(&self, id: Uuid) -> Result<()> {
        self.log_dir.guard(|| {
            let mut inner = self.inner.write();
            write_partition_metadata(&inner.dir.join(PARTITION_METADATA), id)?;
            inner.topic_id = Some(id);
            inner.topic_id_unsynced = true;
            Ok(())
        })
    }

    /// Visits every batch header with a last offset >= `from_offset`, in order.
    pub fn scan_batches(&self, from_offset: i64, f: &mut dyn FnMut(&BatchHeader)) -> Result<()> {
        self.scan_batches_while(from_offset, &mut |h| {
            f(h);
            true
        })
    }

    /// As [`PartitionLog::scan_batches`], stopping once `f` returns false.
    pub fn scan_batches_while(
        &self,
        from_offset: i64,
        f: &mut dyn FnMut(&BatchHeader) -> bool,
    ) -> Result<()> {
        self.log_dir.guard(|| {
            let inner = self.inner.read();
            for seg in inner.segments_from(from_offset) {
                let Some((start, _)) = seg.find_batch(from_offset)? else {
                    continue;
                };
                let mut go_on = true;
                seg.for_each_batch_from(start, &mut |_, h| {
                    go_on = f(h);
                    go_on
                })?;
                if !go_on {
                    break;
                }
            }
            Ok(())
        })
    }

    /// Flushes everything, writes the final time-index entries, trims the index files and
    /// deletes pending `.deleted` files. The log should not be appended to afterwards.
    pub fn close(&self) -> Result<()> {
        self.log_dir.guard(|| {
            let mut inner = self.inner.write();
            inner.flush()?;
            inner.active_mut().seal()?;
            inner.active().flush()?;
            for (_, paths) in std::mem::take(&mut inner.pending_deletes) {
                self.log_dir.delete_files(paths);
            }
            Ok(())
        })
    }

    /// Closes the log and removes its directory (topic deletion).
    pub fn delete(self) -> Result<()> {
        let dir = self.dir.clone();
        drop(self);
        std::fs::remove_dir_all(&dir).ctx("remove partition dir", &dir)
    }
}
