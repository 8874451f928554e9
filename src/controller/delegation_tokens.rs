//! Delegation tokens (KIP-48) as the metadata log holds them and the controller decides them,
//! after Kafka's `DelegationTokenControlManager`, `DelegationTokenImage` and
//! `DelegationTokenManager`: a `DelegationToken` record stores a token's id, owner, requester,
//! renewers and timestamps (a renewal or a shortened expiry writes the whole record again);
//! `RemoveDelegationToken` drops it (expired by its owner, or swept by the controller once its
//! expiry or max lifetime passed). The token's HMAC is never stored: every node derives it as
//! HMAC-SHA512 of the token id under `delegation.token.secret.key`, so only nodes that share
//! the secret can authenticate token holders. A holder logs in with SCRAM (`tokenauth=true`),
//! the token id as user name and the base64 HMAC as password ([`token_scram_credential`]).
use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha512;

use super::records::MetadataRecord;
use super::scram::{ScramCredential, ScramMechanism, MIN_ITERATIONS};
use crate::error::ErrorCode;

/// Kafka's `KafkaPrincipal.USER_TYPE`: the only principal type a renewer may have.
const USER_TYPE: &str = "User";

pub use crate::config::delegation_tokens::TokenSettings;

/// The token's HMAC under the configured secret; None when tokens are disabled.
pub fn settings_hmac(settings: &TokenSettings, token_id: &str) -> Option<Vec<u8>> {
    settings.secret().map(|s| token_hmac(s, token_id))
}

/// HMAC-SHA512 of the token id (UTF-8) keyed with the secret's UTF-8 bytes, as Kafka's
/// `DelegationTokenManager.createHmac`.
pub fn token_hmac(secret_key: &str, token_id: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha512>::new_from_slice(secret_key.as_bytes()).expect("any key length");
    mac.update(token_id.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The SCRAM credential a token holder authenticates against: the password is the HMAC in
/// base64, salted afresh with the mechanism's minimum iterations (Kafka's
/// `DelegationTokenManager.prepareScramCredentials`).
pub fn token_scram_credential(mechanism: ScramMechanism, hmac: &[u8]) -> ScramCredential {
    ScramCredential::from_password(mechanism, &B64.encode(hmac), MIN_ITERATIONS)
}

/// One token (Kafka's `TokenInformation`). Principals are kept as `Type:name`, as Kafka's
/// `DelegationTokenRecord` writes them (and as the controller takes them: it does not depend
/// on `security`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenInformation {
    pub token_id: String,
    pub owner: String,
    pub requester: String,
    pub renewers: Vec<String>,
    pub issue_timestamp_ms: i64,
    pub max_timestamp_ms: i64,
    pub expiry_timestamp_ms: i64,
}

/// A `Type:name` principal as (type, name), split at the first colon as Kafka's
/// `SecurityUtils.parseKafkaPrincipal`; a text without a colon is a `User`.
pub fn split_principal(text: &str) -> (&str, &str) {
    text.split_once(':').unwrap_or((USER_TYPE, text))
}

impl TokenInformation {
    /// Kafka's `TokenInformation.ownerOrRenewer`: the owner, the requester or a renewer.
    pub fn owner_or_renewer(&self, principal: &str) -> bool {
        self.owner == principal
            || self.requester == principal
            || self.renewers.iter().any(|r| r == principal)
    }

    /// Who may renew or expire it (Kafka's `allowedToRenew`): the owner or a renewer.
    fn allowed_to_renew(&self, principal: &str) -> bool {
        self.owner == principal || self.renewers.iter().any(|r| r == principal)
    }

    /// Past its expiry or its max lifetime (Kafka compares with `<`).
    pub fn expired(&self, now_ms: i64) -> bool {
        self.max_timestamp_ms < now_ms || self.expiry_timestamp_ms < now_ms
    }
}

/// Every live token, by id: the image's part built from the token records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelegationTokens {
    pub tokens: BTreeMap<String, TokenInformation>,
}

impl DelegationTokens {
    pub fn get(&self, token_id: &str) -> Option<&TokenInformation> {
        self.tokens.get(token_id)
    }

