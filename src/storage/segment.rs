//! One log segment (Kafka's `LogSegment`): `<base_offset:020>.log` with its `.index`,
//! `.timeindex` and (once an ABORT marker lands in it) `.txnindex`. Owns appending whole batches, positioned reads, locating the batch that holds an
//! offset, truncation, recovery (re-validating every batch and rebuilding both indexes), and
//! the index bookkeeping Kafka does on roll and close.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::protocol::records::batch::{
    check_batch, parse_header, record_offsets_and_timestamps, BatchHeader, LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
};

use super::error::{IoContext, Result};
use super::offset_index::OffsetIndex;
use super::time_index::TimeIndex;
use super::txn_index::{TransactionIndex, TXN_INDEX_SUFFIX};

pub const LOG_SUFFIX: &str = ".log";
pub const INDEX_SUFFIX: &str = ".index";
pub const TIME_INDEX_SUFFIX: &str = ".timeindex";
pub const DELETED_SUFFIX: &str = ".deleted";

/// `<dir>/<base_offset as 20 digits><suffix>` (Kafka's `LogFileUtils.filenamePrefixFromOffset`).
pub fn segment_file(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{base_offset:020}{suffix}"))
}

#[derive(Debug)]
pub struct LogSegment {
    base_offset: i64,
    log_path: PathBuf,
    /// Shared so that the group commit (`durable.rs`) can fsync it without the log's lock.
    log: Arc<File>,
    size: u64,
    /// The file's length; past `size` only when `preallocate` or the durable mode's zeros
    /// reserved room for appends (trimmed back on seal, cut by recovery after a crash).
    file_len: u64,
    /// Bytes from the start of the file that were written, with batches or zeros: appends below
    /// this overwrite allocated blocks and leave fdatasync nothing but their pages to write.
    written_len: u64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    txn_index: TransactionIndex,
    bytes_since_last_index_entry: u64,
    /// Largest batch max timestamp, and the last offset of the first batch carrying it
    /// (Kafka's `shallowOffsetOfMaxTimestampSoFar`). The time index stores this batch-level
    /// offset: `kafka-dump-log` checks that every time index entry names the last offset of a
    /// batch whose largest record timestamp is the entry's timestamp.
    max_timestamp: i64,
    shallow_offset_of_max_timestamp: i64,
    /// Max timestamp of the first batch (Kafka's `rollingBasedTimestamp`), if any.
    first_batch_timestamp: Option<i64>,
    created_ms: i64,
    /// One past the last offset stored, or None while empty.
    next_offset: Option<i64>,
}

impl LogSegment {
    /// Opens the segment's files, creating them if missing; the state (size, next offset, max
    /// timestamp) is loaded by [`LogSegment::load`] or [`LogSegment::recover`].
    pub fn open(dir: &Path, base_offset: i64, now_ms: i64) -> Result<Self> {
        Self::open_with_suffix(dir, base_offset, "", now_ms)
    }

