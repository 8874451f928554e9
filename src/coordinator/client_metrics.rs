//! Client telemetry (KIP-714) as Kafka's `ClientMetricsManager` serves it without a metrics
//! receiver plugin: GetTelemetrySubscriptions hands every client an empty subscription (no
//! requested metrics) and a client instance id when it sent the zero id; PushTelemetry is
//! validated (instance id, terminating, push interval, subscription id, compression type,
//! size) and the metrics are dropped, as there is no receiver.
//!
//! As in Kafka, these APIs are not advertised in ApiVersions when no receiver is configured
//! (`ApiVersionsResponse` leaves keys 71 and 72 out unless `clientTelemetryEnabled`), so the
//! Java client and librdkafka never send them; a client that sends them anyway gets Kafka's
//! answers. The per-instance state is bounded (the oldest entries expire).
//!
//! Like the coordinators, it is sans-io: the caller passes the time.
use std::collections::HashMap;

use parking_lot::Mutex;

use crate::error::ErrorCode;
use crate::protocol::codec::Uuid;

/// Kafka's `ClientMetricsConfigs.DEFAULT_INTERVAL_MS`: 5 minutes.
pub const PUSH_INTERVAL_MS: i32 = 300_000;
/// Kafka's `telemetry.max.bytes` default.
pub const TELEMETRY_MAX_BYTES: i32 = 1_048_576;
/// Kafka's `ClientMetricsManager.SUPPORTED_COMPRESSION_TYPES`: zstd, lz4, gzip, snappy.
pub const ACCEPTED_COMPRESSION_TYPES: &[i8] = &[4, 3, 1, 2];
/// Instances tracked at most (Kafka's cache holds 16384).
pub const MAX_INSTANCES: usize = 16_384;
/// An instance not heard from for this long is forgotten (Kafka: 3 push intervals).
const EXPIRY_MS: i64 = 3 * PUSH_INTERVAL_MS as i64;

/// An empty subscription for one client instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    pub client_instance_id: Uuid,
    pub subscription_id: i32,
    pub accepted_compression_types: Vec<i8>,
    pub push_interval_ms: i32,
    pub telemetry_max_bytes: i32,
    pub delta_temporality: bool,
    pub requested_metrics: Vec<String>,
}

/// One PushTelemetry request's fields that matter here.
#[derive(Debug, Clone)]
pub struct Push<'a> {
    pub client_instance_id: Uuid,
    pub subscription_id: i32,
    pub terminating: bool,
    pub compression_type: i8,
    pub metrics: &'a [u8],
}

#[derive(Debug, Clone)]
struct Instance {
    subscription_id: i32,
    last_get_ms: Option<i64>,
    last_push_ms: Option<i64>,
    last_seen_ms: i64,
    terminating: bool,
}

/// The client instances known to this broker.
#[derive(Debug, Default)]
pub struct ClientMetrics {
    instances: Mutex<HashMap<[u8; 16], Instance>>,
}

/// Kafka's `Uuid.RESERVED`: the zero and the metadata-topic ids.
fn reserved(id: &Uuid) -> bool {
    id.0 == [0; 16]
        || id.0 == {
            let mut one = [0u8; 16];
            one[15] = 1;
            one
        }
}

/// A stable id of the (empty) subscription for one instance (Kafka hashes the subscription's
/// metrics and interval with the instance id).
fn subscription_id(id: &Uuid) -> i32 {
    let mut bytes = id.0.to_vec();
    bytes.extend_from_slice(&PUSH_INTERVAL_MS.to_be_bytes());
    crc32c::crc32c(&bytes) as i32
}

