//! RenewDelegationToken (key 39), versions 0-2 (KIP-48), as Kafka's
//! `KafkaApis.handleRenewTokenRequest` and `DelegationTokenControlManager.renewDelegationToken`:
//! refused over PLAINTEXT, anonymous TLS and token-authenticated connections
//! (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, expiry -1); the active controller finds the token by
//! its HMAC (DELEGATION_TOKEN_NOT_FOUND), refuses an expired one (DELEGATION_TOKEN_EXPIRED) and
//! anyone but its owner and renewers (DELEGATION_TOKEN_OWNER_MISMATCH), and commits the new
//! expiry, `now + min(renew period, delegation.token.expiry.time.ms)` capped by the token's
//! max lifetime. Forwarded in an Envelope, so the controller judges the client's principal.
use std::sync::Arc;

use super::{later, ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::delegation_tokens::renew_token;
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::renew_delegation_token_request::RenewDelegationTokenRequest;
use crate::protocol::messages::renew_delegation_token_response::RenewDelegationTokenResponse;

fn answer(code: ErrorCode, expiry_timestamp_ms: i64) -> RenewDelegationTokenResponse {
    RenewDelegationTokenResponse {
        error_code: code.code(),
        expiry_timestamp_ms,
        ..Default::default()
    }
}

async fn on_controller(
    controller: Arc<ControllerService>,
    request: RenewDelegationTokenRequest,
    principal: String,
) -> Result<RenewDelegationTokenResponse, ControllerError> {
    let (code, expiry) = controller
        .run(move |image, _, ctx| {
            renew_token(
                &image.delegation_tokens,
                &ctx.config.delegation_tokens,
                ctx.now_ms,
                &principal,
                &request.hmac,
                request.renew_period_ms,
            )
        })
        .await?;
    Ok(answer(code, expiry))
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: RenewDelegationTokenRequest,
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
    let settings = broker.config.delegation_tokens.clone();
    later(header, async move {
        let response = cluster
            .controller_op_within(
                RenewDelegationTokenRequest::API_KEY,
                version,
                request,
                None,
                Some(&client),
                |controller, request| on_controller(controller, request, principal.clone()),
                |code| answer(code, -1),
            )
            .await;
        if response.error_code == 0 {
            // This broker's image shows the new expiry before the client hears of it.
            let expiry = response.expiry_timestamp_ms;
            cluster
                .wait_until(
                    |image| match image.delegation_tokens.by_hmac(&settings, &hmac) {
                        None => true,
                        Some(t) => t.expiry_timestamp_ms == expiry,
                    },
                )
                .await;
        }
        Some(response)
    })
}
