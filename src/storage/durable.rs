//! Durable acknowledgements by group commit (`strata.log.durable.acks`, beyond Kafka: its only
//! equivalent is `flush.messages=1`, one fsync inside every append). A writer that must not
//! acknowledge before its records are on disk asks [`GroupCommit::sync`] for its log and end
//! offset; one thread runs rounds of fdatasyncs (with kept helper threads when a round covers
//! several logs), and a round covers every request that arrived while the previous one ran,
//! across partitions and connections. The fsyncs happen outside the log's lock, so appends
//! continue during them.
//!
//! Each round first keeps zeros written ahead of the active segment's end, so that appends
//! overwrite allocated blocks: the fdatasync of a growing file also writes the block
//! allocation, and holds the appended page while it does, which stalls the next append and
//! costs a slow disk several IOs per round. Recovery cuts the zeros as a torn tail.
//!
//! Only the `.log` files are synced: the indexes, the epoch cache and the producer state are
//! rebuilt from the batches by recovery, which re-reads everything past the recovery point.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::error::{IoContext, Result, StorageError};
use super::log::{Inner, PartitionLog};

/// How far a log is durable, kept under the log's lock.
#[derive(Debug, Clone, Copy)]
pub struct DurableMark {
    /// Every record below this offset is fsynced.
    pub offset: i64,
    /// Base offset of the active segment the last round synced: a later one is a new file
    /// whose directory entry must be synced too.
    pub active_base_offset: i64,
    /// The partition directory's own entry (in the log dir) and its files' entries were
    /// fsynced once.
    pub directory_synced: bool,
}

impl DurableMark {
    /// A log as opened: what recovery found is taken as durable (it is what a crash now would
    /// leave), its directory not yet.
    pub fn new(log_end_offset: i64) -> DurableMark {
        DurableMark {
            offset: log_end_offset,
            active_base_offset: i64::MIN,
            directory_synced: false,
        }
    }
}

/// What one round must fsync for a log, taken under its lock.
struct SyncPlan {
    files: Vec<(Arc<File>, PathBuf)>,
    directories: Vec<PathBuf>,
    end_offset: i64,
    active_base_offset: i64,
    truncations: u64,
}

/// Zeros kept written ahead of the active segment's batches (a quarter of `segment.bytes` for
/// small segments), refilled once less than half is left: a round's fdatasync then writes the
/// appended pages alone, and appends do not wait on the pages it writes back (see
/// [`LogSegment::write_zeros_ahead`]).
///
/// [`LogSegment::write_zeros_ahead`]: super::segment::LogSegment::write_zeros_ahead
const ZEROS_AHEAD_BYTES: u64 = 2 << 20;

impl PartitionLog {
    /// Refills the zeros ahead of the active segment's end, never past `segment.bytes` (where
    /// it rolls). Under the log's lock: an append must never land in a range being zeroed.
    fn write_zeros_ahead(&self) -> Result<()> {
        let ahead = |inner: &Inner| ZEROS_AHEAD_BYTES.min(inner.config.segment_bytes / 4);
        let due = |inner: &Inner| {
            let active = inner.active();
            active.written_ahead() < ahead(inner) / 2
                && active.size() + active.written_ahead() < inner.config.segment_bytes
        };
        if !due(&self.inner.read()) {
            return Ok(());
        }
        let mut inner = self.inner.write();
        if !due(&inner) {
            return Ok(());
        }
        let (limit, ahead) = (inner.config.segment_bytes, ahead(&inner));
        let active = inner.active_mut();
        let up_to = (active.size() + ahead).min(limit);
        active.write_zeros_ahead(up_to)?;
        Ok(())
    }

    /// The offset below which every record of this log is fsynced.
    pub fn durable_offset(&self) -> i64 {
        self.inner.read().durable.offset
    }

    /// fsyncs every record appended so far (the segments from the one holding the durable
    /// offset to the active one, and the directory entries of new files) without holding the
    /// lock, then moves the durable offset to the end offset seen before the fsyncs. Returns
    /// that offset. A truncation meanwhile leaves the mark where it was: the data synced may
    /// no longer be the log's.
    pub fn sync_durable(&self) -> Result<i64> {
        self.log_dir.guard(|| {
            self.write_zeros_ahead()?;
            let plan = {
                let inner = self.inner.read();
                let mark = inner.durable;
                let end_offset = inner.log_end_offset;
                let active_base_offset = inner.active().base_offset();
                if mark.offset >= end_offset
                    && mark.directory_synced
                    && mark.active_base_offset == active_base_offset
                {
                    return Ok(mark.offset);
                }
                let from = inner
                    .segments
                    .range(..=mark.offset.max(inner.log_start_offset))
                    .next_back()
                    .map(|(b, _)| *b)
                    .unwrap_or(i64::MIN);
                let files = inner
                    .segments
                    .range(from..)
                    .map(|(_, s)| {
                        let (file, path) = s.log_file();
                        (file, path.to_path_buf())
                    })
                    .collect();
                let mut directories = Vec::new();
                if !mark.directory_synced || mark.active_base_offset != active_base_offset {
                    directories.push(inner.dir.clone());
                }
                if !mark.directory_synced {
                    if let Some(parent) = inner.dir.parent() {
                        directories.push(parent.to_path_buf());
                    }
                }
                SyncPlan {
                    files,
                    directories,
                    end_offset,
                    active_base_offset,
                    truncations: inner.truncations,
                }
            };
            for (file, path) in &plan.files {
                file.sync_data().ctx("fsync segment", path)?;
            }
            for dir in &plan.directories {
                File::open(dir)
                    .and_then(|d| d.sync_all())
                    .ctx("fsync directory", dir)?;
            }
            let mut inner = self.inner.write();
            if inner.truncations != plan.truncations {
                return Ok(inner.durable.offset.min(inner.log_end_offset));
            }
            let mark = &mut inner.durable;
            mark.offset = mark.offset.max(plan.end_offset);
            mark.active_base_offset = plan.active_base_offset;
            mark.directory_synced = true;
            Ok(mark.offset)
        })
    }
}

