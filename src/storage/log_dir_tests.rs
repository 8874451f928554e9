//! Log dir failure in storage: an injected I/O error takes the dir offline at the failing
//! operation, the other dir keeps working, and what was acknowledged before the fault is read
//! back after a restart on a healthy disk (Kafka's `LogDirFailureTest` in spirit).

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
