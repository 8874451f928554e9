//! Producer-state snapshots, `<offset:020>.snapshot` in the partition directory (the file half
//! of Kafka's `ProducerStateManager`: `writeSnapshot`, `readSnapshot`, `deleteSnapshotsBefore`,
//! `truncateAndReload`). A snapshot at offset N holds the state of every producer after the log
//! up to (not including) N, so a start-up loads it and replays only the batches from N on.
//!
//! Format, as Kafka's (`PRODUCER_SNAPSHOT_VERSION` 1): version i16, crc u32 (CRC-32C of every
//! byte after the crc field), then an array (i32 count) of 46-byte entries: producer_id i64,
//! producer_epoch i16, last_sequence i32, last_offset i64, offset_delta i32, timestamp i64,
//! coordinator_epoch i32, current_txn_first_offset i64 (-1: no open transaction).
//!
//! Storage only reads and writes the entries; what they mean for idempotence and transactions is
//! the replica layer's (`replica/producer_state.rs`). Reading never trusts a length: the count
//! must match the file size, which is itself capped.

use std::path::{Path, PathBuf};

use super::checkpoint::write_atomic;
use super::error::{IoContext, Result, StorageError};
use super::log::PartitionLog;

pub const SNAPSHOT_SUFFIX: &str = ".snapshot";

/// Kafka's `PRODUCER_SNAPSHOT_VERSION`.
pub const PRODUCER_SNAPSHOT_VERSION: i16 = 1;

/// Bytes of one entry.
pub const PRODUCER_SNAPSHOT_ENTRY_SIZE: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

/// version + crc + array count.
const HEADER_SIZE: usize = 2 + 4 + 4;

/// Largest snapshot file read (about 2.9 million producers); a larger one counts as corrupt.
pub const MAX_SNAPSHOT_BYTES: u64 = 128 * 1024 * 1024;

/// How many snapshots are kept below the recovery point (Kafka keeps the last two segments').
pub const SNAPSHOTS_TO_RETAIN: usize = 2;

/// One producer in a snapshot (Kafka's `ProducerStateEntry` as written by `writeSnapshot`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerSnapshotEntry {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Last sequence of the producer's last data batch (-1 if none).
    pub last_sequence: i32,
    /// Last offset of that batch (-1 if none).
    pub last_offset: i64,
    /// last_sequence - first sequence of that batch.
    pub offset_delta: i32,
    pub timestamp: i64,
    pub coordinator_epoch: i32,
    /// First offset of the open transaction, -1 if none.
    pub current_txn_first_offset: i64,
}

/// Why a snapshot could not be read (Kafka's `CorruptSnapshotException`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotError {
    TooShort,
    TooLarge(u64),
    UnknownVersion(i16),
    CrcMismatch { stored: u32, computed: u32 },
    CountMismatch { count: i32, bytes: usize },
}