    /// As [`LogSegment::open`], with `suffix` after each file name (`.cleaned`, `.swap`): the
    /// log cleaner writes its output under such names (Kafka's `LogSegment.open(fileSuffix)`).
    pub fn open_with_suffix(
        dir: &Path,
        base_offset: i64,
        suffix: &str,
        now_ms: i64,
    ) -> Result<Self> {
        let name = |s: &str| segment_file(dir, base_offset, &format!("{s}{suffix}"));
        let log_path = name(LOG_SUFFIX);
        let log = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&log_path)
            .ctx("open segment", &log_path)?;
        let size = log.metadata().ctx("stat segment", &log_path)?.len();
        Ok(LogSegment {
            base_offset,
            offset_index: OffsetIndex::open(&name(INDEX_SUFFIX), base_offset)?,
            time_index: TimeIndex::open(&name(TIME_INDEX_SUFFIX), base_offset)?,
            txn_index: TransactionIndex::open(&name(TXN_INDEX_SUFFIX))?,
            log_path,
            log: Arc::new(log),
            size,
            file_len: size,
            written_len: size,
            bytes_since_last_index_entry: 0,
            max_timestamp: -1,
            shallow_offset_of_max_timestamp: -1,
            first_batch_timestamp: None,
            created_ms: now_ms,
            next_offset: None,
        })
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }
    pub fn next_offset(&self) -> Option<i64> {
        self.next_offset
    }
    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }
    /// The last offset of the first batch that carries [`LogSegment::max_timestamp`]; the
    /// record-exact offset is found by reading that batch.
    pub fn shallow_offset_of_max_timestamp(&self) -> i64 {
        self.shallow_offset_of_max_timestamp
    }
    pub fn created_ms(&self) -> i64 {
        self.created_ms
    }
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }
    /// The `.log`, `.index` and `.timeindex` paths, and the `.txnindex` one if it exists.
    pub fn file_paths(&self) -> Vec<PathBuf> {
        let mut out = vec![
            self.log_path.clone(),
            self.offset_index.path().to_path_buf(),
            self.time_index.path().to_path_buf(),
        ];
        if self.txn_index.exists() {
            out.push(self.txn_index.path().to_path_buf());
        }
        out
    }
    pub fn txn_index(&self) -> &TransactionIndex {
        &self.txn_index
    }
    pub fn txn_index_mut(&mut self) -> &mut TransactionIndex {
        &mut self.txn_index
    }
    pub fn offset_index(&self) -> &OffsetIndex {
        &self.offset_index
    }
    pub fn time_index(&self) -> &TimeIndex {
        &self.time_index
    }

    /// The timestamp segment_ms is measured from: the first batch's max timestamp when it has
    /// one, else when the segment was created (Kafka's `rollingBasedTimestamp`).
    pub fn roll_base_ms(&self) -> i64 {
        match self.first_batch_timestamp {
            Some(ts) if ts >= 0 => ts,
            _ => self.created_ms,
        }
    }

    /// How long the segment has been open for segment.ms (Kafka's `timeWaitedForRoll`): the
    /// incoming max timestamp minus the first batch's, or wall time since creation.
    pub fn time_waited_for_roll_ms(&self, now_ms: i64, incoming_max_timestamp: i64) -> i64 {
        match self.first_batch_timestamp {
            Some(ts) if ts >= 0 && incoming_max_timestamp >= 0 => {
                incoming_max_timestamp.saturating_sub(ts)
            }
            _ => now_ms.saturating_sub(self.created_ms),
        }
    }

    pub fn index_full(&self) -> bool {
        self.offset_index.is_full() || self.time_index.is_full()
    }

    /// Loads a segment after a clean shutdown: trusts the log, checks both indexes and rebuilds
    /// them (by [`LogSegment::recover`]) if they do not make sense, then reads the batches after
    /// the last index entry to find the next offset and max timestamp.
    pub fn load(&mut self, index_interval_bytes: u32) -> Result<u64> {
        if !self.offset_index.is_sane(self.size)? {
            return self.recover(index_interval_bytes);
        }
        let start = self
            .offset_index
            .last_entry()
            .map(|e| e.1 as u64)
            .unwrap_or(0);
        let mut pos = start;
        while let Some(h) = self.read_header_at(pos)? {
            self.note_batch(&h);
            pos += h.total_size() as u64;
        }
        if pos != self.size
            || !self
                .time_index
                .is_sane(self.next_offset.unwrap_or(self.base_offset))?
        {
            return self.recover(index_interval_bytes);
        }
        if let Some((ts, offset)) = self.time_index.last_entry() {
            if ts > self.max_timestamp {
                self.max_timestamp = ts;
                self.shallow_offset_of_max_timestamp = offset;
            }
        }
        // The first batch sets the roll timestamp.
        if let Some(h) = self.read_header_at(0)? {
            self.first_batch_timestamp = Some(h.max_timestamp);
        }
        self.sanitize_txn_index()?;
        Ok(0)
    }

    /// Re-validates every batch (header, CRC-32C, offsets increasing and within u32 of the base
    /// offset), rebuilds both indexes, and truncates the file at the first bad byte. Returns the
    /// number of bytes cut off.
    pub fn recover(&mut self, index_interval_bytes: u32) -> Result<u64> {
        self.offset_index.reset();
        self.time_index.reset();
        self.bytes_since_last_index_entry = 0;
        self.max_timestamp = -1;
        self.shallow_offset_of_max_timestamp = -1;
        self.first_batch_timestamp = None;
        self.next_offset = None;
        let file_size = self
            .log
            .metadata()
            .ctx("stat segment", &self.log_path)?
            .len();
        let mut pos = 0u64;
        let mut buf = Vec::new();
        loop {
            let Some(h) = self.read_header_at_within(pos, file_size)? else {
                break;
            };
            let total = h.total_size() as u64;
            if h.batch_length < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32
                || total > file_size - pos
            {
                break;
            }
            buf.resize(total as usize, 0);
            self.log
                .read_exact_at(&mut buf, pos)
                .ctx("read segment", &self.log_path)?;
            if check_batch(&buf).is_err() {
                break;
            }
            let expected = self.next_offset.unwrap_or(self.base_offset);
            if h.base_offset < expected || h.last_offset() - self.base_offset > u32::MAX as i64 {
                break;
            }
            self.note_batch(&h);
            if self.first_batch_timestamp.is_none() {
                self.first_batch_timestamp = Some(h.max_timestamp);
            }
            self.maybe_index(&h, pos, total, index_interval_bytes);
            pos += total;
        }
        let cut = file_size - pos;
        if cut > 0 {
            self.log
                .set_len(pos)
                .ctx("truncate segment", &self.log_path)?;
        }
        self.size = pos;
        self.file_len = pos;
        self.written_len = pos;
        self.sanitize_txn_index()?;
        Ok(cut)
    }

    /// Keeps the `.txnindex` entries whose markers are in this segment's data (a crash or a
    /// truncation of the log may have left later or torn ones).
    fn sanitize_txn_index(&mut self) -> Result<()> {
        let next = self.next_offset.unwrap_or(self.base_offset);
        let dropped = self.txn_index.sanitize(self.base_offset, next)?;
        if dropped > 0 {
            tracing::warn!(path = %self.txn_index.path().display(), dropped, "dropped txn index entries past the segment's data");
        }
        Ok(())
    }

    /// Updates next offset and max timestamp for a batch (Kafka's `LogSegment.append` and
    /// `recover` bookkeeping): the max timestamp is remembered with the batch's last offset.
    fn note_batch(&mut self, h: &BatchHeader) {
        self.next_offset = Some(h.last_offset() + 1);
        if h.max_timestamp > self.max_timestamp {
            self.max_timestamp = h.max_timestamp;
            self.shallow_offset_of_max_timestamp = h.last_offset();
        }
    }

    fn maybe_index(&mut self, h: &BatchHeader, pos: u64, total: u64, index_interval_bytes: u32) {
        // Kafka adds an entry once more than index_interval_bytes were written since the last
        // one; the first batch of a segment therefore gets none unless it alone is that large.
        if self.bytes_since_last_index_entry > index_interval_bytes as u64 {
            if pos <= u32::MAX as u64 {
                self.offset_index.append(h.last_offset(), pos as u32);
            }
            if !self.time_index.is_full() {
                self.time_index
                    .maybe_append(self.max_timestamp, self.shallow_offset_of_max_timestamp);
            }
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += total;
    }

    /// Appends one whole batch (already carrying its offsets) at the end of the file.
    pub fn append(&mut self, batch: &[u8], index_interval_bytes: u32) -> Result<()> {
        let h = parse_header(batch)?;
        self.append_batch(batch, &h, index_interval_bytes)
    }

    /// [`LogSegment::append`] with the batch's header as the caller already holds it.
    pub fn append_batch(
        &mut self,
        batch: &[u8],
        h: &BatchHeader,
        index_interval_bytes: u32,
    ) -> Result<()> {
        let pos = self.size;
        self.log
            .write_all_at(batch, pos)
            .ctx("append segment", &self.log_path)?;
        self.size += batch.len() as u64;
        self.file_len = self.file_len.max(self.size);
        self.written_len = self.written_len.max(self.size);
        if self.first_batch_timestamp.is_none() {
            self.first_batch_timestamp = Some(h.max_timestamp);
        }
        self.note_batch(h);
        self.maybe_index(h, pos, batch.len() as u64, index_interval_bytes);
        Ok(())
    }

    fn read_header_at_within(&self, pos: u64, limit: u64) -> Result<Option<BatchHeader>> {
        if pos + RECORD_BATCH_OVERHEAD as u64 > limit {
            return Ok(None);
        }
        let mut b = [0u8; RECORD_BATCH_OVERHEAD];
        self.log
            .read_exact_at(&mut b, pos)
            .ctx("read segment", &self.log_path)?;
        Ok(parse_header(&b).ok())
    }

    /// The header of the complete batch at `pos`, or None at the end of the data.
    pub fn read_header_at(&self, pos: u64) -> Result<Option<BatchHeader>> {
        match self.read_header_at_within(pos, self.size)? {
            Some(h)
                if h.batch_length >= (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32
                    && h.total_size() as u64 <= self.size - pos =>
            {
                Ok(Some(h))
            }
            _ => Ok(None),
        }
    }

    pub fn read_bytes(&self, pos: u64, len: usize) -> Result<Vec<u8>> {
        let len = len.min(self.size.saturating_sub(pos) as usize);
        let mut buf = vec![0u8; len];
        self.log
            .read_exact_at(&mut buf, pos)
            .ctx("read segment", &self.log_path)?;
        Ok(buf)
    }

    /// The first batch whose last offset is >= `offset` (Kafka's `translateOffset`), with its
    /// position. Starts from the offset index.
    pub fn find_batch(&self, offset: i64) -> Result<Option<(u64, BatchHeader)>> {
        let mut pos = self.offset_index.lookup(offset).1 as u64;
        while let Some(h) = self.read_header_at(pos)? {
            if h.last_offset() >= offset {
                return Ok(Some((pos, h)));
            }
            pos += h.total_size() as u64;
        }
        Ok(None)
    }

    /// The whole batches from `start` (a batch boundary) that end within `limit` bytes of the
    /// file: (their end position, the offset after them). The scan starts at the offset index
    /// entry at or below `limit`, so it reads a few headers rather than every batch. When no
    /// batch fits, the end is `start`.
    pub fn whole_batches_within(&self, start: u64, limit: u64) -> Result<(u64, Option<i64>)> {
        let limit = limit.min(self.size);
        let indexed = self
            .offset_index
            .lookup_position(limit.min(u32::MAX as u64) as u32)
            .1 as u64;
        let mut pos = indexed.max(start);
        let mut next_offset = None;
        while let Some(h) = self.read_header_at(pos)? {
            let end = pos + h.total_size() as u64;
            if end > limit {
                if next_offset.is_none() && pos > start {
                    // The batches before this index entry fit; the offset after them is this
                    // batch's first.
                    next_offset = Some(h.base_offset);
                }
                break;
            }
            pos = end;
            next_offset = Some(h.last_offset() + 1);
        }
        Ok((pos, next_offset))
    }

    /// Visits every batch from position `pos` on; the callback returns false to stop.
    pub fn for_each_batch_from(
        &self,
        mut pos: u64,
        f: &mut dyn FnMut(u64, &BatchHeader) -> bool,
    ) -> Result<()> {
        while let Some(h) = self.read_header_at(pos)? {
            if !f(pos, &h) {
                break;
            }
            pos += h.total_size() as u64;
        }
        Ok(())
    }

    /// Drops every batch whose last offset is >= `offset` (the batch holding `offset` goes
    /// whole, as in Kafka). Returns the bytes removed.
    pub fn truncate_to(&mut self, offset: i64, index_interval_bytes: u32) -> Result<u64> {
        let Some((pos, _)) = self.find_batch(offset)? else {
            return Ok(0);
        };
        let removed = self.size - pos;
        self.log
            .set_len(pos)
            .ctx("truncate segment", &self.log_path)?;
        self.size = pos;
        self.file_len = pos;
        self.written_len = pos;
        self.offset_index.truncate_to_position(pos as u32);
        self.time_index.truncate_to(offset);
        self.txn_index.truncate_to(offset)?;
        // Recompute next offset / max timestamp from the surviving data.
        let keep = self.size;
        if keep == 0 {
            self.offset_index.reset();
            self.time_index.reset();
            self.next_offset = None;
            self.max_timestamp = -1;
            self.shallow_offset_of_max_timestamp = -1;
            self.first_batch_timestamp = None;
            self.bytes_since_last_index_entry = 0;
        } else {
            self.recover(index_interval_bytes)?;
        }
        Ok(removed)
    }

    /// Kafka's `onBecomeInactiveSegment` / close: record the final max timestamp in the time
    /// index (its reserved slot), trim both index files to their entries and the log file to
    /// its batches (Kafka's `FileRecords.trim` of a preallocated file).
    pub fn seal(&mut self) -> Result<()> {
        if self.max_timestamp >= 0 {
            self.time_index
                .maybe_append(self.max_timestamp, self.shallow_offset_of_max_timestamp);
        }
        self.offset_index.trim()?;
        self.time_index.trim()?;
        self.trim_log()
    }

    /// Cuts the log file back to its batches when room was reserved past them.
    pub fn trim_log(&mut self) -> Result<()> {
        if self.file_len > self.size {
            self.log
                .set_len(self.size)
                .ctx("trim segment", &self.log_path)?;
            self.file_len = self.size;
            self.written_len = self.size;
        }
        Ok(())
    }

    /// Kafka's `preallocate`: sets the file's length to `len` up front (a sparse file here as
    /// with Kafka's `RandomAccessFile.setLength`), so appends do not grow it.
    pub fn preallocate_log(&mut self, len: u64) -> Result<()> {
        if self.file_len < len {
            self.log
                .set_len(len)
                .ctx("preallocate segment", &self.log_path)?;
            self.file_len = len;
        }
        Ok(())
    }

    /// Bytes written ahead of the batches, ready for appends to overwrite.
    pub fn written_ahead(&self) -> u64 {
        self.written_len.saturating_sub(self.size)
    }

    /// Writes zeros from the end of what was written up to `up_to`. The durable mode does this
    /// ahead of appends: an append that grows the file, or fills a hole, makes the next
    /// fdatasync write the block allocation as well (inode, bitmaps, extents) and holds the
    /// page it writes while that metadata is written, so appends meanwhile stall; over written
    /// blocks the fdatasync writes only the appended pages (PostgreSQL zero-fills its WAL
    /// segments for the same reason).
    pub fn write_zeros_ahead(&mut self, up_to: u64) -> Result<u64> {
        static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
        let from = self.written_len.max(self.size);
        let mut pos = from;
        while pos < up_to {
            let n = (up_to - pos).min(ZEROS.len() as u64) as usize;
            self.log
                .write_all_at(&ZEROS[..n], pos)
                .ctx("write zeros ahead in segment", &self.log_path)?;
            pos += n as u64;
            self.written_len = pos;
            self.file_len = self.file_len.max(pos);
        }
        Ok(pos.saturating_sub(from))
    }

    /// Preallocates both index files for appends (active segment).
    pub fn preallocate_indexes(&mut self, segment_index_bytes: u32) -> Result<()> {
        self.offset_index.resize(segment_index_bytes as usize)?;
        self.time_index.resize(segment_index_bytes as usize)
    }

    /// The `.log` file, to fsync outside the log's lock.
    pub fn log_file(&self) -> (Arc<File>, &Path) {
        (self.log.clone(), &self.log_path)
    }

    pub fn flush(&self) -> Result<()> {
        self.log.sync_data().ctx("fsync segment", &self.log_path)?;
        self.offset_index.flush()?;
        self.time_index.flush()?;
        self.txn_index.flush()
    }

    /// Renames the files from `<name><old_suffix>` to `<name><new_suffix>`, the indexes
    /// first and the log last: recovery keys on the log file's suffix, so a crash between the
    /// renames leaves at worst indexes that are rebuilt (Kafka's `changeFileSuffixes`).
    pub fn change_suffix(&mut self, old_suffix: &str, new_suffix: &str) -> Result<()> {
        let renamed = |p: &Path| -> PathBuf {
            let s = p.to_string_lossy();
            let stem = s.strip_suffix(old_suffix).unwrap_or(&s);
            PathBuf::from(format!("{stem}{new_suffix}"))
        };
        let idx = renamed(self.offset_index.path());
        self.offset_index.rename_to(&idx)?;
        let tidx = renamed(self.time_index.path());
        self.time_index.rename_to(&tidx)?;
        let txn = renamed(self.txn_index.path());
        self.txn_index.rename_to(&txn)?;
        let log = renamed(&self.log_path);
        std::fs::rename(&self.log_path, &log).ctx("rename segment", &self.log_path)?;
        self.log_path = log;
        Ok(())
    }

    /// Renames the segment's files to `*.deleted` and returns their new paths (Kafka deletes them
    /// after file.delete.delay.ms).
    pub fn mark_deleted(mut self) -> Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        let log_new = PathBuf::from(format!("{}{DELETED_SUFFIX}", self.log_path.display()));
        std::fs::rename(&self.log_path, &log_new).ctx("rename segment", &self.log_path)?;
        out.push(log_new);
        let idx_new = PathBuf::from(format!(
            "{}{DELETED_SUFFIX}",
            self.offset_index.path().display()
        ));
        self.offset_index.rename_to(&idx_new)?;
        out.push(idx_new);
        let tidx_new = PathBuf::from(format!(
            "{}{DELETED_SUFFIX}",
            self.time_index.path().display()
        ));
        self.time_index.rename_to(&tidx_new)?;
        out.push(tidx_new);
        if self.txn_index.exists() {
            let txn_new = PathBuf::from(format!(
                "{}{DELETED_SUFFIX}",
                self.txn_index.path().display()
            ));
            self.txn_index.rename_to(&txn_new)?;
            out.push(txn_new);
        }
        Ok(out)
    }
}

/// The offset of the first record in `batch` whose timestamp equals `ts` (None for a
/// compressed batch or when no record carries it).
pub fn offset_of_timestamp(batch: &[u8], ts: i64) -> Option<i64> {
    record_offsets_and_timestamps(batch)?
        .into_iter()
        .find(|&(_, t)| t == ts)
        .map(|(o, _)| o)
}
