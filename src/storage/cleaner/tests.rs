//! Log cleaner tests: a random model check (keyed writes, tombstones, rolls, cleans, crashes in
//! the middle of a clean, reopens), the delete horizon, empty batches of producers, control
//! batches, retention of compact-only logs, and the cleaner checkpoint through the manager.

use std::collections::{BTreeMap, HashMap};

use bytes::{Bytes, BytesMut};

use crate::protocol::records::batch::{check_batch, BatchIter, DELETE_HORIZON_FLAG_MASK};
use crate::protocol::records::{build_end_txn_marker_batch, decode_records, RecordBatchBuilder};
use crate::storage::{LogConfig, LogManager, PartitionLog};

use super::{CleanerConfig, CrashPoint};

type Key = Bytes;
type Value = Option<Bytes>;

fn cfg() -> LogConfig {
    LogConfig {
        segment_bytes: 600,
        index_interval_bytes: 64,
        segment_index_bytes: 4096,
        compact: true,
        delete: false,
        delete_retention_ms: 1000,
        file_delete_delay_ms: 0,
        ..LogConfig::default()
    }
}

fn keyed(records: &[(&str, Option<&str>)], ts: i64) -> BytesMut {
    let mut b = RecordBatchBuilder::new(0);
    for (k, v) in records {
        b.append(
            ts,
            Some(Bytes::copy_from_slice(k.as_bytes())),
            v.map(|v| Bytes::copy_from_slice(v.as_bytes())),
            vec![],
        );
    }
    b.build()
}

fn open(dir: &tempfile::TempDir, clean_shutdown: bool) -> PartitionLog {
    PartitionLog::open(dir.path().join("compacted-0"), cfg(), 0, clean_shutdown, 0).expect("open")
}

fn roll(log: &PartitionLog, now: i64) {
    let mut inner = log.inner.write();
    let leo = inner.log_end_offset;
    inner.roll(leo, now).expect("roll");
}

/// Every record of the log, in order: (offset, key, value).
fn read_all(log: &PartitionLog) -> Vec<(i64, Option<Key>, Value)> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    let leo = log.log_end_offset();
    while offset < leo {
        let data = log.read(offset, 1 << 20, i64::MAX, true).expect("read");
        if data.records.is_empty() {
            break;
        }
        for (h, range) in BatchIter::new(&data.records) {
            check_batch(&data.records[range.clone()]).expect("valid CRC");
            for r in decode_records(&data.records[range], 1 << 20).expect("decode") {
                out.push((h.base_offset + r.offset_delta as i64, r.key, r.value));
            }
            offset = h.last_offset() + 1;
        }
    }
    out
}

/// The model: every record ever appended, by offset.
type Model = BTreeMap<i64, (Key, Value)>;

