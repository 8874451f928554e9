//! Per-log configuration (Kafka's `LogConfig` topic-level settings) and the results of appends
//! and reads. Defaults are Kafka's.

use bytes::Bytes;

/// Topic-level log settings; names follow Kafka's (`segment.bytes` -> `segment_bytes`).
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes`: roll when the active segment would grow past this (default 1 GiB).
    pub segment_bytes: u64,
    /// `segment.ms`: roll when the active segment is older than this (default 7 days).
    pub segment_ms: i64,
    /// `retention.ms`: delete segments whose newest record is older (default 7 days; -1 forever).
    pub retention_ms: i64,
    /// `retention.bytes`: delete oldest segments beyond this size (default -1, no limit).
    pub retention_bytes: i64,
    /// `index.interval.bytes`: bytes between offset-index entries (default 4096).
    pub index_interval_bytes: u32,
    /// `segment.index.bytes`: preallocated size of each index file (default 10 MiB).
    pub segment_index_bytes: u32,
    /// `flush.messages`: fsync after this many messages (default never).
    pub flush_messages: u64,
    /// `flush.ms`: fsync when the last flush is older than this (default never).
    pub flush_ms: i64,
    /// `file.delete.delay.ms`: how long `.deleted` files linger (default 60 s).
    pub file_delete_delay_ms: i64,
    /// `cleanup.policy` contains `compact`: the log cleaner keeps the latest record per key
    /// (default false).
    pub compact: bool,
    /// `cleanup.policy` contains `delete`: retention.ms / retention.bytes delete old segments
    /// (default true). A compact-only log is never trimmed by time or size.
    pub delete: bool,
    /// `delete.retention.ms`: how long a tombstone survives after its batch was first cleaned
    /// (the delete horizon; default 1 day).
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`: a record stays uncompacted at least this long (default 0).
    pub min_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio`: dirty bytes / total cleanable bytes before a clean is due
    /// (default 0.5).
    pub min_cleanable_dirty_ratio: f64,
    /// `max.compaction.lag.ms`: a log whose oldest dirty segment is older than this is cleaned
    /// whatever its dirty ratio (default i64::MAX, never).
    pub max_compaction_lag_ms: i64,
    /// `preallocate`: a new segment's file is sized to `segment.bytes` when created and trimmed
    /// to its batches when rolled or closed (default false).
    pub preallocate: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            retention_ms: 7 * 24 * 60 * 60 * 1000,
            retention_bytes: -1,
            index_interval_bytes: 4096,
            segment_index_bytes: 10 * 1024 * 1024,
            flush_messages: u64::MAX,
            flush_ms: i64::MAX,
            file_delete_delay_ms: 60_000,
            compact: false,
            delete: true,
            delete_retention_ms: 24 * 60 * 60 * 1000,
            min_compaction_lag_ms: 0,
            min_cleanable_dirty_ratio: 0.5,
            max_compaction_lag_ms: i64::MAX,
            preallocate: false,
        }
    }
}

/// What an append wrote (Kafka's `LogAppendInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    /// The LogAppendTime written into the batches, or -1 for CreateTime.
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    pub valid_bytes: usize,
}

/// Whole batches of one segment left in its file, to be sent from there (sendfile) rather
/// than copied: Kafka's `FileRecords` slice. The open file keeps the data readable even if
/// the segment is deleted meanwhile.
#[derive(Debug, Clone)]
pub struct FileRegion {
    pub file: std::sync::Arc<std::fs::File>,
    pub position: u64,
    pub len: usize,
    /// The offset after the last record in the region.
    pub next_offset: i64,
}

impl FileRegion {
    /// The region's bytes, read into memory.
    pub fn read(&self) -> std::io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; self.len];
        self.file.read_exact_at(&mut buf, self.position)?;
        Ok(buf)
    }
}

/// What [`crate::storage::PartitionLog::read_region`] found: the region (None when nothing
/// is to be returned) and the log bounds at the time of the read.
#[derive(Debug, Clone)]
pub struct RegionDataInfo {
    pub region: Option<FileRegion>,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
}

/// Whole batches returned by a read, and the log bounds at the time of the read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchDataInfo {
    pub records: Bytes,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
}
