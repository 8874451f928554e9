//! Signed-JWT validation for OAUTHBEARER, as Kafka's `OAuthBearerValidatorCallbackHandler`
//! does it with its `BrokerJwtValidator` (KIP-768, jose4j underneath): a JWS in compact form
//! whose `alg` is not `none`, signed by a key of the configured JWKS (found by `kid`, its key
//! type and curve matching the algorithm, never an encryption key), with required `exp` and
//! `iat`, `exp` and `nbf` checked with `sasl.oauthbearer.clock.skew.seconds` of leeway, `iss`
//! equal to `sasl.oauthbearer.expected.issuer` when that is set, an `aud` naming one of
//! `sasl.oauthbearer.expected.audience` (a token carrying `aud` when none is expected is
//! refused, as jose4j's default audience check does), a non-blank subject claim
//! (`sasl.oauthbearer.sub.claim.name`) as the principal, and non-blank scopes. Signatures:
//! RS256/384/512, PS256/384/512, ES256 and ES384 verified with ring, ES512 (which ring lacks)
//! with RustCrypto's `p521`.
//!
//! The reason a token is refused is for the broker's log; the client reads Kafka's
//! `{"status":"invalid_token"}`.
use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;
use ring::signature;
use serde_json::{Map, Value};

use super::jwks::{self, Jwk, KeySource, PublicKey};
use super::oauthbearer::ValidToken;
use crate::config::oauth::OAuthValidation;

/// A listener's validator: its settings and the keys of its JWKS endpoint.
pub struct JwtValidator {
    settings: OAuthValidation,
    keys: Arc<KeySource>,
}

enum Verifier {
    Rsa(&'static signature::RsaParameters),
    Ec(&'static signature::EcdsaVerificationAlgorithm, &'static str),
    /// ES512: ECDSA on P-521 with SHA-512, fixed-size `r || s` (132 bytes).
    P521,
}

/// The ring verifier of a JWS `alg`.
fn verifier(alg: &str) -> Option<Verifier> {
    use signature::*;
    Some(match alg {
        "RS256" => Verifier::Rsa(&RSA_PKCS1_2048_8192_SHA256),
        "RS384" => Verifier::Rsa(&RSA_PKCS1_2048_8192_SHA384),
        "RS512" => Verifier::Rsa(&RSA_PKCS1_2048_8192_SHA512),
        "PS256" => Verifier::Rsa(&RSA_PSS_2048_8192_SHA256),
        "PS384" => Verifier::Rsa(&RSA_PSS_2048_8192_SHA384),
        "PS512" => Verifier::Rsa(&RSA_PSS_2048_8192_SHA512),
        "ES256" => Verifier::Ec(&ECDSA_P256_SHA256_FIXED, "P-256"),
        "ES384" => Verifier::Ec(&ECDSA_P384_SHA384_FIXED, "P-384"),
        "ES512" => Verifier::P521,
        _ => return None,
    })
}

/// Whether `jwk` may verify a signature made with `alg`.
fn usable(jwk: &Jwk, alg: &str, verifier: &Verifier) -> bool {
    if jwk.usage.as_deref().is_some_and(|u| u != "sig") {
        return false;
    }
    if jwk.alg.as_deref().is_some_and(|a| a != alg) {
        return false;
    }
    match (verifier, &jwk.key) {
        (Verifier::Rsa(_), PublicKey::Rsa { .. }) => true,
        (Verifier::Ec(_, curve), PublicKey::Ec { crv, .. }) => crv == curve,
        (Verifier::P521, PublicKey::Ec { crv, .. }) => crv == "P-521",
        _ => false,
    }
}

fn verify(verifier: &Verifier, key: &PublicKey, message: &[u8], sig: &[u8]) -> bool {
    match (verifier, key) {
        (Verifier::Rsa(params), PublicKey::Rsa { n, e }) => signature::RsaPublicKeyComponents {
            n: n.as_slice(),
            e: e.as_slice(),
        }
        .verify(params, message, sig)
        .is_ok(),
        (Verifier::Ec(alg, _), PublicKey::Ec { point, .. }) => {
            signature::UnparsedPublicKey::new(*alg, point)
                .verify(message, sig)
                .is_ok()
        }
        (Verifier::P521, PublicKey::Ec { point, .. }) => {
            use p521::ecdsa::signature::Verifier as _;
            use p521::ecdsa::{Signature, VerifyingKey};
            match (
                VerifyingKey::from_sec1_bytes(point),
                Signature::from_slice(sig),
            ) {
                (Ok(key), Ok(sig)) => key.verify(message, &sig).is_ok(),
                _ => false,
            }
        }
        _ => false,
    }
}

fn decode_json(part: &str, what: &str) -> Result<Map<String, Value>, String> {
    let bytes = B64URL
        .decode(part.trim_end_matches('='))
        .map_err(|e| format!("the JWS {what} is not Base64URL: {e}"))?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(format!("the JWS {what} is not a JSON object")),
    }
}

/// A NumericDate claim in seconds (RFC 7519; fractions allowed).
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<f64>, String> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| format!("The value of the '{name}' claim is not a NumericDate")),
    }
}

impl JwtValidator {
    /// The validator of `settings`, its key source shared with every listener using the same
    /// endpoint; fails when the keys cannot be loaded at all (start-up reports it).
    pub fn new(settings: &OAuthValidation) -> Result<JwtValidator, String> {
        Ok(JwtValidator {
            settings: settings.clone(),
            keys: jwks::shared(settings)?,
        })
    }