/// Serialises entries in Kafka's layout.
pub fn encode_snapshot(entries: &[ProducerSnapshotEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_SIZE + entries.len() * PRODUCER_SNAPSHOT_ENTRY_SIZE);
    out.extend_from_slice(&PRODUCER_SNAPSHOT_VERSION.to_be_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for e in entries {
        out.extend_from_slice(&e.producer_id.to_be_bytes());
        out.extend_from_slice(&e.producer_epoch.to_be_bytes());
        out.extend_from_slice(&e.last_sequence.to_be_bytes());
        out.extend_from_slice(&e.last_offset.to_be_bytes());
        out.extend_from_slice(&e.offset_delta.to_be_bytes());
        out.extend_from_slice(&e.timestamp.to_be_bytes());
        out.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        out.extend_from_slice(&e.current_txn_first_offset.to_be_bytes());
    }
    let crc = crc32c::crc32c(&out[6..]);
    out[2..6].copy_from_slice(&crc.to_be_bytes());
    out
}

/// Parses a snapshot file's bytes, checking version, CRC-32C and that the entry count
/// matches the size exactly.
pub fn decode_snapshot(b: &[u8]) -> std::result::Result<Vec<ProducerSnapshotEntry>, SnapshotError> {
    if b.len() < HEADER_SIZE {
        return Err(SnapshotError::TooShort);
    }
    let version = i16::from_be_bytes([b[0], b[1]]);
    if version != PRODUCER_SNAPSHOT_VERSION {
        return Err(SnapshotError::UnknownVersion(version));
    }
    let stored = u32::from_be_bytes([b[2], b[3], b[4], b[5]]);
    let computed = crc32c::crc32c(&b[6..]);
    if stored != computed {
        return Err(SnapshotError::CrcMismatch { stored, computed });
    }
    let count = i32::from_be_bytes([b[6], b[7], b[8], b[9]]);
    let body = &b[HEADER_SIZE..];
    if count < 0 || body.len() != count as usize * PRODUCER_SNAPSHOT_ENTRY_SIZE {
        return Err(SnapshotError::CountMismatch {
            count,
            bytes: body.len(),
        });
    }
    let mut out = Vec::with_capacity(count as usize);
    for e in body.chunks_exact(PRODUCER_SNAPSHOT_ENTRY_SIZE) {
        let mut r = Reader(e);
        out.push(ProducerSnapshotEntry {
            producer_id: r.i64(),
            producer_epoch: r.i16(),
            last_sequence: r.i32(),
            last_offset: r.i64(),
            offset_delta: r.i32(),
            timestamp: r.i64(),
            coordinator_epoch: r.i32(),
            current_txn_first_offset: r.i64(),
        });
    }
    Ok(out)
}

/// Big-endian reads over a slice whose length was checked by the caller.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        let n = N.min(self.0.len());
        a[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        a
    }
    fn i16(&mut self) -> i16 {
        i16::from_be_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_be_bytes(self.take())
    }
}

/// `<dir>/<offset:020>.snapshot`.
pub fn snapshot_file(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}{SNAPSHOT_SUFFIX}"))
}

