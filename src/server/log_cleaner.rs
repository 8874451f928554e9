//! The broker's log cleaner task (Kafka's `LogCleaner` with its `CleanerThread`): every
//! `log.cleaner.backoff.ms` it runs one pass of [`LogManager::clean_all_with`] on a blocking
//! thread, with the broker's `log.cleaner.*` settings and one I/O throttler
//! (`log.cleaner.io.max.bytes.per.second`) kept for the task's lifetime. It is a task of its
//! own so that a long, throttled pass never delays retention, flushes or group timeouts.
//! The rate and the backoff are read from the effective config before each pass, so a
//! dynamic broker config change applies from the next pass on (Kafka's `LogCleaner` is a
//! `Reconfigurable` of these keys too).
//! Only one pass runs at a time (Kafka's `log.cleaner.threads=1`). An I/O error of the
//! cleaner (reading or writing segments, the `cleaner-offset-checkpoint`, deleting the
//! segments it replaced) takes its log dir offline, as Kafka's cleaner does through
//! `LogDirFailureChannel`; the broker's failure pass then stops the dir's replicas.
//!
//! [`LogManager::clean_all_with`]: crate::storage::LogManager::clean_all_with

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::broker::Broker;
use crate::clock::{Pacer, ThreadPacer};
use crate::storage::{CleanerConfig, PartitionLog, Throttler};

/// Real time whose sleeps end early once shutdown starts, so a throttled pass cannot hold
/// shutdown back: the rest of that pass runs unthrottled.
#[derive(Debug)]
struct ShutdownAwarePacer {
    clock: ThreadPacer,
    shutdown: CancellationToken,
}

impl Pacer for ShutdownAwarePacer {
    fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    fn sleep(&self, d: Duration) {
        const STEP: Duration = Duration::from_millis(50);
        let until = self.clock.elapsed().saturating_add(d);
        while !self.shutdown.is_cancelled() {
            let left = until.saturating_sub(self.clock.elapsed());
            if left.is_zero() {
                return;
            }
            self.clock.sleep(left.min(STEP));
        }
    }
}

/// The cleaner settings from the effective broker config.
pub fn cleaner_config(broker: &Broker) -> CleanerConfig {
    CleanerConfig {
        io_max_bytes_per_second: broker.dynamic.current().log_cleaner_io_max_bytes_per_second,
        ..CleanerConfig::default()
    }
}

/// `log.cleaner.backoff.ms` now (tokio needs a non-zero period).
fn backoff(broker: &Broker) -> Duration {
    Duration::from_millis(broker.dynamic.current().log_cleaner_backoff_ms.max(1) as u64)
}

/// Runs cleaner passes until `shutdown`; returns after the pass in progress, if any, ends.
/// Does nothing when `log.cleaner.enable=false`.
pub async fn run(broker: Arc<Broker>, shutdown: CancellationToken) {
    if !broker.config.log_cleaner_enable {
        return;
    }
    let mut period = backoff(&broker);
    let mut tick = tokio::time::interval(period);
    // A long pass is followed by a full backoff, not by a burst of missed ticks.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut config = cleaner_config(&broker);
    let new_throttler = |rate: f64| {
        let pacer = ShutdownAwarePacer {
            clock: ThreadPacer::default(),
            shutdown: shutdown.clone(),
        };
        Throttler::with_pacer(rate, Arc::new(pacer))
    };
    let mut throttler = Some(new_throttler(config.io_max_bytes_per_second));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let now_config = cleaner_config(&broker);
        if now_config.io_max_bytes_per_second != config.io_max_bytes_per_second {
            // A new rate starts a new throttler (its measurement restarts too).
            throttler = None;
        }
        config = now_config;
        if backoff(&broker) != period {
            period = backoff(&broker);
            tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        }
        let b = broker.clone();
        let config = config.clone();
        let mut t = throttler
            .take()
            .unwrap_or_else(|| new_throttler(config.io_max_bytes_per_second));
        // Compaction reads and rewrites segments and the throttle sleeps: keep it off the
        // async workers.
        let result = tokio::task::spawn_blocking(move || {
            let now = b.now_ms();
            let lso = |log: &PartitionLog| {
                let (topic, index) = log.topic_partition();
                b.replicas
                    .get(&topic, index)
                    .map_or(0, |p| p.last_stable_offset())
            };
            let r = b.replicas.logs().clean_all_with(now, &config, &mut t, &lso);
            (r, t)
        })
        .await;
        match result {
            Ok((r, t)) => {
                throttler = Some(t);
                if let Err(e) = r {
                    tracing::warn!(error = ?e, "log cleaner failed");
                }
            }
            Err(e) => tracing::warn!(error = ?e, "log cleaner task failed"),
        }
    }
}
