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
//! A round over several logs on one disk ends with one cache flush for all of those whose new
//! records need no metadata: their pages are written first, then one of them is fdatasynced
//! ([`shared_flush`](super::shared_flush)).
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
use super::shared_flush;

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
    /// Bytes from the start of that active segment whose blocks an fdatasync made durable
    /// (batches, or the zeros written ahead): records below this need only their pages written
    /// and a cache flush to be durable. Reset by a truncation, which may cut the file.
    pub allocation_synced: u64,
}

impl DurableMark {
    /// A log as opened: what recovery found is taken as durable (it is what a crash now would
    /// leave), its directory not yet.
    pub fn new(log_end_offset: i64) -> DurableMark {
        DurableMark {
            offset: log_end_offset,
            active_base_offset: i64::MIN,
            directory_synced: false,
            allocation_synced: 0,
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
    /// The active segment's bytes of batches, and of batches and zeros, when planned.
    active_size: u64,
    active_written_len: u64,
    /// Only the active segment's pages need writing: the file and its directory entry were
    /// synced before, and the new bytes lie in blocks whose allocation is durable.
    pages_only: bool,
    /// Every block written in the active segment, zeros included, has a durable allocation:
    /// the file has no metadata for an fdatasync to commit, so ext4's fdatasync of it ends
    /// with its own flush of the disk's cache (see [`shared_flush`]).
    ///
    /// [`shared_flush`]: super::shared_flush
    allocation_durable: bool,
}

/// A log's state at the start of a round.
enum Prepared {
    /// Nothing to sync: durable below this offset.
    Durable(i64),
    Plan(SyncPlan),
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
        match self.plan_durable()? {
            Prepared::Durable(offset) => Ok(offset),
            Prepared::Plan(plan) => {
                self.sync_plan(&plan)?;
                Ok(self.commit_durable(&plan, true))
            }
        }
    }

    /// Keeps the zeros ahead, then takes what a round must sync, under the lock.
    fn plan_durable(&self) -> Result<Prepared> {
        self.log_dir.guard(|| {
            self.write_zeros_ahead()?;
            let inner = self.inner.read();
            let mark = inner.durable;
            let end_offset = inner.log_end_offset;
            let active = inner.active();
            let active_base_offset = active.base_offset();
            if mark.offset >= end_offset
                && mark.directory_synced
                && mark.active_base_offset == active_base_offset
            {
                return Ok(Prepared::Durable(mark.offset));
            }
            let from = inner
                .segments
                .range(..=mark.offset.max(inner.log_start_offset))
                .next_back()
                .map(|(b, _)| *b)
                .unwrap_or(i64::MIN);
            let files: Vec<_> = inner
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
            let active_size = active.size();
            let active_written_len = active_size + active.written_ahead();
            let same_file = files.len() == 1
                && directories.is_empty()
                && mark.active_base_offset == active_base_offset;
            let pages_only = same_file && active_size <= mark.allocation_synced;
            let allocation_durable = same_file && active_written_len <= mark.allocation_synced;
            Ok(Prepared::Plan(SyncPlan {
                files,
                directories,
                end_offset,
                active_base_offset,
                truncations: inner.truncations,
                active_size,
                active_written_len,
                pages_only,
                allocation_durable,
            }))
        })
    }

    /// fdatasyncs the plan's files and fsyncs its directories, without the lock.
    fn sync_plan(&self, plan: &SyncPlan) -> Result<()> {
        self.log_dir.guard(|| {
            for (file, path) in &plan.files {
                file.sync_data().ctx("fsync segment", path)?;
            }
            for dir in &plan.directories {
                File::open(dir)
                    .and_then(|d| d.sync_all())
                    .ctx("fsync directory", dir)?;
            }
            Ok(())
        })
    }

    /// Writes a pages-only plan's pages with no cache flush (see [`shared_flush`]).
    ///
    /// [`shared_flush`]: super::shared_flush
    fn write_plan_pages(&self, plan: &SyncPlan) -> Result<()> {
        self.log_dir.guard(|| {
            let (file, path) = &plan.files[0];
            shared_flush::write_pages(file, plan.active_size).ctx("write segment pages", path)
        })
    }

    /// Moves the durable mark once the plan's records are durable; `file_synced` when the
    /// active segment's file was fdatasynced, which made its allocation durable up to what was
    /// written when planned. Returns the durable offset.
    fn commit_durable(&self, plan: &SyncPlan, file_synced: bool) -> i64 {
        let mut inner = self.inner.write();
        if inner.truncations != plan.truncations {
            return inner.durable.offset.min(inner.log_end_offset);
        }
        let mark = &mut inner.durable;
        mark.offset = mark.offset.max(plan.end_offset);
        if mark.active_base_offset != plan.active_base_offset {
            mark.allocation_synced = 0;
        }
        if file_synced {
            mark.allocation_synced = mark.allocation_synced.max(plan.active_written_len);
        }
        mark.active_base_offset = plan.active_base_offset;
        mark.directory_synced = true;
        mark.offset
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
    /// Logs made durable by their pages' write and another log's fdatasync (one cache flush
    /// for a round's logs on one disk, see [`shared_flush`]).
    ///
    /// [`shared_flush`]: super::shared_flush
    pub shared_flushes: u64,
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
        let (outcomes, shared) = self.sync_logs(&logs);
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
            stats.shared_flushes += shared;
            stats.requests += answers.len() as u64;
        }
        for (w, outcome) in answers {
            (w.done)(outcome);
        }
        retry
    }
}

