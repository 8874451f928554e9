//! Opening the log dirs at start-up (Kafka's `LogManager.loadLogs`): each dir's
//! `meta.properties`, its offset checkpoints (an unreadable one is reset with a warning, as
//! Kafka does, rather than failing the dir), and its partition logs, recovered unless the dir
//! was shut down cleanly (the clean-shutdown marker, deleted once read).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::checkpoint::{
    read_meta_properties, read_offset_checkpoint, MetaProperties, OffsetMap, CLEAN_SHUTDOWN_MARKER,
    LOG_START_OFFSET_CHECKPOINT, META_PROPERTIES, RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
};
use super::cleaner::CLEANER_OFFSET_CHECKPOINT;
use super::config::LogConfig;
use super::error::{IoContext, Result, StorageError};
use super::log::{parse_topic_partition, PartitionLog};
use super::log_dir::LogDirState;
use super::manager::METADATA_TOPIC;

/// Creates a log dir if needed and reads its `meta.properties`.
pub(super) fn read_dir_meta(dir: &Path) -> Result<Option<MetaProperties>> {
    std::fs::create_dir_all(dir).ctx("create log dir", dir)?;
    // A file where the dir should be: creating "succeeds" on some systems, listing would not.
    if !dir.is_dir() {
        return Err(StorageError::Io {
            op: "open log dir",
            path: dir.to_path_buf(),
            source: std::io::Error::from_raw_os_error(libc::ENOTDIR),
        });
    }
    read_meta_properties(&dir.join(META_PROPERTIES))
}

/// Records the partitions of a dir that failed at start-up, as far as it can still be listed:
/// a dir that cannot (EIO, not a directory) hides which partitions it holds.
pub(super) fn list_offline_partitions(dir: &Path, out: &mut HashMap<(String, i32), PathBuf>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(log_dir = %dir.display(), error = %e, "the partitions of an offline log dir are unknown");
            return;
        }
    };
    for entry in entries.flatten() {
        if let Ok(tp) = parse_topic_partition(&entry.path()) {
            if tp.0 != METADATA_TOPIC {
                out.insert(tp, dir.to_path_buf());
            }
        }
    }
}

/// What [`load_dir`] opened in one log dir.
pub(super) struct LoadedDir {
    pub logs: HashMap<(String, i32), Arc<PartitionLog>>,
    /// From `replication-offset-checkpoint`.
    pub high_watermarks: OffsetMap,
}

/// Opens every partition log of one dir, recovering them unless the dir was shut down cleanly.
pub(super) fn load_dir(
    state: &Arc<LogDirState>,
    config: &LogConfig,
    now_ms: i64,
) -> Result<LoadedDir> {
    let dir = state.path();
    let marker = dir.join(CLEAN_SHUTDOWN_MARKER);
    let clean = marker.exists();
    if clean {
        std::fs::remove_file(&marker).ctx("remove clean shutdown marker", &marker)?;
    }
    // Kafka's loadLogs resets an unreadable recovery point (to 0: every log is recovered in
    // full) and log start (to each log's first segment) rather than fail.
    let recovery_points = read_checkpoint_or_reset(
        dir,
        RECOVERY_POINT_CHECKPOINT,
        "every log of the dir is recovered from its start",
    )?;
    // A clean shutdown skips recovery; without the recovery points it cannot be trusted.
    let clean = clean && recovery_points.is_some();
    let recovery_points = recovery_points.unwrap_or_default();
    let log_starts = read_checkpoint_or_reset(
        dir,
        LOG_START_OFFSET_CHECKPOINT,
        "log start offsets reset to the first segments",
    )?
    .unwrap_or_default();
    let cleaner_offsets = read_checkpoint_or_reset(
        dir,
        CLEANER_OFFSET_CHECKPOINT,
        "compacted logs are cleaned again from their start",
    )?
    .unwrap_or_default();
    let high_watermarks = read_checkpoint_or_reset(
        dir,
        REPLICATION_OFFSET_CHECKPOINT,
        "replicas start their high watermarks at their log start",
    )?
    .unwrap_or_default();
    let mut logs = HashMap::new();
    for entry in std::fs::read_dir(dir).ctx("list log dir", dir)? {
        let entry = entry.ctx("list log dir", dir)?;
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        // Directories that are not <topic>-<partition> (or are being deleted) are skipped, and
        // so is the controller quorum's metadata log, which is not a partition log.
        let Ok(tp) = parse_topic_partition(&path) else {
            continue;
        };
        if tp.0 == METADATA_TOPIC {
            continue;
        }
        let recovery_point = recovery_points.get(&tp).copied().unwrap_or(0);
        let log_start = log_starts.get(&tp).copied().unwrap_or(0);
        let log = PartitionLog::open_with_log_start_offset(
            path,
            config.clone(),
            recovery_point,
            log_start,
            clean,
            now_ms,
        )?
        .in_log_dir(state.clone());
        if let Some(&offset) = cleaner_offsets.get(&tp) {
            log.set_cleaner_checkpoint(offset);
        }
        logs.insert(tp, Arc::new(log));
    }
    let high_watermarks = high_watermarks
        .into_iter()
        .filter(|(tp, _)| logs.contains_key(tp))
        .collect();
    Ok(LoadedDir {
        logs,
        high_watermarks,
    })
}

/// Reads one of a dir's offset checkpoints. A file that cannot be parsed (torn, or not a
/// checkpoint) is ignored with a warning saying what that costs (`reset`), as Kafka's
/// `loadLogs` does for the recovery points and log starts. For the high watermarks Kafka
/// instead takes the dir offline, but a torn high-watermark file loses nothing a follower
/// cannot fetch again, while an offline dir loses every replica in it. An I/O error still
/// takes the dir offline. None when the file was unreadable and is reset.
fn read_checkpoint_or_reset(dir: &Path, name: &str, reset: &str) -> Result<Option<OffsetMap>> {
    let path = dir.join(name);
    match read_offset_checkpoint(&path) {
        Err(e @ StorageError::CorruptFile { .. }) => {
            tracing::warn!(path = %path.display(), error = %e, "ignoring an unreadable checkpoint: {reset}");
            Ok(None)
        }
        // Bytes that are not text are garbage in the file, not a failing disk.
        Err(StorageError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::InvalidData =>
        {
            tracing::warn!(path = %path.display(), error = %source, "ignoring an unreadable checkpoint: {reset}");
            Ok(None)
        }
        other => other.map(Some),
    }
}
