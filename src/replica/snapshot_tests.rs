//! Tests of the on-disk transaction state of a partition: `.txnindex` entries written with
//! ABORT markers and rebuilt after a crash, and producer snapshots taken at roll and shutdown
//! that bound the replay at open.
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use super::partition::{Partition, PartitionConfig};
use crate::protocol::codec::Uuid;
use crate::protocol::records::RecordBatchBuilder;
use crate::storage::{AbortedTxn, LogConfig, PartitionLog};

fn batch(n: usize, producer: (i64, i16, i32), transactional: bool) -> Bytes {
    let mut b = RecordBatchBuilder::new(0)
        .producer(producer.0, producer.1, producer.2)
        .transactional(transactional);
    for i in 0..n {
        b.append(
            1_000 + i as i64,
            None,
            Some(Bytes::from(vec![b'x'; 100])),
            vec![],
        );
    }
    b.build().freeze()
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        ..LogConfig::default()
    }
}

/// Opens the partition; `clean` says whether the previous run shut down cleanly.
fn open(dir: &Path, clean: bool) -> Partition {
    let log = PartitionLog::open(dir.join("t-0"), small_segments(), 0, clean, 0).unwrap();
    let config = PartitionConfig {
        log: small_segments(),
        ..PartitionConfig::default()
    };
    Partition::new("t", 0, Uuid::ZERO, Arc::new(log), config).unwrap()
}

fn txn_index_files(dir: &Path) -> Vec<(String, u64)> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("t-0"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".txnindex"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn abort_markers_go_to_the_txnindex_of_their_segment_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path(), false);
    p.append_records(batch(3, (7, 0, 0), true), 0).unwrap(); // 0-2, txn of 7
    p.append_records(batch(1, (8, 0, 0), true), 0).unwrap(); // 3, txn of 8
    for i in 0..8 {
        // Non-transactional data rolls several segments while both transactions are open.
        p.append_records(batch(2, (-1, -1, -1), false), 0).unwrap();
        let _ = i;
    }
    assert!(p.log.num_segments() > 2);
    let abort_offset = p.write_txn_marker(7, 0, false, 0, 0).unwrap();
    let marker_segment = p.log.active_segment_base_offset();
    let expected = AbortedTxn {
        producer_id: 7,
        first_offset: 0,
        last_offset: abort_offset,
        last_stable_offset: 3,
    };
    let files = txn_index_files(dir.path());
    assert_eq!(
        files,
        vec![(format!("{marker_segment:020}.txnindex"), 34)],
        "one entry, in the segment holding the marker"
    );
    // A fetch from the first segment learns of the abort from the later segment's index.
    assert_eq!(p.aborted_transactions(0, 3), vec![expected]);
    assert!(p
        .aborted_transactions(abort_offset + 1, abort_offset + 2)
        .is_empty());
    p.write_txn_marker(8, 0, false, 0, 0).unwrap();
    assert_eq!(p.aborted_transactions(0, i64::MAX).len(), 2);
    drop(p);

    // After a crash the entries are still there, and are not indexed twice.
    let p = open(dir.path(), false);
    assert_eq!(p.aborted_transactions(0, 3), vec![expected]);
    assert_eq!(p.log.all_aborted_txns().unwrap().len(), 2);
    assert_eq!(p.last_stable_offset(), p.log_end_offset());
}

#[test]
fn lost_txn_index_of_the_unflushed_tail_is_rebuilt_by_replay() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path(), false);
    for _ in 0..6 {
        p.append_records(batch(2, (-1, -1, -1), false), 0).unwrap();
    }
    p.append_records(batch(2, (9, 0, 0), true), 0).unwrap();
    let abort_offset = p.write_txn_marker(9, 0, false, 0, 0).unwrap();
    let before = p.aborted_transactions(0, i64::MAX);
    assert_eq!(before.len(), 1);
    drop(p);
    // The crash lost the index file (it was never fsynced), and left a torn entry elsewhere.
    for (name, _) in txn_index_files(dir.path()) {
        std::fs::remove_file(dir.path().join("t-0").join(name)).unwrap();
    }
    let p = open(dir.path(), false);
    assert_eq!(p.aborted_transactions(0, i64::MAX), before);
    assert_eq!(before[0].last_offset, abort_offset);
}

