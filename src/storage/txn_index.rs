//! A segment's `.txnindex` (Kafka's `TransactionIndex` with `AbortedTxn` entries): the
//! transactions that an ABORT marker in this segment ended, so that a read_committed fetch can
//! tell the consumer which producers' data to drop without reading markers.
//!
//! On-disk format, as Kafka's: a flat array of 34-byte big-endian entries
//! (version i16 = 0, producer_id i64, first_offset i64, last_offset i64, last_stable_offset i64),
//! in increasing `last_offset` (the ABORT marker's offset). Like Kafka the file is created on the
//! first entry; a segment without aborted transactions has none. Reads are positioned and go in
//! bounded chunks, so a damaged or huge file never causes a large allocation; a torn or
//! nonsensical tail is cut off by [`TransactionIndex::sanitize`] when a segment is loaded.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::error::{IoContext, Result, StorageError};

pub const TXN_INDEX_SUFFIX: &str = ".txnindex";

/// Bytes per entry (Kafka's `AbortedTxn.TOTAL_SIZE`).
pub const ABORTED_TXN_SIZE: usize = 34;

/// The only entry version Kafka writes (`AbortedTxn.CURRENT_VERSION`).
pub const ABORTED_TXN_VERSION: i16 = 0;

/// Entries read per positioned read.
const ENTRIES_PER_READ: usize = 1024;

/// A transaction ended by an ABORT marker (Kafka's `AbortedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    /// Offset of the producer's first batch of the transaction on this partition.
    pub first_offset: i64,
    /// Offset of the ABORT marker.
    pub last_offset: i64,
    /// The partition's last stable offset once the marker was written: the first offset of
    /// the earliest other open transaction, or `last_offset + 1`. A fetch whose upper bound is
    /// at or below it needs no later entries.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    pub fn to_bytes(&self) -> [u8; ABORTED_TXN_SIZE] {
        let mut b = [0u8; ABORTED_TXN_SIZE];
        b[0..2].copy_from_slice(&ABORTED_TXN_VERSION.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        b
    }

    /// Parses one entry; None for a short slice or an unknown version.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let b: &[u8; ABORTED_TXN_SIZE] = b.get(..ABORTED_TXN_SIZE)?.try_into().ok()?;
        let i64_at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            i64::from_be_bytes(x)
        };
        if i16::from_be_bytes([b[0], b[1]]) != ABORTED_TXN_VERSION {
            return None;
        }
        Some(AbortedTxn {
            producer_id: i64_at(2),
            first_offset: i64_at(10),
            last_offset: i64_at(18),
            last_stable_offset: i64_at(26),
        })
    }
}

/// One segment's transaction index.
#[derive(Debug)]
pub struct TransactionIndex {
    path: PathBuf,
    /// Open once the file exists.
    file: Option<File>,
    /// Whole entries in the file.
    entries: u64,
    /// The last entry's `last_offset` (entries are appended in increasing order).
    last_offset: Option<i64>,
}

