//! CreateDelegationToken (key 38), versions 0-3 (KIP-48; v3 names an owner other than the
//! requester, KIP-373), as Kafka's `KafkaApis.handleCreateTokenRequest` and the controller's
//! `DelegationTokenControlManager`: refused over PLAINTEXT, anonymous TLS and token-
//! authenticated connections (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); a token for another
//! owner needs CREATE_TOKENS on that `User` resource (DELEGATION_TOKEN_AUTHORIZATION_FAILED);
//! renewers must be `User` principals (INVALID_PRINCIPAL_TYPE). The active controller decides
//! the token and commits a DelegationToken record (a broker forwards the request in an
//! Envelope, so the controller knows the client's principal); the answer waits until this
//! broker's image holds the token, so a token login right after it succeeds here.
use std::sync::Arc;

use super::{later, ready, Broker, ConnectionContext, ResponseFuture};
use crate::controller::delegation_tokens::{create_token, split_principal, CreateToken, Created};
use crate::controller::service::{ControllerError, ControllerService};
use crate::error::ErrorCode;
use crate::protocol::acl::{operation, resource_type};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::create_delegation_token_request::CreateDelegationTokenRequest;
use crate::protocol::messages::create_delegation_token_response::CreateDelegationTokenResponse;
use crate::security::KafkaPrincipal;

/// The owner a request names (v3), else the requester (Kafka: a null or empty owner name).
pub fn owner_of(
    request: &CreateDelegationTokenRequest,
    requester: &KafkaPrincipal,
) -> KafkaPrincipal {
    match request.owner_principal_name.as_deref() {
        Some(name) if !name.is_empty() => KafkaPrincipal {
            principal_type: request.owner_principal_type.clone().unwrap_or_default(),
            name: name.to_string(),
        },
        _ => requester.clone(),
    }
}

/// An answer without a token: Kafka's `prepareResponse` with timestamps -1 and no id/HMAC.
fn refused(
    code: ErrorCode,
    owner: &KafkaPrincipal,
    requester: &KafkaPrincipal,
) -> CreateDelegationTokenResponse {
    CreateDelegationTokenResponse {
        error_code: code.code(),
        principal_type: owner.principal_type.clone(),
        principal_name: owner.name.clone(),
        token_requester_principal_type: requester.principal_type.clone(),
        token_requester_principal_name: requester.name.clone(),
        issue_timestamp_ms: -1,
        expiry_timestamp_ms: -1,
        max_timestamp_ms: -1,
        ..Default::default()
    }
}

/// The response for the controller's decision.
pub fn response(
    created: &Created,
    owner: &KafkaPrincipal,
    requester: &KafkaPrincipal,
) -> CreateDelegationTokenResponse {
    let Some(token) = &created.token else {
        // Kafka's controller leaves the timestamps at 0 when it refuses.
        return CreateDelegationTokenResponse {
            issue_timestamp_ms: 0,
            expiry_timestamp_ms: 0,
            max_timestamp_ms: 0,
            ..refused(created.error, owner, requester)
        };
    };
    let (owner_type, owner_name) = split_principal(&token.owner);
    let (requester_type, requester_name) = split_principal(&token.requester);
    CreateDelegationTokenResponse {
        error_code: created.error.code(),
        principal_type: owner_type.to_string(),
        principal_name: owner_name.to_string(),
        token_requester_principal_type: requester_type.to_string(),
        token_requester_principal_name: requester_name.to_string(),
        issue_timestamp_ms: token.issue_timestamp_ms,
        expiry_timestamp_ms: token.expiry_timestamp_ms,
        max_timestamp_ms: token.max_timestamp_ms,
        token_id: token.token_id.clone(),
        hmac: created.hmac.clone().into(),
        ..Default::default()
    }
}

/// The active controller's side: decides and commits the token.
async fn on_controller(
    controller: Arc<ControllerService>,
    create: CreateToken,
    owner: KafkaPrincipal,
    requester: KafkaPrincipal,
) -> Result<CreateDelegationTokenResponse, ControllerError> {
    let created = controller
        .run(move |_, _, ctx| create_token(&ctx.config.delegation_tokens, ctx.now_ms, &create))
        .await?;
    Ok(response(&created, &owner, &requester))
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: CreateDelegationTokenRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    let requester = (*conn.principal()).clone();
    let owner = owner_of(&request, &requester);
    if !conn.may_manage_tokens() {
        let r = refused(
            ErrorCode::DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
            &owner,
            &requester,
        );
        return ready(header, Some(r));
    }
    if owner != requester
        && !super::common::authz::Authz::new(&broker, &conn).allowed(
            operation::CREATE_TOKENS,
            resource_type::USER,
            &owner.to_string(),
        )
    {
        let r = refused(
            ErrorCode::DELEGATION_TOKEN_AUTHORIZATION_FAILED,
            &owner,
            &requester,
        );
        return ready(header, Some(r));
    }
    if request
        .renewers
        .iter()
        .any(|r| r.principal_type != crate::security::principal::USER_TYPE)
    {
        let r = refused(ErrorCode::INVALID_PRINCIPAL_TYPE, &owner, &requester);
        return ready(header, Some(r));
    }
    let create = CreateToken {
        owner: owner.to_string(),
        requester: requester.to_string(),
        renewers: request
            .renewers
            .iter()
            .map(|r| format!("{}:{}", r.principal_type, r.principal_name))
            .collect(),
        max_lifetime_ms: request.max_lifetime_ms,
    };
    let cluster = broker.cluster.clone();
    let client = conn.client(header.client_id.as_deref());
    let version = header.api_version;
    later(header, async move {
        // Forwarded in an Envelope: the controller runs this handler as the client.
        let response = cluster
            .controller_op_within(
                CreateDelegationTokenRequest::API_KEY,
                version,
                request,
                None,
                Some(&client),
                |controller, _| {
                    on_controller(controller, create.clone(), owner.clone(), requester.clone())
                },
                |code| refused(code, &owner, &requester),
            )
            .await;
        if response.error_code == 0 {
            let id = response.token_id.clone();
            cluster
                .wait_until(|image| image.delegation_tokens.get(&id).is_some())
                .await;
        }
        Some(response)
    })
}