/// Why a durable acknowledgement could not be given: the fsync failed (the log dir is offline
/// from then on) or the service stopped.
#[derive(Debug, Clone)]
pub struct SyncFailed(pub String);

/// Called once with the outcome of a [`GroupCommit::sync`] request.
pub type SyncDone = Box<dyn FnOnce(std::result::Result<(), SyncFailed>) + Send>;

struct Waiter {
    log: Arc<PartitionLog>,
    offset: i64,
    done: SyncDone,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<Waiter>,
    stopped: bool,
}

/// Counters of the group commit, read by the metrics and the benchmarks.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct GroupCommitStats {
    /// Rounds run.
    pub rounds: u64,
    /// fsync plans executed (one per log and round).
    pub log_syncs: u64,
    /// Requests answered.
    pub requests: u64,
}

/// The group commit service: one background thread, started by [`GroupCommit::start`].
pub struct GroupCommit {
    queue: Mutex<Queue>,
    wake: Condvar,
    stats: Mutex<GroupCommitStats>,
    pool: SyncPool,
}

impl GroupCommit {
    pub fn start() -> Arc<GroupCommit> {
        let service = Arc::new(GroupCommit {
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            stats: Mutex::new(GroupCommitStats::default()),
            pool: SyncPool::default(),
        });
        let runner = service.clone();
        std::thread::Builder::new()
            .name("strata-group-commit".into())
            .spawn(move || runner.run())
            .expect("spawn the group commit thread");
        service
    }

    /// Calls `done` once every record of `log` below `offset` is fsynced (at once when it
    /// already is), or with the failure. A log truncated below `offset` meanwhile is answered
    /// when what remains of it is durable.
    pub fn sync(&self, log: Arc<PartitionLog>, offset: i64, done: SyncDone) {
        if log.durable_offset() >= offset {
            done(Ok(()));
            return;
        }
        let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if queue.stopped {
            drop(queue);
            done(Err(SyncFailed("the broker is shutting down".into())));
            return;
        }
        queue.waiting.push(Waiter { log, offset, done });
        self.wake.notify_one();
    }