impl TransactionIndex {
    /// Opens the index at `path` if the file exists; otherwise it is created on the first
    /// append. Call [`TransactionIndex::sanitize`] before trusting it.
    pub fn open(path: &Path) -> Result<Self> {
        let mut idx = TransactionIndex {
            path: path.to_path_buf(),
            file: None,
            entries: 0,
            last_offset: None,
        };
        match OpenOptions::new().read(true).write(true).open(path) {
            Ok(f) => {
                let size = f.metadata().ctx("stat txn index", path)?.len();
                idx.entries = size / ABORTED_TXN_SIZE as u64;
                idx.file = Some(f);
                idx.last_offset = idx
                    .read_entry(idx.entries.checked_sub(1))?
                    .map(|e| e.last_offset);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).ctx("open txn index", path),
        }
        Ok(idx)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file exists (it is created by the first entry).
    pub fn exists(&self) -> bool {
        self.file.is_some()
    }

    pub fn len(&self) -> u64 {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The last entry's `last_offset` (its ABORT marker), if any.
    pub fn last_offset(&self) -> Option<i64> {
        self.last_offset
    }

    fn read_entry(&self, n: Option<u64>) -> Result<Option<AbortedTxn>> {
        let (Some(f), Some(n)) = (&self.file, n) else {
            return Ok(None);
        };
        let mut b = [0u8; ABORTED_TXN_SIZE];
        f.read_exact_at(&mut b, n * ABORTED_TXN_SIZE as u64)
            .ctx("read txn index", &self.path)?;
        Ok(AbortedTxn::from_bytes(&b))
    }

    fn file_or_create(&mut self) -> Result<&File> {
        if self.file.is_none() {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)
                .ctx("create txn index", &self.path)?;
            self.file = Some(f);
        }
        match &self.file {
            Some(f) => Ok(f),
            None => Err(StorageError::InvalidArgument("txn index not open")),
        }
    }

    /// Creates the file (empty) if it does not exist yet (the cleaner writes one for every
    /// cleaned segment, so that a swap always carries its own).
    pub fn create(&mut self) -> Result<()> {
        self.file_or_create().map(|_| ())
    }

    /// Appends an entry. Its `last_offset` must be above the last entry's (Kafka refuses
    /// out-of-order appends the same way).
    pub fn append(&mut self, txn: &AbortedTxn) -> Result<()> {
        if self.last_offset.is_some_and(|l| txn.last_offset <= l) {
            return Err(StorageError::InvalidArgument(
                "txn index entries must be appended in increasing last offset",
            ));
        }
        let pos = self.entries * ABORTED_TXN_SIZE as u64;
        let bytes = txn.to_bytes();
        let path = self.path.clone();
        self.file_or_create()?
            .write_all_at(&bytes, pos)
            .ctx("append txn index", &path)?;
        self.entries += 1;
        self.last_offset = Some(txn.last_offset);
        Ok(())
    }

    /// Visits entries in order; `f` returns false to stop. Reads in bounded chunks.
    pub fn for_each(&self, f: &mut dyn FnMut(&AbortedTxn) -> bool) -> Result<()> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        let mut buf = vec![0u8; ENTRIES_PER_READ * ABORTED_TXN_SIZE];
        let mut n = 0u64;
        while n < self.entries {
            let count = (self.entries - n).min(ENTRIES_PER_READ as u64) as usize;
            let chunk = &mut buf[..count * ABORTED_TXN_SIZE];
            file.read_exact_at(chunk, n * ABORTED_TXN_SIZE as u64)
                .ctx("read txn index", &self.path)?;
            for raw in chunk.chunks_exact(ABORTED_TXN_SIZE) {
                // sanitize() leaves only valid entries; anything else ends the walk.
                let Some(e) = AbortedTxn::from_bytes(raw) else {
                    return Ok(());
                };
                if !f(&e) {
                    return Ok(());
                }
            }
            n += count as u64;
        }
        Ok(())
    }

    /// Every entry (the cleaner and tests; a segment's index is small).
    pub fn all(&self) -> Result<Vec<AbortedTxn>> {
        let mut out = Vec::new();
        self.for_each(&mut |e| {
            out.push(*e);
            true
        })?;
        Ok(out)
    }

    /// Kafka's `collectAbortedTxns`: appends the entries overlapping
    /// `[fetch_offset, upper_bound_offset)` to `out`. Returns true once an entry's last stable
    /// offset reaches `upper_bound_offset`: no later segment can hold a transaction the fetch
    /// needs.
    pub fn collect(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
        out: &mut Vec<AbortedTxn>,
    ) -> Result<bool> {
        let mut complete = false;
        self.for_each(&mut |e| {
            if e.last_offset >= fetch_offset && e.first_offset < upper_bound_offset {
                out.push(*e);
            }
            if e.last_stable_offset >= upper_bound_offset {
                complete = true;
                return false;
            }
            true
        })?;
        Ok(complete)
    }

    fn set_entries(&mut self, n: u64) -> Result<()> {
        if let Some(f) = &self.file {
            f.set_len(n * ABORTED_TXN_SIZE as u64)
                .ctx("truncate txn index", &self.path)?;
        }
        self.entries = n;
        self.last_offset = self.read_entry(n.checked_sub(1))?.map(|e| e.last_offset);
        Ok(())
    }

