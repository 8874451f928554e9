//! Unit tests of the partition log and log manager: read rules, timestamps, leader epochs,
//! truncation, retention, DeleteRecords and reopening.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::BytesMut;

use crate::protocol::records::batch::{check_batch, parse_header, BatchIter};
use crate::protocol::records::testutil::{build_test_batch, TestBatch};

use super::{LogConfig, LogManager, PartitionLog, StorageError};

pub(super) fn batch(records: usize, ts: i64) -> BytesMut {
    BytesMut::from(
        &build_test_batch(&TestBatch {
            records,
            base_timestamp: ts,
            ..TestBatch::default()
        })[..],
    )
}

fn open(dir: &tempfile::TempDir, config: LogConfig) -> PartitionLog {
    PartitionLog::open(dir.path().join("my-topic-0"), config, 0, true, 0).expect("open")
}

fn small() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        index_interval_bytes: 100,
        segment_index_bytes: 800,
        ..LogConfig::default()
    }
}

fn bases(records: &[u8]) -> Vec<i64> {
    BatchIter::new(records)
        .map(|(h, _)| h.base_offset)
        .collect()
}

#[test]
fn topic_partition_splits_at_last_dash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = PartitionLog::open(
        dir.path().join("a-b-c-12"),
        LogConfig::default(),
        0,
        true,
        0,
    )
    .expect("open");
    assert_eq!(log.topic_partition(), ("a-b-c".to_string(), 12));
    assert!(
        PartitionLog::open(dir.path().join("nodash"), LogConfig::default(), 0, true, 0).is_err()
    );
}

#[test]
fn leader_append_assigns_offsets_and_epoch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, LogConfig::default());
    let mut two = batch(3, 100);
    two.extend_from_slice(&batch(2, 200));
    let info = log.append_as_leader(two, 5, None, 0).expect("append");
    assert_eq!(
        (info.first_offset, info.last_offset, info.max_timestamp),
        (0, 4, 201)
    );
    assert_eq!(info.log_append_time_ms, -1);
    let info = log
        .append_as_leader(batch(1, 50), 5, Some(7777), 0)
        .expect("append");
    assert_eq!(
        (
            info.first_offset,
            info.log_append_time_ms,
            info.max_timestamp
        ),
        (5, 7777, 7777)
    );
    assert_eq!(log.log_end_offset(), 6);
    assert_eq!(log.latest_epoch(), Some(5));
    let data = log.read(0, 1 << 20, i64::MAX, false).expect("read").records;
    let headers: Vec<_> = BatchIter::new(&data).map(|(h, _)| h).collect();
    assert_eq!(
        headers.iter().map(|h| h.base_offset).collect::<Vec<_>>(),
        vec![0, 3, 5]
    );
    assert!(headers.iter().all(|h| h.partition_leader_epoch == 5));
    assert!(headers[2].timestamp_type_is_log_append());
    // The stored batches still pass validation (CRC recomputed for LogAppendTime).
    crate::protocol::records::batch::validate_batches(&data, 1 << 20).expect("valid");
}