    pub fn stats(&self) -> GroupCommitStats {
        *self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answers every waiting request with a failure and ends the thread.
    pub fn stop(&self) {
        let waiting = {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.stopped = true;
            self.wake.notify_one();
            std::mem::take(&mut queue.waiting)
        };
        self.pool.stop();
        for w in waiting {
            (w.done)(Err(SyncFailed("the broker is shutting down".into())));
        }
    }

    fn run(&self) {
        loop {
            let batch = {
                let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                while queue.waiting.is_empty() && !queue.stopped {
                    queue = self.wake.wait(queue).unwrap_or_else(|p| p.into_inner());
                }
                if queue.stopped {
                    return;
                }
                std::mem::take(&mut queue.waiting)
            };
            let retry = self.round(batch);
            if !retry.is_empty() {
                let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                queue.waiting.extend(retry);
            }
        }
    }

    /// One round: each distinct log synced once, its waiters answered. Returns the waiters a
    /// concurrent truncation kept from being answered, for the next round.
    fn round(&self, batch: Vec<Waiter>) -> Vec<Waiter> {
        let mut by_log: HashMap<*const PartitionLog, Vec<Waiter>> = HashMap::new();
        for w in batch {
            by_log.entry(Arc::as_ptr(&w.log)).or_default().push(w);
        }
        let groups: Vec<Vec<Waiter>> = by_log.into_values().collect();
        let logs: Vec<Arc<PartitionLog>> = groups.iter().map(|g| g[0].log.clone()).collect();
        let outcomes = self.pool.sync_all(&logs);
        let mut retry = Vec::new();
        let mut answers = Vec::new();
        for ((waiters, log), outcome) in groups.into_iter().zip(&logs).zip(outcomes) {
            for w in waiters {
                match &outcome {
                    Err(e) => answers.push((w, Err(SyncFailed(describe(e))))),
                    // A record truncated away needs no more than what remains.
                    Ok(durable) if *durable >= w.offset.min(log.log_end_offset()) => {
                        answers.push((w, Ok(())))
                    }
                    Ok(_) => retry.push(w),
                }
            }
        }
        // Counted before anyone is answered, so an answered caller sees its round counted.
        {
            let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            stats.rounds += 1;
            stats.log_syncs += logs.len() as u64;
            stats.requests += answers.len() as u64;
        }
        for (w, outcome) in answers {
            (w.done)(outcome);
        }
        retry
    }
}

/// At most this many fsyncs of one round run at once: concurrent fdatasyncs of different
/// files can share the file system's journal commit, where one after another each waits for
/// its own.
const SYNC_THREADS: usize = 4;

/// The logs of one round handed to a helper: their outcomes go back with the chunk's index.
struct SyncJob {
    index: usize,
    logs: Vec<Arc<PartitionLog>>,
    outcomes: std::sync::mpsc::Sender<(usize, Vec<Result<i64>>)>,
}

/// The helper threads of rounds that cover several logs (the round's own thread takes one
/// share). Started at the first such round, so a broker whose rounds each cover one log never
/// has them, and then kept: starting them afresh for every round cost about 4 CPU-s per GB and
/// half the throughput at thousands of rounds a second (BENCHMARKS.md, "The group commit's
/// helper threads kept").
#[derive(Default)]
struct SyncPool {
    jobs: Mutex<Option<std::sync::mpsc::Sender<SyncJob>>>,
    stopped: AtomicBool,
}

impl SyncPool {
    /// [`PartitionLog::sync_durable`] of every log, spread over up to [`SYNC_THREADS`]
    /// threads when there are several; outcomes in the order of `logs`.
    fn sync_all(&self, logs: &[Arc<PartitionLog>]) -> Vec<Result<i64>> {
        if logs.len() <= 1 {
            return sync_logs(logs);
        }
        let threads = logs.len().min(SYNC_THREADS);
        let chunk = logs.len().div_ceil(threads);
        let chunks: Vec<&[Arc<PartitionLog>]> = logs.chunks(chunk).collect();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut outcomes: Vec<Option<Vec<Result<i64>>>> = (0..chunks.len()).map(|_| None).collect();
        let mut handed = 0;
        for (index, part) in chunks.iter().enumerate().skip(1) {
            let job = SyncJob {
                index,
                logs: part.to_vec(),
                outcomes: tx.clone(),
            };
            match self.submit(job) {
                Ok(()) => handed += 1,
                // No helper to take it (stopped, or every one died): done here.
                Err(job) => outcomes[index] = Some(sync_logs(&job.logs)),
            }
        }
        drop(tx);
        outcomes[0] = Some(sync_logs(chunks[0]));
        for _ in 0..handed {
            match rx.recv() {
                Ok((index, r)) => outcomes[index] = Some(r),
                Err(_) => break,
            }
        }
        // A chunk whose helper panicked has no outcome: its logs are not known to be synced.
        outcomes
            .into_iter()
            .zip(&chunks)
            .flat_map(|(o, part)| {
                o.unwrap_or_else(|| {
                    (0..part.len())
                        .map(|_| Err(StorageError::InvalidArgument("fsync thread panicked")))
                        .collect()
                })
            })
            .collect()
    }

    fn submit(&self, job: SyncJob) -> std::result::Result<(), SyncJob> {
        let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        if jobs.is_none() && !self.stopped.load(Ordering::Acquire) {
            *jobs = Self::start_helpers();
        }
        match jobs.as_ref() {
            Some(sender) => sender.send(job).map_err(|e| e.0),
            None => Err(job),
        }
    }

    fn start_helpers() -> Option<std::sync::mpsc::Sender<SyncJob>> {
        let (tx, rx) = std::sync::mpsc::channel::<SyncJob>();
        let rx = Arc::new(Mutex::new(rx));
        let mut started = 0;
        for i in 1..SYNC_THREADS {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("strata-fsync-{i}"))
                .spawn(move || loop {
                    let job = {
                        let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
                        match rx.recv() {
                            Ok(job) => job,
                            Err(_) => return,
                        }
                    };
                    let _ = job.outcomes.send((job.index, sync_logs(&job.logs)));
                });
            if spawned.is_ok() {
                started += 1;
            }
        }
        (started > 0).then_some(tx)
    }

    /// Ends the helpers once they finish the jobs they hold.
    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        *self.jobs.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

fn sync_logs(logs: &[Arc<PartitionLog>]) -> Vec<Result<i64>> {
    logs.iter().map(|l| l.sync_durable()).collect()
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

fn describe(e: &StorageError) -> String {
    format!("fsync failed: {e}")
}

#[cfg(test)]
mod tests {
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
        let config = LogConfig {
            segment_bytes: 400,
            ..LogConfig::default()
        };
        Arc::new(PartitionLog::open(dir.path().join(name), config, 0, true, 0).expect("open"))
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
}
