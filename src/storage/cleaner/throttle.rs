//! The log cleaner's I/O budget, `log.cleaner.io.max.bytes.per.second` (Kafka's
//! `kafka.utils.Throttler` as `LogCleaner` uses it): every byte the cleaner reads or writes is
//! counted, and when the count runs ahead of the budget the (blocking) cleaner thread sleeps
//! until it is back on it. One throttler lives as long as the cleaner, so the budget holds
//! across logs and passes, as Kafka's shared throttler does.
//!
//! Accounting is by windows of at least [`CHECK_INTERVAL`] (Kafka's 300 ms): idle time
//! earns at most one window's worth of credit, so a clean after a long pause is not
//! unthrottled. Time comes from a [`Pacer`], so tests run on simulated time.

use std::time::Duration;

use crate::clock::{SharedPacer, ThreadPacer};

/// Shortest accounting window (Kafka's `LogCleaner` passes `checkIntervalMs = 300`).
pub const CHECK_INTERVAL: Duration = Duration::from_millis(300);

/// Byte-rate limiter for the cleaner's reads and writes.
#[derive(Debug)]
pub struct Throttler {
    /// Bytes per second; `None` when unlimited (Kafka's default `Double.MaxValue`, and any
    /// value that is not a positive finite number).
    max_bytes_per_second: Option<f64>,
    pacer: SharedPacer,
    window_start: Duration,
    window_bytes: u64,
    /// Total time this throttler has slept (for logs and tests).
    throttled: Duration,
}

impl Throttler {
    /// A throttler on the real monotonic clock.
    pub fn new(max_bytes_per_second: f64) -> Self {
        Self::with_pacer(
            max_bytes_per_second,
            std::sync::Arc::new(ThreadPacer::default()),
        )
    }

    /// A throttler on `pacer`'s time.
    pub fn with_pacer(max_bytes_per_second: f64, pacer: SharedPacer) -> Self {
        let limited = max_bytes_per_second.is_finite()
            && max_bytes_per_second > 0.0
            && max_bytes_per_second < f64::MAX;
        let window_start = pacer.elapsed();
        Throttler {
            max_bytes_per_second: limited.then_some(max_bytes_per_second),
            pacer,
            window_start,
            window_bytes: 0,
            throttled: Duration::ZERO,
        }
    }

    /// Whether a budget applies at all.
    pub fn is_limited(&self) -> bool {
        self.max_bytes_per_second.is_some()
    }

    /// Total time spent sleeping so far.
    pub fn throttled(&self) -> Duration {
        self.throttled
    }

    /// Counts `bytes` of cleaner I/O and sleeps while the current window is over budget.
    pub fn maybe_throttle(&mut self, bytes: u64) {
        let Some(rate) = self.max_bytes_per_second else {
            return;
        };
        self.window_bytes = self.window_bytes.saturating_add(bytes);
        let mut elapsed = self.pacer.elapsed().saturating_sub(self.window_start);
        let due =
            Duration::try_from_secs_f64(self.window_bytes as f64 / rate).unwrap_or(Duration::MAX);
        if due > elapsed {
            let sleep = due - elapsed;
            self.pacer.sleep(sleep);
            self.throttled = self.throttled.saturating_add(sleep);
            elapsed = self.pacer.elapsed().saturating_sub(self.window_start);
        }
        if elapsed >= CHECK_INTERVAL {
            self.window_start = self.window_start.saturating_add(elapsed);
            self.window_bytes = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualPacer;

    #[test]
    fn unlimited_never_sleeps() {
        for rate in [f64::MAX, f64::INFINITY, 0.0, -1.0, f64::NAN] {
            let pacer = ManualPacer::new();
            let mut t = Throttler::with_pacer(rate, pacer.clone());
            assert!(!t.is_limited(), "{rate}");
            t.maybe_throttle(u64::MAX);
            t.maybe_throttle(1 << 40);
            assert_eq!(pacer.slept(), Duration::ZERO);
        }
    }

    #[test]
    fn io_at_a_budget_takes_bytes_over_rate() {
        let pacer = ManualPacer::new();
        let mut t = Throttler::with_pacer(1000.0, pacer.clone());
        for _ in 0..100 {
            t.maybe_throttle(50);
        }
        // 5,000 bytes at 1,000 B/s: 5 simulated seconds.
        let slept = pacer.slept().as_secs_f64();
        assert!((slept - 5.0).abs() < 1e-6, "slept {slept}");
        assert_eq!(t.throttled(), pacer.slept());
    }

    #[test]
    fn time_already_spent_counts_and_idle_credit_is_one_window() {
        let pacer = ManualPacer::new();
        let mut t = Throttler::with_pacer(1000.0, pacer.clone());
        // The I/O itself took longer than the budget asks: no sleep.
        pacer.advance(Duration::from_secs(2));
        t.maybe_throttle(1000);
        assert_eq!(pacer.slept(), Duration::ZERO);
        // A long pause earns no more than the window it ends.
        pacer.advance(Duration::from_secs(60));
        t.maybe_throttle(10); // closes the idle window
        t.maybe_throttle(3000);
        let slept = pacer.slept().as_secs_f64();
        assert!((slept - 3.0).abs() < 1e-6, "slept {slept}");
    }
}
