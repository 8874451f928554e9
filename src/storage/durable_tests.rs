//! Tests of the group commit (`durable.rs`): rounds, their helpers, truncations, and the
//! cache flush shared by the logs of a round.

use std::sync::mpsc;

use bytes::BytesMut;

use super::*;
use crate::protocol::records::testutil::{build_test_batch, TestBatch};
use crate::storage::LogConfig;

fn batch(records: usize) -> BytesMut {
    BytesMut::from(
        &build_test_batch(&TestBatch {
            records,
            base_timestamp: 1000,
            ..TestBatch::default()
        })[..],
    )
}

fn open(dir: &tempfile::TempDir, name: &str) -> Arc<PartitionLog> {
    open_with(dir, name, 400)
}

fn open_with(dir: &tempfile::TempDir, name: &str, segment_bytes: u64) -> Arc<PartitionLog> {
    let config = LogConfig {
        segment_bytes,
        ..LogConfig::default()
    };
    Arc::new(PartitionLog::open(dir.path().join(name), config, 0, true, 0).expect("open"))
}

fn append(log: &PartitionLog, records: usize) -> i64 {
    log.append_as_leader(batch(records), 0, None, 0)
        .expect("append")
        .last_offset
        + 1
}

fn plan(log: &PartitionLog) -> SyncPlan {
    match log.plan_durable().expect("plan") {
        Prepared::Plan(plan) => plan,
        Prepared::Durable(offset) => panic!("nothing to sync below {offset}"),
    }
}

fn waiter(
    log: &Arc<PartitionLog>,
    offset: i64,
    tx: &mpsc::Sender<(i64, std::result::Result<(), SyncFailed>)>,
) -> Waiter {
    let tx = tx.clone();
    Waiter {
        log: log.clone(),
        offset,
        done: Box::new(move |r| {
            let _ = tx.send((offset, r));
        }),
    }
}

fn service() -> GroupCommit {
    GroupCommit {
        queue: Mutex::new(Queue::default()),
        wake: Condvar::new(),
        stats: Mutex::new(GroupCommitStats::default()),
        pool: SyncPool::default(),
    }
}

#[test]
fn one_round_syncs_each_log_once_and_answers_every_waiter() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (open(&dir, "t-0"), open(&dir, "t-1"));
    assert_eq!((a.durable_offset(), b.durable_offset()), (0, 0));
    let (tx, rx) = mpsc::channel();
    let mut batch_of_waiters = Vec::new();
    for _ in 0..6 {
        let end = a
            .append_as_leader(batch(2), 0, None, 0)
            .expect("append")
            .last_offset
            + 1;
        batch_of_waiters.push(waiter(&a, end, &tx));
    }
    let end_b = b
        .append_as_leader(batch(3), 0, None, 0)
        .expect("append")
        .last_offset
        + 1;
    batch_of_waiters.push(waiter(&b, end_b, &tx));
    // Several segments were rolled since the log opened: all of them are covered.
    assert!(a.num_segments() > 1);
    let g = service();
    assert!(g.round(batch_of_waiters).is_empty());
    let answered: Vec<_> = rx.try_iter().collect();
    assert_eq!(answered.len(), 7);
    assert!(answered.iter().all(|(_, r)| r.is_ok()));
    assert_eq!((a.durable_offset(), b.durable_offset()), (12, 3));
    assert_eq!(
        g.stats(),
        GroupCommitStats {
            rounds: 1,
            log_syncs: 2,
            shared_flushes: 0,
            requests: 7
        }
    );
}

#[test]
fn rounds_over_many_logs_use_the_helpers_and_run_inline_once_they_stop() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs: Vec<_> = (0..6).map(|i| open(&dir, &format!("t-{i}"))).collect();
    let g = service();
    let (tx, rx) = mpsc::channel();
    for round in 1..=3 {
        let waiters = logs
            .iter()
            .map(|l| {
                let end = l
                    .append_as_leader(batch(1), 0, None, 0)
                    .expect("append")
                    .last_offset
                    + 1;
                waiter(l, end, &tx)
            })
            .collect();
        if round == 3 {
            g.pool.stop();
        }
        assert!(g.round(waiters).is_empty());
        let answered: Vec<_> = rx.try_iter().collect();
        assert_eq!(answered.len(), 6, "round {round}");
        assert!(answered.iter().all(|(_, r)| r.is_ok()));
        assert!(logs.iter().all(|l| l.durable_offset() == round));
        // Helpers were started by the first round and kept; stopped by the last.
        assert_eq!(g.pool.jobs.lock().unwrap().is_some(), round < 3);
    }
    assert!(g.pool.jobs.lock().unwrap().is_none());
    assert_eq!(g.stats().log_syncs, 18);
}

#[test]
fn truncation_takes_the_durable_mark_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, "t-0");
    for _ in 0..4 {
        log.append_as_leader(batch(2), 0, None, 0).expect("append");
    }
    assert_eq!(log.sync_durable().expect("sync"), 8);
    log.truncate_to(4).expect("truncate");
    assert_eq!(log.durable_offset(), 4);
    // New records at the old offsets are not durable until the next round.
    log.append_as_leader(batch(4), 1, None, 0).expect("append");
    assert_eq!(log.durable_offset(), 4);
    let (tx, rx) = mpsc::channel();
    let g = service();
    // A waiter for an offset past what the log now holds is answered once what remains
    // is durable.
    assert!(g
        .round(vec![waiter(&log, 8, &tx), waiter(&log, 20, &tx)])
        .is_empty());
    assert_eq!(rx.try_iter().count(), 2);
    assert_eq!(log.durable_offset(), 8);
    log.truncate_fully_and_start_at(100)
        .expect("truncate fully");
    assert_eq!(log.durable_offset(), 100);
}

