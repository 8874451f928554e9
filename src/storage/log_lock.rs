//! The lock of a partition log's state ([`super::log::Inner`]), and the figures a consumer's
//! fetch reads without taking it.
//!
//! An append holds the log exclusively while it writes. A fetch used to take the shared side
//! three times before its read (log start offset, log end offset, and the `.txnindex` lookup a
//! read_committed fetch makes even on a log that never saw a transaction); each time an append
//! held it, parking_lot's spin-then-`sched_yield` could give the fetch's core away for a time
//! slice on a busy two-core machine. Kafka's `UnifiedLog` keeps these offsets in volatile fields
//! and reads without its lock; here they are published as atomics whenever the exclusive side
//! is released ([`LogWriteGuard`]'s drop), so every change is visible once the lock is gone.
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::log::Inner;

#[derive(Debug)]
struct Published {
    log_start_offset: AtomicI64,
    log_end_offset: AtomicI64,
    /// Whether any segment has held an aborted transaction since the log was opened: found by
    /// a scan at open, then set by the two places that index one
    /// ([`LogWriteGuard::note_aborted_txn_indexed`]), so an append costs O(1) however many
    /// segments the log has. Never cleared: a stale `true` costs only the index lookup it
    /// skips. (The cleaner only copies entries the log already had.)
    has_aborted_txns: AtomicBool,
}

impl Published {
    fn store(&self, inner: &Inner) {
        self.log_start_offset
            .store(inner.log_start_offset, Ordering::Release);
        self.log_end_offset
            .store(inner.log_end_offset, Ordering::Release);
        debug_assert!(
            self.has_aborted_txns.load(Ordering::Relaxed) || !any_aborted_txn_indexed(inner),
            "an aborted transaction was indexed without note_aborted_txn_indexed"
        );
    }
}

fn any_aborted_txn_indexed(inner: &Inner) -> bool {
    inner.segments.values().any(|s| !s.txn_index().is_empty())
}

#[derive(Debug)]
pub(super) struct LogLock {
    inner: RwLock<Inner>,
    published: Published,
}

impl LogLock {
    pub fn new(inner: Inner) -> Self {
        let published = Published {
            log_start_offset: AtomicI64::new(0),
            log_end_offset: AtomicI64::new(0),
            has_aborted_txns: AtomicBool::new(any_aborted_txn_indexed(&inner)),
        };
        published.store(&inner);
        LogLock {
            inner: RwLock::new(inner),
            published,
        }
    }

    pub fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read()
    }

    pub fn write(&self) -> LogWriteGuard<'_> {
        LogWriteGuard {
            guard: self.inner.write(),
            published: &self.published,
        }
    }

    pub fn log_start_offset(&self) -> i64 {
        self.published.log_start_offset.load(Ordering::Acquire)
    }

    pub fn log_end_offset(&self) -> i64 {
        self.published.log_end_offset.load(Ordering::Acquire)
    }

    pub fn has_aborted_txns(&self) -> bool {
        self.published.has_aborted_txns.load(Ordering::Acquire)
    }
}

/// The log held exclusively; what it changed is published when it is dropped.
pub(super) struct LogWriteGuard<'a> {
    guard: RwLockWriteGuard<'a, Inner>,
    published: &'a Published,
}

impl LogWriteGuard<'_> {
    /// Called after appending to a segment's `.txnindex`: read_committed fetches must look
    /// the index up from now on. Published at once; a fetch that sees it before this guard
    /// is released waits for the lock to read the index.
    pub fn note_aborted_txn_indexed(&self) {
        self.published
            .has_aborted_txns
            .store(true, Ordering::Release);
    }
}

impl Deref for LogWriteGuard<'_> {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.guard
    }
}

impl DerefMut for LogWriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        &mut self.guard
    }
}

impl Drop for LogWriteGuard<'_> {
    fn drop(&mut self) {
        self.published.store(&self.guard);
    }
}
