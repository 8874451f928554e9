//! GetTelemetrySubscriptions (key 71), version 0 (KIP-714): an empty subscription, as Kafka
//! answers without a metrics receiver plugin (see `coordinator::client_metrics`). Not
//! advertised in ApiVersions, as Kafka leaves it out without a receiver; served for a client
//! that sends it anyway.
use super::ConnectionContext;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::get_telemetry_subscriptions_request::GetTelemetrySubscriptionsRequest;
use crate::protocol::messages::get_telemetry_subscriptions_response::GetTelemetrySubscriptionsResponse;

pub fn handle(
    broker: &Broker,
    request: &GetTelemetrySubscriptionsRequest,
) -> GetTelemetrySubscriptionsResponse {
    match broker
        .client_metrics
        .get_subscription(request.client_instance_id, broker.now_ms())
    {
        Ok(s) => GetTelemetrySubscriptionsResponse {
            throttle_time_ms: 0,
            error_code: 0,
            client_instance_id: s.client_instance_id,
            subscription_id: s.subscription_id,
            accepted_compression_types: s.accepted_compression_types,
            push_interval_ms: s.push_interval_ms,
            telemetry_max_bytes: s.telemetry_max_bytes,
            delta_temporality: s.delta_temporality,
            requested_metrics: s.requested_metrics,
            ..Default::default()
        },
        Err((code, message)) => {
            tracing::debug!(%message, "GetTelemetrySubscriptions refused");
            GetTelemetrySubscriptionsResponse {
                error_code: code.code(),
                ..Default::default()
            }
        }
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: GetTelemetrySubscriptionsRequest,
    _conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let response = handle(&broker, &request);
    ready(header, Some(response))
}