#[test]
fn truncation_drops_index_entries_and_snapshots_past_the_point() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path(), false);
    p.append_records(batch(1, (5, 0, 0), true), 0).unwrap();
    let abort = p.write_txn_marker(5, 0, false, 0, 0).unwrap();
    for _ in 0..10 {
        p.append_records(batch(2, (6, 0, -1), false), 0)
            .unwrap_or_else(|_| p.append_records(batch(2, (-1, -1, -1), false), 0).unwrap());
    }
    let snaps = p.log.producer_snapshot_offsets().unwrap();
    assert!(!snaps.is_empty(), "rolls took snapshots");
    p.log.truncate_to(abort).unwrap();
    assert!(p.log.all_aborted_txns().unwrap().is_empty());
    assert!(p
        .log
        .producer_snapshot_offsets()
        .unwrap()
        .iter()
        .all(|&o| o <= abort));
}

/// Appends `batches` idempotent batches of 2 records from three producers, rolling segments.
fn fill(p: &Partition, batches: i32) {
    for i in 0..batches {
        let pid = (i % 3) as i64 + 100;
        let seq = (i / 3) * 2;
        p.append_records(batch(2, (pid, 0, seq), false), 0).unwrap();
    }
}

#[test]
fn restart_loads_the_latest_snapshot_and_replays_only_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path(), false);
    assert_eq!(p.producer_state_load().snapshot_offset, None);
    fill(&p, 300);
    let total_batches = 300u64;
    let segments = p.log.num_segments();
    assert!(segments > 50, "{segments} segments");
    let active = p.log.active_segment_base_offset();
    p.log.flush().unwrap();
    p.log.flush_sealed_segments().unwrap();
    // Kafka keeps the snapshots of the last two segments (and the recovery point's).
    let snaps = p.log.producer_snapshot_offsets().unwrap();
    assert!(snaps.len() <= 2, "stale snapshots deleted: {snaps:?}");
    assert_eq!(snaps.last(), Some(&active));
    let state_before = p.with_producers(|s| s.to_snapshot());
    drop(p);

    // Crash: the roll snapshot bounds the replay to the active segment.
    let p = open(dir.path(), false);
    let load = p.producer_state_load();
    eprintln!(
        "restart after crash: snapshot at {:?}, replayed {} of {total_batches} batches",
        load.snapshot_offset, load.batches_replayed
    );
    assert_eq!(load.snapshot_offset, Some(active));
    assert!(
        load.batches_replayed < total_batches / 20,
        "replayed {} of {total_batches} batches",
        load.batches_replayed
    );
    assert_eq!(p.with_producers(|s| s.to_snapshot()), state_before);
    // Idempotence survives: the last batch of producer 102 is a duplicate, the next is new.
    let dup = p.append_records(batch(2, (102, 0, 198), false), 0).unwrap();
    assert!(dup.duplicate);
    let next = p.append_records(batch(2, (102, 0, 200), false), 0).unwrap();
    assert!(!next.duplicate);
    let err = p
        .append_records(batch(2, (101, 0, 500), false), 0)
        .unwrap_err();
    assert_eq!(
        err.code(),
        crate::error::ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER
    );

    // Clean shutdown: the snapshot at the log end leaves nothing to replay.
    p.take_producer_snapshot().unwrap();
    p.log.close().unwrap();
    drop(p);
    let p = open(dir.path(), true);
    assert_eq!(p.producer_state_load().batches_replayed, 0);
    assert_eq!(
        p.producer_state_load().snapshot_offset,
        Some(p.log_end_offset())
    );
}

#[test]
fn corrupt_snapshot_falls_back_to_an_older_one_or_the_full_log() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path(), false);
    p.append_records(batch(2, (50, 0, 0), true), 0).unwrap(); // open txn survives everything
    fill(&p, 60);
    let state_before = p.with_producers(|s| s.to_snapshot());
    let lso = p.last_stable_offset();
    let snaps = p.log.producer_snapshot_offsets().unwrap();
    assert!(!snaps.is_empty());
    drop(p);
    for o in &snaps {
        let path = crate::storage::producer_snapshot::snapshot_file(&dir.path().join("t-0"), *o);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
    }
    let p = open(dir.path(), false);
    let load = p.producer_state_load();
    assert_eq!(load.snapshot_offset, None, "every snapshot was corrupt");
    assert_eq!(load.batches_replayed, 61, "full scan");
    assert_eq!(p.with_producers(|s| s.to_snapshot()), state_before);
    assert_eq!(p.last_stable_offset(), lso);
    assert!(
        p.log.producer_snapshot_offsets().unwrap().is_empty(),
        "corrupt snapshots are deleted"
    );
}