#[test]
fn read_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, LogConfig::default());
    for _ in 0..4 {
        log.append_as_leader(batch(3, 100), 0, None, 0)
            .expect("append"); // offsets 0-2, 3-5, ...
    }
    let one = batch(3, 100).len();
    // Mid-batch fetch offset returns the containing batch.
    let r = log.read(4, 1 << 20, i64::MAX, false).expect("read");
    assert_eq!(bases(&r.records), vec![3, 6, 9]);
    assert_eq!((r.log_start_offset, r.log_end_offset), (0, 12));
    // max_bytes counts whole batches only.
    assert_eq!(
        bases(
            &log.read(0, one * 2 + 5, i64::MAX, false)
                .expect("read")
                .records
        ),
        vec![0, 3]
    );
    // A batch bigger than max_bytes: nothing, unless min_one_batch.
    assert!(log
        .read(0, 10, i64::MAX, false)
        .expect("read")
        .records
        .is_empty());
    assert_eq!(
        bases(&log.read(0, 10, i64::MAX, true).expect("read").records),
        vec![0]
    );
    // max_offset_exclusive: batches whose base offset is below it.
    assert_eq!(
        bases(&log.read(0, 1 << 20, 6, false).expect("read").records),
        vec![0, 3]
    );
    assert_eq!(
        bases(&log.read(0, 1 << 20, 7, false).expect("read").records),
        vec![0, 3, 6]
    );
    // At the end: empty; beyond: out of range.
    assert!(log
        .read(12, 100, i64::MAX, true)
        .expect("read")
        .records
        .is_empty());
    assert!(matches!(
        log.read(13, 100, i64::MAX, true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert!(matches!(
        log.read(-1, 100, i64::MAX, true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
}

#[test]
fn segments_roll_by_size_and_reads_cross_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, small());
    for i in 0..20 {
        log.append_as_leader(batch(2, 1000 + i), 0, None, 0)
            .expect("append");
    }
    assert!(log.num_segments() > 3, "rolled: {}", log.num_segments());
    let seg_bases = log.segment_base_offsets();
    for w in seg_bases.windows(2) {
        let f = dir
            .path()
            .join("my-topic-0")
            .join(format!("{:020}.log", w[0]));
        assert!(std::fs::metadata(&f).expect("stat").len() <= 300);
    }
    let mut next = 0;
    while next < log.log_end_offset() {
        let r = log.read(next, 1 << 20, i64::MAX, true).expect("read");
        let hs: Vec<_> = BatchIter::new(&r.records).map(|(h, _)| h).collect();
        assert_eq!(hs[0].base_offset, next);
        next = hs.last().expect("batch").last_offset() + 1;
    }
    assert_eq!(next, 40);
}

#[test]
fn timestamps_lookup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, small());
    for i in 0..10 {
        // Each batch: 2 records at ts 1000+100i and 1000+100i+1.
        log.append_as_leader(batch(2, 1000 + 100 * i), 0, None, 0)
            .expect("append");
    }
    assert_eq!(
        log.offset_for_timestamp(0).expect("lookup"),
        Some((0, 1000))
    );
    assert_eq!(
        log.offset_for_timestamp(1001).expect("lookup"),
        Some((1, 1001))
    );
    assert_eq!(
        log.offset_for_timestamp(1050).expect("lookup"),
        Some((2, 1100))
    );
    assert_eq!(
        log.offset_for_timestamp(1901).expect("lookup"),
        Some((19, 1901))
    );
    assert_eq!(log.offset_for_timestamp(1902).expect("lookup"), None);
    assert_eq!(
        log.max_timestamp_and_offset().expect("max"),
        Some((19, 1901))
    );
    // After a clean close and reopen the answers are the same (indexes reloaded).
    log.close().expect("close");
    drop(log);
    let log = open(&dir, small());
    assert_eq!(
        log.offset_for_timestamp(1050).expect("lookup"),
        Some((2, 1100))
    );
    assert_eq!(
        log.max_timestamp_and_offset().expect("max"),
        Some((19, 1901))
    );
}

#[test]
fn follower_append_checks_offsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, LogConfig::default());
    let b = build_test_batch(&TestBatch {
        records: 2,
        base_offset: 10,
        partition_leader_epoch: 3,
        ..TestBatch::default()
    });
    log.append_as_follower(b.clone().into(), 0).expect("append");
    assert_eq!(log.log_end_offset(), 12);
    assert_eq!(log.epoch_entries(), vec![(3, 10)]);
    assert!(matches!(
        log.append_as_follower(b.into(), 0),
        Err(StorageError::OffsetOutOfOrder { .. })
    ));
    let mut bad = build_test_batch(&TestBatch {
        records: 2,
        base_offset: 12,
        ..TestBatch::default()
    });
    let n = bad.len();
    bad[n - 1] ^= 1;
    assert!(matches!(
        log.append_as_follower(bad.into(), 0),
        Err(StorageError::InvalidRecord(_))
    ));
}

