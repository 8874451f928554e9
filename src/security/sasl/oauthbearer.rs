//! SASL/OAUTHBEARER (RFC 7628, KIP-255) with the validator Kafka uses when no server callback
//! handler is configured (`OAuthBearerUnsecuredValidatorCallbackHandler`): an unsigned JWS
//! (`alg` `none`, empty signature) whose principal claim (`sub`, or the JAAS option
//! `unsecuredValidatorPrincipalClaimName`) names the user, with a required `exp`, an optional
//! `iat`, `unsecuredValidatorAllowableClockSkewMs` of tolerance, and the scopes of
//! `unsecuredValidatorRequiredScope` present in the scope claim (`scope`, or
//! `unsecuredValidatorScopeClaimName`). A refused token is answered as RFC 7628 says: an error
//! JSON challenge, then the failure once the client acknowledges it with `%x01`.
//!
//! With Kafka's validating handler configured (`config::oauth`) tokens are signed JWTs checked
//! by `jwt::JwtValidator` instead, and are refused the same way.
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine;
use serde_json::Value;

use super::AuthError;

/// The validator's JAAS options.
#[derive(Debug, Clone, Default)]
pub struct UnsecuredValidator {
    pub principal_claim: String,
    pub scope_claim: String,
    pub required_scopes: Vec<String>,
    pub allowable_clock_skew_ms: i64,
}

/// A validated token: who, and when it stops being valid.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidToken {
    pub principal: String,
    pub expires_at_ms: i64,
}

/// The client's initial response: the token and the authorization id.
fn parse_initial_response(message: &[u8]) -> Result<(Option<String>, String), AuthError> {
    let bad = || AuthError::Generic("Invalid OAUTHBEARER client first message".into());
    let text = std::str::from_utf8(message).map_err(|_| bad())?;
    let (gs2, rest) = text.split_once('\u{1}').ok_or_else(bad)?;
    let mut gs2_parts = gs2.splitn(3, ',');
    if gs2_parts.next() != Some("n") {
        return Err(bad());
    }
    let authzid = match gs2_parts.next() {
        Some("") | None => None,
        Some(a) => Some(a.strip_prefix("a=").ok_or_else(bad)?.to_string()),
    };
    if gs2_parts.next() != Some("") {
        return Err(bad());
    }
    let mut token = None;
    for kv in rest.split('\u{1}').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').ok_or_else(bad)?;
        if k == "auth" {
            let t = v
                .strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
                .ok_or_else(bad)?;
            token = Some(t.trim().to_string());
        }
        // Other keys are SASL extensions (KIP-342); without a validating handler Kafka
        // ignores them.
    }
    Ok((authzid, token.ok_or_else(bad)?))
}

fn number_ms(v: &Value) -> Option<i64> {
    v.as_f64().map(|s| (s * 1000.0) as i64)
}

