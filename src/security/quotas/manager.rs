//! Client quota managers (Kafka's `ClientQuotaManager` for the byte rates,
//! `ClientRequestQuotaManager` for `request_percentage`, and the same sensors for
//! `controller_mutation_rate`): which entity's quota applies to a (user, client-id), the
//! sensor each client is measured by, and the throttle time a recorded value earns.
use std::collections::HashMap;

use parking_lot::Mutex;

use super::rate::{throttle_time_ms, SampledRate};
use crate::controller::client_quotas::{
    ClientQuotas, QuotaEntity, CONSUMER_BYTE_RATE, CONTROLLER_MUTATION_RATE, ENTITY_CLIENT_ID,
    ENTITY_USER, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE,
};

/// What a manager measures, and the quota key that bounds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuotaType {
    /// Bytes of Produce requests per second.
    Produce,
    /// Bytes of Fetch responses per second.
    Fetch,
    /// Request handling time, as a percentage of one thread.
    Request,
    /// Partitions created or deleted per second (KIP-599).
    ControllerMutation,
}

impl QuotaType {
    pub fn key(self) -> &'static str {
        match self {
            QuotaType::Produce => PRODUCER_BYTE_RATE,
            QuotaType::Fetch => CONSUMER_BYTE_RATE,
            QuotaType::Request => REQUEST_PERCENTAGE,
            QuotaType::ControllerMutation => CONTROLLER_MUTATION_RATE,
        }
    }
}

/// The quota that applies to a client, from the most specific entity that sets it, and the
/// sensor (user tag, client-id tag) it is measured by: a quota on a user alone is shared by
/// all that user's clients, any other by each (user, client-id).
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedQuota {
    pub bound: f64,
    pub entity: QuotaEntity,
    pub sensor: (String, String),
}

/// Finds the quota of `key` for `user` (a principal name) and `client_id`, in Kafka's order
/// of precedence: user + client-id, user + default client-id, user, default user +
/// client-id, default user + default client-id, default user, client-id, default client-id.
pub fn resolve(
    quotas: &ClientQuotas,
    key: &str,
    user: &str,
    client_id: &str,
) -> Option<ResolvedQuota> {
    let (u, c) = (Some(user), Some(client_id));
    let both = |user: Option<&str>, client: Option<&str>| {
        QuotaEntity::new([(ENTITY_USER, user), (ENTITY_CLIENT_ID, client)])
    };
    let candidates = [
        (both(u, c), true, true),
        (both(u, None), true, true),
        (QuotaEntity::new([(ENTITY_USER, u)]), true, false),
        (both(None, c), true, true),
        (both(None, None), true, true),
        (QuotaEntity::new([(ENTITY_USER, None)]), true, false),
        (QuotaEntity::new([(ENTITY_CLIENT_ID, c)]), false, true),
        (QuotaEntity::new([(ENTITY_CLIENT_ID, None)]), false, true),
    ];
    candidates
        .into_iter()
        .find_map(|(entity, user_tag, client_tag)| {
            quotas.value(&entity, key).map(|bound| ResolvedQuota {
                bound,
                sensor: (
                    if user_tag {
                        user.to_string()
                    } else {
                        String::new()
                    },
                    if client_tag {
                        client_id.to_string()
                    } else {
                        String::new()
                    },
                ),
                entity,
            })
        })
}

/// Sensors idle this long are dropped (Kafka expires quota sensors after an hour).
const SENSOR_EXPIRY_MS: i64 = 3_600_000;
/// Past this many sensors, idle ones are looked for on the next record.
const SENSOR_SWEEP_AT: usize = 1024;

struct Sensor {
    rate: SampledRate,
    last_ms: i64,
}

/// One quota type's sensors.
pub struct ClientQuotaManager {
    quota_type: QuotaType,
    num_samples: usize,
    window_ms: i64,
    /// The cap on a throttle (the request quota caps it at one window, as Kafka does).
    max_throttle_ms: Option<i64>,
    sensors: Mutex<HashMap<(String, String), Sensor>>,
}