#[test]
fn truncation_and_epochs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, small());
    for i in 0..10 {
        log.append_as_leader(batch(2, 1000), i / 3, None, 0)
            .expect("append");
    }
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 6), (2, 12), (3, 18)]);
    assert_eq!(log.end_offset_for_epoch(1), (1, 12));
    assert_eq!(log.end_offset_for_epoch(3), (3, 20));
    log.truncate_to(10).expect("truncate");
    assert_eq!(log.log_end_offset(), 10);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 6)]);
    assert_eq!(
        bases(&log.read(6, 1 << 20, i64::MAX, false).expect("read").records),
        vec![6, 8]
    );
    let info = log
        .append_as_leader(batch(1, 1000), 7, None, 0)
        .expect("append");
    assert_eq!(info.first_offset, 10);
    log.truncate_fully_and_start_at(100)
        .expect("truncate fully");
    assert_eq!(
        (
            log.log_start_offset(),
            log.log_end_offset(),
            log.num_segments()
        ),
        (100, 100, 1)
    );
    assert!(log.epoch_entries().is_empty());
    assert_eq!(
        log.append_as_leader(batch(1, 1000), 8, None, 0)
            .expect("append")
            .first_offset,
        100
    );
}

#[test]
fn delete_records_and_retention() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = small();
    config.file_delete_delay_ms = 0;
    let log = open(&dir, config.clone());
    for i in 0..20 {
        log.append_as_leader(batch(2, 1000 * i), 0, None, 0)
            .expect("append");
    }
    let segs = log.segment_base_offsets();
    assert!(matches!(
        log.delete_records_before(41),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert_eq!(
        log.delete_records_before(segs[2] + 1).expect("delete"),
        segs[2] + 1
    );
    assert_eq!(log.segment_base_offsets()[0], segs[2]);
    assert!(matches!(
        log.read(segs[2], 100, i64::MAX, true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert_eq!(log.delete_records_before(1).expect("no-op"), segs[2] + 1);

    // Retention by time: everything but the active segment is older than 5 s at t=30 s,
    // except segments whose newest batch is within 5 s.
    let mut c = config.clone();
    c.retention_ms = 5_000;
    log.update_config(c);
    let deleted = log.apply_retention(19_000 + 5_000).expect("retention");
    assert!(deleted > 0);
    let first = log.segment_base_offsets()[0];
    assert_eq!(log.log_start_offset(), first);
    let r = log.read(first, 1 << 20, i64::MAX, true).expect("read");
    let h = parse_header(&r.records).expect("header");
    assert!(
        h.max_timestamp >= 19_000 - 5_000 - 3000,
        "kept segment is recent: {}",
        h.max_timestamp
    );

    // Retention by bytes keeps at most retention_bytes (plus the active segment).
    let mut c = config.clone();
    c.retention_bytes = 300;
    log.update_config(c);
    log.apply_retention(19_000).expect("retention");
    assert!(log.size_bytes() <= 300 + 300, "size {}", log.size_bytes());
    let files: Vec<PathBuf> = std::fs::read_dir(dir.path().join("my-topic-0"))
        .expect("ls")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".deleted"))
        .collect();
    assert!(
        files.is_empty(),
        "no delay: files removed at once: {files:?}"
    );
}

#[test]
fn segment_ms_rolls_active_segment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(
        &dir,
        LogConfig {
            segment_ms: 1000,
            ..LogConfig::default()
        },
    );
    log.append_as_leader(batch(1, 5_000), 0, None, 5_000)
        .expect("append");
    assert_eq!(log.apply_retention(5_500).expect("retention"), 0);
    assert_eq!(log.num_segments(), 1);
    log.apply_retention(6_001).expect("retention");
    assert_eq!(log.num_segments(), 2);
    // An append whose timestamp is far past the first batch's rolls too.
    log.append_as_leader(batch(1, 10_000), 0, None, 10_000)
        .expect("append");
    log.append_as_leader(batch(1, 12_000), 0, None, 12_000)
        .expect("append");
    assert_eq!(log.num_segments(), 3);
}

#[test]
fn index_files_are_preallocated_and_trimmed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, small());
    for _ in 0..10 {
        log.append_as_leader(batch(2, 1000), 0, None, 0)
            .expect("append");
    }
    let segs = log.segment_base_offsets();
    let p = dir.path().join("my-topic-0");
    let active_idx = p.join(format!("{:020}.index", segs[segs.len() - 1]));
    assert_eq!(std::fs::metadata(&active_idx).expect("stat").len(), 800);
    let old_idx = p.join(format!("{:020}.index", segs[0]));
    assert_eq!(std::fs::metadata(&old_idx).expect("stat").len() % 8, 0);
    assert!(std::fs::metadata(&old_idx).expect("stat").len() < 800);
    log.close().expect("close");
    assert!(std::fs::metadata(&active_idx).expect("stat").len() < 800);
}