fn check(log: &PartitionLog, model: &Model, leo: i64) {
    assert_eq!(log.log_end_offset(), leo, "log end offset unchanged");
    let records = read_all(log);
    let mut prev = -1;
    let mut last_in_log: HashMap<Key, Value> = HashMap::new();
    for (offset, key, value) in &records {
        assert!(*offset > prev, "offsets strictly increase");
        prev = *offset;
        let (mk, mv) = model.get(offset).expect("no invented offset");
        assert_eq!(key.as_ref(), Some(mk), "key at {offset}");
        assert_eq!(value, mv, "value at {offset}");
        last_in_log.insert(mk.clone(), value.clone());
    }
    let mut latest: HashMap<Key, Value> = HashMap::new();
    for (k, v) in model.values() {
        latest.insert(k.clone(), v.clone());
    }
    for (k, v) in &latest {
        match last_in_log.get(k) {
            Some(got) => assert_eq!(got, v, "latest value of {k:?}"),
            None => assert!(v.is_none(), "key {k:?} lost its latest value"),
        }
    }
    // Everything in the active segment is untouched.
    let active = *log.segment_base_offsets().last().expect("active");
    let kept: Vec<i64> = records.iter().map(|r| r.0).collect();
    for offset in model.range(active..).map(|(o, _)| *o) {
        assert!(
            kept.binary_search(&offset).is_ok(),
            "active offset {offset} readable"
        );
    }
    // Reads by offset work at every retained offset, through the indexes.
    for &offset in &kept {
        let data = log.read(offset, 1, i64::MAX, true).expect("read by offset");
        let (h, _) = BatchIter::new(&data.records).next().expect("a batch");
        assert!(
            h.base_offset <= offset && offset <= h.last_offset(),
            "batch holds {offset}"
        );
    }
    // kafka-dump-log style: every offset index entry points at the batch it names.
    let inner = log.inner.read();
    for seg in inner.segments.values() {
        for i in 0..seg.offset_index().entries() {
            let (offset, pos) = seg.offset_index().entry(i);
            let h = seg
                .read_header_at(pos as u64)
                .expect("read")
                .expect("batch at entry");
            assert_eq!(
                h.last_offset(),
                offset,
                "index entry {i} of {}",
                seg.base_offset()
            );
        }
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn random_operations_match_the_model() {
    for seed in 1..=4u64 {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut log = open(&dir, true);
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut model = Model::new();
        let mut now = 0i64;
        let keys = ["a", "b", "c", "d", "e", "f"];
        let mut cleans = 0;
        for step in 0..200 {
            match rng.below(100) {
                0..=54 => {
                    let n = 1 + rng.below(3) as usize;
                    let recs: Vec<(&str, Option<String>)> = (0..n)
                        .map(|_| {
                            let k = keys[rng.below(keys.len() as u64) as usize];
                            let v = (rng.below(100) >= 15).then(|| format!("v{step}"));
                            (k, v)
                        })
                        .collect();
                    let borrowed: Vec<(&str, Option<&str>)> =
                        recs.iter().map(|(k, v)| (*k, v.as_deref())).collect();
                    let info = log
                        .append_as_leader(keyed(&borrowed, now), 0, None, now)
                        .expect("append");
                    for (i, (k, v)) in recs.iter().enumerate() {
                        model.insert(
                            info.first_offset + i as i64,
                            (
                                Bytes::copy_from_slice(k.as_bytes()),
                                v.as_ref().map(|v| Bytes::copy_from_slice(v.as_bytes())),
                            ),
                        );
                    }
                }
                55..=64 => roll(&log, now),
                65..=79 => {
                    let leo = log.log_end_offset();
                    log.clean(now, leo, &CleanerConfig::default())
                        .expect("clean");
                    cleans += 1;
                }
                80..=89 => {
                    let crash_at = match rng.below(3) {
                        0 => CrashPoint::AfterCleaned,
                        1 => CrashPoint::AfterSwap,
                        _ => CrashPoint::AfterOldDeleted,
                    };
                    let config = CleanerConfig {
                        crash_at: Some(crash_at),
                        ..CleanerConfig::default()
                    };
                    let leo = log.log_end_offset();
                    // No error means there was nothing to clean.
                    let _ = log.clean(now, leo, &config);
                    drop(log);
                    log = open(&dir, false);
                }
                90..=94 => now += 400,
                _ => {
                    log.close().expect("close");
                    drop(log);
                    log = open(&dir, true);
                }
            }
            let leo = model.keys().next_back().map_or(0, |o| o + 1);
            check(&log, &model, leo);
        }
        assert!(cleans > 0);
        // A final clean far in the future leaves exactly the live keys below the active segment.
        roll(&log, now);
        now += 10_000;
        let leo = log.log_end_offset();
        log.clean(now, leo, &CleanerConfig::default())
            .expect("clean");
        log.clean(now + 10_000, leo, &CleanerConfig::default())
            .expect("clean");
        check(&log, &model, leo);
        let records = read_all(&log);
        let mut seen = std::collections::HashSet::new();
        for (_, k, v) in &records {
            assert!(
                seen.insert(k.clone()),
                "one record per key after a full clean"
            );
            assert!(v.is_some(), "tombstones past the horizon are gone");
        }
    }
}

#[test]
fn tombstones_live_until_the_delete_horizon() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, true);
    log.append_as_leader(
        keyed(&[("k", Some("1")), ("k", None), ("j", Some("2"))], 5),
        0,
        None,
        5,
    )
    .expect("append");
    roll(&log, 0);
    let stats = log.clean(100, 3, &CleanerConfig::default()).expect("clean");
    assert_eq!(stats.cleaned_up_to, 3);
    assert_eq!(stats.records_retained, 2);
    let data = log.read(0, 1 << 20, i64::MAX, true).expect("read");
    let (h, _) = BatchIter::new(&data.records).next().expect("batch");
    assert_ne!(
        h.attributes & DELETE_HORIZON_FLAG_MASK,
        0,
        "delete horizon set"
    );
    assert_eq!(
        h.base_timestamp, 1100,
        "horizon = now + delete.retention.ms"
    );
    assert_eq!(
        (h.base_offset, h.last_offset()),
        (0, 2),
        "batch offsets kept"
    );
    assert_eq!(h.max_timestamp, 5);
    let recs = read_all(&log);
    assert_eq!(recs.len(), 2);
    assert_eq!(recs[0].0, 1);
    assert!(recs[0].2.is_none());
    // Before the horizon nothing is due; after it the tombstone goes.
    assert!(!log.cleanable_info(1099, 3).delete_horizon_passed);
    log.clean(1099, 3, &CleanerConfig::default())
        .expect("clean");
    assert_eq!(read_all(&log).len(), 2);
    assert!(log.cleanable_info(1100, 3).delete_horizon_passed);
    let stats = log
        .clean(1100, 3, &CleanerConfig::default())
        .expect("clean");
    assert_eq!(stats.tombstones_removed, 1);
    let recs = read_all(&log);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0].0, 2);
}

