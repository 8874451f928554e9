//! The controller mutation quota (KIP-599, Kafka's `ControllerMutationQuotaManager`):
//! partitions created or deleted by CreateTopics, CreatePartitions and DeleteTopics, measured
//! with a token bucket rather than a sampled rate, so a burst is paid back at the quota's rate
//! instead of waiting for its sample to expire. The bucket refills at `controller_mutation_rate`
//! tokens a second up to `controller.quota.window.num` x `controller.quota.window.size.seconds`
//! x the rate, and the quota is exhausted while it holds fewer than zero tokens.
//!
//! A request sees the quota through a [`MutationQuota`]: strict for the versions that can
//! answer THROTTLING_QUOTA_EXCEEDED (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+),
//! which refuses every mutation once the bucket is empty and otherwise accepts one even if it
//! empties the bucket; permissive for older versions, which accepts every mutation and throttles
//! as soon as the bucket is empty.
use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::manager::{resolve, ResolvedQuota};
use crate::controller::client_quotas::{ClientQuotas, CONTROLLER_MUTATION_RATE};
use crate::error::ErrorCode;

/// Buckets idle this long are dropped (as the other quota sensors).
const BUCKET_EXPIRY_MS: i64 = 3_600_000;
/// Past this many buckets, idle ones are looked for on the next use.
const BUCKET_SWEEP_AT: usize = 1024;

/// Kafka's `TokenBucket` stat: tokens refilled continuously at the quota's rate, capped at the
/// burst; a recorded value is taken out, and may leave the bucket below zero.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    tokens: f64,
    last_update_ms: Option<i64>,
}

impl TokenBucket {
    /// A new bucket starts full (Kafka's starts at time zero, so its first refill fills it).
    pub fn new() -> TokenBucket {
        TokenBucket {
            tokens: 0.0,
            last_update_ms: None,
        }
    }

    fn refill(&mut self, rate: f64, burst: f64, now_ms: i64) {
        self.tokens = match self.last_update_ms {
            None => burst,
            Some(last) => (self.tokens + rate * (now_ms - last).max(0) as f64 / 1000.0).min(burst),
        };
        self.last_update_ms = Some(now_ms);
    }

    /// The tokens left at `now_ms`.
    pub fn measure(&mut self, rate: f64, burst: f64, now_ms: i64) -> f64 {
        self.refill(rate, burst, now_ms);
        self.tokens
    }

    /// Takes `value` tokens out at `now_ms`.
    pub fn record(&mut self, value: f64, rate: f64, burst: f64, now_ms: i64) {
        self.refill(rate, burst, now_ms);
        self.tokens = (self.tokens - value).min(burst);
    }
}

impl Default for TokenBucket {
    fn default() -> Self {
        TokenBucket::new()
    }
}

/// The time an empty bucket holding `tokens` (below zero) needs to refill to zero at `rate`
/// (Kafka's `ControllerMutationQuotaManager.throttleTimeMs`: -tokens / rate, in ms, rounded).
pub fn throttle_time_ms(tokens: f64, rate: f64) -> i64 {
    if tokens >= 0.0 {
        return 0;
    }
    if rate <= 0.0 {
        // A zero quota never refills: Kafka's division gives infinity, clamped to the longest
        // throttle a response can carry.
        return i32::MAX as i64;
    }
    (-tokens / rate * 1000.0).round() as i64
}

struct Bucket {
    bucket: TokenBucket,
    last_ms: i64,
}

/// The buckets of every (user, client-id) sensor, as Kafka's quota manager keeps one sensor
/// per quota entity.
pub struct ControllerMutationQuotaManager {
    num_samples: usize,
    window_ms: i64,
    buckets: Arc<Mutex<HashMap<(String, String), Bucket>>>,
}

/// Why a strict quota refused a mutation: the bucket was already empty; the throttle is
/// the time it needs to refill to zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaExceeded {
    pub throttle_time_ms: i64,
}

impl From<&QuotaExceeded> for ErrorCode {
    /// A strict controller mutation quota refused a topic (KIP-599).
    fn from(_: &QuotaExceeded) -> ErrorCode {
        ErrorCode::THROTTLING_QUOTA_EXCEEDED
    }
}