#[test]
fn topic_id_and_reopen_keep_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, small());
    for i in 0..10 {
        log.append_as_leader(batch(2, 1000), i / 5, None, 0)
            .expect("append");
    }
    let id = crate::protocol::codec::Uuid::random();
    log.set_topic_id(id).expect("set");
    log.close().expect("close");
    drop(log);
    let log = open(&dir, small());
    assert_eq!(log.topic_id(), Some(id));
    assert_eq!(log.log_end_offset(), 20);
    assert_eq!(log.epoch_entries(), vec![(0, 0), (1, 10)]);
    let mut seen = Vec::new();
    log.scan_batches(7, &mut |h| seen.push(h.base_offset))
        .expect("scan");
    assert_eq!(seen, vec![6, 8, 10, 12, 14, 16, 18]);
}

#[test]
fn manager_round_trip_and_clean_shutdown_marker() {
    let d1 = tempfile::tempdir().expect("tempdir");
    let d2 = tempfile::tempdir().expect("tempdir");
    let dirs = vec![d1.path().to_path_buf(), d2.path().to_path_buf()];
    let m = LogManager::open(dirs.clone(), 1, LogConfig::default(), 0).expect("open");
    let cluster = m.cluster_id();
    let a = m
        .get_or_create("t-x", 0, LogConfig::default())
        .expect("create");
    let b = m
        .get_or_create("t-x", 1, LogConfig::default())
        .expect("create");
    assert_ne!(a.dir().parent(), b.dir().parent(), "spread over log dirs");
    a.append_as_leader(batch(3, 1000), 0, None, 0)
        .expect("append");
    a.delete_records_before(1).expect("delete records");
    m.shutdown().expect("shutdown");
    assert!(d1.path().join(".kafka_cleanshutdown").exists());
    drop((a, b, m));

    let m = LogManager::open(dirs.clone(), 1, LogConfig::default(), 0).expect("reopen");
    assert_eq!(m.cluster_id(), cluster);
    assert!(
        !d1.path().join(".kafka_cleanshutdown").exists(),
        "marker consumed at start-up"
    );
    let a = m.get("t-x", 0).expect("exists");
    assert_eq!((a.log_start_offset(), a.log_end_offset()), (1, 3));
    assert_eq!(m.all().len(), 2);
    m.delete_partition("t-x", 1).expect("delete");
    assert!(m.get("t-x", 1).is_none());
    assert!(
        LogManager::open(dirs, 2, LogConfig::default(), 0).is_err(),
        "node id mismatch"
    );
}

/// (timestamp, offset)
type TsAndOffset = (i64, i64);