impl ClientQuotaManager {
    pub fn new(
        quota_type: QuotaType,
        num_samples: usize,
        window_ms: i64,
        max_throttle_ms: Option<i64>,
    ) -> ClientQuotaManager {
        ClientQuotaManager {
            quota_type,
            num_samples: num_samples.max(1),
            window_ms: window_ms.max(1),
            max_throttle_ms,
            sensors: Mutex::new(HashMap::new()),
        }
    }

    pub fn quota_type(&self) -> QuotaType {
        self.quota_type
    }

    /// The quota that applies to this client, if any entity sets one.
    pub fn quota(
        &self,
        quotas: &ClientQuotas,
        user: &str,
        client_id: &str,
    ) -> Option<ResolvedQuota> {
        resolve(quotas, self.quota_type.key(), user, client_id)
    }

    /// Records `value` against the client's quota and returns the throttle time it earns
    /// (Kafka's `recordAndGetThrottleTimeMs`: record, then measure; over the bound the time is
    /// what brings the rate back to it). Zero, recording nothing, when no quota applies.
    pub fn record_and_get_throttle_time_ms(
        &self,
        quotas: &ClientQuotas,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: i64,
    ) -> i64 {
        let Some(q) = self.quota(quotas, user, client_id) else {
            return 0;
        };
        let mut sensors = self.sensors.lock();
        if sensors.len() >= SENSOR_SWEEP_AT {
            sensors.retain(|_, s| now_ms - s.last_ms < SENSOR_EXPIRY_MS);
        }
        let sensor = sensors.entry(q.sensor).or_insert_with(|| Sensor {
            rate: SampledRate::new(self.num_samples, self.window_ms),
            last_ms: now_ms,
        });
        sensor.last_ms = now_ms;
        sensor.rate.record(value, now_ms);
        let rate = sensor.rate.measure(now_ms);
        let window = sensor.rate.window_size_ms(now_ms);
        let throttle = throttle_time_ms(rate, q.bound, window);
        match self.max_throttle_ms {
            Some(max) => throttle.min(max),
            None => throttle,
        }
    }

    /// Takes back a value recorded at `now_ms` (a fetch answered empty because throttled).
    pub fn unrecord(
        &self,
        quotas: &ClientQuotas,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: i64,
    ) {
        let Some(q) = self.quota(quotas, user, client_id) else {
            return;
        };
        if let Some(s) = self.sensors.lock().get_mut(&q.sensor) {
            s.rate.unrecord(value, now_ms);
        }
    }

    /// The most a client may take in one quota window span (Kafka's
    /// `getMaxValueInQuotaWindow`: bound x (samples - 1) x window), which caps a fetch's size;
    /// None without a quota.
    pub fn max_value_in_quota_window(
        &self,
        quotas: &ClientQuotas,
        user: &str,
        client_id: &str,
    ) -> Option<f64> {
        self.quota(quotas, user, client_id)
            .map(|q| q.bound * (self.num_samples as f64 - 1.0) * (self.window_ms as f64 / 1000.0))
    }

