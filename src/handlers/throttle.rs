//! Quota throttling shared by the handlers that enforce client quotas: who the client is for
//! the quota managers (the connection's principal name and the request's client id), the
//! request-time quota (`request_percentage`, Kafka's `ClientRequestQuotaManager`: handling
//! time as a percentage of one thread), and muting the connection for the throttle a
//! response carries (KIP-219).
use std::sync::Arc;
use std::time::Duration;

use super::{Broker, ConnectionContext};
use crate::controller::MetadataImage;
use crate::protocol::header::RequestHeader;

/// A client as the quota managers see it, with the quotas in force.
pub struct QuotaClient {
    pub image: Arc<MetadataImage>,
    pub user: String,
    pub client_id: String,
}

impl QuotaClient {
    pub fn of(broker: &Broker, header: &RequestHeader, conn: &ConnectionContext) -> QuotaClient {
        let image = if broker.cluster.is_broker {
            broker.cluster.published.borrow().clone()
        } else {
            broker.cluster.image()
        };
        QuotaClient {
            image,
            user: conn.principal().name.clone(),
            client_id: header.client_id.clone().unwrap_or_default(),
        }
    }

    /// Whether any client quota exists at all (the common case is none: nothing to measure).
    pub fn any_quota(&self) -> bool {
        !self.image.client_quotas.is_empty()
    }
}

/// Records `handling` against the client's `request_percentage` quota; the throttle it earns.
pub fn request_time_throttle_ms(broker: &Broker, client: &QuotaClient, handling: Duration) -> i64 {
    // Kafka's unit: percent of one thread over a second, so a rate of 100 is one busy thread.
    let percent_seconds = handling.as_nanos() as f64 * 100.0 / 1e9;
    broker.quotas.request.record_and_get_throttle_time_ms(
        &client.image.client_quotas,
        &client.user,
        &client.client_id,
        percent_seconds,
        broker.now_ms(),
    )
}

/// Mutes the connection for the larger of the throttles and returns it for the response's
/// `throttle_time_ms`.
pub fn apply(conn: &ConnectionContext, throttles: &[i64]) -> i32 {
    let max = throttles
        .iter()
        .copied()
        .max()
        .unwrap_or(0)
        .clamp(0, i32::MAX as i64);
    conn.throttle(max);
    max as i32
}