/// Every `.timeindex` entry of `dir` as (timestamp, offset), and every batch of every `.log`
/// as (max timestamp, last offset).
fn time_index_entries_and_batches(dir: &std::path::Path) -> (Vec<TsAndOffset>, Vec<TsAndOffset>) {
    let mut entries = Vec::new();
    let mut batches = Vec::new();
    for e in std::fs::read_dir(dir).expect("list") {
        let path = e.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".timeindex") {
            let base: i64 = stem.parse().expect("base");
            let bytes = std::fs::read(&path).expect("read");
            for c in bytes.chunks(12) {
                let ts = i64::from_be_bytes(c[..8].try_into().unwrap());
                let rel = u32::from_be_bytes(c[8..].try_into().unwrap());
                entries.push((ts, base + rel as i64));
            }
        } else if name.ends_with(".log") {
            let bytes = std::fs::read(&path).expect("read");
            for (h, _) in BatchIter::new(&bytes) {
                batches.push((h.max_timestamp, h.last_offset()));
            }
        }
    }
    (entries, batches)
}

#[test]
fn time_index_entries_name_the_last_offset_of_their_batch() {
    // kafka-dump-log (DumpLogSegments.dumpTimeIndex) requires each time index entry's offset to
    // be the last offset of a batch whose largest timestamp is the entry's timestamp. Batches
    // whose records share one timestamp put the max timestamp on their first record, which an
    // index of record-exact offsets got wrong.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, small());
    for i in 0..12 {
        let b = build_test_batch(&TestBatch {
            records: 3,
            base_timestamp: 1000 + 100 * i,
            timestamp_step_ms: 0,
            ..TestBatch::default()
        });
        log.append_as_leader(BytesMut::from(&b[..]), 0, None, 0)
            .expect("append");
    }
    // MAX_TIMESTAMP still answers with the first record carrying it.
    assert_eq!(
        log.max_timestamp_and_offset().expect("max"),
        Some((33, 2100))
    );
    log.close().expect("close");
    drop(log);
    let (entries, batches) = time_index_entries_and_batches(&dir.path().join("my-topic-0"));
    assert!(entries.len() >= 3, "entries: {entries:?}");
    for (ts, offset) in &entries {
        assert!(
            batches.contains(&(*ts, *offset)),
            "time index entry ({ts}, {offset}) is not (max timestamp, last offset) of a batch: {batches:?}"
        );
    }
    // Reopened (indexes loaded, not rebuilt): the same answers.
    let log = open(&dir, small());
    assert_eq!(
        log.max_timestamp_and_offset().expect("max"),
        Some((33, 2100))
    );
    assert_eq!(
        log.offset_for_timestamp(1550).expect("lookup"),
        Some((18, 1600))
    );
}

#[test]
fn torn_tail_found_at_clean_load_keeps_appending_to_the_same_segment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig {
        segment_bytes: 4000,
        index_interval_bytes: 100,
        ..LogConfig::default()
    };
    let log = open(&dir, config.clone());
    for i in 0..40 {
        log.append_as_leader(batch(2, 1000 + i), 0, None, 0)
            .expect("append");
    }
    let before = log.segment_base_offsets();
    let last = *before.last().expect("segments");
    log.close().expect("close");
    drop(log);
    // Tear the active segment in its middle, as a crash during a write would, and reopen as
    // after a clean shutdown: the load notices, recovers the segment and the log goes on in it.
    let path = dir
        .path()
        .join("my-topic-0")
        .join(format!("{last:020}.log"));
    let len = std::fs::metadata(&path).expect("stat").len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    f.set_len(len / 2 + 7).expect("truncate");
    drop(f);
    let log = open(&dir, config);
    let leo = log.log_end_offset();
    assert!(leo > last && leo < 80, "recovered end {leo}");
    log.append_as_leader(batch(2, 2000), 0, None, 0)
        .expect("append");
    assert_eq!(log.segment_base_offsets(), before, "no new segment");
}

