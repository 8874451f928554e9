//! DescribeDelegationToken (key 41), versions 0-3 (KIP-48; v3 adds the requester, KIP-373),
//! answered from this broker's metadata image as Kafka's
//! `KafkaApis.handleDescribeTokensRequest`: refused over PLAINTEXT, anonymous TLS and
//! token-authenticated connections (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) and without a
//! secret (DELEGATION_TOKEN_AUTH_DISABLED); an empty owner list describes nothing, a null one
//! every owner. A caller sees the tokens it owns, requested or renews, and others' tokens
//! where it has DESCRIBE on the `DelegationToken` resource or DESCRIBE_TOKENS on the owner's
//! `User` resource. Each token comes with its HMAC, derived from the shared secret.
use std::sync::Arc;

use super::{ready, Broker, ConnectionContext, ResponseFuture};
use crate::config::delegation_tokens::TokenSettings;
use crate::controller::delegation_tokens::{
    describe_tokens, settings_hmac, split_principal, DelegationTokens,
};
use crate::error::ErrorCode;
use crate::protocol::acl::{operation, resource_type};
use crate::protocol::header::RequestHeader;
use crate::protocol::messages::describe_delegation_token_request::DescribeDelegationTokenRequest;
use crate::protocol::messages::describe_delegation_token_response::*;
use crate::security::KafkaPrincipal;

fn refused(code: ErrorCode) -> DescribeDelegationTokenResponse {
    DescribeDelegationTokenResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

/// The answer for `requester`; `may_describe(token_id, owner)` is the ACL check for tokens it
/// neither owns, requested nor renews.
pub fn handle(
    tokens: &DelegationTokens,
    settings: &TokenSettings,
    requester: &KafkaPrincipal,
    request: &DescribeDelegationTokenRequest,
    may_describe: &dyn Fn(&str, &str) -> bool,
) -> DescribeDelegationTokenResponse {
    if !settings.enabled() {
        return refused(ErrorCode::DELEGATION_TOKEN_AUTH_DISABLED);
    }
    let owners: Option<Vec<String>> = request.owners.as_ref().map(|owners| {
        owners
            .iter()
            .map(|o| format!("{}:{}", o.principal_type, o.principal_name))
            .collect()
    });
    if owners.as_ref().is_some_and(|o| o.is_empty()) {
        return refused(ErrorCode::NONE);
    }
    let described = describe_tokens(
        tokens,
        &requester.to_string(),
        owners.as_deref(),
        may_describe,
    )
    .into_iter()
    .map(|t| {
        let (owner_type, owner_name) = split_principal(&t.owner);
        let (requester_type, requester_name) = split_principal(&t.requester);
        DescribedDelegationToken {
            principal_type: owner_type.to_string(),
            principal_name: owner_name.to_string(),
            token_requester_principal_type: requester_type.to_string(),
            token_requester_principal_name: requester_name.to_string(),
            issue_timestamp: t.issue_timestamp_ms,
            expiry_timestamp: t.expiry_timestamp_ms,
            max_timestamp: t.max_timestamp_ms,
            token_id: t.token_id.clone(),
            hmac: settings_hmac(settings, &t.token_id)
                .unwrap_or_default()
                .into(),
            renewers: t
                .renewers
                .iter()
                .map(|r| {
                    let (principal_type, principal_name) = split_principal(r);
                    DescribedDelegationTokenRenewer {
                        principal_type: principal_type.to_string(),
                        principal_name: principal_name.to_string(),
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        }
    })
    .collect();
    DescribeDelegationTokenResponse {
        tokens: described,
        ..Default::default()
    }
}

pub async fn start(
    broker: Arc<Broker>,
    header: RequestHeader,
    request: DescribeDelegationTokenRequest,
    conn: Arc<ConnectionContext>,
) -> ResponseFuture {
    if !conn.may_manage_tokens() {
        let r = refused(ErrorCode::DELEGATION_TOKEN_REQUEST_NOT_ALLOWED);
        return ready(header, Some(r));
    }
    let authz = super::common::authz::Authz::new(&broker, &conn);
    let may_describe = |token_id: &str, owner: &str| {
        authz.allowed(
            operation::DESCRIBE,
            resource_type::DELEGATION_TOKEN,
            token_id,
        ) || authz.allowed(operation::DESCRIBE_TOKENS, resource_type::USER, owner)
    };
    let image = broker.cluster.image();
    let response = handle(
        &image.delegation_tokens,
        &broker.config.delegation_tokens,
        &conn.principal(),
        &request,
        &may_describe,
    );
    ready(header, Some(response))
}