/// Offsets of the snapshot files in `dir`, ascending.
pub fn list_snapshots(dir: &Path) -> Result<Vec<i64>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).ctx("list partition dir", dir)? {
        let entry = entry.ctx("list partition dir", dir)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(SNAPSHOT_SUFFIX) else {
            continue;
        };
        if stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(o) = stem.parse() {
                out.push(o);
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

fn delete_snapshot(dir: &Path, offset: i64) {
    let path = snapshot_file(dir, offset);
    if let Err(e) = std::fs::remove_file(&path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(path = %path.display(), error = %e, "could not delete producer snapshot");
        }
    }
}

/// Deletes the snapshots whose offset satisfies `doomed`.
pub(super) fn delete_snapshots_where(dir: &Path, doomed: impl Fn(i64) -> bool) -> Result<()> {
    for offset in list_snapshots(dir)? {
        if doomed(offset) {
            delete_snapshot(dir, offset);
        }
    }
    Ok(())
}

/// Reads one snapshot file; Ok(Err) when it is corrupt.
pub fn read_snapshot_file(
    path: &Path,
) -> Result<std::result::Result<Vec<ProducerSnapshotEntry>, SnapshotError>> {
    let len = std::fs::metadata(path)
        .ctx("stat producer snapshot", path)?
        .len();
    if len > MAX_SNAPSHOT_BYTES {
        return Ok(Err(SnapshotError::TooLarge(len)));
    }
    let bytes = std::fs::read(path).ctx("read producer snapshot", path)?;
    Ok(decode_snapshot(&bytes))
}

impl PartitionLog {
    /// Writes the producer state at `offset` (Kafka's `takeSnapshot`), fsynced and renamed into
    /// place, then deletes the snapshots no longer needed (see
    /// [`PartitionLog::delete_stale_producer_snapshots`]).
    pub fn write_producer_snapshot(
        &self,
        offset: i64,
        entries: &[ProducerSnapshotEntry],
    ) -> Result<()> {
        if offset < 0 {
            return Err(StorageError::InvalidArgument("negative snapshot offset"));
        }
        // A start-up that loads this snapshot replays only from `offset`, so every `.txnindex`
        // entry below it must be durable first (entries below the recovery point already are).
        {
            let inner = self.inner.read();
            let from = inner
                .segments
                .range(..=inner.recovery_point)
                .next_back()
                .map_or(i64::MIN, |(b, _)| *b);
            for seg in inner.segments.range(from..).map(|(_, s)| s) {
                seg.txn_index().flush()?;
            }
        }
        write_atomic(&snapshot_file(&self.dir, offset), &encode_snapshot(entries))?;
        self.delete_stale_producer_snapshots()
    }

    /// Kafka's `deleteSnapshotsBefore(minSnapshotsOffsetToRetain)`: keeps the snapshots at or
    /// above min(base of the segment holding the recovery point, base of the segment before
    /// the active one), so the last two segments' snapshots and every one a recovery may
    /// start from survive.
    pub fn delete_stale_producer_snapshots(&self) -> Result<()> {
        let min_to_retain = {
            let inner = self.inner.read();
            let active = inner.active().base_offset();
            let two_segments = inner
                .segments
                .range(..active)
                .next_back()
                .map_or(active, |(b, _)| *b);
            let recovery = inner
                .segments
                .range(..=inner.recovery_point)
                .next_back()
                .map_or(inner.recovery_point, |(b, _)| *b);
            two_segments.min(recovery)
        };
        delete_snapshots_where(&self.dir, |o| o < min_to_retain)
    }

    /// Offsets of this log's snapshots, ascending.
    pub fn producer_snapshot_offsets(&self) -> Result<Vec<i64>> {
        list_snapshots(&self.dir)
    }

    /// The newest readable snapshot at or below `max_offset` and at or above the log start
    /// offset, with its offset. A corrupt one is deleted and the next older one tried (Kafka's
    /// `loadFromSnapshot`); None means the state must be rebuilt from the log start.
    pub fn latest_producer_snapshot(
        &self,
        max_offset: i64,
    ) -> Result<Option<(i64, Vec<ProducerSnapshotEntry>)>> {
        let log_start = self.log_start_offset();
        for offset in list_snapshots(&self.dir)?.into_iter().rev() {
            if offset > max_offset || offset < log_start {
                continue;
            }
            let path = snapshot_file(&self.dir, offset);
            match read_snapshot_file(&path)? {
                Ok(entries) => return Ok(Some((offset, entries))),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = ?e, "corrupt producer snapshot; deleting it");
                    delete_snapshot(&self.dir, offset);
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: i64) -> ProducerSnapshotEntry {
        ProducerSnapshotEntry {
            producer_id: pid,
            producer_epoch: 3,
            last_sequence: 41,
            last_offset: 1000 + pid,
            offset_delta: 9,
            timestamp: 1_700_000_000_000,
            coordinator_epoch: 2,
            current_txn_first_offset: -1,
        }
    }

    #[test]
    fn layout_is_kafkas() {
        let bytes = encode_snapshot(&[entry(7)]);
        assert_eq!(bytes.len(), 10 + 46);
        assert_eq!(&bytes[0..2], &[0, 1], "version 1");
        assert_eq!(&bytes[6..10], &[0, 0, 0, 1], "one entry");
        assert_eq!(&bytes[10..18], &7i64.to_be_bytes());
        assert_eq!(&bytes[18..20], &3i16.to_be_bytes());
        assert_eq!(&bytes[48..56], &(-1i64).to_be_bytes(), "no open txn");
        let crc = crc32c::crc32c(&bytes[6..]);
        assert_eq!(&bytes[2..6], &crc.to_be_bytes());
        assert_eq!(decode_snapshot(&bytes).unwrap(), vec![entry(7)]);
        assert_eq!(encode_snapshot(&[]).len(), 10);
        assert_eq!(decode_snapshot(&encode_snapshot(&[])).unwrap(), vec![]);
    }

    #[test]
    fn corruption_is_detected_not_trusted() {
        let good = encode_snapshot(&[entry(1), entry(2)]);
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            assert!(decode_snapshot(&bad).is_err(), "flip at {i}");
        }
        for len in 0..good.len() {
            assert!(decode_snapshot(&good[..len]).is_err(), "cut at {len}");
        }
        // A count that claims more entries than the bytes hold, with a valid CRC.
        let mut lying = good.clone();
        lying[6..10].copy_from_slice(&i32::MAX.to_be_bytes());
        let crc = crc32c::crc32c(&lying[6..]);
        lying[2..6].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            decode_snapshot(&lying),
            Err(SnapshotError::CountMismatch { .. })
        ));
    }
}
