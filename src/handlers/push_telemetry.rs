//! PushTelemetry (key 72), version 0 (KIP-714): checked as Kafka's `ClientMetricsManager`
//! does and the metrics dropped, as Kafka does without a metrics receiver plugin (see
//! `coordinator::client_metrics`). Not advertised in ApiVersions, as in Kafka then.
use super::ConnectionContext;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::coordinator::client_metrics::Push;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::push_telemetry_request::PushTelemetryRequest;
use crate::protocol::messages::push_telemetry_response::PushTelemetryResponse;

pub fn handle(broker: &Broker, request: &PushTelemetryRequest) -> PushTelemetryResponse {
    let push = Push {
        client_instance_id: request.client_instance_id,
        subscription_id: request.subscription_id,
        terminating: request.terminating,
        compression_type: request.compression_type,
        metrics: &request.metrics,
    };
    let error_code = match broker.client_metrics.push(&push, broker.now_ms()) {
        Ok(()) => 0,
        Err((code, message)) => {
            tracing::debug!(%message, "PushTelemetry refused");
            code.code()
        }
    };
    PushTelemetryResponse {
        throttle_time_ms: 0,
        error_code,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: PushTelemetryRequest,
    _conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let response = handle(&broker, &request);
    ready(header, Some(response))
}
