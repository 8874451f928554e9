//! The log manager's `replication-offset-checkpoint` and its start-up with a failed log dir
//! (Kafka's `LogManager.loadLogs`: the dir is offline, the others open).

use std::sync::Arc;

use bytes::BytesMut;

use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;
use crate::protocol::records::testutil::{build_test_batch, TestBatch};
use crate::replica::{PartitionConfig, ReplicaManager};

use super::checkpoint::{
    OffsetMap, CLEAN_SHUTDOWN_MARKER, RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT,
};
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

fn offsets(entries: &[(&str, i64)]) -> OffsetMap {
    entries
        .iter()
        .map(|(topic, offset)| ((topic.to_string(), 0), *offset))
        .collect()
}

#[test]
fn high_watermarks_are_checkpointed_per_dir_and_kept_for_unopened_logs() {
    let d0 = tempfile::tempdir().expect("tempdir");
    let d1 = tempfile::tempdir().expect("tempdir");
    let dirs = vec![d0.path().to_path_buf(), d1.path().to_path_buf()];
    let m = LogManager::open(dirs.clone(), 1, LogConfig::default(), 0).expect("open");
    // Least-loaded placement: a and c in d0, b in d1.
    for t in ["a", "b", "c"] {
        m.get_or_create(t, 0, LogConfig::default()).expect("create");
    }
    m.checkpoint_high_watermarks(&offsets(&[("a", 3), ("b", 2)]))
        .expect("checkpoint");
    let read = |d: &tempfile::TempDir| {
        std::fs::read_to_string(d.path().join(REPLICATION_OFFSET_CHECKPOINT)).expect("read")
    };
    // c has no replica (no high watermark): not listed.
    assert_eq!(read(&d0), "0\n1\na 0 3\n");
    assert_eq!(read(&d1), "0\n1\nb 0 2\n");
    m.shutdown().expect("shutdown");
    drop(m);

    let m = LogManager::open(dirs.clone(), 1, LogConfig::default(), 0).expect("reopen");
    assert_eq!(m.checkpointed_high_watermark("a", 0), Some(3));
    assert_eq!(m.checkpointed_high_watermark("b", 0), Some(2));
    assert_eq!(m.checkpointed_high_watermark("c", 0), None);
    // Only a's replica is open: b keeps the value read at start-up.
    m.checkpoint_high_watermarks(&offsets(&[("a", 5)]))
        .expect("checkpoint");
    assert_eq!(read(&d0), "0\n1\na 0 5\n");
    assert_eq!(read(&d1), "0\n1\nb 0 2\n");
    // A deleted partition leaves the file, and comes back without a high watermark.
    m.delete_partition("a", 0).expect("delete");
    m.checkpoint_high_watermarks(&OffsetMap::new())
        .expect("checkpoint");
    assert_eq!(read(&d0), "0\n0\n");
    m.get_or_create("a", 0, LogConfig::default())
        .expect("again");
    assert_eq!(m.checkpointed_high_watermark("a", 0), None);

    // A dir whose file cannot be written goes offline; the other is still written, and the
    // offline one skipped from then on.
    m.log_dir_state(d1.path())
        .expect("state")
        .inject_io_failure();
    assert!(m
        .checkpoint_high_watermarks(&offsets(&[("a", 1), ("b", 4)]))
        .is_err());
    assert_eq!(m.offline_log_dirs(), vec![d1.path().to_path_buf()]);
    assert_eq!(read(&d0), "0\n1\na 0 1\n");
    assert_eq!(read(&d1), "0\n1\nb 0 2\n");
    m.checkpoint_high_watermarks(&offsets(&[("a", 1)]))
        .expect("the offline dir is skipped");
}