#[test]
fn last_batch_of_a_producer_survives_empty_and_control_batches_stay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, true);
    let mut b = RecordBatchBuilder::new(0).producer(7, 3, 10);
    b.append(
        1,
        Some(Bytes::from_static(b"a")),
        Some(Bytes::from_static(b"1")),
        vec![],
    );
    b.append(
        1,
        Some(Bytes::from_static(b"a")),
        Some(Bytes::from_static(b"2")),
        vec![],
    );
    log.append_as_leader(b.build(), 0, None, 1).expect("append");
    let marker = build_end_txn_marker_batch(9, 0, true, 0, 1);
    log.append_as_leader(marker, 0, None, 1).expect("append");
    log.append_as_leader(keyed(&[("a", Some("3"))], 2), 0, None, 2)
        .expect("append");
    roll(&log, 2);
    log.clean(10, 4, &CleanerConfig::default()).expect("clean");
    let data = log.read(0, 1 << 20, i64::MAX, true).expect("read");
    let headers: Vec<_> = BatchIter::new(&data.records).map(|(h, _)| h).collect();
    assert_eq!(
        headers.len(),
        3,
        "empty producer batch, marker, live record"
    );
    assert_eq!(headers[0].records_count, 0);
    assert_eq!((headers[0].base_offset, headers[0].last_offset()), (0, 1));
    assert_eq!((headers[0].producer_id, headers[0].producer_epoch), (7, 3));
    assert_eq!(headers[0].base_sequence, 10);
    assert!(headers[1].is_control());
    assert_eq!(headers[2].base_offset, 3);
    for (_, r) in BatchIter::new(&data.records) {
        check_batch(&data.records[r]).expect("valid CRC");
    }
}

#[test]
fn compact_only_logs_are_not_trimmed_by_retention() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = cfg();
    config.retention_ms = 1;
    config.retention_bytes = 1;
    let log = PartitionLog::open(dir.path().join("c-0"), config.clone(), 0, true, 0).expect("open");
    for i in 0..5 {
        log.append_as_leader(keyed(&[("k", Some("v"))], i), 0, None, i)
            .expect("append");
        roll(&log, i);
    }
    let n = log.num_segments();
    assert_eq!(log.apply_retention(1_000_000).expect("retention"), 0);
    assert_eq!(log.num_segments(), n);
    config.delete = true;
    log.update_config(config);
    assert!(log.apply_retention(1_000_000).expect("retention") > 0);
}

#[test]
fn min_compaction_lag_and_stable_offset_bound_the_dirty_section() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, true);
    log.append_as_leader(keyed(&[("k", Some("1"))], 100), 0, None, 100)
        .expect("append");
    roll(&log, 100);
    log.append_as_leader(keyed(&[("k", Some("2"))], 100), 0, None, 100)
        .expect("append");
    roll(&log, 100);
    // Not stable past offset 1: only the first segment may be cleaned, so nothing goes.
    let stats = log.clean(200, 1, &CleanerConfig::default()).expect("clean");
    assert_eq!(stats.cleaned_up_to, 1);
    assert_eq!(read_all(&log).len(), 2);
    let mut config = cfg();
    config.min_compaction_lag_ms = 1000;
    log.update_config(config);
    log.set_cleaner_checkpoint(0);
    log.clean(200, 2, &CleanerConfig::default()).expect("clean");
    assert_eq!(read_all(&log).len(), 2, "records younger than the lag stay");
    log.clean(2000, 2, &CleanerConfig::default())
        .expect("clean");
    assert_eq!(read_all(&log).len(), 1);
}