    /// The token whose HMAC (under `settings`' secret) is `hmac` (Kafka's `tokenForHmac`).
    pub fn by_hmac(&self, settings: &TokenSettings, hmac: &[u8]) -> Option<&TokenInformation> {
        self.tokens.values().find(|t| {
            settings_hmac(settings, &t.token_id).is_some_and(|h| constant_time_eq(&h, hmac))
        })
    }

    /// Applies a token record; false for any other record.
    pub fn apply(&mut self, record: &MetadataRecord) -> bool {
        match record {
            MetadataRecord::DelegationToken { token } => {
                self.tokens.insert(token.token_id.clone(), token.clone());
                true
            }
            MetadataRecord::RemoveDelegationToken { token_id } => {
                self.tokens.remove(token_id);
                true
            }
            _ => false,
        }
    }
}

/// Compares HMACs in time independent of where they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `now + duration`, saturating as Kafka's `sum`.
fn sum(now_ms: i64, duration_ms: i64) -> i64 {
    now_ms.saturating_add(duration_ms)
}

/// A CreateDelegationToken as the controller receives it.
#[derive(Debug, Clone)]
pub struct CreateToken {
    /// `Type:name`, as every principal here.
    pub owner: String,
    pub requester: String,
    pub renewers: Vec<String>,
    /// <= 0: the configured max lifetime.
    pub max_lifetime_ms: i64,
}

/// What CreateDelegationToken answers; `token` is None on error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Created {
    pub error: ErrorCode,
    pub token: Option<TokenInformation>,
    pub hmac: Vec<u8>,
}

/// Kafka's `DelegationTokenControlManager.createDelegationToken`: a random id, the expiry
/// `now + expiry time` capped by `now + min(max lifetime, requested)`.
pub fn create_token(
    settings: &TokenSettings,
    now_ms: i64,
    request: &CreateToken,
) -> (Vec<MetadataRecord>, Created) {
    let fail = |error| {
        (
            Vec::new(),
            Created {
                error,
                token: None,
                hmac: Vec::new(),
            },
        )
    };
    if !settings.enabled() {
        return fail(ErrorCode::DELEGATION_TOKEN_AUTH_DISABLED);
    }
    if request
        .renewers
        .iter()
        .any(|r| split_principal(r).0 != USER_TYPE)
    {
        return fail(ErrorCode::INVALID_PRINCIPAL_TYPE);
    }
    let mut max_lifetime_ms = settings.max_lifetime_ms;
    if request.max_lifetime_ms > 0 {
        max_lifetime_ms = max_lifetime_ms.min(request.max_lifetime_ms);
    }
    let max_timestamp_ms = sum(now_ms, max_lifetime_ms);
    let token_id = crate::protocol::codec::Uuid::random().to_string();
    let token = TokenInformation {
        token_id: token_id.clone(),
        owner: request.owner.clone(),
        requester: request.requester.clone(),
        renewers: request.renewers.clone(),
        issue_timestamp_ms: now_ms,
        max_timestamp_ms,
        expiry_timestamp_ms: max_timestamp_ms.min(sum(now_ms, settings.expiry_time_ms)),
    };
    let hmac = settings_hmac(settings, &token_id).unwrap_or_default();
    (
        vec![MetadataRecord::DelegationToken {
            token: token.clone(),
        }],
        Created {
            error: ErrorCode::NONE,
            token: Some(token),
            hmac,
        },
    )
}