#[test]
fn rolled_segments_are_flushed_and_move_the_recovery_point() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, small());
    assert!(
        !log.flush_sealed_segments().expect("flush"),
        "nothing rolled yet"
    );
    for i in 0..12 {
        log.append_as_leader(batch(2, 1000 + i), 0, None, 0)
            .expect("append");
    }
    let segs = log.segment_base_offsets();
    assert!(segs.len() >= 3, "segments {segs:?}");
    // Appends alone do not move it (flush.messages / flush.ms unset) ...
    assert_eq!(log.recovery_point(), 0);
    // ... the flush of rolled segments moves it to the active segment's base.
    assert!(log.flush_sealed_segments().expect("flush"));
    let active = *segs.last().expect("active");
    assert_eq!(log.recovery_point(), active);
    assert!(!log.flush_sealed_segments().expect("flush"), "already done");
    // A truncation into a sealed segment pulls the recovery point back with it.
    log.truncate_to(segs[1] + 1).expect("truncate");
    assert_eq!(log.recovery_point(), segs[1] + 1);
    assert!(
        !log.flush_sealed_segments().expect("flush"),
        "truncated segment is active"
    );
}

/// The epoch checkpoint and partition.metadata are fsynced only when the log flushes; a crash
/// before that can leave them empty. Recovery must rebuild the epochs from the batches and
/// ignore the empty metadata file (the topic id is written again by the replica manager).
#[test]
fn lost_deferred_checkpoints_are_rebuilt_by_recovery() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, small());
    for i in 0..10 {
        log.append_as_leader(batch(2, 1000), i / 4, None, 0)
            .expect("append");
    }
    log.set_topic_id(crate::protocol::codec::Uuid::random())
        .expect("set");
    let want = log.epoch_entries();
    assert_eq!(want, vec![(0, 0), (1, 8), (2, 16)]);
    drop(log);
    let part = dir.path().join("my-topic-0");
    std::fs::write(part.join("leader-epoch-checkpoint"), b"").expect("empty");
    std::fs::write(part.join("partition.metadata"), b"").expect("empty");
    // Unclean: recovery from offset 0.
    let log = PartitionLog::open(part.clone(), small(), 0, false, 0).expect("reopen");
    assert_eq!(log.epoch_entries(), want);
    assert_eq!(log.topic_id(), None);
    assert_eq!(log.log_end_offset(), 20);
    drop(log);
    // A checkpoint that lacks the epochs of batches past the recovery point (their assign was
    // never fsynced) is completed from the recovered batches.
    std::fs::write(part.join("leader-epoch-checkpoint"), b"0\n1\n0 0\n").expect("stale");
    let log = PartitionLog::open(part, small(), 4, false, 0).expect("reopen");
    assert_eq!(log.epoch_entries(), want);
}

/// A new partition costs no fsync: its files are made durable by the first flush.
#[test]
fn new_log_defers_its_fsyncs_to_the_first_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, small());
    let id = crate::protocol::codec::Uuid::random();
    log.set_topic_id(id).expect("set");
    log.append_as_leader(batch(2, 1000), 3, None, 0)
        .expect("append");
    log.flush().expect("flush");
    log.close().expect("close");
    drop(log);
    let log = open(&dir, small());
    assert_eq!(log.topic_id(), Some(id));
    assert_eq!(log.epoch_entries(), vec![(3, 0)]);
}

#[test]
fn a_corrected_max_timestamp_is_written_with_its_crc() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, LogConfig::default());
    let b = batch(3, 100);
    let mut header = parse_header(&b).expect("header");
    let stated = header.max_timestamp;
    // The validator found a smaller max timestamp in the records than the header states.
    header.max_timestamp = stated - 1;
    let range = 0..b.len();
    let info = log
        .append_validated_as_leader(b, vec![(header, range)], 1, None, 0)
        .expect("append");
    assert_eq!(info.max_timestamp, stated - 1);
    let data = log.read(0, 1 << 20, i64::MAX, false).expect("read").records;
    let stored = parse_header(&data).expect("stored header");
    assert_eq!(stored.max_timestamp, stated - 1);
    crate::protocol::records::batch::validate_batches(&data, 1 << 20).expect("CRC rewritten");
}