impl GroupCommit {
    /// Syncs the logs of a round; outcomes in their order, and how many shared a cache flush.
    ///
    /// A log whose new records need only their pages written (see [`SyncPlan::pages_only`]),
    /// on a disk where other such logs of the round are, has its pages written with
    /// `sync_file_range` while the other logs are synced; one of them, kept for last, is then
    /// fdatasynced, and its cache flush makes them all durable. Should that fdatasync fail,
    /// each of them gets its own.
    fn sync_logs(&self, logs: &[Arc<PartitionLog>]) -> (Vec<Result<i64>>, u64) {
        if logs.len() <= 1 {
            return (logs.iter().map(|l| l.sync_durable()).collect(), 0);
        }
        let mut outcomes: Vec<Option<Result<i64>>> = (0..logs.len()).map(|_| None).collect();
        let mut plans: Vec<Option<Arc<SyncPlan>>> = (0..logs.len()).map(|_| None).collect();
        for (i, log) in logs.iter().enumerate() {
            match log.plan_durable() {
                Ok(Prepared::Durable(offset)) => outcomes[i] = Some(Ok(offset)),
                Ok(Prepared::Plan(plan)) => plans[i] = Some(Arc::new(plan)),
                Err(e) => outcomes[i] = Some(Err(e)),
            }
        }
        let by_device = flush_groups(&plans);
        let flushers: Vec<usize> = by_device.values().map(|l| l[0]).collect();
        let pages_of: HashMap<usize, u64> = by_device
            .iter()
            .flat_map(|(device, l)| l[1..].iter().map(move |i| (*i, *device)))
            .collect();
        let mut jobs: Vec<Job> = Vec::new();
        let mut job_logs = Vec::new();
        for (i, plan) in plans.iter().enumerate() {
            let Some(plan) = plan.clone().filter(|_| !flushers.contains(&i)) else {
                continue;
            };
            let log = logs[i].clone();
            let pages = pages_of.contains_key(&i);
            jobs.push(Box::new(move || {
                match pages {
                    true => log.write_plan_pages(&plan),
                    false => log.sync_plan(&plan),
                }
                .map(|()| 0)
            }));
            job_logs.push(i);
        }
        let mut done: HashMap<usize, Result<i64>> =
            job_logs.into_iter().zip(self.pool.run_all(jobs)).collect();
        // Each flusher's fdatasync starts after every write of its device has completed.
        let mut flushed: HashMap<u64, bool> = HashMap::new();
        for (device, l) in &by_device {
            if let Some(plan) = &plans[l[0]] {
                let r = logs[l[0]].sync_plan(plan).map(|()| 0);
                flushed.insert(*device, r.is_ok());
                done.insert(l[0], r);
            }
        }
        let mut shared = 0;
        for (i, plan) in plans.iter().enumerate() {
            let Some(plan) = plan else { continue };
            let log = &logs[i];
            let outcome = match (done.remove(&i), pages_of.get(&i)) {
                (Some(Ok(_)), Some(device)) if flushed.get(device) == Some(&true) => {
                    shared += 1;
                    Ok(log.commit_durable(plan, false))
                }
                // Its flush failed: its own fdatasync instead.
                (Some(Ok(_)), Some(_)) => {
                    log.sync_plan(plan).map(|()| log.commit_durable(plan, true))
                }
                (Some(Ok(_)), None) => Ok(log.commit_durable(plan, true)),
                (Some(Err(e)), _) => Err(e),
                (None, _) => Err(StorageError::InvalidArgument("fsync thread panicked")),
            };
            outcomes[i] = Some(outcome);
        }
        let outcomes = outcomes
            .into_iter()
            .map(|o| o.unwrap_or(Err(StorageError::InvalidArgument("log not synced"))))
            .collect();
        (outcomes, shared)
    }
}

