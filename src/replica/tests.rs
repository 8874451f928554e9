//! Partition-level tests: idempotence, transactions (last stable offset, markers, aborted
//! ranges) and rebuilding that state from the log on reopen.
use std::sync::Arc;

use bytes::Bytes;

use super::partition::{Isolation, Partition, PartitionConfig};
use crate::protocol::codec::Uuid;
use crate::protocol::records::RecordBatchBuilder;
use crate::storage::{LogConfig, PartitionLog};

fn batch(n: usize, producer: (i64, i16, i32), transactional: bool) -> Bytes {
    let mut b = RecordBatchBuilder::new(0)
        .producer(producer.0, producer.1, producer.2)
        .transactional(transactional);
    for i in 0..n {
        b.append(
            1_000 + i as i64,
            None,
            Some(Bytes::from(format!("v{i}"))),
            vec![],
        );
    }
    b.build().freeze()
}

fn open(dir: &std::path::Path) -> Partition {
    let log = PartitionLog::open(dir.join("t-0"), LogConfig::default(), 0, false, 0).unwrap();
    Partition::new(
        "t",
        0,
        Uuid::ZERO,
        Arc::new(log),
        PartitionConfig::default(),
    )
    .unwrap()
}

#[test]
fn last_stable_offset_and_aborted_ranges_follow_markers() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path());
    p.append_records(batch(2, (-1, -1, -1), false), 0).unwrap(); // offsets 0-1
    p.append_records(batch(3, (7, 0, 0), true), 0).unwrap(); // 2-4, open txn of 7
    p.append_records(batch(1, (8, 0, 0), true), 0).unwrap(); // 5, open txn of 8
    assert_eq!(p.high_watermark(), 6);
    assert_eq!(
        p.last_stable_offset(),
        2,
        "bounded by the first open transaction"
    );
    // read_committed stops at the LSO.
    let data = p.read(0, 1 << 20, Isolation::ReadCommitted, true).unwrap();
    assert_eq!(
        crate::protocol::records::batch::BatchIter::new(&data.records).count(),
        1
    );
    let abort_offset = p.write_txn_marker(7, 0, false, 0, 0).unwrap();
    assert_eq!(abort_offset, 6);
    assert_eq!(p.last_stable_offset(), 5, "now bounded by producer 8");
    let commit_offset = p.write_txn_marker(8, 0, true, 0, 0).unwrap();
    assert_eq!(commit_offset, 7);
    assert_eq!(p.last_stable_offset(), 8);
    let aborted = p.aborted_transactions(0, 8);
    assert_eq!(aborted.len(), 1);
    assert_eq!(
        (
            aborted[0].producer_id,
            aborted[0].first_offset,
            aborted[0].last_offset
        ),
        (7, 2, 6)
    );
    assert!(
        p.aborted_transactions(7, 8).is_empty(),
        "ranges after the abort do not overlap"
    );
    // The same state is rebuilt from the log.
    drop(p);
    let p = open(dir.path());
    assert_eq!(p.last_stable_offset(), 8);
    let again = p.aborted_transactions(0, 8);
    assert_eq!(again, aborted);
}

#[test]
fn open_transaction_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path());
    p.append_records(batch(2, (3, 0, 0), true), 0).unwrap();
    drop(p);
    let p = open(dir.path());
    assert_eq!(p.last_stable_offset(), 0);
    p.write_txn_marker(3, 0, true, 0, 0).unwrap();
    assert_eq!(p.last_stable_offset(), 3);
}

#[test]
fn clients_cannot_produce_control_batches_and_stale_markers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = open(dir.path());
    let marker = crate::protocol::records::build_end_txn_marker_batch(5, 0, true, 0, 0).freeze();
    let err = p.append_records(marker, 0).unwrap_err();
    assert_eq!(err.code(), crate::error::ErrorCode::INVALID_RECORD);
    p.append_records(batch(1, (5, 2, 0), true), 0).unwrap();
    let err = p.write_txn_marker(5, 1, false, 0, 0).unwrap_err();
    assert_eq!(err.code(), crate::error::ErrorCode::INVALID_PRODUCER_EPOCH);
}

#[test]
fn compacted_topics_refuse_keyless_records() {
    let dir = tempfile::tempdir().unwrap();
    let log =
        PartitionLog::open(dir.path().join("c-0"), LogConfig::default(), 0, false, 0).unwrap();
    let config = PartitionConfig {
        compacted: true,
        ..PartitionConfig::default()
    };
    let p = Partition::new("c", 0, Uuid::ZERO, Arc::new(log), config).unwrap();
    let err = p
        .append_records(batch(1, (-1, -1, -1), false), 0)
        .unwrap_err();
    assert_eq!(err.code(), crate::error::ErrorCode::INVALID_RECORD);
    let mut keyed = RecordBatchBuilder::new(0);
    keyed.append(
        1,
        Some(Bytes::from_static(b"k")),
        Some(Bytes::from_static(b"v")),
        vec![],
    );
    assert!(p.append_records(keyed.build().freeze(), 0).is_ok());
}
