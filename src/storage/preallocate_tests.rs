//! Room reserved past a segment's batches: Kafka's `preallocate` (a sparse file of
//! `segment.bytes`) and the durable mode's zeros written ahead of appends. Both must be
//! invisible to readers, trimmed on roll and close, and cut by recovery after a crash without
//! losing the records, or the segments, that follow.

use std::path::{Path, PathBuf};

use bytes::BytesMut;

use super::tests::batch;
use super::{LogConfig, PartitionLog};

fn part_dir(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("my-topic-0")
}

fn reopen(dir: &tempfile::TempDir, config: LogConfig, clean: bool) -> PartitionLog {
    PartitionLog::open(part_dir(dir), config, 0, clean, 0).expect("open")
}

fn file_len(dir: &Path, base: i64) -> u64 {
    std::fs::metadata(dir.join(format!("{base:020}.log")))
        .expect("stat")
        .len()
}

/// (base offset, records, first timestamp) of every batch, read back through the log.
fn batches(log: &PartitionLog) -> Vec<(i64, i32, i64)> {
    let mut out = Vec::new();
    log.scan_batches(0, &mut |h| {
        out.push((h.base_offset, h.records_count, h.base_timestamp))
    })
    .expect("scan");
    out
}

/// Segments of a few dozen batches.
fn rolling(preallocate: bool) -> LogConfig {
    LogConfig {
        segment_bytes: 4000,
        index_interval_bytes: 100,
        preallocate,
        ..LogConfig::default()
    }
}

/// Sets a segment file's length behind the log's back, as a crash or power cut leaves it.
fn set_file_len(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open")
        .set_len(len)
        .expect("set length");
}

fn append(log: &PartitionLog, n: usize, ts: i64) {
    for i in 0..n {
        log.append_as_leader(batch(3, ts + i as i64), 0, None, 0)
            .expect("append");
    }
}

#[test]
fn durable_zeros_ahead_are_overwritten_by_appends_and_cut_by_recovery() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig {
        segment_bytes: 1 << 30,
        ..LogConfig::default()
    };
    let log = reopen(&dir, config.clone(), true);
    append(&log, 5, 1000);
    assert_eq!(log.sync_durable().expect("sync"), 15);
    let data = log.size_bytes();
    let active = *log.segment_base_offsets().last().expect("active");
    let len = file_len(&part_dir(&dir), active);
    assert!(
        len >= data + (1 << 20),
        "zeros written ahead: {len} for {data}"
    );
    // Appends land on the zeros, right after the batches; reads see only batches.
    append(&log, 5, 2000);
    assert_eq!(log.sync_durable().expect("sync"), 30);
    assert_eq!(file_len(&part_dir(&dir), active), len, "no growth");
    let before = batches(&log);
    assert_eq!(before.len(), 10);
    assert_eq!(before[5], (15, 3, 2000));
    let read = log.read(0, 1 << 20, i64::MAX, true).expect("read");
    assert_eq!(read.records.len() as u64, log.size_bytes());
    // A crash (no close, so no trim): recovery cuts the zeros and keeps every record.
    drop(log);
    let log = reopen(&dir, config.clone(), false);
    assert_eq!(log.log_end_offset(), 30);
    assert_eq!(batches(&log), before);
    assert_eq!(file_len(&part_dir(&dir), active), log.size_bytes());
    append(&log, 1, 3000);
    assert_eq!(batches(&log).last(), Some(&(30, 3, 3000)));
    // A clean close trims the zeros it wrote since; a clean load finds the log as it was.
    log.sync_durable().expect("sync");
    assert!(file_len(&part_dir(&dir), active) > log.size_bytes());
    log.close().expect("close");
    let size = log.size_bytes();
    drop(log);
    assert_eq!(file_len(&part_dir(&dir), active), size);
    let log = reopen(&dir, config, true);
    assert_eq!(log.log_end_offset(), 33);
}

#[test]
fn durable_zeros_stay_within_the_segment_size_and_rolled_segments_are_trimmed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig {
        segment_bytes: 3 << 20,
        ..LogConfig::default()
    };
    let log = reopen(&dir, config.clone(), true);
    let big = |ts| {
        let mut b = BytesMut::new();
        for _ in 0..4 {
            b.extend_from_slice(&batch(2000, ts));
        }
        b
    };
    let mut ts = 0;
    while log.num_segments() < 3 {
        log.append_as_leader(big(ts), 0, None, 0).expect("append");
        log.sync_durable().expect("sync");
        ts += 1;
    }
    let bases = log.segment_base_offsets();
    let dir_path = part_dir(&dir);
    for base in &bases {
        assert!(file_len(&dir_path, *base) <= 3 << 20, "segment {base}");
    }
    // The rolled segments hold exactly their batches.
    drop(log);
    let log = reopen(&dir, config, false);
    assert_eq!(log.segment_base_offsets(), bases);
    let mut expected_base = 0;
    for (base, _, _) in batches(&log) {
        assert_eq!(base, expected_base);
        expected_base += 2000;
    }
    assert_eq!(log.log_end_offset(), expected_base);
}

#[test]
fn preallocate_sizes_new_segments_and_trims_them_on_roll_and_close() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = rolling(true);
    let log = reopen(&dir, config.clone(), true);
    let dir_path = part_dir(&dir);
    assert_eq!(
        file_len(&dir_path, 0),
        4000,
        "a new segment has its full size"
    );
    append(&log, 120, 1000);
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3, "segments {bases:?}");
    let active = *bases.last().expect("active");
    assert_eq!(file_len(&dir_path, active), 4000);
    // Rolled segments are trimmed to their batches: a reader of the files (Kafka's
    // DumpLogSegments, a copy of the dir) finds no zeros.
    let sealed: u64 = bases[..bases.len() - 1]
        .iter()
        .map(|b| file_len(&dir_path, *b))
        .sum();
    let before = batches(&log);
    // An unclean restart cuts the active segment's reserved room and keeps every batch.
    drop(log);
    let log = reopen(&dir, config.clone(), false);
    assert_eq!(batches(&log), before);
    assert_eq!(log.size_bytes(), sealed + file_len(&dir_path, active));
    // A clean close trims the active one too.
    log.close().expect("close");
    let size = log.size_bytes();
    drop(log);
    let on_disk: u64 = bases.iter().map(|b| file_len(&dir_path, *b)).sum();
    assert_eq!(on_disk, size);
    let log = reopen(&dir, config, true);
    assert_eq!(batches(&log), before);
}

#[test]
fn a_zero_tail_left_on_a_rolled_segment_keeps_the_segments_after_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = rolling(false);
    let log = reopen(&dir, config.clone(), true);
    append(&log, 120, 1000);
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3, "segments {bases:?}");
    let before = batches(&log);
    drop(log);
    // A power loss undid the trim of the first rolled segment: zeros follow its batches.
    let first = part_dir(&dir).join(format!("{:020}.log", bases[0]));
    let len = std::fs::metadata(&first).expect("stat").len();
    set_file_len(&first, len + 3000);
    let log = reopen(&dir, config.clone(), false);
    assert_eq!(log.segment_base_offsets(), bases, "no segment dropped");
    assert_eq!(batches(&log), before);
    drop(log);
    // A torn tail does lose what follows: the next segment would start past a gap.
    set_file_len(&first, len - 10);
    let log = reopen(&dir, config, false);
    assert_eq!(log.segment_base_offsets(), vec![bases[0]]);
    let end = log.log_end_offset();
    assert!(end < bases[1], "end {end}");
    assert_eq!(batches(&log)[..], before[..batches(&log).len()]);
}
