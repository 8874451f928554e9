//! The simulated network between brokers: messages delivered after a random delay, dropped
//! with some probability, and cut by partitions (a blocked link drops what crosses it, at send
//! and at delivery). Ordered by delivery time, then by send order, so a seed replays exactly.
use std::collections::{BTreeMap, BTreeSet};

use super::rng::SimRng;
use crate::protocol::messages::fetch_request::FetchRequest;
use crate::protocol::messages::fetch_response::FetchResponse;
use crate::replica::BrokerId;

#[derive(Debug, Clone)]
pub enum Payload {
    /// A fetch and its request id (the correlation id of the wire).
    FetchRequest(u64, FetchRequest),
    FetchResponse(u64, FetchResponse),
}

#[derive(Debug, Clone)]
pub struct Envelope {
    pub from: BrokerId,
    pub to: BrokerId,
    pub payload: Payload,
}

#[derive(Debug)]
pub struct Network {
    queue: BTreeMap<(i64, u64), Envelope>,
    seq: u64,
    pub drop_probability: f64,
    pub min_delay_ms: i64,
    pub max_delay_ms: i64,
    blocked: BTreeSet<(BrokerId, BrokerId)>,
}

impl Network {
    pub fn new(drop_probability: f64, min_delay_ms: i64, max_delay_ms: i64) -> Self {
        Network {
            queue: BTreeMap::new(),
            seq: 0,
            drop_probability,
            min_delay_ms,
            max_delay_ms,
            blocked: BTreeSet::new(),
        }
    }

    fn is_blocked(&self, a: BrokerId, b: BrokerId) -> bool {
        self.blocked.contains(&(a.min(b), a.max(b)))
    }

    pub fn send(&mut self, rng: &mut SimRng, now_ms: i64, envelope: Envelope) {
        if self.is_blocked(envelope.from, envelope.to) || rng.chance(self.drop_probability) {
            return;
        }
        // Now and then a message is very late (a stalled connection): it can arrive after its
        // sender crashed and came back.
        let delay = if rng.chance(0.01) {
            rng.range(self.max_delay_ms, 2_000)
        } else {
            rng.range(self.min_delay_ms, self.max_delay_ms)
        };
        let at = now_ms + delay;
        self.seq += 1;
        self.queue.insert((at, self.seq), envelope);
    }

    /// Everything due by `now_ms`, in delivery order; messages over a blocked link are lost.
    pub fn deliver_due(&mut self, now_ms: i64) -> Vec<Envelope> {
        let later = self.queue.split_off(&(now_ms + 1, 0));
        let due = std::mem::replace(&mut self.queue, later);
        due.into_values()
            .filter(|e| !self.is_blocked(e.from, e.to))
            .collect()
    }

    pub fn block(&mut self, a: BrokerId, b: BrokerId) {
        self.blocked.insert((a.min(b), a.max(b)));
    }

    pub fn heal(&mut self) {
        self.blocked.clear();
    }

    /// Drops everything addressed to `broker` (it crashed). What it sent is still on the
    /// way and may arrive after it restarted (the leader must not trust it: KIP-903).
    pub fn forget(&mut self, broker: BrokerId) {
        self.queue.retain(|_, e| e.to != broker);
    }
}
