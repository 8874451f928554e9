//! SaslHandshake (key 17), versions 0-1, when it reaches the request handlers: on a listener
//! without SASL, or on an authenticated SASL connection whose session does not expire (so
//! cannot re-authenticate, KIP-368). Kafka's `KafkaApis` answers ILLEGAL_SASL_STATE there; the
//! exchange itself is `security::sasl`, run by the connection before requests get here.
use super::ConnectionContext;
use std::sync::Arc;

use super::{ready, Broker, ResponseFuture};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::sasl_handshake_request::SaslHandshakeRequest;
use crate::protocol::messages::sasl_handshake_response::SaslHandshakeResponse;

pub async fn start(
    _broker: Arc<Broker>,
    header: RequestHeader,
    _request: SaslHandshakeRequest,
    _conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    ready(
        header,
        Some(SaslHandshakeResponse {
            error_code: ErrorCode::ILLEGAL_SASL_STATE.code(),
            mechanisms: Vec::new(),
        }),
    )
}