impl UnsecuredValidator {
    /// Validates an unsecured JWS; the error text is the reason logged.
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<ValidToken, String> {
        let parts: Vec<&str> = token.split('.').collect();
        if parts.len() != 3 {
            return Err(format!(
                "Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded \
                 values, found {}",
                parts.len()
            ));
        }
        if !parts[2].is_empty() {
            return Err("Unsecured JWS must have an empty signature".into());
        }
        let decode = |p: &str| -> Result<serde_json::Map<String, Value>, String> {
            let bytes = B64URL
                .decode(p.trim_end_matches('='))
                .map_err(|e| format!("invalid Base64URL: {e}"))?;
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(m)) => Ok(m),
                _ => Err("a JWS part is not a JSON object".into()),
            }
        };
        let header = decode(parts[0])?;
        if header.get("alg").and_then(|a| a.as_str()) != Some("none") {
            return Err("Unsecured JWS must have alg \"none\"".into());
        }
        let claims = decode(parts[1])?;
        let principal = match claims.get(&self.principal_claim) {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(_) => {
                return Err(format!(
                    "The principal claim {} must be a non-empty string",
                    self.principal_claim
                ))
            }
            None => return Err(format!("Required claim missing: {}", self.principal_claim)),
        };
        let exp = claims.get("exp").ok_or("Required claim missing: exp")?;
        let exp_ms = number_ms(exp).ok_or("The exp claim must be a number")?;
        if now_ms - self.allowable_clock_skew_ms >= exp_ms {
            return Err(format!(
                "The indicated time ({exp_ms} ms) is in the past (now {now_ms} ms): the token \
                 has expired"
            ));
        }
        if let Some(iat) = claims.get("iat") {
            let iat_ms = number_ms(iat).ok_or("The iat claim must be a number")?;
            if iat_ms > now_ms + self.allowable_clock_skew_ms {
                return Err(format!("The token was issued in the future ({iat_ms} ms)"));
            }
            if iat_ms > exp_ms {
                return Err("The token was issued after it expired".into());
            }
        }
        if !self.required_scopes.is_empty() {
            let scopes: Vec<String> = match claims.get(&self.scope_claim) {
                Some(Value::String(s)) => s.split(' ').map(str::to_string).collect(),
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
                _ => Vec::new(),
            };
            for required in &self.required_scopes {
                if !scopes.contains(required) {
                    return Err(format!("The token lacks the required scope {required}"));
                }
            }
        }
        Ok(ValidToken {
            principal,
            expires_at_ms: exp_ms,
        })
    }
}

/// How a listener validates tokens.
pub enum Validator {
    /// Kafka's default, `OAuthBearerUnsecuredValidatorCallbackHandler`.
    Unsecured(UnsecuredValidator),
    /// Kafka's `OAuthBearerValidatorCallbackHandler`: signed JWTs (KIP-768).
    Jwt(super::jwt::JwtValidator),
    /// The validating handler whose keys could not be loaded: every token is refused.
    Unavailable(String),
}

impl Validator {
    fn validate(&self, token: &str, now_ms: i64) -> Result<ValidToken, String> {
        match self {
            Validator::Unsecured(v) => v.validate(token, now_ms),
            Validator::Jwt(v) => v.validate(token, now_ms),
            Validator::Unavailable(why) => Err(why.clone()),
        }
    }

    /// The RFC 7628 error a refused client reads; the unsecured validator names its required
    /// scopes, Kafka's validating handler only the status.
    fn error_json(&self) -> String {
        match self {
            Validator::Unsecured(v) if !v.required_scopes.is_empty() => format!(
                r#"{{"status":"invalid_token","scope":"{}"}}"#,
                v.required_scopes.join(" ")
            ),
            _ => r#"{"status":"invalid_token"}"#.to_string(),
        }
    }
}

/// The server side of one OAUTHBEARER exchange.
#[derive(Default)]
pub struct OAuthBearerServer {
    /// The error JSON sent as a challenge and why the token was refused, awaiting the
    /// client's `%x01`.
    error_sent: Option<(String, String)>,
}

pub enum Step {
    Challenge(Vec<u8>),
    Complete(ValidToken),
}

impl OAuthBearerServer {
    pub fn step(
        &mut self,
        message: &[u8],
        validator: &Validator,
        now_ms: i64,
        claimed_user: &mut Option<String>,
        reason: &mut Option<String>,
    ) -> Result<Step, AuthError> {
        if let Some((error, why)) = self.error_sent.take() {
            // The failure is logged once, now, with the reason the token was refused.
            *reason = Some(why);
            if message == [1u8] {
                return Err(AuthError::Explicit(error));
            }
            return Err(AuthError::Generic(
                "Expected %x01 after the OAUTHBEARER error".into(),
            ));
        }
        let (authzid, token) = parse_initial_response(message)?;
        match validator.validate(&token, now_ms) {
            Ok(valid) => {
                *claimed_user = Some(valid.principal.clone());
                if let Some(a) = authzid {
                    if a != valid.principal {
                        return Err(AuthError::Explicit(format!(
                            "Authentication failed: Client requested an authorization id ({a}) \
                             that is different from the token's principal name ({})",
                            valid.principal
                        )));
                    }
                }
                Ok(Step::Complete(valid))
            }
            Err(why) => {
                let json = validator.error_json();
                self.error_sent = Some((json.clone(), why));
                Ok(Step::Challenge(json.into_bytes()))
            }
        }
    }
}