    /// Validates a token at `now_ms`; the error is the reason, for the log.
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<ValidToken, String> {
        let parts: Vec<&str> = token.split('.').collect();
        if parts.len() != 3 {
            return Err(format!(
                "a JWS compact serialization has 3 dot-separated parts, this token has {}",
                parts.len()
            ));
        }
        let header = decode_json(parts[0], "header")?;
        let alg = header
            .get("alg")
            .and_then(Value::as_str)
            .ok_or("the JWS header has no alg")?;
        if alg.eq_ignore_ascii_case("none") || parts[2].is_empty() {
            return Err(format!(
                "'{alg}' is not a permitted algorithm: a validating listener accepts only signed \
                 tokens"
            ));
        }
        let verifier = verifier(alg).ok_or_else(|| format!("unsupported JWS algorithm {alg}"))?;
        let kid = header.get("kid").and_then(Value::as_str);
        let keys = self.keys.keys();
        let candidates: Vec<&Jwk> = keys
            .iter()
            .filter(|k| kid.is_none() || k.kid.as_deref() == kid)
            .filter(|k| usable(k, alg, &verifier))
            .collect();
        if candidates.is_empty() {
            if let Some(kid) = kid {
                self.keys.key_missing(kid);
            }
            return Err(format!(
                "Unable to find a suitable verification key for JWS w/ header alg {alg}, kid {}",
                kid.unwrap_or("(none)")
            ));
        }
        let signature = B64URL
            .decode(parts[2].trim_end_matches('='))
            .map_err(|e| format!("the JWS signature is not Base64URL: {e}"))?;
        let signed = &token.as_bytes()[..parts[0].len() + 1 + parts[1].len()];
        if !candidates
            .iter()
            .any(|k| verify(&verifier, &k.key, signed, &signature))
        {
            return Err(format!(
                "JWS signature is invalid (alg {alg}, kid {})",
                kid.unwrap_or("(none)")
            ));
        }
        let claims = decode_json(parts[1], "payload")?;
        self.check_claims(&claims, now_ms)
    }

    fn check_claims(&self, claims: &Map<String, Value>, now_ms: i64) -> Result<ValidToken, String> {
        let s = &self.settings;
        let now = now_ms as f64 / 1000.0;
        let skew = s.clock_skew_seconds as f64;
        let exp = numeric_date(claims, "exp")?.ok_or("No Expiration Time (exp) claim present.")?;
        let iat = numeric_date(claims, "iat")?.ok_or("No Issued At (iat) claim present.")?;
        if now >= exp + skew {
            return Err(format!(
                "The JWT is no longer valid - the evaluation time {now} is on or after the \
                 Expiration Time (exp={exp}) claim value (even when providing {skew} seconds of \
                 leeway to account for clock skew)."
            ));
        }
        if let Some(nbf) = numeric_date(claims, "nbf")? {
            if now + skew < nbf {
                return Err(format!(
                    "The JWT is not yet valid as the evaluation time {now} is before the Not \
                     Before (nbf={nbf}) claim time (even when providing {skew} seconds of leeway \
                     to account for clock skew)."
                ));
            }
        }
        if let Some(expected) = &s.expected_issuer {
            match claims.get("iss").and_then(Value::as_str) {
                None => {
                    return Err(format!(
                        "No Issuer (iss) claim present but was expecting {expected}"
                    ))
                }
                Some(iss) if iss != expected => {
                    return Err(format!(
                        "Issuer (iss) claim value ({iss}) doesn't match expected value of \
                         {expected}"
                    ))
                }
                Some(_) => {}
            }
        }
        let audiences: Vec<&str> = match claims.get("aud") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err("The value of the 'aud' claim is not a string or array".into()),
        };
        if !audiences.is_empty()
            && !audiences
                .iter()
                .any(|a| s.expected_audience.iter().any(|e| e == a))
        {
            return Err(if s.expected_audience.is_empty() {
                format!(
                    "Audience (aud) claim {audiences:?} present in the JWT but no expected \
                     audience value(s) were provided (sasl.oauthbearer.expected.audience)"
                )
            } else {
                format!(
                    "Audience (aud) claim {audiences:?} doesn't contain an acceptable \
                     identifier. Expected one of {:?} as an aud value.",
                    s.expected_audience
                )
            });
        }
        if iat < 0.0 {
            return Err(format!(
                "iat value must be non-negative; value given was \"{iat}\""
            ));
        }
        let sub = match claims.get(&s.sub_claim_name) {
            Some(Value::String(v)) if !v.trim().is_empty() => v.trim().to_string(),
            Some(Value::String(_)) => {
                return Err(format!("{} value must be non-empty", s.sub_claim_name))
            }
            Some(_) => {
                return Err(format!(
                    "Could not extract the '{}' claim from the access token",
                    s.sub_claim_name
                ))
            }
            None => return Err(format!("{} value must be non-null", s.sub_claim_name)),
        };
        // Kafka takes a string scope claim as one scope, an array as several; blank ones are
        // refused.
        let scopes: Vec<&Value> = match claims.get(&s.scope_claim_name) {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(v @ Value::String(_)) => vec![v],
            _ => Vec::new(),
        };
        if scopes
            .iter()
            .any(|v| v.as_str().map_or(true, |t| t.trim().is_empty()))
        {
            return Err(format!(
                "{} value must be non-empty strings",
                s.scope_claim_name
            ));
        }
        Ok(ValidToken {
            principal: sub,
            expires_at_ms: (exp * 1000.0) as i64,
        })
    }
}