/// The logs of a round that can share a cache flush, by device: at least two whose records
/// need only their pages written, on a file system whose fdatasync flushes the disk's cache
/// for all (see [`shared_flush`]), the first of them one with no allocation to commit, whose
/// fdatasync is sure to flush the cache itself.
fn flush_groups(plans: &[Option<Arc<SyncPlan>>]) -> HashMap<u64, Vec<usize>> {
    let mut by_device: HashMap<u64, Vec<usize>> = HashMap::new();
    for (i, plan) in plans.iter().enumerate() {
        if let Some(plan) = plan.as_ref().filter(|p| p.pages_only) {
            if let Some(device) = shared_flush::shared_flush_device(&plan.files[0].0) {
                by_device.entry(device).or_default().push(i);
            }
        }
    }
    by_device.retain(|_, l| {
        let flusher = l
            .iter()
            .position(|i| plans[*i].as_ref().is_some_and(|p| p.allocation_durable));
        match flusher {
            Some(at) if l.len() > 1 => {
                l.swap(0, at);
                true
            }
            _ => false,
        }
    });
    by_device
}

/// One log's fsync work in a round, run by a helper thread or the round's own.
type Job = Box<dyn FnOnce() -> Result<i64> + Send>;

/// At most this many fsyncs of one round run at once: concurrent fdatasyncs of different
/// files can share the file system's journal commit, where one after another each waits for
/// its own.
const SYNC_THREADS: usize = 4;

/// Jobs of one round handed to a helper: their outcomes go back with the chunk's index.
struct SyncJob {
    index: usize,
    jobs: Vec<Job>,
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
    /// Runs `jobs`, spread over up to [`SYNC_THREADS`] threads when there are several;
    /// outcomes in the order of `jobs`.
    fn run_all(&self, jobs: Vec<Job>) -> Vec<Result<i64>> {
        let total = jobs.len();
        if total <= 1 {
            return run_jobs(jobs);
        }
        let threads = total.min(SYNC_THREADS);
        let chunk = total.div_ceil(threads);
        let mut chunks: Vec<Vec<Job>> = Vec::new();
        let mut jobs = jobs.into_iter();
        loop {
            let part: Vec<Job> = jobs.by_ref().take(chunk).collect();
            if part.is_empty() {
                break;
            }
            chunks.push(part);
        }
        let sizes: Vec<usize> = chunks.iter().map(Vec::len).collect();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut outcomes: Vec<Option<Vec<Result<i64>>>> = (0..chunks.len()).map(|_| None).collect();
        let mut handed = 0;
        let mut chunks = chunks.into_iter();
        let first = chunks.next().unwrap_or_default();
        for (index, part) in chunks.enumerate() {
            let job = SyncJob {
                index: index + 1,
                jobs: part,
                outcomes: tx.clone(),
            };
            match self.submit(job) {
                Ok(()) => handed += 1,
                // No helper to take it (stopped, or every one died): done here.
                Err(job) => outcomes[index + 1] = Some(run_jobs(job.jobs)),
            }
        }
        drop(tx);
        outcomes[0] = Some(run_jobs(first));
        for _ in 0..handed {
            match rx.recv() {
                Ok((index, r)) => outcomes[index] = Some(r),
                Err(_) => break,
            }
        }
        // A chunk whose helper panicked has no outcome: its logs are not known to be synced.
        outcomes
            .into_iter()
            .zip(sizes)
            .flat_map(|(o, size)| {
                o.unwrap_or_else(|| {
                    (0..size)
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
                    let _ = job.outcomes.send((job.index, run_jobs(job.jobs)));
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

fn run_jobs(jobs: Vec<Job>) -> Vec<Result<i64>> {
    jobs.into_iter().map(|job| job()).collect()
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
#[path = "durable_tests.rs"]
mod tests;
