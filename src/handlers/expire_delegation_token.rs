//! ExpireDelegationToken (key 40), versions 0-2 (KIP-48), as Kafka's
//! `KafkaApis.handleExpireTokenRequest` and `DelegationTokenControlManager.expireDelegationToken`:
//! refused over PLAINTEXT, anonymous TLS and token-authenticated connections
//! (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry -1); the active controller finds the token by
//! its HMAC (DELEGATION_TOKEN_NOT_FOUND) and lets only its owner and renewers change it
//! (DELEGATION_TOKEN_OWNER_MISMATCH). A negative period removes it at once
//! (RemoveDelegationToken, expiry now); otherwise an unexpired token (else
//! DELEGATION_TOKEN_EXPIRED) expires at `now + period`, capped by its max lifetime.
use std::sync::Arc;

use super::{later, ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::delegation_tokens::expire_token;
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::expire_delegation_token_request::ExpireDelegationTokenRequest;
use crate::protocol::messages::expire_delegation_token_response::ExpireDelegationTokenResponse;

fn answer(code: ErrorCode, expiry_timestamp_ms: i64) -> ExpireDelegationTokenResponse {
    ExpireDelegationTokenResponse {
        error_code: code.code(),
        expiry_timestamp_ms,
        ..Default::default()
    }
}

async fn on_controller(
    controller: Arc<ControllerService>,
    request: ExpireDelegationTokenRequest,
    principal: String,
) -> Result<ExpireDelegationTokenResponse, ControllerError> {
    let (code, expiry) = controller
        .run(move |image, _, ctx| {
            expire_token(
                &image.delegation_tokens,
                &ctx.config.delegation_tokens,
                ctx.now_ms,
                &principal,
                &request.hmac,
                request.expiry_time_period_ms,
            )
        })
        .await?;
    Ok(answer(code, expiry))
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: ExpireDelegationTokenRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if !conn.may_manage_tokens() {
        let r = answer(ErrorCode::DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1);
        return ready(header, Some(r));
    }
    let principal = conn.principal().to_string();
    let cluster = broker.cluster.clone();
    let client = conn.client(header.client_id.as_deref());
    let version = header.api_version;
    let hmac = request.hmac.clone();
    let removed = request.expiry_time_period_ms < 0;
    let settings = broker.config.delegation_tokens.clone();
    later(header, async move {
        let response = cluster
            .controller_op_within(
                ExpireDelegationTokenRequest::API_KEY,
                version,
                request,
                None,
                Some(&client),
                |controller, request| on_controller(controller, request, principal.clone()),
                |code| answer(code, -1),
            )
            .await;
        if response.error_code == 0 {
            // This broker's image shows the change (a removed token no longer logs in here)
            // before the client hears of it.
            let expiry = response.expiry_timestamp_ms;
            cluster
                .wait_until(
                    |image| match image.delegation_tokens.by_hmac(&settings, &hmac) {
                        None => true,
                        Some(t) => !removed && t.expiry_timestamp_ms == expiry,
                    },
                )
                .await;
        }
        Some(response)
    })
}