#[cfg(test)]
pub fn unsecured_token(claims: &str) -> String {
    format!(
        "{}.{}.",
        B64URL.encode(r#"{"alg":"none"}"#),
        B64URL.encode(claims)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validator() -> UnsecuredValidator {
        UnsecuredValidator {
            principal_claim: "sub".into(),
            scope_claim: "scope".into(),
            required_scopes: vec![],
            allowable_clock_skew_ms: 0,
        }
    }

    #[test]
    fn unsecured_tokens_are_checked_for_alg_sub_exp_iat_and_scope() {
        let v = validator();
        let now = 1_700_000_000_000;
        let ok = unsecured_token(r#"{"sub":"alice","iat":1699999990,"exp":1700003600}"#);
        assert_eq!(
            v.validate(&ok, now).unwrap(),
            ValidToken {
                principal: "alice".into(),
                expires_at_ms: 1_700_003_600_000
            }
        );
        let expired = unsecured_token(r#"{"sub":"alice","exp":1699999999}"#);
        assert!(v.validate(&expired, now).unwrap_err().contains("expired"));
        assert!(v
            .validate(&unsecured_token(r#"{"exp":1700003600}"#), now)
            .unwrap_err()
            .contains("sub"));
        assert!(v
            .validate(&unsecured_token(r#"{"sub":"a"}"#), now)
            .unwrap_err()
            .contains("exp"));
        let signed = format!("{}sig", ok);
        assert!(v.validate(&signed, now).is_err());
        let rs256 = format!(
            "{}.{}.",
            B64URL.encode(r#"{"alg":"RS256"}"#),
            B64URL.encode(r#"{"sub":"a","exp":1700003600}"#)
        );
        assert!(v.validate(&rs256, now).unwrap_err().contains("alg"));
        assert!(v.validate("not-a-jws", now).is_err());
        let scoped = UnsecuredValidator {
            required_scopes: vec!["kafka".into()],
            ..validator()
        };
        assert!(scoped.validate(&ok, now).is_err());
        let with_scope =
            unsecured_token(r#"{"sub":"alice","exp":1700003600,"scope":"read kafka"}"#);
        assert!(scoped.validate(&with_scope, now).is_ok());
        let custom = UnsecuredValidator {
            principal_claim: "client_id".into(),
            ..validator()
        };
        let t = unsecured_token(r#"{"client_id":"svc","exp":1700003600}"#);
        assert_eq!(custom.validate(&t, now).unwrap().principal, "svc");
    }

    #[test]
    fn a_refused_token_gets_an_error_challenge_then_fails() {
        let v = Validator::Unsecured(validator());
        let now = 1_700_000_000_000;
        let mut s = OAuthBearerServer::default();
        let bad = unsecured_token(r#"{"sub":"alice","exp":1}"#);
        let msg = format!("n,,\u{1}auth=Bearer {bad}\u{1}\u{1}");
        let (mut user, mut reason) = (None, None);
        match s.step(msg.as_bytes(), &v, now, &mut user, &mut reason) {
            Ok(Step::Challenge(c)) => assert_eq!(c, br#"{"status":"invalid_token"}"#.to_vec()),
            _ => panic!("expected an error challenge"),
        }
        let err = match s.step(&[1], &v, now, &mut user, &mut reason) {
            Err(e) => e,
            Ok(_) => panic!("the exchange went on"),
        };
        assert_eq!(err.to_string(), r#"{"status":"invalid_token"}"#);
        let good = unsecured_token(r#"{"sub":"alice","exp":1800000000}"#);
        let msg = format!("n,a=bob,\u{1}auth=Bearer {good}\u{1}\u{1}");
        let mut s = OAuthBearerServer::default();
        assert!(s
            .step(msg.as_bytes(), &v, now, &mut user, &mut reason)
            .is_err());
    }
}
