//! The only place that reads the clocks: the wall clock ([`Clock`]) and the monotonic clock
//! used to pace blocking work ([`Pacer`]). Everything else takes one of them, so tests can
//! drive time by hand.
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start_ms: i64) -> Arc<Self> {
        Arc::new(ManualClock(AtomicI64::new(start_ms)))
    }

    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    pub fn set(&self, ms: i64) {
        self.0.store(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

pub type SharedClock = Arc<dyn Clock>;

pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// Monotonic time for pacing blocking work (the log cleaner's I/O throttle): how long since
/// an arbitrary origin, and a way to wait. Tests use [`ManualPacer`], whose sleeps only move
/// its own time.
pub trait Pacer: Send + Sync + std::fmt::Debug {
    /// Time since this pacer's origin; never goes back.
    fn elapsed(&self) -> std::time::Duration;
    /// Blocks the calling thread for `d`.
    fn sleep(&self, d: std::time::Duration);
}

/// The real monotonic clock; sleeps the calling thread.
#[derive(Debug)]
pub struct ThreadPacer(std::time::Instant);

impl Default for ThreadPacer {
    fn default() -> Self {
        ThreadPacer(std::time::Instant::now())
    }
}

impl Pacer for ThreadPacer {
    fn elapsed(&self) -> std::time::Duration {
        self.0.elapsed()
    }

    fn sleep(&self, d: std::time::Duration) {
        std::thread::sleep(d)
    }
}

/// A pacer whose time moves only by [`ManualPacer::advance`] and by its own sleeps, which
/// return at once; [`ManualPacer::slept`] is the total asked for.
#[derive(Debug, Default)]
pub struct ManualPacer {
    now_ns: std::sync::atomic::AtomicU64,
    slept_ns: std::sync::atomic::AtomicU64,
}

impl ManualPacer {
    pub fn new() -> Arc<Self> {
        Arc::new(ManualPacer::default())
    }

    pub fn advance(&self, d: std::time::Duration) {
        self.now_ns.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
    }

    /// Total time spent in [`Pacer::sleep`].
    pub fn slept(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.slept_ns.load(Ordering::SeqCst))
    }
}

impl Pacer for ManualPacer {
    fn elapsed(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.now_ns.load(Ordering::SeqCst))
    }

    fn sleep(&self, d: std::time::Duration) {
        let ns = d.as_nanos() as u64;
        self.slept_ns.fetch_add(ns, Ordering::SeqCst);
        self.now_ns.fetch_add(ns, Ordering::SeqCst);
    }
}

pub type SharedPacer = Arc<dyn Pacer>;