#[test]
fn a_file_where_a_log_dir_should_be_leaves_that_dir_offline_and_the_other_serving() {
    let root = tempfile::tempdir().expect("tempdir");
    let (d0, d1) = (root.path().join("d0"), root.path().join("d1"));
    std::fs::write(&d1, b"not a directory").expect("write");
    let m = LogManager::open(vec![d0.clone(), d1.clone()], 1, LogConfig::default(), 0)
        .expect("starts with the other dir");
    assert_eq!(m.offline_log_dirs(), vec![d1.clone()]);
    let state = m.log_dir_state(&d1).expect("listed");
    assert_eq!(
        state.directory_id(),
        Uuid::ZERO,
        "its meta.properties was never read"
    );
    assert!(state
        .offline_reason()
        .is_some_and(|r| r.contains("start-up")));
    let a = m.get_or_create("a", 0, LogConfig::default()).expect("a");
    assert_eq!(a.log_dir().path(), d0);
    m.shutdown().expect("shutdown");
    assert!(d0.join(CLEAN_SHUTDOWN_MARKER).exists());

    // Tests run as root, so permissions cannot fail a dir: a file in its place does, and so
    // does every dir failing at once, which fails the start (Kafka halts).
    assert!(matches!(
        LogManager::open(vec![d1.clone()], 1, LogConfig::default(), 0),
        Err(StorageError::NoOnlineLogDir)
    ));
    // Not an I/O error: another node's dir still refuses the start.
    assert!(matches!(
        LogManager::open(vec![d0, d1], 2, LogConfig::default(), 0),
        Err(StorageError::InconsistentMetaProperties(_))
    ));
}

#[test]
fn a_dir_whose_loading_fails_keeps_its_partitions_and_is_recovered_once_healthy() {
    let d0 = tempfile::tempdir().expect("tempdir");
    let d1 = tempfile::tempdir().expect("tempdir");
    let dirs = vec![d0.path().to_path_buf(), d1.path().to_path_buf()];
    let m = LogManager::open(dirs.clone(), 1, LogConfig::default(), 0).expect("open");
    let a = m.get_or_create("a", 0, LogConfig::default()).expect("a");
    let b = m.get_or_create("b", 0, LogConfig::default()).expect("b");
    assert_eq!(b.log_dir().path(), d1.path());
    a.append_as_leader(batch(2), 0, None, 0).expect("a");
    b.append_as_leader(batch(3), 0, None, 0).expect("b");
    m.shutdown().expect("shutdown");
    drop((a, b, m));

    // Reading d1's recovery points fails with EISDIR (a directory where the file should be).
    let checkpoint = d1.path().join(RECOVERY_POINT_CHECKPOINT);
    std::fs::remove_file(&checkpoint).expect("remove");
    std::fs::create_dir(&checkpoint).expect("mkdir");
    let m = Arc::new(LogManager::open(dirs.clone(), 1, LogConfig::default(), 0).expect("open"));
    assert_eq!(m.offline_log_dirs(), vec![d1.path().to_path_buf()]);
    assert!(
        m.get("b", 0).is_none(),
        "the offline dir's partitions are not opened"
    );
    assert_eq!(m.get("a", 0).expect("a").log_end_offset(), 2);
    // b's data is in d1: it is not created empty in d0.
    assert!(matches!(
        m.get_or_create("b", 0, LogConfig::default()),
        Err(StorageError::LogDirOffline { .. })
    ));

    // The replica manager's failure pass sees the dir like one that failed later.
    let replicas = ReplicaManager::new(m.clone());
    let failures = replicas.handle_log_dir_failures();
    assert_eq!(failures.newly_offline.len(), 1);
    assert_eq!(failures.newly_offline[0].0, d1.path().to_path_buf());
    assert!(!failures.all_offline);
    assert!(replicas.handle_log_dir_failures().newly_offline.is_empty());
    assert_eq!(
        replicas.missing_partition_code("b", 0),
        ErrorCode::KAFKA_STORAGE_ERROR
    );
    let err = replicas
        .make_leader("b", 0, Uuid::ZERO, PartitionConfig::default())
        .err()
        .expect("refused");
    assert_eq!(err.code(), ErrorCode::KAFKA_STORAGE_ERROR);
    replicas
        .make_leader("c", 0, Uuid::ZERO, PartitionConfig::default())
        .expect("new partitions go to the online dir");
    m.shutdown().expect("shutdown");
    assert!(!d1.path().join(CLEAN_SHUTDOWN_MARKER).exists());
    drop((replicas, m));

    // The disk is healthy again: b is back with its data, recovered.
    std::fs::remove_dir(&checkpoint).expect("rmdir");
    let m = LogManager::open(dirs, 1, LogConfig::default(), 0).expect("reopen");
    assert!(m.offline_log_dirs().is_empty());
    assert_eq!(m.get("b", 0).expect("b").log_end_offset(), 3);
}

