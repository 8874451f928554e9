//! SaslAuthenticate (key 36), versions 0-2, when it reaches the request handlers: without a
//! SaslHandshake before it on this connection (no SASL listener, or already authenticated).
//! Kafka's `KafkaApis` answers ILLEGAL_SASL_STATE with the message below.
use super::ConnectionContext;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::sasl_authenticate_request::SaslAuthenticateRequest;
use crate::protocol::messages::sasl_authenticate_response::SaslAuthenticateResponse;

pub async fn start(
    _broker: Arc<Broker>,
    header: RequestHeader,
    _request: SaslAuthenticateRequest,
    _conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    ready(
        header,
        Some(SaslAuthenticateResponse {
            error_code: ErrorCode::ILLEGAL_SASL_STATE.code(),
            error_message: Some(
                "SaslAuthenticate request received after successful authentication".into(),
            ),
            ..Default::default()
        }),
    )
}
