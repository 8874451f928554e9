//! The memory that requests being read may hold (Kafka's `MemoryPool`, bounded by
//! `queued.max.request.bytes`; -1 leaves it unbounded but still counted).
//!
//! A connection reserves memory as a frame's bytes arrive, never on the size prefix alone, and
//! gives it back once the request has been handed to its handler. When the pool is exhausted a
//! reservation waits, so the connection stops reading (as Kafka mutes the channels it cannot
//! allocate for). Like Kafka's non-strict pool, a reservation is granted whenever any memory
//! is free, even if it then overshoots the bound by at most one chunk: a frame larger than
//! what is left can still be read, and partial reservations of several frames cannot
//! deadlock each other.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

pub struct MemoryPool {
    /// None: unbounded.
    limit_bytes: Option<usize>,
    used_bytes: AtomicUsize,
    released: Notify,
}

impl MemoryPool {
    /// A pool of `queued_max_request_bytes` (Kafka's -1, or any value below 1, is unbounded).
    pub fn new(queued_max_request_bytes: i64) -> Arc<MemoryPool> {
        Arc::new(MemoryPool {
            limit_bytes: (queued_max_request_bytes > 0)
                .then_some(queued_max_request_bytes as usize),
            used_bytes: AtomicUsize::new(0),
            released: Notify::new(),
        })
    }

    /// Bytes reserved by frames being read right now.
    pub fn used_bytes(&self) -> usize {
        self.used_bytes.load(Ordering::Acquire)
    }

    /// An empty reservation, to grow as bytes arrive.
    pub fn reservation(self: &Arc<Self>) -> Reservation {
        Reservation {
            pool: self.clone(),
            bytes: 0,
        }
    }

    async fn acquire(&self, bytes: usize) {
        let Some(limit) = self.limit_bytes else {
            self.used_bytes.fetch_add(bytes, Ordering::AcqRel);
            return;
        };
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            // Registered before the check, so a release between the check and the wait wakes us.
            released.as_mut().enable();
            let used = self.used_bytes.load(Ordering::Acquire);
            if used < limit
                && self
                    .used_bytes
                    .compare_exchange(used, used + bytes, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                return;
            }
            if used < limit {
                continue;
            }
            released.await;
        }
    }

    fn release(&self, bytes: usize) {
        if bytes > 0 {
            self.used_bytes.fetch_sub(bytes, Ordering::AcqRel);
            self.released.notify_waiters();
        }
    }
}

/// Memory one frame holds; returned to the pool when dropped.
pub struct Reservation {
    pool: Arc<MemoryPool>,
    bytes: usize,
}

impl Reservation {
    /// Reserves `bytes` more, waiting while the pool is exhausted.
    pub async fn grow(&mut self, bytes: usize) {
        self.pool.acquire(bytes).await;
        self.bytes += bytes;
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.pool.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn an_exhausted_pool_waits_until_memory_is_returned() {
        let pool = MemoryPool::new(100);
        let mut a = pool.reservation();
        a.grow(60).await;
        // Memory is left: granted, even past the bound (non-strict, as Kafka's pool).
        let mut b = pool.reservation();
        b.grow(60).await;
        assert_eq!(pool.used_bytes(), 120);
        let waiting = {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut c = pool.reservation();
                c.grow(10).await;
                c.bytes()
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "granted from an exhausted pool");
        drop(a);
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(1), waiting)
                .await
                .unwrap()
                .unwrap(),
            10
        );
        drop(b);
        assert_eq!(pool.used_bytes(), 0, "every reservation returned");
    }

    #[tokio::test]
    async fn an_unbounded_pool_counts_without_waiting() {
        let pool = MemoryPool::new(-1);
        let mut a = pool.reservation();
        a.grow(1 << 40).await;
        assert_eq!(pool.used_bytes(), 1 << 40);
        drop(a);
        assert_eq!(pool.used_bytes(), 0);
    }
}