impl ControllerMutationQuotaManager {
    pub fn new(num_samples: usize, window_ms: i64) -> ControllerMutationQuotaManager {
        ControllerMutationQuotaManager {
            num_samples: num_samples.max(1),
            window_ms: window_ms.max(1),
            buckets: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The quota for a request of `version`, strict from `strict_since_version` (Kafka's
    /// `newQuotaFor`); unbounded when no entity sets `controller_mutation_rate` for the client.
    pub fn quota_for(
        &self,
        quotas: &ClientQuotas,
        user: &str,
        client_id: &str,
        version: i16,
        strict_since_version: i16,
    ) -> MutationQuota {
        let resolved = resolve(quotas, CONTROLLER_MUTATION_RATE, user, client_id);
        MutationQuota {
            bound: resolved.map(|q: ResolvedQuota| (q.bound, q.sensor)),
            strict: version >= strict_since_version,
            burst_seconds: self.num_samples as f64 * self.window_ms as f64 / 1000.0,
            buckets: self.buckets.clone(),
            throttle: None,
        }
    }

    /// The tokens the client's bucket holds now (for tests and metrics).
    pub fn tokens(
        &self,
        quotas: &ClientQuotas,
        user: &str,
        client_id: &str,
        now_ms: i64,
    ) -> Option<f64> {
        let q = resolve(quotas, CONTROLLER_MUTATION_RATE, user, client_id)?;
        let burst = q.bound * self.num_samples as f64 * self.window_ms as f64 / 1000.0;
        self.buckets
            .lock()
            .get_mut(&q.sensor)
            .map(|b| b.bucket.measure(q.bound, burst, now_ms))
    }
}

/// One request's view of its client's controller mutation quota (Kafka's
/// `ControllerMutationQuota`: Strict, Permissive, or unbounded without a quota).
pub struct MutationQuota {
    /// The rate and the sensor it is measured by; None: unbounded.
    bound: Option<(f64, (String, String))>,
    strict: bool,
    burst_seconds: f64,
    buckets: Arc<Mutex<HashMap<(String, String), Bucket>>>,
    /// The last throttle earned, and when.
    throttle: Option<(i64, i64)>,
}

impl MutationQuota {
    /// Whether any quota bounds this client.
    pub fn is_bounded(&self) -> bool {
        self.bound.is_some()
    }

    /// Records `permits` partition mutations at `now_ms`. Strict: refused (nothing recorded)
    /// while the bucket is below zero, accepted otherwise even if it takes the bucket below
    /// zero. Permissive: always accepted, and a bucket left below zero throttles the client.
    pub fn record(&mut self, permits: f64, now_ms: i64) -> Result<(), QuotaExceeded> {
        let Some((rate, sensor)) = &self.bound else {
            return Ok(());
        };
        let (rate, burst) = (*rate, rate * self.burst_seconds);
        let mut buckets = self.buckets.lock();
        if buckets.len() >= BUCKET_SWEEP_AT {
            buckets.retain(|_, b| now_ms - b.last_ms < BUCKET_EXPIRY_MS);
        }
        let b = buckets.entry(sensor.clone()).or_insert_with(|| Bucket {
            bucket: TokenBucket::new(),
            last_ms: now_ms,
        });
        b.last_ms = now_ms;
        if self.strict {
            let tokens = b.bucket.measure(rate, burst, now_ms);
            if tokens < 0.0 {
                let throttle_time_ms = throttle_time_ms(tokens, rate);
                self.throttle = Some((throttle_time_ms, now_ms));
                return Err(QuotaExceeded { throttle_time_ms });
            }
            b.bucket.record(permits, rate, burst, now_ms);
        } else {
            b.bucket.record(permits, rate, burst, now_ms);
            let tokens = b.bucket.measure(rate, burst, now_ms);
            if tokens < 0.0 {
                self.throttle = Some((throttle_time_ms(tokens, rate), now_ms));
            }
        }
        Ok(())
    }

    /// The throttle the response carries at `now_ms`: the last one earned, less the time
    /// since (the request may have waited for the controller meanwhile), as Kafka's
    /// `throttleTime`.
    pub fn throttle_time_ms(&self, now_ms: i64) -> i64 {
        self.throttle
            .map_or(0, |(t, at)| (t - (now_ms - at).max(0)).max(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::client_quotas::{QuotaEntity, ENTITY_CLIENT_ID};

    fn quotas(rate: f64) -> ClientQuotas {
        let mut q = ClientQuotas::default();
        q.apply(
            &QuotaEntity::new([(ENTITY_CLIENT_ID, Some("admin"))]),
            CONTROLLER_MUTATION_RATE,
            Some(rate),
        );
        q
    }

    #[test]
    fn the_bucket_refills_at_the_rate_up_to_the_burst() {
        let mut b = TokenBucket::new();
        // Rate 10/s, burst 100: a new bucket is full.
        assert_eq!(b.measure(10.0, 100.0, 1_000), 100.0);
        b.record(130.0, 10.0, 100.0, 1_000);
        assert_eq!(b.measure(10.0, 100.0, 1_000), -30.0);
        // 2 s later, 20 tokens back.
        assert_eq!(b.measure(10.0, 100.0, 3_000), -10.0);
        // Never above the burst.
        assert_eq!(b.measure(10.0, 100.0, 100_000), 100.0);
        assert_eq!(throttle_time_ms(-30.0, 10.0), 3_000);
        assert_eq!(throttle_time_ms(-0.5, 3.0), 167);
        assert_eq!(throttle_time_ms(0.0, 10.0), 0);
    }

    #[test]
    fn strict_accepts_until_the_bucket_is_empty_then_refuses_with_the_refill_time() {
        // Kafka's StrictControllerMutationQuotaTest: rate 10, 10 windows of 1 s, burst 100.
        let q = quotas(10.0);
        let m = ControllerMutationQuotaManager::new(10, 1000);
        let mut quota = m.quota_for(&q, "ANONYMOUS", "admin", 6, 6);
        assert!(quota.is_bounded());
        // 90 leaves 10 tokens; the next 90 is accepted and leaves -80; no throttle yet.
        assert_eq!(quota.record(90.0, 0), Ok(()));
        assert_eq!(quota.record(90.0, 0), Ok(()));
        assert_eq!(quota.throttle_time_ms(0), 0);
        // The bucket is empty: refused, throttled for 80 / 10 s.
        assert_eq!(
            quota.record(1.0, 0),
            Err(QuotaExceeded {
                throttle_time_ms: 8_000
            })
        );
        assert_eq!(quota.throttle_time_ms(0), 8_000);
        // The throttle a response carries shrinks with the time the request took.
        assert_eq!(quota.throttle_time_ms(5_000), 3_000);
        // A second request 5 s later: 50 tokens back, -30, still refused, for 3 s.
        let mut next = m.quota_for(&q, "ANONYMOUS", "admin", 7, 6);
        assert_eq!(
            next.record(1.0, 5_000),
            Err(QuotaExceeded {
                throttle_time_ms: 3_000
            })
        );
        assert_eq!(m.tokens(&q, "ANONYMOUS", "admin", 5_000), Some(-30.0));
    }

    #[test]
    fn permissive_accepts_everything_and_throttles_once_empty() {
        let q = quotas(10.0);
        let m = ControllerMutationQuotaManager::new(10, 1000);
        let mut quota = m.quota_for(&q, "ANONYMOUS", "admin", 5, 6);
        assert_eq!(quota.record(90.0, 0), Ok(()));
        assert_eq!(quota.throttle_time_ms(0), 0);
        // -80 tokens: accepted, throttled 8 s.
        assert_eq!(quota.record(90.0, 0), Ok(()));
        assert_eq!(quota.throttle_time_ms(0), 8_000);
        assert_eq!(quota.record(10.0, 0), Ok(()));
        assert_eq!(quota.throttle_time_ms(0), 9_000);
    }

    #[test]
    fn a_client_without_a_quota_is_unbounded() {
        let q = quotas(10.0);
        let m = ControllerMutationQuotaManager::new(11, 1000);
        let mut quota = m.quota_for(&q, "ANONYMOUS", "other", 7, 6);
        assert!(!quota.is_bounded());
        assert_eq!(quota.record(1e9, 0), Ok(()));
        assert_eq!(quota.throttle_time_ms(0), 0);
        assert_eq!(m.tokens(&q, "ANONYMOUS", "other", 0), None);
    }
}
