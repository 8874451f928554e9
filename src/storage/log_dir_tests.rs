//! Log dir failure in storage: an injected I/O error takes the dir offline at the failing
//! operation, the other dir keeps working, and what was acknowledged before the fault is read
//! back after a restart on a healthy disk (Kafka's `LogDirFailureTest` in spirit). The log
//! cleaner's I/O errors, in a pass or deleting the segments it replaced, do the same (Kafka's
//! `LogCleaner` hands them to `LogDirFailureChannel`).

use bytes::BytesMut;

use crate::error::ErrorCode;
use crate::protocol::records::batch::BatchIter;
use crate::protocol::records::testutil::{build_test_batch, TestBatch};

use super::checkpoint::CLEAN_SHUTDOWN_MARKER;
use super::{LogConfig, LogManager, StorageError};

fn batch(records: usize) -> BytesMut {
    BytesMut::from(
        &build_test_batch(&TestBatch {
            records,
            base_timestamp: 1_000,
            ..TestBatch::default()
        })[..],
    )
}

#[test]
fn failed_append_takes_its_dir_offline_and_spares_the_other() {
    let d0 = tempfile::tempdir().expect("tempdir");
    let d1 = tempfile::tempdir().expect("tempdir");
    let dirs = vec![d0.path().to_path_buf(), d1.path().to_path_buf()];
    let m = LogManager::open(dirs.clone(), 1, LogConfig::default(), 0).expect("open");
    // Least-loaded placement: the first log goes to d0, the second to d1.
    let a = m.get_or_create("a", 0, LogConfig::default()).expect("a");
    let b = m.get_or_create("b", 0, LogConfig::default()).expect("b");
    assert_eq!(a.log_dir().path(), d0.path());
    assert_eq!(b.log_dir().path(), d1.path());
    a.append_as_leader(batch(3), 0, None, 0).expect("acked");
    a.flush().expect("flush");
    b.append_as_leader(batch(2), 0, None, 0).expect("acked");

    m.log_dir_state(d0.path())
        .expect("state")
        .inject_io_failure();
    let err = a.append_as_leader(batch(4), 0, None, 0).unwrap_err();
    assert!(matches!(err, StorageError::Io { .. }), "{err:?}");
    assert_eq!(err.code(), ErrorCode::KAFKA_STORAGE_ERROR);
    assert_eq!(a.log_end_offset(), 3, "the failed append wrote nothing");
    assert!(a.is_offline());
    assert_eq!(m.offline_log_dirs(), vec![d0.path().to_path_buf()]);
    assert!(!m.all_log_dirs_offline());

    // Everything in the dir now fails fast, reads included.
    let err = a.read(0, 1 << 20, i64::MAX, true).unwrap_err();
    assert!(matches!(err, StorageError::LogDirOffline { .. }), "{err:?}");
    assert_eq!(err.code(), ErrorCode::KAFKA_STORAGE_ERROR);
    assert!(m.get("a", 0).is_none());
    assert!(matches!(
        m.get_or_create("a", 0, LogConfig::default()),
        Err(StorageError::LogDirOffline { .. })
    ));
    assert_eq!(m.all().len(), 1);

    // The other dir serves and takes the new logs.
    b.append_as_leader(batch(1), 0, None, 0).expect("other dir");
    let c = m.get_or_create("c", 0, LogConfig::default()).expect("c");
    assert_eq!(c.log_dir().path(), d1.path());
    assert_eq!(
        m.handle_log_dir_failure(d0.path()),
        vec![("a".to_string(), 0)]
    );
    m.checkpoint().expect("the online dir checkpoints");
    m.shutdown().expect("shutdown");
    assert!(!d0.path().join(CLEAN_SHUTDOWN_MARKER).exists());
    assert!(d1.path().join(CLEAN_SHUTDOWN_MARKER).exists());
    drop((a, b, c, m));

    // The disk is healthy again: the dir is recovered and keeps what was acknowledged.
    let m = LogManager::open(dirs, 1, LogConfig::default(), 0).expect("reopen");
    let a = m.get("a", 0).expect("a is back");
    assert!(!a.is_offline());
    assert_eq!(a.log_end_offset(), 3);
    let data = a.read(0, 1 << 20, i64::MAX, true).expect("read");
    let offsets: Vec<i64> = BatchIter::new(&data.records)
        .map(|(h, _)| h.last_offset())
        .collect();
    assert_eq!(offsets, vec![2]);
    assert_eq!(m.get("b", 0).expect("b").log_end_offset(), 3);
}

#[test]
fn every_dir_offline_leaves_nowhere_to_create_a_log() {
    let d0 = tempfile::tempdir().expect("tempdir");
    let m =
        LogManager::open(vec![d0.path().to_path_buf()], 1, LogConfig::default(), 0).expect("open");
    let a = m.get_or_create("a", 0, LogConfig::default()).expect("a");
    m.log_dir_state(d0.path())
        .expect("state")
        .inject_io_failure();
    assert!(a.flush().is_err());
    assert!(m.all_log_dirs_offline());
    assert!(matches!(
        m.get_or_create("b", 0, LogConfig::default()),
        Err(StorageError::NoOnlineLogDir)
    ));
    assert!(StorageError::NoOnlineLogDir.code() == ErrorCode::KAFKA_STORAGE_ERROR);
}