#[test]
fn the_thread_answers_requests_and_stop_fails_the_rest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = open(&dir, "t-0");
    let g = GroupCommit::start();
    let (tx, rx) = mpsc::channel();
    let mut expected = 0;
    for _ in 0..20 {
        let end = log
            .append_as_leader(batch(1), 0, None, 0)
            .expect("append")
            .last_offset
            + 1;
        let tx = tx.clone();
        g.sync(log.clone(), end, Box::new(move |r| drop(tx.send(r))));
        expected += 1;
    }
    for _ in 0..expected {
        let r = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("answered");
        assert!(r.is_ok());
    }
    assert_eq!(log.durable_offset(), 20);
    let stats = g.stats();
    assert_eq!(stats.requests, 20);
    assert!(stats.rounds >= 1 && stats.rounds <= 20);
    // Already durable: answered at once, without a round.
    let tx2 = tx.clone();
    g.sync(log.clone(), 20, Box::new(move |r| drop(tx2.send(r))));
    assert!(rx.try_recv().expect("at once").is_ok());
    g.stop();
    log.append_as_leader(batch(1), 0, None, 0).expect("append");
    g.sync(log.clone(), 21, Box::new(move |r| drop(tx.send(r))));
    assert!(rx.try_recv().expect("refused at once").is_err());
}

#[test]
fn only_bytes_in_blocks_with_a_synced_allocation_need_just_their_pages() {
    let dir = tempfile::tempdir().expect("tempdir");
    // 1 MiB segments: the zeros reach 256 KiB ahead, refilled below 128 KiB.
    let log = open_with(&dir, "t-0", 1 << 20);
    append(&log, 3);
    let first = plan(&log);
    // A new log: its file and directory entries are not durable yet.
    assert!(!first.pages_only && !first.allocation_durable);
    assert!(first.active_written_len >= 256 << 10);
    log.sync_durable().expect("sync");
    assert_eq!(
        log.inner.read().durable.allocation_synced,
        first.active_written_len
    );
    // Records within the synced zeros need their pages alone, and the file has nothing else.
    append(&log, 3);
    let p = plan(&log);
    assert!(p.pages_only && p.allocation_durable);
    // Records that use up half the zeros: the plan writes more zeros, whose allocation is not
    // durable, while the records still lie within the synced part.
    let end = log
        .append_as_leader(
            BytesMut::from(
                &build_test_batch(&TestBatch {
                    records: 1,
                    value_len: 140 << 10,
                    ..TestBatch::default()
                })[..],
            ),
            0,
            None,
            0,
        )
        .expect("append")
        .last_offset
        + 1;
    let p = plan(&log);
    assert!(p.pages_only && !p.allocation_durable);
    assert!(p.active_written_len > first.active_written_len);
    // Committed without the file's own fdatasync, the allocation stays where it was.
    assert_eq!(log.commit_durable(&p, false), end);
    assert_eq!(
        log.inner.read().durable.allocation_synced,
        first.active_written_len
    );
    // A truncation may cut the file: the next plan syncs it whole.
    log.truncate_to(3).expect("truncate");
    append(&log, 1);
    assert!(!plan(&log).pages_only);
    assert_eq!(log.inner.read().durable.allocation_synced, 0);
}

#[test]
fn a_round_over_logs_on_one_disk_shares_one_cache_flush() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs: Vec<_> = (0..3)
        .map(|i| open_with(&dir, &format!("t-{i}"), 1 << 20))
        .collect();
    let g = service();
    let (tx, rx) = mpsc::channel();
    // The first round syncs every file whole; later ones need only pages.
    for round in 1..=3 {
        let waiters = logs.iter().map(|l| waiter(l, append(l, 2), &tx)).collect();
        assert!(g.round(waiters).is_empty());
        let answered: Vec<_> = rx.try_iter().collect();
        assert_eq!(answered.len(), 3, "round {round}");
        assert!(answered.iter().all(|(_, r)| r.is_ok()));
        assert!(logs.iter().all(|l| l.durable_offset() == 2 * round));
    }
    let (file, _) = logs[0].inner.read().active().log_file();
    let shared = match shared_flush::shared_flush_device(&file) {
        // Rounds 2 and 3: two logs written, the third fdatasynced.
        Some(_) => 4,
        None => 0,
    };
    assert_eq!(g.stats().shared_flushes, shared);
    // A log whose records need more than pages syncs whole beside the others.
    logs[1].truncate_to(1).expect("truncate");
    let waiters = logs.iter().map(|l| waiter(l, append(l, 1), &tx)).collect();
    assert!(g.round(waiters).is_empty());
    assert_eq!(rx.try_iter().filter(|(_, r)| r.is_ok()).count(), 3);
    assert_eq!(
        logs.iter().map(|l| l.durable_offset()).collect::<Vec<_>>(),
        vec![7, 2, 7]
    );
    assert_eq!(g.stats().shared_flushes, shared + shared / 4);
}
