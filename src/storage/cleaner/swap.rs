//! Crash-safe replacement of segments by a cleaned one (Kafka's `LocalLog.replaceSegments` and
//! the swap half of `LogLoader`).
//!
//! Protocol: the cleaned segment is written as `<base>.log.cleaned` (+ `.index.cleaned`,
//! `.timeindex.cleaned`) and fsynced; renamed to `.swap` (indexes first, log last); the old
//! segments are renamed to `.deleted`; the `.swap` files are renamed to their final names
//! (indexes first, log last). `<base>` is the base offset of the first old segment.
//!
//! Recovery ([`complete_interrupted_swaps`]), run before anything else when a log is opened:
//! a `<base>.log.swap` is complete (it was fsynced before the rename), so every segment whose
//! base offset lies in `[base, swap's next offset)` is an old segment it replaces and is
//! deleted, and the swap is renamed into place; its indexes are rebuilt. Everything else
//! (`.cleaned`, index `.swap` files without their log, `.deleted`) is a leftover the normal
//! stray-file pass deletes. So a crash at any point leaves either the old segments or the new
//! one for each offset, never both and never neither.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::protocol::records::batch::{check_batch, parse_header, RECORD_BATCH_OVERHEAD};

use crate::storage::error::{IoContext, Result};
use crate::storage::segment::{segment_file, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
use crate::storage::txn_index::TXN_INDEX_SUFFIX;

pub const CLEANED_SUFFIX: &str = ".cleaned";
pub const SWAP_SUFFIX: &str = ".swap";

/// fsyncs a directory so renames in it are durable; some filesystems refuse, which is harmless.
pub(crate) fn fsync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

fn remove_if_exists(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).ctx("remove file", path),
        _ => Ok(()),
    }
}

/// Removes the files of the segment at `base` with `suffix` after each name.
pub(crate) fn remove_segment_files(dir: &Path, base: i64, suffix: &str) -> Result<()> {
    for s in [
        LOG_SUFFIX,
        INDEX_SUFFIX,
        TIME_INDEX_SUFFIX,
        TXN_INDEX_SUFFIX,
    ] {
        remove_if_exists(&segment_file(dir, base, &format!("{s}{suffix}")))?;
    }
    Ok(())
}

/// Parses `<20 digits><suffix>`.
fn base_of(name: &str, suffix: &str) -> Option<i64> {
    let stem = name.strip_suffix(suffix)?;
    if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// One past the last offset of the valid batches at the start of `path`, or `base` if none.
fn next_offset_of(path: &Path, base: i64) -> Result<i64> {
    let file = File::open(path).ctx("open swap segment", path)?;
    let size = file.metadata().ctx("stat swap segment", path)?.len();
    let mut pos = 0u64;
    let mut next = base;
    let mut header = [0u8; RECORD_BATCH_OVERHEAD];
    let mut buf = Vec::new();
    while pos + RECORD_BATCH_OVERHEAD as u64 <= size {
        file.read_exact_at(&mut header, pos)
            .ctx("read swap segment", path)?;
        let Ok(h) = parse_header(&header) else { break };
        let total = h.total_size() as u64;
        if total < RECORD_BATCH_OVERHEAD as u64 || total > size - pos {
            break;
        }
        buf.resize(total as usize, 0);
        file.read_exact_at(&mut buf, pos)
            .ctx("read swap segment", path)?;
        if check_batch(&buf).is_err() {
            break;
        }
        next = h.last_offset() + 1;
        pos += total;
    }
    Ok(next)
}

/// Finishes every swap a crash interrupted in `dir` and returns the base offsets of the
/// segments that were swapped in (their indexes must be rebuilt).
pub(crate) fn complete_interrupted_swaps(dir: &Path) -> Result<Vec<i64>> {
    let swap_log_suffix = format!("{LOG_SUFFIX}{SWAP_SUFFIX}");
    let mut swaps = Vec::new();
    let mut logs = Vec::new();
    for entry in std::fs::read_dir(dir).ctx("list partition dir", dir)? {
        let entry = entry.ctx("list partition dir", dir)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(base) = base_of(&name, &swap_log_suffix) {
            swaps.push(base);
        } else if let Some(base) = base_of(&name, LOG_SUFFIX) {
            logs.push(base);
        }
    }
    swaps.sort_unstable();
    for &base in &swaps {
        let swap_path = segment_file(dir, base, &swap_log_suffix);
        let end = next_offset_of(&swap_path, base)?.max(base + 1);
        // The swapped segment's offset and time indexes are rebuilt from its log. Its
        // `.txnindex` cannot be (that needs the producers' first offsets), so the cleaner always
        // writes one and renames it before the log: while `.txnindex.swap` exists it is the new
        // one and a final-named file belongs to an old segment; once it is gone, the final
        // name already holds the new one.
        let txn_swap = segment_file(dir, base, &format!("{TXN_INDEX_SUFFIX}{SWAP_SUFFIX}"));
        let txn_final = segment_file(dir, base, TXN_INDEX_SUFFIX);
        let swap_has_txn_index = txn_swap.exists();
        for &old in logs.iter().filter(|&&b| b >= base && b < end) {
            tracing::info!(dir = %dir.display(), old, swap = base, "deleting a segment replaced by an interrupted swap");
            if old == base && !swap_has_txn_index {
                for s in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
                    remove_if_exists(&segment_file(dir, base, s))?;
                }
            } else {
                remove_segment_files(dir, old, "")?;
            }
        }
        for s in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
            remove_if_exists(&segment_file(dir, base, s))?;
        }
        if swap_has_txn_index {
            std::fs::rename(&txn_swap, &txn_final).ctx("rename swap txn index", &txn_swap)?;
        }
        for s in [INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
            remove_if_exists(&segment_file(dir, base, &format!("{s}{SWAP_SUFFIX}")))?;
        }
        let final_path = segment_file(dir, base, LOG_SUFFIX);
        std::fs::rename(&swap_path, &final_path).ctx("rename swap segment", &swap_path)?;
    }
    if !swaps.is_empty() {
        fsync_dir(dir);
    }
    Ok(swaps)
}