#[test]
fn a_checkpoint_write_failure_takes_its_dir_offline() {
    let d0 = tempfile::tempdir().expect("tempdir");
    let d1 = tempfile::tempdir().expect("tempdir");
    let dirs = vec![d0.path().to_path_buf(), d1.path().to_path_buf()];
    let m = LogManager::open(dirs, 1, LogConfig::default(), 0).expect("open");
    m.log_dir_state(d1.path())
        .expect("state")
        .inject_io_failure();
    assert!(m.checkpoint().is_err(), "the failure is reported");
    assert_eq!(m.offline_log_dirs(), vec![d1.path().to_path_buf()]);
    m.checkpoint()
        .expect("the offline dir is skipped from now on");
}

fn compacted(file_delete_delay_ms: i64) -> LogConfig {
    LogConfig {
        segment_bytes: 600,
        compact: true,
        delete: false,
        file_delete_delay_ms,
        ..LogConfig::default()
    }
}

/// Twenty versions of one key: several rolled segments, nearly all dirty.
fn fill_compacted(log: &super::PartitionLog) {
    for i in 0..20 {
        let mut b = crate::protocol::records::RecordBatchBuilder::new(0);
        b.append(
            1_000,
            Some(bytes::Bytes::from_static(b"key")),
            Some(bytes::Bytes::from(format!("value-{i}"))),
            vec![],
        );
        log.append_as_leader(b.build(), 0, None, 0).expect("append");
    }
    assert!(log.segment_base_offsets().len() > 2, "rolled");
}

#[test]
fn a_cleaner_io_error_takes_its_dir_offline_and_the_other_dir_is_still_cleaned() {
    let d0 = tempfile::tempdir().expect("tempdir");
    let d1 = tempfile::tempdir().expect("tempdir");
    let dirs = vec![d0.path().to_path_buf(), d1.path().to_path_buf()];
    let m = LogManager::open(dirs, 1, compacted(0), 0).expect("open");
    let a = m.get_or_create("a", 0, compacted(0)).expect("a");
    let b = m.get_or_create("b", 0, compacted(0)).expect("b");
    assert_eq!(a.log_dir().path(), d0.path());
    fill_compacted(&a);
    fill_compacted(&b);
    // A real I/O error in the middle of a's clean: a segment file vanished from the disk.
    let first = a.segment_base_offsets()[0];
    std::fs::remove_file(a.dir().join(format!("{first:020}.log"))).expect("remove");

    let cleaned = m.clean_all(10_000).expect("the pass goes on");
    assert_eq!(m.offline_log_dirs(), vec![d0.path().to_path_buf()]);
    assert!(a.is_offline());
    assert_eq!(cleaned.len(), 1);
    assert_eq!(cleaned[0].0, ("b".to_string(), 0));
    assert!(cleaned[0].1.segments_replaced > 0);
    // The next pass skips the offline dir.
    assert!(m.clean_all(20_000).expect("pass").is_empty());

    // An injected fault meets the cleaner the same way.
    fill_compacted(&b);
    m.log_dir_state(d1.path())
        .expect("state")
        .inject_io_failure();
    assert!(m.clean_all(30_000).expect("pass").is_empty());
    assert!(b.is_offline());
    assert!(m.all_log_dirs_offline());
}

#[test]
fn a_failed_delete_of_segments_the_cleaner_replaced_takes_the_dir_offline() {
    let d0 = tempfile::tempdir().expect("tempdir");
    let m = LogManager::open(vec![d0.path().to_path_buf()], 1, compacted(60_000), 0).expect("open");
    let a = m.get_or_create("a", 0, compacted(60_000)).expect("a");
    fill_compacted(&a);
    let cleaned = m.clean_all(10_000).expect("clean");
    assert_eq!(cleaned.len(), 1);
    assert!(!a.is_offline());
    // The replaced segments wait for file.delete.delay.ms as `.deleted` files; one of them
    // cannot be removed (a directory in its place fails even for root).
    let pending = a.inner.read().pending_deletes.clone();
    let victim = pending
        .iter()
        .flat_map(|(_, paths)| paths)
        .find(|p| p.exists())
        .expect("a delayed delete")
        .clone();
    std::fs::remove_file(&victim).expect("remove");
    std::fs::create_dir(&victim).expect("mkdir");
    std::fs::write(victim.join("x"), b"x").expect("write");
    a.apply_retention(10_000 + 60_000)
        .expect("the retention pass itself succeeds");
    assert!(a.is_offline());
    assert!(m.all_log_dirs_offline());
}