    /// Drops every entry whose marker is at or after `offset` (Kafka's `truncateTo`).
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        let mut keep = 0u64;
        self.for_each(&mut |e| {
            if e.last_offset >= offset {
                return false;
            }
            keep += 1;
            true
        })?;
        if keep < self.entries || self.file_len()? != keep * ABORTED_TXN_SIZE as u64 {
            self.set_entries(keep)?;
        }
        Ok(())
    }

    fn file_len(&self) -> Result<u64> {
        match &self.file {
            Some(f) => Ok(f.metadata().ctx("stat txn index", &self.path)?.len()),
            None => Ok(0),
        }
    }

    /// Keeps the longest prefix of entries that make sense for a segment holding offsets
    /// `[base_offset, next_offset)`: known version, `first_offset <= last_offset`, the marker
    /// inside the segment, markers increasing. Cuts a torn partial entry. Returns the number
    /// of entries dropped.
    pub fn sanitize(&mut self, base_offset: i64, next_offset: i64) -> Result<u64> {
        let mut keep = 0u64;
        let mut prev: Option<i64> = None;
        let entries = self.entries;
        self.for_each(&mut |e| {
            let ok = e.first_offset <= e.last_offset
                && e.first_offset >= 0
                && e.last_offset >= base_offset
                && e.last_offset < next_offset
                && e.last_stable_offset >= 0
                && prev.map_or(true, |p| e.last_offset > p);
            if !ok {
                return false;
            }
            prev = Some(e.last_offset);
            keep += 1;
            true
        })?;
        // An unknown version also stops for_each early, so it is cut too.
        let dropped = entries - keep;
        if dropped > 0 || self.file_len()? != keep * ABORTED_TXN_SIZE as u64 {
            self.set_entries(keep)?;
        }
        Ok(dropped)
    }

    /// Removes every entry (the file stays).
    pub fn reset(&mut self) -> Result<()> {
        self.set_entries(0)
    }

    pub fn flush(&self) -> Result<()> {
        match &self.file {
            Some(f) => f.sync_data().ctx("fsync txn index", &self.path),
            None => Ok(()),
        }
    }

    /// Renames the file (if it exists) and remembers the new path.
    pub fn rename_to(&mut self, path: &Path) -> Result<()> {
        if self.file.is_some() {
            std::fs::rename(&self.path, path).ctx("rename txn index", &self.path)?;
        }
        self.path = path.to_path_buf();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(pid: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn entry_bytes_are_kafkas_layout() {
        let b = txn(0x0102030405060708, 5, 9, 10).to_bytes();
        assert_eq!(b.len(), 34);
        assert_eq!(&b[0..2], &[0, 0]);
        assert_eq!(&b[2..10], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(i64::from_be_bytes(b[10..18].try_into().unwrap()), 5);
        assert_eq!(i64::from_be_bytes(b[18..26].try_into().unwrap()), 9);
        assert_eq!(i64::from_be_bytes(b[26..34].try_into().unwrap()), 10);
        assert_eq!(
            AbortedTxn::from_bytes(&b),
            Some(txn(0x0102030405060708, 5, 9, 10))
        );
        let mut bad = b;
        bad[1] = 1;
        assert_eq!(AbortedTxn::from_bytes(&bad), None);
        assert_eq!(AbortedTxn::from_bytes(&b[..33]), None);
    }

    #[test]
    fn append_collect_truncate_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        let mut idx = TransactionIndex::open(&path).unwrap();
        assert!(!idx.exists(), "created lazily");
        idx.append(&txn(1, 0, 4, 5)).unwrap();
        idx.append(&txn(2, 3, 8, 9)).unwrap();
        idx.append(&txn(3, 10, 12, 13)).unwrap();
        assert!(idx.append(&txn(4, 1, 12, 13)).is_err(), "not increasing");
        let mut out = Vec::new();
        assert!(
            idx.collect(5, 9, &mut out).unwrap(),
            "lso 9 >= upper bound 9"
        );
        assert_eq!(out, vec![txn(2, 3, 8, 9)]);
        out.clear();
        assert!(!idx.collect(0, 100, &mut out).unwrap());
        assert_eq!(out.len(), 3);

        idx.truncate_to(8).unwrap();
        assert_eq!(idx.len(), 1);
        assert_eq!(idx.last_offset(), Some(4));
        idx.append(&txn(5, 6, 7, 8)).unwrap();
        drop(idx);
        let idx = TransactionIndex::open(&path).unwrap();
        assert_eq!(idx.all().unwrap(), vec![txn(1, 0, 4, 5), txn(5, 6, 7, 8)]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 68);
    }

    #[test]
    fn sanitize_cuts_torn_and_nonsense_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.txnindex");
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&txn(1, 100, 104, 105).to_bytes());
        bytes.extend_from_slice(&txn(2, 101, 110, 111).to_bytes());
        bytes.extend_from_slice(&[0u8; 34]); // a zero-filled block after a crash
        bytes.extend_from_slice(&txn(3, 120, 130, 131).to_bytes());
        bytes.extend_from_slice(&[7u8; 20]); // torn tail
        std::fs::write(&path, &bytes).unwrap();
        let mut idx = TransactionIndex::open(&path).unwrap();
        assert_eq!(idx.sanitize(100, 200).unwrap(), 2);
        assert_eq!(idx.len(), 2);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 68);
        // Markers past the segment's data go too.
        assert_eq!(idx.sanitize(100, 110).unwrap(), 1);
        assert_eq!(idx.all().unwrap(), vec![txn(1, 100, 104, 105)]);
    }
}
