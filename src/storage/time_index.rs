//! The sparse `.timeindex` file of a segment (Kafka's `TimeIndex`): 12-byte entries of
//! (timestamp: i64, offset relative to the segment's base offset: u32), big-endian. An entry is
//! added only when the segment's max timestamp grows, so timestamps strictly increase.

use std::path::Path;

use super::error::Result;
use super::index::{be_i64, be_u32, IndexFile};

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

    pub fn entries(&self) -> usize {
        self.file.entries()
    }

    /// Full one entry early, as Kafka's `TimeIndex.isFull`: the last slot is kept for the
    /// final (max timestamp) entry written when the segment rolls or closes.
    pub fn is_full(&self) -> bool {
        self.file.entries() + 1 >= self.file.max_entries()
    }

    /// Entry `i` as (timestamp, absolute offset).
    pub fn entry(&self, i: usize) -> (i64, i64) {
        let e = self.file.entry(i);
        (be_i64(e, 0), self.base_offset + be_u32(e, 8) as i64)
    }

    pub fn last_entry(&self) -> Option<(i64, i64)> {
        match self.entries() {
            0 => None,
            n => Some(self.entry(n - 1)),
        }
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
        let (mut lo, mut hi) = (0usize, self.entries());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.entry(mid).0 <= target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            (-1, self.base_offset)
        } else {
            self.entry(lo - 1)
        }
    }

    /// Drops entries whose offset is >= `offset`.
    pub fn truncate_to(&mut self, offset: i64) {
        let mut n = self.entries();
        while n > 0 && self.entry(n - 1).1 >= offset {
            n -= 1;
        }
        self.file.truncate_entries(n);
    }

    pub fn reset(&mut self) {
        self.file.truncate_entries(0);
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

    pub fn resize(&mut self, max_bytes: usize) -> Result<()> {
        self.file.resize(max_bytes)
    }

    pub fn trim(&mut self) -> Result<()> {
        self.file.trim()
    }

    pub fn flush(&self) -> Result<()> {
        self.file.flush()
    }

    pub fn path(&self) -> &Path {
        self.file.path()
    }

    pub fn rename_to(&mut self, p: &Path) -> Result<()> {
        self.file.rename_to(p)
    }
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
