//! The console's throughput history: once a second the broker reads its own
//! `BrokerTopicMetrics` counters (messages in, bytes in, bytes out; the same counters
//! `/metrics` exports) and the sum of the groups' committed offsets, and keeps the readings
//! in ring buffers, so the live plot shows what the broker measured rather than what a
//! browser happened to poll. Rates are the differences of consecutive readings divided by
//! the time between them.
//!
//! Bounded: [`HISTORY_SECONDS`] readings for the whole broker, [`TOPIC_HISTORY_SECONDS`] per
//! topic, and at most [`MAX_TOPICS`] topics (in name order) tracked at once.
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::broker::Broker;

/// Readings kept for the broker-wide plot (one a second).
pub const HISTORY_SECONDS: usize = 300;
/// Readings kept per topic for its sparkline.
pub const TOPIC_HISTORY_SECONDS: usize = 60;
/// Topics whose history is kept; past it the rest (in name order) have none.
pub const MAX_TOPICS: usize = 1000;
/// Time between readings.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// Cumulative counter values at one instant.
#[derive(Clone, Copy, Debug, Default)]
struct Reading {
    at_ms: i64,
    messages_in: u64,
    bytes_in: u64,
    bytes_out: u64,
    /// Sum of the committed offsets of every group on the topic (or all topics): how far
    /// consumers have got, so its rate is records consumed per second.
    committed: i64,
}

/// Per-second rates between two readings, ending at `at_ms`.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Rate {
    pub at_ms: i64,
    pub messages_in: f64,
    pub bytes_in: f64,
    pub bytes_out: f64,
    /// Records consumed per second, from the growth of committed offsets.
    pub messages_consumed: f64,
}

#[derive(Default)]
struct History {
    all: VecDeque<Reading>,
    topics: BTreeMap<String, VecDeque<Reading>>,
}

/// The ring buffers and the task that fills them.
#[derive(Default)]
pub struct Sampler {
    history: Mutex<History>,
}

fn push(ring: &mut VecDeque<Reading>, r: Reading, cap: usize) {
    if ring.len() == cap {
        ring.pop_front();
    }
    ring.push_back(r);
}

fn rates(ring: &VecDeque<Reading>) -> Vec<Rate> {
    let per_second = |a: f64, b: f64, ms: i64| ((b - a) * 1000.0 / ms as f64).max(0.0);
    ring.iter()
        .zip(ring.iter().skip(1))
        .map(|(a, b)| {
            let ms = (b.at_ms - a.at_ms).max(1);
            Rate {
                at_ms: b.at_ms,
                messages_in: per_second(a.messages_in as f64, b.messages_in as f64, ms),
                bytes_in: per_second(a.bytes_in as f64, b.bytes_in as f64, ms),
                bytes_out: per_second(a.bytes_out as f64, b.bytes_out as f64, ms),
                messages_consumed: per_second(a.committed as f64, b.committed as f64, ms),
            }
        })
        .collect()
}

impl Sampler {
    /// Takes one reading of the broker's counters now.
    pub fn sample(&self, broker: &Broker) {
        let at_ms = broker.now_ms();
        let mut committed: BTreeMap<String, i64> = BTreeMap::new();
        for (_, topic, _, offset) in broker.groups.committed_offsets() {
            *committed.entry(topic).or_default() += offset.max(0);
        }
        let all = broker.metrics.all_topics();
        let total = Reading {
            at_ms,
            messages_in: all.messages_in.get(),
            bytes_in: all.bytes_in.get(),
            bytes_out: all.bytes_out.get(),
            committed: committed.values().sum(),
        };
        let mut names: Vec<String> = broker
            .replicas
            .all()
            .into_iter()
            .map(|p| p.topic.clone())
            .collect();
        names.sort();
        names.dedup();
        names.truncate(MAX_TOPICS);
        let mut history = self.history.lock();
        push(&mut history.all, total, HISTORY_SECONDS);
        // Topics deleted since the last reading lose their history.
        history.topics.retain(|t, _| names.binary_search(t).is_ok());
        for name in names {
            // `topic_if` never creates a series: a topic nobody produced to or read from yet
            // reads as zeros.
            let counters = broker.metrics.topic_if(&name, || false);
            let reading = Reading {
                at_ms,
                messages_in: counters.as_ref().map_or(0, |c| c.messages_in.get()),
                bytes_in: counters.as_ref().map_or(0, |c| c.bytes_in.get()),
                bytes_out: counters.as_ref().map_or(0, |c| c.bytes_out.get()),
                committed: committed.get(&name).copied().unwrap_or(0),
            };
            let ring = history.topics.entry(name).or_default();
            push(ring, reading, TOPIC_HISTORY_SECONDS);
        }
    }

    /// Broker-wide rates, oldest first.
    pub fn rates(&self) -> Vec<Rate> {
        rates(&self.history.lock().all)
    }

    /// A topic's rates, oldest first (empty when not tracked).
    pub fn topic_rates(&self, topic: &str) -> Vec<Rate> {
        self.history
            .lock()
            .topics
            .get(topic)
            .map(rates)
            .unwrap_or_default()
    }

    /// Samples every [`SAMPLE_INTERVAL`] until `shutdown`.
    pub async fn run(self: Arc<Self>, broker: Arc<Broker>, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(SAMPLE_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => self.sample(&broker),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_differences_per_second_and_the_ring_is_bounded() {
        let mut ring = VecDeque::new();
        for i in 0..(HISTORY_SECONDS as u64 + 5) {
            let r = Reading {
                at_ms: i as i64 * 500,
                messages_in: i * 10,
                bytes_in: i * 100,
                bytes_out: i * 50,
                committed: 7,
            };
            push(&mut ring, r, HISTORY_SECONDS);
        }
        assert_eq!(ring.len(), HISTORY_SECONDS);
        let r = rates(&ring);
        assert_eq!(r.len(), HISTORY_SECONDS - 1);
        // 10 messages every 500 ms.
        assert_eq!(r[0].messages_in, 20.0);
        assert_eq!(r[0].bytes_in, 200.0);
        assert_eq!(r[0].bytes_out, 100.0);
        assert_eq!(r[0].messages_consumed, 0.0);
        assert_eq!(r.last().unwrap().at_ms, (HISTORY_SECONDS as i64 + 4) * 500);
    }

    #[test]
    fn a_committed_offset_going_back_is_not_a_negative_rate() {
        let mut ring = VecDeque::new();
        for (at_ms, committed) in [(0, 100), (1000, 40)] {
            push(
                &mut ring,
                Reading {
                    at_ms,
                    committed,
                    ..Default::default()
                },
                3,
            );
        }
        assert_eq!(rates(&ring)[0].messages_consumed, 0.0);
    }
}