impl ClientMetrics {
    fn instance<'a>(
        instances: &'a mut HashMap<[u8; 16], Instance>,
        id: &Uuid,
        now_ms: i64,
    ) -> &'a mut Instance {
        if !instances.contains_key(&id.0) && instances.len() >= MAX_INSTANCES {
            instances.retain(|_, i| now_ms - i.last_seen_ms < EXPIRY_MS);
            if instances.len() >= MAX_INSTANCES {
                // Still full of live clients: the least recently seen makes room.
                if let Some(oldest) = instances
                    .iter()
                    .min_by_key(|(_, i)| i.last_seen_ms)
                    .map(|(k, _)| *k)
                {
                    instances.remove(&oldest);
                }
            }
        }
        let entry = instances.entry(id.0).or_insert_with(|| Instance {
            subscription_id: subscription_id(id),
            last_get_ms: None,
            last_push_ms: None,
            last_seen_ms: now_ms,
            terminating: false,
        });
        entry.last_seen_ms = now_ms;
        entry
    }

    /// GetTelemetrySubscriptions: the subscription, or THROTTLING_QUOTA_EXCEEDED when the
    /// instance asks again before its push interval has passed.
    pub fn get_subscription(
        &self,
        client_instance_id: Uuid,
        now_ms: i64,
    ) -> Result<Subscription, (ErrorCode, String)> {
        let id = if client_instance_id.0 == [0; 16] {
            Uuid::random()
        } else {
            client_instance_id
        };
        let mut instances = self.instances.lock();
        let instance = Self::instance(&mut instances, &id, now_ms);
        if let Some(last) = instance.last_get_ms {
            if now_ms - last < PUSH_INTERVAL_MS as i64 {
                return Err((
                    ErrorCode::THROTTLING_QUOTA_EXCEEDED,
                    format!(
                        "Request from the client [{id}] arrived before the next push interval time"
                    ),
                ));
            }
        }
        instance.last_get_ms = Some(now_ms);
        Ok(Subscription {
            client_instance_id: id,
            subscription_id: instance.subscription_id,
            accepted_compression_types: ACCEPTED_COMPRESSION_TYPES.to_vec(),
            push_interval_ms: PUSH_INTERVAL_MS,
            telemetry_max_bytes: TELEMETRY_MAX_BYTES,
            delta_temporality: true,
            requested_metrics: Vec::new(),
        })
    }

    /// PushTelemetry: Kafka's checks, in Kafka's order; accepted metrics are dropped.
    pub fn push(&self, push: &Push<'_>, now_ms: i64) -> Result<(), (ErrorCode, String)> {
        let id = push.client_instance_id;
        if reserved(&id) {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!("Invalid request from the client [{id}], invalid client instance id"),
            ));
        }
        let mut instances = self.instances.lock();
        let instance = Self::instance(&mut instances, &id, now_ms);
        let was_terminating = instance.terminating;
        instance.terminating = push.terminating;
        if was_terminating {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!(
                    "Client [{id}] sent the previous request with state terminating to TRUE, \
                     can not acceptany requests after that"
                ),
            ));
        }
        let early = instance
            .last_push_ms
            .is_some_and(|last| now_ms - last < PUSH_INTERVAL_MS as i64);
        if early && !push.terminating {
            return Err((
                ErrorCode::THROTTLING_QUOTA_EXCEEDED,
                format!(
                    "Request from the client [{id}] arrived before the next push interval time"
                ),
            ));
        }
        instance.last_push_ms = Some(now_ms);
        if push.subscription_id != instance.subscription_id {
            return Err((
                ErrorCode::UNKNOWN_SUBSCRIPTION_ID,
                format!("Unknown client subscription id for the client [{id}]"),
            ));
        }
        // 0 (none) is always accepted, as Kafka's `isSupportedCompressionType`.
        if push.compression_type != 0
            && !ACCEPTED_COMPRESSION_TYPES.contains(&push.compression_type)
        {
            return Err((
                ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
                format!(
                    "Unknown compression type [{}] is received in telemetry request from [{id}]",
                    push.compression_type
                ),
            ));
        }
        if push.metrics.len() > TELEMETRY_MAX_BYTES as usize {
            return Err((
                ErrorCode::TELEMETRY_TOO_LARGE,
                format!(
                    "Telemetry request from [{id}] is larger than the maximum allowed size \
                     [{TELEMETRY_MAX_BYTES}]"
                ),
            ));
        }
        Ok(())
    }

    /// Client instances tracked now.
    pub fn len(&self) -> usize {
        self.instances.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(id: Uuid, subscription_id: i32) -> Push<'static> {
        Push {
            client_instance_id: id,
            subscription_id,
            terminating: false,
            compression_type: 0,
            metrics: b"",
        }
    }

    #[test]
    fn empty_subscription_then_pushes_are_checked() {
        let m = ClientMetrics::default();
        let s = m.get_subscription(Uuid([0; 16]), 0).unwrap();
        assert_ne!(s.client_instance_id.0, [0; 16]);
        assert!(s.requested_metrics.is_empty());
        assert_eq!(s.accepted_compression_types, vec![4, 3, 1, 2]);
        assert_eq!(
            (s.push_interval_ms, s.telemetry_max_bytes),
            (300_000, 1_048_576)
        );
        let id = s.client_instance_id;
        // Asking again before the push interval is throttled.
        assert_eq!(
            m.get_subscription(id, 1000).unwrap_err().0,
            ErrorCode::THROTTLING_QUOTA_EXCEEDED
        );
        assert_eq!(
            m.get_subscription(id, 300_000).unwrap().subscription_id,
            s.subscription_id
        );
        assert_eq!(m.push(&push(id, s.subscription_id), 10), Ok(()));
        assert_eq!(
            m.push(&push(id, s.subscription_id), 20).unwrap_err().0,
            ErrorCode::THROTTLING_QUOTA_EXCEEDED
        );
        let later = 400_000;
        assert_eq!(
            m.push(&push(id, s.subscription_id + 1), later)
                .unwrap_err()
                .0,
            ErrorCode::UNKNOWN_SUBSCRIPTION_ID
        );
        let mut p = push(id, s.subscription_id);
        p.compression_type = 9;
        p.terminating = true;
        assert_eq!(
            m.push(&p, later + 1).unwrap_err().0,
            ErrorCode::UNSUPPORTED_COMPRESSION_TYPE
        );
        // After a terminating push nothing more is accepted.
        assert_eq!(
            m.push(&push(id, s.subscription_id), later + 900_000)
                .unwrap_err()
                .0,
            ErrorCode::INVALID_REQUEST
        );
        assert_eq!(
            m.push(&push(Uuid([0; 16]), 1), 0).unwrap_err(),
            (
                ErrorCode::INVALID_REQUEST,
                "Invalid request from the client [AAAAAAAAAAAAAAAAAAAAAA], invalid client \
                 instance id"
                    .into()
            )
        );
        let big = vec![0u8; TELEMETRY_MAX_BYTES as usize + 1];
        let other = m.get_subscription(Uuid([0; 16]), 0).unwrap();
        let mut p = push(other.client_instance_id, other.subscription_id);
        p.metrics = &big;
        assert_eq!(m.push(&p, 0).unwrap_err().0, ErrorCode::TELEMETRY_TOO_LARGE);
    }

    #[test]
    fn the_instance_table_is_bounded() {
        let m = ClientMetrics::default();
        for i in 0..MAX_INSTANCES + 10 {
            m.get_subscription(Uuid([0; 16]), i as i64).unwrap();
        }
        assert_eq!(m.len(), MAX_INSTANCES);
    }
}