    /// The rate the client's sensor measures now (for tests and metrics).
    pub fn measured_rate(&self, sensor: &(String, String), now_ms: i64) -> Option<f64> {
        self.sensors
            .lock()
            .get_mut(sensor)
            .map(|s| s.rate.measure(now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::client_quotas::QuotaEntity;

    fn set(q: &mut ClientQuotas, user: Option<Option<&str>>, client: Option<Option<&str>>, v: f64) {
        let mut parts = Vec::new();
        if let Some(u) = user {
            parts.push((ENTITY_USER, u));
        }
        if let Some(c) = client {
            parts.push((ENTITY_CLIENT_ID, c));
        }
        q.apply(&QuotaEntity::new(parts), PRODUCER_BYTE_RATE, Some(v));
    }

    #[test]
    fn the_most_specific_entity_wins_in_kafkas_order() {
        let mut q = ClientQuotas::default();
        let bound = |q: &ClientQuotas| {
            resolve(q, PRODUCER_BYTE_RATE, "alice", "app").map(|r| (r.bound, r.sensor))
        };
        let tags = |u: &str, c: &str| (u.to_string(), c.to_string());
        assert_eq!(bound(&q), None);
        // Added from the least to the most specific: each new one takes over.
        set(&mut q, None, Some(None), 8.0);
        assert_eq!(bound(&q), Some((8.0, tags("", "app"))));
        set(&mut q, None, Some(Some("app")), 7.0);
        assert_eq!(bound(&q), Some((7.0, tags("", "app"))));
        set(&mut q, Some(None), None, 6.0);
        assert_eq!(bound(&q), Some((6.0, tags("alice", ""))));
        set(&mut q, Some(None), Some(None), 5.0);
        assert_eq!(bound(&q), Some((5.0, tags("alice", "app"))));
        set(&mut q, Some(None), Some(Some("app")), 4.0);
        assert_eq!(bound(&q), Some((4.0, tags("alice", "app"))));
        set(&mut q, Some(Some("alice")), None, 3.0);
        assert_eq!(bound(&q), Some((3.0, tags("alice", ""))));
        set(&mut q, Some(Some("alice")), Some(None), 2.0);
        assert_eq!(bound(&q), Some((2.0, tags("alice", "app"))));
        set(&mut q, Some(Some("alice")), Some(Some("app")), 1.0);
        assert_eq!(bound(&q), Some((1.0, tags("alice", "app"))));
        // Another user of the same client-id falls back to the default-user entities.
        assert_eq!(
            resolve(&q, PRODUCER_BYTE_RATE, "bob", "app").map(|r| r.bound),
            Some(4.0)
        );
        // Another client of alice: alice + default client-id.
        assert_eq!(
            resolve(&q, PRODUCER_BYTE_RATE, "alice", "other").map(|r| r.bound),
            Some(2.0)
        );
        // A key nobody set resolves to nothing.
        assert_eq!(resolve(&q, CONSUMER_BYTE_RATE, "alice", "app"), None);
    }

    #[test]
    fn a_client_over_its_rate_is_throttled_by_kafkas_formula() {
        let mut q = ClientQuotas::default();
        set(&mut q, None, Some(Some("app")), 1000.0);
        let m = ClientQuotaManager::new(QuotaType::Produce, 11, 1000, None);
        // 10 KB in the first ms: measured over 10 windows, 1 KB/s, exactly the bound.
        assert_eq!(
            m.record_and_get_throttle_time_ms(&q, "ANONYMOUS", "app", 10_000.0, 0),
            0
        );
        // 2 KB more: 1.2 KB/s over 10 s, 20 % over: 2 s.
        assert_eq!(
            m.record_and_get_throttle_time_ms(&q, "ANONYMOUS", "app", 2_000.0, 0),
            2_000
        );
        // A client without a quota is neither throttled nor measured.
        assert_eq!(
            m.record_and_get_throttle_time_ms(&q, "ANONYMOUS", "free", 1e9, 0),
            0
        );
        assert_eq!(m.measured_rate(&(String::new(), "free".into()), 0), None);
        assert_eq!(
            m.measured_rate(&(String::new(), "app".into()), 0),
            Some(1200.0)
        );
        // The cap on request throttles.
        let r = ClientQuotaManager::new(QuotaType::Produce, 11, 1000, Some(1000));
        assert_eq!(
            r.record_and_get_throttle_time_ms(&q, "u", "app", 1e6, 0),
            1000
        );
        assert_eq!(m.max_value_in_quota_window(&q, "u", "app"), Some(10_000.0));
    }

    #[test]
    fn a_user_quota_is_shared_by_the_users_clients() {
        let mut q = ClientQuotas::default();
        set(&mut q, Some(Some("alice")), None, 1000.0);
        let m = ClientQuotaManager::new(QuotaType::Produce, 11, 1000, None);
        assert_eq!(
            m.record_and_get_throttle_time_ms(&q, "alice", "a", 6_000.0, 0),
            0
        );
        // The second client adds to the same sensor: 12 KB over 10 s against 1 KB/s.
        assert_eq!(
            m.record_and_get_throttle_time_ms(&q, "alice", "b", 6_000.0, 0),
            2_000
        );
    }
}
