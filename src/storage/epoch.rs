//! The leader epoch cache backed by `leader-epoch-checkpoint` (Kafka's `LeaderEpochFileCache`):
//! (epoch, start_offset) pairs in increasing order, used to answer OffsetForLeaderEpoch and to
//! truncate followers. Every change is written through to the checkpoint file; an `assign`
//! is fsynced only when the log flushes (as Kafka since KAFKA-15046), which is safe because
//! recovery re-assigns epochs from the batches past the recovery point, and a checkpoint lost
//! to a crash is rebuilt from the batch headers.

use std::path::{Path, PathBuf};

use super::checkpoint::{
    read_leader_epoch_checkpoint, sync_file, write_leader_epoch_checkpoint, LEADER_EPOCH_CHECKPOINT,
};
use super::error::{Result, StorageError};

/// Kafka's `UNDEFINED_EPOCH` and `UNDEFINED_EPOCH_OFFSET`.
pub const UNDEFINED_EPOCH: i32 = -1;
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

#[derive(Debug)]
pub struct LeaderEpochCache {
    path: PathBuf,
    /// (epoch, start_offset), both strictly increasing.
    entries: Vec<(i32, i64)>,
    /// The file holds entries not yet fsynced.
    unsynced: bool,
}

impl LeaderEpochCache {
    /// Loads the checkpoint in `dir` (missing file: empty cache). The flag is false when the
    /// file existed but could not be read (a crash before its deferred fsync can leave it
    /// empty): the cache is then empty and the caller rebuilds it from the log.
    pub fn load(dir: &Path) -> Result<(Self, bool)> {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT);
        let (mut entries, readable) = match read_leader_epoch_checkpoint(&path) {
            Ok(e) => (e, true),
            Err(StorageError::CorruptFile { .. }) => (Vec::new(), false),
            Err(e) => return Err(e),
        };
        // Keep only a monotonic sequence, in case the file was edited by hand.
        entries.sort();
        entries.dedup_by(|b, a| b.1 <= a.1);
        let cache = LeaderEpochCache {
            path,
            entries,
            unsynced: false,
        };
        Ok((cache, readable))
    }

    /// fsyncs entries written since the last sync; the log calls it before it moves its
    /// recovery point.
    pub fn sync(&mut self) -> Result<()> {
        if self.unsynced {
            sync_file(&self.path)?;
            self.unsynced = false;
        }
        Ok(())
    }

    pub fn entries(&self) -> &[(i32, i64)] {
        &self.entries
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.0)
    }

    /// Durable write, for truncations: they must not be undone by a crash.
    fn write(&mut self) -> Result<()> {
        write_leader_epoch_checkpoint(&self.path, &self.entries, true)?;
        self.unsynced = false;
        Ok(())
    }

    /// Records that `epoch` starts at `start_offset` (Kafka's `assign`): a no-op if it is the
    /// latest epoch already with an equal or smaller start; otherwise every entry with an epoch
    /// >= `epoch` or a start offset >= `start_offset` is dropped first.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<bool> {
        if epoch < 0 || start_offset < 0 {
            return Ok(false);
        }
        if let Some(&(last_epoch, last_start)) = self.entries.last() {
            if last_epoch == epoch && start_offset >= last_start {
                return Ok(false);
            }
        }
        while let Some(&(e, s)) = self.entries.last() {
            if e >= epoch || s >= start_offset {
                self.entries.pop();
            } else {
                break;
            }
        }
        self.entries.push((epoch, start_offset));
        write_leader_epoch_checkpoint(&self.path, &self.entries, false)?;
        self.unsynced = true;
        Ok(true)
    }

    /// Kafka's `endOffsetFor`: (largest known epoch <= `requested`, start offset of the next
    /// epoch), or `log_end_offset` for the latest epoch; (-1, -1) for an undefined or
    /// too-new epoch; (requested, first start offset) if older than everything known.
    pub fn end_offset_for(&self, requested: i32, log_end_offset: i64) -> (i32, i64) {
        if requested == UNDEFINED_EPOCH {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        }
        if self.latest_epoch() == Some(requested) {
            return (requested, log_end_offset);
        }
        let Some(&(_, higher_start)) = self.entries.iter().find(|e| e.0 > requested) else {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        };
        match self.entries.iter().rev().find(|e| e.0 <= requested) {
            None => (requested, higher_start),
            Some(&(floor_epoch, _)) => (floor_epoch, higher_start),
        }
    }

    /// Drops entries whose start offset is >= `end_offset` (log truncated to `end_offset`).
    pub fn truncate_from_end(&mut self, end_offset: i64) -> Result<()> {
        let before = self.entries.len();
        if end_offset >= 0 {
            self.entries.retain(|e| e.1 < end_offset);
        }
        if self.entries.len() != before {
            self.write()?;
        }
        Ok(())
    }

    /// Log start moved to `start_offset`: entries starting at or before it collapse into one
    /// entry (the last of them) that starts at `start_offset`.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> Result<()> {
        let n = self
            .entries
            .iter()
            .take_while(|e| e.1 <= start_offset)
            .count();
        if n == 0 {
            return Ok(());
        }
        let last_epoch = self.entries[n - 1].0;
        if n == 1 && self.entries[0].1 == start_offset {
            return Ok(());
        }
        self.entries.drain(..n);
        self.entries.insert(0, (last_epoch, start_offset));
        self.write()
    }

    pub fn clear(&mut self) -> Result<()> {
        self.entries.clear();
        self.write()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(i32, i64)]) -> (tempfile::TempDir, LeaderEpochCache) {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut c, _) = LeaderEpochCache::load(dir.path()).expect("load");
        for &(e, s) in entries {
            c.assign(e, s).expect("assign");
        }
        (dir, c)
    }

    #[test]
    fn end_offset_for_follows_kafka() {
        let (_d, c) = cache(&[(1, 0), (3, 10), (5, 20)]);
        assert_eq!(c.end_offset_for(-1, 30), (-1, -1), "undefined epoch");
        assert_eq!(
            c.end_offset_for(5, 30),
            (5, 30),
            "latest epoch -> log end offset"
        );
        assert_eq!(c.end_offset_for(3, 30), (3, 20));
        assert_eq!(
            c.end_offset_for(4, 30),
            (3, 20),
            "unknown epoch in between -> floor epoch"
        );
        assert_eq!(
            c.end_offset_for(0, 30),
            (0, 0),
            "older than all -> requested, first start"
        );
        assert_eq!(c.end_offset_for(6, 30), (-1, -1), "newer than all");
        let (_d, empty) = cache(&[]);
        assert_eq!(empty.end_offset_for(2, 30), (-1, -1));
    }

    #[test]
    fn assign_truncates_non_monotonic_entries_and_persists() {
        let (dir, mut c) = cache(&[(1, 0), (2, 10), (4, 20)]);
        assert!(
            !c.assign(4, 25).expect("assign"),
            "same epoch, later start: no-op"
        );
        assert!(c.assign(3, 15).expect("assign"));
        assert_eq!(c.entries(), &[(1, 0), (2, 10), (3, 15)]);
        let (reloaded, _) = LeaderEpochCache::load(dir.path()).expect("load");
        assert_eq!(reloaded.entries(), c.entries());
    }

    #[test]
    fn truncation_from_both_ends() {
        let (_d, mut c) = cache(&[(1, 0), (2, 10), (4, 20)]);
        c.truncate_from_end(20).expect("truncate");
        assert_eq!(c.entries(), &[(1, 0), (2, 10)]);
        c.truncate_from_start(12).expect("truncate");
        assert_eq!(c.entries(), &[(2, 12)]);
        c.truncate_from_start(5).expect("no-op");
        assert_eq!(c.entries(), &[(2, 12)]);
    }
}