/// The zero-copy read returns exactly the bytes of the copying read, for every fetch offset,
/// size limit, offset bound and `min_one_batch`, over batches of mixed sizes spread across
/// segments with a dense offset index, and its `next_offset` is the offset after them.
#[test]
fn read_region_matches_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(
        &dir,
        LogConfig {
            segment_bytes: 2_000,
            index_interval_bytes: 150,
            segment_index_bytes: 800,
            ..LogConfig::default()
        },
    );
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for i in 0..60 {
        let records = 1 + next(6) as usize;
        log.append_as_leader(batch(records, 1000 + i), 0, None, 0)
            .expect("append");
    }
    let end = log.log_end_offset();
    assert!(log.num_segments() > 3, "rolled: {}", log.num_segments());
    for _ in 0..3_000 {
        let fetch_offset = next(end as u64 + 1) as i64;
        let max_bytes = next(700) as usize;
        let bound = if next(3) == 0 {
            i64::MAX
        } else {
            next(end as u64 + 2) as i64
        };
        let min_one = next(2) == 0;
        let copied = log
            .read(fetch_offset, max_bytes, bound, min_one)
            .expect("read");
        let region = log
            .read_region(fetch_offset, max_bytes, bound, min_one)
            .expect("read_region");
        let what = format!("offset {fetch_offset} max {max_bytes} bound {bound} min_one {min_one}");
        assert_eq!(
            (region.log_start_offset, region.log_end_offset),
            (copied.log_start_offset, copied.log_end_offset),
            "{what}"
        );
        match &region.region {
            None => assert!(copied.records.is_empty(), "{what}"),
            Some(r) => {
                assert_eq!(r.read().expect("region bytes"), copied.records, "{what}");
                let last = BatchIter::new(&copied.records)
                    .last()
                    .map(|(h, _)| h.last_offset())
                    .expect("a batch");
                assert_eq!(r.next_offset, last + 1, "{what}");
            }
        }
    }
}

/// Readers running beside appends (and the rolls among them) only ever see whole, intact
/// batches with contiguous offsets, up to the log end offset they were told.
#[test]
fn readers_beside_appends_see_only_whole_committed_batches() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = LogConfig {
        segment_bytes: 8 * 1024,
        ..LogConfig::default()
    };
    let log =
        Arc::new(PartitionLog::open(dir.path().join("t-0"), config, 0, true, 0).expect("open"));
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (log, done) = (log.clone(), done.clone());
            std::thread::spawn(move || {
                let mut checked = 0u64;
                while !done.load(Ordering::Acquire) {
                    let mut offset = log.log_start_offset();
                    loop {
                        let data = log.read(offset, 4096, i64::MAX, true).expect("read");
                        if data.records.is_empty() {
                            assert!(offset <= data.log_end_offset);
                            break;
                        }
                        let mut at = 0;
                        while at < data.records.len() {
                            let h = check_batch(&data.records[at..]).expect("intact batches");
                            at += h.total_size();
                            assert_eq!(h.base_offset, offset, "contiguous offsets");
                            offset = h.last_offset() + 1;
                            checked += 1;
                        }
                        assert!(offset <= data.log_end_offset);
                    }
                }
                checked
            })
        })
        .collect();
    for i in 0..3000u64 {
        let batch = build_test_batch(&TestBatch {
            records: 1 + (i % 4) as usize,
            base_timestamp: 1000,
            value_len: 40 + (i % 300) as usize,
            seed: i,
            ..TestBatch::default()
        });
        log.append_as_leader(BytesMut::from(&batch[..]), 0, None, 0)
            .expect("append");
    }
    done.store(true, Ordering::Release);
    let checked: u64 = readers.into_iter().map(|r| r.join().expect("reader")).sum();
    assert!(checked > 0);
    assert!(log.num_segments() > 10, "the appends rolled segments");
}