/// Kafka's `loadLogs` resets unreadable recovery points and log starts instead of failing the
/// start: every log is recovered in full and keeps all its records.
#[test]
fn unreadable_recovery_points_and_log_starts_are_reset_not_fatal() {
    use super::checkpoint::LOG_START_OFFSET_CHECKPOINT;
    let d = tempfile::tempdir().expect("tempdir");
    let dirs = vec![d.path().to_path_buf()];
    let m = LogManager::open(dirs.clone(), 1, LogConfig::default(), 0).expect("open");
    let a = m.get_or_create("a", 0, LogConfig::default()).expect("a");
    a.append_as_leader(batch(4), 0, None, 0).expect("append");
    m.shutdown().expect("shutdown");
    drop((a, m));
    for name in [RECOVERY_POINT_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT] {
        std::fs::write(d.path().join(name), "0\n1\nnot a checkpoint line\n").expect("write");
    }
    let m = LogManager::open(dirs, 1, LogConfig::default(), 0).expect("opens anyway");
    assert!(m.offline_log_dirs().is_empty());
    let a = m.get("a", 0).expect("a");
    assert_eq!(a.log_start_offset(), 0);
    assert_eq!(a.log_end_offset(), 4);
    m.shutdown().expect("shutdown");
}

#[test]
fn logs_made_together_are_the_logs_made_one_by_one() {
    let d0 = tempfile::tempdir().expect("tempdir");
    let d1 = tempfile::tempdir().expect("tempdir");
    let dirs = vec![d0.path().to_path_buf(), d1.path().to_path_buf()];
    let m = LogManager::open(dirs.clone(), 1, LogConfig::default(), 0).expect("open");
    let existing = m.get_or_create("t", 0, LogConfig::default()).expect("t-0");
    existing
        .append_as_leader(batch(2), 0, None, 0)
        .expect("append");
    let request = |p: i32| ("t".to_string(), p, LogConfig::default(), None);
    let mut requests: Vec<_> = (0..40).map(request).collect();
    requests.push(request(7));
    requests.push(("bad/name".to_string(), 0, LogConfig::default(), None));
    let made = m.get_or_create_many(requests, 3);
    assert_eq!(made.len(), 42);
    // The open log is handed back as it is, not made again.
    assert!(Arc::ptr_eq(made[0].as_ref().expect("t-0"), &existing));
    assert_eq!(existing.log_end_offset(), 2);
    for (p, log) in made.iter().enumerate().take(40).skip(1) {
        let log = log.as_ref().expect("made");
        assert_eq!(log.topic_partition(), ("t".to_string(), p as i32));
        assert_eq!(log.log_end_offset(), 0);
        assert!(Arc::ptr_eq(&m.get("t", p as i32).expect("open"), log));
    }
    assert!(
        matches!(made[40], Err(StorageError::InvalidArgument(_))),
        "twice"
    );
    assert!(
        matches!(made[41], Err(StorageError::InvalidArgument(_))),
        "bad name"
    );
    // Spread over both dirs as one-by-one creation does: 20 each.
    let in_dir = |d: &tempfile::TempDir| {
        std::fs::read_dir(d.path())
            .expect("list")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("t-"))
            .count()
    };
    assert_eq!((in_dir(&d0), in_dir(&d1)), (20, 20));
    m.shutdown().expect("shutdown");
    drop(m);
    let m = LogManager::open(dirs, 1, LogConfig::default(), 0).expect("reopen");
    assert_eq!(m.all().len(), 40);
    assert_eq!(m.get("t", 0).expect("t-0").log_end_offset(), 2);
}
