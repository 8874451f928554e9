//! A memory-mapped file of fixed-size entries: the shared machinery of Kafka's `AbstractIndex`
//! behind the offset index (8-byte entries) and the time index (12-byte entries).
//!
//! The file is preallocated to the configured maximum while its segment is active and trimmed
//! to the entries actually written when the segment rolls or the log closes. Only index files
//! are mapped; `.log` files are never mapped.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use memmap2::MmapMut;

use super::error::{IoContext, Result};

#[derive(Debug)]
pub(crate) struct IndexFile {
    path: PathBuf,
    /// None while the file is empty (a zero-length mapping is not portable).
    mmap: Option<MmapMut>,
    entry_size: usize,
    /// Entries in use.
    entries: usize,
    /// Entries that fit in the current file length.
    max_entries: usize,
}

impl IndexFile {
    /// Opens or creates the file. Every whole entry in an existing file counts as in use; the
    /// caller validates them (and rebuilds the index if they make no sense).
    pub fn open(path: &Path, entry_size: usize) -> Result<Self> {
        let file = open_rw(path)?;
        let len = file.metadata().ctx("stat index", path)?.len() as usize;
        let mut index = IndexFile {
            path: path.to_path_buf(),
            mmap: None,
            entry_size,
            entries: len / entry_size,
            max_entries: len / entry_size,
        };
        index.remap(&file, len)?;
        Ok(index)
    }

    /// True if the file length is not a whole number of entries.
    pub fn has_partial_entry(&self) -> Result<bool> {
        let len = std::fs::metadata(&self.path)
            .ctx("stat index", &self.path)?
            .len() as usize;
        Ok(len % self.entry_size != 0)
    }

    /// Maps the file. The descriptor is closed afterwards (the mapping outlives it), so a
    /// partition holds no descriptors for its indexes: thousands of partitions stay within the
    /// open-file limit.
    fn remap(&mut self, file: &File, len: usize) -> Result<()> {
        self.mmap = None;
        if len > 0 {
            // SAFETY: the index file is owned by this process's log; nothing truncates it
            // behind the mapping (every set_len goes through `resize`, which drops the map first).
            let map = unsafe { MmapMut::map_mut(file) }.ctx("mmap index", &self.path)?;
            // Entries are touched one page at a time; without this hint the first write to a
            // fresh (sparse) index makes the kernel read ahead and zero-fill a large folio,
            // which with many partitions was most of the broker's produce CPU.
            map.advise(memmap2::Advice::Random)
                .ctx("madvise index", &self.path)?;
            self.mmap = Some(map);
        }
        Ok(())
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn entries(&self) -> usize {
        self.entries
    }

    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    pub fn is_full(&self) -> bool {
        self.entries >= self.max_entries
    }

    /// The raw bytes of entry `i` (`i < entries`).
    pub fn entry(&self, i: usize) -> &[u8] {
        match &self.mmap {
            Some(m) if (i + 1) * self.entry_size <= m.len() => {
                &m[i * self.entry_size..(i + 1) * self.entry_size]
            }
            _ => &[],
        }
    }

    /// Appends one entry; returns false if the file is full.
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        if self.is_full() || bytes.len() != self.entry_size {
            return false;
        }
        let at = self.entries * self.entry_size;
        match &mut self.mmap {
            Some(m) if at + self.entry_size <= m.len() => {
                m[at..at + self.entry_size].copy_from_slice(bytes);
                self.entries += 1;
                true
            }
            _ => false,
        }
    }

    /// Forgets entries from `n` on.
    pub fn truncate_entries(&mut self, n: usize) {
        self.entries = self.entries.min(n);
    }

    /// How many leading entries satisfy `pred`, by binary search; `pred` must hold for a
    /// prefix of the entries and fail for the rest (one past Kafka's
    /// `largestLowerBoundSlotFor`).
    pub fn partition_point(&self, pred: impl Fn(&[u8]) -> bool) -> usize {
        let (mut lo, mut hi) = (0usize, self.entries);
        // Invariant: pred holds for entries[..lo] and fails for entries[hi..].
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.entry(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Forgets the last entry while `drop` holds for it.
    pub fn truncate_while(&mut self, drop: impl Fn(&[u8]) -> bool) {
        while self.entries > 0 && drop(self.entry(self.entries - 1)) {
            self.entries -= 1;
        }
    }

    /// Sets the file length to `max_bytes` rounded down to whole entries (never below the
    /// entries in use) and remaps it.
    pub fn resize(&mut self, max_bytes: usize) -> Result<()> {
        let len = (max_bytes / self.entry_size).max(self.entries) * self.entry_size;
        self.flush()?;
        self.mmap = None;
        let file = open_rw(&self.path)?;
        file.set_len(len as u64).ctx("resize index", &self.path)?;
        self.max_entries = len / self.entry_size;
        self.remap(&file, len)
    }

    /// Shrinks the file to the entries in use (Kafka's `trimToValidSize`).
    pub fn trim(&mut self) -> Result<()> {
        self.resize(self.entries * self.entry_size)
    }

    pub fn flush(&self) -> Result<()> {
        if let Some(m) = &self.mmap {
            m.flush().ctx("flush index", &self.path)?;
        }
        Ok(())
    }

    pub fn rename_to(&mut self, new_path: &Path) -> Result<()> {
        std::fs::rename(&self.path, new_path).ctx("rename index", &self.path)?;
        self.path = new_path.to_path_buf();
        Ok(())
    }
}

fn open_rw(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .ctx("open index", path)
}

/// The methods an index type (a struct with a `file: IndexFile` field) passes straight to its
/// file: `entries`, `reset`, `resize`, `trim`, `flush`, `path`, `rename_to`.
macro_rules! delegate_to_index_file {
    () => {
        pub fn entries(&self) -> usize {
            self.file.entries()
        }

        /// Forgets every entry.
        pub fn reset(&mut self) {
            self.file.truncate_entries(0);
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
    };
}
pub(crate) use delegate_to_index_file;

pub(crate) fn be_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        .unwrap_or(0)
}

pub(crate) fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        a.copy_from_slice(s);
    }
    i64::from_be_bytes(a)
}
