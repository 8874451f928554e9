//! The sparse `.timeindex` file of a segment (Kafka's `TimeIndex`): 12-byte entries of
//! (timestamp: i64, offset relative to the segment's base offset: u32), big-endian. An entry is
//! added only when the segment's max timestamp grows, so timestamps strictly increase.

use std::path::Path;

use super::error::Result;
use super::index::{be_i64, be_u32, delegate_to_index_file, IndexFile};

pub const TIME_INDEX_ENTRY_SIZE: usize = 12;

#[derive(Debug)]
pub struct TimeIndex {
    file: IndexFile,
    base_offset: i64,
}

impl TimeIndex {
    pub fn open(path: &Path, base_offset: i64) -> Result<Self> {
        Ok(TimeIndex {
            file: IndexFile::open(path, TIME_INDEX_ENTRY_SIZE)?,
            base_offset,
        })
    }

    delegate_to_index_file!();

    /// Full one entry early, as Kafka's `TimeIndex.isFull`: the last slot is kept for the
    /// final (max timestamp) entry written when the segment rolls or closes.
    pub fn is_full(&self) -> bool {
        self.file.entries() + 1 >= self.file.max_entries()
    }

    /// Entry `i` as (timestamp, absolute offset).
    pub fn entry(&self, i: usize) -> (i64, i64) {
        decode(self.base_offset, self.file.entry(i))
    }

    pub fn last_entry(&self) -> Option<(i64, i64)> {
        self.entries().checked_sub(1).map(|i| self.entry(i))
    }

    /// Adds (timestamp, offset) if the timestamp is larger than the last entry's.
    pub fn maybe_append(&mut self, timestamp: i64, offset: i64) -> bool {
        let rel = offset - self.base_offset;
        if rel < 0 || rel > u32::MAX as i64 || timestamp < 0 {
            return false;
        }
        if let Some((last_ts, last_offset)) = self.last_entry() {
            if timestamp <= last_ts || offset < last_offset {
                return false;
            }
        }
        let mut b = [0u8; 12];
        b[..8].copy_from_slice(&timestamp.to_be_bytes());
        b[8..].copy_from_slice(&(rel as u32).to_be_bytes());
        self.file.push(&b)
    }

    /// The entry with the largest timestamp <= `target`, else (-1, base_offset): the offset
    /// from which a scan for the first record with timestamp >= `target` may start.
    pub fn lookup(&self, target: i64) -> (i64, i64) {
        let base = self.base_offset;
        match self.file.partition_point(|e| decode(base, e).0 <= target) {
            0 => (-1, base),
            n => self.entry(n - 1),
        }
    }

    /// Drops entries whose offset is >= `offset`.
    pub fn truncate_to(&mut self, offset: i64) {
        let base = self.base_offset;
        self.file.truncate_while(|e| decode(base, e).1 >= offset);
    }

    /// True if timestamps strictly grow and offsets never go back or past `next_offset`.
    pub fn is_sane(&self, next_offset: i64) -> Result<bool> {
        if self.file.has_partial_entry()? {
            return Ok(false);
        }
        let mut prev: Option<(i64, i64)> = None;
        for i in 0..self.entries() {
            let (t, o) = self.entry(i);
            if o >= next_offset.max(self.base_offset + 1) || t < 0 {
                return Ok(false);
            }
            if let Some((pt, po)) = prev {
                if t <= pt || o < po {
                    return Ok(false);
                }
            }
            prev = Some((t, o));
        }
        Ok(true)
    }
}

/// An entry's bytes as (timestamp, absolute offset).
fn decode(base_offset: i64, e: &[u8]) -> (i64, i64) {
    (be_i64(e, 0), base_offset + be_u32(e, 8) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_only_growing_timestamps_and_looks_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("00000000000000000050.timeindex");
        let mut idx = TimeIndex::open(&path, 50).expect("open");
        idx.resize(120).expect("resize");
        assert_eq!(idx.lookup(5), (-1, 50));
        assert!(idx.maybe_append(1000, 52));
        assert!(!idx.maybe_append(1000, 53), "same timestamp is skipped");
        assert!(!idx.maybe_append(900, 54), "older timestamp is skipped");
        assert!(idx.maybe_append(2000, 60));
        assert_eq!(idx.lookup(999), (-1, 50));
        assert_eq!(idx.lookup(1000), (1000, 52));
        assert_eq!(idx.lookup(1500), (1000, 52));
        assert_eq!(idx.lookup(5000), (2000, 60));
        assert!(idx.is_sane(61).expect("sane"));
        assert!(!idx.is_sane(55).expect("check"), "entry past the log end");
        idx.truncate_to(60);
        assert_eq!(idx.entries(), 1);
        idx.trim().expect("trim");
        drop(idx);
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), 12);
    }
}