/// Kafka's `renewDelegationToken`: the owner or a renewer extends an unexpired token to
/// `now + min(expiry time, requested)`, never past its max lifetime. Returns the records and
/// (error, new expiry timestamp).
pub fn renew_token(
    tokens: &DelegationTokens,
    settings: &TokenSettings,
    now_ms: i64,
    renewer: &str,
    hmac: &[u8],
    renew_period_ms: i64,
) -> (Vec<MetadataRecord>, (ErrorCode, i64)) {
    if !settings.enabled() {
        return (Vec::new(), (ErrorCode::DELEGATION_TOKEN_AUTH_DISABLED, 0));
    }
    let Some(token) = tokens.by_hmac(settings, hmac) else {
        return (Vec::new(), (ErrorCode::DELEGATION_TOKEN_NOT_FOUND, 0));
    };
    if token.expired(now_ms) {
        return (Vec::new(), (ErrorCode::DELEGATION_TOKEN_EXPIRED, 0));
    }
    if !token.allowed_to_renew(renewer) {
        return (Vec::new(), (ErrorCode::DELEGATION_TOKEN_OWNER_MISMATCH, 0));
    }
    let mut period = settings.expiry_time_ms;
    if renew_period_ms > 0 {
        period = period.min(renew_period_ms);
    }
    let expiry = token.max_timestamp_ms.min(sum(now_ms, period));
    let mut renewed = token.clone();
    renewed.expiry_timestamp_ms = expiry;
    (
        vec![MetadataRecord::DelegationToken { token: renewed }],
        (ErrorCode::NONE, expiry),
    )
}

/// Kafka's `expireDelegationToken`: a negative period removes the token at once (even an
/// expired one); otherwise an unexpired token's expiry becomes `now + period`, capped by its
/// max lifetime. Returns the records and (error, expiry timestamp).
pub fn expire_token(
    tokens: &DelegationTokens,
    settings: &TokenSettings,
    now_ms: i64,
    requester: &str,
    hmac: &[u8],
    expiry_time_period_ms: i64,
) -> (Vec<MetadataRecord>, (ErrorCode, i64)) {
    if !settings.enabled() {
        return (Vec::new(), (ErrorCode::DELEGATION_TOKEN_AUTH_DISABLED, 0));
    }
    let Some(token) = tokens.by_hmac(settings, hmac) else {
        return (Vec::new(), (ErrorCode::DELEGATION_TOKEN_NOT_FOUND, 0));
    };
    if !token.allowed_to_renew(requester) {
        return (Vec::new(), (ErrorCode::DELEGATION_TOKEN_OWNER_MISMATCH, 0));
    }
    if expiry_time_period_ms < 0 {
        return (
            vec![MetadataRecord::RemoveDelegationToken {
                token_id: token.token_id.clone(),
            }],
            (ErrorCode::NONE, now_ms),
        );
    }
    if token.expired(now_ms) {
        return (Vec::new(), (ErrorCode::DELEGATION_TOKEN_EXPIRED, 0));
    }
    let expiry = token
        .max_timestamp_ms
        .min(sum(now_ms, expiry_time_period_ms));
    let mut changed = token.clone();
    changed.expiry_timestamp_ms = expiry;
    (
        vec![MetadataRecord::DelegationToken { token: changed }],
        (ErrorCode::NONE, expiry),
    )
}

/// Kafka's `sweepExpiredDelegationTokens`: a removal for every expired token.
pub fn sweep_expired_tokens(tokens: &DelegationTokens, now_ms: i64) -> Vec<MetadataRecord> {
    tokens
        .tokens
        .values()
        .filter(|t| t.expired(now_ms))
        .map(|t| {
            tracing::info!(token_id = %t.token_id, owner = %t.owner, "delegation token expired");
            MetadataRecord::RemoveDelegationToken {
                token_id: t.token_id.clone(),
            }
        })
        .collect()
}

/// Kafka's `DelegationTokenManager.filterToken` for DescribeDelegationToken: tokens of the
/// requested owners (None: all), that the requester owns, requested or renews, or may
/// describe (`may_describe(token_id, owner)`: DESCRIBE on the token or DESCRIBE_TOKENS on its
/// owner).
pub fn describe_tokens<'a>(
    tokens: &'a DelegationTokens,
    requester: &str,
    owners: Option<&[String]>,
    may_describe: &dyn Fn(&str, &str) -> bool,
) -> Vec<&'a TokenInformation> {
    tokens
        .tokens
        .values()
        .filter(|t| {
            if let Some(owners) = owners {
                if !owners.iter().any(|o| t.owner_or_renewer(o)) {
                    return false;
                }
            }
            t.owner_or_renewer(requester) || may_describe(&t.token_id, &t.owner)
        })
        .collect()
}

#[cfg(test)]
#[path = "delegation_tokens_tests.rs"]
mod tests;