#[test]
fn manager_cleans_due_logs_and_checkpoints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manager =
        LogManager::open(vec![dir.path().to_path_buf()], 1, LogConfig::default(), 0).expect("open");
    let log = manager.get_or_create("topic", 0, cfg()).expect("log");
    let plain = manager
        .get_or_create("plain", 0, LogConfig::default())
        .expect("log");
    for i in 0..20 {
        log.append_as_leader(keyed(&[("k", Some("v"))], i), 0, None, i)
            .expect("append");
        plain
            .append_as_leader(keyed(&[("k", Some("v"))], i), 0, None, i)
            .expect("append");
    }
    roll(&log, 20);
    let done = manager.clean_all(100).expect("clean_all");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].0, ("topic".to_string(), 0));
    assert_eq!(log.cleaner_checkpoint(), Some(20));
    assert_eq!(read_all(&log).len(), 1);
    assert_eq!(read_all(&plain).len(), 20);
    // Nothing dirty: not due again.
    assert!(manager.clean_all(200).expect("clean_all").is_empty());
    manager.shutdown().expect("shutdown");
    drop((log, plain, manager));
    let manager =
        LogManager::open(vec![dir.path().to_path_buf()], 1, LogConfig::default(), 0).expect("open");
    let log = manager.get("topic", 0).expect("log");
    assert_eq!(log.cleaner_checkpoint(), Some(20));
}

#[test]
fn a_crash_keeps_either_the_old_segments_or_the_swapped_one() {
    for (crash_at, compacted) in [
        (CrashPoint::AfterCleaned, false),
        (CrashPoint::AfterSwap, true),
        (CrashPoint::AfterOldDeleted, true),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = open(&dir, true);
        let mut model = Model::new();
        for i in 0..30i64 {
            let key = ["x", "y", "z"][(i % 3) as usize];
            log.append_as_leader(keyed(&[(key, Some("v"))], i), 0, None, i)
                .expect("append");
            model.insert(
                i,
                (
                    Bytes::copy_from_slice(key.as_bytes()),
                    Some(Bytes::from_static(b"v")),
                ),
            );
            if i % 7 == 6 {
                roll(&log, i);
            }
        }
        let segments_before = log.num_segments();
        let config = CleanerConfig {
            crash_at: Some(crash_at),
            ..CleanerConfig::default()
        };
        assert!(log.clean(100, 30, &config).is_err(), "{crash_at:?} reached");
        drop(log);
        let log = open(&dir, false);
        check(&log, &model, 30);
        let kept = read_all(&log).len();
        if compacted {
            assert!(
                kept < 30,
                "{crash_at:?}: the complete swap was put in place"
            );
        } else {
            assert_eq!(kept, 30, "{crash_at:?}: the old segments stay");
            assert_eq!(log.num_segments(), segments_before);
        }
        let names: Vec<String> = std::fs::read_dir(dir.path().join("compacted-0"))
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names
                .iter()
                .all(|n| !n.ends_with(".cleaned") && !n.ends_with(".swap")),
            "{crash_at:?}: no leftovers in {names:?}"
        );
    }
}

