//! The lock of a partition's state, and what a fetch reads of that state without taking it.
//!
//! A produce holds the partition state while it appends (the producer-state check, the write
//! and the high watermark move as one step). A fetch of the same partition used to take that
//! lock four or five times (leadership, epoch, high watermark, last stable offset); on a busy
//! two-core machine it then spun and `sched_yield`ed behind the append, giving its core away
//! for up to a time slice, which made the 99.9th percentile of end-to-end latency several
//! times the median (BENCHMARKS.md, "Tail latency"). Kafka's `Partition` keeps the same
//! figures in volatile fields for the same reason. Here they are published as atomics each
//! time the lock is released ([`StateGuard`]'s drop), so every change made under the lock is
//! visible once the lock is gone, and a waiter woken before that re-reads them after
//! [`StateGuard::publish`].
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};

use parking_lot::{Mutex, MutexGuard};

use super::partition::PartitionState;

/// The figures a fetch needs, as of the last release of the lock.
#[derive(Debug)]
struct Published {
    is_leader: AtomicBool,
    leader_epoch: AtomicI32,
    high_watermark: AtomicI64,
    last_stable_offset: AtomicI64,
}

impl Published {
    fn store(&self, st: &PartitionState) {
        self.is_leader
            .store(st.leader_state().is_some(), Ordering::Release);
        self.leader_epoch.store(st.leader_epoch, Ordering::Release);
        self.high_watermark
            .store(st.high_watermark, Ordering::Release);
        self.last_stable_offset
            .store(st.last_stable_offset(), Ordering::Release);
    }
}

#[derive(Debug)]
pub(super) struct StateLock {
    state: Mutex<PartitionState>,
    published: Published,
}

impl StateLock {
    pub fn new(state: PartitionState) -> Self {
        let published = Published {
            is_leader: AtomicBool::new(false),
            leader_epoch: AtomicI32::new(0),
            high_watermark: AtomicI64::new(0),
            last_stable_offset: AtomicI64::new(0),
        };
        published.store(&state);
        StateLock {
            state: Mutex::new(state),
            published,
        }
    }

    pub fn lock(&self) -> StateGuard<'_> {
        StateGuard {
            guard: self.state.lock(),
            published: &self.published,
        }
    }

    pub fn is_leader(&self) -> bool {
        self.published.is_leader.load(Ordering::Acquire)
    }

    pub fn leader_epoch(&self) -> i32 {
        self.published.leader_epoch.load(Ordering::Acquire)
    }

    pub fn high_watermark(&self) -> i64 {
        self.published.high_watermark.load(Ordering::Acquire)
    }

    /// [`PartitionState::last_stable_offset`] as of the last release.
    pub fn last_stable_offset(&self) -> i64 {
        self.published.last_stable_offset.load(Ordering::Acquire)
    }
}

/// The locked state; what it changed is published when it is dropped.
pub(super) struct StateGuard<'a> {
    guard: MutexGuard<'a, PartitionState>,
    published: &'a Published,
}

impl StateGuard<'_> {
    /// Publishes now, while still holding the lock: before waking waiters from under it.
    pub fn publish(&self) {
        self.published.store(&self.guard);
    }
}

impl Deref for StateGuard<'_> {
    type Target = PartitionState;
    fn deref(&self) -> &PartitionState {
        &self.guard
    }
}

impl DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut PartitionState {
        &mut self.guard
    }
}

impl Drop for StateGuard<'_> {
    fn drop(&mut self) {
        self.published.store(&self.guard);
    }
}
