//! The sparse `.index` file of a segment (Kafka's `OffsetIndex`): 8-byte entries of
//! (offset relative to the segment's base offset: u32, byte position in the `.log`: u32), both
//! big-endian. As in Kafka, an entry names the *last* offset of a batch and the position where
//! that batch starts, so `kafka-dump-log --index-sanity-check` agrees with our files.

use std::path::Path;

use super::error::Result;
use super::index::{be_u32, delegate_to_index_file, IndexFile};

pub const OFFSET_INDEX_ENTRY_SIZE: usize = 8;

#[derive(Debug)]
pub struct OffsetIndex {
    file: IndexFile,
    base_offset: i64,
}

impl OffsetIndex {
    pub fn open(path: &Path, base_offset: i64) -> Result<Self> {
        Ok(OffsetIndex {
            file: IndexFile::open(path, OFFSET_INDEX_ENTRY_SIZE)?,
            base_offset,
        })
    }

    delegate_to_index_file!();

    pub fn is_full(&self) -> bool {
        self.file.is_full()
    }

    /// Entry `i` as (absolute offset, position).
    pub fn entry(&self, i: usize) -> (i64, u32) {
        decode(self.base_offset, self.file.entry(i))
    }

    /// Records that the batch ending at `offset` starts at `position`. Entries must grow;
    /// out-of-order or overflowing entries are skipped (the index is only a hint).
    pub fn append(&mut self, offset: i64, position: u32) -> bool {
        let rel = offset - self.base_offset;
        if rel < 0 || rel > u32::MAX as i64 {
            return false;
        }
        if let Some((last_offset, last_pos)) = self.last_entry() {
            if offset <= last_offset || position <= last_pos {
                return false;
            }
        }
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&(rel as u32).to_be_bytes());
        b[4..].copy_from_slice(&position.to_be_bytes());
        self.file.push(&b)
    }

    pub fn last_entry(&self) -> Option<(i64, u32)> {
        self.entries().checked_sub(1).map(|i| self.entry(i))
    }

    /// The entry with the largest offset <= `target`, else (base_offset, 0): where a scan for
    /// `target` may start.
    pub fn lookup(&self, target: i64) -> (i64, u32) {
        let base = self.base_offset;
        match self.file.partition_point(|e| decode(base, e).0 <= target) {
            0 => (base, 0),
            n => self.entry(n - 1),
        }
    }

    /// The entry with the largest position <= `position`, else (base_offset, 0): a batch
    /// boundary a scan towards `position` may start from.
    pub fn lookup_position(&self, position: u32) -> (i64, u32) {
        let base = self.base_offset;
        match self.file.partition_point(|e| decode(base, e).1 <= position) {
            0 => (base, 0),
            n => self.entry(n - 1),
        }
    }

    /// Drops entries whose offset is >= `offset`.
    pub fn truncate_to(&mut self, offset: i64) {
        let base = self.base_offset;
        self.file.truncate_while(|e| decode(base, e).0 >= offset);
    }

    /// Drops entries whose position is >= `position` (log file truncated there).
    pub fn truncate_to_position(&mut self, position: u32) {
        let base = self.base_offset;
        self.file.truncate_while(|e| decode(base, e).1 >= position);
    }

    /// True if every entry is in range and strictly increasing (Kafka's `sanityCheck`, made
    /// stricter: a preallocated tail of zeroes left by a crash fails it).
    pub fn is_sane(&self, log_size: u64) -> Result<bool> {
        if self.file.has_partial_entry()? {
            return Ok(false);
        }
        let mut prev: Option<(i64, u32)> = None;
        for i in 0..self.entries() {
            let (o, p) = self.entry(i);
            if p as u64 >= log_size.max(1) {
                return Ok(false);
            }
            if let Some((po, pp)) = prev {
                if o <= po || p <= pp {
                    return Ok(false);
                }
            }
            prev = Some((o, p));
        }
        Ok(true)
    }
}

/// An entry's bytes as (absolute offset, position).
fn decode(base_offset: i64, e: &[u8]) -> (i64, u32) {
    (base_offset + be_u32(e, 0) as i64, be_u32(e, 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_lookup_truncate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("00000000000000000100.index");
        let mut idx = OffsetIndex::open(&path, 100).expect("open");
        idx.resize(80).expect("resize");
        assert_eq!(idx.lookup(150), (100, 0));
        assert!(idx.append(104, 0));
        assert!(idx.append(110, 500));
        assert!(idx.append(130, 900));
        assert!(!idx.append(120, 1000), "offsets must grow");
        assert_eq!(idx.lookup(99), (100, 0));
        assert_eq!(idx.lookup(104), (104, 0));
        assert_eq!(idx.lookup(115), (110, 500));
        assert_eq!(idx.lookup(10_000), (130, 900));
        idx.truncate_to(110);
        assert_eq!(idx.entries(), 1);
        assert_eq!(idx.lookup(200), (104, 0));
        // Trim, reopen, and the entries are still there, with a file of exactly one entry.
        idx.trim().expect("trim");
        drop(idx);
        assert_eq!(std::fs::metadata(&path).expect("stat").len(), 8);
        let idx = OffsetIndex::open(&path, 100).expect("reopen");
        assert_eq!(idx.entries(), 1);
        assert_eq!(idx.entry(0), (104, 0));
        assert!(idx.is_sane(10).expect("sane"));
    }

    #[test]
    fn full_index_refuses_entries_and_zero_tail_is_insane() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("00000000000000000000.index");
        let mut idx = OffsetIndex::open(&path, 0).expect("open");
        idx.resize(17).expect("resize"); // rounds down to 2 entries
        assert!(idx.append(1, 10));
        assert!(idx.append(2, 20));
        assert!(idx.is_full());
        assert!(!idx.append(3, 30));
        idx.truncate_to(2);
        idx.resize(80).expect("resize");
        drop(idx);
        // Reopened without trim: the zero entries after the real one make it insane.
        let idx = OffsetIndex::open(&path, 0).expect("reopen");
        assert_eq!(idx.entries(), 10);
        assert!(!idx.is_sane(1000).expect("check"));
    }
}