/// `log.cleaner.io.max.bytes.per.second`: a clean that reads and writes N bytes at a budget
/// of B bytes/s takes at least N/B seconds (simulated time, so the test does not sleep); a
/// second log cleaned with the same throttler adds its own bytes to the same budget.
#[test]
fn io_budget_paces_reads_and_writes() {
    use std::time::Duration;

    use super::Throttler;
    use crate::clock::ManualPacer;

    let budget = 2000.0;
    let pacer = ManualPacer::new();
    let mut throttler = Throttler::with_pacer(budget, pacer.clone());
    let mut total = 0u64;
    let mut dirs = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = open(&dir, true);
        for i in 0..40 {
            let key = format!("k{}", i % 5);
            let value = format!("v{i}");
            log.append_as_leader(keyed(&[(&key, Some(&value))], i), 0, None, i)
                .expect("append");
        }
        roll(&log, 0);
        let leo = log.log_end_offset();
        let stats = log
            .clean_throttled(100, leo, &CleanerConfig::default(), &mut throttler)
            .expect("clean");
        assert!(stats.segments_replaced > 1, "{stats:?}");
        assert_eq!(stats.records_retained, 5);
        total += stats.bytes_read + stats.bytes_written;
        dirs.push(dir);
    }
    let want = total as f64 / budget;
    let took = pacer.slept().as_secs_f64();
    assert!(total > 4000, "enough I/O to measure: {total}");
    assert!(
        took >= want - 1e-6,
        "{total} bytes took {took}s, want >= {want}s"
    );
    assert!(
        took <= want + 0.001,
        "no more than the budget asks: {took}s vs {want}s"
    );
    assert_eq!(throttler.throttled(), Duration::from_secs_f64(took));

    // Unlimited (Kafka's default, Double.MAX_VALUE): no sleep at all.
    let pacer = ManualPacer::new();
    let mut unlimited = Throttler::with_pacer(
        CleanerConfig::default().io_max_bytes_per_second,
        pacer.clone(),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, true);
    log.append_as_leader(keyed(&[("a", Some("1")), ("a", Some("2"))], 0), 0, None, 0)
        .expect("append");
    roll(&log, 0);
    let stats = log
        .clean_throttled(100, 2, &CleanerConfig::default(), &mut unlimited)
        .expect("clean");
    assert!(stats.bytes_read > 0);
    assert_eq!(pacer.slept(), Duration::ZERO);
}

/// An aborted transaction's write of a key neither shadows the committed value in the offset
/// map nor survives the clean; the ABORT marker and its `.txnindex` entry stay consistent.
#[test]
fn aborted_transactional_records_are_removed_and_never_shadow_committed_values() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir, true);
    log.append_as_leader(keyed(&[("k", Some("committed"))], 10), 0, None, 10)
        .unwrap();
    let mut txn = RecordBatchBuilder::new(0)
        .producer(7, 0, 0)
        .transactional(true);
    txn.append(
        11,
        Some(Bytes::from_static(b"k")),
        Some(Bytes::from_static(b"aborted")),
        vec![],
    );
    txn.append(
        11,
        Some(Bytes::from_static(b"j")),
        Some(Bytes::from_static(b"aborted")),
        vec![],
    );
    let first = log
        .append_as_leader(txn.build(), 0, None, 11)
        .unwrap()
        .first_offset;
    let (info, entry) = log
        .append_end_txn_marker_as_leader(
            build_end_txn_marker_batch(7, 0, false, 0, 12),
            0,
            12,
            Some(crate::storage::PendingAbort {
                producer_id: 7,
                first_offset: first,
                other_first_unstable_offset: None,
            }),
        )
        .unwrap();
    let marker = info.first_offset;
    assert_eq!(
        entry.map(|e| (e.first_offset, e.last_offset)),
        Some((first, marker))
    );
    log.append_as_leader(keyed(&[("z", Some("later"))], 13), 0, None, 13)
        .unwrap();
    roll(&log, 14);
    let leo = log.log_end_offset();
    log.clean(20, leo, &CleanerConfig::default()).unwrap();

    let records = read_all(&log);
    let values: Vec<(Option<Key>, Value)> = records
        .iter()
        .map(|(_, k, v)| (k.clone(), v.clone()))
        .collect();
    assert!(
        values.contains(&(
            Some(Bytes::from_static(b"k")),
            Some(Bytes::from_static(b"committed"))
        )),
        "the committed value survives: {values:?}"
    );
    assert!(
        !values
            .iter()
            .any(|(_, v)| v.as_deref() == Some(&b"aborted"[..])),
        "aborted records removed: {values:?}"
    );
    // The marker stays, and so does its index entry, in whichever segment now holds it.
    let mut saw_marker = false;
    log.scan_batches(0, &mut |h| {
        saw_marker |= h.is_control() && h.base_offset == marker
    })
    .unwrap();
    assert!(saw_marker, "ABORT marker kept");
    let entries = log.all_aborted_txns().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].last_offset, marker);
    assert_eq!(log.collect_aborted_txns(0, leo).unwrap(), entries);
    // And after a reopen (the cleaned segment's index was swapped in with it).
    drop(log);
    let log = open(&dir, false);
    assert_eq!(log.all_aborted_txns().unwrap(), entries);
}
